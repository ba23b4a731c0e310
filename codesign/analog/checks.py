"""``codesign analog-check``: characterise the analog cells in ngspice and compare them with the golden model.

:func:`analog_check` runs the checks of the registry (:data:`codesign.analog.check_list.REGISTRY`:
hysteresis, retention, DPI, DPI corners, native CMRU ladder, BMRU layer and native CMRU agreement
with the golden model, power, robustness), in this process or on Dask, each from its cache where
its key matches (:mod:`codesign.analog.check_registry`), writes CSV + PNG + ``summary.md`` +
``results.json`` into a directory and returns a :class:`Report`. ``quick`` keeps everything to DC
sweeps and short transients (tests, CI); the full run adds >= 100 ms retention holds, a 4-stage
native CMRU (CMRU Fig. 4C), Monte Carlo mismatch, process corners and longer golden-model traces.

The measurements themselves live below: :mod:`~codesign.analog.measure_cells`,
:mod:`~codesign.analog.measure_ladder`, :mod:`~codesign.analog.trace`,
:mod:`~codesign.analog.ladder_trace`; their names are re-exported here for scripts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from codesign.analog.check_inputs import (
    default_agreement_bundle,
    default_ladder_bundle,
    load_check_bundle,
    reference_bundle,
    sequence_inputs,
    write_reference_netlists,
)
from codesign.analog.check_list import REGISTRY
from codesign.analog.check_registry import CheckOptions, Outcome, check_key, execute
from codesign.analog.ladder_trace import LadderTraceResult, ladder_ranges, run_ladder_trace
from codesign.analog.measure_cells import (
    PAPER,
    PAPER_POWER_NW,
    CellBias,
    calibrate_dpi,
    dpi_corners,
    measure_dpi,
    measure_hysteresis,
    measure_retention,
)
from codesign.analog.measure_ladder import ladder_program, measure_ladder, measure_ladder_thresholds
from codesign.analog.sim import Ctx, crossing, time_avg
from codesign.analog.trace import TraceResult, flatten_sequences, margins, run_bundle_trace
from codesign.errors import CodesignError

__all__ = [
    "CHECKS",
    "PAPER",
    "PAPER_POWER_NW",
    "CellBias",
    "CheckResult",
    "Ctx",
    "LadderTraceResult",
    "Report",
    "TraceResult",
    "analog_check",
    "calibrate_dpi",
    "crossing",
    "default_agreement_bundle",
    "default_ladder_bundle",
    "dpi_corners",
    "flatten_sequences",
    "ladder_program",
    "ladder_ranges",
    "load_check_bundle",
    "margins",
    "measure_dpi",
    "measure_hysteresis",
    "measure_ladder",
    "measure_ladder_thresholds",
    "measure_retention",
    "reference_bundle",
    "run_bundle_trace",
    "run_ladder_trace",
    "sequence_inputs",
    "time_avg",
    "write_reference_netlists",
]


@dataclass
class CheckResult:
    name: str
    passed: bool | None  # None: informational
    metrics: dict
    wall_s: float
    detail: str = ""
    cached: bool = False
    target: str = ""


@dataclass
class Report:
    """What :func:`analog_check` measured; ``passed`` is False if any pass/fail check failed."""

    out_dir: Path
    results: list[CheckResult] = field(default_factory=list)
    wall_s: float = 0.0
    sim_wall_s: float = 0.0
    decks: int = 0
    files: list[Path] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed is not False for r in self.results)

    def get(self, name: str) -> CheckResult:
        return next(r for r in self.results if r.name == name)

    def lines(self) -> list[str]:
        out = []
        for r in self.results:
            flag = {True: "PASS", False: "FAIL", None: "info"}[r.passed]
            out.append(
                f"{flag:4}  {r.name:<22} {r.detail}  ({r.wall_s:.1f} s{', cached' if r.cached else ''})"
            )
        return out


CHECKS = tuple(REGISTRY)
"""Names of the checks :func:`analog_check` can run (``only`` selects a subset)."""


def _options(
    quick: bool,
    bundle_dir: Path | None,
    seeds: int,
    corners: tuple[str, ...] | None,
    stages: int | None,
    inputs: Path | None,
    sequences: int | None,
    steps: int | None,
    neurons: int | None,
    timeout: float,
    decks: Path | None,
) -> CheckOptions:
    """The checked options of one run (a bad value is one :class:`CodesignError`)."""
    from codesign.analog.pdk import check_corner

    corners = corners if corners is not None else (() if quick else ("ss", "ff", "sf", "fs"))
    for c in corners:
        check_corner(c)
    if seeds < 0:
        raise CodesignError(f"--seeds must be >= 0, got {seeds}")
    stages = stages or (2 if quick else 4)
    if not 1 <= stages <= 16:
        raise CodesignError(f"--stages must be between 1 and 16, got {stages}")
    if neurons is not None and neurons < 1:
        raise CodesignError(f"--neurons must be >= 1, got {neurons}")
    load_check_bundle(bundle_dir)  # refuses eps -1 before anything runs
    return CheckOptions(
        quick=quick,
        seeds=min(seeds, 2) if quick else seeds,
        corners=tuple(corners),
        stages=stages,
        bundle=str(Path(bundle_dir).resolve()) if bundle_dir is not None else None,
        inputs=str(Path(inputs).resolve()) if inputs is not None else None,
        sequences=sequences,
        steps=steps,
        neurons=neurons,
        timeout=timeout,
        decks=str(decks) if decks is not None else None,
    )


def selection(only: tuple[str, ...] | None, quick: bool) -> tuple[str, ...]:
    """The checks to run, in registry order: ``only`` (default: all, less ``ladder_agreement`` when
    quick) and what they need."""
    chosen = tuple(only) if only else tuple(c for c in CHECKS if not (quick and c == "ladder_agreement"))
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise CodesignError(f"unknown check(s) {unknown}; choose from {', '.join(CHECKS)}")
    wanted = set(chosen) | {n for c in chosen for n in REGISTRY[c].needs}
    return tuple(c for c in CHECKS if c in wanted)


def analog_check(
    out_dir: Path,
    *,
    quick: bool = False,
    bundle_dir: Path | None = None,
    seeds: int = 20,
    corners: tuple[str, ...] | None = None,
    stages: int | None = None,
    inputs: Path | None = None,
    sequences: int | None = None,
    steps: int | None = None,
    neurons: int | None = None,
    only: tuple[str, ...] | None = None,
    netlists_dir: Path | None = None,
    timeout: float = 600.0,
    keep_decks: bool = True,
    progress: Callable[[str], None] | None = None,
    cache: Path | None = None,
    workers: int = 0,
    scheduler: str | None = None,
) -> Report:
    """Run the analog characterisation and write CSV, PNG and ``summary.md`` into ``out_dir``.

    ``quick``: DC sweeps and short transients only. ``bundle_dir``: a bundle whose neurons are
    compared with the golden model: bmru / eps 0 as BMRU cells (``agreement``), cmru eps 1 as native
    CMRU ladders (``ladder_agreement``); the other check uses :func:`default_agreement_bundle` /
    :func:`default_ladder_bundle`. ``inputs``: its test inputs ``.npy`` (N, T, M), integer or float
    (default: the bundle's test split if its provenance names a task, else random integer inputs);
    ``sequences`` x ``steps`` of them are played (ladders: one sequence). ``neurons``: compare only
    the first ones (default: all BMRU neurons, 2 ladders). ``seeds``: Monte Carlo mismatch draws
    (seed k is ``.option seed=k``, reproducible). ``corners``: process corners besides tt (default
    ss, ff, sf, fs; none when quick). ``stages``: native CMRU ladder length (default 4; 2 when
    quick). ``only``: a subset of :data:`CHECKS` (with the checks they need). ``netlists_dir``:
    also write the reference netlists there. Every simulator call has a timeout (``timeout``
    seconds, longer for long transients). ``cache``: a directory of finished checks, reused where
    their key matches (``None``: every check runs). ``workers`` / ``scheduler``: run the checks
    on a local Dask cluster of that many workers or on a scheduler (0 and ``None``: in this process).
    """
    from codesign.analog import report as rep
    from codesign.analog.ngspice import find_ngspice
    from codesign.analog.pdk import models_dir

    selected = selection(only, quick)
    if workers < 0:
        raise CodesignError(f"--workers must be >= 0, got {workers}")
    out_dir = Path(out_dir)
    options = _options(
        quick, bundle_dir, seeds, corners, stages, inputs, sequences, steps, neurons, timeout,
        out_dir / "decks" if keep_decks else None,
    )  # fmt: skip
    t_start = time.monotonic()
    find_ngspice()
    models_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    if netlists_dir is not None:
        write_reference_netlists(Path(netlists_dir), stages=max(options.stages, 4))
    report = Report(out_dir)
    say = progress or (lambda _msg: None)

    def record(outcome: Outcome) -> None:
        f = outcome.figures
        report.results.append(
            CheckResult(outcome.name, f.passed, f.metrics, outcome.wall_s, f.detail, outcome.cached)
        )
        report.sim_wall_s += outcome.sim_wall_s
        report.decks += outcome.decks
        say(report.lines()[-1])

    run = _run_on_dask if workers or scheduler else _run_here
    outcomes = run(selected, options, out_dir, cache, record, say=say, workers=workers, scheduler=scheduler)
    report.results.sort(key=lambda r: CHECKS.index(r.name))
    results = _results(outcomes, options, seeds, report)
    report.wall_s = time.monotonic() - t_start
    results["wall_s"] = {r.name: r.wall_s for r in report.results} | {
        "total": report.wall_s,
        "simulator": report.sim_wall_s,
    }
    (out_dir / "results.json").write_text(json.dumps(_jsonable(results), indent=1))
    rep.write_summary(out_dir, report, results, quick=quick)
    report.files = sorted(p for p in out_dir.iterdir() if p.is_file())
    return report


def _results(outcomes: dict[str, Outcome], options: CheckOptions, seeds: int, report: Report) -> dict:
    """``results.json``: the run's options, then every check's entries in registry order."""
    results: dict[str, object] = {
        "quick": options.quick,
        "corners": list(options.corners),
        "seeds": seeds,
        "stages": options.stages,
    }
    for r in report.results:
        f = outcomes[r.name].figures
        results |= f.results if f.results is not None else {r.name: f.metrics}
    return results


def _deps(name: str, outcomes: dict[str, Outcome]) -> tuple[dict, dict[str, str]]:
    """The ``results.json`` entries and cache keys of the finished checks ``name`` reads."""
    check = REGISTRY[name]
    entries: dict = {}
    keys: dict[str, str] = {}
    for dep in (*check.needs, *check.uses):
        if dep in outcomes:
            f = outcomes[dep].figures
            entries |= f.results if f.results is not None else {dep: f.metrics}
            keys[dep] = outcomes[dep].key
    return entries, keys


def _run_here(selected, options, out_dir, cache, record, *, say, **_dask) -> dict[str, Outcome]:
    """Every selected check in this process, in registry order (a dependent after what it reads)."""
    outcomes: dict[str, Outcome] = {}
    for name in selected:
        check = REGISTRY[name]
        deps, dep_keys = _deps(name, outcomes)
        key = check_key(check, options, dep_keys) if cache is not None else ""
        outcome = execute(
            check, options, str(out_dir), deps, cache_key=key, cache=str(cache) if cache else None, say=say
        )
        outcomes[name] = outcome
        record(outcome)
    return outcomes


def _run_on_dask(
    selected, options, out_dir, cache, record, *, workers, scheduler, **_say
) -> dict[str, Outcome]:
    """The independent checks at once on Dask, then those that read their results."""
    from distributed import as_completed

    from codesign.runner import dask_client

    outcomes: dict[str, Outcome] = {}
    first = [n for n in selected if not (set(REGISTRY[n].needs) | set(REGISTRY[n].uses)) & set(selected)]
    waves = [first, [n for n in selected if n not in first]]
    with dask_client(scheduler, workers or None) as client:
        for wave in waves:
            futures = {}
            for name in wave:
                check = REGISTRY[name]
                deps, dep_keys = _deps(name, outcomes)
                key = check_key(check, options, dep_keys) if cache is not None else ""
                cache_arg = str(cache) if cache else None
                future = client.submit(
                    execute, check, options, str(out_dir), deps, cache_key=key, cache=cache_arg, pure=False
                )
                futures[future] = name
            for future in as_completed(list(futures)):
                outcome = future.result()
                outcomes[outcome.name] = outcome
                record(outcome)
    return outcomes


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items() if not isinstance(v, np.ndarray)}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dataclass_fields__"):
        return _jsonable(asdict(obj))
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
