"""Inter-layer events: what a group of neurons sends downstream, one item per cycle.

The write-back stage (C4) of a layer produces, per group of ``P`` neurons, an *entry*: a mask of the
lanes that send something and their values (change events ``(neuron, delta)`` between layers, or
the final vector ``(neuron, h or pooled sum)`` towards a last/sum readout), and whether the step
(and the sequence) ends with this group. Entries wait in a small FIFO; the serializer turns each
into items (lowest lane first, a ``P``-wide priority encoder: ``P`` lanes, never ``d``), marking
the step's last item with ``step_end``; a step that sends nothing still sends one bare marker.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.hw.plan import index_bits
from codesign.hw.signature import ItemLayout

__all__ = ["EntryLayout", "EventSerializer"]


class EntryLayout(data.StructLayout):
    def __init__(self, lanes: int, groups: int, value_bits: int) -> None:
        super().__init__(
            {
                "mask": unsigned(lanes),
                "value": data.ArrayLayout(signed(value_bits), lanes),
                "group": unsigned(index_bits(groups)),
                "marker": unsigned(1),  # end the step after this entry's items
                "seq_end": unsigned(1),
            }
        )


class EventSerializer(wiring.Component):
    """Entries (``P`` lanes) in, items (one per cycle) out."""

    def __init__(self, *, lanes: int, groups: int, size: int, value_bits: int) -> None:
        self.lanes, self.groups, self.size = lanes, groups, size
        super().__init__(
            {
                "entries": In(stream.Signature(EntryLayout(lanes, groups, value_bits))),
                "items": Out(stream.Signature(ItemLayout(size, value_bits))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        p = self.lanes
        entry = self.entries.payload
        pending = Signal(p)  # lanes of the current entry not yet sent
        loaded = Signal()  # pending belongs to the entry at the FIFO head
        mask = Signal(p)
        m.d.comb += mask.eq(Mux(loaded, pending, entry.mask))
        lowest = Signal(p)
        m.d.comb += lowest.eq(mask & (~mask + 1))
        lane = Signal(range(p))
        for b in range(len(lane)):
            bits = [lowest[i] for i in range(p) if (i >> b) & 1]
            if bits:
                m.d.comb += lane[b].eq(Cat(*bits).any())
        rest = Signal(p)
        m.d.comb += rest.eq(mask & ~lowest)
        has_item = mask.any()
        value = Signal.like(entry.value[0])
        m.d.comb += value.eq(entry.value[lane])

        out = self.items
        with m.If(self.entries.valid):
            with m.If(has_item):
                m.d.comb += [
                    out.valid.eq(1),
                    out.payload.index.eq(entry.group * p + lane),
                    out.payload.value.eq(value),
                    out.payload.step_end.eq(entry.marker & (rest == 0)),
                    out.payload.seq_end.eq(entry.marker & entry.seq_end & (rest == 0)),
                ]
                with m.If(out.ready):
                    with m.If(rest == 0):
                        m.d.comb += self.entries.ready.eq(1)
                        m.d.sync += loaded.eq(0)
                    with m.Else():
                        m.d.sync += [pending.eq(rest), loaded.eq(1)]
            with m.Elif(entry.marker):
                m.d.comb += [
                    out.valid.eq(1),
                    out.payload.index.eq(0),
                    out.payload.value.eq(0),
                    out.payload.step_end.eq(1),
                    out.payload.seq_end.eq(entry.seq_end),
                ]
                with m.If(out.ready):
                    m.d.comb += self.entries.ready.eq(1)
                    m.d.sync += loaded.eq(0)
            with m.Else():
                m.d.comb += self.entries.ready.eq(1)
                m.d.sync += loaded.eq(0)
        return m
