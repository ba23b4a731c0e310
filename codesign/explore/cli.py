"""``codesign explore SPACE.yaml --out DIR``: the command, registered on the main app."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from codesign.device import DEVICE_HELP


def register(app: typer.Typer, user_errors) -> None:
    @app.command()
    @user_errors
    def explore(
        space: Annotated[Path, typer.Argument(help="space file, e.g. flows/explore/jv_cells_widths.yaml")],
        out: Annotated[Path, typer.Option("--out", help="results directory (re-running continues it)")],
        scheduler: Annotated[
            str | None, typer.Option(help="address of an existing Dask scheduler (default: a local cluster)")
        ] = None,
        workers: Annotated[
            int | None, typer.Option(help="local cluster workers, one thread each (default: cores)")
        ] = None,
        retry_failed: Annotated[bool, typer.Option(help="run recorded failed trials again")] = False,
        device: Annotated[str | None, typer.Option("--device", help=DEVICE_HELP)] = None,
    ) -> None:
        """Design-space exploration on Dask: train, quantize, golden accuracy, hardware figures; resumable."""
        from codesign.explore.runner import explore as run_explore

        console = Console()
        command = f"codesign explore {shlex.quote(str(space))} --out {shlex.quote(str(out))}"
        command += f" --scheduler {scheduler}" if scheduler else ""
        command += f" --workers {workers}" if workers else ""
        command += " --retry-failed" if retry_failed else ""
        command += f" --device {device}" if device else ""
        result = run_explore(
            space, out, scheduler=scheduler, workers=workers, retry_failed=retry_failed, console=console,
            command=command, device=device,
        )  # fmt: skip
        console.print(
            f"{result['finished']}/{result['trials']} trials recorded ({result['failed']} failed) in "
            f"{result['wall_s']:.0f} s -> {result['summary']}, {result['parquet']}",
            highlight=False,
            soft_wrap=True,
        )
        if result["interrupted"]:
            console.print("interrupted: run the same command again to continue", highlight=False)
            raise typer.Exit(130)

    @app.command()
    @user_errors
    def ladder(
        ladder_file: Annotated[
            Path, typer.Argument(metavar="LADDER", help="ladder file, e.g. flows/ladder/sd_stack_q4.yaml")
        ],
        out: Annotated[Path, typer.Option("--out", help="runs directory (re-running continues it)")],
        only: Annotated[str, typer.Option(help="comma-separated rung names to run (default: all)")] = "",
        train: Annotated[
            bool, typer.Option("--train/--no-train", help="--no-train: table of the finished runs only")
        ] = True,
        scheduler: Annotated[
            str | None, typer.Option(help="address of an existing Dask scheduler (default: a local cluster)")
        ] = None,
        workers: Annotated[
            int | None, typer.Option(help="local cluster workers, one thread each (default: cores)")
        ] = None,
        json_out: Annotated[
            Path | None,
            typer.Option("--json", help="also write the table's rows here (OUT/table.json always)"),
        ] = None,
        device: Annotated[str | None, typer.Option("--device", help=DEVICE_HELP)] = None,
    ) -> None:
        """Ablation ladder on Dask: train (and export) every rung x seed, one table; resumable."""
        from codesign.atomic import write_text
        from codesign.explore.ladder import run_ladder

        console = Console()
        command = f"codesign ladder {shlex.quote(str(ladder_file))} --out {shlex.quote(str(out))}"
        command += f" --only {shlex.quote(only)}" if only else ""
        command += "" if train else " --no-train"
        command += f" --workers {workers}" if workers else ""
        command += f" --device {device}" if device else ""
        names = {s.strip() for s in only.split(",") if s.strip()}
        result = run_ladder(
            ladder_file, out, only=names or None, train=train, scheduler=scheduler, workers=workers,
            console=console, command=command, device=device,
        )  # fmt: skip
        if json_out is not None:
            write_text(json_out, (Path(out) / "table.json").read_text())
        console.print(
            f"{result['finished']}/{result['runs']} runs in {result['wall_s']:.0f} s -> {Path(out) / 'table.md'}",
            highlight=False,
            soft_wrap=True,
        )
        if result["interrupted"]:
            console.print("interrupted: run the same command again to continue", highlight=False)
            raise typer.Exit(130)
        if result["failed"]:
            raise typer.Exit(1)
