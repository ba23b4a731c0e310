"""``codesign report BUILD``: the command line of :mod:`codesign.report` (``register(app, wrap)``)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from codesign.atomic import write_text

__all__ = ["register", "report"]


def report(
    build: Annotated[
        Path, typer.Argument(help="build directory made by `codesign rtl BUNDLE --out BUILD --lanes P`")
    ],
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the report JSON here")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="report directory (default BUILD/report)")] = None,
    step_rate: Annotated[
        float, typer.Option("--step-rate", help="steps per second (100 = 10 ms frames)")
    ] = 100.0,
    clock_mhz: Annotated[
        float | None,
        typer.Option("--clock-mhz", help="clock (default: lowest synth Fmax in BUILD, else 30 MHz)"),
    ] = None,
    sequences: Annotated[int, typer.Option(help="input sequences to simulate")] = 2,
    steps: Annotated[
        int | None, typer.Option(help="at most this many steps per sequence (default: all)")
    ] = None,
    lanes: Annotated[
        str | None, typer.Option(help="lane counts to compare, e.g. 1,2,4 (default 1, 2, 4, ... d)")
    ] = None,
    leak: Annotated[
        float, typer.Option("--leak-nw-per-um2", help="assumed leakage per um^2 of ASIC area")
    ] = 0.01,
) -> None:
    """Latency, energy / power proxy, area and comparisons of a build: markdown, JSON and a PNG."""
    from codesign.report.figures import build_figures
    from codesign.report.render import pareto_png, render_markdown

    lane_list = [int(x) for x in lanes.split(",")] if lanes else None
    figures = build_figures(
        build,
        step_rate=step_rate,
        clock_mhz=clock_mhz,
        sequences=sequences,
        steps=steps,
        lanes=lane_list,
        leak_nw_per_um2=leak,
    )
    out = out or Path(build) / "report"
    command = "codesign report " + shlex.join(sys.argv[2:]) if len(sys.argv) > 2 else None
    figures["command"] = command
    pareto_png(figures, out / "pareto.png")
    text = json.dumps(figures, indent=2) + "\n"
    write_text(out / "report.json", text)
    if json_path is not None:
        write_text(json_path, text)
    write_text(out / "report.md", render_markdown(figures, "pareto.png", command))
    lat, en = figures["latency"], figures["energy"]
    print(
        f"{figures['bundle']} P={figures['lanes']}: {lat['cycles_per_step']:.1f} cycles/step, "
        f"{lat['time_per_step_us']:.2f} us/step at {lat['clock_mhz']:g} MHz (margin {lat['realtime_margin']:.0f}x at "
        f"{lat['step_rate_hz']:g} steps/s), {en['energy_uj_per_inference'] * 1e3:.2f} nJ/inference, "
        f"{en['power_uw']:.3f} uW; report {out}/report.md"
    )


def register(app: typer.Typer, wrap: Callable) -> None:
    from codesign.report.cells import report_cells

    app.command("report")(wrap(report))
    app.command("report-cells")(wrap(report_cells))
