"""The scoreboard: expected against actual beats, in order, and the first mismatch with its place.

:class:`InOrderChecker` pairs the golden model's expected beats with the monitors' actual ones and
compares them with a pluggable function (:func:`compare_trace`, :func:`compare_result`); every
difference is a :class:`Mismatch` (sequence, step, layer, neuron, signal, expected, got) that the
:class:`Scoreboard` counts, keeping and logging the first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "InOrderChecker",
    "Mismatch",
    "ResultBeat",
    "Scoreboard",
    "TraceBeat",
    "compare_result",
    "compare_trace",
]


@dataclass
class Mismatch:
    sequence: int | None
    step: int | None
    layer: str
    neuron: int | None
    signal: str
    expected: object
    got: object

    def line(self) -> str:
        where = [
            f"sequence {self.sequence}" if self.sequence is not None else None,
            f"step {self.step}" if self.step is not None else None,
            self.layer,
            f"neuron {self.neuron}" if self.neuron is not None and self.layer != "readout" else None,
            f"class {self.neuron}" if self.neuron is not None and self.layer == "readout" else None,
        ]
        head = ", ".join(w for w in where if w)
        return f"{head}, signal {self.signal}: expected {self.expected}, got {self.got}"

    def to_dict(self) -> dict:
        return {
            "sequence": self.sequence,
            "step": self.step,
            "layer": self.layer,
            "neuron": self.neuron,
            "signal": self.signal,
            "expected": str(self.expected),
            "got": str(self.got),
            "line": self.line(),
        }


class InOrderChecker:
    """Pairs expected and actual transactions in order and compares them with ``compare``.

    ``compare(expected, actual)`` returns the mismatches (empty when they agree).
    """

    def __init__(
        self, name: str, scoreboard: Scoreboard, compare: Callable[[object, object], list[Mismatch]]
    ):
        self.name = name
        self.scoreboard = scoreboard
        self.compare = compare
        self.expected: deque = deque()
        self.actual: deque = deque()
        self.checked = 0

    def add_expected(self, item) -> None:
        self.expected.append(item)
        self._drain()

    def add_actual(self, item) -> None:
        self.actual.append(item)
        self._drain()

    def _drain(self) -> None:
        while self.expected and self.actual:
            exp, got = self.expected.popleft(), self.actual.popleft()
            self.checked += 1
            for mm in self.compare(exp, got):
                self.scoreboard.report(mm)

    def flush(self) -> None:
        self.expected.clear()
        self.actual.clear()

    def finish(self) -> None:
        """Whatever is left unpaired is a missing or an extra beat."""
        if self.expected:
            exp = self.expected[0]
            self.scoreboard.report(
                Mismatch(exp.sequence, exp.step, exp.layer, None, f"{self.name} beat", "a beat", "none")
            )
        if self.actual:
            self.scoreboard.report(
                Mismatch(None, None, self.name, None, f"{self.name} beat", "no further beat", "an extra beat")
            )
        self.flush()


@dataclass
class Scoreboard:
    log: object
    mismatches: int = 0
    first: Mismatch | None = None

    def report(self, mismatch: Mismatch) -> None:
        self.mismatches += 1
        if self.first is None:
            self.first = mismatch
            self.log.error("first mismatch: %s", mismatch.line())


@dataclass
class TraceBeat:
    sequence: int
    step: int
    layer: str
    group: int
    state: list[int]
    gate: list[int] | None  # None: not compared (a selective layer's held group)
    step_end: int
    seq_end: int
    lanes: int  # lanes that hold a neuron (the rest are padding)
    base: int  # neuron index of lane 0


@dataclass
class ResultBeat:
    sequence: int
    step: int
    layer: str
    group: int
    logits: list[int]
    final: int
    class_index: int | None
    seq_end: int
    lanes: int
    base: int


def _x(v):
    return "X" if v is None else v


def compare_trace(exp: TraceBeat, got: dict) -> list[Mismatch]:
    out = []
    for signal in ("group", "step_end", "seq_end"):
        if getattr(exp, signal) != got[signal]:
            out.append(
                Mismatch(
                    exp.sequence, exp.step, exp.layer, None, signal, getattr(exp, signal), _x(got[signal])
                )
            )
    for lane in range(exp.lanes):
        for signal, values in (("state", exp.state), ("gate", exp.gate)):
            if values is None:
                continue
            g = got[f"{signal}[{lane}]"]
            if values[lane] != g:
                out.append(
                    Mismatch(exp.sequence, exp.step, exp.layer, exp.base + lane, signal, values[lane], _x(g))
                )
    return out


def compare_result(exp: ResultBeat, got: dict) -> list[Mismatch]:
    out = []
    for signal in ("group", "final", "seq_end"):
        if getattr(exp, signal) != got[signal]:
            out.append(
                Mismatch(
                    exp.sequence, exp.step, "readout", None, signal, getattr(exp, signal), _x(got[signal])
                )
            )
    for lane in range(exp.lanes):
        g = got[f"logits[{lane}]"]
        if exp.logits[lane] != g:
            out.append(
                Mismatch(exp.sequence, exp.step, "readout", exp.base + lane, "logit", exp.logits[lane], _x(g))
            )
    if exp.final and exp.class_index != got["class_index"]:
        out.append(
            Mismatch(
                exp.sequence, exp.step, "readout", None, "class_index", exp.class_index, got["class_index"]
            )
        )
    return out
