"""The accelerator's cycle model: the work floor a step cannot go below.

Each layer engine walks ``ceil(d_l / P_l)`` neuron groups, and each group spends one slot per
item of the step (a non-zero input, a non-zero DCLS output or a change event of the layer below;
one biases-only slot when the step has none); the layers run as a pipeline. The floor of a step is
``sum_l ceil(d_l / P_l) x work_l`` with ``work_l`` read off the golden model's MAC counts
(``work_l = macs_l / (d_l x matrices_l)``), so the benchmark (``codesign bench rtl``) and the
testbench's cycle figures use one definition. ``docs/accelerator.md`` derives it.
"""

from __future__ import annotations

import numpy as np

from codesign.bundle.cells import CELLS
from codesign.bundle.spec import Manifest
from codesign.golden.model import GoldenResult

__all__ = ["cycle_floor", "target_per_step"]


def cycle_floor(manifest: Manifest, gold: GoldenResult, lanes: int) -> np.ndarray:
    """``(N, T)`` floor cycles of every step of a golden run at ``lanes`` lanes per engine."""
    floor = np.zeros(gold.layers[0].macs.shape, dtype=np.int64)
    for layer, trace in zip(manifest.layers, gold.layers, strict=True):
        work = trace.macs // (layer.size * len(CELLS[layer.cell].matrices))
        p = min(lanes, layer.size)
        floor += -(-layer.size // p) * work
    return floor


def target_per_step(floor_per_step: float, layers: int) -> float:
    """The cycle target the accelerator is held to: ``1.1 x floor + 8`` per layer."""
    return 1.1 * floor_per_step + 8 * layers
