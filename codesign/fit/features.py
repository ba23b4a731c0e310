"""Random-feature candidates of ``codesign fit``: cross-validated, budgeted and refitted in closed form.

A feature candidate trains nothing by gradient (:mod:`codesign.quant.features`): each fold is a
ridge fit of seconds, so the family costs a fit little time beside its recurrent candidates. Its
records have the recurrent stages' shapes (``summary.json`` of a fold, the budget record), so the
table and the pick treat every candidate alike.

The budget of a bank is its cost model (:func:`bank_cost`): the memory bits of its arrays, the
counters and the delay line, and the cycles per frame of the random-feature accelerator
(:func:`codesign.hw.features.feature_cycles`: the walk of every pair), against the chip's memory
and clock at the step rate. Its energy is the ``45 nm per-op proxy`` of :mod:`codesign.energy`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from codesign.bundle.features import KERNEL_TAPS, FeatureManifest
from codesign.bundle.io import FeatureBundle, load_any_bundle, save_feature_bundle
from codesign.energy import access_pj, energy_add, energy_mult
from codesign.fit.stages import SUMMARY, read_json, write_json
from codesign.golden.features import run_features_ragged
from codesign.hw.features import MAX_RTL_CHANNELS, feature_cycles
from codesign.quant.features import fit_feature_bundle, quantize_series

__all__ = [
    "bank_cost",
    "bank_report",
    "evaluate_file",
    "features_budget_stage",
    "features_cv_stage",
    "refit_features",
    "task_series",
]

KIND = "features"


def task_series(task_options: dict[str, Any]) -> dict[str, Any]:
    """The float series of a ``files`` task (each at its own length, as the hardware reads it):
    ``{"train": ([(T_i, m)], labels), "test": (...), "classes": [...], "scaling": mode}``.

    The whole training split fits the bank: no validation carve-out, as a bank selects nothing on
    validation data.
    """
    import torch

    from codesign.train.recipe import build_task

    task_options = {k: v for k, v in task_options.items() if k != "name"}
    task = build_task(
        "files", {**task_options, "normalize": task_options.get("normalize", "auto"), "val_fraction": 0.0}
    )

    def ragged(split: str) -> tuple[list[np.ndarray], np.ndarray]:
        x, y = task.split(split, 0)
        lengths = task.lengths(split).tolist()
        width = x.shape[1]
        xs = x.numpy().astype(np.float64)
        if task.padding == "front":
            series = [xs[i, width - n :] for i, n in enumerate(lengths)]
        else:
            series = [xs[i, :n] for i, n in enumerate(lengths)]
        return series, torch.as_tensor(y).numpy()

    return {
        "train": ragged("train"),
        "test": ragged("test"),
        "classes": task.classes,
        "scaling": task.normalization,
    }


def _accuracy(bundle: FeatureBundle, series: list[np.ndarray], labels: np.ndarray) -> float:
    xq = quantize_series(bundle.manifest.input, series)
    return float((run_features_ragged(bundle, xq).classes == labels).mean())


def features_cv_stage(recipe: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """Fit one bank on a fold's training series and score its held-out series (golden accuracy)."""
    from codesign.fit.stages import cv_result

    if (done := cv_result(run_dir)) is not None:
        return done
    t0 = time.monotonic()
    write_json(Path(run_dir) / "recipe.json", recipe)
    data = task_series(recipe["task"])
    bundle, _ = fit_feature_bundle(
        *data["train"],
        classes=data["classes"],
        name=recipe["name"],
        features=recipe["units"],
        seed=recipe["seed"],
    )
    accuracy = _accuracy(bundle, *data["test"])
    summary = {"kind": KIND, "test": accuracy, "scored": "golden", "best_iteration": 0, "iterations": 0}
    write_json(
        Path(run_dir) / SUMMARY,
        summary | {"wall_s": time.monotonic() - t0, "units": bundle.manifest.features.size},
    )
    return cv_result(run_dir)


def bank_cost(manifest: FeatureManifest, mean_channels: float) -> dict[str, Any]:
    """Memory bits, cycles per step and the proxy energy per step of a bank (one datapath).

    ``mean_channels``: the mean number of channels per pair's mask (each tap reads each of them).
    """
    f, r, inp = manifest.features, manifest.readout, manifest.input
    conv = f.conv_bits(inp.bits)
    arrays = sum(
        int(np.prod(shape)) * (1 if name == "features.mask" else bits)
        for name, (shape, bits) in manifest.array_table().items()
    )
    counters = f.size * f.state_bits
    delay_line = f.span * f.channels * inp.bits
    tap_reads = f.pairs * KERNEL_TAPS * mean_channels
    cycles = feature_cycles(f, r.classes)  # the accelerator's own cycle model (codesign/hw/features.py)
    line_bits = f.span * f.channels * inp.bits
    step_pj = (
        tap_reads * (energy_add(conv) + access_pj(inp.bits, line_bits))
        + f.size * (energy_add(conv) + energy_add(f.state_bits))  # compare, then count
        + f.size
        * (
            access_pj(conv + f.alpha_bits, f.size * (conv + f.alpha_bits))
            + 2 * access_pj(f.state_bits, counters)
        )
    )
    readout_pj = (
        r.classes
        * f.size
        * (
            energy_mult(r.weight_bits, f.state_bits)
            + access_pj(r.weight_bits, r.classes * f.size * r.weight_bits)
        )
    )
    return {
        "memory_bits": int(arrays + counters + delay_line),
        "cycles_per_step": cycles.frame,
        "readout_cycles": cycles.readout,
        "step_pj": float(step_pj),
        "readout_pj": float(readout_pj),
    }


def features_budget_stage(
    cv: dict[str, Any],
    record_path: str,
    chip: str,
    step_rate: float | None,
    clock_mhz: float | None,
    quick: bool,
) -> dict[str, Any]:
    """The bank of one candidate (fitted on its first fold's training series) against the chip."""
    if (done := read_json(Path(record_path))) is not None:
        return done
    from codesign.hw.cost import DEVICES

    t0 = time.monotonic()
    run = Path(cv["run_dir"])
    recipe = read_json(run / "recipe.json") or {}
    data = task_series(recipe["task"])
    bundle, _ = fit_feature_bundle(
        *data["train"],
        classes=data["classes"],
        name=recipe["name"],
        features=recipe["units"],
        seed=recipe["seed"],
    )
    bundle_dir = Path(record_path).with_suffix("")
    save_feature_bundle(bundle_dir, bundle.manifest, bundle.weights)
    lengths = [len(s) for s in data["test"][0]]
    cost = bank_cost(bundle.manifest, float(bundle.weights["features.mask"].sum(axis=1).mean()))
    device = DEVICES[chip]
    clock_hz = (clock_mhz or device.clock_mhz) * 1e6
    memory = device.sprams * 256 * 1024 + device.block_rams * 4096
    miss = None
    if bundle.manifest.features.channels > MAX_RTL_CHANNELS:
        miss = f"{bundle.manifest.features.channels} channels: the accelerator sums at most {MAX_RTL_CHANNELS} per tap"
    elif memory and cost["memory_bits"] > memory:
        miss = f"{cost['memory_bits']:,} memory bits exceed the {device.name}'s {memory:,}"
    elif step_rate and cost["cycles_per_step"] * step_rate > clock_hz:
        miss = (
            f"{cost['cycles_per_step']:,} cycles per step at {step_rate:g} steps/s need "
            f"{cost['cycles_per_step'] * step_rate / 1e6:.1f} MHz, over the {clock_hz / 1e6:g} MHz clock"
        )
    steps = float(np.mean(lengths)) if lengths else 0.0
    record = {
        "kind": KIND,
        "bundle_dir": str(bundle_dir),
        "memory_bits": cost["memory_bits"],
        "fits": miss is None,
        "miss": miss,
        "lanes": 1,
        "options": {"kind": "random features", "units": bundle.manifest.features.size},
        "resources": None,
        "cycles_per_step": cost["cycles_per_step"],
        "energy_nj": (cost["step_pj"] * steps + cost["readout_pj"]) * 1e-3,
        "energy_basis": "45 nm per-op proxy (dynamic only)",
        "budget_s": time.monotonic() - t0,
    }
    write_json(Path(record_path), record)
    return record


def refit_features(
    units: int, seed: int, task: dict[str, Any], name: str, out: Path, bundle_name: str = "bundle"
) -> dict[str, Any]:
    """Fit a bank on the whole training file into ``out/bundle_name``; score the test file."""
    data = task_series(task)
    bundle, bank = fit_feature_bundle(
        *data["train"],
        classes=data["classes"],
        name=name,
        features=units,
        seed=seed,
        provenance={"task": {"name": "files", **task}, "scaling": data["scaling"]},
    )
    saved = save_feature_bundle(out / bundle_name, bundle.manifest, bundle.weights)
    test_x, test_y = data["test"]
    xq = quantize_series(bundle.manifest.input, test_x)
    golden = float((run_features_ragged(saved, xq).classes == test_y).mean())
    float_acc = float((bank.float_logits(xq).argmax(axis=1) == test_y).mean())
    reloaded = load_any_bundle(out / bundle_name)
    same = np.array_equal(run_features_ragged(reloaded, xq).logits, run_features_ragged(saved, xq).logits)
    return {
        "bundle": str(out / bundle_name),
        "test_accuracy": golden,
        "float_test_accuracy": float_acc,
        "test_sequences": len(test_y),
        "units": bundle.manifest.features.size,
        "reloaded_bundle_identical": bool(same),
    }


def evaluate_file(bundle_dir: str | Path, data: str | Path) -> dict[str, Any]:
    """Golden accuracy of a feature bundle on a labelled file, prepared as the bundle was fitted.

    The bundle's provenance holds its training file, its scaling and its label names: the file is
    standardised with the training file's statistics (or each series on its own), and its labels
    are matched by name.
    """
    from codesign.errors import CodesignError

    bundle = load_any_bundle(bundle_dir)
    if not isinstance(bundle, FeatureBundle):
        raise CodesignError(
            "is not a random-feature bundle (kind: features): use codesign sim", path=bundle_dir
        )
    prov = bundle.manifest.provenance
    task = prov.get("task") if isinstance(prov.get("task"), dict) else None
    if task is None or "train" not in task:
        raise CodesignError(
            "the bundle's provenance has no training file to scale inputs by", path=bundle_dir
        )
    options = {
        "train": task["train"],
        "test": str(Path(data).resolve()),
        "normalize": prov.get("scaling", "auto"),
    }
    series = task_series(options)
    names = list(prov.get("labels") or [])
    xs, ys = series["test"]
    found = [series["classes"][int(i)] for i in ys]
    unknown = sorted(set(found) - set(names))
    if unknown:
        raise CodesignError(f"labels {unknown[:5]} are not among the bundle's {names[:10]}", path=data)
    truth = np.array([names.index(c) for c in found])
    classes = run_features_ragged(bundle, quantize_series(bundle.manifest.input, xs)).classes
    return {
        "bundle": str(bundle_dir),
        "data": str(data),
        "accuracy": float((classes == truth).mean()),
        "sequences": len(truth),
    }


def bank_report(
    bundle_dir: str | Path, chip: str, step_rate: float, clock_mhz: float | None, steps: int
) -> dict[str, Any]:
    """A feature bundle's cost against ``chip`` at ``step_rate`` frames per second: memory bits,
    the accelerator's cycles, the busy fraction of the clock and the ``45 nm per-op proxy`` energy
    per frame and per inference of ``steps`` frames (dynamic only: no clock tree, no leakage)."""
    from codesign.errors import CodesignError
    from codesign.hw.cost import DEVICES

    bundle = load_any_bundle(bundle_dir)
    if not isinstance(bundle, FeatureBundle):
        raise CodesignError(
            "is not a random-feature bundle (kind: features): use codesign report", path=bundle_dir
        )
    if chip not in DEVICES:
        raise CodesignError(f"--chip {chip!r} is not one of {', '.join(DEVICES)}")
    device = DEVICES[chip]
    clock_hz = (clock_mhz or device.clock_mhz) * 1e6
    cost = bank_cost(bundle.manifest, float(bundle.weights["features.mask"].sum(axis=1).mean()))
    memory = device.sprams * 256 * 1024 + device.block_rams * 4096
    busy = cost["cycles_per_step"] * step_rate / clock_hz if clock_hz else float("inf")
    miss = None
    if bundle.manifest.features.channels > MAX_RTL_CHANNELS:
        miss = f"{bundle.manifest.features.channels} channels: the accelerator sums at most {MAX_RTL_CHANNELS} per tap"
    elif memory and cost["memory_bits"] > memory:
        miss = f"{cost['memory_bits']:,} memory bits exceed the {device.name}'s {memory:,}"
    elif busy > 1:
        miss = f"{cost['cycles_per_step']:,} cycles per frame at {step_rate:g} frames/s exceed the {clock_hz / 1e6:g} MHz clock"
    return {
        "bundle": str(bundle_dir),
        "chip": device.name,
        "clock_mhz": clock_hz / 1e6,
        "step_rate_hz": step_rate,
        "units": bundle.manifest.features.size,
        "classes": bundle.manifest.readout.classes,
        "memory_bits": cost["memory_bits"],
        "cycles_per_frame": cost["cycles_per_step"],
        "readout_cycles": cost["readout_cycles"],
        "busy_fraction": busy,
        "energy_basis": "45 nm per-op proxy (dynamic only)",
        "energy_per_frame_nj": cost["step_pj"] * 1e-3,
        "energy_per_inference_nj": (cost["step_pj"] * steps + cost["readout_pj"]) * 1e-3,
        "steps_per_inference": steps,
        "fits": miss is None,
        "miss": miss,
    }
