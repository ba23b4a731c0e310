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
from codesign.errors import CodesignError
from codesign.report.analog import DEFAULT_NEURONS, DEFAULT_STEPS

__all__ = ["margin", "register", "report"]


def _analog_options(analog: bool | None, neurons: int, steps: int) -> tuple[dict | None, str]:
    """What the analog column measures, or why it is off: ``--analog`` insists on ngspice and the
    sky130 models, the default uses them when they are here and says so when they are not."""
    from codesign.report.analog import availability

    if analog is False:
        return None, "--no-analog"
    missing = availability()
    if missing is None:
        return {"neurons": neurons, "steps": steps}, "--no-analog"
    if analog:
        raise CodesignError(f"--analog needs ngspice and the sky130 models: {missing}")
    off = f"ngspice or the sky130 models are not available ({missing})"
    print(f"report: no analog column: {off}", file=sys.stderr)
    return None, off


def _print_summary(figures: dict, out: Path) -> None:
    """A line each for the digital proxy, the FPGA power estimate and the analog cells."""
    lat, en = figures["latency"], figures["energy"]
    print(
        f"{figures['bundle']} P={figures['lanes']}: {lat['cycles_per_step']:.1f} cycles/step, "
        f"{lat['time_per_step_us']:.2f} us/step at {lat['clock_mhz']:g} MHz (margin {lat['realtime_margin']:.0f}x at "
        f"{lat['step_rate_hz']:g} steps/s), {en['energy_uj_per_inference'] * 1e3:.2f} nJ/inference, "
        f"{en['power_uw']:.3f} uW; report {out}/report.md"
    )
    fp = figures["fpga_power"]
    print(
        f"FPGA power (estimate, {fp['device']}, {fp['basis']}): static {fp['static_mw']:.3f} mW, dynamic "
        f"{fp['dynamic_mw']:.3f} mW at {fp['clock_mhz']:g} MHz, average {fp['average_mw']:.3f} mW and "
        f"{fp['energy_uj_per_step']:.3g} uJ/step at {fp['step_rate_hz']:g} steps/s"
    )
    an = figures["analog"]
    if an["status"] == "measured":
        print(
            f"analog cells (ngspice, {len(an['neurons_simulated'])} of {an['layer_neurons']} neurons x "
            f"{an['steps_simulated']} steps, scaled): {an['power_uw'] * 1e3:.1f} nW, "
            f"{an['energy_pj_per_step']:.1f} pJ/step, {an['energy_uj_per_inference'] * 1e3:.2f} nJ/inference"
            + (" (cached measurement)" if an["cached"] else "")
        )
    else:
        print(f"analog: {an['status']}: {an['reason']}")


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
    analog: Annotated[
        bool | None,
        typer.Option(
            "--analog/--no-analog",
            help="ngspice power of the bundle's BMRU/CMRU cells beside the digital proxy "
            "(default: on when ngspice and the sky130 models are here)",
        ),
    ] = None,
    analog_neurons: Annotated[
        int, typer.Option(help="neurons simulated in ngspice (spread over the layer; scaled to it)")
    ] = DEFAULT_NEURONS,
    analog_steps: Annotated[
        int, typer.Option(help="at most this many steps of the first input sequence played in ngspice")
    ] = DEFAULT_STEPS,
    fpga_device: Annotated[
        str | None,
        typer.Option(
            "--fpga-device",
            help="chip of the FPGA power estimate: up5k, hx8k, ecp5-25k or ecp5-85k (default: the netlist "
            "activity's, else the build's target, else a synthesised one, else up5k)",
        ),
    ] = None,
) -> None:
    """Latency, energy / power proxy, area and comparisons of a build: markdown, JSON and a PNG."""
    from codesign.report.figures import build_figures
    from codesign.report.render import pareto_png, render_markdown

    lane_list = [int(x) for x in lanes.split(",")] if lanes else None
    analog_opts, analog_off = _analog_options(analog, analog_neurons, analog_steps)
    figures = build_figures(
        build,
        step_rate=step_rate,
        clock_mhz=clock_mhz,
        sequences=sequences,
        steps=steps,
        lanes=lane_list,
        leak_nw_per_um2=leak,
        analog=analog_opts,
        analog_off=analog_off,
        fpga_device=fpga_device,
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
    _print_summary(figures, out)


def margin(
    bundles: Annotated[Path, typer.Option(help="folder of bundles")] = Path("models/bundles"),
    out: Annotated[Path | None, typer.Option("--out", help="write the Markdown table here")] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="also write the table as JSON here")
    ] = None,
    lanes: Annotated[str, typer.Option(help="lane counts, comma-separated")] = "1,4",
    only: Annotated[str | None, typer.Option(help="only these bundles, comma-separated names")] = None,
    sequences: Annotated[int, typer.Option(help="input sequences per bundle for the cycle model")] = 2,
    steps: Annotated[int | None, typer.Option(help="at most this many steps per sequence")] = None,
    step_rate: Annotated[float, typer.Option("--step-rate", help="steps per second")] = 100.0,
) -> None:
    """Real-time margin of every bundle on the iCEBreaker (12 MHz), UART link included, with the FPGA power estimate."""
    from codesign.report.margin import margin_table, render_margin

    try:
        lane_list = tuple(int(x) for x in lanes.split(","))
    except ValueError:
        raise CodesignError(f"--lanes {lanes!r}: comma-separated integers, e.g. 1,4") from None
    table = margin_table(
        bundles,
        lane_list,
        sequences=sequences,
        steps=steps,
        step_rate=step_rate,
        only=only.split(",") if only else None,
    )
    command = "codesign margin " + shlex.join(sys.argv[2:]) if len(sys.argv) > 2 else "codesign margin"
    table["command"] = command
    text = render_margin(table, command)
    if out is not None:
        write_text(out, text)
    if json_path is not None:
        write_text(json_path, json.dumps(table, indent=2) + "\n")
    print(text)


def register(app: typer.Typer, wrap: Callable) -> None:
    app.command("report")(wrap(report))
    app.command("margin")(wrap(margin))
