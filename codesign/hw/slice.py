"""A register slice for a stream: every output and ``ready`` come from flip-flops.

Between two engines the event path ran from the event FIFO's memory through the serializer's
lane pick into the next engine's item counter in one cycle (the ECP5's longest path once the
lanes and the update stage were pipelined). The slice cuts it both ways at the cost of one
cycle of latency, not of throughput: a second (skid) register catches the beat that arrives in
the cycle the consumer stops taking them, so a full slice still moves one beat per cycle.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamSlice"]


class StreamSlice(wiring.Component):
    """``i`` in, ``o`` out, in order, nothing lost or repeated; ``o`` and ``i.ready`` registered."""

    def __init__(self, layout) -> None:
        self.layout = layout
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        main = Signal(self.layout, name="main")
        main_valid = Signal()
        skid = Signal(self.layout, name="skid")
        skid_valid = Signal()
        m.d.comb += [
            self.i.ready.eq(~skid_valid),
            self.o.valid.eq(main_valid),
            self.o.payload.eq(main),
        ]
        taken = self.i.valid & ~skid_valid
        with m.If(self.o.ready | ~main_valid):  # the main register is free this cycle
            with m.If(skid_valid):
                m.d.sync += [main.eq(skid), main_valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [main.eq(self.i.payload), main_valid.eq(self.i.valid)]
        with m.Elif(taken):  # main is held: park the beat taken this cycle
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
