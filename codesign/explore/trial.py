"""The three stages of a trial, each a plain function of configuration dicts (runs on any worker).

``train_stage(recipe, root, device)``
    trains the float run a trial starts from, in ``root/runs/<hash of the recipe's non-default settings>``; every trial
    with the same recipe (task, cell, d, seed ...) shares it, whatever its width or lanes.
``bundle_stage(bundle, root, run, device)``
    quantizes it: post-training (``ptq``), after QAT fine-tuning of the float run (``qat``) or from
    a run trained with fake-quantized weights from scratch (``scratch``); exports the bundle
    (torch == golden checked on the whole test set, :func:`codesign.quant.export.export_run`) into
    ``root/bundles/<hash>`` and its golden accuracy into ``root/bundles/<hash>.json``.
``trial_stage(trial, bundle_record)``
    adds the hardware figures at the trial's lanes and writes ``root/trials/<hash>.json``.

Every stage first looks for its own output and returns it when present, so a re-run (or a trial
that shares a stage with a finished one) does no work twice; every output is written atomically,
and an interrupted training resumes from its last evaluation (:func:`codesign.train.train`).
``root`` must be visible to every worker (a shared filesystem on a remote cluster). ``device``
(``None``: the recipe's ``train.device``) is where a stage trains; export and scoring stay on the CPU.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from codesign.atomic import write_text
from codesign.explore.space import bundle_key, run_key

__all__ = ["bundle_stage", "read_json", "train_stage", "trial_path", "trial_stage", "write_json"]


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def trial_path(root: str | Path, h: str) -> Path:
    return Path(root) / "trials" / f"{h}.json"


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)  # one thread per Dask worker thread: no oversubscription


def _train(recipe, run_dir: Path) -> dict[str, Any]:
    from codesign.train import train
    from codesign.train.trainer import SUMMARY

    if not (run_dir / SUMMARY).is_file():
        train(recipe, run_dir, progress=False)
    return json.loads((run_dir / SUMMARY).read_text())


def train_stage(recipe: dict[str, Any], root: str, device: str | None = None) -> dict[str, Any]:
    """Train (or find) the float run of ``recipe``; returns its directory and summary."""
    from codesign.device import use_device
    from codesign.train.recipe import parse_recipe

    _one_thread()
    run_dir = Path(root) / "runs" / run_key(recipe)
    with use_device(device):
        summary = _train(parse_recipe(recipe), run_dir)
    return {"run_dir": str(run_dir), "float_accuracy": summary["test"], "train_s": summary["wall_s"]}


def bundle_stage(
    bundle: dict[str, Any], root: str, run: dict[str, Any], device: str | None = None
) -> dict[str, Any]:
    """Quantize the float run ``run`` as ``bundle`` asks; export, score with the golden model."""
    h = bundle_key(bundle)
    record_path = Path(root) / "bundles" / f"{h}.json"
    if (done := read_json(record_path)) is not None:
        return done
    from codesign.device import use_device
    from codesign.quant.export import export_run
    from codesign.quant.sweep import qat_recipe, scratch_recipe
    from codesign.train.recipe import QuantSpec, parse_recipe

    _one_thread()
    t0 = time.monotonic()
    recipe = parse_recipe(bundle["recipe"], stored=True)
    bits, kind = bundle["weight_bits"], bundle["quantization"]
    source = Path(run["run_dir"])
    if kind == "qat":
        qat = bundle["qat"]
        qat_dir = Path(root) / "runs" / f"{h}-qat"
        with use_device(device):
            _train(qat_recipe(source, recipe, bits, qat["iterations"], qat["lr"]), qat_dir)
        source = qat_dir
    elif kind == "scratch":
        scratch_dir = Path(root) / "runs" / f"{h}-scratch"
        with use_device(device):
            _train(scratch_recipe(recipe, bits), scratch_dir)
        source = scratch_dir
    bundle_dir = Path(root) / "bundles" / h
    _, report = export_run(source, bundle_dir, QuantSpec.model_validate(bundle["quant"]))
    record = {
        "bundle_dir": str(bundle_dir),
        "source_run": str(source),
        "accuracy": report["quantized_test_accuracy"],
        "float_accuracy": run["float_accuracy"],
        "source_float_accuracy": report["float_test_accuracy"],
        "test_sequences": report["test_sequences"],
        "torch_vs_golden_mismatches": report["torch_vs_golden_mismatches"],
        "train_s": run["train_s"],
        "quantize_s": time.monotonic() - t0,
    }
    write_json(record_path, record)
    return record


def trial_stage(trial: dict[str, Any], bundle_record: dict[str, Any]) -> dict[str, Any]:
    """Hardware figures at the trial's lanes (when asked); writes the trial's record."""
    t0 = time.monotonic()
    figures: dict[str, Any] = {}
    if trial["lanes"] is not None:
        from codesign.explore.hardware import hardware_figures

        figures = hardware_figures(bundle_record["bundle_dir"], trial["lanes"])
    record = {
        "hash": trial["hash"],
        "status": "ok",
        "error": None,
        "axes": trial["axes"],
        "bundle": trial["bundle"],
        "lanes": trial["lanes"],
        "result": bundle_record,
        "figures": figures,
        "hardware_s": time.monotonic() - t0,
        "worker": socket.gethostname(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(trial_path(trial["root"], trial["hash"]), record)
    return record


def failed_record(trial: dict[str, Any], error: BaseException) -> dict[str, Any]:
    """The record of a trial whose stage raised (written by the driver, which saw the error)."""
    return {
        "hash": trial["hash"],
        "status": "failed",
        "error": f"{type(error).__name__}: {error}".splitlines()[0][:500],
        "axes": trial["axes"],
        "bundle": trial["bundle"],
        "lanes": trial["lanes"],
        "result": {},
        "figures": {},
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
