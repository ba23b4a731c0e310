"""``codesign flow RECIPE --device D``: a recipe to a mapped, verified, synthesised and reported build.

The stages, each a ``codesign`` command with its artifacts in one folder::

    train   RECIPE                 -> FOLDER/run/      (checkpoints, metrics)
    export  FOLDER/run             -> FOLDER/bundle/   (quantized; torch == golden checked)
    map     FOLDER/bundle          -> FOLDER/build/    (codesign rtl --device D: the mapper)
    sim     FOLDER/build           -> FOLDER/sim.json  (the bundle's own test sequences, bit-exact)
    synth   FOLDER/build           -> FOLDER/synth.json (bitstream; `codesign area` for an ASIC)
    report  FOLDER/build           -> FOLDER/report/   (latency, energy, memory, margin)

Every stage is skipped when what it reads is unchanged (:mod:`codesign.flow.stages`), so a stopped
flow resumes and a second run of the same recipe runs nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from codesign.errors import CodesignError
from codesign.flow.stages import Stage

__all__ = ["FlowOptions", "flow_stages", "flow_summary"]

FPGA_DEVICES = ("up5k", "hx8k", "ecp5-25k", "ecp5-85k")
DEVICES = (*FPGA_DEVICES, "asic")


@dataclass(frozen=True)
class FlowOptions:
    """What a user chooses for a flow; everything else comes from the recipe and the mapper."""

    recipe: Path
    folder: Path
    device: str = "up5k"
    step_rate: float = 100.0
    clock_mhz: float | None = None
    objective: str = "area"
    sequences: int = 20
    train_device: str | None = None
    simulator: str = "icarus"

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise CodesignError(f"--device {self.device!r} is not one of {', '.join(DEVICES)}")
        if not Path(self.recipe).is_file():
            raise CodesignError("recipe file not found", path=self.recipe)
        if self.sequences < 1:
            raise CodesignError(f"--sequences {self.sequences} must be at least 1")
        if self.step_rate <= 0:
            raise CodesignError(f"--step-rate {self.step_rate:g} must be positive")


def flow_stages(opts: FlowOptions) -> list[Stage]:
    """The stages of a recipe flow, with the files each reads and writes."""
    f = Path(opts.folder)
    run, bundle, build = f / "run", f / "bundle", f / "build"
    train = ["train", str(opts.recipe), "--out", str(run), "--quiet"]
    if opts.train_device:
        train += ["--device", opts.train_device]
    rate = ["--step-rate", f"{opts.step_rate:g}"]
    clock = ["--clock", f"{opts.clock_mhz:g}"] if opts.clock_mhz else []
    mapped = [
        *("rtl", str(bundle), "--out", str(build), "--device", opts.device, "--objective", opts.objective),
        *rate,
        *clock,
    ]
    design = [build / "accelerator.v", build / "build.json"]
    stages = [
        Stage("train", train, reads=[Path(opts.recipe)], writes=[run / "best.pt", run / "summary.json"]),
        Stage(
            "export",
            ["export", str(run), "--out", str(bundle)],
            reads=[run],
            writes=[bundle / "manifest.yaml"],
        ),
        Stage("map", mapped, reads=[bundle], writes=design),
        Stage(
            "sim",
            [
                *("sim", str(build), "--sim", opts.simulator, "--test-set", str(opts.sequences)),
                *("--json", str(f / "sim.json")),
            ],
            reads=[*design, bundle],
            writes=[f / "sim.json"],
        ),
    ]
    if opts.device == "asic":
        stages.append(
            Stage(
                "area",
                ["area", str(build), "--json", str(f / "area.json")],
                reads=design,
                writes=[f / "area.json"],
            )
        )
        implemented = f / "area.json"
    else:
        synth = ["synth", str(build), "--device", opts.device, "--json", str(f / "synth.json")]
        if opts.clock_mhz:
            synth += ["--freq", f"{opts.clock_mhz:g}"]
        stages.append(Stage("synth", synth, reads=design, writes=[f / "synth.json"]))
        implemented = f / "synth.json"
    # the digital chip's report: the analog estimate of the same cells is codesign analog-eval's
    report = [
        *("report", str(build), "--out", str(f / "report"), "--json", str(f / "report.json")),
        *(*rate, "--no-analog"),
    ]
    stages.append(Stage("report", report, reads=[*design, implemented], writes=[f / "report.json"]))
    return stages


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def _dig(data: dict, *keys: str):
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def flow_summary(opts: FlowOptions) -> list[tuple[str, str]]:
    """The figures a user wants after a flow, as (label, value) rows, read from the artifacts."""
    f = Path(opts.folder)
    rows: list[tuple[str, str]] = []
    manifest = f / "bundle" / "manifest.yaml"
    if manifest.is_file():
        prov = (yaml.safe_load(manifest.read_text()) or {}).get("provenance", {})
        for key, label in (
            ("float_test_accuracy", "float"),
            ("quantized_test_accuracy", "quantized = golden"),
        ):
            if key in prov:
                rows.append((f"test accuracy, {label}", f"{prov[key]:.4f}"))
    mapping = _dig(_read_json(f / "build" / "build.json"), "mapping")
    if isinstance(mapping, dict):
        rows.append(("mapping (codesign rtl)", str(mapping.get("command_options", ""))))
        if mapping.get("reason"):
            rows.append(("why", str(mapping["reason"])))
    sim = _read_json(f / "sim.json")
    if sim:
        acc = sim.get("accuracy")
        rows.append(
            (
                f"RTL against golden ({sim.get('sequences', '?')} test sequences)",
                f"{sim.get('mismatches', '?')} mismatches"
                + (f", accuracy {acc:.4f}" if acc is not None else ""),
            )
        )
        if sim.get("cycles_per_step") is not None:
            rows.append(("cycles per step", f"{sim['cycles_per_step']:.2f}"))
    synth = _read_json(f / "synth.json")
    if synth:
        status = synth.get("status")
        fmax = synth.get("fmax_mhz")
        res = synth.get("resources") or {}
        text = f"{status}" + (f", Fmax {fmax:.1f} MHz" if fmax else "")
        if res:
            text += ", " + ", ".join(f"{k} {v}" for k, v in res.items() if k in ("lut", "ff", "bram", "dsp"))
        rows.append((f"{synth.get('part', opts.device)}", text))
    report = _read_json(f / "report.json")
    energy = _dig(report, "energy", "energy_uj_per_inference")
    if energy is not None:
        rows.append(("energy per inference (ASIC proxy)", f"{energy:.3g} uJ"))
    margin = _dig(report, "latency", "realtime_margin")
    if margin is not None:
        rows.append((f"real-time margin at {opts.step_rate:g} steps/s", f"{margin:.3g}x"))
    if (f / "report").is_dir():
        rows.append(("report", str(f / "report" / "report.md")))
    return rows
