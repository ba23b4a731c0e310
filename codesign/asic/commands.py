"""Command-line entry points of the ASIC flow, for ``codesign/cli.py``.

``register(app, wrap)`` adds ``codesign asic-cells`` (characterise the sky130 cells, write the
Liberty file) and ``codesign asic BUILD`` (map a build onto them: cells, area, leakage, critical
path, clock power). Importing this module is cheap: the tools load when a command runs.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from codesign.atomic import write_text

_CORNERS = "tt (1.8 V 25 C), ss (1.6 V 100 C), ff (1.95 V -40 C), tt_1v5 (1.5 V 25 C)"


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=160)


def cells_table(records: list[dict], label: str) -> Table:
    """One row per characterised cell: area, input capacitance, a mid-grid delay and energy, leakage."""
    table = Table(title=f"sky130_fd_sc_hd cells characterised in ngspice at {label}", title_justify="left")
    for col in ("cell", "area um^2", "input cap fF", "delay ps", "energy/transition fJ", "leakage pW"):
        table.add_column(col, justify="left" if col == "cell" else "right")
    for rec in records:
        i, j = len(rec["slews"]) // 2, len(rec["loads"]) // 2
        arc = rec["arcs"][0]
        caps = [p["capacitance"] for p in rec["pins"].values()]
        delay = (arc["cell_rise"][i][j] + arc["cell_fall"][i][j]) / 2
        energy = (arc["rise_energy"][i][j] + arc["fall_energy"][i][j]) / 2
        table.add_row(
            rec["cell"],
            f"{rec['area']:.2f}",
            f"{1e3 * min(caps):.2f}-{1e3 * max(caps):.2f}" if len(caps) > 1 else f"{1e3 * caps[0]:.2f}",
            f"{1e3 * delay:.0f}",
            f"{1e3 * energy:.1f}",
            f"{1e12 * rec['leakage_mean']:.1f}",
        )
    return table


def asic_table(report: dict) -> Table:
    """The summary of ``codesign asic``: cells, area, leakage, timing and the clock's power."""
    t = report["timing"]
    title = (
        f"{report['bundle']} P={report['lanes']} in {report['basis']}: critical path {t['delay_ns']:.2f} ns, "
        f"Fmax {t['fmax_mhz']:.0f} MHz (clock {report['clock']['mhz']:g} MHz, {'met' if report['timing_met'] else 'MISSED'})"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("cell")
    table.add_column("count", justify="right")
    table.add_column("area um^2", justify="right")
    for cell, n in report["cells"].items():
        table.add_row(cell, str(n), f"{report['area_by_cell_um2'][cell]:.0f}")
    trees = report["buffer_trees"]
    table.add_row(
        f"buf_1 (trees on nets over {trees['max_fanout']} pins, estimated)",
        str(trees["buffers"]),
        f"{trees['area_um2']:.0f}",
    )
    table.add_row(
        f"memory bits ({report['memory_bits']}: dlxtp_1 + mux2_1 each)",
        "",
        f"{report['memory_area_um2']:.0f}",
    )
    table.add_row(
        "total", str(report["cell_count"] + trees["buffers"]), f"{report['area_um2']:.0f}", style="bold"
    )
    return table


def asic_lines(report: dict) -> list[str]:
    """The power lines under the table, each with its basis, clock and idle behaviour."""
    basis, mhz = report["basis"], report["clock"]["mhz"]
    clock = report["clock"]
    idle = report["idle_power_w"]
    return [
        f"leakage ({basis}, every cell's mean over its states): {report['leakage_w'] * 1e9:.2f} nW",
        f"clock ({basis}, {mhz:g} MHz): {clock['per_cycle_pj']:.3f} pJ per cycle over {clock['clocked_cells']} clock pins "
        f"= {clock['power_w'] * 1e6:.2f} uW",
        f"idle power between steps ({basis}, {mhz:g} MHz): clock running {idle['clock running'] * 1e6:.2f} uW, "
        f"clock gated {idle['clock gated'] * 1e9:.2f} nW (leakage only)",
        "not included: data-driven switching (needs gate-level activity), clock tree buffers, wires beyond "
        f"{report['wire_load_pf_per_sink'] * 1e3:g} fF per pin, I/O",
    ]


def asic_cells(
    corner: Annotated[str, typer.Option("--corner", help=_CORNERS)] = "tt",
    workers: Annotated[int, typer.Option("--workers", help="Dask workers (cells in parallel)")] = 2,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="address of an existing Dask scheduler")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="also copy the Liberty file here")] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="write every cell's measurements here")
    ] = None,
    validate: Annotated[
        Path | None,
        typer.Option(
            "--validate", help="run the validation chains of the combinational cells; write their table here"
        ),
    ] = None,
) -> None:
    """Characterise the sky130_fd_sc_hd cells in ngspice and write their Liberty file (cached)."""
    from codesign.asic import library, pdk

    c = pdk.corner(corner)
    lib = library.build_library(corner, workers=workers, scheduler=scheduler)
    records = library.load_records(c)
    _console().print(cells_table(records, c.label))
    print(f"liberty: {lib}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib, out)
        print(f"copied to {out}")
    if json_path is not None:
        write_text(json_path, json.dumps(records, indent=1) + "\n")
    if validate is not None:
        _validate(records, c, validate)


def _validate(records: list[dict], c, out: Path) -> None:
    from codesign.asic.validate import failures, validate_cell, validation_table

    results = [validate_cell(r, c) for r in records if r["kind"] == "comb" or r["cell"] == "dfxtp_1"]
    table = validation_table(results)
    write_text(out, f"Characterised tables against direct ngspice chains at {c.label}:\n\n" + table)
    print(table)
    bad = failures(results)
    print(
        f"{len(bad)} figures outside the target (5 %, or 5 ps for times){': ' if bad else ''}{'; '.join(bad)}"
    )
    print(f"table: {out}")
    if bad:
        raise typer.Exit(1)


def asic(
    build: Annotated[Path, typer.Argument(help="build directory made by `codesign rtl BUNDLE --out BUILD`")],
    corner: Annotated[str, typer.Option("--corner", help=_CORNERS)] = "tt",
    clock: Annotated[
        float, typer.Option("--clock", help="clock frequency in MHz (abc's delay target, clock power)")
    ] = 30.0,
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the report here")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds for the yosys run")] = 3600.0,
) -> None:
    """Map a build onto the characterised sky130 cells: cells, area, leakage, critical path, clock power."""
    from codesign.asic.synth import asic_report

    report = asic_report(build, corner=corner, clock_mhz=clock, timeout_s=timeout)
    _console().print(asic_table(report))
    t = report["timing"]
    print(f"critical path ends at {t['endpoint']} through {len(t['cells'])} cells")
    for line in asic_lines(report):
        print(line)
    print(f"report: {Path(build) / 'asic' / corner / 'asic.json'}")
    if json_path is not None:
        write_text(json_path, json.dumps(report, indent=1) + "\n")


def register(app: typer.Typer, wrap: Callable) -> None:
    """Add ``asic-cells`` and ``asic`` to ``app``; ``wrap`` turns user errors into one line."""
    app.command("asic-cells")(wrap(asic_cells))
    app.command("asic")(wrap(asic))
