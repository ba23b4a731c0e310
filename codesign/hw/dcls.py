"""DCLS front end: per input channel, a circular delay buffer and ``K`` weighted taps.

``z_j(t) = sum_k w[j, k] * in_j(t - delay[j, k])`` with ``in_j(t) = 0`` before the first step.

* ``current`` (``m`` words) holds each channel's input value of this step: layer 0 writes the
  values it receives (and the walk clears them), later layers add the deltas of their events
  (cleared at the end of a sequence).
* ``line`` (``m x span`` words, a :class:`~amaranth.lib.memory.Memory`) is the delay buffer:
  channel ``j``'s value of step ``t`` sits at ``j*span + t mod span``.
* ``taps`` (``m`` words of ``K`` (weight, delay) pairs) is loadable like every parameter.

Per step: receive the items, then walk the channels: read ``current[j]`` and its taps, write it
into the line, read the ``K`` delayed values (a tap whose delay exceeds the steps seen so far
reads 0, so the line never needs clearing), and send ``(j, z_j)`` when ``z_j != 0``; the step's
last item carries ``step_end``. Cost: ``m x (K + 3)`` cycles per step, overlapped with the layer
engine working on the previous step.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigWriteLayout, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import AcceleratorPlan, EnginePlan
from codesign.hw.signature import ItemLayout

__all__ = ["DelayFrontEnd"]


class DelayFrontEnd(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        assert e.dcls is not None
        self.plan, self.engine, self.dcls = plan, e, e.dcls
        self.images = images or {}
        names = [f"{e.name}_dcls_cycles"]
        for key in ("dcls_taps", "dcls_line", "dcls_current"):
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

        taps_plan = mems["dcls_taps"]
        taps = ArrayMemory(m, "taps", taps_plan, self.images.get(taps_plan.name))
        taps_rd, taps_wr = taps.read_port(), taps.write_port(granular=True)
        drive_config_write(m, taps_wr, self.config, taps_plan)
        m.submodules.line = line = Memory(shape=signed(dc.in_bits), depth=ch * span, init=[])
        line_rd, line_wr = line.read_port(), line.write_port()
        m.submodules.current = current = Memory(shape=signed(dc.in_bits), depth=ch, init=[])
        cur_wr = current.write_port()
        cur_rd = current.read_port(transparent_for=(cur_wr,))
        count_memory(m, self.counters, taps_plan.name, [taps_rd], [taps_wr])
        count_memory(m, self.counters, mems["dcls_line"].name, [line_rd], [line_wr])
        count_memory(m, self.counters, mems["dcls_current"].name, [cur_rd], [cur_wr])
        for port in (taps_rd, line_rd, cur_rd):
            m.d.comb += port.en.eq(0)

        # sequence position: steps seen (saturating at span) and the circular head
        seen = Signal(range(span + 1))
        head = Signal(range(span))
        seq_end = Signal()

        # receive: the RMW of a delta needs the old value; items of one step have distinct indices
        beat = self.items.payload
        pend = Signal()
        pend_index = Signal(range(ch))
        pend_value = Signal(signed(dc.item_bits))

        channel = Signal(range(ch))
        base = Signal(range(ch * span + 1))  # channel * span
        tap = Signal(range(k_taps + 1))
        cur_value = Signal(signed(dc.in_bits))
        tap_words = Signal(data.ArrayLayout(signed(taps_plan.elem_bits), taps_plan.elements))
        z = Signal(signed(dc.z_bits))
        # the tap whose line read is in flight
        rd_tap_valid = Signal()
        rd_tap_zero = Signal()  # delay 0: the current value, no read
        rd_tap_masked = Signal()  # delay beyond the steps seen: reads as 0
        rd_tap_weight = Signal(signed(dc.weight_bits))

        with m.If(pend):  # finish the previous delta: current[j] += delta
            m.d.comb += [
                cur_wr.addr.eq(pend_index),
                cur_wr.data.eq(cur_rd.data + pend_value),
                cur_wr.en.eq(1),
            ]
            m.d.sync += pend.eq(0)

        busy = Signal()
        m.d.sync += busy.eq(0)
        with m.FSM(name="dcls"):
            with m.State("RECEIVE"):
                m.d.comb += self.items.ready.eq(1)
                with m.If(self.items.valid):
                    with m.If(beat.value != 0):
                        if dc.mode == "absolute":
                            m.d.comb += [
                                cur_wr.addr.eq(beat.index),
                                cur_wr.data.eq(beat.value),
                                cur_wr.en.eq(1),
                            ]
                        else:
                            m.d.comb += [cur_rd.addr.eq(beat.index), cur_rd.en.eq(1)]
                            m.d.sync += [pend.eq(1), pend_index.eq(beat.index), pend_value.eq(beat.value)]
                    with m.If(beat.step_end):
                        m.d.sync += [seq_end.eq(beat.seq_end), channel.eq(0), base.eq(0)]
                        m.next = "READ"
            with m.State("READ"):  # read the channel's value and taps
                m.d.sync += busy.eq(1)
                m.d.comb += [
                    cur_rd.addr.eq(channel),
                    cur_rd.en.eq(1),
                    taps_rd.addr.eq(channel),
                    taps_rd.en.eq(1),
                ]
                m.next = "LATCH"
            with m.State("LATCH"):  # write the value into the line (and clear it when done with it)
                m.d.sync += busy.eq(1)
                clear = 1 if dc.mode == "absolute" else seq_end
                m.d.comb += [
                    line_wr.addr.eq(base + head),
                    line_wr.data.eq(cur_rd.data),
                    line_wr.en.eq(1),
                ]
                with m.If(clear):
                    m.d.comb += [cur_wr.addr.eq(channel), cur_wr.data.eq(0), cur_wr.en.eq(1)]
                m.d.sync += [
                    cur_value.eq(cur_rd.data),
                    tap_words.eq(taps_rd.data),
                    tap.eq(0),
                    z.eq(0),
                    rd_tap_valid.eq(0),
                ]
                m.next = "TAPS"
            with m.State("TAPS"):  # issue tap k's line read, accumulate tap k-1
                m.d.sync += busy.eq(1)
                tap_value = Mux(rd_tap_zero, cur_value, Mux(rd_tap_masked, 0, line_rd.data))
                with m.If(rd_tap_valid):
                    m.d.sync += z.eq(z + rd_tap_weight * tap_value)
                with m.If(tap < k_taps):
                    weight = Signal(signed(dc.weight_bits))
                    delay = Signal(range(span))
                    pos = Signal(signed(len(head) + 2))
                    m.d.comb += [
                        weight.eq(tap_words[2 * tap]),
                        delay.eq(tap_words[2 * tap + 1]),
                        pos.eq(head - delay - int("delay_off_by_one" in self.plan.faults)),
                        line_rd.addr.eq(base + Mux(pos < 0, pos + span, pos)),
                        line_rd.en.eq(1),
                    ]
                    m.d.sync += [
                        rd_tap_valid.eq(1),
                        rd_tap_zero.eq((delay == 0) & ("delay_off_by_one" not in self.plan.faults)),
                        rd_tap_masked.eq(delay + int("delay_off_by_one" in self.plan.faults) > seen),
                        rd_tap_weight.eq(weight),
                        tap.eq(tap + 1),
                    ]
                with m.Else():
                    m.d.sync += rd_tap_valid.eq(0)
                    m.next = "EMIT"
            with m.State("EMIT"):
                m.d.sync += busy.eq(1)
                last_channel = channel == ch - 1
                out = self.outputs
                send = (z != 0) | last_channel
                m.d.comb += [
                    out.valid.eq(send),
                    out.payload.index.eq(channel),
                    out.payload.value.eq(z),
                    out.payload.step_end.eq(last_channel),
                    out.payload.seq_end.eq(last_channel & seq_end),
                ]
                with m.If(~send | out.ready):
                    m.d.sync += [channel.eq(channel + 1), base.eq(base + span)]
                    m.next = "READ"
                    with m.If(last_channel):
                        m.next = "RECEIVE"
                        with m.If(seq_end):
                            m.d.sync += [seen.eq(0), head.eq(0)]
                        with m.Else():
                            m.d.sync += [
                                seen.eq(Mux(seen == span, span, seen + 1)),
                                head.eq(Mux(head == span - 1, 0, head + 1)),
                            ]
        self.counters.count(m, f"{e.name}_dcls_cycles", busy)
        return m
