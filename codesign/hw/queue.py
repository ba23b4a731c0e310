"""A FIFO its writer reserves room in ahead: how every engine hands its results downstream.

An engine's pipeline cannot stall once a group has started (there is no backpressure inside the
lanes), so it takes a *credit* when it starts work that will write an entry and writes the entry
several cycles later without looking at ``w.ready``. The queue counts reservations not yet read
out; ``credit`` is high while one more fits. A reservation whose entry turns out empty is returned
with ``cancel`` (the DCLS front end's zero outputs).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

__all__ = ["CreditFIFO"]


class CreditFIFO(wiring.Component):
    """``depth`` entries of ``layout``; writes need no ready (their room was reserved)."""

    def __init__(self, layout, depth: int) -> None:
        self.layout, self.depth = layout, depth
        super().__init__(
            {
                "w": In(stream.Signature(layout, always_ready=True)),
                "r": Out(stream.Signature(layout)),
                "reserve": In(1),  # take one credit this cycle
                "cancel": In(1),  # give back a credit whose entry will not be written
                "credit": Out(1),  # one more reservation fits
            }
        )

    def elaborate(self, platform):
        m = Module()
        width = len(Signal(self.layout).as_value())
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self.depth)
        m.d.comb += [
            fifo.w_data.eq(self.w.payload),
            fifo.w_en.eq(self.w.valid),
            self.r.payload.eq(fifo.r_data),
            self.r.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.r.ready),
        ]
        reserved = Signal(range(self.depth + 2))
        popped = fifo.r_en & fifo.r_rdy
        m.d.sync += reserved.eq(reserved + self.reserve - popped - self.cancel)
        m.d.comb += self.credit.eq(reserved < self.depth)
        return m
