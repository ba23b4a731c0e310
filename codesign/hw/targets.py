"""What the plan knows about the chip it maps onto: block RAM shapes, LUTs, hard multipliers.

``codesign rtl --target`` picks one; the plan (:func:`codesign.hw.plan.plan_accelerator`) then
decides, per memory, block RAM or logic (flip-flops and LUTs), and per engine, hard multipliers or
shift-and-add in LUTs, and ``build.json`` records both. ``generic`` (the default) and ``asic``
decide nothing: the Verilog carries no mapping attribute and the synthesis tool chooses.

Memories (:meth:`Target.map_memories`): a memory goes to LUT RAM when the chip has it and that
costs fewer logic cells than its block RAMs' share of the chip (the device's logic cells per block
RAM); then the block RAMs the chip keeps for the accelerator (``block_rams - reserved_block_rams``:
the UART wrapper's FIFOs) go to the memories that save the most logic cells in them (an exact
knapsack over the block count), and the others leave. Elsewhere is LUT RAM where the chip has it
(ECP5: 16 x 4 bits per ``TRELLIS_DPR16X4``, about 5.5 LUT4 with its read register and write
decoder: the d = 256 CMRU's item memory took 702 LUT4 where 3 per primitive had predicted 400)
or logic: about two logic cells per bit
(its flip-flop, and its share of the write-enable and data multiplexers; measured on the UP5K),
its read register and a read multiplexer of ``width x (depth - 1) / 2`` LUT4s.

Single-port RAMs (:meth:`Target.map_huge`, the UP5K's four SB_SPRAM256KA): with ``--weights
spram`` the weight matrices that would cost the most LUTs as ROMs go there, loaded through
``config`` (an SPRAM has no initial value).
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
    multiplier_bits: int = 16
    """Operand width of one hard multiplier (UP5K SB_MAC16: 16 x 16; ECP5 MULT18X18D: 18 x 18)."""
    min_product_bits: int = 0
    """A product narrower than this (operand bits summed) stays in LUTs whatever the plan says:
    yosys' iCE40 DSP mapping takes products of 11 bits or more (the d = 4 DCLS front end's 8-bit
    tap x 2-bit item took no SB_MAC16), the ECP5's takes any."""
    reserved_block_rams: int = 0
    """Block RAMs kept for what surrounds the accelerator (the UART wrapper's FIFOs)."""
    lut_multiply_max_weight_bits: int = 0
    """Weights this narrow multiply by shift-and-add in LUTs even when a hard multiplier is free."""
    lut_ram: tuple[int, int] | None = None
    """(depth, width) of one LUT RAM primitive (ECP5: ``TRELLIS_DPR16X4``), None without LUT RAM."""
    lut_ram_cells: float = 0.0
    """Logic cells one LUT RAM primitive and its share of the read register take."""
    one_lane_readout: bool = False
    """A once-per-sequence readout gets one lane (area matters more than its overlapped cycles)."""
    huge_rams: int = 0
    """Single-port RAMs for ``--weights spram`` (UP5K: four SB_SPRAM256KA of 16K x 16 bits)."""
    huge_shape: tuple[int, int] = (16384, 16)
    """(depth, width) of one single-port RAM."""
    huge_byte: int = 4
    """Write granularity of a single-port RAM (SB_SPRAM256KA: a mask bit per 4-bit nibble)."""
    update_stages_min: int = 1
    """Pipeline stages every update unit takes at least (``EnginePlan.update_latency``): on the
    UP5K the CMRU's one-cycle ``|c| >= |b|`` (two carry chains as wide as the sums, 36 bits in the
    d = 12 DCLS network) and the state multiplexer behind it were the longest path once the DCLS
    front end's were gone (26.8-28.6 MHz over three placement seeds)."""
    undefined_collisions: bool = False
    """The block RAM's read of a word written in the same cycle is undefined (the iCE40 EBR: yosys'
    ``brams.txt`` declares no read-during-write behaviour), so yosys makes every read that must
    return the old word (an Amaranth read port not transparent to the write) read-first by
    delaying the write a cycle through flip-flops (address, data, enables) and bypassing the read
    with them: measured on JapaneseVowels at P = 4, 886 of its 5,959 logic cells. The plan marks
    the memories whose reads never meet a write of the same word (``MemoryPlan.no_collisions``)."""

    def multiplies_needed(self, a_bits: int, b_bits: int) -> int:
        """Hard multipliers one ``a_bits x b_bits`` product takes.

        yosys' ``mul2dsp`` splits a wider operand into ``multiplier_bits`` slices and leaves a last
        slice under 2 bits to logic: a once-per-sequence readout's 8-bit weight x 24-bit input
        takes two SB_MAC16, minGRU's 8-bit gate x 17-bit difference one."""

        def slices(bits: int) -> int:
            return max(1, bits // self.multiplier_bits + (bits % self.multiplier_bits >= 2))

        return slices(a_bits) * slices(b_bits)

    @property
    def maps(self) -> bool:
        return bool(self.block_shapes)

    def blocks_for(self, depth: int, width: int) -> int:
        """Block RAMs a ``depth x width`` memory takes in its best configuration."""
        return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in self.block_shapes)

    def huge_for(self, depth: int, width: int) -> int:
        """Single-port RAMs a ``depth x width`` memory takes (side by side for its width)."""
        d, w = self.huge_shape
        return math.ceil(depth / d) * math.ceil(width / w)

    def map_huge(self, shapes: dict[str, tuple[int, int, int]]) -> list[str]:
        """The ROMs ``{name: (depth, width, elem_bits)}`` that ``--weights spram`` moves to the
        chip's single-port RAMs: at most :attr:`huge_rams` of them, the most LUTs saved (their
        :meth:`rom_cells`; the same exact knapsack as the block RAMs). Only memories whose
        elements are whole write bytes qualify: the configuration stream writes one element."""
        names = [n for n, (_, _, elem) in shapes.items() if elem % self.huge_byte == 0]
        blocks = {n: self.huge_for(*shapes[n][:2]) for n in names}
        cost = {n: self.rom_cells(*shapes[n][:2]) for n in names}
        return _fill_blocks(names, blocks, cost, self.huge_rams)

    @staticmethod
    def logic_cells(depth: int, width: int) -> float:
        """Logic cells a ``depth x width`` memory with a registered read port takes in logic."""
        return 2 * depth * width + width + width * max(depth - 1, 0) / 2

    def off_block(self, depth: int, width: int) -> tuple[str, float]:
        """The cheaper way to hold a memory outside block RAM: ``(style, logic cells)``."""
        options = [("logic", self.logic_cells(depth, width))]
        if self.lut_ram is not None:
            d, w = self.lut_ram
            cells = math.ceil(depth / d) * math.ceil(width / w) * self.lut_ram_cells + width
            options.append(("distributed", cells))
        return min(options, key=lambda option: option[1])

    @staticmethod
    def rom_cells(depth: int, width: int) -> float:
        """Logic cells a ``depth x width`` ROM with a registered read port takes in LUTs: per
        output bit one LUT4 per 16 words and a multiplexer tree joining them (its flip-flop
        packs with the last LUT). An upper bound: synthesis folds constant and repeated bits."""
        luts = math.ceil(depth / 16)
        return width * (2 * luts - 1)

    def map_memories(
        self,
        shapes: dict[str, tuple[int, int]],
        roms: set[str] | frozenset[str] = frozenset(),
        banks: dict[str, int] | None = None,
        asynchronous: set[str] | frozenset[str] = frozenset(),
    ) -> dict[str, str]:
        """``{name: "block" | "distributed" | "logic"}`` for memories ``{name: (depth, width)}``.

        A memory read combinationally (``asynchronous``) never goes to block RAM, whose read ports
        are all registered: it takes the cheaper of LUT RAM and logic (:meth:`off_block`).

        A memory leaves block RAM when that is cheaper than its share of the chip (the device's
        logic cells per block RAM): LUT RAM where the chip has it, and a ROM (``roms``, a frozen
        build's parameters) in LUTs when that costs under half its blocks' share (logic cells are
        what small chips run out of first). Then the block RAMs the chip keeps for the
        accelerator go to the memories that save the most logic cells in them (:func:`_fill_blocks`,
        an exact knapsack), the rest leave. ``auto`` everywhere off
        FPGAs."""
        if not self.maps:
            return dict.fromkeys(shapes, "auto")
        style = dict.fromkeys(shapes, "block")
        banks = banks or {}
        # a memory the RTL makes of several (a DCLS bank per tap, a copy per read port) takes
        # block RAMs for each: the d = 12 DCLS network's two 64-bit "listed" memories took 2 each
        blocks = {
            name: banks.get(name, 1) * self.blocks_for(depth, -(-width // banks.get(name, 1)))
            for name, (depth, width) in shapes.items()
        }
        off = {name: self.off_block(*shape) for name, shape in shapes.items()}
        for name in roms:
            off[name] = ("logic", self.rom_cells(*shapes[name]))
        share = self.luts / self.block_rams
        for name in shapes:  # LUT RAM or a LUT ROM where it is cheaper; logic only when block RAM runs out
            if off[name][0] == "distributed" and off[name][1] < blocks[name] * share:
                style[name] = off[name][0]
            elif name in roms and off[name][1] < blocks[name] * share / 2:
                style[name] = "logic"
        for name in asynchronous:
            style[name] = off[name][0]
        budget = self.block_rams - self.reserved_block_rams
        wanted = [name for name in shapes if style[name] == "block"]
        for name in wanted:
            style[name] = off[name][0]
        for name in _fill_blocks(wanted, blocks, {name: off[name][1] for name in wanted}, budget):
            style[name] = "block"
        return style


def _fill_blocks(names: list[str], blocks: dict[str, int], cost: dict[str, float], budget: int) -> list[str]:
    """The memories to keep in block RAM: at most ``budget`` blocks, the most logic cells saved.

    An exact 0/1 knapsack over the block count (a few dozen memories, a few dozen blocks). The
    greedy rule it replaces moved memories out cheapest per block first until the rest fit, and
    could overshoot: the d = 12 DCLS network at P = 2 left 4 of the UP5K's 29 EBRs empty with
    both state memories in flip-flops."""
    best: list[tuple[float, tuple[str, ...]]] = [(0.0, ())] * (budget + 1)  # by blocks used
    for name in names:
        n = blocks[name]
        for used in range(budget, n - 1, -1):
            saved, chosen = best[used - n]
            if saved + cost[name] > best[used][0]:
                best[used] = (saved + cost[name], (*chosen, name))
    return list(max(best, key=lambda b: b[0])[1])


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("generic", "no mapping decided: the synthesis tool chooses (the committed rtl/)"),
        Target(
            "asic",
            "no block RAM mapping (memories become flip-flops or a memory compiler's macros)",
            one_lane_readout=True,
        ),
        Target(
            "up5k",
            "Lattice iCE40 UP5K: 30 EBR of 4 kbit, 5280 LUT4, 8 DSP (SB_MAC16)",
            block_shapes=((256, 16), (512, 8), (1024, 4), (2048, 2)),
            block_rams=30,
            reserved_block_rams=1,
            luts=5280,
            multipliers=8,
            min_product_bits=11,
            lut_multiply_max_weight_bits=4,
            one_lane_readout=True,
            huge_rams=4,
            undefined_collisions=True,
            update_stages_min=2,
        ),
        Target(
            "ecp5",
            "Lattice ECP5-25k: 56 DP16KD of 18 kbit, 24288 LUT4, 28 MULT18X18D",
            block_shapes=((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1)),
            block_rams=56,
            reserved_block_rams=1,
            luts=24288,
            lut_ram=(16, 4),
            lut_ram_cells=5.5,
            multipliers=28,
            multiplier_bits=18,
            lut_multiply_max_weight_bits=4,
            one_lane_readout=True,
        ),
    )
}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise CodesignError(f"--target {name!r} is not one of {', '.join(TARGETS)}") from None
