"""What one testbench run does: its tests and its settings, declared once.

:func:`codesign.verify.runner.run_sim` writes a :class:`Job` as JSON and the cocotb testbench
(``verification/tb_bench.py``) reads it back; :data:`TESTS` names the ``@cocotb.test`` functions of
``verification/tb_accelerator.py`` (``tests/test_verify_runner.py`` checks the two lists agree),
and the regression's tiers are subsets of it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

__all__ = ["REGRESSION_TESTS", "TESTS", "Job"]

TESTS = ("random_sequences", "directed_corners", "reset_mid_sequence", "long_sequence")
"""The testbench's cocotb tests, in the order they run."""

REGRESSION_TESTS = tuple(t for t in TESTS if t != "long_sequence")
"""The tests every design of ``make sim`` runs (the long sequence runs on one design of its own)."""


@dataclass
class Job:
    """Settings of one simulator run.

    bundles: bundle directories loaded one after another through ``config`` (runtime builds;
    empty: the build's own bundle, baked or loaded); vectors: random sequences per bundle (with
    ``inputs``: the first N of the file, 0 = all); max_steps: longest random sequence; seed: of the
    sequences, gaps and back-pressure; gaps: random valid gaps and back-pressure; long_steps:
    length of the long-sequence test's one sequence; reset_sequences: sequences the reset test
    interrupts; stop_on_mismatch: end each test at its first mismatch (the mutation check);
    warm_up: unchecked dense sequences and a reset before the first checked one.
    """

    bundles: list[str] = field(default_factory=list)
    vectors: int = 20
    max_steps: int = 40
    seed: int = 0
    inputs: str | None = None
    gaps: bool = True
    long_steps: int = 10000
    reset_sequences: int = 3
    stop_on_mismatch: bool = False
    warm_up: bool = False

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def read(cls, path: Path) -> Job:
        data = json.loads(Path(path).read_text())
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown job setting(s) {unknown}; known: {sorted(known)}")
        return cls(**data)
