"""Command-line entry points of the FPGA flow and the ASIC area proxy, for ``codesign/cli.py``.

``register(app, wrap)`` adds ``codesign synth BUILD --device D`` and ``codesign area BUILD``.
Importing this module is cheap: Amaranth and the tools are loaded only when a command runs.
"""

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

_DEVICES = "up5k, hx8k, ecp5-25k or ecp5-85k"


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=160)


def _progress(text: str) -> None:
    print(f"synth: {text}", file=sys.stderr, flush=True)


def synth_table(summary: dict) -> Table:
    """Utilisation, Fmax and memory placement of one synth summary as a rich table."""
    title = f"{summary['bundle']} P={summary['lanes']} on {summary['part']}: " + (
        f"Fmax {summary['fmax_mhz']:.1f} MHz (target {summary['target_mhz']:g}, "
        f"{'met' if summary['timing_met'] else 'MISSED'})"
        if summary["status"] == "ok"
        else "DOES NOT FIT"
    )
    table = Table(title=title, title_justify="left", min_width=len(title))
    table.add_column("resource")
    table.add_column("used", justify="right")
    table.add_column("available", justify="right")
    table.add_column("%", justify="right")
    util = summary["utilisation"]
    res = summary["resources"]
    rows = [
        ("LUT4", res["lut"], None),
        ("FF", res["ff"], None),
        ("carry", res["carry"], None),
    ]
    for bel in ("ICESTORM_LC", "TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_SLICE"):
        if bel in util:
            rows.append((f"{bel} (placed)", util[bel]["used"], util[bel]["available"]))
    for label, bel in (
        ("BRAM (EBR)", "ICESTORM_RAM"),
        ("BRAM (DP16KD)", "DP16KD"),
        ("SPRAM", "ICESTORM_SPRAM"),
        ("DSP (SB_MAC16)", "ICESTORM_DSP"),
        ("DSP (MULT18X18D)", "MULT18X18D"),
        ("IO", "SB_IO"),
        ("IO", "TRELLIS_IO"),
    ):
        if bel in util:
            rows.append((label, util[bel]["used"], util[bel]["available"]))
    for label, used, avail in rows:
        pct = f"{100 * used / avail:.0f}" if avail else ""
        table.add_row(label, str(used), "" if avail is None else str(avail), pct)
    for kind, row in (summary.get("block_ram_fill") or {}).items():
        label = "SPRAM fill (bits / capacity)" if kind == "spram" else "block RAM fill (bits / capacity)"
        table.add_row(label, str(row["bits"]), str(row["capacity"]), f"{100 * row['fill']:.0f}")
    for mem in summary["memories"]:
        size = f"{mem['depth']}x{mem['width']}" if mem["bits"] else "?"
        if mem.get("blocks"):
            size += f", {mem['blocks']} block{'s' if mem['blocks'] > 1 else ''}"
        name = mem["name"].removeprefix("fpga_top.")
        table.add_row(f"memory {name} ({size})", str(mem["bits"] or "?"), mem["placed"], "")
    return table


def hierarchy_table(rows: list[dict]) -> Table:
    """The cells of each module (``codesign synth --hierarchy``), largest first, with a total."""
    table = Table(
        title="per module (unflattened synthesis: LUTs of a less optimised netlist; proportions)",
        title_justify="left",
    )
    keys = ("lut", "ff", "carry", "bram", "dsp", "lutram")
    table.add_column("module")
    for key in keys:
        table.add_column(key.upper() if key != "lutram" else "LUT RAM", justify="right")
    for row in rows:
        if any(row[key] for key in keys):
            table.add_row(row["path"], *(str(row[key]) for key in keys))
    table.add_row("total", *(str(sum(row[key] for row in rows)) for key in keys), style="bold")
    return table


def mapping_warning(build: Path, device: str) -> str | None:
    """Why ``build`` may not suit ``device`` (not made by ``codesign rtl --device``, or for
    another device) and the command that maps it; None when it was mapped for ``device``."""
    try:
        info = json.loads((Path(build) / "build.json").read_text())
    except (OSError, ValueError):
        return None  # synthesize names the missing or broken build.json
    mapped = (info.get("mapping") or {}).get("device")
    if mapped == device:
        return None
    why = "was not mapped for a device" if mapped is None else f"was mapped for {mapped}, not {device}"
    return (
        f"{build} {why}; `codesign rtl {build} --out {build} --device {device}` picks the build that fits "
        f"the {device} (the build directory holds a copy of its bundle)"
    )


def synth(
    build: Annotated[Path, typer.Argument(help="build directory made by `codesign rtl BUNDLE --out BUILD`")],
    device: Annotated[str | None, typer.Option("--device", help=f"{_DEVICES} (default up5k)")] = None,
    board: Annotated[
        str | None,
        typer.Option(
            "--board",
            help="icebreaker, upduino3, ulx3s-85f or orangecrab-25f: the board's pins, oscillator and a PLL",
        ),
    ] = None,
    freq: Annotated[
        float | None, typer.Option("--freq", help="timing target in MHz (default: 30 on iCE40, 80 on ECP5)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the summary JSON here")] = None,
    baud: Annotated[int, typer.Option(help="UART rate of the wrapper")] = 115200,
    seed: Annotated[int, typer.Option(help="nextpnr placement seed")] = 1,
    timeout: Annotated[float, typer.Option(help="seconds each tool may run")] = 3600.0,
    ram: Annotated[
        str,
        typer.Option(
            help="block: every memory in block RAM (EBR / DP16KD / SPRAM); auto: yosys' choice (LUT RAM too)"
        ),
    ] = "block",
    dsp: Annotated[
        bool, typer.Option(help="multipliers in DSP blocks (UP5K SB_MAC16, ECP5 MULT18X18D)")
    ] = True,
    hierarchy: Annotated[
        bool,
        typer.Option(
            "--hierarchy", help="also list the cells of every module (a second, unflattened yosys run)"
        ),
    ] = False,
    counters: Annotated[
        bool,
        typer.Option(
            "--counters", help="serialise the counters for `codesign board` (about 2 FF per counter bit)"
        ),
    ] = False,
) -> None:
    """Synthesise, place and route the accelerator behind a UART; bitstream, utilisation and Fmax in BUILD/synth/DEVICE/."""
    from codesign.fpga.synth import SynthOptions, synthesize

    warning = mapping_warning(build, device)
    if warning:
        print(f"synth: warning: {warning}", file=sys.stderr, flush=True)
    summary = synthesize(
        build,
        device if device is not None or board is not None else "up5k",
        SynthOptions(
            freq_mhz=freq,
            baud=baud,
            seed=seed,
            timeout_s=timeout,
            ram=ram,
            dsp=dsp,
            hierarchy=hierarchy,
            counters=counters,
        ),
        board=board,
        progress=_progress,
    )
    if json_path is not None:
        write_text(json_path, json.dumps(summary, indent=2) + "\n")
    console = _console()
    console.print(synth_table(summary))
    if summary.get("hierarchy"):
        console.print(hierarchy_table(summary["hierarchy"]))
    cp = summary.get("critical_path")
    if cp:
        console.print(
            f"critical path {cp['delay_ns']:.1f} ns ({cp['logic_levels']} logic levels, {cp['routing_ns']:.1f} ns "
            f"routing): {cp['first_net']} -> {cp['to']}",
            highlight=False,
            soft_wrap=True,
        )
    where = summary["directory"]
    if summary["status"] == "ok":
        console.print(
            f"bitstream {where}/{summary['bitstream']}, summary {where}/summary.json", highlight=False
        )
    else:
        console.print(f"does not fit {summary['part']}; summary {where}/summary.json", highlight=False)
        raise typer.Exit(1)


def area(
    build: Annotated[Path, typer.Argument(help="build directory made by `codesign rtl`")],
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the area JSON here")] = None,
    memory_model: Annotated[
        str, typer.Option(help="per-bit area of memories: latch (default) or dff")
    ] = "latch",
    timeout: Annotated[float, typer.Option(help="seconds yosys may run")] = 3600.0,
) -> None:
    """ASIC area proxy: yosys generic gates, CMOS transistors and sky130_fd_sc_hd area in um^2."""
    from codesign.fpga.area import area_report, area_table

    report = area_report(
        build,
        memory_model=memory_model,
        timeout_s=timeout,
        progress=lambda t: print(f"area: {t}", file=sys.stderr),
    )
    if json_path is not None:
        write_text(json_path, json.dumps(report, indent=2) + "\n")
    console = _console()
    console.print(area_table(report))


def register(app: typer.Typer, wrap: Callable) -> None:
    app.command("synth")(wrap(synth))
    app.command("area")(wrap(area))
