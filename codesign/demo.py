"""``codesign demo``: the whole flow on the default recipe, end to end, in a few minutes.

train -> export (quantize, torch == golden check) -> Verilog -> cocotb + Icarus against the golden
model on test sequences -> one summary table. Each stage writes its artifacts under ``out``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from codesign.atomic import write_npy
from codesign.train import load_recipe, train
from codesign.train.trainer import make_recipe_task


def run_demo(out: Path, recipe_path: Path, *, sequences: int, lanes: int, console: Console) -> int:
    from codesign.hw.build import build_rtl
    from codesign.quant import export_run
    from codesign.verify.runner import run_sim

    out = Path(out)
    recipe = load_recipe(recipe_path)
    run_dir, bundle_dir, build_dir = out / "run", out / "bundle", out / "build"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # the demo always trains from scratch
    timings: dict[str, float] = {}

    t = time.monotonic()
    console.print(f"[bold]1/4 train[/] {recipe_path} -> {run_dir}")
    result = train(recipe, run_dir)
    timings["train"] = time.monotonic() - t

    t = time.monotonic()
    console.print(f"[bold]2/4 export[/] -> {bundle_dir}")
    bundle, report = export_run(run_dir, bundle_dir)
    timings["export"] = time.monotonic() - t

    t = time.monotonic()
    lanes = min(lanes, bundle.manifest.layers[0].size)
    console.print(f"[bold]3/4 rtl[/] {lanes} lanes -> {build_dir}")
    build_rtl(bundle_dir, build_dir, lanes=lanes)
    timings["rtl"] = time.monotonic() - t

    t = time.monotonic()
    task = make_recipe_task(recipe)
    x_test, y_test = task.split("test", recipe.seed)
    write_npy(out / "test_inputs.npy", x_test[:sequences].numpy())
    write_npy(out / "test_labels.npy", y_test[:sequences].numpy())
    console.print(f"[bold]4/4 sim[/] {sequences} test sequences under Icarus")
    sim = run_sim(
        build_dir,
        "icarus",
        vectors=sequences,
        inputs=out / "test_inputs.npy",
        labels=out / "test_labels.npy",
        gaps=False,  # driven as fast as it accepts: the cycles per step are the design's
    )
    timings["sim"] = time.monotonic() - t

    table = Table(title=f"codesign demo: {recipe.name}")
    table.add_column("figure")
    table.add_column("value")
    table.add_row("training", f"{result.iterations} iterations, {result.stopped}")
    table.add_row(
        "accuracy float (test)", f"{report['float_test_accuracy']:.4f} on {report['test_sequences']}"
    )
    table.add_row("accuracy quantized = golden (test)", f"{report['quantized_test_accuracy']:.4f}")
    table.add_row(f"accuracy RTL ({sim.sequences} test sequences)", f"{sim.accuracy:.4f}")
    table.add_row("RTL vs golden", sim.summary_line())
    table.add_row(
        "cycles per step",
        f"{sim.cycles_per_step:.2f} with {lanes} lanes (floor: sum over layers of ceil(d/P) x non-zero "
        f"inputs or events = {sim.cycle_floor_per_step:.2f}; an all-zero step still costs ceil(d/P) cycles "
        "per layer because the biases alone can update the state)",
    )
    table.add_row("wall time", ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    table.add_row("artifacts", f"run {run_dir}\nbundle {bundle_dir}\nverilog {build_dir / 'accelerator.v'}")
    console.print(table)
    return 0 if sim.mismatches == 0 else 1
