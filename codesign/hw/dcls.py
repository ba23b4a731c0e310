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
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigWriteLayout, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.signature import ItemLayout

__all__ = ["DelayFrontEnd"]


class DelayFrontEnd(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        assert e.dcls is not None
        self.plan, self.engine, self.dcls = plan, e, e.dcls
        self.images = images or {}
        names = [f"{e.name}_dcls_cycles"]
        for key in ("dcls_taps", "dcls_zbuf", "dcls_lists", "dcls_counts"):
            names += [f"{e.memories[key].name}_reads", f"{e.memories[key].name}_writes"]
        self.counters = CounterBank("", names, plan.counter_bits)
        dc = e.dcls
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(dc.channels, dc.item_bits))),
                "outputs": Out(stream.Signature(ItemLayout(dc.channels, dc.z_bits))),
                "config": In(ConfigWriteLayout(plan)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        e, dc = self.engine, self.dcls
        mems = e.memories
        ch, k_taps, span = dc.channels, dc.taps, dc.span
        late = int("delay_off_by_one" in self.plan.faults)

        taps_plan = mems["dcls_taps"]
        taps = ArrayMemory(m, "taps", taps_plan, self.images.get(taps_plan.name))
        taps_rd, taps_wr = taps.read_port(), taps.write_port(granular=True)
        drive_config_write(m, taps_wr, self.config, taps_plan)
        entry = data.StructLayout({"z": signed(dc.z_bits), "listed": unsigned(1)})
        m.submodules.zbuf = zbuf = Memory(shape=entry, depth=span * ch, init=[])
        m.submodules.lists = lists = Memory(shape=unsigned(index_bits(ch)), depth=span * ch, init=[])
        m.submodules.counts = counts = Memory(shape=range(ch + 1), depth=span, init=[])
        z_rd, z_wr = zbuf.read_port(), zbuf.write_port()
        l_rd, l_wr = lists.read_port(), lists.write_port()
        c_rd, c_wr = counts.read_port(), counts.write_port()
        count_memory(m, self.counters, taps_plan.name, [taps_rd], [taps_wr])
        count_memory(m, self.counters, mems["dcls_zbuf"].name, [z_rd], [z_wr])
        count_memory(m, self.counters, mems["dcls_lists"].name, [l_rd], [l_wr])
        count_memory(m, self.counters, mems["dcls_counts"].name, [c_rd], [c_wr])
        for port in (taps_rd, z_rd, l_rd, c_rd):
            m.d.comb += port.en.eq(0)

        head = Signal(range(span))  # slot of the current step
        seq_end = Signal()
        # the item being scheduled
        channel = Signal(range(ch))
        value = Signal(signed(dc.item_bits))
        tap = Signal(range(k_taps + 1))
        slot = Signal(range(span))
        weight = Signal(signed(dc.weight_bits))
        # sending / clearing a slot
        index = Signal(range(ch + 1))
        n_listed = Signal(range(ch + 1))
        clear_addr = Signal(range(span * ch + 1))
        sweep = Signal(range(span + 1))  # slot being cleared at the end of a sequence
        z_addr = Signal(range(span * ch))

        beat = self.items.payload
        out = self.outputs
        busy = Signal()
        m.d.sync += busy.eq(1)
        with m.FSM(name="dcls", init="RESET_CLEAR"):
            with m.State("RESET_CLEAR"):  # after reset: clear every slot before taking inputs
                m.d.comb += [
                    z_wr.addr.eq(clear_addr),
                    z_wr.data.eq(0),
                    z_wr.en.eq(1),
                    c_wr.addr.eq(clear_addr),
                    c_wr.data.eq(0),
                    c_wr.en.eq(clear_addr < span),
                ]
                m.d.sync += clear_addr.eq(clear_addr + 1)
                with m.If(clear_addr == span * ch - 1):
                    m.d.sync += [clear_addr.eq(0), head.eq(0)]
                    m.next = "RECEIVE"
            with m.State("RECEIVE"):
                m.d.sync += busy.eq(0)
                m.d.comb += self.items.ready.eq(1)
                with m.If(self.items.valid):
                    m.d.sync += [
                        busy.eq(1),
                        channel.eq(beat.index),
                        value.eq(beat.value),
                        tap.eq(0),
                        seq_end.eq(beat.seq_end),
                    ]
                    m.d.comb += [taps_rd.addr.eq(beat.index), taps_rd.en.eq(1)]
                    with m.If(beat.value != 0):
                        m.next = "TAP_READ"
                        with m.If(beat.step_end):
                            m.next = "TAP_READ_LAST"
                    with m.Elif(beat.step_end):
                        m.d.comb += [c_rd.addr.eq(head), c_rd.en.eq(1)]
                        m.next = "SEND_COUNT"
            for last in (False, True):
                suffix = "_LAST" if last else ""
                with m.State(f"TAP_READ{suffix}"):  # read the future accumulator of tap k's slot
                    word = taps_rd.data
                    delay = Signal(range(span), name=f"delay{suffix.lower()}")
                    target = Signal(range(2 * span + 1), name=f"target{suffix.lower()}")
                    m.d.comb += [
                        delay.eq(word[2 * tap + 1]),
                        target.eq(head + delay + late),
                    ]
                    slot_now = Mux(target >= span, target - span, target)
                    m.d.comb += [
                        z_rd.addr.eq(slot_now * ch + channel),
                        z_rd.en.eq(1),
                        c_rd.addr.eq(slot_now),
                        c_rd.en.eq(1),
                    ]
                    m.d.sync += [slot.eq(slot_now), weight.eq(word[2 * tap])]
                    m.next = f"TAP_WRITE{suffix}"
                with m.State(f"TAP_WRITE{suffix}"):  # add w * x; list the channel in the slot once
                    old = z_rd.data
                    m.d.comb += [
                        z_wr.addr.eq(slot * ch + channel),
                        z_wr.data.z.eq(old.z + weight * value),
                        z_wr.data.listed.eq(1),
                        z_wr.en.eq(1),
                    ]
                    with m.If(~old.listed):
                        m.d.comb += [
                            l_wr.addr.eq(slot * ch + c_rd.data),
                            l_wr.data.eq(channel),
                            l_wr.en.eq(1),
                            c_wr.addr.eq(slot),
                            c_wr.data.eq(c_rd.data + 1),
                            c_wr.en.eq(1),
                        ]
                    m.d.sync += tap.eq(tap + 1)
                    with m.If(tap == k_taps - 1):
                        if last:
                            m.next = "SEND_START"
                        else:
                            m.next = "RECEIVE"
                    with m.Else():
                        m.next = f"TAP_READ{suffix}"
            with m.State("SEND_START"):  # the step's last item has been scheduled: read the count
                m.d.comb += [c_rd.addr.eq(head), c_rd.en.eq(1)]
                m.next = "SEND_COUNT"
            with m.State("SEND_COUNT"):
                m.d.sync += [n_listed.eq(c_rd.data), index.eq(0)]
                m.next = "SEND_LIST"
            with m.State("SEND_LIST"):  # next listed channel of this slot
                with m.If(index == n_listed):
                    m.d.comb += [c_wr.addr.eq(head), c_wr.data.eq(0), c_wr.en.eq(1)]
                    m.next = "SEND_MARK"
                with m.Else():
                    m.d.comb += [l_rd.addr.eq(head * ch + index), l_rd.en.eq(1)]
                    m.next = "SEND_READ"
            with m.State("SEND_READ"):
                m.d.comb += [z_rd.addr.eq(head * ch + l_rd.data), z_rd.en.eq(1)]
                m.d.sync += [channel.eq(l_rd.data), z_addr.eq(head * ch + l_rd.data)]
                m.next = "SEND_ITEM"
            with m.State("SEND_ITEM"):  # send (j, z) if z != 0 and clear the entry
                z = z_rd.data.z
                m.d.comb += [
                    out.valid.eq(z != 0),
                    out.payload.index.eq(channel),
                    out.payload.value.eq(z),
                ]
                with m.If((z == 0) | out.ready):
                    m.d.comb += [z_wr.addr.eq(z_addr), z_wr.data.eq(0), z_wr.en.eq(1)]
                    m.d.sync += index.eq(index + 1)
                    m.next = "SEND_LIST"
            with m.State("SEND_MARK"):  # the step's marker
                m.d.comb += [
                    out.valid.eq(1),
                    out.payload.index.eq(0),
                    out.payload.value.eq(0),
                    out.payload.step_end.eq(1),
                    out.payload.seq_end.eq(seq_end),
                ]
                with m.If(out.ready):
                    with m.If(seq_end):
                        m.d.sync += sweep.eq(0)
                        m.next = "SWEEP_COUNT"
                    with m.Else():
                        m.d.sync += head.eq(Mux(head == span - 1, 0, head + 1))
                        m.next = "RECEIVE"
            # end of a sequence: clear the slots it scheduled but never reached
            with m.State("SWEEP_COUNT"):
                with m.If(sweep == span):
                    m.d.sync += head.eq(0)
                    m.next = "RECEIVE"
                with m.Else():
                    m.d.comb += [c_rd.addr.eq(sweep), c_rd.en.eq(1)]
                    m.next = "SWEEP_START"
            with m.State("SWEEP_START"):
                m.d.sync += [n_listed.eq(c_rd.data), index.eq(0)]
                m.next = "SWEEP_LIST"
            with m.State("SWEEP_LIST"):
                with m.If(index == n_listed):
                    m.d.comb += [c_wr.addr.eq(sweep), c_wr.data.eq(0), c_wr.en.eq(1)]
                    m.d.sync += sweep.eq(sweep + 1)
                    m.next = "SWEEP_COUNT"
                with m.Else():
                    m.d.comb += [l_rd.addr.eq(sweep * ch + index), l_rd.en.eq(1)]
                    m.next = "SWEEP_CLEAR"
            with m.State("SWEEP_CLEAR"):
                m.d.comb += [z_wr.addr.eq(sweep * ch + l_rd.data), z_wr.data.eq(0), z_wr.en.eq(1)]
                m.d.sync += index.eq(index + 1)
                m.next = "SWEEP_LIST"
        self.counters.count(m, f"{e.name}_dcls_cycles", busy)
        return m
