"""Compare two analog-eval caches of a native CMRU bundle sequence by sequence.

PYTHONPATH=. python scripts/analog_compare_ladder_caches.py REFERENCE_CACHE NEW_CACHE [--json OUT]

For every sequence held by both: whether the count read at every step of every neuron is the same,
the state agreement and power of each, and the new run's ngspice CPU time and Newton iterations.
"""

import argparse
import glob
import json
from pathlib import Path

import numpy as np


def records(cache: str) -> dict[int, dict]:
    out = {}
    for f in glob.glob(f"{cache}/*.json"):
        r = json.loads(Path(f).read_text())
        if "h_analog" in r:
            out[r["sequence"]] = r
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("new")
    ap.add_argument("--json")
    a = ap.parse_args()
    ref, new = records(a.reference), records(a.new)
    rows = []
    for n in sorted(set(ref) & set(new)):
        r, f = ref[n], new[n]
        ha, hb = np.asarray(r["h_analog"]), np.asarray(f["h_analog"])
        rows.append(
            {
                "sequence": n,
                "stages": int(sum(f["ladder_stages"])),
                "same_counts": bool((ha == hb).all()),
                "steps_differing": int((ha != hb).any(axis=1).sum()),
                "agreement_reference": r["agreement"],
                "agreement_new": f["agreement"],
                "power_nW_reference": round(sum(r["power_nW"].values()), 2),
                "power_nW_new": round(sum(f["power_nW"].values()), 2),
                "wall_s_reference": round(r["wall_s"], 1),
                "wall_s_new": round(f["wall_s"], 1),
                "cpu_s_new": round(f.get("cpu_s", float("nan")), 1),
                "iterations_new": f.get("ngspice", {}).get("iterations"),
            }
        )
    only_new = sorted(set(new) - set(ref))
    summary = {
        "reference": a.reference,
        "new": a.new,
        "overlap": len(rows),
        "overlap_same_counts": sum(r["same_counts"] for r in rows),
        "new_only": only_new,
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    for r in rows:
        print(json.dumps(r))
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
