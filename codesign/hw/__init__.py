"""Amaranth generators for the deployed network (see docs/integer-semantics.md).

:class:`Accelerator` is the event-driven, lane-multiplexed datapath for one bundle;
:func:`build_rtl` elaborates it to Verilog next to a copy of the bundle it came from.
"""

from codesign.hw.accelerator import Accelerator
from codesign.hw.build import build_rtl
from codesign.hw.signature import AcceleratorSignature, ResultLayout, StepLayout

__all__ = ["Accelerator", "AcceleratorSignature", "ResultLayout", "StepLayout", "build_rtl"]
