"""Resumable stages: a stage reruns only when what it reads has changed.

A flow is an ordered list of :class:`Stage`. Each stage is one ``codesign`` command run as a
subprocess (so a stage sees exactly what a user typing the command sees, and a crash in one tool
cannot take the flow's own process down), with its output in ``FOLDER/logs/<stage>.log``. Before
it runs, the stage's *key* is computed: a SHA-256 over its command line and the contents of the
files it reads. ``FOLDER/flow.json`` records the key of every stage that finished; a stage whose key
and outputs are unchanged is skipped. So a stopped flow resumes at the first stage that did not
finish, and an edited recipe reruns from training while an unchanged one reruns nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codesign.atomic import write_text
from codesign.errors import CodesignError

__all__ = ["Stage", "StageOutcome", "StageFailed", "fingerprint", "run_stages"]

STATE_FILE = "flow.json"


class StageFailed(CodesignError):
    """A stage's command exited with an error; the message ends with the tail of its log."""

    exit_code = 1


@dataclass(frozen=True)
class Stage:
    """One step of a flow.

    ``argv`` is the command after ``codesign`` (``["train", "r.yaml", "--out", "F/run"]``);
    ``reads`` are the files and folders whose contents decide whether it must rerun; ``writes``
    are the paths it makes (all must exist for a skip); ``exit_ok`` lists the exit codes that
    count as done (``codesign sim`` exits 1 on a mismatch, which is a result, not a crash).
    """

    name: str
    argv: list[str]
    reads: list[Path] = field(default_factory=list)
    writes: list[Path] = field(default_factory=list)
    timeout_s: float = 3600
    exit_ok: tuple[int, ...] = (0,)
    program: tuple[str, ...] = (sys.executable, "-m", "codesign")


@dataclass(frozen=True)
class StageOutcome:
    name: str
    status: str  # "ran" or "skipped"
    seconds: float
    exit_code: int
    log: Path


def _hash_path(digest: hashlib._Hash, path: Path) -> None:
    if path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(child.relative_to(path)).encode())
            digest.update(child.read_bytes())
    elif path.is_file():
        digest.update(path.read_bytes())
    else:
        digest.update(b"<missing>")


def fingerprint(argv: Sequence[str], reads: Iterable[Path]) -> str:
    """SHA-256 over a command line and the contents of the paths it reads (folders recursively)."""
    digest = hashlib.sha256(json.dumps(list(argv)).encode())
    for path in reads:
        digest.update(str(path).encode())
        _hash_path(digest, Path(path))
    return digest.hexdigest()


def _load_state(folder: Path) -> dict:
    path = folder / STATE_FILE
    if not path.is_file():
        return {}
    try:
        state = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}  # a damaged record only costs a rerun
    return state if isinstance(state, dict) else {}


def _tail(log: Path, lines: int = 15) -> str:
    text = log.read_text(errors="replace").splitlines() if log.is_file() else []
    return "\n".join(text[-lines:])


def _run(stage: Stage, log: Path) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*stage.program, *stage.argv]
    env = {**os.environ, "COLUMNS": "160"}  # tables in logs keep their lines whole
    with log.open("w") as out:
        out.write("$ codesign " + " ".join(stage.argv) + "\n")
        out.flush()
        try:
            done = subprocess.run(
                cmd, stdout=out, stderr=subprocess.STDOUT, timeout=stage.timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            raise StageFailed(
                f"flow stage {stage.name!r} ran past its {stage.timeout_s:g} s limit; log: {log}"
            ) from None
    return done.returncode


def run_stages(
    stages: Sequence[Stage],
    folder: Path,
    *,
    progress: Callable[[str], None] = print,
    force: Iterable[str] = (),
) -> list[StageOutcome]:
    """Run ``stages`` in order in ``folder``, skipping those whose inputs are unchanged.

    ``force`` names stages to rerun whatever their record says. The record of a stage is written
    only after it succeeds. A stage that reruns needs no cascade: the stages after it read its
    outputs, so their keys change with those outputs' contents (and stay the same, a skip, when
    the rerun wrote the same bytes).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = _load_state(folder)
    forced = set(force)
    unknown = forced - {stage.name for stage in stages}
    if unknown:
        raise CodesignError(
            f"--force {', '.join(sorted(unknown))}: no such stage (stages: {', '.join(s.name for s in stages)})"
        )
    outcomes: list[StageOutcome] = []
    for i, stage in enumerate(stages, 1):
        log = folder / "logs" / f"{stage.name}.log"
        key = fingerprint(stage.argv, stage.reads)
        done = state.get(stage.name, {})
        head = f"[{i}/{len(stages)}] {stage.name}"
        if (
            stage.name not in forced
            and done.get("key") == key
            and all(Path(p).exists() for p in stage.writes)
        ):
            progress(f"{head}: unchanged, skipped")
            outcomes.append(StageOutcome(stage.name, "skipped", 0.0, int(done.get("exit_code", 0)), log))
            continue
        progress(f"{head}: codesign {' '.join(stage.argv)}")
        start = time.monotonic()
        code = _run(stage, log)
        seconds = time.monotonic() - start
        if code not in stage.exit_ok:
            raise StageFailed(
                f"flow stage {stage.name!r} failed (exit {code}) after {seconds:.1f} s; log {log}:\n{_tail(log)}"
            )
        missing = [str(p) for p in stage.writes if not Path(p).exists()]
        if missing:
            raise StageFailed(f"flow stage {stage.name!r} did not write {', '.join(missing)}; log: {log}")
        state[stage.name] = {"key": key, "exit_code": code, "seconds": round(seconds, 3)}
        write_text(folder / STATE_FILE, json.dumps(state, indent=2) + "\n")
        progress(f"{head}: done in {seconds:.1f} s")
        outcomes.append(StageOutcome(stage.name, "ran", seconds, code, log))
    return outcomes
