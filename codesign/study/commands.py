"""``codesign report-cells``: the command line of the studies."""

from __future__ import annotations

from collections.abc import Callable

import typer


def register(app: typer.Typer, wrap: Callable) -> None:
    from codesign.study.cells import report_cells

    app.command("report-cells")(wrap(report_cells))
