"""What the plan knows about the chip it maps onto: block RAM shapes, LUTs, hard multipliers.

``codesign rtl --target`` picks one; the plan (:func:`codesign.hw.plan.plan_accelerator`) then
decides, per memory, block RAM or logic (flip-flops and LUTs), and per engine, hard multipliers or
shift-and-add in LUTs, and ``build.json`` records both. ``generic`` (the default) and ``asic``
decide nothing: the Verilog carries no mapping attribute and the synthesis tool chooses.

The costs are in LUT-equivalents, so a block RAM and a LUT can be compared on one device: a block
RAM costs the device's LUTs divided by its block RAMs (its share of the chip), a memory in logic
one flip-flop per bit (a logic cell each) plus a read multiplexer of ``width x (depth - 1) / 3``
LUT4s (a 4:1 multiplexer per bit is about one LUT4 per three inputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from codesign.errors import CodesignError

__all__ = ["TARGETS", "Target", "get_target"]


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    block_shapes: tuple[tuple[int, int], ...] = ()
    """(depth, width) configurations of one block RAM; empty: the plan leaves memories alone."""
    block_rams: int = 0
    luts: int = 0
    multipliers: int = 0
    """Hard multipliers the engines may share (0: the plan leaves multiplies alone)."""
    lut_multiply_max_weight_bits: int = 0
    """Weights this narrow multiply by shift-and-add in LUTs even when a hard multiplier is free."""

    @property
    def maps(self) -> bool:
        return bool(self.block_shapes)

    def blocks_for(self, depth: int, width: int) -> int:
        """Block RAMs a ``depth x width`` memory takes in its best configuration."""
        return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in self.block_shapes)

    def memory_style(self, depth: int, width: int) -> str:
        """``block`` or ``logic``, whichever costs fewer LUT-equivalents (``auto`` off FPGAs)."""
        if not self.maps:
            return "auto"
        block_cost = self.blocks_for(depth, width) * self.luts / self.block_rams
        logic_cost = depth * width + width * max(depth - 1, 0) / 3
        return "logic" if logic_cost < block_cost else "block"


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("generic", "no mapping decided: the synthesis tool chooses (the committed rtl/)"),
        Target("asic", "no block RAM mapping (memories become flip-flops or a memory compiler's macros)"),
        Target(
            "up5k",
            "Lattice iCE40 UP5K: 30 EBR of 4 kbit, 5280 LUT4, 8 DSP (SB_MAC16)",
            block_shapes=((256, 16), (512, 8), (1024, 4), (2048, 2)),
            block_rams=30,
            luts=5280,
            multipliers=8,
            lut_multiply_max_weight_bits=4,
        ),
        Target(
            "ecp5",
            "Lattice ECP5-25k: 56 DP16KD of 18 kbit, 24288 LUT4, 28 MULT18X18D",
            block_shapes=((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1)),
            block_rams=56,
            luts=24288,
            multipliers=28,
            lut_multiply_max_weight_bits=4,
        ),
    )
}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise CodesignError(f"--target {name!r} is not one of {', '.join(TARGETS)}") from None
