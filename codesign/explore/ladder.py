"""Ablation ladders on Dask: one table of accuracy against memory bits, one row per rung.

A ladder (``flows/ladder/*.yaml``) asks "which element of a network carries the accuracy?": a base
recipe, seeds, and rungs, each rung a list of ``KEY=VALUE`` overrides of the base (the ``--set`` of
``codesign train``: ``model.layers=[...]``, ``model.arch=backbone``, ``model.drop=[gate]``)::

    base: sd_base.yaml           # relative to the ladder file
    seeds: [0, 1, 2]
    weight_bits: 4               # memory bits = parameters x weight_bits + state words x 16
    rungs:
      - name: m_cmru
        what: "minGRU 16 -> cmru 16"
        deploy: true             # also export: the golden (= hardware) accuracy and bundle figures
        set: ["model.layers=[{cell: mingru, size: 16}, {cell: cmru, size: 16, eps: 1.0}]"]

Unlike ``codesign explore``, whose space spans a grid of named axes, a rung can change anything a
recipe holds (per-layer stacks, backbone elements), which is what an ablation needs. Every
(rung, seed) is one task on the exploration's Dask cluster (:func:`codesign.runner.dask_client`):
it trains into ``OUT/RUNG/sSEED`` (a finished run is reused, an interrupted one resumed), exports
deployed rungs to ``OUT/RUNG/sSEED.bundle`` and records its figures in ``OUT/RUNG/sSEED.json``, so
a stopped ladder loses nothing finished. Every rung's recipe is validated before anything runs.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codesign.atomic import write_text
from codesign.bundle.io import validation_message
from codesign.errors import CodesignError
from codesign.explore.trial import read_json, write_json

__all__ = [
    "STATE_BITS",
    "Ladder",
    "Rung",
    "jobs",
    "ladder_markdown",
    "load_ladder",
    "rung_stage",
    "run_ladder",
]

STATE_BITS = 16
"""Bits of one recurrent state word in the memory-bits column (the accelerator's state registers)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Rung(_Strict):
    """One step of the ladder: a name (its directory), a description and the base's overrides."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$")
    what: str = ""
    deploy: bool = False
    overrides: list[str] = Field(default_factory=list, alias="set")
    seeds: list[int] | None = None


class Ladder(_Strict):
    base: str
    seeds: list[int] = Field(min_length=1)
    weight_bits: int = Field(default=4, ge=1, le=32)
    rungs: list[Rung] = Field(min_length=1)

    @field_validator("rungs")
    @classmethod
    def _names_unique(cls, rungs: list[Rung]) -> list[Rung]:
        names = [r.name for r in rungs]
        if repeated := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"rung names repeat: {', '.join(repeated)}")
        return rungs


def load_ladder(path: str | Path) -> tuple[Ladder, Path]:
    """The ladder file and its base recipe's path; every rung's recipe is checked here."""
    from codesign.train.recipe import load_recipe

    path = Path(path)
    if not path.is_file():
        raise CodesignError("ladder file not found", path=path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=path) from None
    if not isinstance(data, dict):
        raise CodesignError("a ladder is a mapping with base, seeds and rungs", path=path)
    try:
        ladder = Ladder.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None
    base = (path.parent / ladder.base).resolve()
    if not base.is_file():
        raise CodesignError(
            f"base: recipe {ladder.base!r} not found (relative to the ladder file)", path=path
        )
    for rung in ladder.rungs:
        try:
            load_recipe(base, [f"seed={(rung.seeds or ladder.seeds)[0]}", *rung.overrides])
        except CodesignError as err:
            raise CodesignError(f"rung {rung.name!r}: {err}", path=path) from None
    return ladder, base


def jobs(ladder: Ladder, base: Path, out: Path, only: set[str] | None = None) -> list[dict[str, Any]]:
    """One job per (rung, seed): plain dicts, so any Dask worker can run them."""
    unknown = sorted((only or set()) - {r.name for r in ladder.rungs})
    if unknown:
        raise CodesignError(
            f"--only {','.join(unknown)}: no such rung; rungs: {', '.join(r.name for r in ladder.rungs)}"
        )
    out = out.resolve()
    found = []
    for rung in ladder.rungs:
        if only and rung.name not in only:
            continue
        for i, seed in enumerate(rung.seeds or ladder.seeds):
            run = out / rung.name / f"s{seed}"
            found.append(
                {
                    "rung": rung.name,
                    "seed": seed,
                    "base": str(base),
                    "overrides": [f"seed={seed}", *rung.overrides],
                    "run_dir": str(run),
                    "bundle_dir": str(run.with_suffix(".bundle")) if rung.deploy else None,
                    "figures": rung.deploy and i == 0,  # hardware figures of the rung's first seed
                    "record": str(run.with_suffix(".json")),
                }
            )
    return found


def _finished(job: dict[str, Any]) -> bool:
    """Whether a job needs no training or export (its record, or the artifacts to rebuild it, exist)."""
    if (record := read_json(Path(job["record"]))) is not None and record.get("job") == _identity(job):
        return True
    done = (Path(job["run_dir"]) / "summary.json").is_file() and _holds_recipe(job)
    return done and (job["bundle_dir"] is None or (Path(job["bundle_dir"]) / "manifest.yaml").is_file())


def _holds_recipe(job: dict[str, Any]) -> bool:
    """Whether the job's run directory was trained from the job's recipe (an edited rung's is not)."""
    from codesign.train.recipe import load_recipe
    from codesign.train.trainer import RECIPE_FILE, holds_recipe

    return holds_recipe(Path(job["run_dir"]) / RECIPE_FILE, load_recipe(job["base"], job["overrides"]))


def _identity(job: dict[str, Any]) -> dict[str, Any]:
    return {k: job[k] for k in ("base", "overrides", "bundle_dir", "figures")}


def _sizes(run: Path) -> tuple[int, int]:
    """Parameters and recurrent state words of a finished run's model."""
    from codesign.nn.backbone import Backbone
    from codesign.train.trainer import load_run

    _, model, _ = load_run(run)
    params = sum(p.numel() for p in model.parameters())
    if isinstance(model, Backbone):
        states = sum(m.cell.hidden_size for m in model.modules() if hasattr(m, "cell"))
    else:
        states = sum(c.hidden_size for c in model.cells)
    return params, states


def rung_stage(job: dict[str, Any], device: str | None = None) -> dict[str, Any]:
    """Train (or find) one (rung, seed) on ``device`` (``None``: the recipe's ``train.device``),
    export it (on the CPU) when the rung deploys; write and return its record."""
    record_path = Path(job["record"])
    if (record := read_json(record_path)) is not None and record.get("job") == _identity(job):
        return record
    from codesign.explore.trial import _one_thread, _train
    from codesign.train.recipe import load_recipe

    _one_thread()
    t0 = time.monotonic()
    run = Path(job["run_dir"])
    recipe = load_recipe(job["base"], job["overrides"])
    if (run / "summary.json").is_file() and not _holds_recipe(job):
        raise CodesignError(
            f"rung {job['rung']!r} changed since {run} was trained; move that directory away to retrain it",
            path=run,
        )
    from codesign.device import use_device

    with use_device(device):
        summary = _train(recipe, run)
    params, states = _sizes(run)
    record: dict[str, Any] = {
        "job": _identity(job),
        "rung": job["rung"],
        "seed": job["seed"],
        "float_accuracy": summary["test"],
        "parameters": params,
        "state_words": states,
        "golden_accuracy": None,
        "torch_vs_golden_mismatches": None,
        "figures": None,
    }
    if job["bundle_dir"] is not None:
        bundle = Path(job["bundle_dir"])
        if not (bundle / "manifest.yaml").is_file():
            from codesign.quant.export import export_run

            export_run(run, bundle)
        prov = yaml.safe_load((bundle / "manifest.yaml").read_text())["provenance"]
        record["golden_accuracy"] = prov["quantized_test_accuracy"]
        record["torch_vs_golden_mismatches"] = prov.get("torch_vs_golden_mismatches")
        if job["figures"]:
            from codesign.explore.hardware import hardware_figures

            record["figures"] = hardware_figures(bundle, lanes=1)
    record["wall_s"] = time.monotonic() - t0
    write_json(record_path, record)
    return record


def _stat(values: list[float]) -> str:
    """Mean [min; max] in percent; a single seed is its value with "(1 seed)"."""
    if not values:
        return "-"
    v = [100 * x for x in values]
    if len(v) == 1:
        return f"{v[0]:.1f} (1 seed)"
    return f"{sum(v) / len(v):.1f} [{min(v):.1f}; {max(v):.1f}]"


def _rows(ladder: Ladder, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per rung with at least one finished seed, in the ladder's order."""
    rows = []
    for rung in ladder.rungs:
        mine = sorted((r for r in records if r["rung"] == rung.name), key=lambda r: r["seed"])
        if not mine:
            continue
        params, states = mine[0]["parameters"], mine[0]["state_words"]
        figures = next((r["figures"] for r in mine if r["figures"]), None)
        floats = [r["float_accuracy"] for r in mine]
        goldens = [r["golden_accuracy"] for r in mine if r["golden_accuracy"] is not None]
        rows.append(
            {
                "rung": rung.name,
                "what": rung.what,
                "seeds": [r["seed"] for r in mine],
                "parameters": params,
                "state_words": states,
                "memory_bits": params * ladder.weight_bits + states * STATE_BITS,
                "bundle_memory_bits": figures["memory_bits"] if figures else None,
                "energy_nj_proxy": figures["energy_pj_proxy"] / 1e3 if figures else None,
                "float_accuracy": floats,
                "golden_accuracy": goldens,
                "float": _stat(floats),
                "golden": _stat(goldens),
            }
        )
    return rows


HEADER = (
    "rung",
    "network",
    "parameters",
    "state words",
    "memory bits (w{w} + s{s})",
    "bundle memory bits",
    "energy proxy (nJ / inference)",
    "float (%)",
    "golden (%)",
)


def _cells(row: dict[str, Any]) -> list[str]:
    energy = row["energy_nj_proxy"]
    return [
        row["rung"],
        row["what"],
        str(row["parameters"]),
        str(row["state_words"]),
        str(row["memory_bits"]),
        "-" if row["bundle_memory_bits"] is None else str(row["bundle_memory_bits"]),
        "-" if energy is None or math.isnan(energy) else f"{energy:.1f}",
        row["float"],
        row["golden"],
    ]


def ladder_markdown(ladder: Ladder, rows: list[dict[str, Any]], command: str) -> str:
    """The table as markdown, ending with the command that made it."""
    head = [h.format(w=ladder.weight_bits, s=STATE_BITS) for h in HEADER]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines) + f"\n\nMade by: `{command}`\n"


def run_ladder(
    ladder_file: str | Path,
    out: str | Path,
    *,
    only: set[str] | None = None,
    train: bool = True,
    scheduler: str | None = None,
    workers: int | None = None,
    console: Console | None = None,
    command: str | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """Run (or continue) a ladder into ``out``; writes ``table.md`` and ``table.json`` there.

    With ``train=False`` nothing is trained or exported: the table holds the finished jobs only.
    ``device`` (``None``: each recipe's ``train.device``) is where the trainings run, as in
    :func:`codesign.explore.runner.explore`.
    """
    from codesign.explore.runner import stage_device
    from codesign.runner import GPU, dask_client

    console = console or Console()
    device, gpu = stage_device(device, scheduler)
    t0 = time.monotonic()
    ladder, base = load_ladder(ladder_file)
    root = Path(out).resolve()
    todo = jobs(ladder, base, root, only)
    command = command or f"codesign ladder {shlex.quote(str(ladder_file))} --out {shlex.quote(str(out))}"
    done = [_finished(j) for j in todo]
    finished = [j for j, ok in zip(todo, done, strict=True) if ok]
    pending = [j for j, ok in zip(todo, done, strict=True) if not ok] if train else []
    console.print(
        f"{ladder_file}: {len(todo)} runs, {len(finished)} finished, {len(pending)} to run -> {root}",
        highlight=False,
        soft_wrap=True,
    )
    records = [rung_stage(j) for j in finished]  # records read, or rebuilt from run and bundle: cheap
    failures: list[str] = []
    interrupted = False
    if pending:
        bar = Progress(
            TextColumn("[bold]ladder"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True,
        )  # fmt: skip
        try:
            with dask_client(scheduler, workers, gpu) as client, bar:
                from distributed import as_completed

                futures = {
                    client.submit(
                        rung_stage, j, device, key=f"ladder-{j['record']}", resources=GPU if gpu else None
                    ): j
                    for j in pending
                }
                task = bar.add_task("runs", total=len(futures))
                for future in as_completed(list(futures)):
                    job = futures[future]
                    bar.advance(task)
                    if future.status == "error":
                        failures.append(f"{job['rung']} seed {job['seed']}: {future.exception()}")
                        bar.console.print(f"[red]failed[/] {failures[-1]}", highlight=False, soft_wrap=True)
                        continue
                    rec = future.result()
                    records.append(rec)
                    golden = rec["golden_accuracy"]
                    bar.console.print(
                        f"{rec['rung']} seed {rec['seed']}: float {100 * rec['float_accuracy']:.1f} %"
                        + ("" if golden is None else f", golden {100 * golden:.1f} %"),
                        highlight=False,
                        soft_wrap=True,
                    )
        except KeyboardInterrupt:
            interrupted = True
    rows = _rows(ladder, records)
    table = Table(title=f"{ladder_file} ({len(records)}/{len(todo)} runs)")
    for h in HEADER:
        table.add_column(h.format(w=ladder.weight_bits, s=STATE_BITS))
    for r in rows:
        table.add_row(*_cells(r))
    console.print(table)
    root.mkdir(parents=True, exist_ok=True)
    write_text(root / "table.md", ladder_markdown(ladder, rows, command))
    summary = {
        "command": command,
        "runs": len(todo),
        "finished": len(records),
        "failed": failures,
        "interrupted": interrupted,
        "wall_s": time.monotonic() - t0,
        "rows": rows,
    }
    write_text(root / "table.json", json.dumps(summary, indent=1) + "\n")
    return summary
