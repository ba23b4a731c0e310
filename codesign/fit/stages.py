"""The tasks of a fit, plain functions of dicts and paths that run on any Dask worker.

``cv_stage``
    trains one candidate on one fold (``task: files`` with ``folds``/``fold``) into its own run
    directory and returns the golden accuracy on the held-out fold (a QAT run is scored on the
    deployed model, :mod:`codesign.train.trainer`) and the best iteration. A finished run is read,
    not redone; an interrupted one resumes from its last evaluation.
``budget_stage``
    exports a candidate's first fold run to a bundle, maps it for the chip and step rate
    (:func:`codesign.mapper.map_bundle`) and measures the dynamic energy per inference of the
    chosen build as ``codesign report`` does (:func:`codesign.energy.dynamic_energy` of the cycle
    model's counters). The hardware depends on the network, not on the fold, so one bundle per
    candidate is enough. Its record (``OUT/budget/NAME.json``) is kept, so a re-run maps nothing
    twice.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

from codesign.atomic import write_text
from codesign.errors import CodesignError

__all__ = [
    "ENERGY_SEQUENCES",
    "QUICK_MAPPING",
    "budget_stage",
    "cv_result",
    "cv_stage",
    "read_json",
    "write_json",
]

ENERGY_SEQUENCES = 2
"""Test sequences of the bundle the energy per inference is measured on (as ``codesign report``)."""
QUICK_MAPPING = {
    "weights": "frozen",
    "counters": "none",
    "narrow": "off",
    "merge": "off",
    "share_updates": "off",
}
"""``--quick`` maps with these options fixed: a few dozen builds instead of several hundred."""


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


SUMMARY = "summary.json"  # codesign.train.trainer.SUMMARY: a finished run's record


def cv_result(run_dir: str) -> dict[str, Any] | None:
    """What a finished candidate x fold run scored (None: not finished)."""
    summary = read_json(Path(run_dir) / SUMMARY)
    if summary is None:
        return None
    return {
        "run_dir": run_dir,
        "kind": summary.get("kind", "recurrent"),
        "accuracy": summary["test"],
        "scored": summary.get("scored"),
        "best_iteration": summary["best_iteration"],
        "iterations": summary["iterations"],
        "train_s": summary["wall_s"],
    }


def cv_stage(recipe: dict[str, Any], run_dir: str, device: str | None = None) -> dict[str, Any]:
    """Train (or find) one candidate x fold run; its held-out accuracy and best iteration."""
    if (done := cv_result(run_dir)) is not None:
        return done
    import torch

    from codesign.device import use_device
    from codesign.train import train
    from codesign.train.advice import OrderBlindWarning
    from codesign.train.recipe import parse_recipe

    torch.set_num_threads(1)  # one thread per Dask worker: no oversubscription
    with use_device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore", OrderBlindWarning)  # the space's own candidates: their `why` says it
        train(parse_recipe(recipe), Path(run_dir), progress=False)
    return cv_result(run_dir)


def _energy_nj(bundle, winner) -> float:
    """Dynamic energy per inference (nJ) of the mapped build on the bundle's own test inputs."""
    from codesign.energy import dynamic_energy
    from codesign.hw.build import plan_summary
    from codesign.report.measure import load_inputs, measure

    seqs, _ = load_inputs(bundle, sequences=ENERGY_SEQUENCES, steps=None)
    run = measure(bundle, seqs, winner.lanes)
    return dynamic_energy(plan_summary(winner.plan), run["counters"])["total"] / run["sequences"] * 1e-3


def budget_stage(
    cv: dict[str, Any],
    record_path: str,
    chip: str,
    step_rate: float | None,
    clock_mhz: float | None,
    quick: bool,
) -> dict[str, Any]:
    """Bundle, mapping and energy of one candidate (from its first fold run ``cv``); cached."""
    if (done := read_json(Path(record_path))) is not None:
        return done
    from codesign.bundle import load_bundle
    from codesign.bundle.inspect import memory_bits
    from codesign.mapper import map_bundle
    from codesign.quant.export import export_run

    t0 = time.monotonic()
    bundle_dir = Path(record_path).with_suffix("")
    bundle, _ = export_run(cv["run_dir"], bundle_dir)
    state = sum(layer.size * layer.state_bits for layer in bundle.manifest.layers)
    record: dict[str, Any] = {
        "bundle_dir": str(bundle_dir),
        "memory_bits": int(sum(memory_bits(bundle).values()) + state),
        "fits": False,
        "miss": None,
        "lanes": None,
        "resources": None,
        "cycles_per_step": None,
        "energy_nj": None,
    }
    try:
        mapping = map_bundle(
            bundle_dir, chip, step_rate=step_rate, clock_mhz=clock_mhz, fixed=QUICK_MAPPING if quick else None
        )
    except CodesignError as err:
        text = str(err)
        record["miss"] = text.removeprefix(f"{err.path}: ") if err.path is not None else text
    else:
        w = mapping.winner
        record |= {
            "fits": True,
            "lanes": w.lanes,
            "options": w.flags(),
            "resources": w.resources.as_dict(),
            "cycles_per_step": w.cycles_per_step,
            "energy_nj": _energy_nj(load_bundle(bundle_dir), w),
        }
    record["budget_s"] = time.monotonic() - t0
    write_json(Path(record_path), record)
    return record
