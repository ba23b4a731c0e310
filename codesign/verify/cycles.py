"""The accelerator's cycle model: the work floor a step cannot go below.

Each layer engine walks ``ceil(d_l / P_l)`` neuron groups, and each group spends one slot per
item of the step (a non-zero input, a non-zero DCLS output or a change event of the layer below;
one biases-only slot when the step has none); the layers run as a pipeline. The floor of a step is
``sum_l ceil(d_l / P_l) x passes_l x work_l`` with ``work_l`` read off the golden model's MAC
counts (``work_l = macs_l / (d_l x matrices_l)``) and ``passes_l`` the cycles a slot takes in the
lane array (1, or ``ceil(matrices / multipliers per lane)`` with shared multipliers, times ``K``
with digit-serial LUT products, ``--share-multipliers X:K``: ``EnginePlan.passes``), so the benchmark (``codesign bench rtl``) and the testbench's cycle
figures use one definition. Folded words (``--narrow auto``: a word read as one slice per pass)
add nothing: each pass reads its own slice in the cycle it already takes. One update unit shared
by a group's lanes (``--share-updates on``) adds ``gap_l = P - 1`` idle issue cycles after each
walked group (``EnginePlan.update_gap``): ``sum_l ceil(d_l / P_l) x (passes_l x work_l + gap_l)``.
``docs/accelerator.md`` derives it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from codesign.bundle.cells import CELLS
from codesign.bundle.spec import Manifest
from codesign.golden.model import GoldenResult

__all__ = ["cycle_floor", "open_floor", "target_per_step"]


def _work(layer, trace) -> np.ndarray:
    """Items a layer's engine walks per step (non-zero inputs, DCLS outputs or input events)."""
    if trace.items is not None:
        return trace.items
    return trace.macs // (layer.size * len(CELLS[layer.cell].matrices))


def _passes(manifest: Manifest, passes: Sequence[int] | None) -> list[int]:
    if passes is None:
        return [1] * len(manifest.layers)
    if len(passes) != len(manifest.layers):
        raise ValueError(f"passes {list(passes)}: one per layer ({len(manifest.layers)}) expected")
    return [int(p) for p in passes]


def cycle_floor(
    manifest: Manifest,
    gold: GoldenResult,
    lanes: int,
    tables: dict[int, np.ndarray] | None = None,
    passes: Sequence[int] | None = None,
    gaps: Sequence[int] | None = None,
) -> np.ndarray:
    """``(N, T)`` floor cycles of every step of a golden run at ``lanes`` lanes per engine.

    ``tables``: the ``su_gate`` of every selective layer (by layer index); ``passes``: the cycles
    a slot takes in each layer (``[e.passes for e in plan.layers]``; default 1: no sharing);
    ``gaps``: idle issue cycles after each group of each layer (``[e.update_gap for e in
    plan.layers]``; default 0: an update unit per lane)."""
    cost = _passes(manifest, passes)
    gap = [0] * len(manifest.layers) if gaps is None else [int(g) for g in gaps]
    if len(gap) != len(manifest.layers):
        raise ValueError(f"gaps {list(gap)}: one per layer ({len(manifest.layers)}) expected")
    from codesign.hw.plan import plan_accelerator
    from codesign.hw.selective import walk

    floor = np.zeros(gold.layers[0].macs.shape, dtype=np.int64)
    plan = None
    for index, (layer, trace) in enumerate(zip(manifest.layers, gold.layers, strict=True)):
        work = _work(layer, trace)
        p = min(lanes, layer.size)
        if layer.selective is None:
            floor += -(-layer.size // p) * (work * cost[index] + gap[index])
            continue
        if tables is None or index not in tables:
            raise ValueError(f"layer {index} is selective: cycle_floor needs its su_gate table")
        plan = plan or plan_accelerator(manifest, lanes)
        e = plan.layers[index]
        steps = work.shape[1]
        for n in range(work.shape[0]):
            for t in range(steps):
                items = int(work[n, t])
                visits = walk(e, tables[index], t, seq_end=t == steps - 1, items=items)
                slots = sum(1 if held else max(items, 1) for _, held in visits)
                floor[n, t] += cost[index] * slots + gap[index] * len(visits)
    return floor


def open_floor(
    manifest: Manifest, gold: GoldenResult, lanes: int, passes: Sequence[int] | None = None
) -> np.ndarray:
    """``(N, T)`` ``sum_l ceil(open_l / P) x passes_l x work_l``: every open neuron packed (the
    issue's ideal).

    ``work_l`` is at least one slot per open group: an open neuron is updated even in a step with
    no item (its gates from the biases alone, as :func:`cycle_floor` counts a walked group), so a
    step without items is not free while any neuron is open."""
    floor = np.zeros(gold.layers[0].macs.shape, dtype=np.int64)
    cost = _passes(manifest, passes)
    for index, (layer, trace) in enumerate(zip(manifest.layers, gold.layers, strict=True)):
        p = min(lanes, layer.size)
        opened = trace.opens if trace.opens is not None else np.full(floor.shape, layer.size)
        floor += -(-opened // p) * np.maximum(_work(layer, trace), 1) * cost[index]
    return floor


def target_per_step(floor_per_step: float, layers: int) -> float:
    """The cycle target the accelerator is held to: ``1.1 x floor + 8`` per layer."""
    return 1.1 * floor_per_step + 8 * layers
