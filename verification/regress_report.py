"""The regression's report: ``summary.json`` (designs, sequences, mismatches, mutants, coverage),
``junit.xml`` (one test case per design, simulator and test) and the closing lines on the console."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import tb_coverage
from regress_run import Row

from codesign.hw.faults import FAULTS

__all__ = ["print_summary", "summarize", "write_junit"]


def write_junit(rows: list[Row], path: Path) -> None:
    suite = ET.Element("testsuite", name="codesign.sim")
    failures = 0
    for row in rows:
        d = row.design
        if d.kind == "mutant":
            case = ET.SubElement(
                suite, "testcase", classname=f"mutants.{row.sim}", name=d.name, time=f"{row.wall_s:.2f}"
            )
            if not row.caught_by:
                failures += 1
                ET.SubElement(case, "failure", message=f"mutant escaped: {row.message}")
            continue
        tests = row.tests or {
            t: None for t in (d.icarus_tests if row.sim == "icarus" and d.icarus_tests else d.tests)
        }
        for test, rec in tests.items():
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{d.name}.{row.sim}",
                name=test,
                time=f"{(rec or {}).get('wall_s', 0.0):.2f}",
            )
            if rec is None or not rec["passed"]:
                failures += 1
                msg = (rec or {}).get("first_mismatch") or {}
                ET.SubElement(case, "failure", message=msg.get("line") if msg else row.message)
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def summarize(rows: list[Row], designs, mutants, wall: float, args) -> dict:
    main = [r for r in rows if r.design.kind != "mutant"]
    muts = [r for r in rows if r.design.kind == "mutant"]
    coverage: dict = {}
    for r in main:
        tb_coverage.merge(coverage, r.coverage)
    cov_summary = tb_coverage.summary(coverage)
    by_sim = {}
    for sim in args.sims:
        rs = [r for r in main if r.sim == sim]
        by_sim[sim] = {
            "jobs": len(rs),
            "passed": sum(r.ok for r in rs),
            "sequences": sum(r.sequences for r in rs),
            "steps": sum(r.steps for r in rs),
            "mismatches": sum(r.mismatches for r in rs),
            "wall_s": sum(r.wall_s for r in rs),
        }
    random_bundles = sum(len(d.bundles) for d in designs if d.kind == "random")
    summary = {
        "wall_s": wall,
        "seed": args.seed,
        "simulators": list(args.sims),
        "designs": {
            "random_shapes": sum(d.kind == "random" for d in designs),
            "random_bundles": random_bundles,
            "corner_bundles_per_shape": "6 (+2 with DCLS)",
            "reference_bundles": sum(d.kind == "reference" for d in designs),
            "long": sum(d.kind == "long" for d in designs),
            "netlists": sum(d.kind == "netlist" for d in designs),
            "axi": sum(d.kind == "axi" for d in designs),
        },
        "sequences": sum(r.sequences for r in main),
        "steps": sum(r.steps for r in main),
        "mismatches": sum(r.mismatches for r in main),
        "failed_jobs": [f"{r.design.name}/{r.sim}: {r.message}" for r in main if not r.ok],
        "by_simulator": by_sim,
        "mutants": {
            "total": len(muts),
            "caught": sum(bool(r.caught_by) for r in muts),
            "faults": {
                r.design.faults[0]: {
                    "design": r.design.name,
                    "simulator": r.sim,
                    "caught": bool(r.caught_by),
                    "caught_by": r.caught_by,
                    "first_mismatch": r.message,
                    "description": r.design.description,
                }
                for r in muts
            },
            "not_applicable": [f for f in FAULTS if f not in {r.design.faults[0] for r in muts}],
        },
        "coverage": {**cov_summary, "points": coverage},
        "jobs": [
            {
                "design": r.design.name,
                "kind": r.design.kind,
                "description": r.design.description,
                "sim": r.sim,
                "ok": r.ok,
                "bundles": len(r.design.bundles),
                "sequences": r.sequences,
                "steps": r.steps,
                "mismatches": r.mismatches,
                "accuracy": r.accuracy,
                "cycles_per_step": r.cycles_per_step,
                "cycle_floor_per_step": r.floor,
                "waveform": r.waveform,
                "tests": r.tests,
                "result": r.message,
                "wall_s": r.wall_s,
            }
            for r in sorted(rows, key=lambda r: (r.design.name, r.sim))
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_junit(rows, args.out / "junit.xml")
    return summary


def print_summary(s: dict) -> None:
    print()
    for sim, v in s["by_simulator"].items():
        print(
            f"{sim:<9}: {v['passed']}/{v['jobs']} jobs bit-exact, {v['sequences']} sequences, {v['steps']} steps, "
            f"{v['mismatches']} mismatches"
        )
    m = s["mutants"]
    if m["total"]:
        print(f"mutants  : {m['caught']}/{m['total']} caught")
        for fault, v in m["faults"].items():
            print(
                f"  {fault:<22} {'caught by ' + v['caught_by'] if v['caught'] else 'ESCAPED'} ({v['design']}, {v['simulator']})"
            )
    c = s["coverage"]
    print(
        f"coverage : {c['hit']}/{c['bins']} bins hit"
        + (f"; missed: {', '.join(c['missed'])}" if c["missed"] else "")
    )
    d = s["designs"]
    print(
        f"designs  : {d['random_bundles']} random bundles in {d['random_shapes']} shapes, "
        f"{d['reference_bundles']} reference bundles, {d['long']} long, {d.get('netlists', 0)} netlists; "
        f"{s['sequences']} sequences, "
        f"{s['mismatches']} mismatches; wall time {s['wall_s']:.1f} s"
    )
