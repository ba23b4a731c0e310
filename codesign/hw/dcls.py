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

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigWriteLayout, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.signature import ItemLayout

__all__ = ["DelayFrontEnd"]

OUT_DEPTH = 4
"""Outputs queued towards the layer; the send pipeline issues only what the queue can take."""


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
        late = int(self.plan.faults.active("delay_off_by_one", e.index))

        taps_plan = mems["dcls_taps"]
        taps = ArrayMemory(m, "taps", taps_plan, self.images.get(taps_plan.name))
        taps_rd, taps_wr = taps.read_port(), taps.write_port(granular=True)
        drive_config_write(m, taps_wr, self.config, taps_plan)
        entry = data.StructLayout({"z": signed(dc.z_bits), "listed": unsigned(1)})
        m.submodules.zbuf = zbuf = Memory(shape=entry, depth=span * ch, init=[])
        m.submodules.lists = lists = Memory(shape=unsigned(index_bits(ch)), depth=span * ch, init=[])
        m.submodules.counts = counts = Memory(shape=range(ch + 1), depth=span, init=[])
        z_wr, l_wr, c_wr = zbuf.write_port(), lists.write_port(), counts.write_port()
        z_rd = zbuf.read_port(transparent_for=(z_wr,))
        l_rd = lists.read_port()
        c_rd = counts.read_port(transparent_for=(c_wr,))
        count_memory(m, self.counters, taps_plan.name, [taps_rd], [taps_wr])
        count_memory(m, self.counters, mems["dcls_zbuf"].name, [z_rd], [z_wr])
        count_memory(m, self.counters, mems["dcls_lists"].name, [l_rd], [l_wr])
        count_memory(m, self.counters, mems["dcls_counts"].name, [c_rd], [c_wr])
        for port in (taps_rd, z_rd, l_rd, c_rd):
            m.d.comb += port.en.eq(0)

        head = Signal(range(span))  # slot of the current step
        seq_end = Signal()
        step_seen = Signal()  # the step's last item has been taken
        # schedule pipeline: R reads tap k's future accumulator, W writes it one cycle later
        it_valid = Signal()
        it_channel = Signal(range(ch))
        it_value = Signal(signed(dc.item_bits))
        tap = Signal(range(k_taps + 1))
        w_valid = Signal()
        w_slot = Signal(range(span))
        w_channel = Signal(range(ch))
        w_weight = Signal(signed(dc.weight_bits))
        w_value = Signal(signed(dc.item_bits))
        # send pipeline: L reads a list entry, Z reads its accumulator, O queues and clears it
        index = Signal(range(ch + 1))
        n_listed = Signal(range(ch + 1))
        send_first = Signal()
        l_valid = Signal()
        z_valid = Signal()
        z_addr = Signal(range(span * ch))
        z_channel = Signal(range(ch))
        clear_addr = Signal(range(span * ch + 1))
        sweep = Signal(range(span + 1))

        out_layout = ItemLayout(ch, dc.z_bits)
        m.submodules.out_fifo = fifo = SyncFIFOBuffered(width=out_layout.size, depth=OUT_DEPTH)
        out_item = Signal(out_layout)
        m.d.comb += [
            fifo.w_data.eq(out_item.as_value()),
            self.outputs.payload.eq(fifo.r_data),
            self.outputs.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.outputs.ready),
        ]

        beat = self.items.payload
        busy = Signal()
        m.d.sync += busy.eq(1)

        # W stage (runs in RECEIVE; the read ports are transparent to these writes, so the next
        # tap's read of the same word or slot count sees this write)
        old = z_rd.data
        with m.If(w_valid):
            m.d.comb += [
                z_wr.addr.eq(w_slot * ch + w_channel),
                z_wr.data.z.eq(old.z + w_weight * w_value),
                z_wr.data.listed.eq(1),
                z_wr.en.eq(1),
            ]
            with m.If(~old.listed):
                m.d.comb += [
                    l_wr.addr.eq(w_slot * ch + c_rd.data),
                    l_wr.data.eq(w_channel),
                    l_wr.en.eq(1),
                    c_wr.addr.eq(w_slot),
                    c_wr.data.eq(c_rd.data + 1),
                    c_wr.en.eq(1),
                ]
        m.d.sync += w_valid.eq(0)

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
                # R stage: tap k of the current item
                last_tap = Signal()
                m.d.comb += last_tap.eq(tap == k_taps - 1)
                with m.If(it_valid):
                    word = taps_rd.data
                    delay = Signal(range(span))
                    target = Signal(range(2 * span + 1))
                    m.d.comb += [delay.eq(word[2 * tap + 1]), target.eq(head + delay + late)]
                    slot_now = Mux(target >= span, target - span, target)
                    m.d.comb += [
                        z_rd.addr.eq(slot_now * ch + it_channel),
                        z_rd.en.eq(1),
                        c_rd.addr.eq(slot_now),
                        c_rd.en.eq(1),
                    ]
                    m.d.sync += [
                        w_valid.eq(1),
                        w_slot.eq(slot_now),
                        w_channel.eq(it_channel),
                        w_weight.eq(word[2 * tap]),
                        w_value.eq(it_value),
                        tap.eq(tap + 1),
                    ]
                    with m.If(last_tap):
                        m.d.sync += it_valid.eq(0)
                # take the next item when the current one issues its last tap
                free = ~step_seen & (~it_valid | last_tap)
                m.d.comb += self.items.ready.eq(free)
                with m.If(free & self.items.valid):
                    m.d.sync += [step_seen.eq(beat.step_end), seq_end.eq(beat.seq_end)]
                    with m.If(beat.value != 0):
                        m.d.comb += [taps_rd.addr.eq(beat.index), taps_rd.en.eq(1)]
                        m.d.sync += [
                            it_valid.eq(1),
                            it_channel.eq(beat.index),
                            it_value.eq(beat.value),
                            tap.eq(0),
                        ]
                with m.If(~self.items.valid & ~it_valid):
                    m.d.sync += busy.eq(0)
                # the last tap's write (if any) lands this cycle: the transparent count read sees it
                with m.If(step_seen & ~it_valid):
                    m.d.comb += [c_rd.addr.eq(head), c_rd.en.eq(1)]
                    m.d.sync += [step_seen.eq(0), send_first.eq(1), index.eq(0)]
                    m.d.sync += [l_valid.eq(0), z_valid.eq(0)]
                    m.next = "SEND"
            with m.State("SEND"):
                m.d.sync += send_first.eq(0)
                n_now = Signal(range(ch + 1))
                m.d.comb += n_now.eq(Mux(send_first, c_rd.data, n_listed))
                with m.If(send_first):
                    m.d.sync += n_listed.eq(c_rd.data)
                inflight = l_valid + z_valid
                issue = Signal()
                m.d.comb += issue.eq((index != n_now) & (fifo.level + inflight < OUT_DEPTH))
                with m.If(issue):  # L
                    m.d.comb += [l_rd.addr.eq(head * ch + index), l_rd.en.eq(1)]
                    m.d.sync += index.eq(index + 1)
                m.d.sync += [l_valid.eq(issue), z_valid.eq(l_valid)]
                with m.If(l_valid):  # Z
                    m.d.comb += [z_rd.addr.eq(head * ch + l_rd.data), z_rd.en.eq(1)]
                    m.d.sync += [z_addr.eq(head * ch + l_rd.data), z_channel.eq(l_rd.data)]
                with m.If(z_valid):  # O
                    m.d.comb += [
                        z_wr.addr.eq(z_addr),
                        z_wr.data.eq(0),
                        z_wr.en.eq(1),
                        out_item.index.eq(z_channel),
                        out_item.value.eq(z_rd.data.z),
                        fifo.w_en.eq(z_rd.data.z != 0),
                    ]
                with m.If((index == n_now) & ~l_valid & ~z_valid):
                    m.d.comb += [c_wr.addr.eq(head), c_wr.data.eq(0), c_wr.en.eq(1)]
                    m.next = "MARK"
            with m.State("MARK"):  # the step's marker
                m.d.comb += [
                    out_item.index.eq(0),
                    out_item.value.eq(0),
                    out_item.step_end.eq(1),
                    out_item.seq_end.eq(seq_end),
                    fifo.w_en.eq(1),
                ]
                with m.If(fifo.w_rdy):
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
