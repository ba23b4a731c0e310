"""Cycle bounds the liveness properties hold the accelerator to, from the cycle model.

A step of engine ``e`` costs ``groups x (passes x max(items, 1) + gap) + 1 + drain`` issue cycles
(``docs/accelerator.md``, Data flow and the cycle model); the worst step has as many items as the
engine has inputs (every input non-zero, or every neuron of the layer below changed). Each engine
holds at most two steps (the bank it walks and the bank it fills), so once the host stops, a
result leaves within two worst steps of every engine, plus the pipeline's fixed latencies, for
which the bounds add :data:`MARGIN` cycles per engine.
"""

from __future__ import annotations

from codesign.hw.issue import drain_cycles
from codesign.hw.plan import AcceleratorPlan, EnginePlan

__all__ = ["MARGIN", "input_wait_bound", "result_bound", "step_cycles"]

MARGIN = 12
"""Cycles per engine for the fixed latencies: the update pipeline (C0 to C4), the entry queue,
the serializer's hand-over and the register slice between engines."""


def step_cycles(e: EnginePlan) -> int:
    """The cycle model's cost of engine ``e``'s worst step (every item present)."""
    return e.groups * (e.passes * max(e.inputs, 1) + e.update_gap) + 1 + drain_cycles(e)


def _front_cycles(plan: AcceleratorPlan) -> int:
    """Cycles the optional input stride and DCLS front ends add per step: one per item they pass."""
    extra = 0
    for e in plan.layers:
        if e.dcls is not None:
            extra += 2 * e.inputs + MARGIN
    if plan.layers[0].stride > 1:
        extra += 2 * plan.layers[0].inputs + MARGIN
    return extra


def result_bound(plan: AcceleratorPlan) -> int:
    """Cycles within which a sequence in flight yields a result once the host takes every result."""
    engines = plan.engines
    return sum(2 * step_cycles(e) + MARGIN for e in engines) + plan.readout.groups + _front_cycles(plan)


def input_wait_bound(plan: AcceleratorPlan) -> int:
    """Cycles an offered input beat waits for ``ready`` at most when every result is taken."""
    return result_bound(plan)
