"""Re-run, on one GPU, the two claims this project's CPU budget left short of the papers.

* suRNN copying memory at delay 1000 (``models/copying_memory_sumingru_d1000.yaml``; the paper's
  suGRU reaches 85.31 % at T = 2000, the CPU run here stayed at chance, 12.39 %, after 400 iterations);
  ``copying_sugru`` runs the paper's suGRU cell instead (``RERUN_JOBS``).
* mGRADE flip-flop language at L = 512 (``models/flip_flop_mgrade.yaml``; paper 99.6 %, the CPU
  repro here 77.59 %, trained at L = 128 with d = 32).

Each job first times a short probe run on the device (between its first and last evaluations, at
a third and all of ``RERUN_PROBE_IT`` iterations, so the first kernels' warm-up is left out), then trains for as many iterations as ``RERUN_TRAIN_S`` seconds hold
(the cosine schedule ends where the budget does; ``train.max_seconds`` is a safety net), with
``codesign train --device``. Each job's JSON lands in ``$OUT`` (else ``runs/gpu_rerun``) as soon as
it finishes, with its metrics CSV; ``rerun.json`` collects them.

Environment: ``RERUN_DEVICE`` (default ``cuda``), ``RERUN_TRAIN_S`` (seconds of training per job,
default 200: two jobs fit about 9 minutes on an H100 with the probes and the test evaluations),
``RERUN_PROBE_IT`` (default 30), ``RERUN_JOBS`` (comma-separated job names), ``RERUN_TINY=1``
(small tasks and models: the whole script end to end on a CPU in well under a minute).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Job:
    name: str
    recipe: str
    paper: str
    cpu_here: str
    sets: tuple[str, ...] = ()
    tiny: tuple[str, ...] = field(default=())


TINY_DATA = ("task.val_size=32", "task.test_size=32", "train.eval_batches=1", "train.batch_size=8")
JOBS = {
    "copying_sumingru": Job(
        "copying_sumingru",
        "models/copying_memory_sumingru_d1000.yaml",
        paper="suGRU 85.31 % at T = 2000 (suRNN App. D.0.1); chance 12.5 %",
        cpu_here="12.39 % (chance) after 400 iterations of batch 32 in 561 s (models/results/surnn.md)",
        sets=("train.batch_size=128",),
        tiny=("task.delay=20", "model.dim=8", "model.hidden_size=8", *TINY_DATA),
    ),
    "copying_sugru": Job(
        "copying_sugru",
        "models/copying_memory_sugru_d1000.yaml",
        paper="suGRU 85.31 % at T = 2000 (suRNN App. D.0.1); chance 12.5 %",
        cpu_here="not run at delay 1000 on the CPU (suMinGRU: 12.39 %, chance)",
        sets=("train.batch_size=128",),
        tiny=("task.delay=20", "model.dim=8", "model.hidden_size=8", *TINY_DATA),
    ),
    "flip_flop_mgrade": Job(
        "flip_flop_mgrade",
        "models/flip_flop_mgrade.yaml",
        paper="mGRADE 99.6 ± 0.3 % at L = 512 (mGRADE Table 2)",
        cpu_here="77.59 % at L = 512 (trained at L = 128, d = 32, 600 iterations; models/results/flip_flop.md)",
        tiny=("task.length=32", "model.dim=8", "model.hidden_size=8", *TINY_DATA),
    ),
}
DEFAULT_JOBS = "copying_sumingru,flip_flop_mgrade"


def _train(recipe: str, out: Path, device: str, sets: list[str], timeout_s: float, log) -> None:
    """``codesign train`` in a child process (the command line a user runs), logged."""
    argv = [
        sys.executable,
        "-m",
        "codesign",
        "train",
        recipe,
        "--out",
        str(out),
        "--quiet",
        "--device",
        device,
    ]
    for item in sets:
        argv += ["--set", item]
    log.write("$ " + " ".join(argv) + "\n")
    log.flush()
    subprocess.run(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s, check=True)


def _seconds_per_iteration(run: Path) -> float:
    """Training seconds per iteration between the probe's evaluations (the first, warm-up, left out)."""
    with (run / "metrics.csv").open() as f:
        rows = [(int(r["iteration"]), float(r["elapsed_s"])) for r in csv.DictReader(f)]
    (i0, t0), (i1, t1) = rows[0], rows[-1]
    return max(1e-4, (t1 - t0) / max(1, i1 - i0))


def _gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def run_job(
    job: Job, work: Path, out: Path, device: str, train_s: float, probe_it: int, tiny: bool, log
) -> dict:
    # a few threads draw the batches on the CPU while the GPU trains
    base = list(job.sets) + (list(job.tiny) if tiny else ["train.threads=4"])
    probe = work / f"{job.name}-probe"
    shutil.rmtree(probe, ignore_errors=True)
    t0 = time.monotonic()
    probe_sets = [
        f"train.iterations={probe_it}",
        f"train.eval_every={max(1, probe_it // 3)}",
        "train.max_seconds=null",
    ]
    _train(job.recipe, probe, device, base + probe_sets, 600, log)
    per_it = _seconds_per_iteration(probe)
    iterations = max(probe_it, int(train_s / per_it))
    run = work / job.name
    shutil.rmtree(run, ignore_errors=True)
    sets = [
        f"train.iterations={iterations}",
        f"train.eval_every={max(1, iterations // 25)}",
        f"train.max_seconds={1.15 * train_s:.0f}",
    ]
    _train(job.recipe, run, device, base + sets, 3 * train_s + 300, log)
    summary = json.loads((run / "summary.json").read_text())
    record = {
        "job": job.name,
        "recipe": job.recipe,
        "overrides": base + sets,
        "device": summary.get("device", device),
        "gpu": _gpu_name(),
        "seconds_per_iteration": per_it,
        "iterations_planned": iterations,
        "paper": job.paper,
        "cpu_here": job.cpu_here,
        "tiny": tiny,
        "wall_s_with_probe": time.monotonic() - t0,
        **summary,
    }
    (out / f"{job.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    shutil.copyfile(run / "metrics.csv", out / f"{job.name}_metrics.csv")
    return record


def main() -> int:
    out = Path(os.environ.get("OUT") or REPO / "runs" / "gpu_rerun")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("RERUN_WORK") or REPO / "runs" / "gpu_rerun_work")
    tiny = os.environ.get("RERUN_TINY", "") == "1"
    device = os.environ.get("RERUN_DEVICE") or ("cpu" if tiny else "cuda")
    train_s = float(os.environ.get("RERUN_TRAIN_S") or (1 if tiny else 200))
    probe_it = int(os.environ.get("RERUN_PROBE_IT") or (3 if tiny else 30))
    names = [n.strip() for n in (os.environ.get("RERUN_JOBS") or DEFAULT_JOBS).split(",") if n.strip()]
    unknown = [n for n in names if n not in JOBS]
    if unknown:
        print(f"error: RERUN_JOBS names unknown jobs {unknown}; jobs: {', '.join(JOBS)}", file=sys.stderr)
        return 2
    import torch

    header = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": _gpu_name(),
        "device": device,
        "train_s": train_s,
        "probe_iterations": probe_it,
        "tiny": tiny,
    }
    print(json.dumps(header), flush=True)
    records, failed = [], []
    with (out / "rerun.log").open("w") as log:
        for name in names:
            try:
                record = run_job(JOBS[name], work, out, device, train_s, probe_it, tiny, log)
            except (subprocess.SubprocessError, OSError, ValueError, KeyError) as err:
                failed.append(name)
                record = {"job": name, "error": f"{type(err).__name__}: {err}"}
                (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
            records.append(record)
            print(
                json.dumps(
                    {k: record.get(k) for k in ("job", "test", "iterations", "wall_s", "stopped", "error")}
                )
            )
            sys.stdout.flush()
            (out / "rerun.json").write_text(json.dumps(header | {"jobs": records}, indent=1) + "\n")
    if failed:
        print(f"failed: {', '.join(failed)}; see {out / 'rerun.log'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
