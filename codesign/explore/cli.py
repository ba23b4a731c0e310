"""``codesign explore SPACE.yaml --out DIR``: the command, registered on the main app."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


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
    ) -> None:
        """Design-space exploration on Dask: train, quantize, golden accuracy, hardware figures; resumable."""
        from codesign.explore.runner import explore as run_explore

        console = Console()
        command = f"codesign explore {shlex.quote(str(space))} --out {shlex.quote(str(out))}"
        command += f" --scheduler {scheduler}" if scheduler else ""
        command += f" --workers {workers}" if workers else ""
        command += " --retry-failed" if retry_failed else ""
        result = run_explore(
            space, out, scheduler=scheduler, workers=workers, retry_failed=retry_failed, console=console,
            command=command,
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
