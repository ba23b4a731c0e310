"""Run ngspice decks in batch mode, one subprocess per deck, with a timeout.

Why a subprocess and not PySpice's shared-library mode: every call needs a hard timeout (a
subprocess can be killed, a hung ``libngspice`` cannot), a crashing simulation must not take the
Python process with it, and ngspice's ``Note:``/``Warning:`` lines on stderr (which PySpice 1.5
turns into exceptions) are harmless here: they are kept in the log and ignored. Errors are
recognised by ngspice's own error lines, a missing output file or a transient that stopped early.

A deck's ``.control`` block writes each analysis with ``wrdata NAME.dat vectors`` (single scale
column, vector names in a header row); :func:`run_deck` returns those tables by ``NAME``.

Each run gets a fresh working directory holding the deck and a ``.spiceinit`` (ngspice reads the
one in its working directory instead of the user's ``~/.spiceinit``, so runs are hermetic) with
``set ngbehavior=hsa``: it leaves every result unchanged (checked bit for bit on the hysteresis
sweep) but parses the binned sky130 subcircuits 6-40x faster; without it two 6-stage ladders spent
3 minutes in the parser. Mismatch draws depend on it (the order in which ``agauss`` is called):
they are reproducible with it, not comparable with draws made without.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from codesign.errors import CodesignError

NGSPICE_MIN_VERSION = 36
"""Oldest ngspice that reads the sky130 models (BSIM4 ``.param`` expressions with ``agauss``)."""

INSTALL_FIX = (
    "install it with `sudo apt-get install ngspice` (Debian 12 ships ngspice 39) or set $CODESIGN_NGSPICE"
)

SPICEINIT = "* written by codesign.analog.ngspice for this run\nset ngbehavior=hsa\n"

TIGHT_OPTIONS = ".option gmin=1e-15 abstol=1e-16 reltol=1e-4 vntol=1e-7 method=gear"
"""Tolerances for pA currents. With the defaults a DPI steady state was 7% off and tau 18% long."""

_ERROR_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*error\b",
        r"simulation interrupted due to error",
        r"could not find a valid modelname",
        r"timestep too small",
        r"unknown subckt",
        r"no such vector",
        r"^\s*fatal",
        r"operating point .*(failed|could not)",
        r"dc solution failed",
    )
]


class SimulationError(CodesignError):
    """ngspice refused a deck, failed to converge or timed out; the message names the deck and the cause."""

    exit_code = 1


@dataclass
class SimResult:
    """Tables written by ``wrdata`` (name -> {vector name -> array}), the log and the wall time."""

    tables: dict[str, dict[str, np.ndarray]]
    log: str
    wall_s: float
    deck: str = ""
    notes: list[str] = field(default_factory=list)
    cpu_s: float = float("nan")
    """CPU time of the ngspice process (user + system). On a shared machine the wall time mostly
    measures the other jobs; this measures the deck (though a busy host still inflates it)."""
    stats: dict[str, float] = field(default_factory=dict)
    """ngspice's own counters when the deck's control block ran ``rusage all``
    (:func:`control_block` with ``stats=True``; :func:`solver_stats`)."""

    def __getitem__(self, name: str) -> dict[str, np.ndarray]:
        return self.tables[name]


def find_ngspice() -> Path:
    """The ngspice executable (``$CODESIGN_NGSPICE`` or ``ngspice`` on PATH), checked once per process."""
    env = os.environ.get("CODESIGN_NGSPICE")
    exe = env or shutil.which("ngspice")
    if not exe:
        raise CodesignError(f"ngspice not found on PATH; {INSTALL_FIX}")
    path = Path(exe)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise CodesignError(f"ngspice is not an executable file; {INSTALL_FIX}", path=path)
    ngspice_version(str(path))
    return path


@lru_cache(maxsize=8)
def ngspice_version(exe: str) -> int:
    """Major version of ``exe``; refuses programs that are not ngspice or too old."""
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        raise CodesignError(f"`{exe} --version` did not answer within 30 s; {INSTALL_FIX}") from None
    except OSError as err:
        raise CodesignError(f"could not run {exe} ({err}); {INSTALL_FIX}") from None
    m = re.search(r"ngspice-(\d+)", proc.stdout + proc.stderr)
    if not m:
        first = (proc.stdout + proc.stderr).strip().splitlines()[:1] or ["no output"]
        raise CodesignError(
            f"{exe} does not look like ngspice (`--version` said {first[0]!r}); {INSTALL_FIX}"
        )
    version = int(m.group(1))
    if version < NGSPICE_MIN_VERSION:
        raise CodesignError(
            f"{exe} is ngspice {version}; the sky130 models need ngspice >= {NGSPICE_MIN_VERSION}; {INSTALL_FIX}"
        )
    return version


def read_wrdata(path: Path) -> dict[str, np.ndarray]:
    """Parse a ``wrdata`` file written with ``wr_singlescale`` and ``wr_vecnames``."""
    lines = path.read_text().splitlines()
    if not lines:
        raise SimulationError("empty data file", path=path)
    names = lines[0].split()
    rows = [ln.split() for ln in lines[1:] if ln.strip()]
    try:
        data = np.array(rows, dtype=np.float64).reshape(len(rows), -1)
    except ValueError:
        raise SimulationError("malformed data file (ragged rows or non-numbers)", path=path) from None
    if data.shape[1] != len(names):
        raise SimulationError(f"data file has {data.shape[1]} columns for {len(names)} names", path=path)
    out = {n.lower(): data[:, i] for i, n in enumerate(names)}
    out["scale"] = data[:, 0] if len(names) else np.empty(0)
    return out


_STATS = {
    "points": "Transient timepoints",
    "accepted": "Accepted timepoints",
    "rejected": "Rejected timepoints",
    "iterations": "Transient iterations",
    "equations": "Circuit Equations",
    "load_s": "Transient load time",
    "analysis_s": "Total analysis time",
}


def solver_stats(log: str) -> dict[str, float]:
    """The transient's counters from ngspice's ``rusage all`` report in ``log`` (empty without one).

    ``iterations`` (Newton iterations, each one evaluates every device) times the device count is
    the work of a deck; unlike its seconds it does not depend on what else the machine runs."""
    out = {}
    for key, label in _STATS.items():
        m = re.search(rf"^\s*{label}\s*=\s*([-+0-9.eE]+)", log, re.MULTILINE)
        if m:
            out[key] = float(m.group(1))
    return out


def _errors_in(log: str) -> list[str]:
    return [ln.strip() for ln in log.splitlines() if any(p.search(ln) for p in _ERROR_PATTERNS)]


def run_deck(
    deck: str,
    *,
    outputs: list[str],
    timeout: float = 300.0,
    name: str = "deck",
    keep_dir: Path | None = None,
    tran_stop: dict[str, float] | None = None,
) -> SimResult:
    """Run ``deck`` (a complete netlist with a ``.control`` block) and read its ``wrdata`` outputs.

    ``outputs`` are the ``NAME`` of each ``wrdata NAME.dat ...`` line; ``tran_stop`` maps an output
    to the stop time its scale must reach (a transient that gave up early is an error). The deck
    is run in a fresh temporary directory; ``keep_dir`` also receives a copy of it and its log.
    """
    exe = find_ngspice()
    t0 = time.monotonic()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="codesign-ngspice-") as tmp:
        work = Path(tmp)
        (work / f"{name}.cir").write_text(deck)
        (work / ".spiceinit").write_text(SPICEINIT)
        try:
            proc = subprocess.run(
                [str(exe), "-b", f"{name}.cir"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise SimulationError(
                f"ngspice did not finish deck '{name}' within {timeout:.0f} s (the simulator was killed); "
                "shorten the transient or raise the timeout"
            ) from None
        log = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        wall = time.monotonic() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        if keep_dir is not None:
            keep_dir.mkdir(parents=True, exist_ok=True)
            (keep_dir / f"{name}.cir").write_text(deck)
            (keep_dir / f"{name}.log").write_text(log)
        errors = _errors_in(proc.stdout + "\n" + proc.stderr)
        if errors or proc.returncode != 0:
            why = errors[0] if errors else f"exit code {proc.returncode}"
            raise SimulationError(f"ngspice failed on deck '{name}': {why}")
        tables = {}
        for out in outputs:
            path = work / f"{out}.dat"
            if not path.is_file():
                raise SimulationError(
                    f"ngspice wrote no '{out}.dat' for deck '{name}' (analysis did not run)"
                )
            tables[out] = read_wrdata(path)
        for out, stop in (tran_stop or {}).items():
            scale = tables[out]["scale"]
            if scale.size == 0 or scale[-1] < stop * (1 - 1e-6):
                reached = scale[-1] if scale.size else 0.0
                raise SimulationError(
                    f"transient of deck '{name}' stopped at {reached:.4g} s of {stop:.4g} s"
                )
        notes = [
            ln.strip()
            for ln in proc.stderr.splitlines()
            if ln.strip().lower().startswith(("note", "warning"))
        ]
    return SimResult(tables, log, wall, deck, notes, cpu, solver_stats(proc.stdout))


def control_block(
    analyses: list[tuple[str, str, list[str]]], extra: list[str] | None = None, *, stats: bool = False
) -> str:
    """A ``.control`` block running ``(analysis command, output name, vectors)`` in order, then ``quit 0``.

    ``stats``: end with ``rusage all`` (time points, rejected steps, Newton iterations: read back by
    :func:`solver_stats` into :attr:`SimResult.stats`)."""
    lines = [".control", "set wr_singlescale", "set wr_vecnames", "option numdgt=12"]
    lines += extra or []
    for cmd, out, vecs in analyses:
        lines += [cmd, f"wrdata {out}.dat " + " ".join(vecs)]
    lines += (["rusage all"] if stats else []) + ["quit 0", ".endc"]
    return "\n".join(lines) + "\n"
