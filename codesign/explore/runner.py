"""Run a space's trials on Dask distributed: a local cluster by default, or an existing one.

The graph has three kinds of tasks (:mod:`codesign.explore.trial`): one ``train`` per distinct
float run, one ``bundle`` per distinct quantized model and one ``trial`` per row of the table;
Dask runs whatever is ready on whichever worker is free (the cluster comes from
:func:`codesign.runner.dask_client`). Finished trials (``DIR/trials/<hash>.json``)
are skipped, failed ones too unless ``retry_failed``; a failure is recorded with its error and the
other trials go on. Nothing in a trial depends on the cluster: ``--scheduler ADDRESS`` sends the
same functions and dicts to an existing cluster (``DIR`` must then be on a filesystem its workers
share).

Devices (``--device``, :func:`stage_device`): on a machine where the trainings go to a GPU, the
local cluster is the usual CPU workers plus one worker holding the Dask resource ``GPU: 1``; the
tasks that train ask for that resource, so trainings take turns on the GPU while exports, golden
scoring and hardware figures run on the CPU workers beside it. On an existing cluster ``--device
cuda`` asks for the same resource (start its GPU workers with ``dask worker ... --resources
GPU=1``). On a CPU-only machine the cluster and the tasks are what they are without the option.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codesign.atomic import write_text
from codesign.device import parse_device, resolve_device
from codesign.explore.results import describe, write_results
from codesign.explore.space import bundle_key, expand, load_space, run_key
from codesign.explore.trial import (
    bundle_stage,
    failed_record,
    read_json,
    train_stage,
    trial_path,
    trial_stage,
    write_json,
)
from codesign.runner import GPU, dask_client

__all__ = ["explore"]


def stage_device(device: str | None, scheduler: str | None) -> tuple[str | None, bool]:
    """(the device spec the stages train with, whether training tasks ask for :data:`GPU`).

    On a local cluster the driver resolves ``device`` (its GPU is the workers' GPU), so a machine
    without one gets ``cpu`` and no resources; an existing cluster's workers resolve it themselves
    and only an explicit ``cuda`` asks for the resource.
    """
    spec = parse_device(device)
    if scheduler is not None:
        return (None if device is None else spec), spec.startswith("cuda")
    resolved = resolve_device(spec)
    return str(resolved), resolved.type == "cuda"


def _submit(
    client, trials: list[dict[str, Any]], device: str | None = None, gpu: bool = False
) -> dict[Any, dict[str, Any]]:
    """Futures of the trials (train and bundle tasks shared through their keys); with ``gpu`` the
    tasks that train ask for the resource :data:`GPU`."""
    runs: dict[str, Any] = {}
    bundles: dict[str, Any] = {}
    futures = {}
    trains = GPU if gpu else None
    for trial in trials:
        recipe, root = trial["bundle"]["recipe"], trial["root"]
        rh, bh = run_key(recipe), bundle_key(trial["bundle"])
        if rh not in runs:
            runs[rh] = client.submit(train_stage, recipe, root, device, key=f"train-{rh}", resources=trains)
        if bh not in bundles:
            kind = trial["bundle"]["quantization"]  # qat and scratch train again
            bundles[bh] = client.submit(
                bundle_stage, trial["bundle"], root, runs[rh], device, key=f"bundle-{bh}",
                resources=trains if kind != "ptq" else None,
            )  # fmt: skip
        futures[client.submit(trial_stage, trial, bundles[bh], key=f"trial-{trial['hash']}")] = trial
    return futures


def _line(record: dict[str, Any]) -> str:
    what = describe(record)
    if record["status"] != "ok":
        return f"[red]failed[/] {what}: {record['error']}"
    r, f = record["result"], record["figures"]
    text = f"ok {what}: accuracy {100 * r['accuracy']:.2f}% (float {100 * r['float_accuracy']:.2f}%)"
    if f:
        text += (
            f", {f['memory_bits']} memory bits, {f['energy_pj_proxy']:.0f} pJ (proxy), "
            f"{f['cycles_per_step_est']:.1f} cycles/step (est.)"
        )
    return text


def explore(
    space_file: str | Path,
    out: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    retry_failed: bool = False,
    console: Console | None = None,
    command: str | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """Run (or continue) a space into ``out``; returns counts and the paths written.

    ``device`` (``None``: each recipe's ``train.device``) is where the trainings run."""
    console = console or Console()
    device, gpu = stage_device(device, scheduler)
    t0 = time.monotonic()
    space, base = load_space(space_file)
    root = Path(out).resolve()
    trials = expand(space, base, root)
    root.mkdir(parents=True, exist_ok=True)
    command = command or f"codesign explore {shlex.quote(str(space_file))} --out {shlex.quote(str(out))}"
    write_text(root / "space.yaml", Path(space_file).read_text())
    done, pending = {}, []
    for trial in trials:
        record = read_json(trial_path(root, trial["hash"]))
        if record is not None and (record["status"] == "ok" or not retry_failed):
            done[trial["hash"]] = record
        else:
            pending.append(trial)
    runs = len({run_key(t["bundle"]["recipe"]) for t in trials})
    console.print(
        f"{space.name}: {len(trials)} trials ({runs} float runs), {len(done)} already recorded, "
        f"{len(pending)} to run -> {root}",
        highlight=False,
        soft_wrap=True,
    )
    failed = 0
    interrupted = False
    if pending:
        bar = Progress(
            TextColumn("[bold]explore"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        try:
            with dask_client(scheduler, workers, gpu) as client, bar:
                from distributed import as_completed

                job = bar.add_task("trials", total=len(pending))
                futures = _submit(client, pending, device, gpu)
                for future in as_completed(list(futures)):
                    trial = futures[future]
                    if future.status == "error":
                        record = failed_record(trial, future.exception())
                        write_json(trial_path(root, trial["hash"]), record)
                        failed += 1
                    else:
                        record = future.result()
                    done[trial["hash"]] = record
                    bar.advance(job)
                    n = len(done)
                    bar.console.print(f"[{n}/{len(trials)}] {_line(record)}", highlight=False, soft_wrap=True)
        except KeyboardInterrupt:
            interrupted = True
    wall = time.monotonic() - t0
    paths = write_results(space, [done[t["hash"]] for t in trials if t["hash"] in done], root, command, wall)
    summary = {
        "trials": len(trials),
        "finished": len(done),
        "failed": sum(r["status"] != "ok" for r in done.values()),
        "failed_now": failed,
        "wall_s": wall,
        "interrupted": interrupted,
        **paths,
    }
    write_json(root / "last_invocation.json", summary | {"command": command})
    return summary
