"""One update unit per cell kind behind one interface (docs/integer-semantics.md, "Cells").

Every unit is combinational: the update stage of a layer engine presents, for one lane, the
neuron's accumulators (``acc``), its parameters (``params``) and its state before the step
(``old``), and stores ``new``. ``out`` is what the layer passes on (its state; HSRU: the digital
bit ``D``), ``gate`` what the trace reports (binary gate, minGRU's ``z``, HSRU's spike), and
``saturated`` says a saturation clipped the stored value. ``hold`` says the neuron keeps ``old``
(and its old output) this step: gated cells raise it for a closed gate and leave the choice to
the next pipeline stage, which takes the gate's multiplexer off the unit's longest path.

Helpers :func:`saturate` and :func:`shift_floor` build the two integer primitives of the spec:
``sat_B`` and ``shr`` with a per-neuron signed shift (negative = exact left shift, bounded by the
plan's ``shift_lo`` so nothing outgrows ``MAX_DATAPATH_BITS``; a frozen build's plan bounds it by
the shifts its ROM holds).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from codesign.bundle.cells import CELLS
from codesign.hw.faults import FaultSet
from codesign.hw.lanes import lut_multiply
from codesign.hw.plan import EnginePlan

__all__ = [
    "UpdateSignature",
    "UpdateUnit",
    "abs_at_least",
    "clamp_gate",
    "make_update_unit",
    "saturate",
    "saturate_sum",
    "shift_floor",
]


def saturate(m: Module, value, bits: int, name: str, *, fault: bool = False) -> tuple[Signal, Signal]:
    """``(sat_bits(value), clipped)`` (``fault``: the upper bound is one too low).

    A signed value wider than ``bits`` fits when its bits from ``bits - 1`` up are all equal (a
    reduction, a few LUT levels) rather than by two compares against the bounds (two carry chains
    as wide as the value: on the UP5K the longest paths of the update units)."""
    value = Value.cast(value)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1 - int(fault)
    out = Signal(signed(bits), name=name)
    clipped = Signal(name=f"{name}_clipped")
    if fault or not value.shape().signed:
        m.d.comb += [
            out.eq(Mux(value > hi, hi, Mux(value < lo, lo, value))),
            clipped.eq((value > hi) | (value < lo)),
        ]
    elif len(value) <= bits:
        m.d.comb += [out.eq(value), clipped.eq(0)]
    else:
        upper = value[bits - 1 :]
        fits = Signal(name=f"{name}_fits")
        m.d.comb += [
            fits.eq((upper == 0) | (upper == (1 << len(upper)) - 1)),
            out.eq(Mux(fits, value[:bits], Mux(value[-1], lo, hi))),
            clipped.eq(~fits),
        ]
    return out, clipped


def saturate_sum(m: Module, narrow, wide, bits: int, name: str) -> tuple[Signal, Signal]:
    """``saturate(narrow + wide, bits)`` for a narrow signed term and a wide signed one.

    With ``k = max(len(narrow), bits) + 1``: a ``wide`` outside ``k`` signed bits puts the sum out
    of range on its own side (``|narrow| <= 2**(k-2)``), so only ``k + 1``-bit arithmetic is
    needed, beside a reduction over ``wide``'s upper bits (no carry chain as wide as ``wide``)."""
    narrow, wide = Value.cast(narrow), Value.cast(wide)
    k = max(len(narrow), bits) + 1
    if len(wide) <= k:
        return saturate(m, narrow + wide, bits, name)
    upper = wide[k - 1 :]
    in_range = Signal(name=f"{name}_in_range")
    total = Signal(signed(k + 1), name=f"{name}_total")
    m.d.comb += [
        in_range.eq((upper == 0) | (upper == (1 << len(upper)) - 1)),
        total.eq(narrow + wide[:k].as_signed()),
    ]
    near, near_clipped = saturate(m, total, bits, f"{name}_near")
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    out = Signal(signed(bits), name=name)
    clipped = Signal(name=f"{name}_clipped")
    m.d.comb += [
        out.eq(Mux(in_range, near, Mux(wide[-1], lo, hi))),
        clipped.eq(~in_range | near_clipped),
    ]
    return out, clipped


def clamp_gate(m: Module, value, gate_bits: int, name: str) -> Signal:
    """minGRU's hard sigmoid ``clamp(value + 2**(gate_bits-1), 0, 2**gate_bits)`` of a signed value.

    Outside ``[-2**gate_bits, 2**gate_bits)`` the answer is 0 or ``2**gate_bits`` by the sign alone
    (the upper bits all equal or not: a reduction); inside, ``gate_bits + 2``-bit arithmetic
    suffices. Both avoid carry chains as wide as the value."""
    value = Value.cast(value)
    one = 1 << gate_bits
    z = Signal(unsigned(gate_bits + 1), name=name)
    if len(value) <= gate_bits + 1:
        narrow = value
        fits = 1
    else:
        upper = value[gate_bits:]
        narrow = value[: gate_bits + 1].as_signed()
        fits = (upper == 0) | (upper == (1 << len(upper)) - 1)
    raw = Signal(signed(gate_bits + 3), name=f"{name}_raw")
    m.d.comb += [
        raw.eq(narrow + (one >> 1)),
        z.eq(Mux(fits, Mux(raw < 0, 0, Mux(raw > one, one, raw)), Mux(value[-1], 0, one))),
    ]
    return z


def shift_floor(m: Module, value, shift, lo: int, hi: int, name: str) -> Signal:
    """``floor(value / 2**shift)`` for ``shift >= 0``, else ``value * 2**-shift``, for every
    ``shift`` in ``[lo, hi]`` (the plan's ``shift_lo`` / ``shift_hi``).

    The spec allows -26 .. 63 on a 27-bit sum (a 53-bit result and a 6-level shifter, then a
    53-bit saturation: 904 LUT4 of each minGRU update unit of the d = 12 DCLS network on the
    UP5K); a frozen build's plan narrows the range to the shifts its ROM holds, so a shift every
    neuron shares is wiring and a range of a few values a shifter of a few levels."""
    value = Value.cast(value)
    out = Signal(signed(len(value) + max(0, -lo)), name=name)
    if lo == hi:
        m.d.comb += out.eq(value >> lo if lo >= 0 else value << -lo)
        return out
    base = max(lo, 0)  # a right shift every neuron takes: wiring
    right_value = value >> base if base else value
    if hi > base:
        right = Signal(range(hi - base + 1), name=f"{name}_right")
        m.d.comb += right.eq(Mux(shift >= 0, shift - base if base else shift[: len(right)], 0))
        right_value = right_value >> right
    if lo >= 0:
        m.d.comb += out.eq(right_value)
        return out
    left = Signal(range(-lo + 1), name=f"{name}_left")
    m.d.comb += left.eq(Mux(shift < 0, -shift, 0))
    m.d.comb += out.eq(Mux(shift >= 0, right_value, value << left) if hi >= 0 else value << left)
    return out


def abs_at_least(m: Module, a, b) -> Signal:
    """``|a| >= |b|`` from ``a - b`` and ``a + b`` side by side.

    ``abs`` then compare is two carry chains in series, the longest path of the CMRU update;
    by the signs: ``a, b >= 0``: ``a - b >= 0``; ``a >= 0 > b``: ``a + b >= 0``;
    ``b >= 0 > a``: ``a + b <= 0``; ``a, b < 0``: ``a - b <= 0``. Both sums are one bit wider
    than the operands, so nothing overflows.
    """
    width = max(len(a), len(b)) + 1
    diff = Signal(signed(width), name="abs_diff")
    total = Signal(signed(width), name="abs_sum")
    out = Signal(name="abs_at_least")
    a_neg, b_neg = a[-1], b[-1]
    m.d.comb += [diff.eq(a - b), total.eq(a + b)]
    with m.Switch(Cat(b_neg, a_neg)):
        with m.Case(0b00):
            m.d.comb += out.eq(diff >= 0)
        with m.Case(0b01):
            m.d.comb += out.eq(total >= 0)
        with m.Case(0b10):
            m.d.comb += out.eq(total <= 0)
        with m.Case(0b11):
            m.d.comb += out.eq(diff <= 0)
    return out


class UpdateSignature(wiring.Signature):
    def __init__(self, e: EnginePlan) -> None:
        self.engine = e
        state = data.StructLayout({f: signed(e.state_bits) for f in e.state_fields})
        super().__init__(
            {
                "acc": In(data.StructLayout({k: signed(e.acc_bits) for k in e.matrices})),
                "params": In(data.StructLayout({k: signed(w) for k, w in e.params.items()})),
                "old": In(state),
                "new": Out(state),
                "out": Out(signed(e.output_bits)),
                "gate": Out(unsigned(e.gate_width)),
                "potential": Out(signed(e.state_bits)),
                "saturated": Out(1),
                "hold": Out(1),
            }
        )


class UpdateUnit(wiring.Component):
    """Base class: the update rule of one neuron.

    The outputs follow the inputs by ``engine.update_latency - 1`` cycles: 0 for a combinational
    unit (C3), 1 for a unit with a register stage between C3 and C3b, 2 with C3c as well (its
    inputs are presented in C3; the engine delays what it keeps beside the unit by as much)."""

    def __init__(self, e: EnginePlan, faults: FaultSet | None = None) -> None:
        self.engine = e
        self.faults = faults if faults is not None else FaultSet()
        super().__init__(UpdateSignature(e))

    def elaborate(self, platform):  # pragma: no cover - abstract
        raise NotImplementedError


class CMRUUpdate(UpdateUnit):
    """cmru / bmru / alphacmru: ``g = |c| >= |b|``; if g: ``h <- sat(eps*h + sign(c)*alpha)`` (else ``hold``).

    One stage, or two where the target asks for them (``Target.update_stages_min``): the gate,
    the new state and its clip flag registered in C3b."""

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        c, b, h = self.acc.cand, self.acc.thr, self.old.h
        if e.kind == "alphacmru":
            shifted = shift_floor(
                m, self.acc.alpha, self.params.alpha_shift, e.shift_lo, e.shift_hi, "alpha_shifted"
            )
            alpha, _ = saturate(m, shifted, e.alpha_bits, "alpha")
        else:
            alpha = self.params.alpha
        eps = 0 if self.faults.active("eps_ignored", e.index) else e.eps
        kept = {1: h, 0: 0, -1: -h}[eps]
        positive = (c > 0) if self.faults.active("sign0_flipped", e.index) else (c >= 0)
        total = Signal(signed(max(e.state_bits, e.alpha_bits) + 2))
        gate = abs_at_least(m, c, b)
        m.d.comb += total.eq(kept + Mux(positive, alpha, -alpha))
        new, clipped = saturate(
            m, total, e.state_bits, "h_new", fault=self.faults.active("sat_off_by_one", e.index)
        )
        if e.update_latency >= 2:
            assert e.update_latency == 2, e.update_latency
            gate, new, clipped = (
                _stage(m, gate, "gate"),
                _stage(m, new, "h_new"),
                _stage(m, clipped, "clipped"),
            )
        m.d.comb += [
            self.new.h.eq(new),
            self.out.eq(new),
            self.hold.eq(~gate),
            self.gate.eq(gate),
            self.saturated.eq(gate & clipped),
        ]
        return m


def _stage(m: Module, value, name: str) -> Signal:
    """``value`` registered: the boundary between two stages (C3, C3b, C3c) of an update unit."""
    reg = Signal(Value.cast(value).shape(), name=f"{name}_r")
    m.d.sync += reg.eq(value)
    return reg


class BGMinGRUUpdate(UpdateUnit):
    """bgmingru: ``u = sat(shr(A_cand))``; ``g = A_gate >= 0``; if g: ``h <- u`` (else ``hold``).

    Two stages: the variable shift in C3, the saturation in C3b."""

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        shifted = _stage(
            m,
            shift_floor(m, self.acc.cand, self.params.cand_shift, e.shift_lo, e.shift_hi, "cand_shifted"),
            "cand",
        )
        gate = _stage(m, self.acc.gate >= 0, "gate")
        u, clipped = saturate(m, shifted, e.state_bits, "u")
        m.d.comb += [
            self.new.h.eq(u),
            self.out.eq(u),
            self.hold.eq(~gate),
            self.gate.eq(gate),
            self.saturated.eq(gate & clipped),
        ]
        return m


class MinGRUUpdate(UpdateUnit):
    """mingru: hard-sigmoid gate ``z`` in ``[0, 2**gate_bits]``; ``h <- h + shr(z*(u-h), gate_bits)``.

    Three stages (the UP5K's longest path was the two-stage unit's C3, 53 LUT levels: shift,
    add, clamp): the variable shifts of both sums in C3; the candidate's saturation and the gate's
    offset and clamp and the interpolation's subtraction in C3b; its multiply, shift and add in C3c."""

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        gb = e.gate_bits
        shifted = _stage(
            m,
            shift_floor(m, self.acc.cand, self.params.cand_shift, e.shift_lo, e.shift_hi, "cand_shifted"),
            "cand",
        )
        gate_shifted = _stage(
            m,
            shift_floor(m, self.acc.gate, self.params.gate_shift, e.shift_lo, e.shift_hi, "gate_shifted"),
            "gate",
        )
        h_b = _stage(m, self.old.h, "h")
        u_now, clipped_now = saturate(m, shifted, e.state_bits, "u")
        z_now = clamp_gate(m, gate_shifted, gb, "z_now")
        diff_now = Signal(signed(e.state_bits + 1))
        m.d.comb += diff_now.eq(u_now - h_b)
        # the subtraction ends C3b, so C3c is multiply and add only (ECP5: the d = 32 minGRU at
        # P = 4 placed at 77.7 MHz with subtract, multiply and add in one cycle)
        diff, clipped, z = (
            _stage(m, diff_now, "diff"),
            _stage(m, clipped_now, "clipped"),
            _stage(m, z_now, "z"),
        )
        h = _stage(m, h_b, "h_b")
        prod = Signal(signed(e.state_bits + gb + 3))
        m.d.comb += [
            prod.eq(
                lut_multiply(Cat(z, Const(0, 1)).as_signed(), diff)
                if e.update_multiplier == "lut"
                else z * diff
            ),
            self.new.h.eq(h + (prod >> gb)),
            self.out.eq(self.new.h),
            self.gate.eq(z),
            self.saturated.eq(clipped),
        ]
        return m


class HSRUUpdate(UpdateUnit):
    """hsru: ``V <- sat(V - shr(V, leak) + shr(A_in, in_shift))``, spike ``V >= theta``, ``D ^= spike``.

    Two stages: the input current's variable shift and the leaky ``V - shr(V, leak)`` in C3; the
    saturating sum (:func:`saturate_sum`: narrow arithmetic, not the 53-bit datapath) and the
    spike in C3b."""

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        current = _stage(
            m,
            shift_floor(m, self.acc["in"], self.params.in_shift, e.shift_lo, e.shift_hi, "current"),
            "current",
        )
        old_v = self.old.v
        leaky_now = Signal(signed(e.state_bits + 1), name="leaky_now")
        m.d.comb += leaky_now.eq(old_v - (old_v >> e.leak_shift))
        leaky, d, theta = (
            _stage(m, leaky_now, "leaky"),
            _stage(m, self.old.d, "d"),
            _stage(m, self.params.theta, "theta"),
        )
        v_new, clipped = saturate_sum(m, leaky, current, e.state_bits, "v_new")
        spike = Signal()
        m.d.comb += [
            spike.eq(v_new >= theta),
            self.new.v.eq(v_new),
            self.new.d.eq(d[0] ^ spike),
            self.out.eq(d[0] ^ spike),
            self.gate.eq(spike),
            self.potential.eq(v_new),
            self.saturated.eq(clipped),
        ]
        return m


UNITS: dict[str, type[UpdateUnit]] = {
    "cmru": CMRUUpdate,
    "bgmingru": BGMinGRUUpdate,
    "mingru": MinGRUUpdate,
    "hsru": HSRUUpdate,
}
"""The update unit of each update rule (:attr:`codesign.bundle.cells.CellKind.rule`)."""


def make_update_unit(e: EnginePlan, faults: FaultSet | None = None) -> UpdateUnit:
    """The update unit of a layer engine's cell."""
    return UNITS[CELLS[e.kind].rule](e, faults)
