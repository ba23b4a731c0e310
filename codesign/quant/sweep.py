"""Quantization against accuracy: one trained run, several weight widths, the hardware's accuracy.

For each width B the run is exported with B-bit weights (post-training quantization, state grids
from calibration) and scored by the golden model on the whole test set -- which is what the
hardware computes. With ``qat_iterations > 0`` each width is also fine-tuned with fake-quantized
weights (``codesign quantize``) before export. Results go to a markdown table with the command.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from codesign.atomic import write_text
from codesign.quant.export import bundle_from_model, golden_accuracy
from codesign.train.recipe import Recipe, parse_recipe
from codesign.train.trainer import RECIPE_FILE, evaluate, load_run, make_recipe_task, train

QAT_LR = 2e-4
"""Default fine-tuning learning rate: small, so 8-bit fine-tuning stays near the float optimum."""


def qat_recipe(run_dir: Path, recipe: Recipe, bits: int, iterations: int, lr: float = QAT_LR) -> Recipe:
    """The recipe that fine-tunes ``run_dir`` with ``bits``-bit fake-quantized weights."""
    data = recipe.model_dump(mode="json")
    data["name"] = f"{recipe.name}_qat{bits}"
    data["quant"] = with_bits(recipe, bits).model_dump(mode="json")
    if data["train"]["eps_schedule"] == "anneal":  # the annealed run ended at eps = 0: stay there
        data["train"]["eps_schedule"] = "constant"
        data["model"]["eps"] = 0.0
        for layer in data["model"].get("layers") or []:
            if "eps" in layer:
                layer["eps"] = 0.0
    data["train"] |= {
        "init_from": str(run_dir),
        "qat_bits": bits,
        "iterations": iterations,
        "lr": lr,
        "warmup": 0.05,
        "max_seconds": None,
    }
    return parse_recipe(data, stored=True)  # the run's recipe, as it trained


def quantize_run(
    run_dir: Path, out: Path, bits: int, iterations: int, progress: bool = True, lr: float = QAT_LR
):
    recipe, _, _ = load_run(run_dir)
    return train(qat_recipe(Path(run_dir), recipe, bits, iterations, lr), out, progress=progress)


def with_bits(recipe: Recipe, bits: int):
    q = recipe.quant.model_copy(deep=True)
    return q.model_copy(
        update={
            "layer": q.layer.model_copy(update={"weight_bits": bits}),
            "readout": q.readout.model_copy(update={"weight_bits": max(bits, 4)}),
        }
    )


def scratch_recipe(recipe: Recipe, bits: int) -> Recipe:
    """The run's own recipe trained from scratch with ``bits``-bit fake-quantized weights."""
    data = recipe.model_dump(mode="json")
    data["name"] = f"{recipe.name}_qat{bits}_scratch"
    data["quant"] = with_bits(recipe, bits).model_dump(mode="json")
    data["train"] |= {"qat_bits": bits, "init_from": None}
    return parse_recipe(data, stored=True)  # the run's recipe, as it trained


def _golden_of_run(run_dir: Path, task, x, y) -> float:
    """Golden accuracy of a (QAT) run exported with its own recipe's formats."""
    qrecipe = parse_recipe(yaml.safe_load((run_dir / RECIPE_FILE).read_text()), stored=True)
    _, qmodel, _ = load_run(run_dir)
    acc, _ = golden_accuracy(bundle_from_model(qmodel, qrecipe, task), task, x, y)
    return acc


def sweep(
    run_dir: Path,
    widths: list[int],
    *,
    qat_iterations: int,
    out: Path,
    work: Path,
    console,
    qat_lr: float = QAT_LR,
    qat_scratch: bool = False,
) -> Path:
    """Write the accuracy table of ``run_dir`` against weight width.

    Columns: post-training quantization; with ``qat_iterations`` QAT fine-tuning from the float
    run; with ``qat_scratch`` the recipe trained again from scratch with fake-quantized weights
    (same iterations and schedule), which at 4 bits and below often beats fine-tuning because the
    float optimum leans on weight differences the grid cannot hold.
    """
    t0 = time.monotonic()
    recipe, model, _ = load_run(run_dir)
    task = make_recipe_task(recipe)
    x, y = task.split("test", recipe.seed)
    float_acc = evaluate(model, task, x, y)
    columns = ["post-training"]
    if qat_iterations:
        columns.append(f"QAT fine-tuning ({qat_iterations} iterations)")
    if qat_scratch:
        columns.append(f"QAT from scratch ({recipe.train.iterations} iterations)")
    rows = [["float", f"{100 * float_acc:.2f}"] + [""] * (len(columns) - 1)]
    for bits in widths:
        ptq, _ = golden_accuracy(bundle_from_model(model, recipe, task, with_bits(recipe, bits)), task, x, y)
        row = [f"{bits}-bit weights", f"{100 * ptq:.2f}"]
        if qat_iterations:
            qdir = work / f"qat{bits}-{qat_iterations}it-lr{qat_lr:g}"  # one run per setting: reruns reuse
            quantize_run(run_dir, qdir, bits, qat_iterations, progress=False, lr=qat_lr)
            row.append(f"{100 * _golden_of_run(qdir, task, x, y):.2f}")
        if qat_scratch:
            sdir = work / f"scratch{bits}"
            train(scratch_recipe(recipe, bits), sdir, progress=False)
            row.append(f"{100 * _golden_of_run(sdir, task, x, y):.2f}")
        rows.append(row)
        console.print(
            f"  {bits}-bit: " + ", ".join(f"{c} {v}%" for c, v in zip(columns, row[1:], strict=True))
        )
    flags = f" --qat-iterations {qat_iterations}" if qat_iterations else ""
    flags += f" --qat-lr {qat_lr:g}" if qat_iterations and qat_lr != QAT_LR else ""
    flags += " --qat-scratch" if qat_scratch else ""
    lines = [
        f"# Quantization against accuracy: {recipe.name}",
        "",
        f"Run `{run_dir}` ({recipe.task.name}, {len(x)} test sequences). Quantized accuracies are the golden "
        "integer model's (what the hardware computes); the readout keeps at least 4-bit weights (one "
        "shared scale, since argmax compares its rows); inputs, biases, state and alpha keep the recipe's "
        "formats.",
        "",
        "| weights | " + " | ".join(f"accuracy (%), {c}" for c in columns) + " |",
        "|---|" + "---|" * len(columns),
        *["| " + " | ".join(r) + " |" for r in rows],
        "",
        f"Made by: `codesign sweep {run_dir} --bits {','.join(map(str, widths))}{flags}` "
        f"({time.monotonic() - t0:.0f} s).",
        "",
    ]
    write_text(out, "\n".join(lines))
    return out
