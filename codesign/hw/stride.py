"""The input stride: ``S`` input frames summed per channel become one step of layer 0.

``out_j = (sum of in_j over the window) >> log2 S`` (``docs/integer-semantics.md``): the input
stream keeps its protocol (one beat per non-zero input, ``step_end`` and ``seq_end`` markers), and
layer 0 receives one step per window. A window ends at its ``S``-th ``step_end`` or at ``seq_end``
(a trailing partial window sums the frames present).

One memory of ``m`` sums (``input bits + log2 S`` wide, ``plan`` key ``stride_sums``) and a small
state machine:

* ``CLEAR`` (after reset): zero every sum, one per cycle, before taking inputs;
* ``ACCUMULATE``: an input item ``(j, x)`` reads sum ``j`` and, a cycle later, writes ``sum + x``
  back (one item per cycle; the read port is transparent for the write, so the same channel in
  the next frame reads the written sum);
* ``READ`` / ``EMIT`` at a window's end: for every channel, read its sum, send ``(j, sum >> log2 S)``
  downstream when it is non-zero and write 0 back (two cycles a channel, more while downstream is
  not ready); then ``MARK`` sends a bare ``step_end`` beat (value 0, with the window's ``seq_end``).

Inputs wait (``ready`` low) from a window's end until its marker is sent: ``2 m + 1`` cycles per
window at least, ``(2 m + 1) / S`` per input frame.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, signed, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.signature import ItemLayout

__all__ = ["InputStride"]


class InputStride(wiring.Component):
    """Layer 0's input front end for ``input.stride`` S > 1: ``items`` in, one step per window out."""

    def __init__(self, plan: AcceleratorPlan, e: EnginePlan) -> None:
        assert e.stride > 1 and e.index == 0
        self.plan, self.engine = plan, e
        self.mem_plan = e.memories["stride_sums"]
        self.channels, self.value_bits = plan.input_size, plan.input_bits
        self.counters = CounterBank(plan, f"{e.name}.stride")
        layout = ItemLayout(self.channels, self.value_bits)
        super().__init__({"items": In(stream.Signature(layout)), "outputs": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        e, ch = self.engine, self.channels
        sum_bits = self.mem_plan.elem_bits
        m.submodules.sums = mem = Memory(shape=signed(sum_bits), depth=ch, init=[], attrs=self.mem_plan.attrs)
        wr = mem.write_port()
        rd = mem.read_port(transparent_for=(wr,))
        count_memory(m, self.counters, self.mem_plan.name, [rd], [wr])
        m.d.comb += rd.en.eq(0)
        chan = Signal(unsigned(index_bits(ch)))  # CLEAR / READ / EMIT: the channel walked
        frames = Signal(unsigned(max(1, e.stride_shift)))  # step_ends seen in this window
        seq_end = Signal()  # the window ends its sequence
        pend = Signal()  # ACCUMULATE: the item taken last cycle, its sum read and added now
        pend_idx = Signal.like(chan)
        pend_val = Signal(signed(self.value_bits))
        busy = Signal()
        m.d.comb += busy.eq(1)
        mean = Signal(signed(self.value_bits))
        shift = e.stride_shift - int(self.plan.faults.active("stride_shift_short", e.index))
        m.d.comb += mean.eq(rd.data >> shift)
        m.d.sync += pend.eq(0)
        with m.If(pend):  # the add of the item taken last cycle (transparent for the next read)
            m.d.comb += [wr.addr.eq(pend_idx), wr.data.eq(rd.data + pend_val), wr.en.eq(1)]
        items, out = self.items, self.outputs
        with m.FSM(name="stride", init="CLEAR"):
            with m.State("CLEAR"):
                m.d.comb += [wr.addr.eq(chan), wr.data.eq(0), wr.en.eq(1)]
                m.d.sync += chan.eq(chan + 1)
                with m.If(chan == ch - 1):
                    m.d.sync += chan.eq(0)
                    m.next = "ACCUMULATE"
            with m.State("ACCUMULATE"):
                m.d.comb += [items.ready.eq(1), busy.eq(pend | items.valid)]
                with m.If(items.valid):
                    m.d.comb += [rd.addr.eq(items.payload.index), rd.en.eq(items.payload.value != 0)]
                    m.d.sync += [
                        pend.eq(items.payload.value != 0),
                        pend_idx.eq(items.payload.index),
                        pend_val.eq(items.payload.value),
                    ]
                    with m.If(items.payload.step_end):
                        m.d.sync += frames.eq(frames + 1)
                        with m.If(items.payload.seq_end | (frames == e.stride - 1)):
                            m.d.sync += [frames.eq(0), seq_end.eq(items.payload.seq_end), chan.eq(0)]
                            m.next = "READ"
            with m.State("READ"):  # the pending add (if any) lands now; the read sees it
                m.d.comb += [rd.addr.eq(chan), rd.en.eq(1)]
                m.next = "EMIT"
            with m.State("EMIT"):  # rd.data holds (en low) until the channel is sent
                m.d.comb += [
                    out.valid.eq(mean != 0),
                    out.payload.index.eq(chan),
                    out.payload.value.eq(mean),
                ]
                with m.If((mean == 0) | out.ready):
                    m.d.comb += [wr.addr.eq(chan), wr.data.eq(0), wr.en.eq(1)]
                    m.d.sync += chan.eq(chan + 1)
                    m.next = "READ"
                    with m.If(chan == ch - 1):
                        m.d.sync += chan.eq(0)
                        m.next = "MARK"
            with m.State("MARK"):
                m.d.comb += [out.valid.eq(1), out.payload.step_end.eq(1), out.payload.seq_end.eq(seq_end)]
                with m.If(out.ready):
                    m.next = "ACCUMULATE"
        self.counters.count(m, f"{e.name}_stride_cycles", busy)
        return m
