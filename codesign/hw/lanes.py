"""The lane array: ``P`` lanes, each accumulating every projection of its neuron from one word.

On a valid slot, lane ``l`` updates its accumulators ``acc[l*n + k] += W_k * value`` from the
weight word of the slot's input (all ``n`` matrices of all ``P`` lanes in one memory word); on the
first slot of a group it starts from ``seed`` (the biases, or the accumulators kept from the
previous step by an event-driven layer) instead of its own register.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LaneArray"]


class LaneArray(wiring.Component):
    def __init__(
        self, *, lanes: int, matrices: int, weight_bits: int, value_bits: int, acc_bits: int
    ) -> None:
        self.elements = lanes * matrices
        super().__init__(
            {
                "valid": In(1),
                "first": In(1),
                "value": In(signed(value_bits)),
                "weights": In(data.ArrayLayout(signed(weight_bits), self.elements)),
                "seeds": In(data.ArrayLayout(signed(acc_bits), self.elements)),
                "acc": Out(data.ArrayLayout(signed(acc_bits), self.elements)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        with m.If(self.valid):
            for i in range(self.elements):
                start = Mux(self.first, self.seeds[i], self.acc[i])
                m.d.sync += self.acc[i].eq(start + self.weights[i] * self.value)
        return m
