"""DCLS front end, event-driven: each input schedules its ``K`` delayed contributions ahead.

``z_j(t) = sum_k w[j, k] * in_j(t - delay[j, k])`` with ``in_j(t) = 0`` before the first step.

Instead of shifting every channel through a delay line every step (``m x K`` work per step, even
when nothing happens), an item ``(j, x)`` of step ``t`` writes ``w[j, k] * x`` into the *future*
slot of step ``t + delay[j, k]`` for each tap ``k``; at the end of step ``t`` the channels listed
in slot ``t`` are sent and cleared. Work is one cycle per non-zero input (its ``K`` taps in
parallel) plus one per non-zero output: it scales with events, like the layers.

The filter is linear and time-invariant, so it commutes with differencing: layer 0 sends values
and receives ``z(t)``; a later layer sends change events ``delta_j(t)`` and the same hardware
produces ``z(t) - z(t-1)``, which the layer (event-driven, accumulators kept) adds to its
accumulators. Either way the accumulators equal the golden model's ``A(W, b)`` of ``z`` exactly.

Memories (``S = span`` slots of ``m`` channels; slot ``s`` is step ``t`` with ``t mod S = s``;
a slot takes ``2**ceil(log2 m)`` words, so that an address is ``(slot, channel)`` side by side):

* ``taps`` (``m`` words of ``K`` (weight, delay) pairs, loadable like every parameter; a ROM in
  a frozen build);
* ``zbuf``: ``K`` banks of ``S`` slots, bank ``k`` holding tap ``k``'s contribution. Entry
  ``(s, j)`` of bank ``k`` is written by one item only in the life of slot ``s`` (channel ``j`` at
  step ``s - delay[j, k]``; an index comes at most once per step), so the write needs no read; the
  output is the sum of the ``K`` banks, read and cleared together;
* ``listed`` (``S`` slots of flags, one read port per tap): the channel is in the slot's list;
* ``lists`` (``S`` slots of channel indices: the channels a slot holds, in the order first touched) and
  ``counts`` (``S`` words: registers up to ``plan.DCLS_COUNT_REGISTERS`` slots, else a memory with
  one read port per tap; :class:`_SlotCounts`): the event list of each slot, so sending a slot
  costs its entries.

At the end of a sequence the slots it will never reach are cleared through their lists; after
reset every slot is cleared (one cycle per word) before the first input is taken.

Pipeline of an item: A takes it and reads its taps word; R writes its ``K`` contributions and
reads the ``K`` listed flags and slot counts; N appends the channel to the list of each slot
that did not list it yet (taps with equal delays share one entry), one append per cycle: an item
needing two or more holds the pipeline for the extra cycles (a dense stream needs about one, a
sparse one ``K``). Sending: L reads a list entry, Z reads and clears the banks and the flag, O
queues the sum; the last entry carries the step marker (sent even when its sum is 0: the layer
drops zero values but keeps the marker), and the next step's items are taken while Z and O
finish. Cycles per step: about ``non-zero inputs + non-zero outputs + 3``. On the UP5K
(``clear_late``) O, not Z, clears the entry Z read, so no bank or flag read meets a write of its
word in a cycle (its block RAM leaves that undefined, and yosys' read-first copy of the banks took
246 logic cells in the d = 12 network); R waits in O's cycles (one write port), up to one cycle
more per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigSignature, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.lanes import lut_multiply
from codesign.hw.plan import (
    DCLS_QUEUE_DEPTH,
    AcceleratorPlan,
    EnginePlan,
    MemoryPlan,
    index_bits,
    stride_bits,
)
from codesign.hw.queue import CreditFIFO
from codesign.hw.signature import ItemLayout
from codesign.hw.targets import get_target

__all__ = ["DelayFrontEnd", "sum_is_zero"]


class _SlotCounts:
    """The slot counts (how many channels each slot lists): a memory with a read port per tap,
    transparent to its write port (R reads what N appends in the same cycle), or registers read
    where they are used (``MemoryPlan.style == "registers"``, :data:`plan.DCLS_COUNT_REGISTERS`).

    A reader asks with :meth:`read` and uses :meth:`value` the cycle after, naming the slot again
    (a register that still holds it): the memory's port holds the word, the registers give the
    slot's count as it is then, the same value."""

    def __init__(self, m: Module, plan: MemoryPlan, span: int, channels: int, taps: int) -> None:
        self.registers = plan.style == "registers"
        self.reads = Signal(taps, name="count_reads")  # the ports a cycle asks on (counters)
        self.write_en = Signal(name="count_write")
        if self.registers:
            self.words = Array(Signal(range(channels + 1), name=f"count{s}") for s in range(span))
            return
        m.submodules.counts = counts = Memory(
            shape=range(channels + 1), depth=span, init=[], attrs=plan.attrs
        )
        self.wr = counts.write_port()
        self.rd = [counts.read_port(transparent_for=(self.wr,)) for _ in range(taps)]
        m.d.comb += [self.wr.en.eq(self.write_en), *(p.en.eq(self.reads[k]) for k, p in enumerate(self.rd))]

    def read(self, m: Module, k: int, slot) -> None:
        """Ask for ``slot``'s count on port ``k``; :meth:`value` gives it next cycle."""
        m.d.comb += self.reads[k].eq(1)
        if not self.registers:
            m.d.comb += self.rd[k].addr.eq(slot)

    def value(self, k: int, slot) -> Value:
        """The count port ``k`` asked for the cycle before, ``slot`` being that slot."""
        return self.words[slot] if self.registers else self.rd[k].data

    def write(self, m: Module, slot, count) -> None:
        m.d.comb += self.write_en.eq(1)
        if self.registers:
            m.d.sync += self.words[slot].eq(count)
        else:
            m.d.comb += [self.wr.addr.eq(slot), self.wr.data.eq(count)]


class _HeadCount:
    """The count of the head slot as SEND will see it, with ``left == 0`` and ``left == 1`` kept
    in registers (slot counts in registers only).

    While items are received it follows the head's count a cycle behind, N's append to the head
    slot (a tap of delay 0) taken directly; SEND then counts it down, so whether an entry is left
    and whether it is the last are flip-flops. Comparing the list index with the count instead
    put the count's multiplexer and two comparisons in front of the head, the next state and the
    queue's reservation: the d = 12 DCLS network's longest UP5K path (27.0 MHz)."""

    def __init__(self, channels: int) -> None:
        self.left = Signal(range(channels + 1), name="head_left")
        self.zero = Signal(name="head_left_zero", init=1)
        self.one = Signal(name="head_left_one")

    def follow(self, m: Module, count) -> None:
        """This cycle the head's count becomes (or stays) ``count``."""
        m.d.sync += [self.left.eq(count), self.zero.eq(count == 0), self.one.eq(count == 1)]

    def appended(self, m: Module, count) -> None:
        """N appends to the head slot, whose count was ``count``."""
        m.d.sync += [self.left.eq(count + 1), self.zero.eq(0), self.one.eq(count == 0)]

    def sent(self, m: Module) -> None:
        """SEND issued an entry."""
        m.d.sync += [self.left.eq(self.left - 1), self.zero.eq(self.one), self.one.eq(self.left == 2)]


@dataclass
class _Ports:
    """The memory ports; the pipelines and FSM states drive only the ports they own (below)."""

    taps_rd: object
    z_rd: list  # one per bank: Z
    z_wr: list  # one per bank: R, O, RESET_CLEAR, SWEEP_CLEAR
    f_rd: list  # listed flags, one per tap: R
    f_wr: object  # N (set), O, RESET_CLEAR, SWEEP_CLEAR (clear)
    l_rd: object  # L, SWEEP_LIST
    l_wr: object  # N
    counts: _SlotCounts  # read: R (for N), SEND's start, SWEEP; written: N, RESET_CLEAR, the
    # count reset after the last L, SWEEP_LIST
    head: _HeadCount | None  # counts in registers: the head's, followed in RECEIVE, down in SEND


class _Regs:
    """The front end's registers, shared by the FSM's states (each writes only its own)."""

    def __init__(self, ch: int, span: int, taps: int, item_bits: int) -> None:
        self.head = Signal(range(span))  # slot of the current step
        self.seq_end = Signal()
        self.step_seen = Signal()  # the step's last item has been taken
        # R: an item whose taps word is on the read port
        self.it_valid = Signal()
        self.it_channel = Signal(range(ch))
        self.it_value = Signal(signed(item_bits))
        # N: the listed flags and counts of its slots are on the read ports
        self.n_valid = Signal()
        self.n_first = Signal()  # first cycle of the item in N (later: the appends left)
        self.n_channel = Signal(range(ch))
        self.n_slot = [Signal(range(span), name=f"n_slot{k}") for k in range(taps)]
        self.n_dup = Signal(taps)  # tap k's slot equals a lower tap's: that one lists it
        self.n_head = Signal(taps)  # tap k's slot is the head's (a delay of 0): :class:`_HeadCount`
        self.receiving = Signal()  # the FSM is in RECEIVE (comb)
        self.n_left = Signal(taps)  # appends still to do
        # send pipeline: L reads a list entry, Z reads and clears its banks, O queues the sum
        self.index = Signal(range(ch + 1))
        self.n_listed = Signal(range(ch + 1))
        self.send_first = Signal()
        self.l_valid = Signal()
        self.l_last = Signal()
        self.l_slot = Signal(range(span))
        self.z_valid = Signal()
        self.z_addr = Signal(range(span << stride_bits(ch)))  # O clears the entry Z read
        self.z_last = Signal()
        self.z_channel = Signal(range(ch))
        self.o_seq_end = Signal()
        self.count_reset = Signal()  # the slot SEND finished has its count zeroed a cycle later
        self.count_reset_slot = Signal(range(span))
        self.clear_slot = Signal(range(span))
        self.clear_entry = Signal(range(ch))
        self.sweep = Signal(range(span + 1))
        self.busy = Signal()


def _lowest(m: Module, bits, name: str) -> tuple[Signal, Signal]:
    """``(one-hot lowest set bit, its index)`` of ``bits``."""
    n = len(bits)
    onehot = Signal(n, name=f"{name}_onehot")
    index = Signal(range(max(n, 2)), name=f"{name}_index")
    for k in reversed(range(n)):
        with m.If(bits[k]):
            m.d.comb += [onehot.eq(1 << k), index.eq(k)]
    return onehot, index


def sum_is_zero(m: Module, terms: list[Value], width: int) -> Value:
    """``sum(terms) == 0`` modulo ``2**width``, without a carry chain.

    The terms are reduced to two by carry-save (3:2) adders; then ``A + B == 0`` exactly when
    ``A ^ B == (A | B) << 1``: with every sum bit 0, each bit's carry-in equals ``A_i ^ B_i`` and
    its carry-out is ``A_i | B_i``. Four LUT levels on a 25-bit sum, where testing the sum itself
    waited for its carry chain: with the queue's valid behind it, the d = 12 DCLS network's
    longest UP5K path after the count registers (28.6 MHz). A sum that fits ``width`` signed bits
    (the DCLS output ``z``) is 0 exactly when it is 0 modulo ``2**width``."""
    mask = (1 << width) - 1
    ops = []
    for n, term in enumerate(terms):
        op = Signal(width, name=f"zero_term{n}")
        m.d.comb += op.eq(term)  # sign-extended to ``width``
        ops.append(op)
    while len(ops) > 2:
        a, b, c = ops.pop(), ops.pop(), ops.pop()
        ops[:0] = [a ^ b ^ c, (((a & b) | (a & c) | (b & c)) << 1) & mask]
    if len(ops) == 1:
        return ops[0] == 0
    a, b = ops
    return (a ^ b) == (((a | b) << 1) & mask)


def _addr(slot, entry, ch: int):
    """Address of ``(slot, channel)`` (or of a slot's list entry): ``slot x 2**stride_bits(ch) +
    entry``, a concatenation (a multiply by ``m`` on the address paths was the UP5K's longest path)."""
    return Cat(entry[: stride_bits(ch)], slot)


class DelayFrontEnd(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        assert e.dcls is not None
        self.plan, self.engine, self.dcls = plan, e, e.dcls
        # on a block RAM whose read in a write's cycle is undefined (the UP5K), O clears the entry
        # Z read, a cycle later, and R waits in O's cycles (``plan.DCLS_COLLISION_FREE``)
        self.clear_late = get_target(plan.target).undefined_collisions
        self.images = images or {}
        self.counters = CounterBank(plan, f"{e.name}.dcls")
        dc = e.dcls
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(dc.channels, dc.item_bits))),
                "outputs": Out(stream.Signature(ItemLayout(dc.channels, dc.z_bits))),
                "config": In(ConfigSignature(plan)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        dc = self.dcls
        ports = self._memories(m)
        r = _Regs(dc.channels, dc.span, dc.taps, dc.item_bits)
        out_layout = ItemLayout(dc.channels, dc.z_bits)
        plan = self.engine.memories["dcls_queue"]
        assert plan.width == out_layout.size, (plan.width, out_layout.size)
        m.submodules.out_fifo = queue = CreditFIFO(out_layout, DCLS_QUEUE_DEPTH, attrs=plan.attrs)
        wiring.connect(m, queue.r, wiring.flipped(self.outputs))
        m.d.sync += [r.busy.eq(1), r.l_valid.eq(0), r.l_last.eq(0)]  # SEND's L raises them
        n_stall = self._append(m, ports, r)
        taps = self._tap_writes(m, ports, r)
        self._send_tail(m, ports, r, queue)
        self._count_reset(m, ports, r)
        with m.FSM(name="dcls", init="RESET_CLEAR"):
            with m.State("RESET_CLEAR"):  # after reset: clear every slot before taking inputs
                self._reset_clear(m, ports, r)
            with m.State("RECEIVE"):
                self._receive(m, ports, r, n_stall, taps)
            with m.State("SEND"):
                self._send(m, ports, r, queue)
            # end of a sequence: clear the slots it scheduled but never reached
            self._sweep(m, ports, r)
        self.counters.count(m, f"{self.engine.name}_dcls_cycles", r.busy)
        return m

    # ------------------------------------------------------------ memories
    def _memories(self, m: Module) -> _Ports:
        dc, mems = self.dcls, self.engine.memories
        ch, span, taps = dc.channels, dc.span, dc.taps
        taps_plan = mems["dcls_taps"]
        taps_mem = ArrayMemory(m, "taps", taps_plan, self.images.get(taps_plan.name))
        taps_rd = taps_mem.read_port()
        taps_wr = None if taps_plan.rom else taps_mem.write_port(granular=True)  # frozen: a ROM
        if taps_wr is not None:
            drive_config_write(m, taps_wr, self.config, taps_plan)
        zplan, fplan = mems["dcls_zbuf"], mems["dcls_listed"]
        depth = span << stride_bits(ch)
        assert zplan.depth == fplan.depth == mems["dcls_lists"].depth == depth, (zplan, depth)
        z_rd, z_wr = [], []
        for k in range(taps):
            bank = Memory(shape=signed(zplan.elem_bits), depth=depth, init=[], attrs=zplan.attrs)
            m.submodules[f"zbuf{k}"] = bank
            z_wr.append(bank.write_port())
            z_rd.append(bank.read_port())
        m.submodules.listed = listed = Memory(shape=unsigned(1), depth=depth, init=[], attrs=fplan.attrs)
        f_wr = listed.write_port()
        f_rd = [listed.read_port() for _ in range(taps)]
        m.submodules.lists = lists = Memory(
            shape=unsigned(index_bits(ch)), depth=depth, init=[], attrs=mems["dcls_lists"].attrs
        )
        counts = _SlotCounts(m, mems["dcls_counts"], span, ch, taps)
        l_wr = lists.write_port()
        ports = _Ports(
            taps_rd=taps_rd,
            z_rd=z_rd,
            z_wr=z_wr,
            f_rd=f_rd,
            f_wr=f_wr,
            l_rd=lists.read_port(),
            l_wr=l_wr,
            counts=counts,
            head=_HeadCount(ch) if counts.registers else None,
        )
        # the banks (and the flags' copies) move together: one access of the planned word each
        count_memory(m, self.counters, taps_plan.name, [taps_rd], [taps_wr] if taps_wr is not None else [])
        count_memory(m, self.counters, zplan.name, [z_rd[0]], [z_wr[0]])
        count_memory(m, self.counters, fplan.name, [f_rd[0]], [f_wr])
        count_memory(m, self.counters, mems["dcls_lists"].name, [ports.l_rd], [l_wr])
        # port 0's reads (every tap's port asks with it), as for the banks and flags
        self.counters.count(m, f"{mems['dcls_counts'].name}_reads", counts.reads[0])
        self.counters.count(m, f"{mems['dcls_counts'].name}_writes", counts.write_en)
        for port in (taps_rd, ports.l_rd, *z_rd, *f_rd):
            m.d.comb += port.en.eq(0)
        return ports

    def _clear_slot_entry(self, m: Module, ports: _Ports, addr) -> None:
        """Zero every bank and the listed flag of one (slot, channel) entry."""
        for wr in ports.z_wr:
            m.d.comb += [wr.addr.eq(addr), wr.data.eq(0), wr.en.eq(1)]
        m.d.comb += [ports.f_wr.addr.eq(addr), ports.f_wr.data.eq(0), ports.f_wr.en.eq(1)]

    # ------------------------------------------------------------ RESET_CLEAR
    def _reset_clear(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """Zero every ``(slot, channel)`` entry and every slot count, one entry per cycle.

        Only the ``span x m`` entries in use: a slot's words beyond its ``m`` channels (its
        power-of-two stride) are never read, so the sweep skips them (``span x m`` cycles)."""
        ch, span = self.dcls.channels, self.dcls.span
        self._clear_slot_entry(m, ports, _addr(r.clear_slot, r.clear_entry, ch))
        with m.If(r.clear_entry == 0):
            ports.counts.write(m, r.clear_slot, 0)
        with m.If(r.clear_entry == ch - 1):
            m.d.sync += [r.clear_entry.eq(0), r.clear_slot.eq(r.clear_slot + 1)]
            with m.If(r.clear_slot == span - 1):
                m.d.sync += [r.clear_slot.eq(0), r.head.eq(0)]
                m.next = "RECEIVE"
        with m.Else():
            m.d.sync += r.clear_entry.eq(r.clear_entry + 1)

    # ------------------------------------------------------------ N: list appends
    def _append(self, m: Module, ports: _Ports, r: _Regs) -> Signal:
        """N: append the item's channel to each slot that does not list it yet, one per cycle.

        Returns ``n_stall``: N keeps the item another cycle (two or more appends left), so R and
        A hold theirs. Runs only while items are received (R feeds it only in RECEIVE)."""
        ch, taps = self.dcls.channels, self.dcls.taps
        need_first = Signal(taps)
        for k in range(taps):
            m.d.comb += need_first[k].eq(~ports.f_rd[k].data & ~r.n_dup[k])
        need = Signal(taps)
        m.d.comb += need.eq(Mux(r.n_first, need_first, r.n_left))
        onehot, pick = _lowest(m, need, "append")
        left = Signal(taps)
        n_stall = Signal()
        m.d.comb += [left.eq(need & ~onehot), n_stall.eq(r.n_valid & (left != 0))]
        slot = Signal(range(self.dcls.span))
        count = Signal(range(ch + 1))
        m.d.comb += [
            slot.eq(Array(r.n_slot)[pick]),
            count.eq(Array([ports.counts.value(k, r.n_slot[k]) for k in range(taps)])[pick]),
        ]
        with m.If(r.n_valid & (need != 0)):
            m.d.comb += [
                ports.l_wr.addr.eq(_addr(slot, count, ch)),
                ports.l_wr.data.eq(r.n_channel),
                ports.l_wr.en.eq(1),
                ports.f_wr.addr.eq(_addr(slot, r.n_channel, ch)),
                ports.f_wr.data.eq(1),
                ports.f_wr.en.eq(1),
            ]
            ports.counts.write(m, slot, count + 1)
        if ports.head is not None:  # the head's count a cycle behind, this cycle's append taken
            with m.If(r.n_valid & (need != 0) & Array(r.n_head)[pick]):
                ports.head.appended(m, count)
            with m.Elif(r.receiving):  # (SEND counts it down)
                ports.head.follow(m, ports.counts.value(0, r.head))
        m.d.sync += [r.n_left.eq(left), r.n_first.eq(0)]
        with m.If(~n_stall):
            m.d.sync += r.n_valid.eq(0)  # R refills it (below, in RECEIVE)
        return n_stall

    # ------------------------------------------------------------ RECEIVE: A and R stages
    def _tap_writes(self, m: Module, ports: _Ports, r: _Regs) -> list[tuple[Signal, Value, Value]]:
        """Each tap's bank slot, contribution ``w[j, k] * x`` and whether the slot is the head's
        (its delay is 0 modulo the span, whatever the head), for the item R holds.

        Computed outside the FSM and ungated: R's ``advance`` (which depends on N's stall) only
        selects them for the write. Gated at the source, the stall logic sat in front of the
        multipliers, the flip-flop bundle's ECP5 critical path (69 MHz at P = 1)."""
        dc = self.dcls
        span, taps = dc.span, dc.taps
        late = int(self.plan.faults.active("delay_off_by_one", self.engine.index))
        word = ports.taps_rd.data
        # the first ``hard_taps`` products may use hard multipliers, the rest shift-and-add
        hard_taps = dc.taps if dc.hard_taps is None else dc.hard_taps
        writes = []
        for k in range(taps):
            weight = Signal(signed(dc.weight_bits), name=f"tap_w{k}")
            delay = Signal(range(span), name=f"delay{k}")
            target = Signal(range(2 * span + 1), name=f"target{k}")
            slot = Signal(range(span), name=f"slot{k}")
            m.d.comb += [
                weight.eq(word[2 * k]),
                delay.eq(word[2 * k + 1]),
                target.eq(r.head + delay + late),
                slot.eq(Mux(target >= span, target - span, target)),
            ]
            product = weight * r.it_value if k < hard_taps else lut_multiply(weight, r.it_value)
            writes.append((slot, product, (delay + late == 0) | (delay + late == span)))
        return writes

    def _receive(self, m: Module, ports: _Ports, r: _Regs, n_stall, taps: list) -> None:
        """A takes an item and reads its taps; R writes its contributions into the banks and reads
        the listed flags and counts of its slots for N."""
        ch = self.dcls.channels
        m.d.comb += r.receiving.eq(1)
        advance = Signal()
        # R waits while O clears an entry of the step before (one write port per bank and flags)
        m.d.comb += advance.eq(r.it_valid & ~n_stall & (~r.z_valid if self.clear_late else 1))
        with m.If(advance):  # R
            slots = []
            for k, (slot, product, at_head) in enumerate(taps):
                slots.append(slot)
                addr = _addr(slot, r.it_channel, ch)
                bank = ports.z_wr[k]
                m.d.comb += [
                    bank.addr.eq(addr),
                    bank.data.eq(product),
                    bank.en.eq(1),
                    ports.f_rd[k].addr.eq(addr),
                    ports.f_rd[k].en.eq(1),
                ]
                ports.counts.read(m, k, slot)
                m.d.sync += [r.n_slot[k].eq(slot), r.n_head[k].eq(at_head)]
                dup = 0
                for lower in slots[:k]:
                    dup = dup | (lower == slot)
                m.d.sync += r.n_dup[k].eq(dup)
            m.d.sync += [r.n_valid.eq(1), r.n_first.eq(1), r.n_channel.eq(r.it_channel), r.it_valid.eq(0)]
        # A: take the next item when R is free next cycle
        beat = self.items.payload
        free = ~r.step_seen & (~r.it_valid | advance)
        m.d.comb += self.items.ready.eq(free)
        with m.If(free & self.items.valid):
            m.d.sync += [r.step_seen.eq(beat.step_end), r.seq_end.eq(beat.seq_end)]
            with m.If(beat.value != 0):
                m.d.comb += [ports.taps_rd.addr.eq(beat.index), ports.taps_rd.en.eq(1)]
                m.d.sync += [r.it_valid.eq(1), r.it_channel.eq(beat.index), r.it_value.eq(beat.value)]
        with m.If(~self.items.valid & ~r.it_valid & ~r.n_valid):
            m.d.sync += r.busy.eq(0)
        # the last append (if any) lands this cycle: the transparent count read sees it
        with m.If(r.step_seen & ~r.it_valid & ~n_stall):
            ports.counts.read(m, 0, r.head)
            m.d.sync += [r.step_seen.eq(0), r.send_first.eq(1), r.index.eq(0)]
            m.next = "SEND"

    # ------------------------------------------------------------ SEND: L, then Z and O
    def _send(self, m: Module, ports: _Ports, r: _Regs, queue: CreditFIFO) -> None:
        """L: read the step's list entries (one per cycle, as far as the queue has credit); Z and
        O follow outside the FSM. After the last entry (or at once for an empty slot, with a bare
        marker) the slot's count is reset (the cycle after) and the next step is taken while Z and O
        finish."""
        ch, span = self.dcls.channels, self.dcls.span
        issue = Signal()
        last = Signal()
        empty = Signal()
        if ports.head is not None:  # the entries left, and whether one or none, are registers
            m.d.comb += [
                issue.eq(~ports.head.zero & queue.credit),
                last.eq(ports.head.one),
                empty.eq(ports.head.zero),
            ]
            with m.If(issue):
                ports.head.sent(m)
        else:  # the count the port read at the transition, then kept
            m.d.sync += r.send_first.eq(0)
            n_now = Signal(range(ch + 1))
            first = ports.counts.value(0, r.head)
            m.d.comb += n_now.eq(Mux(r.send_first, first, r.n_listed))
            with m.If(r.send_first):
                m.d.sync += r.n_listed.eq(first)
            m.d.comb += [
                issue.eq((r.index != n_now) & queue.credit),
                last.eq(r.index + 1 == n_now),
                empty.eq(n_now == 0),
            ]
        with m.If(empty):  # a bare marker
            m.d.comb += [
                queue.w.payload.step_end.eq(1),
                queue.w.payload.seq_end.eq(r.seq_end),
                queue.w.valid.eq(queue.credit),
                queue.reserve.eq(queue.credit),
            ]
        with m.Else():
            m.d.comb += queue.reserve.eq(issue)
        with m.If(issue):  # L
            m.d.comb += [ports.l_rd.addr.eq(_addr(r.head, r.index, ch)), ports.l_rd.en.eq(1)]
            m.d.sync += [r.index.eq(r.index + 1), r.l_slot.eq(r.head), r.o_seq_end.eq(r.seq_end)]
        m.d.sync += [r.l_valid.eq(issue), r.l_last.eq(issue & last)]
        with m.If((issue & last) | (empty & queue.credit)):
            m.d.sync += [r.count_reset.eq(1), r.count_reset_slot.eq(r.head)]  # :meth:`_count_reset`
            with m.If(r.seq_end):
                m.d.sync += r.sweep.eq(0)
                m.next = "SWEEP_COUNT"
            with m.Else():
                m.d.sync += r.head.eq(Mux(r.head == span - 1, 0, r.head + 1))
                m.next = "RECEIVE"

    def _count_reset(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """Zero the count of the slot SEND just finished, in the cycle after its last entry.

        In that cycle the count port is free: N appends no earlier than two cycles into RECEIVE
        (A, then R), the sweep writes from its third state, and R's first read of any slot comes a
        cycle later. Written in SEND's own cycle, the write enable hung on the comparison of the
        list index with the count just read, and the count reads (transparent to this port)
        compared their addresses with it: on the UP5K, the d = 12 DCLS network's longest path
        (11 logic levels from the count read back to it)."""
        with m.If(r.count_reset):
            ports.counts.write(m, r.count_reset_slot, 0)
        m.d.sync += r.count_reset.eq(0)

    def _send_tail(self, m: Module, ports: _Ports, r: _Regs, queue: CreditFIFO) -> None:
        """Z: read the entry's banks; O: clear them and its flag, and queue their sum if non-zero
        or if it carries the marker, else return the credit."""
        dc = self.dcls
        m.d.sync += r.z_valid.eq(r.l_valid)
        with m.If(r.l_valid):  # Z
            addr = _addr(r.l_slot, ports.l_rd.data, dc.channels)
            for rd in ports.z_rd:
                m.d.comb += [rd.addr.eq(addr), rd.en.eq(1)]
            if not self.clear_late:  # the block RAM returns the old word read in a write's cycle
                self._clear_slot_entry(m, ports, addr)
            m.d.sync += [r.z_channel.eq(ports.l_rd.data), r.z_last.eq(r.l_last), r.z_addr.eq(addr)]
        if self.clear_late:
            with m.If(r.z_valid):  # O: clear the entry Z read (no bank read meets a write)
                self._clear_slot_entry(m, ports, r.z_addr)
        with m.If(r.z_valid):  # O
            total = Signal(signed(dc.z_bits), name="z_sum")
            m.d.comb += total.eq(sum(rd.data for rd in ports.z_rd))  # fits: it is z
            nonzero = ~sum_is_zero(m, [rd.data for rd in ports.z_rd], dc.z_bits)
            m.d.comb += [
                queue.w.payload.index.eq(r.z_channel),
                queue.w.payload.value.eq(total),
                queue.w.payload.step_end.eq(r.z_last),
                queue.w.payload.seq_end.eq(r.z_last & r.o_seq_end),
                queue.w.valid.eq(nonzero | r.z_last),
                queue.cancel.eq(~nonzero & ~r.z_last),
            ]

    # ------------------------------------------------------------ SWEEP_*
    def _sweep(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """Clear, through their lists, the slots a finished sequence scheduled but never reached."""
        ch, span = self.dcls.channels, self.dcls.span
        with m.State("SWEEP_COUNT"):
            with m.If(r.sweep == span):
                m.d.sync += r.head.eq(0)
                m.next = "RECEIVE"
            with m.Else():
                ports.counts.read(m, 0, r.sweep)
                m.next = "SWEEP_START"
        with m.State("SWEEP_START"):
            m.d.sync += [r.n_listed.eq(ports.counts.value(0, r.sweep)), r.index.eq(0)]
            m.next = "SWEEP_LIST"
        with m.State("SWEEP_LIST"):
            with m.If(r.index == r.n_listed):
                ports.counts.write(m, r.sweep, 0)
                m.d.sync += r.sweep.eq(r.sweep + 1)
                m.next = "SWEEP_COUNT"
            with m.Else():
                m.d.comb += [ports.l_rd.addr.eq(_addr(r.sweep, r.index, ch)), ports.l_rd.en.eq(1)]
                m.next = "SWEEP_CLEAR"
        with m.State("SWEEP_CLEAR"):
            self._clear_slot_entry(m, ports, _addr(r.sweep, ports.l_rd.data, ch))
            m.d.sync += r.index.eq(r.index + 1)
            m.next = "SWEEP_LIST"
