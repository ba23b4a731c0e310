"""Quantize a trained hardware-profile run and write its deployment bundle (format 2).

The export checks, on the whole test set, that the quantized torch model (rebuilt from the bundle
alone, :func:`codesign.quant.stack.deployed_from_bundle`) and the golden integer model agree to
the bit, and records the float and quantized accuracies in the bundle's provenance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from codesign import __version__
from codesign.bundle.io import Bundle, check_weights, save_bundle
from codesign.bundle.reorder import reorder_selective
from codesign.errors import CodesignError
from codesign.golden.model import quantize_inputs, run_golden
from codesign.nn.hardware import HW_CELLS, HardwareStack
from codesign.quant.stack import deployed_from_bundle, quantize_stack
from codesign.train.recipe import QuantSpec, Recipe
from codesign.train.repeat import run_threads
from codesign.train.trainer import evaluate, load_run, make_recipe_task, with_training_grids

SUPPORTED = (
    f"the hardware profile (recipe model.arch: hardware) with cells {sorted(HW_CELLS)}, eps in {{-1, 0, 1}}"
)


def check_deployable(model: torch.nn.Module) -> HardwareStack:
    """Refuse models no bundle can describe, saying why and what is supported."""
    if not isinstance(model, HardwareStack):
        raise CodesignError(
            f"a {type(model).__name__} is not deployable: only {SUPPORTED} maps to the accelerator family "
            "(the papers' backbones have LayerNorm, GLU MLPs and sigmoid gates the hardware does not have)"
        )
    if model.readout_hidden:
        raise CodesignError(
            f"a hidden readout layer (model.readout_hidden: {model.readout_hidden}) is a float study option: "
            "bundles describe a linear readout; set readout_hidden: 0 to deploy"
        )
    return model


def bundle_from_model(
    model: torch.nn.Module, recipe: Recipe, task, quant: QuantSpec | None = None, *, name: str | None = None
) -> Bundle:
    """Quantize ``model`` with ``quant`` (default: the recipe's) into an in-memory bundle.

    Moves ``model`` to the CPU first (in place): quantization, the bundle and the golden model it
    is checked against are CPU integer arithmetic, bit-exact whatever device trained the weights."""
    model = check_deployable(model).to("cpu")
    quant = quant or recipe.quant
    gen = torch.Generator().manual_seed(recipe.seed + 7)
    calibration, _ = task.sample(quant.calibration_sequences, gen)
    manifest, weights = quantize_stack(
        model,
        name=name or recipe.name,
        input_bits=quant.input.bits,
        input_frac=quant.input.frac,
        layer_formats=quant.layer_formats(len(model.cells)),
        readout_formats=quant.readout.model_dump(),
        calibration=calibration,
    )
    return Bundle(manifest, check_weights(manifest, weights))


def _selective_report(bundle: Bundle, golden, orders: dict[int, list[int]]) -> dict:
    """The update rate p of the selective layers on the test set and the neuron orders applied."""
    layers = bundle.manifest.layers
    selective = [i for i, layer in enumerate(layers) if layer.selective is not None]
    if not selective:
        return {}
    opened = sum(float(golden.layers[i].opens.sum()) for i in selective)
    steps = golden.layers[selective[0]].opens.size
    return {
        "update_rate": opened / (steps * sum(layers[i].size for i in selective)),
        "selective_neuron_orders": {str(i): order for i, order in orders.items()},
    }


def golden_accuracy(bundle: Bundle, task, x: torch.Tensor, y: torch.Tensor) -> tuple[float, object]:
    golden = run_golden(bundle, quantize_inputs(bundle, x.numpy()))
    labels = y.numpy()
    mask = labels != -100
    return float((golden.classes[mask] == labels[mask]).mean()), golden


def host_fields(task, classes: int) -> dict:
    """The class names and input scaling a host needs (``provenance.labels``,
    ``provenance.input_scaling``, ``codesign/bundle/host.py``), where the task knows them: the
    series tasks (``uea``, ``files``) do."""
    fields: dict = {}
    names = getattr(task, "classes", None)
    if isinstance(names, list) and len(names) == classes and len(set(map(str, names))) == classes:
        fields["labels"] = [str(n) for n in names]
    scaling = getattr(task, "input_scaling", None)
    if isinstance(scaling, dict):
        fields["input_scaling"] = scaling
    return fields


def export_run(run_dir: str | Path, out: str | Path, quant: QuantSpec | None = None) -> tuple[Bundle, dict]:
    """Quantize a run's best checkpoint, check torch == golden on its test set, write the bundle.

    Computes with the thread count the run was trained with (its float scores repeat), and reports
    three accuracies: ``trained_test_accuracy`` (what ``codesign train`` reported: for a QAT run of
    a deployable model, the deployed model's), ``float_test_accuracy`` (the checkpoint's forward
    pass as training ran it, fake quantization and input grid included) and
    ``quantized_test_accuracy`` (the golden model's, the hardware's).
    """
    with run_threads(Path(run_dir)):
        return _export_run(run_dir, out, quant)


def _export_run(run_dir: str | Path, out: str | Path, quant: QuantSpec | None) -> tuple[Bundle, dict]:
    recipe, model, summary = load_run(run_dir)
    task = make_recipe_task(recipe)
    # selective-update layers: neurons that open together share lane groups (the logits are unchanged)
    bundle, orders = reorder_selective(bundle_from_model(model, recipe, task, quant))
    x_test, y_test = task.split("test", recipe.seed)
    quantized, golden = golden_accuracy(bundle, task, x_test, y_test)
    torch_logits = deployed_from_bundle(bundle).integer_logits(x_test)
    mismatches = int((torch_logits != golden.logits).reshape(len(x_test), -1).any(axis=1).sum())
    if mismatches:
        raise AssertionError(f"quantized torch and golden disagree on {mismatches} test sequences: a bug")
    report = {
        "recipe": recipe.name,
        "run": str(run_dir),
        "task": {"name": recipe.task.name, **recipe.task.run_options(recipe.seed)},  # as trained
        "seed": recipe.seed,
        "trained_test_accuracy": summary.get("test"),
        "float_test_accuracy": evaluate(with_training_grids(recipe, model), task, x_test, y_test),
        "quantized_test_accuracy": quantized,
        "torch_vs_golden_mismatches": mismatches,
        "test_sequences": len(y_test),
        "events_per_step": float(np.mean(golden.events)),
        **_selective_report(bundle, golden, orders),
        "codesign_version": __version__,
        "best_val_accuracy": summary.get("best_val"),
    }
    report |= host_fields(task, bundle.manifest.readout.classes)
    saved = save_bundle(out, bundle.manifest.model_copy(update={"provenance": report}), bundle.weights)
    return saved, report
