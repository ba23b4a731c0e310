"""The lane array: ``P`` lanes, each accumulating every projection of its neuron from one word.

On a valid slot, lane ``l`` updates its accumulators ``acc[l*n + k] += W_k * value`` from the
weight word of the slot's input (all ``n`` matrices of all ``P`` lanes in one memory word); on the
first slot of a group it starts from ``seed`` (the biases, or the accumulators kept from the
previous step by an event-driven layer) instead of its own register. ``acc`` follows a slot by
three cycles (:data:`LATENCY`): operands registered, multiply, accumulate. ``seeds`` belong to the
slot one cycle after its operands (the engine reads them a stage later than the weights), so one
register per product carries them to the adder; without it (``seed_register=False``) they belong
to the slot two cycles after its operands and go straight to the adder (the engine reads them
another stage later, from a memory whose read data holds).

**Shared multipliers** (``lane_multipliers = u < n``): a lane has ``u`` multipliers, and a slot
comes ``passes = ceil(n / u)`` times on successive cycles with ``part = 0, 1, ...``; part ``q``
multiplies matrices ``q*u .. q*u + u - 1`` and adds into their accumulators. The weight word (and
the seeds) hold still over the parts (the engine reads them once), so the part picks its weights
before the operand register and its seeds before the seed register: ``P x u`` of each, not
``P x n``. Every accumulator receives the same products in the same order as without sharing.

**Digit-serial products** (``digit_passes = D > 1``, ``--share-multipliers X:D``, LUT multipliers
only): each product comes in ``D`` pieces on successive parts (:func:`serial_multiply`: a part of
the weight's radix-4 Booth digits times the value, shifted to its place), each added into the
product's accumulator; the first piece of a group's first slot starts from the seed. The pieces
sum to the product, so the accumulators end exactly where a one-cycle multiplier leaves them,
``D`` times slower, with a multiplier of ``1 / D`` of the digits.

**Folded weights** (``folded``, ``--narrow auto``): with shared multipliers the weight word holds
only the current pass's ``P x u`` weights (the engine reads slice ``q`` of the item's folded word
for pass ``q``), so multiplier ``j`` of lane ``l`` takes element ``l*u + j`` and no multiplexer
picks it out of all ``n`` matrices.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LATENCY", "LaneArray", "lut_multiply", "serial_multiply"]

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
    bits = len(weight)
    return _booth(_booth_window(weight), -(-bits // 2), value, bits + len(value))


def _booth_window(weight):
    """The bit below bit 0 (0), the weight's bits and a sign copy: radix-4 Booth digit ``t`` is
    ``-2 w[2t+2] + w[2t+1] + w[2t]`` of this window, and the digits sum to the weight."""
    return Cat(Const(0, 1), weight, weight[len(weight) - 1])


def _booth(window, digits: int, value, width: int):
    """``sum_t d_t 4**t value`` over the first ``digits`` Booth digits of ``window``, signed,
    ``width`` bits (the caller's bound on the sum)."""
    terms, carries = [], []
    for t in range(digits):  # digit t in -2 .. 2
        low, mid, high = window[2 * t], window[2 * t + 1], window[2 * t + 2]
        one = low ^ mid
        two = Mux(high, ~mid & ~low, mid & low)
        magnitude = Mux(one, value, Mux(two, value << 1, 0))
        terms.append(Mux(high, ~magnitude, magnitude) << (2 * t))
        carries.append(high.as_unsigned() << (2 * t))
    while len(terms) > 1:  # a balanced adder tree
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + terms[len(pairs) * 2 :]
    return (terms[0] + sum(carries[1:], carries[0]))[:width].as_signed()


def serial_multiply(weight, value, piece, pieces: int):
    """Piece ``piece`` (a signal, ``0 .. pieces-1``) of ``weight * value``: the weight's Booth
    digits ``piece*g .. piece*g + g - 1`` (``g = digits / pieces``) times ``value``, shifted to
    their place. The pieces sum to the product, so a lane that adds one per cycle into its
    accumulator (``--share-multipliers X:K``) ends with the exact sum, with a multiplier of ``g``
    digits (8-bit weights in 2 pieces: 2 partial products, not 4) plus the multiplexers that
    pick the digits and the piece's place. A piece can
    exceed the weight's range (the top two digits of 96 are 128 - 32), so it is one bit wider
    than a product."""
    bits = len(weight)
    digits = -(-bits // 2)
    g = digits // pieces
    assert g * pieces == digits, (bits, pieces)
    width = bits + len(value) + 1
    window = _booth_window(weight)
    digits_of = window[: 2 * g + 1]  # the piece's digits (multiplexers of equal shapes)
    for d in range(1, pieces):
        digits_of = Mux(piece == d, window[2 * g * d : 2 * g * d + 2 * g + 1], digits_of)
    part = _booth(digits_of, g, value, width)
    out = part
    for d in range(1, pieces):
        out = Mux(piece == d, (part << (2 * g * d))[:width].as_signed(), out)
    return out


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
        digit_passes: int = 1,
        folded: bool = False,
        seed_register: bool = True,
        value_held: bool = False,
    ) -> None:
        self.lanes, self.matrices = lanes, matrices
        self.elements = lanes * matrices
        self.per_lane = lane_multipliers if 0 < lane_multipliers < matrices else matrices
        # a folded weight word (``--narrow``) holds only the current pass's weights: P x u elements
        self.folded = folded and self.per_lane < matrices
        self.digits = digit_passes
        self.seed_register = seed_register
        self.value_held = value_held  # the value comes on a slot's first part only (then holds)
        self.passes = -(-matrices // self.per_lane) * digit_passes
        self.multiplier = multiplier
        if digit_passes > 1 and multiplier not in ("lut", "auto"):
            raise ValueError("digit-serial products are LUT multipliers (multiplier 'lut' or 'auto')")
        # products that use the synthesis tool's multiplier (a hard one where it maps): all, none
        # ("lut": shift-and-add), or the first ``hard_products`` ("mixed")
        products = lanes * self.per_lane
        self.hard = {"lut": 0, "mixed": hard_products}.get(multiplier, products)
        members = {
            "valid": In(1),
            "first": In(1),
            "value": In(signed(value_bits)),
            "weights": In(
                data.ArrayLayout(signed(weight_bits), lanes * self.per_lane if self.folded else self.elements)
            ),
            "seeds": In(data.ArrayLayout(signed(acc_bits), self.elements)),
            "acc": Out(data.ArrayLayout(signed(acc_bits), self.elements)),
        }
        if self.passes > 1:
            members["part"] = In(unsigned(max(1, (self.passes - 1).bit_length())))
        super().__init__(members)

    def _parts(self, lane: int, j: int) -> tuple[list[int], int]:
        """Element indices multiplier ``j`` of ``lane`` serves, one per part (each ``digits``
        times in a row, one per piece of its product; the last repeated to fill the passes), and
        how many of the parts are kept (the repeats' sums never are)."""
        n, u = self.matrices, self.per_lane
        own = [lane * n + q * u + j for q in range(-(-n // u)) if q * u + j < n]
        kept = [i for i in own for _ in range(self.digits)]
        return kept + [kept[-1]] * (self.passes - len(kept)), len(kept)

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
        ]
        part = [0, 0, 0]  # the part at the operands, the products and the sums
        if self.passes > 1:
            part = [self.part, Signal.like(self.part, name="part_0"), Signal.like(self.part, name="part_1")]
            m.d.sync += [part[1].eq(part[0]), part[2].eq(part[1])]
        if self.value_held and self.passes > 1:  # taken on the first part, kept over the others
            with m.If(part[0] == 0):
                m.d.sync += value.eq(self.value)
        else:
            m.d.sync += value.eq(self.value)
        u = self.per_lane
        for lane in range(self.lanes):
            for j in range(u):
                q = lane * u + j
                parts, kept = self._parts(lane, j)
                # a hard multiplier's operand and product registers have no reset, so synthesis
                # can take them into the DSP block's own registers (the iCE40's SB_MAC16 has no
                # synchronous reset); they are read only behind ``valid``, which is reset
                hard = self.digits == 1 and q < self.hard
                weight = Signal.like(self.weights[0], name=f"weight_{q}", reset_less=hard)
                wide = int(self.digits > 1)  # a piece of a product is one bit wider (serial_multiply)
                product = Signal(
                    signed(len(self.weights[0]) + len(self.value) + wide),
                    name=f"product_{q}",
                    reset_less=hard,
                )
                seed = Signal.like(self.seeds[0], name=f"seed_{q}")
                if self.digits > 1:
                    multiply = serial_multiply(weight, value, part[1] % self.digits, self.digits)
                else:
                    multiply = weight * value if q < self.hard else lut_multiply(weight, value)
                # folded: the word is the current pass's, multiplier j of the lane takes its element
                picked = self.weights[q] if self.folded else _pick([self.weights[i] for i in parts], part[0])
                m.d.sync += [weight.eq(picked), product.eq(multiply)]
                if self.seed_register:
                    m.d.sync += seed.eq(_pick([self.seeds[i] for i in parts], part[1]))
                else:  # the seeds arrive with the sums' stage (MacFront.late_seeds)
                    m.d.comb += seed.eq(_pick([self.seeds[i] for i in parts], part[2]))
                for k in range(kept):  # the accumulators this multiplier feeds, one part each
                    i = parts[k]
                    with m.If(valid[1] & (part[2] == k if self.passes > 1 else 1)):
                        # the first piece of a product starts from the seed on a group's first slot
                        start = Mux(first[1], seed, self.acc[i]) if k % self.digits == 0 else self.acc[i]
                        m.d.sync += self.acc[i].eq(start + product)
        return m
