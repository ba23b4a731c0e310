"""The lane array: ``P`` lanes, each accumulating every projection of its neuron from one word.

On a valid slot, lane ``l`` updates its accumulators ``acc[l*n + k] += W_k * value`` from the
weight word of the slot's input (all ``n`` matrices of all ``P`` lanes in one memory word); on the
first slot of a group it starts from ``seed`` (the biases, or the accumulators kept from the
previous step by an event-driven layer) instead of its own register. ``acc`` follows a slot by
three cycles (:data:`LATENCY`): operands registered, multiply, accumulate. ``seeds`` belong to the
slot one cycle after its operands (the engine reads them a stage later than the weights), so one
register per product carries them to the adder.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LATENCY", "LaneArray"]

LATENCY = 3
"""Cycles from a slot at the lane array's inputs to its sum in ``acc``."""


def shift_add(weight, value):
    """``weight * value`` (both signed) as a sum of shifted copies of ``value``, one per weight bit.

    The synthesis tool sees adders and multiplexers, not a multiply, so it does not spend a hard
    multiplier on it: a few LUTs per product for the 2- to 4-bit weights the plan sends here.
    The top bit of a two's-complement weight weighs ``-2**(bits-1)``."""
    bits = len(weight)
    width = bits + len(value)
    terms = [Mux(weight[k], value << k, 0) for k in range(bits - 1)]
    total = sum(terms[1:], terms[0]) if terms else 0
    return (total - Mux(weight[bits - 1], value << (bits - 1), 0))[:width].as_signed()


class LaneArray(wiring.Component):
    def __init__(
        self,
        *,
        lanes: int,
        matrices: int,
        weight_bits: int,
        value_bits: int,
        acc_bits: int,
        multiplier: str = "auto",
        hard_products: int = 0,
    ) -> None:
        self.elements = lanes * matrices
        self.multiplier = multiplier
        # products that use the synthesis tool's multiplier (a hard one where it maps): all, none
        # ("lut": shift-and-add), or the first ``hard_products`` ("mixed")
        self.hard = {"lut": 0, "mixed": hard_products}.get(multiplier, self.elements)
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
        # Three stages: register the operands (the weight word straight from its memory, and
        # the seeds), multiply into a register, add. A memory read, a multiplier and an adder
        # in one cycle were the longest path of the accelerator on the ECP5; the memory's
        # output into the multiplier was still the longest with two stages.
        valid = [Signal(name=f"valid_{k}") for k in range(2)]
        first = [Signal(name=f"first_{k}") for k in range(2)]
        value = Signal.like(self.value, name="value_r")
        m.d.sync += [
            valid[0].eq(self.valid),
            valid[1].eq(valid[0]),
            first[0].eq(self.first),
            first[1].eq(first[0]),
            value.eq(self.value),
        ]
        for i in range(self.elements):
            weight = Signal.like(self.weights[i], name=f"weight_{i}")
            product = Signal(signed(len(self.weights[i]) + len(self.value)), name=f"product_{i}")
            seed = Signal.like(self.seeds[i], name=f"seed_{i}")
            m.d.sync += [
                weight.eq(self.weights[i]),
                product.eq(weight * value if i < self.hard else shift_add(weight, value)),
                seed.eq(self.seeds[i]),
            ]
            with m.If(valid[1]):
                m.d.sync += self.acc[i].eq(Mux(first[1], seed, self.acc[i]) + product)
        return m
