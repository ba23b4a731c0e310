"""The checks of ``codesign analog-check`` as a registry: name -> :class:`Check` (spec, run, summarize).

A check is three small functions: ``spec(options)`` the JSON-able inputs that decide its figures
(its cache key hashes them), ``run(options, ctx, deps, say)`` the measurement (ngspice decks
through :class:`~codesign.analog.sim.Ctx`), and ``summarize(measurement, options, out)`` which
writes the check's CSV / PNG files into ``out`` and returns its :class:`Figures` (pass / fail,
the metrics that go into ``results.json``, the one-line detail). ``needs`` are checks whose
results it reads and that run with it; ``uses`` are read when they run too; ``target`` is what
it checks against, for the report's table.

:func:`execute` runs one check in this process or on a Dask worker, from the cache where the key
matches: ``CACHE/<name>-<key>.json`` holds the figures with their key (the SHA-256 of the
check's spec, the keys of the checks it reads and :func:`code_fingerprint`: the sources of
:mod:`codesign.analog`, the ngspice and sky130 versions; the file name holds its first 16 hex
digits, so quick and full runs keep their own entries), and ``CACHE/<name>-<key>/`` its files.
Failures are not cached, so the next run retries them.

Adding a check: a module with its spec / run / summarize, and one line in :data:`CHECKS`
(:mod:`codesign.analog.check_list`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codesign.analog.sim import Ctx
from codesign.atomic import write_text

Say = Callable[[str], None]


@dataclass(frozen=True)
class CheckOptions:
    """What ``analog-check`` was asked to measure (JSON-able: it travels to Dask workers).

    ``bundle`` / ``inputs``: paths (``None``: the random default bundles / their inputs);
    ``seeds``: the Monte Carlo draws actually run (at most 2 when ``quick``); ``decks``: where
    every deck and log is kept (``None``: nowhere)."""

    quick: bool = False
    seeds: int = 20
    corners: tuple[str, ...] = ()
    stages: int = 4
    bundle: str | None = None
    inputs: str | None = None
    sequences: int | None = None
    steps: int | None = None
    neurons: int | None = None
    timeout: float = 600.0
    decks: str | None = None


@dataclass
class Figures:
    """A check's outcome: ``passed`` (None: informational), ``metrics`` (its ``results.json``
    entry and what dependent checks read), ``detail`` (the summary line), and ``results``: the
    top-level ``results.json`` entries it adds (default ``{name: metrics}``)."""

    passed: bool | None
    metrics: Any
    detail: str
    results: dict[str, Any] | None = None


@dataclass(frozen=True)
class Check:
    """One check: its spec, its measurement, its figures (see the module docstring)."""

    name: str
    spec: Callable[[CheckOptions], dict]
    run: Callable[[CheckOptions, Ctx, dict, Say], Any]
    summarize: Callable[[Any, CheckOptions, Path], Figures]
    needs: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    target: str = ""


@dataclass
class Outcome:
    """What :func:`execute` returns: the figures, the time they took, and whether they were cached."""

    name: str
    figures: Figures
    wall_s: float
    sim_wall_s: float = 0.0
    decks: int = 0
    cached: bool = False
    key: str = ""
    files: list[str] = field(default_factory=list)


@functools.cache
def code_fingerprint() -> str:
    """SHA-256 of what decides a check's figures besides its spec: the :mod:`codesign.analog`
    sources, the ngspice version and the sky130 model version."""
    from codesign.analog.ngspice import find_ngspice, ngspice_version
    from codesign.analog.pdk import SKY130_VERSION

    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"ngspice={ngspice_version(str(find_ngspice()))}\0sky130={SKY130_VERSION}".encode())
    return h.hexdigest()


def file_digest(path: str | None) -> str | None:
    """SHA-256 of a file, or of a directory's files (a bundle); ``None`` for ``None``."""
    if path is None:
        return None
    p = Path(path)
    h = hashlib.sha256()
    for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
        if f.is_file():
            h.update(f.relative_to(p).as_posix().encode() if p.is_dir() else b"")
            h.update(f.read_bytes())
    return h.hexdigest()


def check_key(check: Check, options: CheckOptions, dep_keys: dict[str, str]) -> str:
    """The cache key of ``check``: its spec, the keys of the checks it reads, the code fingerprint."""
    text = json.dumps({"check": check.name, "spec": check.spec(options), "deps": dep_keys}, sort_keys=True)
    return hashlib.sha256((text + code_fingerprint()).encode()).hexdigest()


def plain(obj: Any) -> Any:
    """``obj`` as JSON values (numpy scalars as Python numbers, dataclasses as dicts); arrays inside
    dicts are dropped, as ``results.json`` drops them; NaN stays NaN."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items() if not isinstance(v, np.ndarray)}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dataclass_fields__"):
        return plain(asdict(obj))
    return obj


def _cached(path: Path, key: str) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key or "figures" not in record:
        return None
    return record


def _copy_files(src: Path, out: Path) -> list[str]:
    names = []
    for f in sorted(src.iterdir()) if src.is_dir() else []:
        if f.is_file():
            shutil.copyfile(f, out / f.name)
            names.append(f.name)
    return names


def execute(
    check: Check,
    options: CheckOptions,
    out: str,
    deps: dict[str, Any],
    *,
    cache_key: str = "",
    cache: str | None = None,
    say: Say | None = None,
) -> Outcome:
    """Run ``check`` (or take it from ``cache`` where ``key`` matches) and write its files into ``out``.

    ``deps``: the ``results.json`` entries of the checks it reads; ``cache_key``: its
    :func:`check_key`. Plain arguments, so a Dask
    worker runs it as well as this process."""
    out_dir = Path(out)
    t0 = time.monotonic()
    entry = Path(cache) / f"{check.name}-{cache_key[:16]}" if cache is not None else None
    if entry is not None:
        record = _cached(entry.with_suffix(".json"), cache_key)
        if record is not None:
            files = _copy_files(entry, out_dir)
            figures = Figures(**record["figures"])
            return Outcome(
                check.name, figures, time.monotonic() - t0, cached=True, key=cache_key, files=files
            )
    ctx = Ctx(timeout=options.timeout, keep_dir=Path(options.decks) if options.decks else None)
    measurement = check.run(options, ctx, deps, say or (lambda _msg: None))
    staging = entry if entry is not None else out_dir
    if entry is not None:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    figures = check.summarize(measurement, options, staging)
    figures.metrics = plain(figures.metrics)
    figures.results = plain(figures.results) if figures.results is not None else None
    files = _copy_files(staging, out_dir) if entry is not None else []
    outcome = Outcome(
        check.name, figures, time.monotonic() - t0, ctx.sim_wall_s, ctx.decks, key=cache_key, files=files
    )
    if entry is not None and figures.passed is not False and not _has_error(figures.metrics):
        record = {"key": cache_key, "figures": asdict(figures)}
        write_text(entry.with_suffix(".json"), json.dumps(record, indent=1) + "\n")
    return outcome


def _has_error(metrics: Any) -> bool:
    return isinstance(metrics, dict) and "error" in metrics
