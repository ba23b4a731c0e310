"""``codesign prove`` and ``codesign formal``: the command line of the formal checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from codesign.errors import CodesignError

__all__ = ["prove", "formal", "register"]

_CHECKS = "stream,paths,unit,config"


def prove(
    build: Annotated[Path, typer.Argument(help="a build directory from codesign rtl")],
    depth: Annotated[int, typer.Option(help="cycles the bounded checks cover from reset")] = 16,
    checks: Annotated[
        str, typer.Option(help="comma-separated: stream, live, config, paths, unit, equiv")
    ] = _CHECKS,
    keep: Annotated[Path | None, typer.Option(help="folder that receives each run (a failure's VCD)")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per check")] = 900,
) -> None:
    """Prove a build's stream rules, port paths, update units and configuration writes (SymbiYosys).

    The accelerator is rebuilt from BUILD's bundle with the options in its build.json. Exit code 1
    when a check fails; with --keep its counterexample is a VCD under KEEP/<check>/."""
    from codesign.formal.jobs import CHECK_NAMES, accelerator_options, run_job

    options = accelerator_options(build)
    wanted = [c.strip() for c in checks.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CHECK_NAMES]
    if unknown:
        raise CodesignError(f"--checks {','.join(unknown)}: each must be one of {', '.join(CHECK_NAMES)}")
    failed = 0
    for check in wanted:
        job = dict(options, source=f"bundle:{build}", design=build.name, check=check, mode="bmc", depth=depth)
        if check == "live":
            from codesign.formal.bounds import result_bound
            from codesign.formal.jobs import load_design, make_accelerator

            job["depth"] = result_bound(make_accelerator(load_design(job["source"]), job).plan) + 3
        if check == "unit":
            job["depth"] = 1
        row = run_job(job, timeout=timeout, keep=keep / check if keep else None)
        where = f" (trace {row['trace']})" if row.get("trace") and row["status"] == "FAIL" else ""
        typer.echo(f"{check:7s} depth {job['depth']:3d}: {row['status']} in {row['seconds']} s{where}")
        for line in row["failed"]:
            typer.echo(f"         {line}")
        failed += row["status"] not in ("PASS", "N/A")
    if failed:
        raise typer.Exit(1)


def formal(
    out: Annotated[Path, typer.Option(help="folder of the rows (resumable)")] = Path("build/formal"),
    report: Annotated[Path, typer.Option(help="the Markdown table")] = Path("docs/reports/formal.md"),
    workers: Annotated[int | None, typer.Option(help="Dask workers (default: one per core)")] = None,
    scheduler: Annotated[str | None, typer.Option(help="an existing Dask scheduler's address")] = None,
    mutants: Annotated[bool, typer.Option(help="run the FaultSet mutants too")] = True,
    timeout: Annotated[float, typer.Option(help="seconds per check")] = 1800,
) -> None:
    """The formal suite (make formal): reference and random designs, liveness, iCE40 equivalence,
    mutants; resumable through OUT/rows, on the Dask runner."""
    from codesign.formal.suite import expected, plan_jobs, run_suite, write_report

    jobs = plan_jobs(mutants=mutants)
    typer.echo(f"{len(jobs)} checks; rows in {out / 'rows'}")

    def progress(row: dict) -> None:
        typer.echo(
            f"{row['design']:28s} P={row['lanes']} {row['check']:6s} {row['status']:7s} {row['seconds']} s",
            err=True,
        )

    rows = run_suite(jobs, out, workers=workers, scheduler=scheduler, timeout=timeout, progress=progress)
    write_report(rows, report, "make formal")
    bad = [r for r in rows if not expected(r)]
    typer.echo(f"{len(rows) - len(bad)} of {len(rows)} rows as expected -> {report}")
    if bad:
        raise typer.Exit(1)


def register(app: typer.Typer, wrap: Callable) -> None:
    app.command("prove")(wrap(prove))
    app.command("formal")(wrap(formal))
