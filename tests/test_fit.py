"""codesign fit: the fold split of task files, the candidates, the budget filter and pick, the
errors, and the command end to end (quick, a tiny generated set) with its resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from codesign.bundle import load_bundle
from codesign.cli import app
from codesign.data.files import FileDataset
from codesign.data.series import fold_mask
from codesign.errors import CodesignError
from codesign.fit.data import check_files
from codesign.fit.pick import candidate_rows, pick, refit_iterations
from codesign.fit.search import Job, Plan, plan_jobs
from codesign.fit.space import (
    Candidate,
    auto_stride,
    candidates,
    check_recipe,
    is_features,
    load_space,
    schema_has,
)
from codesign.train.recipe import TaskSpec, apply_override


def write_npz(path: Path, n: int, classes: int = 2, seed: int = 0, length: int = 12) -> Path:
    """``n`` series of two opposite ramps (plus noise), labels ``a``, ``b``, ... in turn."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    ramps = np.stack(
        [np.linspace(-1, 1, length) * (1 if c % 2 else -1) * (1 + c // 2) for c in range(classes)]
    )
    X = ramps[y] + 0.3 * rng.standard_normal((n, length))
    np.savez(path, X=X, y=np.array(list("abcdefgh"))[y])
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write_npz(tmp_path / "train.npz", 24), write_npz(tmp_path / "test.npz", 12, seed=1)


# --------------------------------------------------------------------------- the fold split
@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(3, 12), min_size=2, max_size=4),
    folds=st.integers(2, 3),
    seed=st.integers(0, 10_000),
)
def test_folds_are_stratified_disjoint_covering_and_deterministic(counts, folds, seed):
    labels = np.repeat(np.arange(len(counts)), counts)
    np.random.default_rng(seed).shuffle(labels)
    masks = [fold_mask(labels, folds, f, seed) for f in range(folds)]
    assert (np.sum(masks, axis=0) == 1).all()  # disjoint, and every series held out once
    for c, n in enumerate(counts):
        per_fold = [int((m & (labels == c)).sum()) for m in masks]
        assert max(per_fold) - min(per_fold) <= 1 and sum(per_fold) == n  # stratified
    sizes = [int(m.sum()) for m in masks]
    assert max(sizes) - min(sizes) <= 1
    assert all((fold_mask(labels, folds, f, seed) == masks[f]).all() for f in range(folds))


def test_fold_seed_changes_the_split():
    labels = np.repeat([0, 1], 20)
    assert not (fold_mask(labels, 2, 0, 0) == fold_mask(labels, 2, 0, 1)).all()


def test_a_fold_trains_without_it_and_tests_on_it(files):
    train, test = files
    whole = FileDataset(train=str(train), test=str(test))
    sets = [FileDataset(train=str(train), test=str(test), folds=3, fold=f, fold_seed=5) for f in range(3)]
    assert [len(s.split("test", 0)[1]) for s in sets] == [8, 8, 8]  # the training file's 24, in thirds
    for s in sets:
        n = sum(len(s.split(name, 0)[1]) for name in ("train", "val"))
        assert n == 16 and s.classes == whole.classes
    assert len(whole.split("test", 0)[1]) == 12  # without folds: the test file


def test_fold_seed_follows_the_run_seed(files):
    train, test = files
    spec = TaskSpec(name="files", train=str(train), test=str(test), folds=2, fold=0)
    assert spec.run_options(7)["fold_seed"] == 7
    pinned = TaskSpec(name="files", train=str(train), test=str(test), folds=2, fold=0, fold_seed=3)
    assert pinned.run_options(7)["fold_seed"] == 3


@pytest.mark.parametrize(
    "options, message",
    [
        ({"folds": 3}, "folds and fold go together"),
        ({"folds": 1, "fold": 0}, "need folds >= 2"),
        ({"folds": 3, "fold": 3}, "need folds >= 2 and 0 <= fold < folds"),
        ({"folds": 13, "fold": 0}, "13 folds need at least 13 series of every class"),
    ],
)
def test_fold_options_are_checked(files, options, message):
    train, test = files
    with pytest.raises(CodesignError, match=message):
        FileDataset(train=str(train), test=str(test), **options)


# --------------------------------------------------------------------------- the files, checked
def test_check_files_errors(tmp_path, files):
    train, test = files
    with pytest.raises(CodesignError, match="training file not found"):
        check_files(tmp_path / "nope.npz", test, 3)
    with pytest.raises(CodesignError, match="test file not found"):
        check_files(train, tmp_path / "nope.ts", 3)
    two_channels = tmp_path / "two.npz"
    np.savez(two_channels, X=np.zeros((6, 12, 2)), y=np.array(list("ababab")))
    with pytest.raises(
        CodesignError, match="series of 2 channels, but the training file .* holds series of 1"
    ):
        check_files(train, two_channels, 3)
    three = write_npz(tmp_path / "three.npz", 12, classes=3)
    with pytest.raises(CodesignError, match=r"labels \['c'\] do not occur in the training file"):
        check_files(train, three, 3)
    with pytest.raises(
        CodesignError, match=r"--folds 13 needs at least 13 series of every class; 'a' \(12\)"
    ):
        check_files(train, test, 13)
    with pytest.raises(CodesignError, match="at least 2 folds"):
        check_files(train, test, 1)
    data = check_files(train, test, 3)
    assert (data.classes, data.train_series, data.test_series, data.length) == (2, 24, 12, 12)


# --------------------------------------------------------------------------- the space
def test_the_package_space_is_small_explained_and_deployable(files):
    space = load_space()
    assert 8 <= len(space.candidates) <= 16
    assert all(len(c.why) > 10 for c in space.candidates)
    task = check_files(*files, 3).task(3, 0, 0)
    for cand in candidates(space, quick=False, series_length=100):
        if not is_features(cand):
            check_recipe(cand, task)  # every candidate parses and trains for its deployed width
    quick = candidates(space, quick=True, series_length=100)
    assert 1 <= len(quick) <= 5
    trained = [c for c in quick if not is_features(c)]
    assert all(c.recipe["train"]["iterations"] == space.quick_train["iterations"] for c in trained)
    assert [c.recipe for c in quick if is_features(c)] == [{"kind": "features", "units": 840}]


def test_an_axis_the_schema_lacks_is_skipped_and_one_it_has_is_crossed(tmp_path):
    space = load_space()
    space.axes = {"model.no_such_key": [1, 2], "model.pooling": ["last", "sum"]}
    notes: list[str] = []
    cands = candidates(space, quick=True, series_length=100, notes=notes)
    assert any("model.no_such_key skipped" in n for n in notes)
    plain = candidates(load_space(), quick=True, series_length=100)
    trained = [c for c in cands if not is_features(c)]
    assert len(trained) == 2 * len([c for c in plain if not is_features(c)])
    assert {c.recipe["model"]["pooling"] for c in trained} == {"last", "sum"}
    assert [c for c in cands if is_features(c)] == [c for c in plain if is_features(c)]  # not crossed
    assert schema_has("model.pooling") and schema_has("train.lr") and not schema_has("model.no_such_key")


def test_the_stride_is_picked_from_the_length_once_the_schema_has_the_key(monkeypatch):
    import codesign.fit.space as space_module

    notes: list[str] = []
    plain = candidates(load_space(), quick=True, series_length=500, notes=notes)
    if not schema_has("model.input_stride"):
        assert (
            all("input_stride" not in c.recipe["model"] for c in plain if not is_features(c)) and notes == []
        )
        monkeypatch.setattr(space_module, "schema_has", lambda key: True)
    strided = candidates(load_space(), quick=True, series_length=500, notes=notes)
    trained = [c for c in strided if not is_features(c)]
    assert [c.recipe["model"]["input_stride"] for c in trained] == [4] * len(trained)
    assert [c.name for c in strided] == [c.name for c in plain]  # one value: no name suffix
    assert any("model.input_stride = 4 from the series length 500" in n for n in notes)


def test_auto_stride_keeps_at_least_64_steps():
    assert [auto_stride(n) for n in (19, 64, 127, 128, 150, 500, 10_000)] == [1, 1, 1, 2, 2, 4, 16]


def test_the_stride_keeps_high_frequency_series_at_full_rate():
    """A 16-frame mean took ACSF1 (1,460 frames whose classes are in frame-to-frame changes) from
    70 % to 37 %: the fit's stride stops where the window means lose most of the variance."""
    import numpy as np

    from codesign.data.series import variance_kept

    rng = np.random.default_rng(0)
    noise = [rng.standard_normal((1, 1460)) for _ in range(8)]
    smooth = [np.sin(np.linspace(0, 6, 2000) + p)[None] for p in rng.uniform(0, 3, 8)]
    kept_noise, kept_smooth = variance_kept(noise), variance_kept(smooth)
    assert all(abs(kept_noise[s] - 1 / s) < 0.05 for s in (2, 4, 8, 16))
    assert all(v > 0.95 for v in kept_smooth.values())
    assert auto_stride(1460, kept_noise) == 1 and auto_stride(2000, kept_smooth) == 16
    assert auto_stride(2000, {2: 0.9, 4: 0.6, 8: 0.4, 16: 0.3}) == 4
    notes: list[str] = []
    full_rate = candidates(
        load_space(), quick=True, series_length=1460, notes=notes, variance_kept=kept_noise
    )
    assert {c.recipe["model"]["input_stride"] for c in full_rate if not is_features(c)} == {1}
    assert any("input_stride = 1 from the series length 1460: 2-frame means would keep" in n for n in notes)


def test_a_bad_space_names_the_key(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump({"base": {}, "candidates": [{"name": "x", "why": "y", "sett": []}]}))
    with pytest.raises(CodesignError, match="sett"):
        load_space(path)


# --------------------------------------------------------------------------- the budget and the pick
def _plan(accs: dict[str, list[float]], budgets: dict[str, dict]) -> tuple[list[Candidate], Plan]:
    cands = [Candidate(name, "why", {}) for name in accs]
    jobs = [
        Job(name, 0, f, {}, f"/r/{name}{f}", {"accuracy": a, "best_iteration": 100 * (f + 1)})
        for name, values in accs.items()
        for f, a in enumerate(values)
    ]
    return cands, Plan(jobs, {n: "" for n in accs}, budgets)


def _fits(bits: int, nj: float) -> dict:
    resources = {"logic_cells": 100, "block_rams": 2, "sprams": 0, "dsps": 0}
    return {
        "fits": True,
        "miss": None,
        "memory_bits": bits,
        "energy_nj": nj,
        "lanes": 1,
        "resources": resources,
    }


def test_the_budget_drops_what_misses_and_the_pick_is_the_most_accurate_that_fits():
    cands, plan = _plan(
        {"big": [1.0, 1.0], "hot": [0.9, 0.9], "small": [0.8, 0.9], "tiny": [0.85, 0.85]},
        {
            "big": {"fits": False, "miss": "nothing fits the up5k: ...", "memory_bits": 9000},
            "hot": _fits(3000, 50.0),
            "small": _fits(1000, 5.0),
            "tiny": _fits(500, 1.0),
        },
    )
    rows = {r["candidate"]: r for r in candidate_rows(cands, plan, max_energy_nj=20.0)}
    assert not rows["big"]["fits"] and "nothing fits" in rows["big"]["dropped_because"]
    assert not rows["hot"]["fits"] and "exceeds --max-energy 20 nJ" in rows["hot"]["dropped_because"]
    assert rows["small"]["cv_accuracy_mean"] == pytest.approx(0.85)
    assert rows["small"]["cv_accuracy_sd"] == pytest.approx(0.05)
    assert pick(list(rows.values()))["candidate"] == "tiny"  # ties with small: the smaller one
    assert pick(candidate_rows(cands, plan, None))["candidate"] == "hot"  # no energy budget
    assert pick([rows["big"], rows["hot"]]) is None


def test_runs_belong_to_the_files_contents(tmp_path, files):
    train, test = files
    cands = candidates(load_space(), quick=True, series_length=12)[:1]

    def dirs() -> list[str]:
        data = check_files(train, test, 2)
        tasks = {(0, f): data.task(2, f, 0) for f in range(2)}
        return [j.run_dir for j in plan_jobs(cands, tasks, {}, tmp_path, data.fingerprint).jobs]

    before = dirs()
    assert dirs() == before
    write_npz(train, 24, seed=5)  # the same path, other contents: other runs
    assert not set(dirs()) & set(before)


def test_refit_iterations_are_the_median_best_rounded_up():
    assert refit_iterations({"best_iterations": [100, 250, 300]}, 100, 3000) == 300
    assert refit_iterations({"best_iterations": [10]}, 100, 3000) == 100
    assert refit_iterations({"best_iterations": [5000]}, 100, 3000) == 3000


W4 = ["train.qat_bits=4", "quant.layer.weight_bits=4"]


def test_a_candidate_must_train_for_its_deployed_width(files):
    data = check_files(*files, 2)
    good = candidates(load_space(), quick=True, series_length=12)[0]
    assert check_recipe(good, data.task(2, 0, 0)).train.qat_bits == 8
    for bad in (["train.qat_bits=4"], ["train.qat_bits=null"], ["model.readout_hidden=8"]):
        recipe = good.recipe
        for item in bad:
            recipe = apply_override(recipe, item)
        with pytest.raises(CodesignError, match="candidate cmru8: a candidate is a deployable network"):
            check_recipe(Candidate("cmru8", "why", recipe), data.task(2, 0, 0))


# --------------------------------------------------------------------------- end to end
def _tiny_space(path: Path) -> Path:
    space = yaml.safe_load((Path(__file__).resolve().parents[1] / "codesign/fit/space.yaml").read_text())
    space["quick_train"] = {"iterations": 20, "eval_every": 10, "smooth_evals": 1}
    cmru4 = "model.layers=[{cell: cmru, size: 4, eps: 1.0}]"
    space["candidates"] = [
        {"name": "c4", "why": "a CMRU of 4", "quick": True, "set": [cmru4]},
        {"name": "c4w4", "why": "at 4-bit weights", "quick": True, "set": [cmru4, *W4]},
    ]
    space["features"] = []
    path.write_text(yaml.safe_dump(space))
    return path


def test_fit_end_to_end_then_resumes_without_redoing_anything(tmp_path, files):
    train, test = files
    space = _tiny_space(tmp_path / "space.yaml")
    args = [
        "fit",
        str(train),
        str(test),
        "--out",
        str(tmp_path / "out"),
        "--target",
        "up5k",
        "--step-rate",
        "100",
    ]
    args += [
        "--quick",
        "--folds",
        "2",
        "--space",
        str(space),
        "--no-minirocket",
        "--json",
        str(tmp_path / "r.json"),
    ]
    result = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "candidates fit the up5k" in result.output and "pick: c4" in result.output
    first = json.loads((tmp_path / "r.json").read_text())
    assert first["trained_now"] == 4 and len(first["candidates"]) == 2
    assert all(r["fits"] and r["energy_nj_per_inference"] > 0 for r in first["candidates"])
    assert first["pick"]["torch_vs_golden_mismatches"] == 0
    assert (tmp_path / "out" / "bundle" / "weights.npz").is_file()
    prov = load_bundle(tmp_path / "out" / "bundle").manifest.provenance
    assert prov["labels"] == ["a", "b"]  # what a host needs to read the classes and scale recordings
    assert prov["input_scaling"]["mode"] in ("channel", "series")
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*") if p.is_file()}

    again = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert again.exit_code == 0, again.output
    assert "4 runs, 4 already done" in again.output
    second = json.loads((tmp_path / "r.json").read_text())
    assert second["trained_now"] == 0 and second["candidates"] == first["candidates"]
    touched = [p for p, t in stamps.items() if p.stat().st_mtime_ns != t and p.name != "fit.json"]
    assert touched == []  # no run, bundle or record was written again

    # an energy budget nothing meets: the same runs and records, every candidate dropped, one error
    starved = CliRunner().invoke(app, [*args, "--workers", "1", "--max-energy", "1e-6"])
    assert starved.exit_code == 2 and "no candidate fits the up5k at the budget given" in starved.output
    assert "exceeds --max-energy 1e-06 nJ" in starved.output

    # a stopped fit: one run lost its summary; --workers 0 (no cluster) trains just that one
    lost = next((tmp_path / "out" / "cv" / "c4w4").glob("s0-f1-*"))
    (lost / "summary.json").unlink()
    third = CliRunner().invoke(app, [*args, "--workers", "0"])
    assert third.exit_code == 0, third.output
    assert json.loads((tmp_path / "r.json").read_text())["trained_now"] == 1


def test_fit_errors_are_one_line(tmp_path, files):
    train, _ = files
    three = write_npz(tmp_path / "three.npz", 12, classes=3)
    result = CliRunner().invoke(app, ["fit", str(train), str(three), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "do not occur in the training file" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["fit", str(train), str(train), "--target", "up6k"])
    assert result.exit_code == 2 and "--target 'up6k' is not one of up5k" in result.output


def test_the_refit_trains_as_long_as_the_cv_runs_under_the_series_defaults(tmp_path, files, monkeypatch):
    """A candidate that leaves iterations and selection to the series defaults (weight averaging over
    the last evaluations) is refitted for the defaults' iterations, not the schema's."""
    import codesign.quant.export as export
    import codesign.train as train_pkg
    from codesign.fit import run as fit_run
    from codesign.fit.run import FitOptions
    from codesign.train.defaults import SERIES_DEFAULTS

    seen = {}

    def fake_train(recipe, run_dir, progress=True):
        seen["recipe"] = recipe
        Path(run_dir).mkdir(parents=True)

    monkeypatch.setattr(train_pkg, "train", fake_train)
    report = {k: 1.0 for k in ("quantized_test_accuracy", "float_test_accuracy")}
    report |= {"test_sequences": 1, "torch_vs_golden_mismatches": 0}
    monkeypatch.setattr(export, "export_run", lambda run, out: (None, report))
    cand = Candidate("c", "why", {"name": "c", "model": {"cell": "cmru", "hidden_size": 4}, "train": {}})
    data = check_files(str(files[0]), str(files[1]), 2)
    fit_run._refit({"best_iterations": [100, 200]}, cand, data, FitOptions(out=tmp_path), fit_run.Console())
    assert seen["recipe"].train.iterations == SERIES_DEFAULTS["train"]["iterations"]
    assert seen["recipe"].train.selection == "average"


def test_a_fit_of_random_feature_candidates_picks_refits_and_resumes(tmp_path):
    """Feature candidates run beside (here: instead of) trained ones: closed-form folds, a cost-model
    budget, a refit into a feature bundle the golden model reads, and nothing redone on a re-run."""
    from codesign.bundle.io import FeatureBundle, load_any_bundle

    train = write_npz(tmp_path / "train.npz", 36, classes=3, length=40)
    test = write_npz(tmp_path / "test.npz", 18, classes=3, seed=1, length=40)
    space = yaml.safe_load((Path(__file__).resolve().parents[1] / "codesign/fit/space.yaml").read_text())
    space["candidates"] = []
    space["features"] = [
        {"name": "rf168", "why": "a tiny bank", "units": 168},
        {"name": "rf336", "why": "twice that", "units": 336},
    ]
    (tmp_path / "space.yaml").write_text(yaml.safe_dump(space))
    args = ["fit", str(train), str(test), "--out", str(tmp_path / "out"), "--folds", "2", "--workers", "0"]
    args += ["--space", str(tmp_path / "space.yaml"), "--no-minirocket", "--json", str(tmp_path / "r.json")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "fitted rf168 seed 0 fold 1: held-out golden accuracy" in result.output
    first = json.loads((tmp_path / "r.json").read_text())
    rows = {r["candidate"]: r for r in first["candidates"]}
    assert set(rows) == {"rf168", "rf336"} and all(r["fits"] for r in rows.values())
    assert rows["rf168"]["memory_bits"] < rows["rf336"]["memory_bits"]
    assert all(r["cv_accuracy_mean"] >= 0.9 for r in rows.values())
    pick = first["pick"]
    assert pick["test_accuracy"] >= 0.9 and pick["reloaded_bundle_identical"]
    assert isinstance(load_any_bundle(pick["bundle"]), FeatureBundle)
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*") if p.is_file()}
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output and "4 runs, 4 already done" in again.output
    touched = [p for p, t in stamps.items() if p.stat().st_mtime_ns != t and p.name != "fit.json"]
    assert touched == []
    none = CliRunner().invoke(app, [*args, "--family", "recurrent"])
    assert none.exit_code != 0 and "--family recurrent: the space holds no such candidate" in none.output
    bad = CliRunner().invoke(app, [*args, "--family", "rocket"])
    assert bad.exit_code != 0 and "--family 'rocket': one of all, features, recurrent" in bad.output
