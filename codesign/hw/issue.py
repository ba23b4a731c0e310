"""The issue stage of an engine: collect a step's items, then walk them once per neuron group.

Items arrive on ``items`` (non-zero inputs of layer 0, DCLS outputs, change events of the previous
layer, or the pooled vector for the readout). The stage stores a step's non-zero items in one of
two banks of the item memory (depth ``2 x m``, every index at most once per step) while it walks
the other bank, so the producer fills step t+1 while this engine computes step t.

Walking a step: for every group ``g`` of ``P`` neurons, one *slot* per stored item (one slot with
value 0 when the step has none: the neurons still update from their biases). A group may start
only while ``credit`` is high (room downstream); within a group, slots issue back to back. After
a step's last slot the stage waits :func:`drain_cycles` so that the update stage has written the
step's states and accumulators before the next step reads them.

``slot`` is registered and aligned with the item memory's read data: one cycle after the
decision, it carries the item and where it belongs. With shared multipliers
(``EnginePlan.passes > 1``) every slot issues once per part on successive cycles (``slot.part``);
the item is read on the first part and its read data holds for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.bundle.cells import CELLS
from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigSignature, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.signature import ItemLayout

__all__ = ["DRAIN", "IssueStage", "SlotLayout", "drain_cycles", "value_held"]

DRAIN = max(3, 1 + max(kind.update_stages for kind in CELLS.values()))
"""The longest pause between steps: one group, with kept accumulators or the deepest update unit.

The next step's first slot of a group reads the kept accumulators (C1) that the previous step's
last slot of that group writes in C3, and reads the state and pooled sum (C2a) written in C4 (one
cycle later behind a two-stage update unit, C3 and C3b, two behind C3, C3b and C3c). From one step's last issue decision to
the next step's first, the stage spends ``drain + 2`` cycles; between the two slots of one group
lie ``groups - 1`` other slots besides. The reads see the writes (the memories' read ports are not
transparent) when ``groups + drain + 1 >= 5`` for the kept accumulators and ``>= 4 + (stages - 1)``
for the state: see :func:`drain_cycles`."""


def value_held(e: EnginePlan) -> bool:
    """Whether engine ``e``'s lane array takes a slot's value in C2 from the slot register a stage
    behind (C1), instead of from the C2 slot register (a second copy of the value, flip-flops no
    logic feeds: 42 of the d = 12 DCLS network's at P = 2): with shared multipliers
    (``passes`` of 2 or more) a slot's parts issue on successive cycles, so when its first part
    reaches C2 its second is at C1 with the same value; the lane array keeps the value over the
    parts. The selective walk keeps the C2 copy."""
    return e.passes > 1 and not e.period


def drain_cycles(e: EnginePlan) -> int:
    """Idle cycles the issue stage of engine ``e`` waits between steps (0 for 4 or more groups).

    A selective engine may walk a single group at a step (the others closed), so it pauses as if
    it had one group. With shared multipliers a slot takes ``passes`` cycles, so each of the
    other ``groups - 1`` groups covers that many: the last part of a group's last slot and the
    first part of its next first slot lie ``1 + (groups - 1) x passes`` issue cycles apart at
    least (the reads come on the first part, the writes after the last). The state is read on the
    last part, so this is conservative for it: a folded state or pooled sum (``--narrow``), whose
    slice ``q`` is read on pass ``q`` of the last slot (``q`` parts or more after the first part)
    and written ``q`` cycles after C4, keeps the same distance. One update unit shared by the
    lanes (``EnginePlan.update_gap``) writes the state ``gap`` cycles later (and its pooled sums
    ``EnginePlan.shared_stages`` later still), and each group is followed by ``gap`` idle issue
    cycles."""
    gap = e.update_gap
    # C4 writes the state (and pooled sum), C2a reads it; a shared unit's stages put C4 later
    state = 3 + e.update_latency - 1 + gap + e.shared_stages
    accumulators = 4 if "acc" in e.memories else 0  # C3 writes the kept sums, C1 reads them
    covered = 1 if e.period else 1 + (e.groups - 1) * (e.passes + gap)
    return max(0, max(state, accumulators) - covered)


class SlotLayout(data.StructLayout):
    def __init__(self, e: EnginePlan) -> None:
        selective = {"open": unsigned(e.lanes)} if e.period else {}  # lanes that update (su_open)
        # which of a slot's passes through a lane's shared multipliers (codesign.hw.lanes)
        # and whether the slot is its group's last, on every part (``last`` marks only the last part)
        shared = {"part": unsigned(index_bits(e.passes)), "final": unsigned(1)} if e.passes > 1 else {}
        super().__init__(
            selective
            | shared
            | {
                "valid": unsigned(1),
                "group": unsigned(index_bits(e.groups)),
                "base": unsigned(index_bits(e.groups * e.inputs + 1)),  # group * m
                "first": unsigned(1),  # first slot of its group
                "last": unsigned(1),  # last slot of its group
                "step_last": unsigned(1),  # the group is the step's last
                "seq_first": unsigned(1),  # the step is its sequence's first
                "seq_end": unsigned(1),  # the step is its sequence's last
                "empty": unsigned(1),  # a biases-only slot (the step has no item)
                "index": unsigned(index_bits(e.inputs)),
                "value": signed(e.item_bits),
            }
        )


_META_FIELDS = ("valid", "group", "base", "first", "last", "step_last", "seq_first", "seq_end", "empty")
"""Slot fields decided by the scheduler (``index`` and ``value`` come from the item memory; a
selective engine's ``open`` from its schedule)."""


@dataclass
class _Banks:
    """What the receiver tells the scheduler about the two banks of the item memory."""

    full: Signal  # bank b holds a complete step
    counts: Array  # items stored in bank b
    first_of: Signal  # bank b's step is its sequence's first
    end_of: Signal  # bank b's step is its sequence's last


class IssueStage(wiring.Component):
    """Double-banked item store and group/slot scheduler of one engine."""

    def __init__(
        self,
        plan: AcceleratorPlan,
        e: EnginePlan,
        *,
        lose_stalled: bool = False,
        images: dict | None = None,
    ) -> None:
        self.engine = e
        self.lose_stalled = lose_stalled  # fault: accept (and drop) beats while both banks are full
        self.ignore_schedule = plan.faults.active("selective_ignored", e.index)
        self.images = images or {}
        self.counters = CounterBank(plan, f"{e.name}.issue")
        members = {
            "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
            "slot": Out(SlotLayout(e)),
            "credit": In(1),
            "starting": Out(1),  # a group starts this cycle (takes one credit)
        }
        if e.period:  # the selective-update tables are loaded like the weights
            members["config"] = In(ConfigSignature(plan))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        cap = e.item_capacity
        m.submodules.items = mem = Memory(  # the plan's mapping (it was left to the tool before)
            shape=unsigned(index_bits(e.inputs) + e.item_bits),
            depth=2 * cap,
            init=[],
            attrs=e.memories["items"].attrs,
        )
        wr = mem.write_port()
        rd = mem.read_port()
        m.d.comb += rd.en.eq(0)
        count_memory(m, self.counters, e.memories["items"].name, [rd], [wr])
        banks = self._receiver(m, wr)
        if e.period:
            self._selective_scheduler(m, rd, banks)
        else:
            self._scheduler(m, rd, banks)
        return m

    # ------------------------------------------------------------ parts
    def _parts(self, m: Module) -> tuple:
        """The part counter of shared multipliers: ``(part, first part, last part)``. A slot issues
        once per part on successive cycles (``EnginePlan.passes``); the walk moves on after the
        last. Without sharing every slot is its own first and last part."""
        passes = self.engine.passes
        if passes == 1:
            return None, Const(1), Const(1)
        part = Signal(range(passes), name="part")
        first_part, last_part = Signal(name="first_part"), Signal(name="last_part")
        m.d.comb += [first_part.eq(part == 0), last_part.eq(part == passes - 1)]
        return part, first_part, last_part

    def _next_part(self, m: Module, meta, part, last_part, last_slot) -> None:
        """Record an issued slot's part (and whether it is its group's last slot) and step the
        counter (back to 0 after the last)."""
        if part is None:
            return
        m.d.sync += [meta.part.eq(part), meta.final.eq(last_slot), part.eq(Mux(last_part, 0, part + 1))]

    def _meta_fields(self) -> tuple[str, ...]:
        return (*_META_FIELDS, "part", "final") if self.engine.passes > 1 else _META_FIELDS

    # ------------------------------------------------------------ receiver
    def _receiver(self, m: Module, wr) -> _Banks:
        """Store a step's non-zero items in the write bank; its marker closes the bank."""
        e = self.engine
        cap, ib = e.item_capacity, index_bits(e.inputs)
        wbank = Signal()
        wcount = Signal(range(cap + 1))
        banks = _Banks(
            full=Signal(2),
            counts=Array([Signal(range(cap + 1), name=f"bank{b}_count") for b in range(2)]),
            first_of=Signal(2),
            end_of=Signal(2),
        )
        next_first = Signal(init=1)
        beat = self.items.payload
        free = ~banks.full.bit_select(wbank, 1)
        m.d.comb += self.items.ready.eq(free | self.lose_stalled)
        nonzero = Signal()
        stored = Signal()
        m.d.comb += [nonzero.eq(beat.value != 0), stored.eq(nonzero & (wcount < cap))]
        m.d.comb += [
            wr.addr.eq(Mux(wbank, cap, 0) + wcount),
            wr.data.eq(beat.index | (beat.value.as_unsigned() << ib)),
        ]
        with m.If(self.items.valid & free):
            with m.If(stored):
                m.d.comb += wr.en.eq(1)
                m.d.sync += wcount.eq(wcount + 1)
            with m.If(nonzero & ~stored):
                self.counters.count(m, f"{e.name}_item_overflows", 1)
            with m.If(beat.step_end):
                m.d.sync += [
                    banks.full.bit_select(wbank, 1).eq(1),
                    banks.counts[wbank].eq(wcount + stored),
                    banks.first_of.bit_select(wbank, 1).eq(next_first),
                    banks.end_of.bit_select(wbank, 1).eq(beat.seq_end),
                    next_first.eq(beat.seq_end),
                    wbank.eq(~wbank),
                    wcount.eq(0),
                ]
        return banks

    def _needs_credit(self, seq_end):
        """Whether a group of the current step takes a credit of the downstream queue: always,
        but for a last layer that sends its final vector, whose groups write an entry only in
        the sequence's last step (``ONCE_QUEUE_DEPTH`` entries suffice)."""
        return seq_end if self.engine.emit == "final" else Const(1)

    # ------------------------------------------------------------ update gap
    def _update_gap(self, m: Module):
        """High when the stage may issue: ``EnginePlan.update_gap`` cycles after a group's last
        slot have passed (one update unit serving the group's lanes in turn reads the sums, the
        state and the parameters the lane array and the front end hold until the next group's
        slots reach them; ``codesign.hw.layer``). Always high with an update unit per lane."""
        gap = self.engine.update_gap
        if gap == 0:
            self._gap = None
            return Const(1)
        self._gap = Signal(range(gap + 1), name="update_gap")
        with m.If(self._gap != 0):
            m.d.sync += self._gap.eq(self._gap - 1)
        return self._gap == 0

    def _start_gap(self, m: Module) -> None:
        """A group's last slot issues: wait ``update_gap`` cycles before the next slot."""
        if self._gap is not None:
            m.d.sync += self._gap.eq(self.engine.update_gap)

    # ------------------------------------------------------------ scheduler
    def _scheduler(self, m: Module, rd, banks: _Banks) -> None:
        """Walk the read bank once per group (a group starts only with credit), then drain."""
        e = self.engine
        cap, ib = e.item_capacity, index_bits(e.inputs)
        rbank = Signal()
        busy = Signal()
        pause = drain_cycles(e)
        drain = Signal(range(max(DRAIN, pause) + 1))
        group = Signal(range(e.groups))
        base = Signal(range(e.groups * e.inputs + 1))
        slot = Signal(range(cap + 1))
        n_items = Signal(range(cap + 1))
        seq_first = Signal()
        seq_end = Signal()
        last_slot = Signal()
        m.d.comb += last_slot.eq(slot + 1 >= n_items)
        part, first_part, last_part = self._parts(m)
        issue = Signal()
        needs = self._needs_credit(seq_end)
        idle = self._update_gap(m)
        m.d.comb += issue.eq(busy & idle & ((slot != 0) | ~first_part | self.credit | ~needs))
        m.d.comb += self.starting.eq(issue & (slot == 0) & first_part & needs)

        meta = Signal(SlotLayout(e))
        m.d.sync += meta.valid.eq(issue)
        with m.If(~busy):
            with m.If(drain != 0):
                m.d.sync += drain.eq(drain - 1)
            with m.Elif(banks.full.bit_select(rbank, 1)):
                m.d.sync += [
                    busy.eq(1),
                    n_items.eq(banks.counts[rbank]),
                    group.eq(0),
                    base.eq(0),
                    slot.eq(0),
                    seq_first.eq(banks.first_of.bit_select(rbank, 1)),
                    seq_end.eq(banks.end_of.bit_select(rbank, 1)),
                ]
        with m.Else():
            self.counters.count(m, f"{e.name}_busy_cycles", 1)
            with m.If(~issue):
                self.counters.count(m, f"{e.name}_stall_cycles", 1)
        with m.If(issue):
            m.d.comb += [rd.addr.eq(Mux(rbank, cap, 0) + slot), rd.en.eq((n_items != 0) & first_part)]
            m.d.sync += [
                meta.group.eq(group),
                meta.base.eq(base),
                meta.first.eq(slot == 0),
                meta.last.eq(last_slot & last_part),
                meta.step_last.eq(group == e.groups - 1),
                meta.seq_first.eq(seq_first),
                meta.seq_end.eq(seq_end),
                meta.empty.eq(n_items == 0),
            ]
            self._next_part(m, meta, part, last_part, last_slot)
            with m.If(last_part & last_slot):
                self._start_gap(m)
                m.d.sync += [slot.eq(0), group.eq(group + 1), base.eq(base + e.inputs)]
                with m.If(group == e.groups - 1):
                    m.d.sync += [
                        busy.eq(0),
                        banks.full.bit_select(rbank, 1).eq(0),
                        rbank.eq(~rbank),
                        drain.eq(pause),
                    ]
                    self.counters.count(m, f"{e.name}_steps", 1)
            with m.Elif(last_part):
                m.d.sync += slot.eq(slot + 1)

        # the slot leaves aligned with the item memory's read data
        m.d.comb += [getattr(self.slot, f).eq(getattr(meta, f)) for f in self._meta_fields()]
        m.d.comb += [
            self.slot.index.eq(Mux(meta.empty, 0, rd.data[:ib])),
            self.slot.value.eq(Mux(meta.empty, 0, rd.data[ib:].as_signed())),
        ]

    # ------------------------------------------------------------ selective scheduler
    def _selective_scheduler(self, m: Module, rd, banks: _Banks) -> None:
        """Walk only the groups the schedule opens at this step's phase (``codesign.hw.selective``).

        ``su_walk`` lists, per phase, how many groups hold an open lane and which; its read ports
        are asynchronous, so the next group is known in the cycle the current one ends and a
        skipped group costs no cycle. Steps that must visit every group (a sequence's first, an
        event-driven step with items, a final vector, sum pooling) count groups as the dense
        scheduler does, a closed group there costing one biases-only slot (*held*). ``su_open``
        gives the slot its open lanes.
        """
        e = self.engine
        walk_count, walk_next, open_rd = self._su_memories(m)
        cap, ib = e.item_capacity, index_bits(e.inputs)
        period, groups, stride = e.period, e.groups, e.groups + 1
        s = self._su_signals(m, period, groups, stride, cap)
        busy, slot, seq_end = s.busy, s.slot, s.seq_end
        part, first_part, last_part = self._parts(m)
        issue = Signal()
        needs = self._needs_credit(seq_end)
        idle = self._update_gap(m)
        m.d.comb += issue.eq(busy & idle & ((slot != 0) | ~first_part | self.credit | ~needs))
        m.d.comb += self.starting.eq(issue & (slot == 0) & first_part & needs)

        meta, listed = self._su_step_start(m, s, banks, walk_count, walk_next, issue)
        self._su_issue(m, s, rd, banks, open_rd, meta, listed, issue, (part, first_part, last_part))
        self._su_output(m, rd, meta, ib)

    def _su_memories(self, m: Module):
        """The schedule's memories (loadable through ``config``) and their asynchronous read ports:
        ``su_walk``'s count and next-group ports, ``su_open``'s open-lane port."""
        e = self.engine
        mems = {}
        ports = {}
        for key in ("su_walk", "su_open"):
            plan = e.memories[key]
            mems[key] = ArrayMemory(m, key, plan, self.images.get(plan.name))
            wr = mems[key].write_port(granular=True)
            drive_config_write(m, wr, self.config, plan)
            ports[key] = [mems[key].read_port(domain="comb") for _ in range(2 if key == "su_walk" else 1)]
            count_memory(m, self.counters, plan.name, [], [wr])
        walk_count, walk_next = ports["su_walk"]
        (open_rd,) = ports["su_open"]

        return walk_count, walk_next, open_rd

    def _su_signals(self, m: Module, period: int, groups: int, stride: int, cap: int) -> SimpleNamespace:
        """The selective scheduler's registers and the slot's held / last flags, by name."""
        e = self.engine
        pbits = max(1, (period - 1).bit_length())
        rbank = Signal()
        busy = Signal()
        pause = drain_cycles(e)
        drain = Signal(range(max(DRAIN, pause) + 1))
        group = Signal(range(groups))
        # the group's first input index: a product of the group register, not registered beside it
        # (the next group comes from su_walk's asynchronous read, and a multiplier after that read
        # was the ECP5's longest path: 53.6 MHz)
        base = Signal(range(groups * e.inputs + 1))
        slot = Signal(range(cap + 1))
        n_items = Signal(range(cap + 1))
        seq_first = Signal()
        seq_end = Signal()
        phase = Signal(pbits)
        next_phase = Signal(pbits)
        # phase x (G + 1) and phase x G, the rows of su_walk and su_open, kept in registers beside
        # the phases: as products of the phase, yosys shared their multiplier with the one of
        # `listed x inputs` on the ECP5 and closed a loop through su_walk's asynchronous read,
        # which nextpnr refuses ("combinational loops")
        phase_row = Signal(range(period * stride))
        next_row = Signal(range(period * stride))
        phase_open = Signal(range(period * groups))
        next_open = Signal(range(period * groups))
        walk = Signal(range(groups + 1))  # index of the current group in this step's walk
        # su_walk's row of the group after the current one, phase_row + walk + 2, kept in a register
        # beside walk: as a sum before the asynchronous read (a mux tree in LUTs on the UP5K) it
        # was the selective UP5K build's longest path (29.8 MHz against 30)
        walk_row = Signal(range(period * stride + 2))
        n_walk = Signal(range(groups + 1))
        full = Signal()  # this step walks every group
        # a held group (no open lane; not following items in an event-driven layer) costs one
        # biases-only slot: it only writes its state back (codesign.hw.selective.walk)
        opened = Signal(e.lanes)
        held = Signal()
        follows = (n_items != 0) if e.mode == "events" else 0
        last_slot = Signal()
        m.d.comb += [
            held.eq(~opened.any() & ~follows),
            last_slot.eq(held | (slot + 1 >= n_items)),
        ]
        return SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("self", "m", "e")})

    def _su_step_start(self, m: Module, s: SimpleNamespace, banks: _Banks, walk_count, walk_next, issue):
        """A step starts: its phase, rows, whether it walks every group, its count and first group
        from ``su_walk``; the busy and stall counters. Returns the slot's metadata register and
        ``su_walk``'s next listed group."""
        e = self.engine
        groups, pbits, rbank, busy, drain = s.groups, s.pbits, s.rbank, s.busy, s.drain
        group, slot, n_items, seq_first, seq_end, phase = (
            s.group,
            s.slot,
            s.n_items,
            s.seq_first,
            s.seq_end,
            s.phase,
        )
        next_phase, phase_row, next_row, phase_open, next_open, walk = (
            s.next_phase,
            s.phase_row,
            s.next_row,
            s.phase_open,
            s.next_open,
            s.walk,
        )
        n_walk, full, walk_row = s.n_walk, s.full, s.walk_row
        # the step about to start: its phase, whether it walks every group, its first group
        first_of = banks.first_of.bit_select(rbank, 1)
        end_of = banks.end_of.bit_select(rbank, 1)
        start_phase = Signal(pbits)
        start_row = Signal.like(phase_row)
        start_open = Signal.like(phase_open)
        m.d.comb += [
            start_phase.eq(Mux(first_of, 0, next_phase)),
            start_row.eq(Mux(first_of, 0, next_row)),
            start_open.eq(Mux(first_of, 0, next_open)),
        ]
        count = walk_count.data[0].as_unsigned()
        if self.ignore_schedule:  # fault: every step walks every group (and no lane is held)
            full_now = 1
        else:
            full_now = first_of
            if e.pool_bits is not None:
                full_now = 1
            if e.mode == "events":
                full_now = full_now | (banks.counts[rbank] != 0)
            if e.emit == "final":
                full_now = full_now | end_of
        m.d.comb += walk_count.addr.eq(start_row)
        m.d.comb += walk_next.addr.eq(Mux(busy, walk_row, start_row + 1))
        listed = walk_next.data[0].as_unsigned()

        meta = Signal(SlotLayout(e))
        m.d.sync += meta.valid.eq(issue)
        with m.If(~busy):
            with m.If(drain != 0):
                m.d.sync += drain.eq(drain - 1)
            with m.Elif(banks.full.bit_select(rbank, 1)):
                # the step's count (and first group) of su_walk: asynchronous reads, counted here
                self.counters.count(m, f"{e.memories['su_walk'].name}_reads", 1)
                m.d.sync += [
                    busy.eq(1),
                    n_items.eq(banks.counts[rbank]),
                    slot.eq(0),
                    walk.eq(0),
                    walk_row.eq(start_row + 2),
                    phase.eq(start_phase),
                    phase_row.eq(start_row),
                    phase_open.eq(start_open),
                    full.eq(full_now),
                    seq_first.eq(first_of),
                    seq_end.eq(end_of),
                ]
                with m.If(full_now):
                    m.d.sync += [n_walk.eq(groups), group.eq(0)]
                with m.Elif(count == 0):  # nothing open: the last group carries the step's end
                    m.d.sync += [n_walk.eq(1), group.eq(groups - 1)]
                with m.Else():
                    m.d.sync += [n_walk.eq(count), group.eq(listed)]
        with m.Else():
            self.counters.count(m, f"{e.name}_busy_cycles", 1)
            with m.If(~issue):
                self.counters.count(m, f"{e.name}_stall_cycles", 1)
        return meta, listed

    def _su_issue(self, m: Module, s, rd, banks: _Banks, open_rd, meta, listed, issue, parts) -> None:
        """Each issue cycle: the item read, the slot's metadata, the next slot, group or step."""
        e = self.engine
        part, first_part, last_part = parts
        cap, period, groups, stride, rbank, busy = s.cap, s.period, s.groups, s.stride, s.rbank, s.busy
        pause, drain, group, base, slot, n_items = s.pause, s.drain, s.group, s.base, s.slot, s.n_items
        seq_first, seq_end, phase, next_phase, phase_row, next_row = (
            s.seq_first,
            s.seq_end,
            s.phase,
            s.next_phase,
            s.phase_row,
            s.next_row,
        )
        phase_open, next_open, walk, n_walk, full, opened = (
            s.phase_open,
            s.next_open,
            s.walk,
            s.n_walk,
            s.full,
            s.opened,
        )
        held, last_slot = s.held, s.last_slot
        m.d.comb += base.eq(group * e.inputs)
        m.d.comb += open_rd.addr.eq(phase_open + group)
        for lane in range(e.lanes):
            m.d.comb += opened[lane].eq(1 if self.ignore_schedule else open_rd.data[lane] != 0)
        step_last = Signal()
        m.d.comb += step_last.eq(walk + 1 == n_walk)
        with m.If(
            issue & (slot == 0) & first_part
        ):  # a group starts (its first part): its su_open word, the next group's su_walk entry
            self.counters.count(m, f"{e.memories['su_open'].name}_reads", 1)
            self.counters.count(m, f"{e.memories['su_walk'].name}_reads", 1)
        with m.If(issue):
            m.d.comb += [
                rd.addr.eq(Mux(rbank, cap, 0) + slot),
                rd.en.eq((n_items != 0) & ~held & first_part),
            ]
            m.d.sync += [
                meta.group.eq(group),
                meta.base.eq(base),
                meta.first.eq(slot == 0),
                meta.last.eq(last_slot & last_part),
                meta.step_last.eq(step_last),
                meta.seq_first.eq(seq_first),
                meta.seq_end.eq(seq_end),
                meta.empty.eq((n_items == 0) | held),
                meta.open.eq(opened),
            ]
            self._next_part(m, meta, part, last_part, last_slot)
            with m.If(last_part & last_slot):
                self._start_gap(m)
                nxt = Mux(full, group + 1, listed)
                m.d.sync += [slot.eq(0), walk.eq(walk + 1), s.walk_row.eq(s.walk_row + 1), group.eq(nxt)]
                with m.If(step_last):
                    m.d.sync += [
                        busy.eq(0),
                        banks.full.bit_select(rbank, 1).eq(0),
                        rbank.eq(~rbank),
                        drain.eq(pause),
                        next_phase.eq((phase + 1) & (period - 1)),
                        next_row.eq(Mux(phase == period - 1, 0, phase_row + stride)),
                        next_open.eq(Mux(phase == period - 1, 0, phase_open + groups)),
                    ]
                    self.counters.count(m, f"{e.name}_steps", 1)
            with m.Elif(last_part):
                m.d.sync += slot.eq(slot + 1)

    def _su_output(self, m: Module, rd, meta, ib: int) -> None:
        """The slot leaves with its metadata and the item memory's read data."""
        m.d.comb += [getattr(self.slot, f).eq(getattr(meta, f)) for f in (*self._meta_fields(), "open")]
        m.d.comb += [
            self.slot.index.eq(Mux(meta.empty, 0, rd.data[:ib])),
            self.slot.value.eq(Mux(meta.empty, 0, rd.data[ib:].as_signed())),
        ]
