"""The hardware plan of a bundle: every engine, memory, width and counter the RTL instantiates.

One function, :func:`plan_accelerator`, turns a manifest and a lane count into plain dataclasses.
The Amaranth components (``codesign/hw/*.py``), the memory images and configuration beats
(:mod:`codesign.hw.images`), ``build.json`` and the cocotb testbench all read this plan, so a width
or an address is decided once.

The accelerator is a chain of engines connected by item streams (``docs/accelerator.md``)::

    inputs -> [dcls 0] -> layer 0 -> [dcls 1] -> layer 1 -> ... -> readout -> results

An *item* is ``(index, value)``: a non-zero input of layer 0, the output of a DCLS front end, a
change event ``(neuron, delta)`` of the previous layer, or an entry of the pooled vector. Every
stream also carries ``step_end`` and ``seq_end`` markers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from codesign.bundle.cells import CELLS
from codesign.bundle.spec import (
    MAX_DATAPATH_BITS,
    SHIFT_BITS,
    Manifest,
    accumulator_bits,
    front_end_bits,
    layer_input,
    logit_bits,
    readout_input_bits,
    shift_bounds,
)
from codesign.errors import CodesignError
from codesign.hw.faults import FaultSet
from codesign.hw.targets import Target, get_target

__all__ = [
    "AcceleratorPlan",
    "DCLSPlan",
    "EnginePlan",
    "MemoryPlan",
    "MATRICES",
    "PARAMS",
    "ceil_div",
    "plan_accelerator",
    "frozen_shift_ranges",
    "MAX_SPAN_WORDS",
    "SHARE_MODES",
    "serial_cycles",
    "parse_share",
    "resolve_narrow",
    "NARROW_DEFAULT_TARGETS",
    "SHARE_UPDATE_MODES",
    "NARROW_MODES",
    "MERGE_MODES",
    "MERGED_KEYS",
]

MATRICES: dict[str, tuple[str, ...]] = {name: kind.matrices for name, kind in CELLS.items()} | {
    "readout": ("logit",)
}
"""Weight matrices of each engine kind, in the order of the elements of a weight word."""

PARAMS: dict[str, tuple[str, ...]] = {name: tuple(kind.params) for name, kind in CELLS.items()} | {
    "readout": ()
}
"""Per-neuron parameters the update unit reads in the update stage (besides the biases)."""

STATE_FIELDS: dict[str, tuple[str, ...]] = {name: kind.state_fields for name, kind in CELLS.items()} | {
    "readout": ()
}
"""Per-neuron state kept in the state memory."""

QUEUE_DEPTH = 16
"""Entries a group may reserve ahead in its engine's output queue. A group reserves one when it
starts (C0) and returns it when the next stage takes the entry, about 10 cycles later through the
pipeline; with fewer credits than that, groups of one or two slots (sparse steps) wait for credit
(8 cost 5 % at P = 1)."""

ONCE_QUEUE_DEPTH = 2
"""Entries of a queue written only in a sequence's last step, on a chip or ASIC target: a last layer
that sends its final vector to a once-per-sequence readout, and that readout's results. Credits
are taken only in that step (:class:`codesign.hw.issue.IssueStage`), so a shallow queue costs
cycles once per sequence; 15 entries of 55 bits had taken 4 of the UP5K's EBRs at 5 % fill. Two
(one in memory, one in the output register): the serializer empties an entry in at most ``P``
cycles into the readout's double-buffered item memory, so a deeper queue bought nothing measured
(JapaneseVowels at P = 2 and 4, the d = 16 CMRU at P = 8: the same cycles as with 4; the d = 32
minGRU at P = 4: 9 cycles more over three sequences), where its 3 x 104-bit final vectors had
cost JapaneseVowels at P = 4 about 600 logic cells."""

DCLS_QUEUE_DEPTH = 4
"""Outputs a DCLS front end queues towards its layer; its send pipeline issues only what fits."""

DCLS_COUNT_REGISTERS = 32
"""Slots up to which a DCLS front end keeps its slot counts in registers, read where they are used
(``MemoryPlan.style == "registers"``), not in a memory read a cycle ahead on a port per tap. The
memory's reads had to see the append of the cycle before (a transparent port: an address compare
and a bypass behind each), and its write enable hung on SEND's index comparison: 9 to 11 logic
levels, the UP5K's longest path in the d = 12 DCLS network (24.96 MHz against 30). Registers cost
``span x log2(m + 1)`` flip-flops and a multiplexer per reader; a 32-slot memory is where a block
RAM or LUT RAM starts to pay."""

MAX_SPAN_WORDS = 1 << 20
"""Largest DCLS delay line (channels x span words) the generator builds."""


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def index_bits(size: int) -> int:
    """Width of an unsigned index in ``[0, size)`` (at least one bit)."""
    return max(1, (size - 1).bit_length())


def stride_bits(size: int) -> int:
    """``ceil(log2(size))``: a DCLS slot of ``size`` channels takes ``2**stride_bits`` words."""
    return (size - 1).bit_length()


@dataclass(frozen=True)
class MemoryPlan:
    """One on-chip memory: ``depth`` words of ``elements`` signed ``elem_bits``-bit elements."""

    name: str  # e.g. "layer0_weights"
    depth: int
    elements: int
    elem_bits: int
    kind: Literal["weights", "params", "state", "accumulators", "delay_line", "items", "pooled", "queue"]
    config_id: int | None = None  # target id on the configuration stream (None: not loadable)
    style: Literal["auto", "block", "distributed", "logic", "huge", "registers"] = (
        "auto"  # mapping the plan decided (codesign.hw.targets); huge: a single-port RAM (SPRAM);  # registers: not a memory in the RTL at all, read without a port (small DCLS slot counts)
    )
    rom: bool = False  # a frozen build's parameters: initial values, no write port (config ignored)
    banks: int = 1  # memories of ``width / banks`` bits the RTL makes of it (a DCLS bank per tap)
    fold: int = 1  # a logical word split into ``fold`` slices at consecutive addresses (``--narrow``):
    # ``depth`` and ``elements`` are the physical memory's, one slice per word
    shared: str | None = None  # ``--merge auto``: the physical memory whose word holds this one's
    offset: int = 0  # ... at this bit offset (same addresses; :func:`_merge_memories`)
    no_collisions: bool = False  # no read meets a write of its word in one cycle (:data:`COLLISION_FREE`):
    # yosys need not make the read return the old word (``no_rw_check``)
    asynchronous: bool = False  # read combinationally (the selective schedule): no block RAM takes
    # such a port, so a chip maps it to LUT RAM or logic (:meth:`Target.map_memories`)

    @property
    def width(self) -> int:
        return self.elements * self.elem_bits

    @property
    def rtl_style(self) -> str:
        """The style the RTL gives the memory: the plan's, except that an asynchronous memory the
        plan left to the tool (a build for no chip) is ``logic``, since ``codesign synth --ram
        block`` sends every memory without a style to block RAM, which cannot read it."""
        return "logic" if self.asynchronous and self.style == "auto" else self.style

    @property
    def attrs(self) -> dict[str, str] | None:
        """Attributes of the RTL memory: yosys' ``ram_style`` where the RTL decides a mapping
        (:attr:`rtl_style`)."""
        attrs = {} if self.rtl_style == "auto" else {"ram_style": self.rtl_style}
        if self.no_collisions:
            attrs["no_rw_check"] = 1
        return attrs or None

    @property
    def bits(self) -> int:
        return self.depth * self.elements * self.elem_bits


@dataclass(frozen=True)
class DCLSPlan:
    channels: int  # m
    taps: int  # K
    span: int  # G
    weight_bits: int
    delay_bits: int  # unsigned
    in_bits: int  # width of the values it delays (layer input)
    z_bits: int  # width of its outputs
    mode: Literal["absolute", "delta"]  # layer 0 sends values, later layers send deltas
    item_bits: int  # width of the item values it receives
    hard_taps: int | None = (
        None  # taps whose w * x uses a hard multiplier (None: all); the rest shift-and-add
    )


@dataclass(frozen=True)
class EnginePlan:
    """A layer (or the readout) as a time-multiplexed engine of ``lanes`` lanes."""

    name: str  # "layer0", ..., "readout"
    kind: str  # cell kind or "readout"
    index: int  # layer index (-1 for the readout)
    size: int  # d (neurons) or C (classes)
    inputs: int  # m: width of the item index space
    lanes: int
    groups: int
    item_bits: int  # width of the item values it multiplies
    acc_bits: int
    weight_bits: int
    bias_bits: int
    mode: Literal["scratch", "events"]  # recompute from biases every step, or keep accumulators
    matrices: tuple[str, ...]
    params: dict[str, int]  # parameter -> width
    state_fields: tuple[str, ...]
    state_bits: int
    output_bits: int  # width of the value the layer passes on
    delta_bits: int  # width of its change events
    emit: Literal["delta", "final", "none"]  # what goes downstream
    eps: int = 0
    alpha_bits: int = 8
    gate_bits: int = 6
    leak_shift: int = 4
    pool_bits: int | None = None  # sum pooling folded into the last layer's write-back stage
    gate_width: int = 1  # width of the gate the trace reports
    shift_lo: int = 0  # the per-neuron shifts lie in [shift_lo, shift_hi]: the spec's bounds, or a
    shift_hi: int = 63  # frozen build's own values (``plan_accelerator(shift_ranges=...)``)
    dcls: DCLSPlan | None = None
    memories: dict[str, MemoryPlan] = field(default_factory=dict)
    multiplier: Literal["auto", "hard", "lut", "mixed"] = "auto"  # hard multipliers, or shift-and-add in LUTs
    hard_products: int = 0  # "mixed": the first this many of the P x matrices products are hard
    update_multiplier: Literal["hard", "lut"] = "hard"  # the update unit's multiplies (minGRU's z * (u - h))
    update_latency: int = 1  # cycles of the update unit (C3, or C3 and C3b): CellKind.update_stages,
    # at least the target's Target.update_stages_min
    period: int = 0  # selective update: the schedule's period (0: every neuron updates every step)
    lane_multipliers: int = 0  # multipliers per lane shared over the matrices (0: one per matrix)
    digit_passes: int = 1  # cycles one LUT weight product takes: Booth digits in turn (share "X:K")
    queue_depth: int = QUEUE_DEPTH  # entries of the queue towards the next engine (or the results)
    shared_update: bool = False  # one update unit serves the P lanes in turn (--share-updates)
    stride: int = 1  # layer 0: input frames per step, summed per channel (``input.stride``)

    @property
    def stride_shift(self) -> int:
        """``log2 stride``: the right shift of a window's per-channel sum (``codesign.hw.stride``)."""
        return self.stride.bit_length() - 1

    @property
    def update_gap(self) -> int:
        """Idle issue cycles after a group's last slot: ``P - 1`` when one update unit serves the
        group's ``P`` lanes in turn (lane ``l`` in the ``l``-th cycle after the group's sums are
        ready), so the sums, state and parameters it reads hold until the last lane is done."""
        return self.lanes - 1 if self.shared_update else 0

    @property
    def shared_stages(self) -> int:
        """Register stages a shared update unit (``--share-updates on``) adds after C3: the turn's
        picked inputs registered before the unit (the pick, the block RAM's read of the lane's
        state and pooled sum and the unit were one cycle), and the pooled sum and change event
        computed one cycle after the unit (the unit and the pooled-sum adder were one cycle:
        JapaneseVowels at P = 4 placed at 17.2 MHz on the UP5K). The state is written one
        cycle, C4 two cycles later than behind a unit per lane; the throughput is unchanged."""
        return 2 if self.shared_update else 0

    @property
    def products(self) -> int:
        """Multipliers of each lane: one per matrix, or ``lane_multipliers`` shared over them."""
        return self.lane_multipliers or len(self.matrices)

    @property
    def passes(self) -> int:
        """Cycles one slot takes in the lane array: ``ceil(matrices / multipliers per lane)``,
        times ``digit_passes`` for a digit-serial LUT multiplier."""
        return ceil_div(len(self.matrices), self.products) * self.digit_passes

    @property
    def item_capacity(self) -> int:
        """Items one step can hold: every index at most once."""
        return self.inputs


@dataclass(frozen=True)
class AcceleratorPlan:
    manifest: Manifest
    lanes: int
    input_size: int
    input_bits: int
    layers: tuple[EnginePlan, ...]
    readout: EnginePlan
    classes: int
    logit_bits: int
    pooling: str
    per_step: bool
    memories: tuple[MemoryPlan, ...]
    counters: tuple[str, ...]  # the counters the build carries, in the order of the counters port
    counter_owners: dict[str, str] = field(default_factory=dict)  # every declared counter -> its component
    counter_bits: int = 32
    faults: FaultSet = field(default_factory=FaultSet)
    target: str = "generic"
    counter_set: str = "all"
    frozen: bool = False  # the engines' weights, biases and parameters are ROMs (--weights frozen)
    spram: bool = False  # frozen, but the largest weight matrices in single-port RAMs loaded through config
    share: str = "off"  # multipliers shared over the matrices (--share-multipliers): off, auto or N per lane
    narrow: str = "off"  # weight words folded by the lane array's matrix passes (--narrow): off or auto
    share_updates: str = "off"  # one update unit per layer serving its lanes in turn (--share-updates)
    merge: str = "off"  # memories read at one address in one cycle share a physical word (--merge)

    @property
    def engines(self) -> tuple[EnginePlan, ...]:
        return (*self.layers, self.readout)

    def counters_of(self, owner: str) -> tuple[str, ...]:
        """The counters one component keeps (``top``, ``layer0``, ``layer0.issue``, ``readout.front``, ...)."""
        return tuple(name for name in self.counters if self.counter_owners[name] == owner)

    def counter(self, name: str) -> bool:
        """Whether the build carries counter ``name``."""
        return name in self.counters

    def memory(self, name: str) -> MemoryPlan:
        for mem in self.memories:
            if mem.name == name:
                return mem
        raise KeyError(name)

    @property
    def config_targets(self) -> tuple[MemoryPlan, ...]:
        return tuple(m for m in self.memories if m.config_id is not None)

    @property
    def config_addr_bits(self) -> int:
        return index_bits(max((m.depth for m in self.config_targets), default=1))

    @property
    def config_elem_bits(self) -> int:
        return index_bits(max((m.elements for m in self.config_targets), default=1))

    @property
    def config_target_bits(self) -> int:
        return index_bits(len(self.config_targets))

    def shape_key(self) -> dict:
        """Everything the RTL depends on except the weights: builds with equal keys are identical."""
        m = self.manifest.model_dump(mode="json", exclude={"name", "checksums", "provenance"})
        for layer in m["layers"]:  # keys of builds made before selective update unchanged
            if layer.get("selective", 0) is None:
                del layer["selective"]
        key = {"manifest": m, "lanes": self.lanes}
        if self.target != "generic" or self.counter_set != "all":  # keys of older builds unchanged
            key |= {"target": self.target, "counters": self.counter_set}
        if self.share != "off":  # keys of builds without sharing unchanged
            key |= {"share": self.share}
        if self.frozen:  # the Verilog holds the parameters: only this bundle has this key
            key |= {"frozen": True, "weights_sha256": self.manifest.checksums.get("weights.npz")}
        if self.spram:
            key |= {"spram": True}
        if self.narrow != "off":  # keys of builds without folding unchanged
            key |= {"narrow": self.narrow}
        if self.share_updates != "off":  # keys of builds with an update unit per lane unchanged
            key |= {"share_updates": self.share_updates}
        if self.merge != "off":  # keys of builds with a memory per logical memory unchanged
            key |= {"merge": self.merge}
        return key

    def physical_memories(self) -> dict[str, tuple[MemoryPlan, ...]]:
        """``{physical memory: its logical memories, lowest bit offset first}`` of the memories
        ``--merge auto`` put in one word (:func:`_merge_memories`); the others are their own."""
        out: dict[str, list[MemoryPlan]] = {}
        for mem in self.memories:
            if mem.shared is not None:
                out.setdefault(mem.shared, []).append(mem)
        return {name: tuple(sorted(parts, key=lambda p: p.offset)) for name, parts in out.items()}


def _dcls_memories(name: str, dc: DCLSPlan, config_id: int) -> dict[str, MemoryPlan]:
    """The DCLS front end's memories of engine ``name``: its taps (loadable as ``config_id``), the
    delay line's banks, flags, lists and counts, and its output queue (:mod:`codesign.hw.dcls`)."""
    mems: dict[str, MemoryPlan] = {}
    mems["dcls_taps"] = MemoryPlan(
        f"{name}_dcls_taps",
        dc.channels,
        2 * dc.taps,
        max(dc.weight_bits, dc.delay_bits + 1),
        "params",
        config_id,
    )
    # one bank per tap (its contribution w x item), read and cleared together when sent; the
    # "listed" flags with one read port per tap (a copy each on an FPGA): codesign/hw/dcls.py
    mems["dcls_zbuf"] = MemoryPlan(
        f"{name}_dcls_zbuf",
        dc.span << stride_bits(dc.channels),
        dc.taps,
        min(dc.z_bits, dc.weight_bits + dc.item_bits),
        "delay_line",
        banks=dc.taps,
    )
    mems["dcls_listed"] = MemoryPlan(
        f"{name}_dcls_listed",
        dc.span << stride_bits(dc.channels),
        dc.taps,
        1,
        "delay_line",
        banks=dc.taps,
    )
    mems["dcls_lists"] = MemoryPlan(
        f"{name}_dcls_lists",
        dc.span << stride_bits(dc.channels),
        1,
        index_bits(dc.channels),
        "delay_line",
    )
    # a memory: one read port per tap (a copy each in block RAM: the d = 12 DCLS network's
    # 4 x 4-bit counts took 2 EBRs where the plan had counted one, 31 of the UP5K's 30);
    # registers up to DCLS_COUNT_REGISTERS slots
    mems["dcls_counts"] = MemoryPlan(
        f"{name}_dcls_counts",
        dc.span,
        1,
        (dc.channels).bit_length(),
        "delay_line",
        banks=dc.taps,
        style="registers" if dc.span <= DCLS_COUNT_REGISTERS else "auto",
    )
    mems["dcls_queue"] = MemoryPlan(  # its outputs towards the layer (ItemLayout)
        f"{name}_dcls_outputs",
        DCLS_QUEUE_DEPTH - 1,
        1,
        index_bits(dc.channels) + dc.z_bits + 2,
        "queue",
    )
    return mems


def _engine_memories(e: EnginePlan, next_id: list[int]) -> dict[str, MemoryPlan]:
    def loadable() -> int:
        next_id[0] += 1
        return next_id[0] - 1

    mems: dict[str, MemoryPlan] = {}
    n_mat = len(e.matrices)
    p = e.lanes
    mems["weights"] = MemoryPlan(
        f"{e.name}_weights", e.groups * e.inputs, p * n_mat, e.weight_bits, "weights", loadable()
    )
    mems["bias"] = MemoryPlan(f"{e.name}_bias", e.groups, p * n_mat, e.bias_bits, "weights", loadable())
    if e.params:
        mems["params"] = MemoryPlan(
            f"{e.name}_params", e.groups, p * len(e.params), max(e.params.values()), "params", loadable()
        )
    if e.dcls is not None:
        mems.update(_dcls_memories(e.name, e.dcls, loadable()))
    if e.stride > 1:  # the input stride's per-channel window sums (codesign/hw/stride.py)
        mems["stride_sums"] = MemoryPlan(
            f"{e.name}_stride_sums", e.inputs, 1, stride_sum_bits(e), "accumulators"
        )
    if e.period:  # selective update: open lanes per (phase, group) and the groups to walk per phase
        mems["su_open"] = MemoryPlan(
            f"{e.name}_su_open", e.period * e.groups, p, 2, "params", loadable(), asynchronous=True
        )
        mems["su_walk"] = MemoryPlan(
            f"{e.name}_su_walk",
            e.period * (e.groups + 1),
            1,
            e.groups.bit_length() + 1,
            "params",
            loadable(),
            asynchronous=True,
        )
    mems["items"] = MemoryPlan(
        f"{e.name}_items", 2 * e.item_capacity, 1, index_bits(e.inputs) + e.item_bits, "items"
    )
    if e.state_fields:
        mems["state"] = MemoryPlan(
            f"{e.name}_state", e.groups, p * len(e.state_fields), e.state_bits, "state"
        )
    if e.mode == "events":
        mems["acc"] = MemoryPlan(f"{e.name}_acc", e.groups, p * n_mat, e.acc_bits, "accumulators")
    if e.pool_bits is not None:
        mems["pool"] = MemoryPlan(f"{e.name}_pool", e.groups, p, e.pool_bits, "pooled")
    # the queue towards the next engine (the storage of a CreditFIFO of queue_depth entries: one
    # entry waits in its output register); widths as EntryLayout / ResultLayout pack them
    if e.kind == "readout":
        width = p * e.acc_bits + index_bits(e.groups) + 1 + index_bits(e.size) + 1
        mems["queue"] = MemoryPlan(f"{e.name}_results", e.queue_depth - 1, 1, width, "queue")
    else:
        value_bits = e.delta_bits if e.emit == "delta" else (e.pool_bits or e.output_bits)
        width = p + p * value_bits + index_bits(e.groups) + 2
        mems["queue"] = MemoryPlan(f"{e.name}_entries", e.queue_depth - 1, 1, width, "queue")
    return mems


def stride_sum_bits(e: EnginePlan) -> int:
    """Width of a window's per-channel sum: ``stride`` input codes of the layer's item width."""
    return e.item_bits + e.stride_shift if e.dcls is None else e.dcls.in_bits + e.stride_shift


def _check_lanes(manifest: Manifest, lanes: int) -> None:
    if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
        raise CodesignError(f"lanes must be a positive integer, not {lanes!r}")
    widest = max(layer.size for layer in manifest.layers)
    if lanes > widest:
        raise CodesignError(
            f"lanes {lanes} is outside the allowed range 1..{widest} (1 up to the widest layer of "
            f"bundle '{manifest.name}')"
        )


def _plan_dcls(manifest: Manifest, i: int) -> DCLSPlan | None:
    """Layer ``i``'s delay front end: layer 0 sends values, later layers send changes."""
    layer = manifest.layers[i]
    if layer.dcls is None:
        return None
    m, in_bits = layer_input(manifest, i)
    span_words = m * layer.dcls.span
    if span_words > MAX_SPAN_WORDS:
        raise CodesignError(
            f"layers.{i}.dcls.span: {layer.dcls.span} x {m} channels = {span_words} delay-line "
            f"words exceeds the hardware limit of {MAX_SPAN_WORDS}"
        )
    return DCLSPlan(
        channels=m,
        taps=layer.dcls.taps,
        span=layer.dcls.span,
        weight_bits=layer.dcls.weight_bits,
        delay_bits=max(1, (layer.dcls.span - 1).bit_length()),
        in_bits=in_bits,
        # layer 0 sends values (z), later layers send changes (z(t) - z(t-1): one bit more)
        z_bits=front_end_bits(manifest, i) + (0 if i == 0 else 1),
        mode="absolute" if i == 0 else "delta",
        item_bits=in_bits if i == 0 else in_bits + 1,
    )


def _plan_layer(manifest: Manifest, i: int, lanes: int) -> EnginePlan:
    """Layer ``i`` as an engine: widths from the spec, matrices and parameters from the registry."""
    layer, r = manifest.layers[i], manifest.readout
    kind = CELLS[layer.cell]
    m, in_bits = layer_input(manifest, i)
    item_in_bits = in_bits if i == 0 else in_bits + 1  # later layers receive changes: one bit more
    acc = accumulator_bits(manifest, i)
    dcls = _plan_dcls(manifest, i)
    last = i == len(manifest.layers) - 1
    widths = {"alpha_bits": layer.alpha_bits, "state_bits": layer.state_bits}
    lo, hi = shift_bounds(acc)
    layer_lanes = min(lanes, layer.size)
    return EnginePlan(
        name=f"layer{i}",
        kind=layer.cell,
        index=i,
        size=layer.size,
        inputs=m,
        lanes=layer_lanes,
        groups=ceil_div(layer.size, layer_lanes),
        item_bits=dcls.z_bits if dcls else item_in_bits,
        acc_bits=acc,
        weight_bits=layer.weight_bits,
        bias_bits=layer.bias_bits,
        mode="events" if i > 0 else "scratch",
        matrices=kind.matrices,
        params={name: widths.get(width, SHIFT_BITS) for name, width in kind.params.items()},
        state_fields=kind.state_fields,
        state_bits=layer.state_bits,
        output_bits=layer.output_bits,
        delta_bits=layer.output_bits + 1,
        emit="delta" if (not last or r.per_step) else "final",
        eps=layer.eps,
        alpha_bits=layer.alpha_bits,
        gate_bits=layer.gate_bits,
        leak_shift=layer.leak_shift,
        pool_bits=r.sum_bits if (last and r.pooling == "sum" and not r.per_step) else None,
        gate_width=layer.gate_bits + 1 if kind.graded_gate else 1,
        update_latency=kind.update_stages,
        period=layer.selective.period if layer.selective is not None else 0,
        shift_lo=lo,
        shift_hi=hi,
        dcls=dcls,
        stride=manifest.input.stride if i == 0 else 1,
    )


def _plan_readout(manifest: Manifest, last_layer: EnginePlan, lanes: int) -> EnginePlan:
    """The readout as an engine whose lanes serve classes."""
    r = manifest.readout
    if r.per_step:
        item_bits, mode = last_layer.delta_bits, "events"
    else:
        item_bits, mode = readout_input_bits(manifest), "scratch"
    ro_lanes = min(lanes, r.classes)
    lb = logit_bits(manifest)
    return EnginePlan(
        name="readout",
        kind="readout",
        index=-1,
        size=r.classes,
        inputs=last_layer.size,
        lanes=ro_lanes,
        groups=ceil_div(r.classes, ro_lanes),
        item_bits=item_bits,
        acc_bits=lb,
        weight_bits=r.weight_bits,
        bias_bits=r.bias_bits,
        mode=mode,
        matrices=MATRICES["readout"],
        params={},
        state_fields=(),
        state_bits=lb,
        output_bits=lb,
        delta_bits=lb + 1,
        emit="none",
    )


TOP_COUNTERS = ("cycles", "input_stall_cycles", "result_stall_cycles", "sequences", "results")
"""Counters of the accelerator's own ports."""

COUNTER_SETS = ("all", "basic", "none")
"""``all``: every counter (what the testbench checks and the report prices); ``basic``: cycles,
sequences, results and each engine's steps, MACs and events; ``none``: no counter (the smallest
build)."""

BASIC_TOP_COUNTERS = ("cycles", "sequences", "results")
BASIC_ENGINE_COUNTERS = ("steps", "macs", "events")


def _keep_counter(name: str, owner: str, counter_set: str) -> bool:
    if counter_set == "all":
        return True
    if counter_set == "none":
        return False
    if owner == "top":
        return name in BASIC_TOP_COUNTERS
    return any(name.endswith(f"_{suffix}") for suffix in BASIC_ENGINE_COUNTERS) and "_dcls_" not in name


def _memory_owner(e: EnginePlan, key: str) -> str:
    """The component whose ports count a memory's reads and writes."""
    if key in ("items", "su_open", "su_walk"):
        return f"{e.name}.issue"
    if key.startswith("dcls_"):
        return f"{e.name}.dcls"
    if key.startswith("stride_"):
        return f"{e.name}.stride"
    return f"{e.name}.front"


def _plan_counters(engines: list[EnginePlan]) -> dict[str, str]:
    """Every counter (in port order) -> the component that keeps it (``top``, ``layer0.issue``, ...).

    Components create their counters from this table (:class:`codesign.hw.counters.CounterBank`):
    a counter one of them increments without a declaration here is an error.
    """
    owners = {name: "top" for name in TOP_COUNTERS}
    for e in engines:
        owners[f"{e.name}_macs"] = f"{e.name}.front"
        for name in ("steps", "busy_cycles", "stall_cycles"):
            owners[f"{e.name}_{name}"] = f"{e.name}.issue"
        if e.kind != "readout":
            owners[f"{e.name}_events"] = e.name
            owners[f"{e.name}_saturations"] = e.name
        if e.period:
            owners[f"{e.name}_open_steps"] = e.name  # open neuron-steps of selective update
        if e.dcls is not None:
            owners[f"{e.name}_dcls_cycles"] = f"{e.name}.dcls"
        if e.stride > 1:
            owners[f"{e.name}_stride_cycles"] = f"{e.name}.stride"
        owners[f"{e.name}_item_overflows"] = f"{e.name}.issue"
    for e in engines:
        for key, mem in e.memories.items():
            if mem.kind != "queue":  # queues are paid for by the events they carry
                owners[f"{mem.name}_reads"] = owners[f"{mem.name}_writes"] = _memory_owner(e, key)
    return owners


ROM_KEYS = ("weights", "bias", "params", "dcls_taps")
"""Memories of an engine that a frozen build (``--weights frozen``) makes ROMs, the DCLS taps too
(loadable before: 4 of the d = 12 DCLS network's 29 EBRs at P = 2 held 608 bits of taps)."""


def _freeze(e: EnginePlan, shifts: tuple[int, int] | None = None) -> EnginePlan:
    """The engine's parameter memories as ROMs: no configuration target, no write port; its
    shifters bounded by ``shifts``, the lowest and highest shift the ROM holds."""
    mems = {
        k: replace(mem, rom=True, config_id=None) if k in ROM_KEYS else mem for k, mem in e.memories.items()
    }
    if shifts is not None:
        lo, hi = shifts
        if e.groups * e.lanes > e.size:  # lanes past d run on zero parameters (never written back)
            lo, hi = min(lo, 0), max(hi, 0)
        if lo > hi or lo < e.shift_lo or hi > e.shift_hi:
            raise CodesignError(
                f"{e.name}: shifts {lo} .. {hi} are outside the range {e.shift_lo} .. {e.shift_hi} "
                "its accumulators allow"
            )
        e = replace(e, shift_lo=lo, shift_hi=hi)
    return replace(e, memories=mems)


def frozen_shift_ranges(
    manifest: Manifest, arrays: Mapping[int, Mapping[str, object]]
) -> dict[int, tuple[int, int]]:
    """``{layer index: (lowest, highest)}`` of each layer's per-neuron shift parameters
    (``arrays``: a layer's arrays by name, ``Bundle.layer_weights``); :func:`_freeze` adds 0
    where a last group's lanes past ``d`` run on zero parameters."""
    out = {}
    for i, layer in enumerate(manifest.layers):
        names = [name for name, width in CELLS[layer.cell].params.items() if width == "shift"]
        if not names:
            continue
        values = [int(v) for name in names for v in np.asarray(arrays[i][name]).ravel()]
        out[i] = (min(values), max(values))
    return out


def _to_spram(engines: list[EnginePlan], target: Target) -> list[EnginePlan]:
    """``--weights spram``: the weight matrices of a frozen plan that save the most LUTs
    (:meth:`Target.map_huge`) become single-port RAMs (``style="huge"``, the UP5K's SPRAMs),
    loaded through the configuration stream: an SPRAM has no initial values, so they are not
    ROMs, and their configuration ids are 0, 1, ... in engine order. The other parameters stay
    ROMs. A configuration write takes the memory's only port for its cycle (load while idle)."""
    if not target.huge_rams:
        raise CodesignError(
            f"--weights spram needs a chip with single-port RAMs (--target up5k), not --target {target.name}"
        )
    shapes = {
        mem.name: (mem.depth, mem.width, mem.elem_bits)
        for e in engines
        for key, mem in e.memories.items()
        if key == "weights" and mem.rom and mem.depth <= target.huge_shape[0]
    }
    chosen = set(target.map_huge(shapes))
    if not chosen:
        raise CodesignError(
            "--weights spram: no weight matrix fits a single-port RAM (elements of a multiple of "
            f"{target.huge_byte} bits, at most {target.huge_shape[0]} words)"
        )
    next_id = 0
    out = []
    for e in engines:
        mems = dict(e.memories)
        for key, mem in e.memories.items():
            if mem.name in chosen:
                mems[key] = replace(mem, rom=False, config_id=next_id, style="huge")
                next_id += 1
        out.append(replace(e, memories=mems))
    return out


NARROW_MODES = ("off", "auto")
"""``--narrow``: ``off`` (a weight word holds every matrix of every lane), ``auto`` (an engine whose
lanes take their matrices in several passes, ``--share-multipliers``, keeps its weight word as one
slice per pass at consecutive addresses: :func:`_fold_weights`)."""


SHARE_UPDATE_MODES = ("off", "on")
"""``--share-updates``: ``off`` (one update unit per lane), ``on`` (one per layer, serving the
group's lanes in the ``P`` cycles after its sums are ready: ``EnginePlan.update_gap`` idle issue
cycles per group, counted by :func:`codesign.verify.cycles.cycle_floor`)."""


NARROW_DEFAULT_TARGETS = ("up5k",)
"""Targets on which ``--narrow`` defaults to ``auto``: on the UP5K every measured build with shared
multipliers took fewer logic cells, as many or fewer block RAMs and as high or a higher Fmax with
its words folded, at the same cycles (``docs/accelerator-targets.md``, "Folded words"). The
one ECP5 build measured was not better everywhere (more LUT4, yosys' abc9 failing on the folded
build; 2 MHz lower Fmax), so the ECP5 keeps ``off``; so do the generic and ASIC targets (which do
not share multipliers: their Verilog does not change)."""


def resolve_narrow(narrow: str | None, target: str) -> str:
    """``narrow`` as given (:data:`NARROW_MODES`), or for ``None`` the default of ``target``:
    ``auto`` on :data:`NARROW_DEFAULT_TARGETS`, ``off`` elsewhere."""
    if narrow is None:
        return "auto" if target in NARROW_DEFAULT_TARGETS else "off"
    return narrow


FOLDED_KEYS = ("weights", "bias", "acc")
"""Memories ``--narrow auto`` folds: the weights (read per item), the biases and an event-driven
engine's kept accumulators (read on a group's first slot; the sums written after its last): each
holds ``P x n`` elements of which pass ``q`` uses its ``P x u``."""


SLICED_KEYS = ("state", "pool")
"""Memories ``--narrow auto`` folds into ``F`` equal slices of consecutive elements (the last
padded): the state and pooled sums, read over the passes of a group's last slot and written over
as many cycles after C4 (slice ``q`` read ``q`` parts or more after the slot's first part and
written ``q`` cycles after C4: the distance :func:`codesign.hw.issue.drain_cycles` keeps holds)."""


def matrix_passes(e: EnginePlan) -> int:
    """Passes a slot takes through a lane's shared multipliers, ``ceil(matrices / multipliers)``
    (1 without sharing); the digit-serial pieces of each come on top (``EnginePlan.passes``)."""
    return ceil_div(len(e.matrices), e.products)


def _fold_weights(engines: list[EnginePlan], narrow: str) -> list[EnginePlan]:
    """``--narrow auto``: an engine whose lanes take their matrices in ``F = matrix_passes > 1``
    passes keeps its weight word as ``F`` slices at ``F`` consecutive addresses, slice ``q`` the
    ``P x u`` weights of pass ``q`` (``u`` multipliers per lane, the missing matrices of a last
    slice zero). Pass ``q`` of a slot reads slice ``q`` (the lane array only ever took those
    weights of the word), so the fold costs no cycle, and the memory is ``F`` times deeper and
    narrower: deep enough for a UP5K EBR or SPRAM (16 bits wide) to hold more of it, and no
    multiplexer picks a pass's weights out of the word. An event-driven engine's kept accumulators
    fold the same way: pass ``q`` of a group's first slot reads slice ``q`` of its seeds, and slice
    ``q`` of the sums is written ``q`` passes after the group's last, before the next group's pass
    ``q`` changes them (``codesign.hw.front``), so the reads and writes keep their distance and no
    cycle is added. The state and pooled sums (:data:`SLICED_KEYS`) fold into ``F`` slices of
    consecutive elements, read on the ``F`` passes of the group's last slot into the registers
    that hold them for the update stage and written over ``F`` cycles from C4, at no cycle either.
    An engine without sharing keeps its words."""
    if narrow not in NARROW_MODES:
        raise CodesignError(f"--narrow {narrow!r} is not one of {', '.join(NARROW_MODES)}")
    if narrow == "off":
        return engines
    out = []
    for e in engines:
        folds = matrix_passes(e)
        if folds == 1:
            out.append(e)
            continue
        mems = dict(e.memories)
        for key in FOLDED_KEYS:
            if key in mems:
                mem = mems[key]
                mems[key] = replace(mem, depth=mem.depth * folds, elements=e.lanes * e.products, fold=folds)
        for key in SLICED_KEYS:
            if key in mems and mems[key].elements >= folds:
                mem = mems[key]
                mems[key] = replace(
                    mem, depth=mem.depth * folds, elements=ceil_div(mem.elements, folds), fold=folds
                )
        out.append(replace(e, memories=mems))
    return out


MERGE_MODES = ("off", "auto")
"""``--merge``: ``off`` (a physical memory per logical memory), ``auto`` (the memories an engine
reads at one address in one cycle share one physical word: :func:`_merge_memories`)."""


MERGED_KEYS: dict[str, tuple[str, ...]] = {"held": ("params", "state", "pool"), "seeds": ("bias", "acc")}
"""Memories ``--merge auto`` may put side by side in one word, by physical memory (``<engine>_held``,
``<engine>_seeds``). ``held``: read on a group's last slot in C2a at the group's address
(``codesign.hw.front.MacFront._read_for_update``; folded, slice ``q`` on pass ``q``); the state
and pooled sums are written together in C4 (folded, slice ``q`` ``q`` cycles later), the
parameters only by configuration beats (loaded while the accelerator is idle) or are initial
values. ``seeds``: the biases or an event-driven engine's kept sums, read on a group's first slot
in C2 at the group's address (``MacFront._seeds``: one or the other, the same address); the kept
sums are written after the group's last slot, the biases only by configuration beats."""


def _merge_memories(engines: list[EnginePlan], merge: str, target: Target) -> list[EnginePlan]:
    """``--merge auto``: each group of :data:`MERGED_KEYS` of an engine in one physical memory of their
    summed width, each at its bit offset (``MemoryPlan.shared``, ``offset``): one read port and
    one write port with enables per slice instead of two or three memories. They are read in the
    same cycle at the same address, so every read keeps its slot and no cycle changes.

    Which join: the writable ones (state, pooled sums, loadable parameters), and a frozen build's
    parameter ROM only where it rides along for free (the merged word takes no more block RAMs
    with it than without: it becomes initial values of the merged RAM instead of LUTs). On a
    chip with block RAMs the merge is made only where it takes fewer of them than the parts apart
    (whether they then go to block RAM or LUT RAM): the d = 256 CMRU's 8-bit parameters and 16-bit
    state words, 256 deep, are one 24-bit word of one DP16KD instead of two, while on the UP5K
    (EBRs at most 16 bits wide) wide words gain nothing. A merge that saves none is not made: at
    P = 8 the same CMRU's 64- and 128-bit words, 32 deep, take the same LUT RAM either way, and
    the merged build met yosys' abc9 assertion (``rtlil.cc:3091``; 3,451 LUT4 from abc's fallback
    against 3,290). Off chips (generic, asic) every writable part merges. Parts folded alike (``--narrow``) merge slice by slice; single-port (``huge``)
    memories keep their own."""
    if merge not in MERGE_MODES:
        raise CodesignError(f"--merge {merge!r} is not one of {', '.join(MERGE_MODES)}")
    if merge == "off":
        return engines

    def blocks(parts: list[MemoryPlan]) -> int:
        return target.blocks_for(parts[0].depth, sum(p.width for p in parts)) if target.maps else 0

    out = []
    for e in engines:
        mems = dict(e.memories)
        for physical, group in MERGED_KEYS.items():
            # the parts folded alike (a folded state and pooled sums without the unfolded parameters)
            shapes = [(mems[k].fold, mems[k].depth) for k in group if k in mems and mems[k].style != "huge"]
            if not shapes:
                continue
            common = max(shapes, key=shapes.count)
            keys = [
                k
                for k in group
                if k in mems and mems[k].style != "huge" and (mems[k].fold, mems[k].depth) == common
            ]
            if len(keys) < 2:
                continue
            chosen = [k for k in keys if not mems[k].rom]
            for k in keys:  # a ROM joins where the merged word takes no more block RAMs with it
                if mems[k].rom and chosen and target.maps:
                    with_rom = [mems[c] for c in keys if c in chosen or c == k]
                    if blocks(with_rom) <= blocks([mems[c] for c in chosen]):
                        chosen.append(k)
            chosen = [k for k in keys if k in chosen]  # in MERGED_KEYS order
            apart = sum(blocks([mems[k]]) for k in chosen)
            if len(chosen) < 2 or (target.maps and blocks([mems[k] for k in chosen]) >= apart):
                continue
            offset = 0
            for key in chosen:
                mems[key] = replace(mems[key], shared=f"{e.name}_{physical}", offset=offset)
                offset += mems[key].width
        out.append(replace(e, memories=mems))
    return out


COLLISION_FREE = ("items", "queue", "accumulators", "state", "pooled")
"""Kinds of memory whose reads never meet a write of the same word in one cycle:

* ``items``: the receiver writes the bank that is not full, the scheduler reads the full one
  (:class:`codesign.hw.issue.IssueStage`);
* ``queue``: a :class:`codesign.hw.queue.CreditFIFO` writes at ``produce`` and reads at
  ``consume``, equal only when its memory is empty (no read) or full (no credit, no write); of
  two words or more: a one-word memory is read the cycle after its first write, when the
  second entry may be written to the same word (the entry behind the output register);
* ``accumulators``, ``state``, ``pooled``: a group's word is read on its slots and written after
  its last (C3, C4 and the lanes' turns), each step's reads behind the step before's writes
  (:func:`codesign.hw.issue.drain_cycles`), other groups at other words; a state read one lane
  per turn (:func:`codesign.hw.front.lane_reads`) is laid out so that a lane's read never
  falls on the word another lane is written to in that cycle.

The DCLS front end's memories of :data:`DCLS_COLLISION_FREE` are among them too."""

DCLS_COLLISION_FREE = ("dcls_queue", "dcls_zbuf", "dcls_listed", "dcls_lists")
"""The DCLS front end's memories whose reads never meet a write of the same word
(:class:`codesign.hw.dcls.DelayFrontEnd`): its output queue (a ``CreditFIFO``); the banks, read
by Z and cleared by O a cycle later, while R (which writes the next step's contributions and reads
the flags) waits out O's cycles, the entries of a slot's list distinct channels and R's first
write after Z's last read; the listed flags, read by R and set by N for different channels of a
step (an index comes once per step) and cleared by O; the lists, appended by N while items are
received and read by L while a step is sent and by the sweep (N idle in both). A slot-count
memory (:data:`DCLS_COUNT_REGISTERS`) keeps its transparent reads: R reads the count N is
appending to."""


def _mark_collision_free(engines: list[EnginePlan], target: Target) -> list[EnginePlan]:
    """On a target whose block RAM leaves a read-during-write undefined
    (:attr:`Target.undefined_collisions`), mark the memories of :data:`COLLISION_FREE` kinds
    (not those in a merged word, whose parts are written in other patterns)."""
    if not target.undefined_collisions:
        return engines
    return [
        replace(
            e,
            memories={
                k: replace(mem, no_collisions=True) if _collision_free(k, mem) else mem
                for k, mem in e.memories.items()
            },
        )
        for e in engines
    ]


def _collision_free(key: str, mem: MemoryPlan) -> bool:
    """Whether engine memory ``key`` is one of :data:`COLLISION_FREE` (the DCLS front end's: of
    :data:`DCLS_COLLISION_FREE`), outside a merged word and, for a queue, of two words or more."""
    if mem.shared is not None or (mem.kind == "queue" and mem.depth < 2):
        return False
    if key.startswith("dcls_"):
        return key in DCLS_COLLISION_FREE
    if key.startswith("stride_"):  # read while the step before's last sum is written (transparent)
        return False
    return mem.kind in COLLISION_FREE


def _map_memories(engines: list[EnginePlan], target: Target) -> list[EnginePlan]:
    """Block RAM or logic for every memory of the accelerator (:meth:`Target.map_memories`);
    a memory already in a single-port RAM (:func:`_to_spram`) keeps it. Memories merged into one
    physical word (:func:`_merge_memories`) are mapped as that one memory (a RAM, not a ROM)."""
    if not target.maps:
        return engines
    shapes: dict[str, tuple[int, int]] = {}
    roms: set[str] = set()
    asynchronous: set[str] = set()
    for e in engines:
        for mem in e.memories.values():
            if mem.style in ("huge", "registers"):
                continue
            name = mem.shared or mem.name
            depth, width = shapes.get(name, (mem.depth, 0))
            shapes[name] = (depth, width + mem.width)
            if mem.rom and mem.shared is None:
                roms.add(mem.name)
            if mem.asynchronous:
                asynchronous.add(name)
    banks = {mem.name: mem.banks for e in engines for mem in e.memories.values()}
    style = target.map_memories(shapes, roms=roms, banks=banks, asynchronous=asynchronous)
    return [
        replace(
            e,
            memories={
                k: replace(mem, style=style.get(mem.shared or mem.name, mem.style))
                for k, mem in e.memories.items()
            },
        )
        for e in engines
    ]


def _queue_depths(engines: list[EnginePlan], target: Target) -> list[EnginePlan]:
    """On a chip or an ASIC (not ``generic``: the committed RTL), a queue written only in a
    sequence's last step (a last layer's final vector, a once-per-sequence readout's results)
    has :data:`ONCE_QUEUE_DEPTH` entries instead of :data:`QUEUE_DEPTH`."""
    if target.name == "generic":
        return engines
    once = [e.emit == "final" or (e.kind == "readout" and engines[-2].emit == "final") for e in engines]
    return [replace(e, queue_depth=ONCE_QUEUE_DEPTH) if o else e for e, o in zip(engines, once, strict=True)]


def _readout_lanes(manifest: Manifest, lanes: int, target: Target) -> int:
    """``min(P, C)``; on a chip or an ASIC, a once-per-sequence readout takes one lane.

    It runs once per sequence, overlapped with the next (``ceil(C / lanes) * nnz`` cycles against
    the layers' ``steps x groups x slots``), so its lanes buy almost nothing, while each costs a
    multiplier (hard, or shift-and-add in LUTs) and widens its bias, item and result words: at
    d = 16, P = 8 on the UP5K its eight lanes took 3,465 bits of result queue in logic. A per-step
    readout keeps ``min(P, C)`` lanes, with wide weights at most as many as the chip's hard
    multipliers (its products are the widest, so :func:`_assign_multipliers` serves them first)."""
    r = manifest.readout
    ro_lanes = min(lanes, r.classes)
    if not r.per_step and target.one_lane_readout:
        return 1
    if not target.maps:
        return ro_lanes
    if not target.multipliers or r.weight_bits <= target.lut_multiply_max_weight_bits:
        return ro_lanes
    return max(1, min(ro_lanes, target.multipliers))


SHARE_MODES = ("off", "on", "auto")
"""``--share-multipliers``: ``off`` (one multiplier per lane and matrix), ``on`` (one per lane,
shared over the matrices in successive cycles), ``auto`` (the target shares where its hard
multipliers run out), or a number ``N`` (``N`` multipliers per lane); any of them may end in
``:K`` (``auto:4``): an engine whose weight products are all LUT multipliers takes ``K`` cycles
per product, multiplying by a part of the weight's radix-4 Booth digits in each
(:func:`serial_cycles`)."""

SERIAL_CYCLES = (1, 2, 4)
"""Cycles per LUT weight product ``--share-multipliers X:K`` allows (an 8-bit weight has 4 digits)."""


def _split_share(share: str | int) -> tuple[str, int]:
    text = str(share).strip().lower()
    base, sep, cycles = text.partition(":")
    if not sep:
        return text, 1
    if not cycles.isdigit() or int(cycles) not in SERIAL_CYCLES:
        raise CodesignError(
            f"--share-multipliers {share!r}: the cycles per LUT product after ':' must be one of "
            f"{', '.join(map(str, SERIAL_CYCLES))}"
        )
    return base, int(cycles)


def serial_cycles(share: str | int) -> int:
    """``K`` of ``--share-multipliers X:K`` (1 without ``:K``): cycles per LUT weight product."""
    return _split_share(share)[1]


def parse_share(share: str | int) -> tuple[str, int | None]:
    """``--share-multipliers`` -> ``(normalised name, multipliers per lane)``: ``None`` off,
    ``0`` auto (decided per engine by :func:`_assign_multipliers`), ``N`` at most ``N`` per lane.
    The name keeps a ``:K`` suffix (:func:`serial_cycles`) when ``K > 1``."""
    text, cycles = _split_share(share)
    suffix = f":{cycles}" if cycles > 1 else ""
    if text == "off":
        return "off" + suffix, None
    if text == "auto":
        return "auto" + suffix, 0
    if text == "on":
        return "1" + suffix, 1
    if text.isdigit() and int(text) >= 1:
        return str(int(text)) + suffix, int(text)
    raise CodesignError(
        f"--share-multipliers {share!r} is not one of off, on, auto or a positive number of "
        "multipliers per lane (optionally followed by :K cycles per LUT product, K in 1, 2, 4)"
    )


def _digit_passes(weight_bits: int, cycles: int) -> int:
    """The largest number of passes at most ``cycles`` that splits the weight's radix-4 Booth
    digits (``ceil(bits / 2)``) evenly: 1, 2 or 4 for 8-bit weights, 1 or 3 for 6-bit ones."""
    digits = ceil_div(weight_bits, 2)
    return max(k for k in range(1, min(cycles, digits) + 1) if digits % k == 0)


@dataclass
class _Allocation:
    hard: dict[str, int]  # engine -> hard weight products of its lane array
    taps: dict[str, int]  # engine -> DCLS taps on hard multipliers
    update: set[str]  # engines whose update units use hard multipliers


def _allocate(engines: list[EnginePlan], target: Target, per_lane: dict[str, int]) -> _Allocation:
    """Hand the target's hard multipliers to the products that would cost the most LUTs.

    A shift-and-add product costs about ``weight bits x value bits`` LUTs and a product takes
    :meth:`Target.multiplies_needed` hard multipliers, so products are served by LUTs saved per
    hard multiplier: a once-per-sequence readout's 8-bit weight x 24-bit logit input and minGRU's
    update ``z * (u - h)`` before a first layer's 8-bit weight x 8-bit input. Weights of at most
    ``target.lut_multiply_max_weight_bits`` bits always shift-and-add."""
    # (LUT cost per hard multiplier it saves, tie-break, engine, what, products, hard multipliers)
    blocks: list[tuple[float, int, str, str, int, int]] = []

    def block(order: int, e: EnginePlan, what: str, a_bits: int, b_bits: int, products: int) -> None:
        hard = target.multiplies_needed(a_bits, b_bits) * products
        blocks.append((a_bits * b_bits * products / hard, order, e.name, what, products, hard))

    for order, e in enumerate(engines):
        if e.weight_bits > target.lut_multiply_max_weight_bits:
            for _ in range(e.lanes * per_lane[e.name]):
                block(order, e, "weights", e.weight_bits, e.item_bits, 1)
        if e.dcls is not None and e.dcls.weight_bits > target.lut_multiply_max_weight_bits:
            for _ in range(e.dcls.taps):
                block(order, e, "dcls", e.dcls.weight_bits, e.dcls.item_bits, 1)
        update_products = CELLS[e.kind].update_products if e.kind in CELLS else 0
        if update_products:
            units = 1 if e.shared_update else e.lanes  # one update unit per layer (--share-updates)
            block(order, e, "update", e.gate_bits + 2, e.state_bits + 1, units * update_products)
    left = target.multipliers
    out = _Allocation({e.name: 0 for e in engines}, {e.name: 0 for e in engines}, set())
    for _cost, _order, name, what, products, multipliers in sorted(blocks, key=lambda b: (-b[0], b[1])):
        if multipliers > left:
            continue
        left -= multipliers
        if what == "weights":
            out.hard[name] += products
        elif what == "dcls":
            out.taps[name] += products
        else:
            out.update.add(name)
    return out


def _assign_multipliers(
    engines: list[EnginePlan], target: Target, share: int | None, cycles: int = 1
) -> list[EnginePlan]:
    """Every ``*`` of the datapath on a hard multiplier or a shift-and-add, and the lanes' sharing.

    Synthesis maps every ``*`` to a hard multiplier, past the chip's count if the plan lets it
    (d = 32 minGRU at P = 4 on the UP5K asked 12 of 8 SB_MAC16; the d = 12 DCLS network 16 of 8), so
    the plan counts the lanes' weight products, minGRU's update (one per lane) and the DCLS taps
    (``K`` per front end) and hands the hard multipliers out by :func:`_allocate`. An engine whose
    weight products get some of them uses them for its first products (``multiplier = "mixed"``,
    ``hard_products``), an update unit for all its lanes or none (``update_multiplier``), a DCLS
    front end tap by tap (``DCLSPlan.hard_taps``).

    ``share`` (:func:`parse_share`): ``None`` one multiplier per lane and matrix; ``N`` at most
    ``N`` per lane, serving the matrices in ``ceil(matrices / N)`` passes per slot; ``0`` (auto) one
    per matrix unless that leaves a lane's worth of weight products (``P``) or more to
    shift-and-add, then as many per lane as the hard multipliers it got give (at least one): d = 16,
    P = 8 on the UP5K shares, P = 4 does not. Narrow weights (shift-and-add anyway) never share by
    auto; on the generic target a fixed ``N`` still shares, where the tool maps the multiplies.
    ``cycles`` (``X:K``): an engine whose weight products are all LUT multipliers takes up to
    ``K`` passes per product (:func:`_digit_passes`), each a part of the weight's Booth digits;
    on a target without hard multipliers (generic, asic) every engine does."""
    per_lane = {e.name: len(e.matrices) if not share else min(share, len(e.matrices)) for e in engines}

    def lane_multipliers(e: EnginePlan) -> int:  # 0: one per matrix, no sharing
        return per_lane[e.name] if per_lane[e.name] < len(e.matrices) else 0

    if not target.multipliers:  # generic, asic: the tool maps a one-cycle product; X:K makes them serial
        return [
            replace(
                e, lane_multipliers=lane_multipliers(e), digit_passes=_digit_passes(e.weight_bits, cycles)
            )
            if cycles > 1
            else replace(e, lane_multipliers=lane_multipliers(e))
            for e in engines
        ]
    allocation = _allocate(engines, target, per_lane)
    if share == 0:
        changed = False
        for e in engines:
            n_mat = len(e.matrices)
            wide = e.weight_bits > target.lut_multiply_max_weight_bits
            if wide and e.lanes * n_mat - allocation.hard[e.name] >= e.lanes:
                per_lane[e.name] = max(1, min(n_mat, allocation.hard[e.name] // e.lanes))
                changed = changed or per_lane[e.name] < n_mat
        if changed:
            allocation = _allocate(engines, target, per_lane)
    planned = []
    for e in engines:
        products = e.lanes * per_lane[e.name]
        n = allocation.hard[e.name]
        multiplier = "hard" if n == products else "lut" if n == 0 else "mixed"
        needs_update = e.kind in CELLS and CELLS[e.kind].update_products > 0
        planned.append(
            replace(
                e,
                multiplier=multiplier,
                hard_products=n if multiplier == "mixed" else 0,
                lane_multipliers=lane_multipliers(e),
                digit_passes=_digit_passes(e.weight_bits, cycles) if multiplier == "lut" else 1,
                update_multiplier="lut" if needs_update and e.name not in allocation.update else "hard",
                dcls=e.dcls and replace(e.dcls, hard_taps=allocation.taps[e.name]),
            )
        )
    return planned


def _check_options(share_updates: str, counters: str, frozen: bool, spram: bool, shift_ranges: bool) -> None:
    """One clear error for an option :func:`plan_accelerator` does not know or cannot combine."""
    if share_updates not in SHARE_UPDATE_MODES:
        raise CodesignError(
            f"--share-updates {share_updates!r} is not one of {', '.join(SHARE_UPDATE_MODES)}"
        )
    if counters not in COUNTER_SETS:
        raise CodesignError(f"--counters {counters!r} is not one of {', '.join(COUNTER_SETS)}")
    if shift_ranges and not frozen:
        raise CodesignError(
            "shift ranges narrow only a frozen build (--weights frozen): other builds load any shift"
        )
    if spram and not frozen:
        raise CodesignError("spram weights are a frozen build's option (--weights spram)")


def plan_accelerator(
    manifest: Manifest,
    lanes: int,
    *,
    counter_bits: int = 32,
    faults: FaultSet | frozenset[str] | set[str] = frozenset(),
    target: str = "generic",
    counters: str = "all",
    frozen: bool = False,
    spram: bool = False,
    share: str | int = "off",
    shift_ranges: Mapping[int, tuple[int, int]] | None = None,
    narrow: str | None = None,
    share_updates: str = "off",
    merge: str = "off",
) -> AcceleratorPlan:
    """Derive the hardware plan; a :class:`CodesignError` names any field beyond a hardware limit.

    ``target`` (:data:`codesign.hw.targets.TARGETS`) decides where memories and multiplies go;
    ``counters`` (:data:`COUNTER_SETS`) which observability counters the build carries;
    ``frozen`` makes the engines' weight, bias and parameter memories ROMs (``--weights frozen``):
    a small ROM costs a few LUTs per output bit where a writable memory in logic costs a
    flip-flop per stored bit; ``share`` (:data:`SHARE_MODES`) lets a lane's multipliers serve its
    matrices in successive cycles (``EnginePlan.passes`` cycles per slot); ``shift_ranges``
    (frozen builds only, :func:`frozen_shift_ranges`) ``{layer index: (lowest, highest)}`` of the
    per-neuron shifts the ROMs hold, which bound the update units' shifters instead of the spec's
    ``shift_bounds``. ``spram`` (with ``frozen``, ``--weights spram``) moves the largest weight
    matrices to the chip's single-port RAMs, loaded through ``config`` (:func:`_to_spram`).
    ``narrow`` (:data:`NARROW_MODES`) folds the weight word of an engine with shared multipliers
    into one slice per pass (:func:`_fold_weights`), before the memories are mapped; ``None``
    takes the target's default (:func:`resolve_narrow`: ``auto`` on the UP5K). ``merge``
    (:data:`MERGE_MODES`) puts the memories read at one address in one cycle into one physical
    word (:func:`_merge_memories`), before the memories are mapped.
    """
    narrow = resolve_narrow(narrow, target)
    _check_options(share_updates, counters, frozen, spram, bool(shift_ranges))
    fault_set = faults if isinstance(faults, FaultSet) else FaultSet(faults)
    chip = get_target(target)
    share_name, share_per_lane = parse_share(share)
    cycles = serial_cycles(share)
    _check_lanes(manifest, lanes)
    layers = [
        replace(e, update_latency=max(e.update_latency, chip.update_stages_min))
        for e in (_plan_layer(manifest, i, lanes) for i in range(len(manifest.layers)))
    ]
    next_id = [0]
    engines = [
        replace(e, memories=_engine_memories(e, next_id))
        for e in _queue_depths(
            [*layers, _plan_readout(manifest, layers[-1], _readout_lanes(manifest, lanes, chip))], chip
        )
    ]
    if share_updates == "on":  # the readout has no update unit
        engines = [replace(e, shared_update=e.lanes > 1) for e in engines[:-1]] + [engines[-1]]
    if frozen:
        engines = [_freeze(e, (shift_ranges or {}).get(e.index)) for e in engines]
    # the multipliers first (they decide the passes a fold follows), then the memories' shapes,
    # then where each goes
    engines = _fold_weights(_assign_multipliers(engines, chip, share_per_lane, cycles), narrow)
    if spram:
        engines = _to_spram(engines, chip)
    engines = _mark_collision_free(_map_memories(_merge_memories(engines, merge, chip), chip), chip)
    for e in engines:
        if e.acc_bits > MAX_DATAPATH_BITS:  # pragma: no cover - the manifest already refuses it
            raise CodesignError(f"{e.name}: accumulators of {e.acc_bits} bits exceed {MAX_DATAPATH_BITS}")
    declared = _plan_counters(engines)
    kept = tuple(name for name, owner in declared.items() if _keep_counter(name, owner, counters))
    r = manifest.readout
    return AcceleratorPlan(
        manifest=manifest,
        lanes=lanes,
        input_size=manifest.input.size,
        input_bits=manifest.input.bits,
        layers=tuple(engines[:-1]),
        readout=engines[-1],
        classes=r.classes,
        logit_bits=engines[-1].acc_bits,
        pooling=r.pooling,
        per_step=r.per_step,
        memories=tuple(mem for e in engines for mem in e.memories.values()),
        counters=kept,
        counter_owners=declared,
        counter_bits=counter_bits,
        faults=fault_set,
        target=target,
        counter_set=counters,
        frozen=frozen,
        spram=spram,
        share=share_name,
        narrow=narrow,
        share_updates=share_updates,
        merge=merge,
    )
