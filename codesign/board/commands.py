"""``codesign board BUILD --port PORT --inputs X.npy``: a build's bitstream on a board, checked
against the golden model. ``register(app, wrap)`` adds the command for ``codesign/cli.py``;
importing this module is cheap (pyserial, numpy and Amaranth load when the command runs)."""

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


def summary_table(figures: dict, port: str) -> Table:
    table = Table(title=f"{figures['bundle']} on {port}", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("identity", figures["identity"]),
        ("sequences", str(figures["sequences"])),
        (
            "bit-exact with the golden model",
            "yes" if figures["bit_exact"] else f"NO ({figures['golden_mismatches']} differ)",
        ),
        ("sequences / s over the link", f"{figures['sequences_per_second']}"),
        ("bytes sent / received", f"{figures['bytes_sent']} / {figures['bytes_received']}"),
    ]
    if "accuracy" in figures:
        rows.append(("accuracy (board)", f"{100 * figures['accuracy']:.2f} %"))
        rows.append(("accuracy (golden model)", f"{100 * figures['golden_accuracy']:.2f} %"))
    if figures.get("weights_bytes"):
        rows.append(("weights loaded (bytes)", str(figures["weights_bytes"])))
    for name in ("cycles", "sequences", "results", "input_stall_cycles", "result_stall_cycles"):
        if name in figures["counters"]:
            rows.append((f"counter {name}", str(figures["counters"][name])))
    for row in rows:
        table.add_row(*row)
    return table


def board(
    build: Annotated[
        Path, typer.Argument(help="build directory (codesign rtl) whose bitstream the board holds")
    ],
    port: Annotated[str, typer.Option("--port", help="serial port: /dev/ttyUSB1, COM3, a pty path, loop://")],
    inputs: Annotated[
        Path, typer.Option("--inputs", help="sequences (N, T, M) .npy: integers or floats to quantize")
    ],
    labels: Annotated[Path | None, typer.Option("--labels", help="classes (N,) .npy: accuracy")] = None,
    baud: Annotated[int, typer.Option("--baud", help="UART rate the bitstream was made for")] = 115200,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the figures here")] = None,
    test_set: Annotated[int | None, typer.Option("--test-set", help="only the first N sequences")] = None,
    weights: Annotated[
        Path | None, typer.Option("--weights", help="bundle to load first (a --weights runtime/spram build)")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="seconds without a byte before giving up")
    ] = 2.0,
    flash: Annotated[
        bool, typer.Option("--flash", help="program the board first (openFPGALoader or iceprog)")
    ] = False,
    target: Annotated[
        str | None, typer.Option("--target", help="with --flash: the synth run (board or device name)")
    ] = None,
) -> None:
    """Stream sequences through the bitstream on a board; bit-exactness, accuracy, sequences per second."""
    from rich.progress import Progress

    from codesign.board.driver import Board
    from codesign.board.evaluate import load_inputs, run_on_board
    from codesign.bundle import load_bundle

    if flash:
        from codesign.board.flash import flash as program

        print(f"board: programmed with {program(build, target)}", file=sys.stderr)
    if weights is None and _build_weights(build) == "spram":
        weights = build  # its single-port RAMs hold nothing until loaded: load the build's own bundle
        print("board: a --weights spram build: loading the build's own weights first", file=sys.stderr)
    bundle = load_bundle(weights if weights is not None else build)
    xq, y = load_inputs(bundle, inputs, labels, test_set)
    with Board.open(build, port, baud=baud, timeout_s=timeout) as link:
        weights_bytes = link.load_weights(bundle) if weights is not None else 0
        with Progress(transient=True, console=Console(stderr=True)) as bar:
            task = bar.add_task("sequences", total=len(xq))
            figures = run_on_board(link, bundle, xq, y, progress=lambda n: bar.update(task, completed=n))
    figures = {
        "bundle": bundle.manifest.name,
        "port": port,
        "baud": baud,
        "identity": f"0x{link.protocol.identity:08x}",
        "weights_bytes": weights_bytes,
    } | figures
    if json_path is not None:
        write_text(json_path, json.dumps(figures, indent=2) + "\n")
    Console().print(summary_table(figures, port))
    if not figures["bit_exact"]:
        raise typer.Exit(1)


def _build_weights(build: Path) -> str | None:
    """The weights mode ``BUILD/build.json`` records (None where it cannot be read: the driver
    reports that build folder's problem itself)."""
    try:
        return json.loads((Path(build) / "build.json").read_text()).get("weights")
    except (OSError, ValueError, AttributeError):
        return None


def register(app: typer.Typer, wrap: Callable) -> None:
    app.command("board")(wrap(board))
