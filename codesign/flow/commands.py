"""``codesign flow`` and ``codesign demo``: a recipe to a chip in one command (``register(app, wrap)``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from codesign.atomic import write_text

__all__ = ["register", "run_flow"]

DEMO_RECIPE = Path("models/copy_first_cmru.yaml")


def run_flow(opts, *, console: Console, force: list[str] | None = None, json_path: Path | None = None) -> int:
    """Run the stages of ``opts`` (a :class:`~codesign.flow.recipe_flow.FlowOptions`), print a summary."""
    from codesign.flow.recipe_flow import flow_stages, flow_summary
    from codesign.flow.stages import run_stages

    def progress(line: str) -> None:
        console.print(f"flow: {line}", highlight=False, soft_wrap=True)

    outcomes = run_stages(flow_stages(opts), opts.folder, progress=progress, force=force or ())
    rows = flow_summary(opts)
    table = Table(title=f"codesign flow: {opts.recipe} on {opts.device}", title_justify="left")
    table.add_column("figure")
    table.add_column("value")
    for label, value in rows:
        table.add_row(label, value)
    table.add_row(
        "stages",
        ", ".join(
            f"{o.name} {'skipped' if o.status == 'skipped' else f'{o.seconds:.0f} s'}" for o in outcomes
        ),
    )
    table.add_row("artifacts", str(opts.folder))
    console.print(table)
    if json_path is not None:
        figures = {
            "recipe": str(opts.recipe),
            "device": opts.device,
            "folder": str(opts.folder),
            "stages": [
                {"name": o.name, "status": o.status, "seconds": round(o.seconds, 3)} for o in outcomes
            ],
            "summary": dict(rows),
        }
        write_text(json_path, json.dumps(figures, indent=2) + "\n")
    return 0


def register(app: typer.Typer, wrap: Callable) -> None:
    """Add ``codesign flow`` and ``codesign demo`` to ``app``."""

    @app.command("flow")
    @wrap
    def flow(
        recipe: Annotated[Path, typer.Argument(help="recipe YAML (models/*.yaml, or your own)")],
        device: Annotated[str, typer.Option(help="up5k, hx8k, ecp5-25k, ecp5-85k or asic")] = "up5k",
        out: Annotated[
            Path | None, typer.Option("--out", help="folder of every artifact (default runs/flow/<recipe>)")
        ] = None,
        step_rate: Annotated[
            float, typer.Option("--step-rate", help="steps per second the build must meet")
        ] = 100.0,
        clock: Annotated[
            float | None, typer.Option("--clock", help="clock in MHz (default: the device's)")
        ] = None,
        objective: Annotated[
            str, typer.Option(help="what the mapper minimises: energy, area or latency")
        ] = "area",
        sequences: Annotated[
            int, typer.Option(help="test sequences simulated bit-exact against golden")
        ] = 20,
        train_device: Annotated[
            str | None, typer.Option("--train-device", help="where training runs: auto, cpu or cuda")
        ] = None,
        force: Annotated[
            list[str] | None, typer.Option("--force", help="rerun this stage even if unchanged")
        ] = None,
        json_path: Annotated[
            Path | None, typer.Option("--json", help="stages and summary figures as JSON")
        ] = None,
    ) -> None:
        """Train, export, map, simulate, synthesise and report a recipe; a rerun skips unchanged stages."""
        from codesign.flow.recipe_flow import FlowOptions

        folder = out if out is not None else Path("runs/flow") / Path(recipe).stem
        opts = FlowOptions(
            recipe=recipe,
            folder=folder,
            device=device,
            step_rate=step_rate,
            clock_mhz=clock,
            objective=objective,
            sequences=sequences,
            train_device=train_device,
        )
        sys.exit(run_flow(opts, console=Console(), force=force, json_path=json_path))

    @app.command("demo")
    @wrap
    def demo(
        out: Annotated[Path, typer.Option("--out", help="folder of the demo's artifacts")] = Path(
            "runs/demo"
        ),
        recipe: Annotated[Path, typer.Option(help="recipe to train")] = DEMO_RECIPE,
        device: Annotated[str, typer.Option(help="up5k, hx8k, ecp5-25k, ecp5-85k or asic")] = "up5k",
        sequences: Annotated[int, typer.Option(help="test sequences simulated in the RTL")] = 200,
    ) -> None:
        """The flow on the demo recipe: train, export, map to the UP5K, simulate, synthesise, report."""
        from codesign.flow.recipe_flow import FlowOptions

        opts = FlowOptions(recipe=recipe, folder=out, device=device, sequences=sequences)
        sys.exit(run_flow(opts, console=Console()))
