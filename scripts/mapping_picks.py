"""The mapper's picks as one markdown table (docs/mapping.md, "The mapper's picks").

    python scripts/mapping_picks.py BUILD_ROOT [--measured docs/mapping_measured.json]

Reads every ``BUILD_ROOT/<bundle folder>_<device>/build.json`` that ``codesign rtl --device`` wrote (its ``mapping``
record), the synthesis of it that ``codesign synth BUILD --device D`` cached in
``BUILD/synth/D/summary.json`` when there is one, and the best hand-chosen build of the same bundle
and device among the measured builds (the fewest logic cells; every one of them meets 100 steps/s
by a wide margin). The predictions are recomputed with the current cost model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codesign.bundle import load_bundle
from codesign.hw.cost import MEASURED, build_plan, get_device, load_measured, predict


def _synth(build: Path, device: str) -> dict | None:
    try:
        s = json.loads((build / "synth" / device / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if s.get("status") != "ok":
        return None
    u = s["utilisation"]
    cells = u["ICESTORM_LC"]["used"] if "ICESTORM_LC" in u else s["resources"]["lut"]
    return {"cells": cells, "fmax": s["fmax_mhz"]}


def _hand_chosen(measured: list[dict], bundle: str, device: str) -> dict | None:
    rows = [
        r
        for r in measured
        if Path(r["bundle"]).name == bundle and r["device"] == device and "flows/fpga" in r["source"]
    ]
    return min(rows, key=lambda r: r["logic_cells"]) if rows else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--measured", type=Path, default=MEASURED)
    args = parser.parse_args(argv)
    measured = load_measured(args.measured)
    print(
        "| bundle | device | chosen | cycles/step | predicted cells / BRAM / SPRAM / DSP | "
        "measured cells (Fmax MHz) | best hand-chosen (cells, P) | pick / hand-chosen |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(args.root.glob("*/build.json")):
        info = json.loads(path.read_text())
        rec = info.get("mapping")
        if not rec:
            continue
        build = path.parent
        device = get_device(rec["device"])
        plan = build_plan(load_bundle(build), rec["lanes"], target=device.target, **rec["options"])
        p = predict(plan, device)
        got = _synth(build, device.name)
        name = build.name.removesuffix(f"_{device.name}")  # BUILD_ROOT/<bundle folder>_<device>
        hand = _hand_chosen(measured, name, device.name)
        cells = got["cells"] if got else p.logic_cells
        ratio = f"{cells / hand['logic_cells']:.2f}" + ("" if got else " (predicted)") if hand else "-"
        opts = rec["command_options"].replace("--share-multipliers", "--share-mult.")
        print(
            f"| {name} | {device.name} | `{opts}` | {rec['cycles_per_step']:.1f} | "
            f"{p.logic_cells:,} / {p.block_rams} / {p.sprams} / {p.dsps} | "
            + (f"{got['cells']:,} ({got['fmax']:.1f})" if got else "-")
            + " | "
            + (f"{hand['logic_cells']:,} (P = {hand['lanes']})" if hand else "-")
            + f" | {ratio} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
