"""Scan and cell speed benchmark (``codesign bench scan``): medians of a few repeats, printed as JSON.

Measured, forward + backward unless stated, in one process:

* ``scan``: :func:`linear_scan` at ``(16, 4096, 256)`` float32 next to the memory-bound floor
  ``a * b + b`` over the same tensors and ``torch.cumsum`` over time; the closed forms
  (eps = 1 cumulative sum, eps = 0 last update, XOR parity) next to the generic scan of their
  ``(a, b)``;
* ``long``: a step-by-step loop against :func:`linear_scan` at ``(1, 16384, 16)``;
* ``cells``: tokens per second of every cell, and our ``MinGRU`` beside the ``mingru-pytorch``
  package's ``minGRU`` at the same shapes when that package is installed;
* ``memory``: peak resident memory of a scan forward + backward against ``T`` (sampled from
  ``/proc/self/statm``), which should grow linearly;
* ``finite``: no NaN or Inf in values or gradients at ``T = 65536``.

The machine is shared, so the report includes the load average before and after; compare the
ratios, which are measured back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.hsru import HSRU
from codesign.nn.lru import LRU
from codesign.nn.mgrade import MGRADELayer
from codesign.nn.mingru import MinGRU
from codesign.nn.scan import cumulative_scan, last_update_scan, linear_scan, xor_scan
from codesign.nn.surnn import SelectiveUpdateGRU, SelectiveUpdateMinGRU

__all__ = ["BenchConfig", "bench_scan", "main"]


@dataclass(frozen=True)
class BenchConfig:
    """Shapes and repeats; :meth:`quick` is a seconds-long smoke configuration."""

    repeats: int = 5
    scan_shape: tuple[int, int, int] = (16, 4096, 256)
    long_shape: tuple[int, int, int] = (1, 16384, 16)
    loop_repeats: int = 3
    cell_shape: tuple[int, int, int] = (16, 1024, 128)
    memory_lengths: tuple[int, ...] = (16384, 65536, 262144)
    memory_width: int = 64
    finite_length: int = 65536

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(
            repeats=1,
            scan_shape=(2, 128, 32),
            long_shape=(1, 256, 4),
            loop_repeats=1,
            cell_shape=(2, 32, 8),
            memory_lengths=(4096, 16384),
            memory_width=8,
            finite_length=1024,
        )


def _median_seconds(fn: Callable[[], object], repeats: int, budget: float = 20.0) -> float:
    """Median of ``repeats`` timed runs after a warm-up; slow runs are repeated fewer times so that
    one measurement takes about ``budget`` seconds at most (but at least one run)."""
    start = time.perf_counter()
    fn()  # warm-up
    warm = time.perf_counter() - start
    repeats = max(1, min(repeats, int(budget / max(warm, 1e-9))))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _fwd_bwd(
    fn: Callable[..., torch.Tensor], inputs: list[torch.Tensor], grad: torch.Tensor
) -> Callable[[], None]:
    def run() -> None:
        out = fn(*inputs)
        out.backward(grad)
        for x in inputs:
            x.grad = None

    return run


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().requires_grad_()


def _ratio(x: float, y: float) -> float:
    return round(x / y, 3)


def bench_scans(cfg: BenchConfig) -> dict:
    """The scan alone, the floor, cumsum and the closed forms at ``cfg.scan_shape``."""
    g = torch.Generator().manual_seed(0)
    shape = cfg.scan_shape
    a = _leaf(torch.rand(shape, generator=g))
    b = _leaf(torch.randn(shape, generator=g))
    grad = torch.randn(shape, generator=g)
    z = _leaf((torch.rand(shape, generator=g) < 0.1).float())
    r = cfg.repeats
    out: dict = {"shape": list(shape), "dtype": "float32"}
    out["floor_a_mul_b_add_b_s"] = _median_seconds(_fwd_bwd(lambda a, b: a * b + b, [a, b], grad), r)
    out["linear_scan_s"] = _median_seconds(_fwd_bwd(linear_scan, [a, b], grad), r)
    out["torch_cumsum_s"] = _median_seconds(_fwd_bwd(lambda b: torch.cumsum(b, 1), [b], grad), r)
    out["eps1_cumulative_scan_s"] = _median_seconds(_fwd_bwd(cumulative_scan, [b], grad), r)
    out["eps0_generic_scan_s"] = _median_seconds(
        _fwd_bwd(lambda z, b: linear_scan(1 - z, z * b), [z, b], grad), r
    )
    out["eps0_last_update_scan_s"] = _median_seconds(_fwd_bwd(last_update_scan, [z, b], grad), r)
    out["eps0_last_update_gather_s"] = _median_seconds(
        _fwd_bwd(lambda z, b: last_update_scan(z, b, method="gather"), [z, b], grad), r
    )
    out["xor_generic_scan_s"] = _median_seconds(_fwd_bwd(lambda s: linear_scan(1 - 2 * s, s), [z], grad), r)
    out["xor_scan_s"] = _median_seconds(_fwd_bwd(xor_scan, [z], grad), r)
    out["floor_again_s"] = _median_seconds(_fwd_bwd(lambda a, b: a * b + b, [a, b], grad), r)
    floor = min(out["floor_a_mul_b_add_b_s"], out["floor_again_s"])
    out["ratio_scan_to_floor"] = _ratio(out["linear_scan_s"], floor)
    out["ratio_eps1_to_torch_cumsum"] = _ratio(out["eps1_cumulative_scan_s"], out["torch_cumsum_s"])
    out["ratio_scan_to_torch_cumsum"] = _ratio(out["linear_scan_s"], out["torch_cumsum_s"])
    return out


def _step_loop(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain loop over time that the scan replaces (unbind once, stack once)."""
    h = torch.zeros_like(b[:, 0])
    out = []
    for a_t, b_t in zip(a.unbind(1), b.unbind(1), strict=True):
        h = a_t * h + b_t
        out.append(h)
    return torch.stack(out, dim=1)


def bench_long(cfg: BenchConfig) -> dict:
    """Step loop against the scan in the small-model, long-sequence regime."""
    g = torch.Generator().manual_seed(1)
    shape = cfg.long_shape
    a = _leaf(torch.rand(shape, generator=g))
    b = _leaf(torch.randn(shape, generator=g))
    grad = torch.randn(shape, generator=g)
    loop = _median_seconds(_fwd_bwd(_step_loop, [a, b], grad), cfg.loop_repeats)
    scan = _median_seconds(_fwd_bwd(linear_scan, [a, b], grad), cfg.repeats)
    return {"shape": list(shape), "step_loop_s": loop, "linear_scan_s": scan, "speedup": _ratio(loop, scan)}


def _cells(size: int) -> dict[str, Callable[[], nn.Module]]:
    return {
        "CMRU(eps=1)": lambda: CMRU(size, size, eps=1.0),
        "CMRU(eps=0.5)": lambda: CMRU(size, size, eps=0.5),
        "CMRU(eps=-1)": lambda: CMRU(size, size, eps=-1.0),
        "BMRU": lambda: BMRU(size, size),
        "AlphaCMRU(eps=1)": lambda: AlphaCMRU(size, size, eps=1.0),
        "MinGRU": lambda: MinGRU(size, size),
        "LRU": lambda: LRU(size, size),
        "MGRADELayer": lambda: MGRADELayer(size, size, kernel_count=2, kernel_length=16),
        "HSRU": lambda: HSRU(size, size),
        "SelectiveUpdateMinGRU": lambda: SelectiveUpdateMinGRU(size, size),
        "SelectiveUpdateGRU(sequential)": lambda: SelectiveUpdateGRU(size, size, mode="sequential"),
        "SelectiveUpdateGRU(fused)": lambda: SelectiveUpdateGRU(size, size, mode="fused"),
        "torch.nn.GRU": lambda: nn.GRU(size, size, batch_first=True),
    }


def _cell_step(cell: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        y = cell(x)
        y = y[0] if isinstance(y, tuple) else y
        y.sum().backward()
        cell.zero_grad(set_to_none=True)

    return run


def bench_cells(cfg: BenchConfig) -> dict:
    """Tokens per second, forward + backward, of every cell at ``cfg.cell_shape``."""
    batch, steps, size = cfg.cell_shape
    torch.manual_seed(2)
    x = torch.randn(batch, steps, size)
    tokens = batch * steps
    out: dict = {"shape": [batch, steps, size], "tokens_per_s": {}}
    for name, factory in _cells(size).items():
        seconds = _median_seconds(_cell_step(factory(), x), cfg.repeats)
        out["tokens_per_s"][name] = round(tokens / seconds)
    out["mingru_pytorch"] = _bench_mingru_package(cfg)
    return out


def _bench_mingru_package(cfg: BenchConfig) -> dict:
    """Our MinGRU beside ``mingru-pytorch``'s log-space minGRU, same shapes, no biases, no projection."""
    try:
        from minGRU_pytorch.minGRU import minGRU
    except ImportError:
        return {
            "available": False,
            "note": "mingru-pytorch is not installed (pip install --no-deps mingru-pytorch)",
        }
    result: dict = {"available": True, "shapes": []}
    for batch, steps, size in {cfg.cell_shape, cfg.scan_shape, cfg.long_shape}:
        torch.manual_seed(3)
        x = torch.randn(batch, steps, size)
        ours = _median_seconds(_cell_step(MinGRU(size, size, bias=False), x), cfg.repeats)
        theirs = _median_seconds(_cell_step(minGRU(size), x), cfg.repeats)
        result["shapes"].append(
            {
                "shape": [batch, steps, size],
                "ours_s": ours,
                "mingru_pytorch_s": theirs,
                "ratio_ours_to_theirs": _ratio(ours, theirs),
            }
        )
    return result


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"{field} missing from /proc/self/status")


def _memory_probe(steps: int, width: int) -> None:
    """Child-process half of :func:`bench_memory`: print the peak resident growth of one
    ``linear_scan`` forward + backward over ``(1, steps, width)`` float32 tensors, as JSON."""
    g = torch.Generator().manual_seed(steps)
    a = torch.rand(1, steps, width, generator=g).requires_grad_()
    b = torch.randn(1, steps, width, generator=g).requires_grad_()
    grad = torch.randn(1, steps, width, generator=g)
    # Warm-up: the first backward pass of a process allocates ~35 MB once (autograd engine).
    linear_scan(a[:, :64], b[:, :64]).backward(grad[:, :64])
    a.grad = b.grad = None
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current resident size
    before = _status_bytes("VmRSS")
    linear_scan(a, b).backward(grad)
    print(json.dumps({"peak_extra_bytes": max(0, _status_bytes("VmHWM") - before)}))


def bench_memory(cfg: BenchConfig) -> dict:
    """Peak memory of ``linear_scan`` forward + backward (batch 1) against ``T``, each length in a
    fresh process (the allocator keeps freed memory, so one process cannot measure twice)."""
    if not os.path.exists("/proc/self/clear_refs"):
        return {"available": False, "note": "needs Linux (/proc/self/clear_refs and VmHWM)"}
    rows = []
    for steps in cfg.memory_lengths:
        code = f"from codesign.nn.bench import _memory_probe; _memory_probe({steps}, {cfg.memory_width})"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        extra = json.loads(done.stdout.strip().splitlines()[-1])["peak_extra_bytes"]
        tensor_bytes = steps * cfg.memory_width * 4
        rows.append(
            {
                "T": steps,
                "peak_extra_bytes": extra,
                "tensor_bytes": tensor_bytes,
                "peak_in_tensors": round(extra / tensor_bytes, 2),
            }
        )
    # Least-squares line peak = fixed + slope * tensor_bytes: slope = tensors of size (1, T, d) alive.
    xs = [r["tensor_bytes"] for r in rows]
    ys = [r["peak_extra_bytes"] for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    fixed = my - slope * mx
    worst = max(abs(y - (fixed + slope * x)) / y for x, y in zip(xs, ys, strict=True))
    return {
        "available": True,
        "width": cfg.memory_width,
        "rows": rows,
        "fit_slope_in_tensors": round(slope, 2),
        "fit_fixed_bytes": round(fixed),
        "fit_worst_relative_residual": round(worst, 3),
        "note": "peak extra resident memory of one forward + backward = fixed + slope * (one (1, T, d) "
        "float32 tensor); a small residual means memory linear in T",
    }


def _all_finite(out: torch.Tensor, tensors: list[torch.Tensor]) -> bool:
    out.square().mean().backward()
    grads = [t.grad for t in tensors if t.grad is not None]
    return (
        bool(torch.isfinite(out).all())
        and len(grads) == len(tensors)
        and all(bool(torch.isfinite(gr).all()) for gr in grads)
    )


def bench_finite(cfg: BenchConfig) -> dict:
    """No NaN/Inf in values or gradients at ``T = cfg.finite_length`` (scans and cells)."""
    steps = cfg.finite_length
    g = torch.Generator().manual_seed(4)
    result: dict = {"T": steps}
    for name, low in [("linear_scan(a in (0, 1))", 0.0), ("linear_scan(a in (-1, 1))", -1.0)]:
        a = _leaf(torch.rand(2, steps, 16, generator=g) * (1 - low) + low)
        b = _leaf(torch.randn(2, steps, 16, generator=g))
        result[name] = _all_finite(linear_scan(a, b), [a, b])
    b = _leaf(torch.randn(2, steps, 16, generator=g))
    result["cumulative_scan"] = _all_finite(cumulative_scan(b), [b])
    cells = {
        "MinGRU": MinGRU(8, 16),
        "LRU": LRU(8, 16),
        "CMRU(eps=1)": CMRU(8, 16, eps=1.0),
        "CMRU(eps=-1)": CMRU(8, 16, eps=-1.0),
        "HSRU": HSRU(8, 16),
        "MGRADELayer": MGRADELayer(8, 16),
        "SelectiveUpdateMinGRU": SelectiveUpdateMinGRU(8, 16),
    }
    for name, cell in cells.items():
        x = _leaf(torch.randn(2, steps, 8, generator=g))
        params = [p for p in cell.parameters() if p.requires_grad]
        y = cell(x)[0]
        out = _all_finite(y, [x])
        result[name] = out and all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in params)
    return result


def bench_scan(cfg: BenchConfig | None = None, *, echo: bool = True) -> dict:
    """Run every section; print the report as JSON (unless ``echo=False``) and return it."""
    cfg = cfg or BenchConfig()
    report: dict = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "loadavg_before": list(os.getloadavg()),
        "repeats": cfg.repeats,
    }
    report["scan"] = bench_scans(cfg)
    report["long"] = bench_long(cfg)
    report["cells"] = bench_cells(cfg)
    report["memory"] = bench_memory(cfg)
    report["finite"] = bench_finite(cfg)
    report["loadavg_after"] = list(os.getloadavg())
    if echo:
        print(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the JSON report; returns the exit code (0).

    ``argv`` defaults to no options (not ``sys.argv``), so a CLI can call ``main()`` directly.
    """
    parser = argparse.ArgumentParser(prog="codesign bench scan", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes (a smoke test, seconds)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per measurement (median)")
    parser.add_argument("--out", default=None, help="also write the JSON report to this file")
    args = parser.parse_args([] if argv is None else argv)
    cfg = BenchConfig.quick() if args.quick else BenchConfig()
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error("--repeats must be >= 1")
        cfg = BenchConfig(**{**cfg.__dict__, "repeats": args.repeats})
    report = bench_scan(cfg)
    if args.out:
        from codesign.atomic import write_text

        write_text(args.out, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
