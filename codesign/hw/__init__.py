"""Amaranth generators for the deployed network (see docs/integer-semantics.md, docs/accelerator.md).

:class:`Accelerator` is the event-driven, lane-multiplexed accelerator of a whole bundle (every
cell kind, stacks of layers, DCLS front ends, last/sum/per-step readouts);
:func:`codesign.hw.build.build_rtl` elaborates it to Verilog next to a copy of the bundle.
"""

from codesign.hw.accelerator import Accelerator
from codesign.hw.plan import AcceleratorPlan, plan_accelerator
from codesign.hw.signature import AcceleratorSignature, ItemLayout, ResultLayout

__all__ = [
    "Accelerator",
    "AcceleratorPlan",
    "AcceleratorSignature",
    "ItemLayout",
    "ResultLayout",
    "plan_accelerator",
]
