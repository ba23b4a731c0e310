"""Arithmetic properties of one component: the CMRU family's update unit against its rule.

The unit (``codesign.hw.update.CMRUUpdate``) is combinational on a build for no chip, so a check
of depth 1 covers every input: every candidate sum ``c``, threshold sum ``b``, parameter ``alpha``
and old state ``h`` of the engine's widths. The rule is restated here from
``docs/integer-semantics.md`` with plain comparisons (no shared helper with the RTL)::

    g      = |c| >= |b|
    h_new  = clip(eps * h + (alpha if c >= 0 else -alpha), state_bits)   when g, else hold
"""

from __future__ import annotations

from amaranth.hdl import Assert, Module, Mux, Signal, signed
from amaranth.lib import wiring

from codesign.errors import CodesignError
from codesign.hw.faults import FaultSet
from codesign.hw.plan import EnginePlan
from codesign.hw.update import CMRUUpdate, UpdateSignature

__all__ = ["UNIT_KINDS", "CMRUUnitHarness"]

UNIT_KINDS = ("cmru", "bmru")
"""Cell kinds whose update unit has a restated rule here (alphacmru's alpha is a shifted sum)."""


class CMRUUnitHarness(wiring.Component):
    """The update unit of engine ``e`` (with ``faults`` built in), its inputs free, its outputs
    asserted against the rule."""

    def __init__(self, e: EnginePlan, faults: FaultSet | None = None) -> None:
        if e.kind not in UNIT_KINDS:
            raise CodesignError(f"the update-unit proof covers {', '.join(UNIT_KINDS)}, not {e.kind}")
        if e.update_latency != 1:
            raise CodesignError("the update-unit proof takes a one-stage unit (a build for no chip)")
        self.engine = e
        self.unit = CMRUUpdate(e, faults)
        members = UpdateSignature(e).members
        super().__init__({name: members[name] for name in ("acc", "params", "old")})

    def elaborate(self, platform):
        m = Module()
        e, unit = self.engine, self.unit
        m.submodules.unit = unit
        m.d.comb += [unit.acc.eq(self.acc), unit.params.eq(self.params), unit.old.eq(self.old)]
        c, b, h, alpha = self.acc.cand, self.acc.thr, self.old.h, self.params.alpha
        wide = signed(max(e.acc_bits, e.state_bits, e.alpha_bits) + 3)
        abs_c, abs_b = Signal(wide), Signal(wide)
        m.d.comb += [abs_c.eq(Mux(c < 0, -c, c)), abs_b.eq(Mux(b < 0, -b, b))]
        gate = abs_c >= abs_b
        total = Signal(wide)
        m.d.comb += total.eq(e.eps * h + Mux(c >= 0, alpha, -alpha))
        lo, hi = -(1 << (e.state_bits - 1)), (1 << (e.state_bits - 1)) - 1
        expect = Mux(total > hi, hi, Mux(total < lo, lo, total))
        m.d.comb += [
            Assert(unit.hold == ~gate, "the gate is |c| >= |b|"),
            Assert(unit.gate == gate, "the reported gate is the rule's"),
        ]
        with m.If(gate):
            m.d.comb += [
                Assert(unit.new.h == expect, "the new state is clip(eps*h + sign(c)*alpha)"),
                Assert(unit.saturated == ((total > hi) | (total < lo)), "saturated says the clip acted"),
            ]
        return m
