"""``make fpga``: the reference bundles through ``codesign rtl`` and ``codesign synth``.

::

    python -m codesign.fpga.batch [--bundles DIR,...] [--lanes 1,4] [--devices up5k,ecp5-25k]
                                  [--target device|generic] [--counters all|basic|none]
                                  [--weights baked|runtime|frozen] [--share-multipliers off|on|auto|N[:K]]
                                  [--narrow off|auto] [--share-updates off|on] [--merge off|auto]
                                  [--out build/fpga] [--area] [--workers N] [--scheduler ADDRESS]

For every bundle (default: every directory of ``models/bundles`` with a ``manifest.yaml``) and
lane count ``P <= d`` it generates ``OUT/<bundle>_p<P>_<target>`` (``codesign rtl --target``: by
default each device's own target, so the plan maps memories and multipliers for that chip; with
``--target generic`` one build for every device) and synthesises it for each device. A
bundle the RTL generator refuses is skipped with the generator's reason, so the target keeps
working while the generator grows; a failing synthesis is recorded and the batch goes on.

Each build is one job (:mod:`codesign.fpga.batch_jobs`). With ``--workers 1`` (the default) the
jobs run here, one after another, with every tool step shown; with more workers, or
``--scheduler``, they run on the exploration's Dask cluster (:func:`codesign.runner.dask_client`),
a progress bar and one line per finished build. Finished syntheses are cached under
``OUT/runs/`` by the Verilog's hash, the options and the flow, so a stopped batch run again
resumes where it stopped. The results go to ``OUT/results.md`` and ``OUT/results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from codesign.atomic import write_text
from codesign.errors import CodesignError


def _log(text: str) -> None:
    print(f"fpga: {text}", file=sys.stderr, flush=True)


def _row(summary: dict) -> str:
    res, util, bits = summary["resources"], summary["utilisation"], summary["memory_bits"]
    lc = util.get("ICESTORM_LC") or util.get("TRELLIS_COMB") or {"used": 0, "available": 0}
    ram = util.get("ICESTORM_RAM") or util.get("DP16KD") or {"used": 0, "available": 0}
    dsp = util.get("ICESTORM_DSP") or util.get("MULT18X18D") or {"used": 0, "available": 0}
    if summary["status"] == "ok":
        fmax = f"{summary['fmax_mhz']:.1f}"
        verdict = (
            "met"
            if summary["timing_met"]
            else f"missed by {summary['target_mhz'] - summary['fmax_mhz']:.1f} MHz"
        )
    else:
        fmax, verdict = "-", "does not fit"
    return (
        f"| {summary['bundle']} | {summary['lanes']} | {summary['device']} | {res['lut']} | {res['ff']} | {res['carry']} "
        f"| {lc['used']}/{lc['available']} | {ram['used']}/{ram['available']} | {dsp['used']}/{dsp['available']} "
        f"| {bits['block_ram']} / {bits['lut_ram']} / {bits['logic']} | {fmax} | {summary['target_mhz']:g} | {verdict} |"
    )


HEADER = (
    "| bundle | P | device | LUT4 | FF | carry | logic cells (LC / COMB) | BRAM | DSP "
    "| memory bits in BRAM / LUT RAM / logic | Fmax MHz | target | timing |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


DEVICE_TARGETS = {"up5k": "up5k", "ecp5-25k": "ecp5", "ecp5-85k": "ecp5"}
"""The ``codesign rtl --target`` a device's build uses (devices not listed: ``generic``)."""


def builds_for(devices: list[str], mode: str) -> dict[str, list[str]]:
    """``{rtl target: devices synthesised from its build}``: one build per target (``device``), or
    one generic build for all (``generic``)."""
    targets: dict[str, list[str]] = {}
    for device in devices:
        target = DEVICE_TARGETS.get(device, "generic") if mode == "device" else "generic"
        targets.setdefault(target, []).append(device)
    return targets


def _finished_line(records: list[dict]) -> list[str]:
    """What a finished job prints: a table row per synthesis, one line per other record."""
    lines = []
    for r in records:
        if r["kind"] == "synth":
            lines.append(("(cached) " if r["cached"] else "") + _row(r["summary"]))
        elif r["kind"] == "area":
            a = r["summary"]
            lines.append(
                f"{'(cached) ' if r['cached'] else ''}{r['bundle']} P={r['lanes']} area: {a['total_um2']:.0f} um^2"
            )
        elif r["kind"] == "failed":
            lines.append(f"{r['bundle']} P={r['lanes']} {r['device']} FAILED: {r['error']}")
        else:
            lines.append(f"skip {r['bundle']} P={r['lanes']}: {r['reason']}")
    return lines


def _run_here(jobs: list[dict]) -> list[list[dict]]:
    """The jobs one after another in this process, every tool step logged."""
    from codesign.fpga.batch_jobs import run_job

    results = []
    for i, job in enumerate(jobs, 1):
        _log(
            f"[{i}/{len(jobs)}] {Path(job['bundle']).name} P={job['lanes']} target {job['target']}: {job['build']}"
        )
        results.append(run_job(job, progress=_log))
        for line in _finished_line(results[-1]):
            _log("  " + line)
    return results


def _run_on_dask(jobs: list[dict], scheduler: str | None, workers: int) -> list[list[dict]]:
    """The jobs on the exploration's Dask cluster: a progress bar, a line per finished build."""
    from distributed import as_completed
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codesign.fpga.batch_jobs import run_job
    from codesign.runner import dask_client

    results: list[list[dict]] = [[] for _ in jobs]
    console = Console(stderr=True)
    columns = (TextColumn("fpga"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with dask_client(scheduler, workers) as client, Progress(*columns, console=console) as bar:
        task = bar.add_task("builds", total=len(jobs))
        futures = {client.submit(run_job, job, pure=False): i for i, job in enumerate(jobs)}
        for future in as_completed(list(futures)):
            i = futures[future]
            results[i] = future.result()
            for line in _finished_line(results[i]):
                bar.console.print(f"fpga: {line}", markup=False, highlight=False, soft_wrap=True)
            bar.advance(task)
    return results


def _parser() -> argparse.ArgumentParser:
    """The batch's options: which builds (bundles x lanes x devices) and the codesign rtl options."""
    parser = argparse.ArgumentParser(
        prog="python -m codesign.fpga.batch", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--bundles", default="", help="comma-separated bundle directories (default: models/bundles/*)"
    )
    parser.add_argument(
        "--lanes", default="1,4", help="comma-separated lane counts (those above d are skipped)"
    )
    parser.add_argument("--devices", default="up5k,ecp5-25k")
    parser.add_argument("--out", default="build/fpga", type=Path)
    parser.add_argument("--area", action="store_true", help="also run the ASIC area proxy (codesign area)")
    parser.add_argument(
        "--target",
        default="device",
        choices=("device", "generic"),
        help="device: build for each device's target (codesign rtl --target); generic: one build",
    )
    parser.add_argument("--counters", default="all", choices=("all", "basic", "none"))
    parser.add_argument(
        "--weights",
        default="baked",
        choices=("baked", "runtime", "frozen", "spram"),
        help="codesign rtl --weights: frozen builds hold the parameters in ROMs (the smallest); spram "
        "(--devices up5k only): frozen but the largest weight matrices in SPRAM, loaded through config",
    )
    parser.add_argument(
        "--share-multipliers",
        default="off",
        help="codesign rtl --share-multipliers: off, on, auto (share where the hard multipliers run out) or N, "
        "optionally :K (K cycles per LUT weight product)",
    )
    parser.add_argument(
        "--narrow",
        default=None,
        choices=("off", "auto"),
        help="codesign rtl --narrow: auto folds the weight, bias and kept-sum words of engines with shared "
        "multipliers into one slice per pass (deeper, narrower memories, no cycle); default: auto on "
        "the up5k target, off elsewhere",
    )
    parser.add_argument(
        "--share-updates",
        default="off",
        choices=("off", "on"),
        help="codesign rtl --share-updates: on shares one update unit per layer over its lanes "
        "(P - 1 idle issue cycles per group)",
    )
    parser.add_argument(
        "--merge",
        default="off",
        choices=("off", "auto"),
        help="codesign rtl --merge: auto puts the memories an engine reads at one address in one cycle "
        "(parameters, state, pooled sums) in one physical word",
    )
    parser.add_argument(
        "--hierarchy", action="store_true", help="codesign synth --hierarchy: cells per module"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="syntheses at once: 1 runs them here one after another; more run on a local Dask cluster "
        "(each yosys / nextpnr run takes one core)",
    )
    parser.add_argument(
        "--scheduler", default=None, help="address of an existing Dask scheduler to run the builds on"
    )
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse bad options before any build (a bad option is not a skipped bundle per build)."""
    from codesign.hw.plan import parse_share

    try:
        parse_share(args.share_multipliers)
    except CodesignError as err:
        parser.error(str(err))
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: at least 1")
    if args.weights == "spram" and (args.target != "device" or args.devices.split(",") != ["up5k"]):
        parser.error("--weights spram needs the UP5K's SPRAMs: --devices up5k --target device")


def _jobs(args: argparse.Namespace) -> list:
    """One job per (bundle, lanes, target): its RTL, its syntheses and (once per bundle) its area."""
    from codesign.fpga.batch_jobs import make_job

    if args.bundles:
        bundles = [Path(b) for b in args.bundles.split(",") if b]
    else:
        bundles = sorted(p.parent for p in Path("models/bundles").glob("*/manifest.yaml"))
    lanes = [int(x) for x in args.lanes.split(",") if x]
    devices = [d for d in args.devices.split(",") if d]
    rtl = {
        "weights": args.weights,
        "counters": args.counters,
        "share": args.share_multipliers,
        "narrow": args.narrow,
        "share_updates": args.share_updates,
        "merge": args.merge,
    }
    targets = builds_for(devices, args.target)
    return [
        make_job(
            bundle,
            p,
            target,
            target_devices,
            args.out,
            rtl,
            area=args.area and first,
            hierarchy=args.hierarchy,
        )
        for bundle in bundles
        for p in lanes
        for first, (target, target_devices) in zip(
            [True] + [False] * (len(targets) - 1), targets.items(), strict=True
        )
    ]


def _write_results(out: Path, records: list[dict], start: float) -> list[dict]:
    """``results.md`` and ``results.json`` from the jobs' records; returns the failures."""
    summaries = [r["summary"] for r in records if r["kind"] == "synth"]
    areas = [r["summary"] for r in records if r["kind"] == "area"]
    failed = [
        {k: r[k] for k in ("bundle", "lanes", "device", "error")} for r in records if r["kind"] == "failed"
    ]
    skipped = list(
        {
            r["bundle"]: {"bundle": r["bundle"], "reason": r["reason"]}
            for r in records
            if r["kind"] == "refused"
        }.values()
    )
    cached = sum(r.get("cached", False) for r in records)

    lines = ["# FPGA results (`make fpga`)", "", HEADER, *(_row(s) for s in summaries), ""]
    if areas:
        lines += [
            "| bundle | P | ASIC proxy um^2 (logic + memories) | gates | flops | memory bits |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {a['bundle']} | {a['lanes']} | {a['total_um2']:.0f} ({a['logic_um2']:.0f} + {a['memory_um2']:.0f}) "
            f"| {a['gates']} | {a['flops']} | {a['memory_bits']} |"
            for a in areas
        ]
        lines.append("")
    lines += [f"- skipped {s['bundle']}: {s['reason']}" for s in skipped]
    lines += [f"- FAILED {f['bundle']} P={f['lanes']} {f['device']}: {f['error']}" for f in failed]
    lines.append(f"\n{len(summaries)} runs ({cached} from the cache) in {time.monotonic() - start:.0f} s.")
    write_text(out / "results.md", "\n".join(lines) + "\n")
    write_text(
        out / "results.json",
        json.dumps({"synth": summaries, "area": areas, "skipped": skipped, "failed": failed}, indent=2)
        + "\n",
    )
    _log(f"results: {out / 'results.md'}")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    jobs = _jobs(args)
    start = time.monotonic()
    if args.workers == 1 and args.scheduler is None:
        results = _run_here(jobs)
    else:
        results = _run_on_dask(jobs, args.scheduler, args.workers)
    failed = _write_results(args.out, [r for job in results for r in job], start)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
