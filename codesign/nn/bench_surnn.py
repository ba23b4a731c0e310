"""Mask-aware suRNN inference against the dense path (``codesign bench surnn``).

Streaming inference (one step at a time, no gradient) of :class:`SelectiveUpdateGRU` and
:class:`SelectiveUpdateMinGRU`: the dense path computes every neuron and masks afterwards, the
masked path (``stream(masked=True)``) gathers the open neurons' weight rows, computes only them and
scatters the new states back. Both run the same schedule: the layer's rhythmic generator with its
threshold moved to the quantile that opens a fraction ``p`` of the neuron-steps (a rhythmic
schedule, not random dropout). Per point: medians of ``repeats`` interleaved runs of each path,
their ratio, and the largest difference of the outputs (they must agree to 1e-6).

The machine is shared: the report carries the load average before and after; the ratios, measured
back to back, move much less than the absolute times.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from codesign.nn.surnn import SelectiveUpdateGRU, SelectiveUpdateMinGRU

__all__ = ["SurnnBenchConfig", "bench_surnn", "markdown_table", "schedule_at_rate"]


@dataclass(frozen=True)
class SurnnBenchConfig:
    """Shapes, rates and repeats; :meth:`quick` is a seconds-long smoke configuration."""

    sizes: tuple[int, ...] = (64, 256, 1024)  # input size = hidden size
    batches: tuple[int, ...] = (1, 16)
    steps: int = 200
    rates: tuple[float, ...] = (0.1, 0.3, 1.0)
    measured: tuple[tuple[str, float], ...] = ()  # (label, p) of trained runs
    repeats: int = 5
    cells: tuple[str, ...] = ("suGRU", "suMinGRU")

    @classmethod
    def quick(cls) -> SurnnBenchConfig:
        return cls(sizes=(8,), batches=(1,), steps=12, repeats=1)


def schedule_at_rate(cell: torch.nn.Module, steps: int, p: float) -> torch.Tensor:
    """The cell's rhythmic schedule ``(steps, H)`` with the threshold at the ``1 - p`` quantile of
    its pre-activations (so that about ``p`` of the neuron-steps are open)."""
    with torch.no_grad():
        a = cell.gate.preactivation(steps)
        if p >= 1.0:
            return torch.ones_like(a)
        return (a > torch.quantile(a.double().flatten(), 1.0 - p).to(a.dtype)).to(a.dtype)


def _factory(name: str) -> Callable[[int], torch.nn.Module]:
    return {
        "suGRU": lambda size: SelectiveUpdateGRU(size, size),
        "suMinGRU": lambda size: SelectiveUpdateMinGRU(size, size),
    }[name]


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _point(cell, x: torch.Tensor, gates: torch.Tensor, repeats: int) -> dict:
    dense = lambda: cell.stream(x, masked=False, gates=gates)  # noqa: E731
    masked = lambda: cell.stream(x, masked=True, gates=gates)  # noqa: E731
    diff = float((dense()[0] - masked()[0]).abs().max())  # also the warm-up
    t_dense, t_masked = [], []
    for _ in range(repeats):  # interleaved, so that a load change hits both paths
        t_dense.append(_time(dense))
        t_masked.append(_time(masked))
    d, m = statistics.median(t_dense), statistics.median(t_masked)
    return {
        "p": float(gates.mean()),
        "dense_s": d,
        "masked_s": m,
        "dense_us_per_step": 1e6 * d / x.shape[1],
        "masked_us_per_step": 1e6 * m / x.shape[1],
        "speedup": d / m,
        "max_abs_diff": diff,
    }


def bench_surnn(cfg: SurnnBenchConfig | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Every (cell, size, batch, rate) point; returns the JSON-able report."""
    cfg = cfg or SurnnBenchConfig()
    rates: list[tuple[str, float]] = [*cfg.measured, *((f"{p:g}", p) for p in cfg.rates)]
    report: dict = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "loadavg_before": list(os.getloadavg()),
        "steps": cfg.steps,
        "repeats": cfg.repeats,
        "points": [],
    }
    for name in cfg.cells:
        for size in cfg.sizes:
            torch.manual_seed(size)
            cell = _factory(name)(size).eval()
            for batch in cfg.batches:
                x = torch.randn(batch, cfg.steps, size)
                for label, p in rates:
                    point = {"cell": name, "size": size, "batch": batch, "rate": label}
                    point |= _point(cell, x, schedule_at_rate(cell, cfg.steps, p), cfg.repeats)
                    report["points"].append(point)
                    if progress:
                        progress(
                            f"{name} d={size} B={batch} p={point['p']:.3f} ({label}): dense "
                            f"{point['dense_us_per_step']:.0f} us/step, masked "
                            f"{point['masked_us_per_step']:.0f} us/step, {point['speedup']:.2f}x"
                        )
    report["loadavg_after"] = list(os.getloadavg())
    return report


def markdown_table(report: dict, measured_labels: Sequence[str] = ()) -> str:
    """The report's points as a markdown table (one row per cell, size, batch and rate)."""
    lines = [
        "| cell | d | batch | schedule | p | dense us/step | masked us/step | speed-up | max abs diff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for pt in report["points"]:
        label = pt["rate"] if pt["rate"] not in measured_labels else f"measured: {pt['rate']}"
        lines.append(
            f"| {pt['cell']} | {pt['size']} | {pt['batch']} | {label} | {pt['p']:.3f} | "
            f"{pt['dense_us_per_step']:.1f} | {pt['masked_us_per_step']:.1f} | **{pt['speedup']:.2f}x** | "
            f"{pt['max_abs_diff']:.1e} |"
        )
    return "\n".join(lines) + "\n"
