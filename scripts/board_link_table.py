"""The real-time margin at the board, the UART link counted, for every reference bundle with a
report in docs/reports/: a markdown table for docs/board.md (and ``--json F`` for figures).

Cycles per step come from each bundle's ``docs/reports/<bundle>/report.json`` (pysim, at the
lanes of that report); the bytes per step from the build's protocol and the same input sequences
``codesign report`` measured (codesign.report.measure.load_inputs); the clock is the board's
oscillator, no PLL (``--clock-mhz``, default the iCEBreaker's 12 MHz).

    python scripts/board_link_table.py [--clock-mhz 12] [--rate 100] [--json F]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bundle_info(bundle, lanes: int) -> dict:
    """The parts of ``build.json`` the link needs, without writing Verilog."""
    from codesign.hw.accelerator import Accelerator
    from codesign.hw.build import payload_fields

    acc = Accelerator(bundle, lanes=lanes)
    return {
        "ports": {
            "inputs__payload": {"width": acc.inputs.payload.shape().size},
            "results__payload": {"width": acc.results.payload.shape().size},
        },
        "results_payload": payload_fields(acc.results.payload.shape()),
        "readout": bundle.manifest.readout.model_dump(mode="json"),
    }


def main() -> None:
    from codesign.bundle import load_bundle
    from codesign.report.link import link_latency
    from codesign.report.measure import load_inputs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clock-mhz", type=float, default=12.0)
    parser.add_argument("--rate", type=float, default=100.0, help="steps per second")
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for report in sorted((ROOT / "docs" / "reports").glob("*/report.json")):
        figures = json.loads(report.read_text())
        name = report.parent.name
        bundle_dir = ROOT / "models" / "bundles" / name
        if not bundle_dir.is_dir():
            continue
        bundle = load_bundle(bundle_dir)
        seqs, _ = load_inputs(bundle, sequences=figures["inputs"]["sequences"], steps=None)
        cps = figures["latency"]["cycles_per_step"]
        link = link_latency(
            bundle_info(bundle, int(figures["lanes"])),
            seqs,
            baud=args.baud,
            cycles_per_step=cps,
            clock_mhz=args.clock_mhz,
            step_rate=args.rate,
        )
        rows.append({"bundle": name, "lanes": figures["lanes"], "cycles_per_step": cps} | link)
    print(
        f"| bundle | P | cycles / step | accelerator us / step at {args.clock_mhz:g} MHz | bytes / step in / out "
        f"| link us / step at {args.baud} baud | bound | margin at {args.rate:g} steps/s | at 1 Mbaud | at 3 Mbaud |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        faster = r["margin_at_faster_bauds"]
        print(
            f"| {r['bundle']} | {r['lanes']} | {r['cycles_per_step']:.1f} | {r['compute_us_per_step']:.2f} | "
            f"{r['bytes_per_step_in']:.1f} / {r['bytes_per_step_out']:.2f} | {r['link_us_per_step']:.0f} | "
            f"{r['bottleneck']} | {r['realtime_margin']:.1f} x | {faster['1000000']:.1f} x | {faster['3000000']:.1f} x |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
