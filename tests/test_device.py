"""Devices: ``--device auto|cpu|cuda`` on every command that trains or scores, the recipe key
``train.device``, checkpoints that load anywhere, and the Dask GPU resource of explore and ladder.

This machine has no GPU: ``auto`` must mean the CPU and change nothing. The tests marked ``cuda``
train on a real GPU and run only where torch sees one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from codesign.cli import app
from codesign.device import device_override, parse_device, resolve_device, use_device
from codesign.errors import CodesignError
from codesign.train import train
from codesign.train.recipe import parse_recipe
from codesign.train.trainer import BEST, RECIPE_FILE, holds_recipe, load_checkpoint, load_run, save_checkpoint

runner = CliRunner()

RECIPE = {
    "name": "tiny_device",
    "seed": 0,
    "task": {"name": "copy_first", "classes": 4, "length": 10, "val_size": 64, "test_size": 64},
    "model": {"cell": "cmru", "hidden_size": 4, "eps": 1.0},
    "train": {"iterations": 12, "batch_size": 16, "eval_every": 4, "eval_batches": 2, "smooth_evals": 1},
    "quant": {"calibration_sequences": 16},
}

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU that torch sees")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.fixture(scope="module")
def recipe_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recipe") / "tiny.yaml"
    path.write_text(yaml.safe_dump(RECIPE))
    return path


@pytest.fixture(scope="module")
def trained(recipe_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny run trained through the command line with ``--device cpu``."""
    out = tmp_path_factory.mktemp("runs") / "cpu"
    result = runner.invoke(app, ["train", str(recipe_file), "--out", str(out), "--quiet", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    return out


# ------------------------------------------------------------------------------------------ resolving
@pytest.mark.parametrize(
    ("spec", "expected"),
    [(None, "auto"), ("auto", "auto"), ("CPU", "cpu"), (" cuda ", "cuda"), ("cuda:3", "cuda:3")],
)
def test_parse_device_normalizes(spec: str | None, expected: str) -> None:
    assert parse_device(spec) == expected


@pytest.mark.parametrize("spec", ["gpu", "cuda:", "cuda:x", "mps", "", "cpu:0", "cuda,cpu"])
def test_parse_device_refuses_garbage_naming_the_option(spec: str) -> None:
    with pytest.raises(
        CodesignError, match=r"^train\.device .* is not a device; use auto, cpu, cuda or cuda:N$"
    ):
        parse_device(spec, "train.device")


@given(st.text(max_size=12))
def test_parse_device_accepts_exactly_the_documented_spellings(text: str) -> None:
    normal = text.strip().lower()
    documented = normal in ("auto", "cpu", "cuda") or (
        normal.startswith("cuda:") and normal[5:].isascii() and normal[5:].isdigit()
    )
    if documented:
        assert parse_device(text) == normal
    else:
        with pytest.raises(
            CodesignError, match=r"^--device .* is not a device; use auto, cpu, cuda or cuda:N$"
        ):
            parse_device(text)


def test_auto_is_the_cpu_without_a_gpu(no_gpu: None) -> None:
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")


def test_auto_is_the_gpu_when_torch_sees_one(one_gpu: None) -> None:
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    assert resolve_device("cpu") == torch.device("cpu")


def test_cuda_without_a_gpu_says_how_to_get_one(no_gpu: None) -> None:
    with pytest.raises(CodesignError) as err:
        resolve_device("cuda")
    message = str(err.value)
    assert message.startswith("--device 'cuda': torch ") and "sees no GPU" in message
    assert "download.pytorch.org" in message and "docs/gpu.md" in message and "--device cpu" in message
    assert "\n" not in message


def test_cuda_index_beyond_the_gpus(one_gpu: None) -> None:
    with pytest.raises(CodesignError, match=r"--device 'cuda:1': torch sees 1 GPU\(s\), numbered from 0"):
        resolve_device("cuda:1")


def test_use_device_sets_and_restores_the_override() -> None:
    assert device_override() is None
    with use_device("CPU"):
        assert device_override() == "cpu"
        with use_device(None):
            assert device_override() is None
        assert device_override() == "cpu"
    assert device_override() is None
    with pytest.raises(CodesignError, match="--device 'tpu'"), use_device("tpu"):
        pass  # pragma: no cover - the spelling fails on entry
    assert device_override() is None


# ------------------------------------------------------------------------------------------ recipe key
def test_recipe_device_key_defaults_to_auto_and_is_checked() -> None:
    assert parse_recipe(RECIPE).train.device == "auto"
    data = dict(RECIPE, train=dict(RECIPE["train"], device="Cuda:1"))
    assert parse_recipe(data).train.device == "cuda:1"
    with pytest.raises(CodesignError, match=r"train\.device 'gpu' is not a device"):
        parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], device="gpu")))


def test_recipe_device_cuda_without_a_gpu_fails_before_the_run_directory(
    no_gpu: None, tmp_path: Path
) -> None:
    recipe = parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], device="cuda")))
    with pytest.raises(CodesignError, match=r"^train\.device 'cuda': .*sees no GPU"):
        train(recipe, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    with use_device("cpu"):  # the command's --device wins over the recipe's key
        assert train(recipe, tmp_path / "run", progress=False).device == "cpu"


def test_a_run_continues_on_another_device(trained: Path) -> None:
    """``train.device`` is where a run trains, not what it is: the same run on any device."""
    stored = trained / RECIPE_FILE
    on_gpu = parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], device="cuda")))
    assert holds_recipe(stored, on_gpu)
    other = parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], iterations=13)))
    assert not holds_recipe(stored, other)


def test_explore_run_key_leaves_the_device_out() -> None:
    from codesign.explore.space import run_key

    assert run_key(RECIPE) == run_key(dict(RECIPE, train=dict(RECIPE["train"], device="cuda")))


# ------------------------------------------------------------------------------------------ training
def test_device_cpu_trains_the_same_model_as_no_option(
    trained: Path, recipe_file: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["train", str(recipe_file), "--out", str(tmp_path / "plain"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "on cpu" in result.output
    with_option = load_checkpoint(trained / BEST)
    without = load_checkpoint(tmp_path / "plain" / BEST)
    assert with_option["iteration"] == without["iteration"]
    assert with_option["model"].keys() == without["model"].keys()
    for key, value in with_option["model"].items():
        assert torch.equal(value, without["model"][key]), key
    assert json.loads((trained / "summary.json").read_text())["device"] == "cpu"


def test_checkpoint_loads_with_map_location(tmp_path: Path) -> None:
    state = {"model": {"w": torch.arange(6.0).reshape(2, 3)}, "iteration": 3}
    save_checkpoint(tmp_path / "c.pt", state)
    for where in ("cpu", torch.device("cpu")):
        loaded = load_checkpoint(tmp_path / "c.pt", map_location=where)
        assert loaded["iteration"] == 3 and torch.equal(loaded["model"]["w"], state["model"]["w"])
        assert loaded["model"]["w"].device == torch.device("cpu")


def test_checkpoint_refuses_pickled_objects(tmp_path: Path) -> None:
    torch.save({"model": {}, "object": Path("x")}, tmp_path / "evil.pt")
    with pytest.raises(CodesignError, match="cannot load checkpoint"):
        load_checkpoint(tmp_path / "evil.pt", map_location="cpu")


def test_best_checkpoint_holds_cpu_tensors(trained: Path) -> None:
    raw = torch.load(trained / BEST, weights_only=True)  # no map_location: the devices it was written from
    assert raw["model"] and all(v.device.type == "cpu" for v in raw["model"].values())


# ------------------------------------------------------------------------------------------ commands
def test_eval_quantize_sweep_accept_device_cpu(trained: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(trained), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    plain = runner.invoke(app, ["eval", str(trained)])
    assert plain.output.split(": ", 1)[1] == result.output.split(": ", 1)[1]

    out = tmp_path / "q"
    args = ["quantize", str(trained), "--bits", "6", "--iterations", "4", "--out", str(out), "--quiet"]
    result = runner.invoke(app, [*args, "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "summary.json").read_text())["device"] == "cpu"

    table = tmp_path / "sweep.md"
    result = runner.invoke(
        app, ["sweep", str(trained), "--bits", "8", "--out", str(table), "--device", "cpu"]
    )
    assert result.exit_code == 0, result.output
    assert "8-bit weights" in table.read_text()


@pytest.mark.parametrize(
    "command",
    [
        ["train", "RECIPE", "--out", "OUT/r"],
        ["eval", "RUN"],
        ["quantize", "RUN", "--bits", "4", "--out", "OUT/q"],
        ["sweep", "RUN", "--out", "OUT/s.md"],
        ["repro", "sugru_copying", "--runs", "OUT/repro", "--out", "OUT/tables"],
        ["explore", "flows/explore/jv_cells_widths.yaml", "--out", "OUT/e"],
        ["ladder", "flows/ladder/sd_stack_q4.yaml", "--out", "OUT/l"],
    ],
)
def test_every_command_refuses_a_bad_device_with_one_line(
    command: list[str], trained: Path, recipe_file: Path, tmp_path: Path
) -> None:
    args = [a.replace("RECIPE", str(recipe_file)).replace("RUN", str(trained)) for a in command]
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    result = runner.invoke(app, [*args, "--device", "gpu"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == "error: --device 'gpu' is not a device; use auto, cpu, cuda or cuda:N"
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_repro_explore_ladder_pass_the_device_down(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import codesign.explore.ladder
    import codesign.explore.runner
    import codesign.repro

    seen: dict[str, object] = {}
    monkeypatch.setattr(codesign.repro, "run_repro", lambda names, **kw: seen.update(repro=device_override()))
    result = runner.invoke(app, ["repro", "flip_flop", "--device", "cpu"])
    assert result.exit_code == 0, result.output

    def fake(name: str):
        def run(*args, **kwargs):
            seen[name] = kwargs["device"]
            counts = {"finished": 0, "trials": 0, "runs": 0, "failed": 0, "wall_s": 0.0, "interrupted": False}
            return counts | {"summary": "s.md", "parquet": "t.parquet"}

        return run

    monkeypatch.setattr(codesign.explore.runner, "explore", fake("explore"))
    monkeypatch.setattr(codesign.explore.ladder, "run_ladder", fake("ladder"))
    result = runner.invoke(app, ["explore", "space.yaml", "--out", str(tmp_path / "e"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["ladder", "l.yaml", "--out", str(tmp_path / "l"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert seen == {"repro": "cpu", "explore": "cpu", "ladder": "cpu"}


# ------------------------------------------------------------------------------------------ Dask
def test_stage_device(no_gpu: None) -> None:
    from codesign.explore.runner import stage_device

    assert stage_device(None, None) == ("cpu", False)  # a CPU-only machine: nothing changes
    assert stage_device("cpu", None) == ("cpu", False)
    with pytest.raises(CodesignError, match="sees no GPU"):
        stage_device("cuda", None)
    # an existing cluster's workers resolve the device; only cuda asks for the GPU resource
    assert stage_device(None, "tcp://h:8786") == (None, False)
    assert stage_device("cuda", "tcp://h:8786") == ("cuda", True)
    assert stage_device("auto", "tcp://h:8786") == ("auto", False)


def test_stage_device_with_a_gpu(one_gpu: None) -> None:
    from codesign.explore.runner import stage_device

    assert stage_device(None, None) == ("cuda", True)
    assert stage_device("cpu", None) == ("cpu", False)


class _Client:
    """Records what ``_submit`` asks of a Dask client."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def submit(self, fn, *args, **kwargs):
        self.calls.append((fn.__name__, args, kwargs))
        return len(self.calls)


def _trial(quantization: str, h: str) -> dict:
    bundle = {"recipe": RECIPE, "quant": {}, "quantization": quantization, "weight_bits": 4, "qat": None}
    return {"bundle": bundle, "root": "/r", "hash": h}


@pytest.mark.parametrize("gpu", [False, True])
def test_submit_asks_for_the_gpu_only_for_tasks_that_train(gpu: bool) -> None:
    from codesign.explore.runner import _submit
    from codesign.runner import GPU

    client = _Client()
    device = "cuda" if gpu else "cpu"
    _submit(client, [_trial("ptq", "a"), _trial("scratch", "b")], device, gpu)
    trains = GPU if gpu else None
    calls = [(name, args[0].get("quantization"), kw.get("resources")) for name, args, kw in client.calls]
    assert calls == [
        ("train_stage", None, trains),  # one float run, shared
        ("bundle_stage", "ptq", None),  # exports on a CPU worker
        ("trial_stage", None, None),
        ("bundle_stage", "scratch", trains),  # trains again
        ("trial_stage", None, None),
    ]
    stages = [args for name, args, _ in client.calls if name != "trial_stage"]
    assert [args[-1] for args in stages] == [device] * 3


def _where() -> str:
    from distributed import get_worker

    return get_worker().name


def test_local_gpu_cluster_sends_gpu_tasks_to_the_gpu_worker() -> None:
    """The cluster a GPU machine gets (a CPU worker and a GPU worker): the GPU resource routes."""
    from codesign.runner import GPU, dask_client

    with dask_client(None, 1, gpu=True) as client:
        workers = client.scheduler_info()["workers"].values()
        assert sorted(w["name"] for w in workers) == ["cpu-0", "gpu"]
        assert {w["name"]: w["resources"] for w in workers}["gpu"] == GPU
        on_gpu = client.gather([client.submit(_where, pure=False, resources=GPU) for _ in range(3)])
        assert on_gpu == ["gpu"] * 3


# ------------------------------------------------------------------------------------------ GPU re-run script
@pytest.mark.slow
def test_gpu_rerun_script_runs_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    """``scripts/gpu/rerun.sh`` with ``RERUN_TINY=1``: probe, sized run and JSON, on the CPU."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    env = os.environ | {
        "OUT": str(tmp_path / "out"),
        "RERUN_WORK": str(tmp_path / "work"),
        "RERUN_TINY": "1",
        "RERUN_JOBS": "copying_sumingru",
        "PYTHON": sys.executable,
    }
    proc = subprocess.run(
        ["bash", str(repo / "scripts" / "gpu" / "rerun.sh")],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((tmp_path / "out" / "copying_sumingru.json").read_text())
    assert record["device"] == "cpu" and record["tiny"] is True
    assert record["iterations"] >= 1 and 0.0 <= record["test"] <= 1.0
    assert "train.iterations=" in " ".join(record["overrides"])
    summary = json.loads((tmp_path / "out" / "rerun.json").read_text())
    assert [job["job"] for job in summary["jobs"]] == ["copying_sumingru"]
    assert (tmp_path / "out" / "copying_sumingru_metrics.csv").is_file()

    env["RERUN_JOBS"] = "nonsense"
    proc = subprocess.run(
        ["bash", str(repo / "scripts" / "gpu" / "rerun.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "unknown jobs ['nonsense']" in proc.stderr


# ------------------------------------------------------------------------------------------ a real GPU
@pytest.mark.cuda
@cuda
def test_cuda_training_loads_and_exports_on_the_cpu(tmp_path: Path) -> None:
    from codesign.quant.export import export_run

    with use_device("cuda"):
        result = train(parse_recipe(RECIPE), tmp_path / "run", progress=False)
    assert result.device.startswith("cuda")
    _, model, _ = load_run(tmp_path / "run")
    assert next(model.parameters()).device.type == "cpu"
    _, gpu_model, _ = load_run(tmp_path / "run", "cuda")
    assert next(gpu_model.parameters()).device.type == "cuda"
    _, report = export_run(tmp_path / "run", tmp_path / "bundle")
    assert report["torch_vs_golden_mismatches"] == 0


@pytest.mark.cuda
@cuda
def test_cuda_model_is_moved_to_the_cpu_for_export(tmp_path: Path) -> None:
    from codesign.quant.export import bundle_from_model
    from codesign.train.trainer import make_recipe_task

    recipe = parse_recipe(RECIPE)
    with use_device("cuda"):
        train(recipe, tmp_path / "run", progress=False)
    _, model, _ = load_run(tmp_path / "run", "cuda")
    _, cpu_model, _ = load_run(tmp_path / "run")
    task = make_recipe_task(recipe)
    on_gpu = bundle_from_model(model, recipe, task)
    on_cpu = bundle_from_model(cpu_model, recipe, task)
    assert on_gpu.manifest == on_cpu.manifest
    assert on_gpu.weights.keys() == on_cpu.weights.keys()
    assert all((on_gpu.weights[k] == on_cpu.weights[k]).all() for k in on_cpu.weights)
