"""``codesign explore``: space files, hardware figures, and a real LocalCluster killed and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from codesign.energy import energy_add, energy_mult, energy_read
from codesign.errors import CodesignError
from codesign.explore.hardware import FIGURES, hardware_figures
from codesign.explore.results import pareto_front
from codesign.explore.space import expand, load_space

ROOT = Path(__file__).resolve().parents[1]
RECIPE = {
    "name": "tiny_explore",
    "task": {"name": "copy_first", "classes": 4, "length": 10, "val_size": 64, "test_size": 64},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 4, "eps": 1.0},
    "train": {"iterations": 30, "batch_size": 16, "eval_every": 15, "eval_batches": 1},
    "quant": {"input": {"bits": 4, "frac": 0}},
}


def _space(tmp_path: Path, **changes) -> Path:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(RECIPE))
    space = {
        "name": "tiny",
        "base": "base.yaml",
        "axes": {"cell": ["cmru", "bmru"], "weight_bits": [8, 3]},
        "seeds": [0, 1],
        "hardware": {"lanes": [1, 2]},
    } | changes
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space))
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"axis": {}}, "unknown key 'axis'"),
        ({"axes": {"cell": ["cmru", "lstm"]}}, "axes.cell: 'lstm' is not allowed; use one of"),
        ({"axes": {"eps": [0.5]}}, "axes.eps: 0.5 is not allowed; use -1, 0, 1 or 'anneal'"),
        ({"axes": {"weight_bits": [8, 8]}}, "values repeat"),
        ({"axes": {"quantization": ["gptq"]}}, "axes.quantization.0"),
        ({"hardware": {"lanes": [0]}}, "lanes 0 is not allowed"),
        ({"train": {"epochs": 3}}, "train.epochs is not a training option"),
        ({"base": "missing.yaml"}, "base: recipe 'missing.yaml' not found"),
        ({"sample": {"random": 0}}, "sample"),
    ],
)
def test_space_errors_name_the_key(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(CodesignError, match="space.yaml: ") as err:
        load_space(_space(tmp_path, **changes))
    assert message in str(err.value)


def test_expand_shares_float_runs_and_merges_identical_points(tmp_path: Path) -> None:
    space, base = load_space(_space(tmp_path, axes={"cell": ["cmru", "bmru"], "eps": [1, "anneal"]}))
    trials = expand(space, base, tmp_path)
    # bmru has no eps: its two eps points are one; cmru eps=1 and anneal are two -> 3 x 2 seeds x 2 lanes
    assert len(trials) == 12 and len({t["hash"] for t in trials}) == 12
    runs = {json.dumps(t["bundle"]["recipe"], sort_keys=True) for t in trials}
    assert len(runs) == 6  # lanes share one bundle, so one float run per (cell, eps, seed)
    anneal = [t for t in trials if t["axes"]["eps"] == "anneal"]
    assert anneal and all(t["bundle"]["recipe"]["train"]["eps_schedule"] == "anneal" for t in anneal)
    again = expand(
        *load_space(_space(tmp_path, axes={"cell": ["cmru", "bmru"], "eps": [1, "anneal"]})), tmp_path
    )
    assert [t["hash"] for t in again] == [t["hash"] for t in trials]  # identity is stable
    # the shared run is float even when the base recipe trains with fake-quantized weights
    qat_base = RECIPE | {"train": RECIPE["train"] | {"qat_bits": 4}}
    (tmp_path / "qat_base.yaml").write_text(yaml.safe_dump(qat_base))
    qspace, qbase = load_space(_space(tmp_path, base="qat_base.yaml"))
    assert all(t["bundle"]["recipe"]["train"]["qat_bits"] is None for t in expand(qspace, qbase, tmp_path))
    sampled, _ = load_space(
        _space(tmp_path, axes={"d": [2, 3, 4, 5], "weight_bits": [8, 4, 2]}, sample={"random": 5})
    )
    assert len(expand(sampled, base, tmp_path)) == 5 * 2 * 2


def test_energy_table_and_pareto_front() -> None:
    assert energy_add(8) == pytest.approx(0.03) and energy_add(32) == pytest.approx(0.1)
    assert energy_mult(8, 8) == pytest.approx(0.2) and energy_mult(32, 32) == pytest.approx(3.1)
    assert energy_read(64) == pytest.approx(10.0) and energy_mult(2, 8) < energy_mult(8, 8)
    x = np.array([5.0, 1.0, 3.0, 3.0, 9.0])
    y = np.array([0.9, 0.5, 0.7, 0.8, 0.9])
    assert list(pareto_front(x, y)) == [1, 3, 0]


def _explore(space: Path, out: Path, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "codesign.cli", "explore", str(space), "--out", str(out), "--workers", "2"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_local_cluster_killed_part_way_resumes_without_rerunning(tmp_path: Path) -> None:
    """A real LocalCluster: kill the command after the first trials, re-run, nothing finished re-runs."""
    tasks = [RECIPE["task"], RECIPE["task"] | {"length": 0}]  # length 0 fails when training starts
    space = _space(tmp_path, axes={"task": tasks, "cell": ["cmru", "bmru"], "weight_bits": [8, 3]})
    out = tmp_path / "out"
    trials_dir = out / "trials"
    first = _explore(space, out, start_new_session=True)
    deadline = time.monotonic() + 600  # a loaded machine starts the cluster and trains slowly
    while time.monotonic() < deadline and len(list(trials_dir.glob("*.json"))) < 3:
        assert first.poll() is None, first.stdout.read()
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)  # the command, its scheduler and its workers
    first.wait()
    before = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in trials_dir.glob("*.json")}
    runs_before = {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/summary.json")}
    assert len(before) >= 3, "fewer than 3 trials finished before the deadline"
    assert len(before) < 32, "the kill came too late to test resuming"

    second = _explore(space, out)
    log, _ = second.communicate(timeout=120)
    assert second.returncode == 0, log
    assert f"32 trials (8 float runs), {len(before)} already recorded, {32 - len(before)} to run" in log
    after = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in trials_dir.glob("*.json")}
    assert len(after) == 32
    assert all(after[name] == before[name] for name in before)  # finished trials were not re-run
    for name, mtime in runs_before.items():  # nor were finished float runs trained again
        assert (out / "runs" / name / "summary.json").stat().st_mtime_ns == mtime
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 32 and set(df["hash"] + ".json") == set(after)
    assert pd.read_csv(out / "results.csv").shape == df.shape
    failed = df[df["status"] == "failed"]
    assert len(failed) == 16 and failed["task"].str.contains("length=0").all()
    assert failed["error"].str.len().gt(0).all() and failed["accuracy"].isna().all()
    ok = df[df["status"] == "ok"]
    assert ok["accuracy"].between(0, 1).all() and (ok["torch_vs_golden_mismatches"] == 0).all()
    assert ok[list(FIGURES)].notna().all().all()
    p1, p2 = (ok[ok["lanes"] == p].set_index(["cell", "weight_bits", "seed"]).sort_index() for p in (1, 2))
    assert (p1["cycles_per_step_est"] >= p2["cycles_per_step_est"]).all()  # more lanes, fewer cycles
    assert (p1["energy_pj_proxy"] == p2["energy_pj_proxy"]).all()  # same operations
    summary = (out / "summary.md").read_text()
    assert (
        "## Pareto front: accuracy against energy per inference" in summary and "## Failed trials" in summary
    )
    for png in ("accuracy_vs_bits", "pareto_energy", "pareto_area", "pareto_cycles"):
        assert (out / f"{png}.png").stat().st_size > 1000

    # the hook: bundle directory + lanes -> figures, the same as the table's
    row = ok.iloc[0]
    bundle = json.loads((trials_dir / f"{row['hash']}.json").read_text())["result"]["bundle_dir"]
    figures = hardware_figures(bundle, int(row["lanes"]))
    assert set(figures) == set(FIGURES)
    assert figures["energy_pj_proxy"] == pytest.approx(row["energy_pj_proxy"])


def test_existing_scheduler_runs_the_same_trials(tmp_path: Path) -> None:
    """``--scheduler ADDRESS``: the same trials on a cluster the command did not start."""
    from distributed import LocalCluster
    from rich.console import Console

    from codesign.explore.runner import explore

    space = _space(tmp_path, axes={"cell": ["bmru"], "weight_bits": [4]}, seeds=[0], hardware={"lanes": [2]})
    console = Console(file=open(os.devnull, "w"))  # noqa: SIM115
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        result = explore(space, tmp_path / "out", scheduler=cluster.scheduler_address, console=console)
        assert result["finished"] == 1 and result["failed"] == 0
