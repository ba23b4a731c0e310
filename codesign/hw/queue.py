"""A FIFO its writer reserves room in ahead: how every engine hands its results downstream.

An engine's pipeline cannot stall once a group has started (there is no backpressure inside the
lanes), so it takes a *credit* when it starts work that will write an entry and writes the entry
several cycles later without looking at ``w.ready``. The queue counts reservations not yet read
out; ``credit`` is high while one more fits. A reservation whose entry turns out empty is returned
with ``cancel`` (the DCLS front end's zero outputs).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["CreditFIFO", "RegisterQueue"]


class CreditFIFO(wiring.Component):
    """``depth`` entries of ``layout``; writes need no ready (their room was reserved).

    ``depth - 1`` entries wait in a memory and one in the output register, as in amaranth's
    ``SyncFIFOBuffered`` (whose storage cannot carry attributes): here the memory takes the plan's
    mapping (``attrs``, e.g. ``ram_style``), so a queue can go to block RAM or to logic.
    """

    def __init__(self, layout, depth: int, attrs: dict | None = None) -> None:
        self.layout, self.depth, self.attrs = layout, depth, attrs
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
        width = Shape.cast(self.layout).width
        inner = self.depth - 1
        m.submodules.storage = storage = Memory(shape=width, depth=inner, init=[], attrs=self.attrs)
        wr, rd = storage.write_port(), storage.read_port()
        produce = Signal(range(inner))
        consume = Signal(range(inner))
        stored = Signal(range(inner + 1))  # entries in the memory (not counting the output register)
        out_valid = Signal()
        do_write = self.w.valid  # room was reserved: never more than depth entries in flight
        do_pop = out_valid & self.r.ready
        do_inner_read = (stored != 0) & (~out_valid | self.r.ready)
        m.d.comb += [
            wr.addr.eq(produce),
            wr.data.eq(self.w.payload),
            wr.en.eq(do_write),
            rd.addr.eq(consume),
            rd.en.eq(do_inner_read),
            self.r.payload.eq(rd.data),
            self.r.valid.eq(out_valid),
        ]
        with m.If(do_write):
            m.d.sync += produce.eq(Mux(produce == inner - 1, 0, produce + 1))
        with m.If(do_inner_read):
            m.d.sync += [consume.eq(Mux(consume == inner - 1, 0, consume + 1)), out_valid.eq(1)]
        with m.Elif(do_pop):
            m.d.sync += out_valid.eq(0)
        m.d.sync += stored.eq(stored + do_write - do_inner_read)
        reserved = Signal(range(self.depth + 2))
        m.d.sync += reserved.eq(reserved + self.reserve - do_pop - self.cancel)
        m.d.comb += self.credit.eq(reserved < self.depth)
        return m


class RegisterQueue(wiring.Component):
    """Two entries of ``layout`` in flip-flops, ``r`` straight from a register: a
    :class:`CreditFIFO` of depth 2 and the :class:`~codesign.hw.slice.StreamSlice` behind it in one.

    A once-per-sequence queue (depth 2) had its one stored entry in flip-flops, a read register
    and then a register slice of two more: four copies of an entry (416 flip-flops for layer 1 of
    JapaneseVowels at P = 4) for two credits. Here the output register (``main``) and one parked
    entry (``skid``) are the whole queue: ``r.payload`` comes from ``main`` (the serializer's pick
    starts at a flip-flop, as behind the slice) and a write lands in ``main`` when it is free or
    being popped, else in ``skid``; a popped ``main`` takes ``skid``. The credits keep at most two
    entries in flight, so a write never finds both full. An entry reaches ``r`` one cycle after
    its write (three through the FIFO and the slice)."""

    depth = 2

    def __init__(self, layout) -> None:
        self.layout = layout
        super().__init__(
            {
                "w": In(stream.Signature(layout, always_ready=True)),
                "r": Out(stream.Signature(layout)),
                "reserve": In(1),
                "cancel": In(1),
                "credit": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        main, skid = Signal(self.layout, name="main"), Signal(self.layout, name="skid")
        main_valid, skid_valid = Signal(), Signal()
        m.d.comb += [self.r.payload.eq(main), self.r.valid.eq(main_valid)]
        pop = main_valid & self.r.ready
        with m.If(pop | ~main_valid):  # main is free this cycle
            with m.If(skid_valid):  # the parked entry moves up; a write parks behind it
                m.d.sync += [main.eq(skid), main_valid.eq(1)]
                with m.If(self.w.valid):
                    m.d.sync += skid.eq(self.w.payload)
                with m.Else():
                    m.d.sync += skid_valid.eq(0)
            with m.Else():
                m.d.sync += [main.eq(self.w.payload), main_valid.eq(self.w.valid)]
        with m.Elif(self.w.valid):  # main is held: park the write (skid is free: two credits)
            m.d.sync += [skid.eq(self.w.payload), skid_valid.eq(1)]
        reserved = Signal(range(self.depth + 2))
        m.d.sync += reserved.eq(reserved + self.reserve - pop - self.cancel)
        m.d.comb += self.credit.eq(reserved < self.depth)
        return m
