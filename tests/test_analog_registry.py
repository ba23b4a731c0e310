"""analog-check as a registry: one check runs alone, a finished check comes from the cache, a
changed spec or a failure runs again, a dependent check brings what it reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codesign.analog import check_registry, checks
from codesign.analog.check_list import REGISTRY
from codesign.analog.check_registry import Check, CheckOptions, Figures, execute
from codesign.errors import CodesignError

needs_ngspice = pytest.mark.skipif(
    shutil.which("ngspice") is None, reason="ngspice not installed (apt-get install ngspice)"
)


def _toy(calls: list, passed: bool | None = True) -> Check:
    """A check that counts its runs and writes one file."""

    def run(options, ctx, deps, say):
        calls.append(options.stages)
        return {"stages": options.stages, "seen": sorted(deps)}

    def summarize(measured, options, out: Path) -> Figures:
        (out / "toy.csv").write_text(f"stages\n{measured['stages']}\n")
        return Figures(passed, measured | {"nan": float("nan")}, f"{measured['stages']} stages")

    return Check("toy", lambda o: {"stages": o.stages}, run, summarize)


def test_registry_names_every_check_once_in_run_order():
    assert checks.CHECKS == tuple(REGISTRY)
    for name, check in REGISTRY.items():
        assert check.name == name
        for dep in (*check.needs, *check.uses):  # what a check reads runs before it
            assert checks.CHECKS.index(dep) < checks.CHECKS.index(name)


def test_selection_adds_what_a_check_needs_and_refuses_unknown_names():
    assert checks.selection(("power",), quick=True) == ("retention", "dpi", "agreement", "power")
    assert checks.selection(("dpi",), quick=True) == ("dpi",)
    assert "ladder_agreement" not in checks.selection(None, quick=True)
    assert "ladder_agreement" in checks.selection(None, quick=False)
    with pytest.raises(CodesignError, match="unknown check"):
        checks.selection(("nonsense",), quick=True)


def test_execute_caches_a_result_and_reruns_when_its_spec_changes(tmp_path):
    calls: list = []
    toy = _toy(calls)
    cache, out = tmp_path / "cache", tmp_path / "out"
    out.mkdir()
    opts = CheckOptions(stages=3)
    key = check_registry.check_key(toy, opts, {})
    first = execute(toy, opts, str(out), {}, cache_key=key, cache=str(cache))
    assert calls == [3] and not first.cached and (out / "toy.csv").read_text() == "stages\n3\n"
    (out / "toy.csv").unlink()
    again = execute(toy, opts, str(out), {}, cache_key=key, cache=str(cache))
    assert calls == [3] and again.cached  # no second run
    assert again.figures.detail == first.figures.detail and again.figures.metrics["stages"] == 3
    assert again.figures.metrics["nan"] != again.figures.metrics["nan"]  # NaN survives the cache
    assert (out / "toy.csv").read_text() == "stages\n3\n"  # its files come back from the cache
    other = CheckOptions(stages=5)
    key5 = check_registry.check_key(toy, other, {})
    assert key5 != key
    execute(toy, other, str(out), {}, cache_key=key5, cache=str(cache))
    assert calls == [3, 5]
    assert check_registry.check_key(toy, opts, {"dpi": "a"}) != key  # what it reads is in its key


def test_a_failed_check_is_not_cached(tmp_path):
    calls: list = []
    toy = _toy(calls, passed=False)
    opts = CheckOptions()
    key = check_registry.check_key(toy, opts, {})
    for _ in range(2):
        assert (
            execute(toy, opts, str(tmp_path), {}, cache_key=key, cache=str(tmp_path / "c")).figures.passed
            is False
        )
    assert len(calls) == 2


def test_a_damaged_cache_entry_runs_again(tmp_path):
    calls: list = []
    toy = _toy(calls)
    opts = CheckOptions()
    key = check_registry.check_key(toy, opts, {})
    execute(toy, opts, str(tmp_path), {}, cache_key=key, cache=str(tmp_path / "c"))
    (entry,) = (tmp_path / "c").glob("toy-*.json")
    entry.write_text("{not json")
    assert not execute(toy, opts, str(tmp_path), {}, cache_key=key, cache=str(tmp_path / "c")).cached
    assert len(calls) == 2 and json.loads(entry.read_text())["key"] == key


@pytest.mark.sim
@needs_ngspice
def test_one_check_reruns_alone_and_a_finished_one_is_cached(tmp_path, monkeypatch):
    """--only dpi runs one deck; with the cache, adding hysteresis runs hysteresis only."""
    cache = tmp_path / "cache"
    first = checks.analog_check(tmp_path / "a", quick=True, only=("dpi",), keep_decks=False, cache=cache)
    assert [r.name for r in first.results] == ["dpi"] and first.decks == 1 and first.passed
    second = checks.analog_check(
        tmp_path / "b", quick=True, only=("hysteresis", "dpi"), keep_decks=False, cache=cache
    )
    assert [(r.name, r.cached) for r in second.results] == [("hysteresis", False), ("dpi", True)]
    assert second.decks == 1  # the hysteresis sweep only
    assert second.get("dpi").metrics == first.get("dpi").metrics
    for f in ("dpi.csv", "dpi.png", "dpi_wave.csv", "hysteresis.csv"):
        assert (tmp_path / "b" / f).is_file()
    a = json.loads((tmp_path / "a" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    assert a["dpi"] == b["dpi"]

    def no_ngspice(*_a, **_k):
        raise AssertionError("ngspice ran although both checks are cached")

    monkeypatch.setattr("codesign.analog.sim.run_deck", no_ngspice)
    third = checks.analog_check(
        tmp_path / "c", quick=True, only=("hysteresis", "dpi"), keep_decks=False, cache=cache
    )
    assert all(r.cached for r in third.results) and third.decks == 0
    assert "cached" in third.lines()[0]


@pytest.mark.sim
@needs_ngspice
def test_checks_on_dask_give_the_figures_of_an_in_process_run(tmp_path):
    here = checks.analog_check(tmp_path / "here", quick=True, only=("dpi",), keep_decks=False)
    dask = checks.analog_check(tmp_path / "dask", quick=True, only=("dpi",), keep_decks=False, workers=1)

    def figures(report):
        return {k: v for k, v in report.get("dpi").metrics.items() if k != "wall_s"}

    assert figures(dask) == figures(here) and dask.decks == 1
    assert (tmp_path / "dask" / "dpi.png").is_file()
    with pytest.raises(CodesignError, match="--workers"):
        checks.analog_check(tmp_path / "x", quick=True, only=("dpi",), workers=-1)
