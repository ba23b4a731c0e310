"""``make sim-netlist``: every mapping option that changes the iCE40 netlist, simulated against golden.

Each design is a reference bundle built with one set of ``codesign rtl`` options, mapped by yosys
for the chip (:mod:`codesign.fpga.netlist`) and simulated under each simulator on random sequences,
compared bit by bit with the golden model. The variants cover what changes the netlist: block RAM
with initial contents (baked, frozen), memories in logic (frozen ROMs the plan keeps small),
weights loaded through the config stream (runtime) and SPRAM weights, DSP and LUT multipliers,
shared and digit-serial multipliers, folded and merged words, one and several lanes.

Results go to ``OUT/<design>__<sim>.json``; a design whose netlist and options are unchanged is
not simulated again, so a stopped regression resumes. Usage::

    python verification/netlist_regress.py [--out build/sim_netlist] [--sims icarus,verilator]
        [--bundles a,b] [--vectors 4] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from codesign.atomic import write_text
from codesign.errors import CodesignError

__all__ = ["VARIANTS", "Variant", "main", "run_design"]

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "models" / "bundles"


@dataclass(frozen=True)
class Variant:
    """One set of ``codesign rtl`` options; the netlist is always the UP5K's."""

    name: str
    lanes: int
    options: dict
    target: str = "up5k"

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
)
QUICK = ("frozen_shared_p1", "spram_p2", "serial_lut_p2")


def _key(netlist: Path, variant: Variant, sim: str, vectors: int) -> str:
    text = (netlist / "accelerator.v").read_bytes() + json.dumps(
        [variant.rtl_kwargs(), sim, vectors]
    ).encode()
    return hashlib.sha256(text).hexdigest()


def run_design(bundle: str, variant: Variant, sims: list[str], vectors: int, out: Path) -> list[dict]:
    """Build, map and simulate one design; one record per simulator (cached in ``out``)."""
    from codesign.fpga.netlist import netlist_build
    from codesign.hw.build import build_rtl
    from codesign.verify.runner import run_sim

    design = f"{bundle}__{variant.name}"
    build = out / "builds" / design
    try:
        build_rtl(BUNDLES / bundle, build, **variant.rtl_kwargs())
    except CodesignError as err:  # an option this bundle cannot take (e.g. SPRAM for tiny matrices)
        return [{"design": design, "sim": s, "status": "not built", "reason": str(err)} for s in sims]
    netlist = netlist_build(build, "up5k")
    records = []
    for sim in sims:
        path = out / f"{design}__{sim}.json"
        key = _key(netlist, variant, sim, vectors)
        if path.is_file() and json.loads(path.read_text()).get("key") == key:
            records.append(json.loads(path.read_text()))
            continue
        start = time.monotonic()
        try:
            report = run_sim(netlist, sim, vectors=vectors, seed=7, waves="on_failure", timeout_s=3600)
            record = {"status": "ok" if report.mismatches == 0 else "MISMATCH", **report.summary_json()}
        except CodesignError as err:
            record = {"status": "FAILED", "reason": str(err)}
        record.update(design=design, sim=sim, key=key, wall_s=round(time.monotonic() - start, 1))
        write_text(path, json.dumps(record, indent=2) + "\n")
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "sim_netlist")
    parser.add_argument("--sims", default="icarus,verilator")
    parser.add_argument("--bundles", default="copy_first_cmru,spoken_digits_cmru,japanese_vowels_cmru2")
    parser.add_argument("--vectors", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help=f"only the variants {', '.join(QUICK)}")
    args = parser.parse_args(argv)
    sims = [s for s in args.sims.split(",") if s]
    variants = [v for v in VARIANTS if not args.quick or v.name in QUICK]
    bundles = [b for b in args.bundles.split(",") if b]
    failed = 0
    total = len(bundles) * len(variants)
    for i, (bundle, variant) in enumerate(((b, v) for b in bundles for v in variants), 1):
        for rec in run_design(bundle, variant, sims, args.vectors, args.out):
            failed += rec["status"] in ("MISMATCH", "FAILED")
            detail = (
                rec.get("reason") or f"{rec.get('sequences')} sequences, {rec.get('mismatches')} mismatches"
            )
            print(f"[{i}/{total}] {rec['design']} {rec['sim']}: {rec['status']} ({detail})", flush=True)
    print(f"sim-netlist: {failed} failing of {total * len(sims)} runs; results in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
