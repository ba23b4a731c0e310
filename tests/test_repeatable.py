"""Training repeats: same recipe and seed, same weights; what a run depends on is recorded; a
resume or an evaluation with another thread count warns; a QAT run reports its deployed score."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from codesign.data.files import FileDataset
from codesign.train import load_recipe, train
from codesign.train.repeat import ENVIRONMENT, RepeatabilityWarning, thread_count
from codesign.train.trainer import BEST, LAST, load_checkpoint, load_run

REPO = Path(__file__).resolve().parents[1]


def tiny(*extra: str):
    """The file recipe on the bundled tiny set: one small HSRU layer, 4-bit QAT, a few iterations."""
    return load_recipe(
        REPO / "models" / "classify_files_hw.yaml",
        [
            "model.layers=[{cell: hsru, size: 6}]",
            "train.iterations=40",
            "train.eval_every=10",
            "train.qat_bits=4",
            "quant.layer.weight_bits=4",
            *extra,
        ],
    )


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)["model"]


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_same_recipe_and_seed_give_the_same_weights_whatever_ran_before(tmp_path: Path) -> None:
    """A recipe without ``train.threads`` took its thread count from the process (what an earlier
    run had set), and the global numpy/random state from whatever ran before."""
    recipe = tiny("train.threads=null")
    first = train(recipe, tmp_path / "a", progress=False)
    torch.set_num_threads(1)  # an earlier run with threads: 1
    np.random.seed(123)
    torch.manual_seed(123)
    try:
        second = train(recipe, tmp_path / "b", progress=False)
    finally:
        torch.set_num_threads(thread_count(None))
    for name in (BEST, LAST):
        assert same(weights(tmp_path / "a" / name), weights(tmp_path / "b" / name))
    assert (first.best_iteration, first.test) == (second.best_iteration, second.test)
    env_a = json.loads((tmp_path / "a" / ENVIRONMENT).read_text())
    env_b = json.loads((tmp_path / "b" / ENVIRONMENT).read_text())
    assert env_a["threads"] == env_b["threads"] == thread_count(None)


def test_a_run_records_what_its_weights_depend_on(tmp_path: Path) -> None:
    result = train(tiny("seed=3"), tmp_path / "run", progress=False)
    env = json.loads((tmp_path / "run" / ENVIRONMENT).read_text())
    assert env["seed"] == 3 and env["threads"] == 1 == result.threads  # the recipe's train.threads
    assert env["torch"] == torch.__version__
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["platform"] and env["deterministic_algorithms"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["threads"] == 1 and summary["scored"] == "deployed"


def test_resume_with_another_thread_count_warns_and_is_recorded(tmp_path: Path, monkeypatch) -> None:
    recipe = tiny()
    real_sample = FileDataset.sample
    calls = {"n": 0}

    def interrupted(self, n, generator):
        calls["n"] += 1
        if calls["n"] == 25:
            raise KeyboardInterrupt
        return real_sample(self, n, generator)

    monkeypatch.setattr(FileDataset, "sample", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, tmp_path / "run", progress=False)
    monkeypatch.setattr(FileDataset, "sample", real_sample)
    env = json.loads((tmp_path / "run" / ENVIRONMENT).read_text())
    env["threads"] = 7  # as if trained elsewhere
    (tmp_path / "run" / ENVIRONMENT).write_text(json.dumps(env))
    with pytest.warns(RepeatabilityWarning, match="threads: 7 -> 1"):
        train(recipe, tmp_path / "run", progress=False)
    resumed = json.loads((tmp_path / "run" / ENVIRONMENT).read_text())
    assert resumed["threads"] == 7 and resumed["resumed"][0]["threads"] == 1
    with pytest.warns(RepeatabilityWarning, match="trained with 7"):
        load_run(tmp_path / "run")


def test_resume_in_the_same_environment_is_silent_and_repeats(tmp_path: Path, monkeypatch) -> None:
    recipe = tiny()
    real_sample = FileDataset.sample
    calls = {"n": 0}

    def interrupted(self, n, generator):
        calls["n"] += 1
        if calls["n"] == 25:
            raise KeyboardInterrupt
        return real_sample(self, n, generator)

    monkeypatch.setattr(FileDataset, "sample", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, tmp_path / "run", progress=False)
    monkeypatch.setattr(FileDataset, "sample", real_sample)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatabilityWarning)
        train(recipe, tmp_path / "run", progress=False)
    train(recipe, tmp_path / "straight", progress=False)
    for name in (BEST, LAST):
        assert same(weights(tmp_path / "run" / name), weights(tmp_path / "straight" / name))


def test_qat_run_reports_the_accuracy_of_the_bundle_it_exports(tmp_path: Path) -> None:
    """The summary's test accuracy of a QAT run is the golden model's on the exported bundle."""
    from codesign.quant.export import export_run

    result = train(tiny(), tmp_path / "run", progress=False)
    _, report = export_run(tmp_path / "run", tmp_path / "bundle")
    assert result.scored == "deployed"
    assert result.test == report["trained_test_accuracy"] == report["quantized_test_accuracy"]
