"""``make fpga``: the reference bundles through ``codesign rtl`` and ``codesign synth``.

::

    python -m codesign.fpga.batch [--bundles DIR,...] [--lanes 1,4] [--devices up5k,ecp5-25k]
                                  [--target device|generic] [--counters all|basic|none]
                                  [--weights baked|runtime|frozen] [--share-multipliers off|on|auto|N[:K]]
                                  [--narrow off|auto] [--share-updates off|on] [--merge off|auto]
                                  [--out build/fpga] [--area]

For every bundle (default: every directory of ``models/bundles`` with a ``manifest.yaml``) and
lane count ``P <= d`` it generates ``OUT/<bundle>_p<P>_<target>`` (``codesign rtl --target``: by
default each device's own target, so the plan maps memories and multipliers for that chip; with
``--target generic`` one build for every device) and synthesises it for each device. A
bundle the RTL generator refuses is skipped with the generator's reason, so the target keeps
working while the generator grows; a failing synthesis is recorded and the batch goes on.
The results go to ``OUT/results.md`` and ``OUT/results.json``.
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


def _synth_all(
    build: Path,
    bundle: Path,
    p: int,
    devices: list[str],
    summaries: list,
    failed: list,
    hierarchy: bool = False,
) -> None:
    from codesign.fpga.synth import SynthOptions, synthesize

    for device in devices:
        try:
            summary = synthesize(
                build,
                device,
                SynthOptions(hierarchy=hierarchy),
                progress=lambda t, d=device: _log(f"  {d} {t}"),
            )
        except CodesignError as err:
            _log(f"  {device} FAILED: {err}")
            failed.append({"bundle": bundle.name, "lanes": p, "device": device, "error": str(err)})
            continue
        summaries.append(summary)
        _log("  " + _row(summary))


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    from codesign.hw.plan import parse_share

    try:
        parse_share(args.share_multipliers)
    except CodesignError as err:  # refuse before any build, not as a skipped bundle per build
        parser.error(str(err))
    if args.weights == "spram" and (args.target != "device" or args.devices.split(",") != ["up5k"]):
        parser.error("--weights spram needs the UP5K's SPRAMs: --devices up5k --target device")

    from codesign.fpga.area import area_report
    from codesign.hw.build import build_rtl

    if args.bundles:
        bundles = [Path(b) for b in args.bundles.split(",") if b]
    else:
        bundles = sorted(p.parent for p in Path("models/bundles").glob("*/manifest.yaml"))
    lanes = [int(x) for x in args.lanes.split(",") if x]
    devices = [d for d in args.devices.split(",") if d]
    summaries, skipped, failed, areas = [], [], [], []
    start = time.monotonic()
    targets = builds_for(devices, args.target)
    for bundle in bundles:
        for p in lanes:
            refused = False
            for target, target_devices in targets.items():
                build = args.out / f"{bundle.name}_p{p}_{target}"
                try:
                    info = build_rtl(
                        bundle,
                        build,
                        lanes=p,
                        weights=args.weights,
                        target=target,
                        counters=args.counters,
                        share=args.share_multipliers,
                        narrow=args.narrow,
                        share_updates=args.share_updates,
                        merge=args.merge,
                    )
                except CodesignError as err:
                    if "lanes" in str(err) and "outside" in str(err):
                        _log(f"skip {bundle.name} P={p}: {err}")
                        break
                    _log(f"skip {bundle.name}: the RTL generator refuses it: {err}")
                    skipped.append({"bundle": bundle.name, "reason": str(err)})
                    refused = True
                    break
                _log(f"{bundle.name} P={p} target {target}: {build / 'accelerator.v'} ({info.get('top')})")
                _synth_all(build, bundle, p, target_devices, summaries, failed, args.hierarchy)
                if args.area and target == next(iter(targets)):
                    try:
                        areas.append(area_report(build))
                    except CodesignError as err:
                        failed.append(
                            {"bundle": bundle.name, "lanes": p, "device": "asic-area", "error": str(err)}
                        )
            if refused:
                break

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
    lines.append(f"\n{len(summaries)} runs in {time.monotonic() - start:.0f} s.")
    write_text(args.out / "results.md", "\n".join(lines) + "\n")
    write_text(
        args.out / "results.json",
        json.dumps({"synth": summaries, "area": areas, "skipped": skipped, "failed": failed}, indent=2)
        + "\n",
    )
    _log(f"results: {args.out / 'results.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
