"""DCLS front end, event-driven: each input schedules its ``K`` delayed contributions ahead.

``z_j(t) = sum_k w[j, k] * in_j(t - delay[j, k])`` with ``in_j(t) = 0`` before the first step.

Instead of shifting every channel through a delay line every step (``m x K`` work per step, even
when nothing happens), an item ``(j, x)`` of step ``t`` adds ``w[j, k] * x`` to the *future*
accumulator of step ``t + delay[j, k]`` for each tap ``k``; at the end of step ``t`` the entries
of slot ``t`` are sent and cleared. Work is ``K`` read-modify-writes per non-zero input plus one
per non-zero output: it scales with events, like the layers.

The filter is linear and time-invariant, so it commutes with differencing: layer 0 sends values
and receives ``z(t)``; a later layer sends change events ``delta_j(t)`` and the same hardware
produces ``z(t) - z(t-1)``, which the layer (event-driven, accumulators kept) adds to its
accumulators. Either way the accumulators equal the golden model's ``A(W, b)`` of ``z`` exactly.

Memories (``S = span`` slots of ``m`` channels; slot ``s`` is step ``t`` with ``t mod S = s``):

* ``taps`` (``m`` words of ``K`` (weight, delay) pairs, loadable like every parameter);
* ``zbuf`` (``S x m`` words: a future accumulator and a *listed* flag);
* ``lists`` (``S x m`` channel indices: the channels a slot holds, in the order first touched) and
  ``counts`` (``S`` words): the event list of each slot, so sending a slot costs its entries.

At the end of a sequence the slots it will never reach are cleared through their lists; after
reset every slot is cleared (``S x m`` cycles) before the first input is taken.

Cycles: a non-zero input takes ``K`` cycles (one tap per cycle: the read of tap ``k+1`` overlaps
the write of tap ``k``; transparent read ports forward a write to the same word or slot count),
a step's outputs one cycle each after a 2-cycle start, plus its marker.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigSignature, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import DCLS_QUEUE_DEPTH, AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.queue import CreditFIFO
from codesign.hw.signature import ItemLayout

__all__ = ["DelayFrontEnd"]


@dataclass
class _Ports:
    """The memory ports; each FSM state drives only the ports it uses."""

    taps_rd: object
    z_rd: object
    z_wr: object
    l_rd: object
    l_wr: object
    c_rd: object
    c_wr: object


class _Regs:
    """The front end's registers, shared by the FSM's states (each writes only its own)."""

    def __init__(self, ch: int, span: int, taps: int, item_bits: int, weight_bits: int) -> None:
        self.head = Signal(range(span))  # slot of the current step
        self.seq_end = Signal()
        self.step_seen = Signal()  # the step's last item has been taken
        # schedule pipeline: R reads tap k's future accumulator, W writes it one cycle later
        self.it_valid = Signal()
        self.it_channel = Signal(range(ch))
        self.it_value = Signal(signed(item_bits))
        self.tap = Signal(range(taps + 1))
        self.w_valid = Signal()
        self.w_slot = Signal(range(span))
        self.w_channel = Signal(range(ch))
        self.w_weight = Signal(signed(weight_bits))
        self.w_value = Signal(signed(item_bits))
        # send pipeline: L reads a list entry, Z reads its accumulator, O queues and clears it
        self.index = Signal(range(ch + 1))
        self.n_listed = Signal(range(ch + 1))
        self.send_first = Signal()
        self.l_valid = Signal()
        self.z_valid = Signal()
        self.z_addr = Signal(range(span * ch))
        self.z_channel = Signal(range(ch))
        self.clear_addr = Signal(range(span * ch + 1))
        self.sweep = Signal(range(span + 1))
        self.busy = Signal()


class DelayFrontEnd(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        assert e.dcls is not None
        self.plan, self.engine, self.dcls = plan, e, e.dcls
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
        r = _Regs(dc.channels, dc.span, dc.taps, dc.item_bits, dc.weight_bits)
        out_layout = ItemLayout(dc.channels, dc.z_bits)
        plan = self.engine.memories["dcls_queue"]
        assert plan.width == out_layout.size, (plan.width, out_layout.size)
        m.submodules.out_fifo = queue = CreditFIFO(out_layout, DCLS_QUEUE_DEPTH, attrs=plan.attrs)
        wiring.connect(m, queue.r, wiring.flipped(self.outputs))
        m.d.sync += [r.busy.eq(1), r.w_valid.eq(0)]
        with m.FSM(name="dcls", init="RESET_CLEAR"):
            with m.State("RESET_CLEAR"):  # after reset: clear every slot before taking inputs
                self._reset_clear(m, ports, r)
            with m.State("RECEIVE"):
                self._receive(m, ports, r)
            with m.State("SEND"):
                self._send(m, ports, r, queue)
            with m.State("MARK"):  # the step's marker
                self._mark(m, r, queue)
            # end of a sequence: clear the slots it scheduled but never reached
            self._sweep(m, ports, r)
        self.counters.count(m, f"{self.engine.name}_dcls_cycles", r.busy)
        return m

    # ------------------------------------------------------------ memories
    def _memories(self, m: Module) -> _Ports:
        dc, mems = self.dcls, self.engine.memories
        ch, span = dc.channels, dc.span
        taps_plan = mems["dcls_taps"]
        taps = ArrayMemory(m, "taps", taps_plan, self.images.get(taps_plan.name))
        taps_rd, taps_wr = taps.read_port(), taps.write_port(granular=True)
        drive_config_write(m, taps_wr, self.config, taps_plan)
        entry = data.StructLayout({"z": signed(dc.z_bits), "listed": unsigned(1)})
        m.submodules.zbuf = zbuf = Memory(
            shape=entry, depth=span * ch, init=[], attrs=mems["dcls_zbuf"].attrs
        )
        m.submodules.lists = lists = Memory(
            shape=unsigned(index_bits(ch)), depth=span * ch, init=[], attrs=mems["dcls_lists"].attrs
        )
        m.submodules.counts = counts = Memory(
            shape=range(ch + 1), depth=span, init=[], attrs=mems["dcls_counts"].attrs
        )
        z_wr, l_wr, c_wr = zbuf.write_port(), lists.write_port(), counts.write_port()
        ports = _Ports(
            taps_rd=taps_rd,
            z_rd=zbuf.read_port(transparent_for=(z_wr,)),
            z_wr=z_wr,
            l_rd=lists.read_port(),
            l_wr=l_wr,
            c_rd=counts.read_port(transparent_for=(c_wr,)),
            c_wr=c_wr,
        )
        count_memory(m, self.counters, taps_plan.name, [taps_rd], [taps_wr])
        count_memory(m, self.counters, mems["dcls_zbuf"].name, [ports.z_rd], [z_wr])
        count_memory(m, self.counters, mems["dcls_lists"].name, [ports.l_rd], [l_wr])
        count_memory(m, self.counters, mems["dcls_counts"].name, [ports.c_rd], [c_wr])
        for port in (taps_rd, ports.z_rd, ports.l_rd, ports.c_rd):
            m.d.comb += port.en.eq(0)
        return ports

    # ------------------------------------------------------------ RESET_CLEAR
    def _reset_clear(self, m: Module, ports: _Ports, r: _Regs) -> None:
        ch, span = self.dcls.channels, self.dcls.span
        m.d.comb += [
            ports.z_wr.addr.eq(r.clear_addr),
            ports.z_wr.data.eq(0),
            ports.z_wr.en.eq(1),
            ports.c_wr.addr.eq(r.clear_addr),
            ports.c_wr.data.eq(0),
            ports.c_wr.en.eq(r.clear_addr < span),
        ]
        m.d.sync += r.clear_addr.eq(r.clear_addr + 1)
        with m.If(r.clear_addr == span * ch - 1):
            m.d.sync += [r.clear_addr.eq(0), r.head.eq(0)]
            m.next = "RECEIVE"

    # ------------------------------------------------------------ RECEIVE: R and W stages
    def _receive(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """Take items and schedule their taps: R reads tap k's slot, W adds to it a cycle later.

        W runs only here (R sets ``w_valid`` only here, and this state is left only once the
        last tap's W has happened), so no other state drives the delay-line write ports then.
        """
        self._write_tap(m, ports, r)
        last_tap = self._read_tap(m, ports, r)
        # take the next item when the current one issues its last tap
        beat = self.items.payload
        free = ~r.step_seen & (~r.it_valid | last_tap)
        m.d.comb += self.items.ready.eq(free)
        with m.If(free & self.items.valid):
            m.d.sync += [r.step_seen.eq(beat.step_end), r.seq_end.eq(beat.seq_end)]
            with m.If(beat.value != 0):
                m.d.comb += [ports.taps_rd.addr.eq(beat.index), ports.taps_rd.en.eq(1)]
                m.d.sync += [
                    r.it_valid.eq(1),
                    r.it_channel.eq(beat.index),
                    r.it_value.eq(beat.value),
                    r.tap.eq(0),
                ]
        with m.If(~self.items.valid & ~r.it_valid):
            m.d.sync += r.busy.eq(0)
        # the last tap's write (if any) lands this cycle: the transparent count read sees it
        with m.If(r.step_seen & ~r.it_valid):
            m.d.comb += [ports.c_rd.addr.eq(r.head), ports.c_rd.en.eq(1)]
            m.d.sync += [r.step_seen.eq(0), r.send_first.eq(1), r.index.eq(0)]
            m.d.sync += [r.l_valid.eq(0), r.z_valid.eq(0)]
            m.next = "SEND"

    def _read_tap(self, m: Module, ports: _Ports, r: _Regs):
        """R: tap k of the current item reads its future slot's accumulator and count."""
        dc = self.dcls
        ch, span = dc.channels, dc.span
        late = int(self.plan.faults.active("delay_off_by_one", self.engine.index))
        last_tap = Signal()
        m.d.comb += last_tap.eq(r.tap == dc.taps - 1)
        with m.If(r.it_valid):
            word = ports.taps_rd.data
            delay = Signal(range(span))
            target = Signal(range(2 * span + 1))
            m.d.comb += [delay.eq(word[2 * r.tap + 1]), target.eq(r.head + delay + late)]
            slot_now = Mux(target >= span, target - span, target)
            m.d.comb += [
                ports.z_rd.addr.eq(slot_now * ch + r.it_channel),
                ports.z_rd.en.eq(1),
                ports.c_rd.addr.eq(slot_now),
                ports.c_rd.en.eq(1),
            ]
            m.d.sync += [
                r.w_valid.eq(1),
                r.w_slot.eq(slot_now),
                r.w_channel.eq(r.it_channel),
                r.w_weight.eq(word[2 * r.tap]),
                r.w_value.eq(r.it_value),
                r.tap.eq(r.tap + 1),
            ]
            with m.If(last_tap):
                m.d.sync += r.it_valid.eq(0)
        return last_tap

    def _write_tap(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """W: add weight x value to the slot read a cycle ago; list the channel on its first touch
        (the read ports are transparent to these writes, so the next tap's read sees them)."""
        ch = self.dcls.channels
        old = ports.z_rd.data
        with m.If(r.w_valid):
            m.d.comb += [
                ports.z_wr.addr.eq(r.w_slot * ch + r.w_channel),
                ports.z_wr.data.z.eq(old.z + r.w_weight * r.w_value),
                ports.z_wr.data.listed.eq(1),
                ports.z_wr.en.eq(1),
            ]
            with m.If(~old.listed):
                m.d.comb += [
                    ports.l_wr.addr.eq(r.w_slot * ch + ports.c_rd.data),
                    ports.l_wr.data.eq(r.w_channel),
                    ports.l_wr.en.eq(1),
                    ports.c_wr.addr.eq(r.w_slot),
                    ports.c_wr.data.eq(ports.c_rd.data + 1),
                    ports.c_wr.en.eq(1),
                ]

    # ------------------------------------------------------------ SEND: L, Z and O stages
    def _send(self, m: Module, ports: _Ports, r: _Regs, queue: CreditFIFO) -> None:
        """Send the step's listed channels (one per cycle, as far as the queue has credit) and
        clear them: L reads a list entry, Z its accumulator, O queues a non-zero one."""
        ch = self.dcls.channels
        m.d.sync += r.send_first.eq(0)
        n_now = Signal(range(ch + 1))
        m.d.comb += n_now.eq(Mux(r.send_first, ports.c_rd.data, r.n_listed))
        with m.If(r.send_first):
            m.d.sync += r.n_listed.eq(ports.c_rd.data)
        issue = Signal()
        m.d.comb += [issue.eq((r.index != n_now) & queue.credit), queue.reserve.eq(issue)]
        with m.If(issue):  # L
            m.d.comb += [ports.l_rd.addr.eq(r.head * ch + r.index), ports.l_rd.en.eq(1)]
            m.d.sync += r.index.eq(r.index + 1)
        m.d.sync += [r.l_valid.eq(issue), r.z_valid.eq(r.l_valid)]
        with m.If(r.l_valid):  # Z
            m.d.comb += [ports.z_rd.addr.eq(r.head * ch + ports.l_rd.data), ports.z_rd.en.eq(1)]
            m.d.sync += [r.z_addr.eq(r.head * ch + ports.l_rd.data), r.z_channel.eq(ports.l_rd.data)]
        with m.If(r.z_valid):  # O
            nonzero = ports.z_rd.data.z != 0
            m.d.comb += [
                ports.z_wr.addr.eq(r.z_addr),
                ports.z_wr.data.eq(0),
                ports.z_wr.en.eq(1),
                queue.w.payload.index.eq(r.z_channel),
                queue.w.payload.value.eq(ports.z_rd.data.z),
                queue.w.valid.eq(nonzero),
                queue.cancel.eq(~nonzero),  # a zero output returns its credit
            ]
        with m.If((r.index == n_now) & ~r.l_valid & ~r.z_valid):
            m.d.comb += [ports.c_wr.addr.eq(r.head), ports.c_wr.data.eq(0), ports.c_wr.en.eq(1)]
            m.next = "MARK"

    # ------------------------------------------------------------ MARK
    def _mark(self, m: Module, r: _Regs, queue: CreditFIFO) -> None:
        span = self.dcls.span
        m.d.comb += [
            queue.w.payload.step_end.eq(1),
            queue.w.payload.seq_end.eq(r.seq_end),
            queue.w.valid.eq(queue.credit),
            queue.reserve.eq(queue.credit),
        ]
        with m.If(queue.credit):
            with m.If(r.seq_end):
                m.d.sync += r.sweep.eq(0)
                m.next = "SWEEP_COUNT"
            with m.Else():
                m.d.sync += r.head.eq(Mux(r.head == span - 1, 0, r.head + 1))
                m.next = "RECEIVE"

    # ------------------------------------------------------------ SWEEP_*
    def _sweep(self, m: Module, ports: _Ports, r: _Regs) -> None:
        """Clear, through their lists, the slots a finished sequence scheduled but never reached."""
        ch, span = self.dcls.channels, self.dcls.span
        with m.State("SWEEP_COUNT"):
            with m.If(r.sweep == span):
                m.d.sync += r.head.eq(0)
                m.next = "RECEIVE"
            with m.Else():
                m.d.comb += [ports.c_rd.addr.eq(r.sweep), ports.c_rd.en.eq(1)]
                m.next = "SWEEP_START"
        with m.State("SWEEP_START"):
            m.d.sync += [r.n_listed.eq(ports.c_rd.data), r.index.eq(0)]
            m.next = "SWEEP_LIST"
        with m.State("SWEEP_LIST"):
            with m.If(r.index == r.n_listed):
                m.d.comb += [ports.c_wr.addr.eq(r.sweep), ports.c_wr.data.eq(0), ports.c_wr.en.eq(1)]
                m.d.sync += r.sweep.eq(r.sweep + 1)
                m.next = "SWEEP_COUNT"
            with m.Else():
                m.d.comb += [ports.l_rd.addr.eq(r.sweep * ch + r.index), ports.l_rd.en.eq(1)]
                m.next = "SWEEP_CLEAR"
        with m.State("SWEEP_CLEAR"):
            m.d.comb += [
                ports.z_wr.addr.eq(r.sweep * ch + ports.l_rd.data),
                ports.z_wr.data.eq(0),
                ports.z_wr.en.eq(1),
            ]
            m.d.sync += r.index.eq(r.index + 1)
            m.next = "SWEEP_LIST"
