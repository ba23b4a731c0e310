"""The lane array: ``P`` lanes, each accumulating every projection of its neuron from one word.

On a valid slot, lane ``l`` updates its accumulators ``acc[l*n + k] += W_k * value`` from the
weight word of the slot's input (all ``n`` matrices of all ``P`` lanes in one memory word); on the
first slot of a group it starts from ``seed`` (the biases, or the accumulators kept from the
previous step by an event-driven layer) instead of its own register. ``acc`` follows a slot by
three cycles (:data:`LATENCY`): operands registered, multiply, accumulate. ``seeds`` belong to the
slot one cycle after its operands (the engine reads them a stage later than the weights), so one
register per product carries them to the adder.

**Shared multipliers** (``lane_multipliers = u < n``): a lane has ``u`` multipliers, and a slot
comes ``passes = ceil(n / u)`` times on successive cycles with ``part = 0, 1, ...``; part ``q``
multiplies matrices ``q*u .. q*u + u - 1`` and adds into their accumulators. The weight word (and
the seeds) hold still over the parts (the engine reads them once), so the part picks its weights
before the operand register and its seeds before the seed register: ``P x u`` of each, not
``P x n``. Every accumulator receives the same products in the same order as without sharing.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LATENCY", "LaneArray", "lut_multiply"]

LATENCY = 3
"""Cycles from a slot at the lane array's inputs to its sum in ``acc``."""


def lut_multiply(weight, value):
    """``weight * value`` (both signed) in LUTs: radix-4 Booth partial products, then adders.

    The synthesis tool sees multiplexers and adders, not a multiply, so it does not spend a hard
    multiplier on it. Each pair of weight bits (with the bit below it) selects one partial
    product among ``0, +-value, +-2 value``, so an 8-bit weight adds 4 of them where the plain
    shift-and-add (one shifted copy of ``value`` per weight bit) added 8. A negated partial
    product is its one's complement, and the ``+1`` of every negation is added once at the end
    (a few low bits). Measured alone with ``synth_ice40`` (yosys 0.70), 8-bit weight x 26-bit
    value: 351 LUT4 + 30 carry against 505 + 29 for the shift-and-add (8 x 16: 231 against 327;
    4 x 16: 92 against 119). Exact for every operand pair (``tests/test_hw_components.py``)."""
    bits, width = len(weight), len(weight) + len(value)
    digits = Cat(Const(0, 1), weight, weight[bits - 1])  # below bit 0, the bits, a sign copy
    terms, carries = [], []
    for k in range(0, bits, 2):  # digit k/2 = -2 b[k+1] + b[k] + b[k-1], in -2 .. 2
        low, mid, high = digits[k], digits[k + 1], digits[k + 2]
        one = low ^ mid
        two = Mux(high, ~mid & ~low, mid & low)
        magnitude = Mux(one, value, Mux(two, value << 1, 0))
        terms.append(Mux(high, ~magnitude, magnitude) << k)
        carries.append(high.as_unsigned() << k)
    while len(terms) > 1:  # a balanced adder tree
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + terms[len(pairs) * 2 :]
    return (terms[0] + sum(carries[1:], carries[0]))[:width].as_signed()


def _pick(elements: list, part):
    """The element of ``part`` (one per part; a missing last one repeats: its sum is never kept)."""
    if len(elements) == 1:
        return elements[0]
    return Array(elements)[part]


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
        lane_multipliers: int = 0,
    ) -> None:
        self.lanes, self.matrices = lanes, matrices
        self.elements = lanes * matrices
        self.per_lane = lane_multipliers if 0 < lane_multipliers < matrices else matrices
        self.passes = -(-matrices // self.per_lane)
        self.multiplier = multiplier
        # products that use the synthesis tool's multiplier (a hard one where it maps): all, none
        # ("lut": shift-and-add), or the first ``hard_products`` ("mixed")
        products = lanes * self.per_lane
        self.hard = {"lut": 0, "mixed": hard_products}.get(multiplier, products)
        members = {
            "valid": In(1),
            "first": In(1),
            "value": In(signed(value_bits)),
            "weights": In(data.ArrayLayout(signed(weight_bits), self.elements)),
            "seeds": In(data.ArrayLayout(signed(acc_bits), self.elements)),
            "acc": Out(data.ArrayLayout(signed(acc_bits), self.elements)),
        }
        if self.passes > 1:
            members["part"] = In(unsigned(max(1, (self.passes - 1).bit_length())))
        super().__init__(members)

    def _parts(self, lane: int, j: int) -> list[int]:
        """Element indices multiplier ``j`` of ``lane`` serves, one per part (the last repeated)."""
        n, u = self.matrices, self.per_lane
        own = [lane * n + q * u + j for q in range(self.passes) if q * u + j < n]
        return own + [own[-1]] * (self.passes - len(own))

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
        part = [0, 0, 0]  # the part at the operands, the products and the sums
        if self.passes > 1:
            part = [self.part, Signal.like(self.part, name="part_0"), Signal.like(self.part, name="part_1")]
            m.d.sync += [part[1].eq(part[0]), part[2].eq(part[1])]
        u = self.per_lane
        for lane in range(self.lanes):
            for j in range(u):
                q = lane * u + j
                parts = self._parts(lane, j)
                weight = Signal.like(self.weights[0], name=f"weight_{q}")
                product = Signal(signed(len(self.weights[0]) + len(self.value)), name=f"product_{q}")
                seed = Signal.like(self.seeds[0], name=f"seed_{q}")
                m.d.sync += [
                    weight.eq(_pick([self.weights[i] for i in parts], part[0])),
                    product.eq(weight * value if q < self.hard else lut_multiply(weight, value)),
                    seed.eq(_pick([self.seeds[i] for i in parts], part[1])),
                ]
                for k, i in enumerate(dict.fromkeys(parts)):  # the accumulators this multiplier feeds
                    with m.If(valid[1] & (part[2] == k if self.passes > 1 else 1)):
                        m.d.sync += self.acc[i].eq(Mux(first[1], seed, self.acc[i]) + product)
        return m
