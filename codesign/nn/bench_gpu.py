"""GPU scan and cell benchmark (``codesign bench scan --device cuda``): medians, as JSON.

Measured forward + backward, float32 unless stated, at ``(16, T, 256)`` for ``T`` = 1,024, 16,384
and 131,072:

* the memory-bound floor ``a * b + b`` over the same tensors and ``torch.cumsum`` over time;
* :func:`linear_scan` (float32 and bfloat16), :func:`cumulative_scan`, :func:`last_update_scan` and
  :func:`xor_scan` on the Triton kernels, with the ratios the targets name (scan / floor,
  cumulative scan / ``torch.cumsum``);
* the torch path of :func:`linear_scan` at the shortest length (the CPU-tuned evaluator on the
  GPU, ``CODESIGN_SCAN_BACKEND=torch``), and accelerated-scan's Triton scan in its ``(B, C, T)`` layout and with transposes from
  ``(B, T, C)`` when that package is installed;
* a sweep of the kernels' tile shapes at the middle length, and their agreement with the CPU
  float64 scan (values and gradients);
* tokens per second of every cell at ``(16, 4096, 256)`` beside ``torch.nn.GRU`` (cuDNN).

Every time is a median of a few runs after a warm-up, each bracketed by
``torch.cuda.synchronize()``. ``device="cpu"`` with ``CODESIGN_SCAN_BACKEND=triton`` under
``TRITON_INTERPRET=1`` runs the same code at tiny shapes (the tests' smoke check).
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from codesign.nn.scan import BACKEND_ENV, cumulative_scan, last_update_scan, linear_scan, xor_scan

__all__ = ["GpuBenchConfig", "bench_gpu"]

Progress = Callable[[dict], None]


@dataclass(frozen=True)
class GpuBenchConfig:
    """Shapes and repeats; :meth:`quick` is a seconds-long smoke configuration."""

    lengths: tuple[int, ...] = (1024, 16384, 131072)
    batch: int = 16
    width: int = 256
    repeats: int = 5
    budget_s: float = 10.0
    torch_path_max_length: int = 1024
    tiles: tuple[tuple[int, int], ...] = (
        (32, 32),
        (64, 32),
        (128, 32),
        (64, 16),
        (128, 16),
        (256, 16),
        (256, 8),
    )
    tile_length: int = 16384
    check_shape: tuple[int, int, int] = (4, 2048, 64)
    cell_shape: tuple[int, int, int] = (16, 4096, 256)
    cells: tuple[str, ...] | None = None  # None: every cell of ``codesign bench scan``

    @classmethod
    def quick(cls) -> GpuBenchConfig:
        return cls(
            lengths=(32,),
            batch=2,
            width=4,
            repeats=1,
            budget_s=1.0,
            torch_path_max_length=32,
            tiles=((16, 4, 1),),
            tile_length=32,
            check_shape=(1, 24, 3),
            cell_shape=(1, 8, 4),
            cells=("CMRU(eps=1)", "BMRU", "torch.nn.GRU"),
        )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_seconds(fn: Callable[[], object], device: torch.device, repeats: int, budget: float) -> float:
    """Median of up to ``repeats`` synchronised runs after a warm-up (fewer when a run is slow)."""
    start = time.perf_counter()
    fn()
    _sync(device)
    warm = time.perf_counter() - start
    times = []
    for _ in range(max(1, min(repeats, int(budget / max(warm, 1e-9))))):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _fwd_bwd(
    fn: Callable[..., torch.Tensor], inputs: list[torch.Tensor], grad: torch.Tensor
) -> Callable[[], None]:
    def run() -> None:
        fn(*inputs).backward(grad)
        for x in inputs:
            x.grad = None

    return run


def _accelerated_scan() -> Callable | None:
    try:
        from accelerated_scan.scalar import scan
    except ImportError:
        return None
    return scan


@contextlib.contextmanager
def _backend(value: str) -> Iterator[None]:
    """Scan with ``value`` (``torch`` or ``triton``) inside the block, forward and backward."""
    before = os.environ.get(BACKEND_ENV)
    os.environ[BACKEND_ENV] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(BACKEND_ENV, None)
        else:
            os.environ[BACKEND_ENV] = before


def _on_torch_path(run: Callable[[], None]) -> Callable[[], None]:
    def wrapped() -> None:
        with _backend("torch"):
            run()

    return wrapped


def _scan_row(cfg: GpuBenchConfig, steps: int, device: torch.device) -> dict:
    """Every scan at ``(batch, steps, width)`` against the floor and ``torch.cumsum``."""
    g = torch.Generator(device).manual_seed(steps)  # drawn on the device: 2 GiB per tensor at 131k
    shape = (cfg.batch, steps, cfg.width)
    a = torch.rand(shape, generator=g, device=device).requires_grad_()
    b = torch.randn(shape, generator=g, device=device).requires_grad_()
    grad = torch.randn(shape, generator=g, device=device)
    z = (torch.rand(shape, generator=g, device=device) < 0.1).float().requires_grad_()

    def time_it(fn, inputs, gr=grad) -> float:
        return _median_seconds(_fwd_bwd(fn, inputs, gr), device, cfg.repeats, cfg.budget_s)

    row: dict = {"shape": list(shape)}
    row["floor_a_mul_b_add_b_s"] = time_it(lambda a, b: a * b + b, [a, b])
    row["torch_cumsum_s"] = time_it(lambda b: torch.cumsum(b, 1), [b])
    row["linear_scan_s"] = time_it(linear_scan, [a, b])
    row["cumulative_scan_s"] = time_it(cumulative_scan, [b])
    row["last_update_scan_s"] = time_it(last_update_scan, [z, b])
    row["xor_scan_s"] = time_it(xor_scan, [z])
    a16, b16 = (x.detach().bfloat16().requires_grad_() for x in (a, b))
    row["linear_scan_bf16_s"] = time_it(linear_scan, [a16, b16], grad.bfloat16())
    del a16, b16
    if steps <= cfg.torch_path_max_length:
        torch_path = _on_torch_path(_fwd_bwd(linear_scan, [a, b], grad))
        row["linear_scan_torch_path_s"] = _median_seconds(torch_path, device, cfg.repeats, cfg.budget_s)
    row.update(_accelerated_row(a, b, grad, device, cfg))
    floor = row["floor_a_mul_b_add_b_s"]
    row["ratio_linear_scan_to_floor"] = round(row["linear_scan_s"] / floor, 3)
    row["ratio_cumulative_scan_to_torch_cumsum"] = round(row["cumulative_scan_s"] / row["torch_cumsum_s"], 3)
    return row


def _accelerated_row(a, b, grad, device: torch.device, cfg: GpuBenchConfig) -> dict:
    scan = _accelerated_scan()
    if scan is None or device.type != "cuda":
        return {"accelerated_scan": "not installed (pip install accelerated-scan; needs CUDA)"}
    steps = a.shape[1]
    if steps & (steps - 1):
        return {"accelerated_scan": "needs a power-of-two length"}
    ac, bc = (x.detach().transpose(1, 2).contiguous().requires_grad_() for x in (a, b))
    gc_ = grad.transpose(1, 2).contiguous()

    def with_transposes(a, b):
        return scan(a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous()).transpose(1, 2)

    out = {
        "accelerated_scan_bct_s": _median_seconds(
            _fwd_bwd(scan, [ac, bc], gc_), device, cfg.repeats, cfg.budget_s
        ),
        "accelerated_scan_btc_with_transposes_s": _median_seconds(
            _fwd_bwd(with_transposes, [a, b], grad), device, cfg.repeats, cfg.budget_s
        ),
    }
    return out


def _tile_sweep(cfg: GpuBenchConfig, device: torch.device) -> dict:
    """``linear_scan`` fwd + bwd at ``tile_length`` for each ``(CHUNK, BLOCK_D, warps)`` tile."""
    from codesign.nn import gpu_scan

    g = torch.Generator(device).manual_seed(5)
    shape = (cfg.batch, cfg.tile_length, cfg.width)
    a = torch.rand(shape, generator=g, device=device).requires_grad_()
    b = torch.randn(shape, generator=g, device=device).requires_grad_()
    grad = torch.randn(shape, generator=g, device=device)
    out: dict = {"shape": list(shape), "default": list(gpu_scan.tile_for(cfg.batch, cfg.width, device))}
    rows = []
    for chunk, block_d, warps in cfg.tiles:
        with gpu_scan.tile(chunk, block_d, warps):
            seconds = _median_seconds(_fwd_bwd(linear_scan, [a, b], grad), device, cfg.repeats, cfg.budget_s)
        rows.append({"chunk": chunk, "block_d": block_d, "warps": warps, "linear_scan_s": seconds})
    out["tiles"] = rows
    out["fastest"] = min(rows, key=lambda r: r["linear_scan_s"])
    return out


def _agreement(cfg: GpuBenchConfig, device: torch.device) -> dict:
    """Largest error of values and gradients against the CPU float64 scan, relative to its scale."""
    g = torch.Generator().manual_seed(6)
    shape = cfg.check_shape
    a = torch.empty(shape, dtype=torch.float64).uniform_(-1, 1, generator=g)
    b = torch.randn(shape, dtype=torch.float64, generator=g)
    h0 = torch.randn(shape[0], shape[2], dtype=torch.float64, generator=g)
    w = torch.randn(shape, dtype=torch.float64, generator=g)

    def run(dtype, dev):
        xs = [x.to(dev, dtype).requires_grad_() for x in (a, b, h0)]
        out = linear_scan(*xs)
        grads = torch.autograd.grad((out * w.to(dev, dtype)).sum(), xs)
        return [t.detach().double().cpu() for t in (out, *grads)]

    with _backend("torch"):
        ref = run(torch.float64, "cpu")
    result: dict = {"shape": list(shape)}
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16), ("float64", torch.float64)):
        got = run(dtype, device)
        errors = [
            float((x - y).abs().amax() / y.abs().amax().clamp(min=1)) for x, y in zip(got, ref, strict=True)
        ]
        result[f"max_rel_error_{name}"] = max(errors)
    return result


def _cell_factories(size: int) -> dict[str, Callable[[], nn.Module]]:
    from codesign.nn.bench import _cells

    return _cells(size)


def _cells(cfg: GpuBenchConfig, device: torch.device) -> dict:
    """Tokens per second, forward + backward, of every cell beside ``torch.nn.GRU``."""
    batch, steps, size = cfg.cell_shape
    torch.manual_seed(2)
    x = torch.randn(batch, steps, size).to(device)
    tokens: dict = {}
    for name, factory in _cell_factories(size).items():
        if cfg.cells is not None and name not in cfg.cells:
            continue
        cell = factory().to(device)

        def run(cell=cell) -> None:
            y = cell(x)
            y = y[0] if isinstance(y, tuple) else y
            y.sum().backward()
            cell.zero_grad(set_to_none=True)

        try:
            tokens[name] = round(
                batch * steps / _median_seconds(run, device, min(cfg.repeats, 3), cfg.budget_s)
            )
        except (RuntimeError, torch.OutOfMemoryError) as exc:  # one cell's failure must not lose the rest
            tokens[name] = f"error: {str(exc)[:200]}"
        del cell
    gru = tokens.get("torch.nn.GRU")
    ratios = {
        name: round(value / gru, 2)
        for name, value in tokens.items()
        if isinstance(value, int) and isinstance(gru, int) and name != "torch.nn.GRU"
    }
    return {"shape": [batch, steps, size], "tokens_per_s": tokens, "ratio_to_torch_gru": ratios}


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def bench_gpu(
    cfg: GpuBenchConfig | None = None, device: str | torch.device = "cuda", progress: Progress | None = None
) -> dict:
    """Run every section on ``device`` and return the report; ``progress`` gets it after each one."""
    cfg = cfg or GpuBenchConfig()
    device = torch.device(device)
    report: dict = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        "machine": platform.machine(),
        "repeats": cfg.repeats,
        "scan": {},
    }
    try:
        import triton

        report["triton"] = triton.__version__
    except ImportError:
        report["triton"] = None
    step = progress or (lambda _report: None)
    sections: list[tuple[str, Callable[[], dict]]] = [("agreement", lambda: _agreement(cfg, device))]
    sections += [(f"T{steps}", lambda steps=steps: _scan_row(cfg, steps, device)) for steps in cfg.lengths]
    sections += [("tiles", lambda: _tile_sweep(cfg, device)), ("cells", lambda: _cells(cfg, device))]
    for name, section in sections:
        start = time.perf_counter()
        try:
            result = section()
        except (RuntimeError, torch.OutOfMemoryError) as exc:  # report what failed, keep measuring
            result = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        result["wall_s"] = round(time.perf_counter() - start, 1)
        if name.startswith("T"):
            report["scan"][name] = result
        else:
            report[name] = result
        _free(device)
        step(report)
    return report
