"""The cell kinds of the hardware family, declared once.

Every stage that has to know what a cell kind *is* (the bundle schema and its array table, the
random bundles, the hardware plan, the RTL update units, the regression and its coverage) reads
:data:`CELLS`. Adding a kind means an entry here, its update rule (golden model, torch deployed
model, RTL update unit) and its tests: ``docs/contributing.md`` lists the files.

The golden model keeps its own table of matrix counts on purpose (it is the reference and must not
share the generator's code); ``tests/test_cell_registry.py`` ties the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CELLS", "CELL_NAMES", "CellKind", "cells_with_rule"]

ParamWidth = Literal["alpha_bits", "state_bits", "shift"]
"""Where a per-neuron parameter's width comes from: a layer field, or the spec's ``SHIFT_BITS``."""


@dataclass(frozen=True)
class CellKind:
    """What the hardware family knows about one cell kind."""

    name: str
    rule: Literal["cmru", "bgmingru", "mingru", "hsru"]
    """The update rule (``docs/integer-semantics.md``): kinds sharing a rule share an RTL update unit."""
    matrices: tuple[str, ...]
    """Weight matrices ``w_<name>`` (d x m) with biases ``b_<name>``, in the order of a weight word."""
    params: dict[str, ParamWidth]
    """Per-neuron parameters the update stage reads (besides the biases), with their widths."""
    state_fields: tuple[str, ...] = ("h",)
    """Per-neuron state kept in the state memory."""
    output_field: str = "h"
    """The state field the layer passes on."""
    potential_field: str | None = None
    """A state field the trace reports besides the output (HSRU's membrane potential)."""
    eps: tuple[int, ...] = (0,)
    """The ``eps`` values a layer of this kind may declare."""
    binary_output: bool = False
    """The layer passes on a 0/1 digital state (2-bit signed) instead of its state."""
    graded_gate: bool = False
    """The gate is ``z_int`` in ``[0, 2**gate_bits]`` rather than 0/1."""
    gate_bins: tuple[str, ...] = ("open", "closed")
    """Coverage bins of the gate the trace reports."""
    update_stages: int = 1
    """Pipeline stages of the RTL update unit (C3; C3 and C3b; C3, C3b and C3c): the plan's cycle
    model reads it."""
    update_products: int = 0
    """Multiplies one lane's update unit does per group (minGRU's ``z * (u - h)``): the plan counts
    them against the target's hard multipliers, or has them shift-and-add."""
    description: str = ""

    @property
    def has_eps(self) -> bool:
        return len(self.eps) > 1


CELLS: dict[str, CellKind] = {
    kind.name: kind
    for kind in (
        CellKind(
            "cmru",
            "cmru",
            ("cand", "thr"),
            {"alpha": "alpha_bits"},
            eps=(-1, 0, 1),
            description="h <- sat(eps*h + sign(c)*alpha) where |c| >= |b|",
        ),
        CellKind(
            "bmru",
            "cmru",
            ("cand", "thr"),
            {"alpha": "alpha_bits"},
            eps=(0,),
            description="the CMRU with eps = 0: a binary (+/-alpha) memory",
        ),
        CellKind(
            "alphacmru",
            "cmru",
            ("cand", "thr", "alpha"),
            {"alpha_shift": "shift"},
            eps=(-1, 0, 1),
            description="the CMRU with an input-dependent alpha_t = sat(shr(A_alpha))",
        ),
        CellKind(
            "bgmingru",
            "bgmingru",
            ("cand", "gate"),
            {"cand_shift": "shift"},
            update_stages=2,
            description="minGRU with a binary gate: h <- u where A_gate >= 0",
        ),
        CellKind(
            "mingru",
            "mingru",
            ("cand", "gate"),
            {"cand_shift": "shift", "gate_shift": "shift"},
            graded_gate=True,
            gate_bins=("z=0", "0<z<1", "z=1"),
            update_stages=3,
            update_products=1,
            description="h <- h + shr(z*(u-h), gate_bits), hard-sigmoid gate z",
        ),
        CellKind(
            "hsru",
            "hsru",
            ("in",),
            {"in_shift": "shift", "theta": "state_bits"},
            state_fields=("v", "d"),
            output_field="d",
            potential_field="v",
            binary_output=True,
            gate_bins=("spike", "no spike"),
            update_stages=2,
            description="leaky potential V, spike V >= theta toggles the digital state D",
        ),
    )
}
"""Every cell kind of the hardware family, by name."""

CELL_NAMES: tuple[str, ...] = tuple(CELLS)


def cells_with_rule(rule: str) -> tuple[str, ...]:
    """The kinds that update by ``rule`` (e.g. the CMRU family: ``cells_with_rule("cmru")``)."""
    return tuple(name for name, kind in CELLS.items() if kind.rule == rule)
