"""``make sim-netlist``: every mapping option that changes the chip's netlist, simulated against golden.

Each design is a reference bundle built with one set of ``codesign rtl`` options, mapped by yosys
for a chip (:mod:`codesign.fpga.netlist`) and simulated under each simulator on random sequences,
compared bit by bit with the golden model. The variants cover what changes the netlist: block RAM
with initial contents (baked, frozen), memories in logic (frozen ROMs the plan keeps small),
weights loaded through the config stream (runtime) and SPRAM weights, DSP and LUT multipliers,
shared and digit-serial multipliers, folded and merged words, one and several lanes; on the UP5K
and on the ECP5-25k (DP16KD block RAM, MULT18X18D multipliers). The ``pins`` variants map the
whole chip, ``fpga_top`` (UART, bridge and accelerator, :mod:`codesign.fpga.pins`), and drive it
at its UART pins with the host's bytes (:mod:`codesign.board.pins`).

``--matrix`` replaces the variants with every reference bundle at P = 1 and P = 4 on the UP5K and
the ECP5-25k (frozen weights, shared multipliers: ``codesign rtl``'s defaults for the device)
wherever the cost model (:func:`codesign.hw.cost.predict`) says the build fits (a build that fits
and does not build fails the matrix), and writes a
summary table (``--table``, default ``docs/reports/netlist_matrix.md``) with its command, rewritten
after every finished design. ``--workers N`` runs N designs at once on the project's Dask cluster.

Results go to ``OUT/<design>__<sim>.json``; a design whose netlist and options are unchanged is
not simulated again, so a stopped regression resumes. Usage::

    python verification/netlist_regress.py [--out build/sim_netlist] [--sims icarus,verilator]
        [--bundles a,b] [--vectors 4] [--quick] [--variants a,b]
    python verification/netlist_regress.py --matrix [--bundles a,b] [--lanes 1,4]
        [--devices up5k,ecp5-25k] [--table docs/reports/netlist_matrix.md] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codesign.atomic import write_text
from codesign.errors import CodesignError

__all__ = [
    "MATRIX_DEVICES",
    "VARIANTS",
    "Variant",
    "finished_designs",
    "main",
    "matrix_designs",
    "matrix_table",
    "run_design",
]

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "models" / "bundles"
MATRIX_DEVICES = {"up5k": "up5k", "ecp5-25k": "ecp5"}  # netlist device -> codesign rtl --target


@dataclass(frozen=True)
class Variant:
    """One set of ``codesign rtl`` options, the chip the netlist is mapped for, and whether the
    whole chip is simulated at its UART pins (``pins``) or the accelerator at its ports."""

    name: str
    lanes: int
    options: dict
    target: str = "up5k"
    device: str = "up5k"
    pins: bool = False

    def rtl_kwargs(self) -> dict:
        return {"lanes": self.lanes, "target": self.target, "counters": "basic", **self.options}


VARIANTS = (
    Variant("frozen_shared_p1", 1, {"weights": "frozen", "share": "auto"}),
    Variant("frozen_shared_p4", 4, {"weights": "frozen", "share": "auto"}),
    Variant("baked_dsp_p2", 2, {"weights": "baked", "share": "off"}),
    Variant("runtime_p2", 2, {"weights": "runtime", "share": "auto"}),
    Variant("spram_p2", 2, {"weights": "spram", "share": "auto"}),
    # every product a LUT multiplier (the ASIC plan), two cycles each
    Variant("serial_lut_p2", 2, {"weights": "frozen", "share": "auto:2"}, target="asic"),
    # the UP5K folds and merges words by default: one design without either
    Variant("unfolded_p2", 2, {"weights": "frozen", "share": "auto", "narrow": "off", "merge": "off"}),
    Variant("shared_updates_p4", 4, {"weights": "frozen", "share": "on", "share_updates": "on"}),
    # the ECP5-25k: DP16KD block RAM, MULT18X18D multipliers, TRELLIS logic
    Variant("ecp5_frozen_p1", 1, {"weights": "frozen", "share": "auto"}, "ecp5", "ecp5-25k"),
    Variant("ecp5_frozen_p4", 4, {"weights": "frozen", "share": "auto"}, "ecp5", "ecp5-25k"),
    Variant("ecp5_baked_dsp_p2", 2, {"weights": "baked", "share": "off"}, "ecp5", "ecp5-25k"),
    Variant("ecp5_runtime_p2", 2, {"weights": "runtime", "share": "auto"}, "ecp5", "ecp5-25k"),
    # the whole chip at its UART pins: identify, (weight load,) sequences as the host sends them
    Variant("pins_frozen_p1", 1, {"weights": "frozen", "share": "auto"}, pins=True),
    Variant("pins_runtime_p2", 2, {"weights": "runtime", "share": "auto"}, pins=True),
    Variant("ecp5_pins_frozen_p2", 2, {"weights": "frozen", "share": "auto"}, "ecp5", "ecp5-25k", pins=True),
)
QUICK = ("frozen_shared_p1", "spram_p2", "serial_lut_p2", "ecp5_frozen_p4", "pins_frozen_p1")


def _key(netlist: Path, variant: Variant, sim: str, vectors: int) -> str:
    verilog = netlist / ("fpga_top.v" if variant.pins else "accelerator.v")
    text = (
        verilog.read_bytes()
        + json.dumps([variant.rtl_kwargs(), variant.device, variant.pins, sim, vectors]).encode()
    )
    return hashlib.sha256(text).hexdigest()


def _simulate(netlist: Path, variant: Variant, sim: str, vectors: int) -> dict:
    """One simulator run of a mapped design: status, sequences, mismatches."""
    if variant.pins:
        from codesign.board.pins import run_pins

        pins = run_pins(netlist, sim, vectors=vectors, seed=7, max_steps=8, timeout_s=3600)
        return {"status": "ok" if pins.ok else "MISMATCH", **pins.summary_json()}
    from codesign.verify.runner import run_sim

    report = run_sim(netlist, sim, vectors=vectors, seed=7, waves="on_failure", timeout_s=3600)
    return {"status": "ok" if report.mismatches == 0 else "MISMATCH", **report.summary_json()}


def run_design(bundle: str, variant: Variant, sims: list[str], vectors: int, out: Path) -> list[dict]:
    """Build, map and simulate one design; one record per simulator (cached in ``out``)."""
    from codesign.fpga.netlist import netlist_build
    from codesign.fpga.pins import pins_build
    from codesign.hw.build import build_rtl

    design = f"{bundle}__{variant.name}"
    build = out / "builds" / design
    try:
        build_rtl(BUNDLES / bundle, build, **variant.rtl_kwargs())
        netlist = (pins_build if variant.pins else netlist_build)(build, variant.device)
    except CodesignError as err:  # an option this bundle cannot take (e.g. SPRAM for tiny matrices)
        return [{"design": design, "sim": s, "status": "not built", "reason": str(err)} for s in sims]
    records = []
    for sim in sims:
        path = out / f"{design}__{sim}.json"
        key = _key(netlist, variant, sim, vectors)
        if path.is_file() and json.loads(path.read_text()).get("key") == key:
            records.append(json.loads(path.read_text()))
            continue
        start = time.monotonic()
        try:
            record = _simulate(netlist, variant, sim, vectors)
        except CodesignError as err:
            record = {"status": "FAILED", "reason": str(err)}
        record.update(design=design, sim=sim, key=key, wall_s=round(time.monotonic() - start, 1))
        write_text(path, json.dumps(record, indent=2) + "\n")
        records.append(record)
    return records


def matrix_designs(
    bundles: list[str], lanes: list[int], devices: list[str]
) -> list[tuple[str, Variant, str]]:
    """Every ``(bundle, variant, misfit)`` of the matrix; ``misfit`` is the cost model's reason a
    build does not fit its device ("" when it fits)."""
    from codesign.bundle import load_bundle
    from codesign.hw.cost import build_plan, get_device, predict

    out = []
    for bundle in bundles:
        loaded = load_bundle(BUNDLES / bundle)
        for device in devices:
            chip = get_device(device)
            for p in lanes:
                options = {"weights": "frozen", "share": "auto"}
                variant = Variant(f"{device}_p{p}", p, options, MATRIX_DEVICES[device], device)
                try:
                    plan = build_plan(loaded, p, target=variant.target, counters="basic", **options)
                    misfit = "; ".join(predict(plan, chip).misses(chip))
                except CodesignError as err:
                    misfit = f"not planned: {err}"
                out.append((bundle, variant, misfit))
    return out


def matrix_table(rows: list[dict], command: str, pending: int = 0) -> str:
    """The matrix summary as Markdown: one row per bundle, lanes and device, a column per simulator;
    ``pending`` designs not finished yet are counted under the command."""
    sims = sorted({r["sim"] for r in rows if "sim" in r})
    runs = [r for r in rows if r["status"] in ("ok", "MISMATCH", "FAILED")]
    mismatches = sum(r["status"] != "ok" for r in runs)
    unbuilt = len({r["design"] for r in rows if r["status"] == "not built"})
    lines = [
        "# Netlist matrix: reference bundles on the UP5K and the ECP5-25k",
        "",
        f"Command: `{command}`",
        "",
        f"{len(runs)} simulator runs, {mismatches} failing"
        + (f"; designs the cost model fits that did not build: {unbuilt}" if unbuilt else "")
        + (f"; designs not finished yet: {pending} (the command resumes)." if pending else "."),
        "",
        "| bundle | device | P | " + " | ".join(sims) + " |",
        "|---|---|---|" + "---|" * len(sims),
    ]
    by_design: dict[str, dict] = {}
    for r in rows:
        by_design.setdefault(r["design"], {})[r.get("sim", "")] = r
    for design, runs in sorted(by_design.items()):
        bundle, variant = design.split("__")
        device, lanes = variant.rsplit("_p", 1)
        cells = []
        for sim in sims:
            r = runs.get(sim) or next(iter(runs.values()))
            if r["status"] == "ok":
                cells.append(f"ok ({r.get('sequences')} seq, {r.get('wall_s')} s)")
            else:
                cells.append(f"{r['status']}: {str(r.get('reason') or r.get('first_mismatch'))[:80]}")
        lines.append(f"| {bundle} | {device} | {lanes} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _plan(args, sims: list[str]) -> list[tuple[str, Variant, str]]:
    bundles = [b for b in args.bundles.split(",") if b]
    if args.matrix:
        every = sorted(p.parent.name for p in BUNDLES.glob("*/manifest.yaml"))
        lanes = [int(p) for p in args.lanes.split(",") if p]
        devices = [d for d in args.devices.split(",") if d]
        return matrix_designs(bundles or every, lanes, devices)
    names = [v for v in args.variants.split(",") if v] or [v.name for v in VARIANTS]
    unknown = sorted(set(names) - {v.name for v in VARIANTS})
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}; known: {', '.join(v.name for v in VARIANTS)}")
    variants = [v for v in VARIANTS if v.name in names and (not args.quick or v.name in QUICK)]
    bundles = bundles or ["copy_first_cmru", "spoken_digits_cmru", "japanese_vowels_cmru2"]
    return [(b, v, "") for b in bundles for v in variants]


def _misfit_records(bundle: str, variant: Variant, sims: list[str], misfit: str) -> list[dict]:
    design = f"{bundle}__{variant.name}"
    return [{"design": design, "sim": s, "status": "does not fit", "reason": misfit} for s in sims]


def finished_designs(
    plan: list[tuple[str, Variant, str]],
    sims: list[str],
    vectors: int,
    out: Path,
    workers: int = 1,
    scheduler: str | None = None,
) -> Iterator[list[dict]]:
    """Each design's records as it finishes: a misfit at once, the others in this process
    (``workers`` 1) or as tasks on the project's Dask cluster (:func:`codesign.runner.dask_client`)."""
    todo = []
    for bundle, variant, misfit in plan:
        if misfit:
            yield _misfit_records(bundle, variant, sims, misfit)
        else:
            todo.append((bundle, variant))
    if workers <= 1 and scheduler is None:
        for bundle, variant in todo:
            yield run_design(bundle, variant, sims, vectors, out)
        return
    from distributed import as_completed

    from codesign.runner import dask_client

    with dask_client(scheduler, workers) as client:
        futures = [client.submit(run_design, b, v, sims, vectors, out, pure=False) for b, v in todo]
        for future in as_completed(futures):
            yield future.result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "sim_netlist")
    parser.add_argument("--sims", default="icarus,verilator")
    parser.add_argument(
        "--bundles", default="", help="default: three reference bundles (every one with --matrix)"
    )
    parser.add_argument("--variants", default="", help="only these variants (default: all)")
    parser.add_argument("--vectors", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help=f"only the variants {', '.join(QUICK)}")
    parser.add_argument("--matrix", action="store_true", help="every reference bundle x --lanes x --devices")
    parser.add_argument("--lanes", default="1,4", help="--matrix: lanes (default 1,4)")
    parser.add_argument(
        "--devices", default=",".join(MATRIX_DEVICES), help="--matrix: chips (default up5k,ecp5-25k)"
    )
    parser.add_argument("--table", type=Path, default=ROOT / "docs" / "reports" / "netlist_matrix.md")
    parser.add_argument("--workers", type=int, default=1, help="designs at once on a local Dask cluster")
    parser.add_argument("--scheduler", default=None, help="an existing Dask cluster's address instead")
    args = parser.parse_args(argv)
    sims = [s for s in args.sims.split(",") if s]
    plan = _plan(args, sims)
    out = args.out / "matrix" if args.matrix else args.out
    command = "python verification/netlist_regress.py " + " ".join(argv if argv is not None else sys.argv[1:])
    failed, rows = 0, []
    finished = finished_designs(plan, sims, args.vectors, out, args.workers, args.scheduler)
    for i, recs in enumerate(finished, 1):
        for rec in recs:
            # in the matrix every option is the device's default: a build that fits must build
            failed += rec["status"] in ("MISMATCH", "FAILED") or (
                args.matrix and rec["status"] == "not built"
            )
            detail = (
                rec.get("reason") or f"{rec.get('sequences')} sequences, {rec.get('mismatches')} mismatches"
            )
            print(f"[{i}/{len(plan)}] {rec['design']} {rec['sim']}: {rec['status']} ({detail})", flush=True)
        rows += recs
        if args.matrix:  # after every design: a stopped matrix leaves the table of what finished
            write_text(args.table, matrix_table(rows, command.strip(), len(plan) - i))
    if args.matrix:
        print(f"sim-netlist: table in {args.table}")
    print(f"sim-netlist: {failed} failing of {len(plan) * len(sims)} runs; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
