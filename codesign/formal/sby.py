"""Run SymbiYosys on a design with properties: the RTLIL, the ``.sby`` file, the verdict.

Every run lives in its own temporary directory (copied to ``keep`` when the caller asks, with the
counterexample or cover trace as a VCD); the tools run without a shell, in their own process
group, under a timeout (:mod:`codesign.formal.tools`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from codesign.errors import CodesignError
from codesign.formal import tools

__all__ = ["MODES", "Proof", "run_sby", "sby_file"]

MODES = ("bmc", "prove", "cover")
"""SymbiYosys modes: bounded model check, k-induction (base case and inductive step), cover."""


@dataclass
class Proof:
    """The verdict of one SymbiYosys run."""

    mode: str
    depth: int
    status: str  # PASS, FAIL, UNKNOWN, ERROR or TIMEOUT
    seconds: float
    failed: list[str] = field(default_factory=list)  # source locations of failed asserts / unreached covers
    step: int | None = None  # the cycle of the counterexample (or of the last cover reached)
    trace: Path | None = None  # the counterexample or cover VCD, when the run was kept
    log: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "PASS"


def sby_file(mode: str, depth: int, top: str = "top", solver: str = "yices") -> str:
    """The ``.sby`` text of one check of ``top.il``."""
    if mode not in MODES:
        raise CodesignError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    return "\n".join(
        [
            "[options]",
            f"mode {mode}",
            f"depth {depth}",
            "",
            "[engines]",
            f"smtbmc {solver}",
            "",
            "[script]",
            f"read_rtlil {top}.il",
            f"prep -top {top}",
            "",
            "[files]",
            f"{top}.il",
            "",
        ]
    )


_DONE = re.compile(r"DONE \((\w+), rc=\d+\)")


def _failures(log: str) -> list[str]:
    """The summary lines that name a failed assertion or an unreached cover."""
    out = set()
    for line in log.splitlines():
        if "summary:" in line and ("failed assertion" in line or "unreached cover" in line):
            out.add(line.split("summary:", 1)[1].strip())
    return sorted(out)


def _fail_step(log: str) -> int | None:
    steps = [int(s) for s in re.findall(r"Checking assertions in step (\d+)", log)]
    return steps[-1] if steps else None


def run_sby(
    design,
    *,
    mode: str,
    depth: int,
    timeout: float = 600,
    keep: Path | None = None,
    rtlil_text: str | None = None,
) -> Proof:
    """Check ``design`` (an Amaranth component carrying its properties) in SymbiYosys ``mode``.

    ``rtlil_text``: the design as RTLIL already (a yosys miter) instead of an Amaranth component.
    ``keep``: a directory that receives the run (logs, the trace as VCD)."""
    text = rtlil_text if rtlil_text is not None else rtlil.convert(design, name="top")
    with tempfile.TemporaryDirectory(prefix="codesign-formal-") as tmp:
        work = Path(tmp)
        (work / "top.il").write_text(text)
        (work / "check.sby").write_text(sby_file(mode, depth))
        start = time.monotonic()
        code, log = tools.run([tools.find("yowasp-sby"), "-f", "check.sby"], cwd=work, timeout=timeout)
        seconds = time.monotonic() - start
        done = _DONE.search(log)
        status = "TIMEOUT" if code is None else (done.group(1) if done else "ERROR")
        step = _fail_step(log) if status == "FAIL" else None
        trace = None
        if keep is not None:
            if keep.exists():
                shutil.rmtree(keep)
            shutil.copytree(work, keep)
            traces = sorted(keep.glob("check/engine_*/trace*.vcd"))
            trace = traces[0] if traces else None
    return Proof(mode, depth, status, seconds, _failures(log), step, trace, log)
