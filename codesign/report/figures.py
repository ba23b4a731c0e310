"""The figures of one build directory: latency, energy, area, the lane sweep and the comparisons."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from codesign.bundle.io import load_bundle
from codesign.energy import DEFAULT_LEAK_NW_PER_UM2, ENERGY_PJ, dynamic_energy
from codesign.errors import CodesignError
from codesign.report.analog import CACHE_DIR, analog_power, not_measured, side_by_side
from codesign.report.fpga_power import fpga_power_section
from codesign.report.link import link_latency
from codesign.report.measure import dense_macs, load_inputs, measure, sweep_lanes
from codesign.report.references import REFERENCES

__all__ = ["DEFAULT_CLOCK_MHZ", "build_figures", "memory_bits_by_kind"]

DEFAULT_CLOCK_MHZ = 30.0
SYNTH_SUMMARY = "summary.json"  # codesign.fpga.synth.SUMMARY, in BUILD/synth/<device>/
AREA_JSON = Path("area") / "area.json"  # codesign.fpga.area.area_report writes BUILD/area/area.json


def _update_rate(manifest, main: dict) -> float | None:
    """Open neuron-steps of the selective layers over their neuron-steps (``None``: no such layer)."""
    if manifest is None:
        return None
    sizes = {
        f"layer{i}": layer.size for i, layer in enumerate(manifest.layers) if layer.selective is not None
    }
    opened = [main["counters"].get(f"{name}_open_steps") for name in sizes]
    if not sizes or any(v is None for v in opened):
        return None
    return sum(opened) / (main.get("layer_steps", main["steps"]) * sum(sizes.values()))


def memory_bits_by_kind(plan: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in plan["memories"]:
        out[m["kind"]] = out.get(m["kind"], 0) + int(m["bits"])
    return dict(sorted(out.items()))


def _synth_summaries(build: Path) -> list[dict]:
    out = []
    for path in sorted((build / "synth").glob(f"*/{SYNTH_SUMMARY}")):
        s = json.loads(path.read_text())
        out.append(
            {
                "device": s.get("device", path.parent.name),
                "part": s.get("part"),
                "status": s.get("status"),
                "fmax_mhz": s.get("fmax_mhz"),
                "target_mhz": s.get("target_mhz"),
                "timing_met": s.get("timing_met"),
                "resources": s.get("resources"),
                "file": str(path),
            }
        )
    return out


def _energy(plan: dict, run: dict, steps_per_inference: float, step_rate: float, leak_uw: float) -> dict:
    dyn = dynamic_energy(plan, run["counters"])
    per_step_pj = dyn["total"] / run["steps"]
    leak_per_step_pj = leak_uw * 1e6 / step_rate  # uW / (steps/s) = uJ per step
    per_inference_pj = dyn["total"] / run["sequences"] + leak_per_step_pj * steps_per_inference
    macs = sum(v for k, v in run["counters"].items() if k.endswith("_macs"))
    frames_per_layer_step = run["steps"] / run.get("layer_steps", run["steps"])
    return {
        "dynamic_pj": {k: v / run["sequences"] for k, v in dyn.items() if k != "by_memory"},
        "dynamic_pj_by_memory": {k: v / run["sequences"] for k, v in dyn["by_memory"].items()},
        "dynamic_pj_per_step": per_step_pj,
        "leakage_uw": leak_uw,
        "leakage_pj_per_step": leak_per_step_pj,
        "energy_pj_per_step": per_step_pj + leak_per_step_pj,
        # a step is an input frame; with an input stride the layers step once per S frames
        "energy_pj_per_layer_step": (per_step_pj + leak_per_step_pj) * frames_per_layer_step,
        "energy_uj_per_inference": per_inference_pj * 1e-6,
        "dynamic_uj_per_inference": dyn["total"] / run["sequences"] * 1e-6,
        "power_uw": per_step_pj * step_rate * 1e-6 + leak_uw,
        "dynamic_power_uw": per_step_pj * step_rate * 1e-6,
        "pj_per_mac_dynamic": dyn["total"] / macs if macs else None,
    }


SWEEP_COLUMNS = (
    "lanes",
    "cycles_per_step",
    "steady_cycles_per_step",
    "memory_bits",
    "multipliers",
    "dynamic_uj_per_inference",
)
"""What the lanes sweep reports of each run (``figures["sweep"]``)."""

ASIC_KEYS = ("total_um2", "logic_um2", "memory_um2", "memory_model", "gates", "flops", "transistors_logic")
"""What the area section quotes of ``codesign area``'s JSON."""


def _clock(synth: list[dict], clock_mhz: float | None) -> dict:
    """The clock the latency is quoted at: stated, else the lowest synthesised Fmax, else the default."""
    fmaxes = [s for s in synth if s["status"] == "ok" and s["fmax_mhz"]]
    if clock_mhz is not None:
        return {"mhz": clock_mhz, "source": "stated on the command line (--clock-mhz)"}
    if fmaxes:
        worst = min(fmaxes, key=lambda s: s["fmax_mhz"])
        return {
            "mhz": worst["fmax_mhz"],
            "source": f"Fmax of codesign synth on {worst['device']} ({worst['file']}); lowest of the synthesised devices",
        }
    return {
        "mhz": DEFAULT_CLOCK_MHZ,
        "source": f"stated clock {DEFAULT_CLOCK_MHZ:g} MHz (no synth summary in BUILD)",
    }


def _lane_sweep(
    bundle,
    seqs: list,
    lanes: list[int],
    info: dict,
    steps_per_inference: float,
    step_rate: float,
    leak_uw: float,
    say: Callable[[str], None],
) -> list[dict]:
    """One simulated run per lane count: cycles, memory, multipliers and energy (leakage: built P only)."""
    from codesign.hw.build import plan_summary
    from codesign.hw.plan import plan_accelerator

    p0 = int(info["lanes"])
    sweep = []
    for p in lanes:
        say(f"simulating P = {p} on {len(seqs)} sequences x {len(seqs[0])} steps")
        run = measure(bundle, seqs, p)
        plan = plan_summary(plan_accelerator(bundle.manifest, p)) if p != p0 else info["plan"]
        energy = _energy(plan, run, steps_per_inference, step_rate, leak_uw if p == p0 else 0.0)
        sweep.append(
            {
                **run,
                "memory_bits": sum(m["bits"] for m in plan["memories"]),
                "multipliers": sum(e["lanes"] * len(e["matrices"]) for e in plan["engines"]),
                "dynamic_uj_per_inference": energy["dynamic_uj_per_inference"],
                "energy": energy,
            }
        )
    return sweep


def _latency(main: dict, clock: dict, step_rate: float, synth: list[dict], info: dict, seqs: list) -> dict:
    """Cycles per step of the built design, in time at ``clock``, against the step period; the
    UART link's share (bytes per step at 115,200 baud) beside it."""
    cps = main["cycles_per_step"]
    time_step_us = cps / clock["mhz"]
    period_us = 1e6 / step_rate
    return {
        "cycles_per_step": cps,
        "input_stride": main.get("input_stride", 1),
        "cycles_per_layer_step": main.get("cycles_per_layer_step", cps),
        "steady_cycles_per_step": main["steady_cycles_per_step"],
        "busy_cycles_per_step": main["busy_cycles_per_step"],
        "clock_mhz": clock["mhz"],
        "clock_source": clock["source"],
        "time_per_step_us": time_step_us,
        "step_rate_hz": step_rate,
        "step_period_us": period_us,
        "realtime_margin": period_us / time_step_us,
        "min_clock_mhz_for_rate": cps * step_rate / 1e6,
        "link": link_latency(
            info, seqs, baud=115200, cycles_per_step=cps, clock_mhz=clock["mhz"], step_rate=step_rate
        ),
        "synth": synth,
    }


def _energy_section(main: dict, area: dict | None, leak_nw_per_um2: float) -> dict:
    """The built design's energy proxy, its table and the leakage assumption."""
    e = main["energy"]
    synaptic_ops = sum(
        v for k, v in main["counters"].items() if k.endswith("_macs") and k.startswith("layer")
    )
    return {
        **e,
        "table_pj": ENERGY_PJ,
        "table_source": "Horowitz, ISSCC 2014, 45 nm (codesign.energy.ENERGY_PJ); scaling in codesign/energy.py",
        "leak_nw_per_um2": leak_nw_per_um2 if area else None,
        "leak_note": (
            f"assumption: {leak_nw_per_um2:g} nW/um^2 x {area['total_um2']:.0f} um^2 (codesign area)"
            if area
            else "no codesign area JSON in BUILD (BUILD/area/area.json): leakage not included"
        ),
        "pj_per_synaptic_op": (e["energy_pj_per_step"] * main["steps"] / synaptic_ops)
        if synaptic_ops
        else None,
    }


def _area(info: dict, area: dict | None, area_path: Path, synth: list[dict]) -> dict:
    """Memory bits from the plan, the ASIC proxy (when ``codesign area`` ran), FPGA resources."""
    return {
        "memory_bits_by_kind": memory_bits_by_kind(info["plan"]),
        "memory_bits": sum(m["bits"] for m in info["plan"]["memories"]),
        "memories": info["plan"]["memories"],
        "asic": None if area is None else {k: area[k] for k in ASIC_KEYS if k in area},
        "asic_source": str(area_path) if area else None,
        "fpga": [{"device": s["device"], "part": s["part"], "resources": s["resources"]} for s in synth],
    }


def _dense_vs_event(info: dict, manifest, main: dict) -> dict:
    """MACs the event-driven design ran against the dense count, events per step, update rate."""
    measured_macs = sum(v for k, v in main["counters"].items() if k.endswith("_macs"))
    dense = dense_macs(info, main.get("layer_steps", main["steps"]), main["sequences"])
    return {
        "measured_macs_per_inference": measured_macs / main["sequences"],
        "dense_macs_per_inference": dense / main["sequences"],
        "ratio": measured_macs / dense if dense else None,
        "events_per_step": sum(v for k, v in main["counters"].items() if k.endswith("_events"))
        / main["steps"],
        "update_rate": _update_rate(manifest, main),
    }


def build_figures(
    build: str | Path,
    *,
    step_rate: float = 100.0,
    clock_mhz: float | None = None,
    sequences: int = 2,
    steps: int | None = None,
    lanes: list[int] | None = None,
    leak_nw_per_um2: float = DEFAULT_LEAK_NW_PER_UM2,
    analog: dict | None = None,
    analog_off: str = "not requested",
    progress: Callable[[str], None] | None = None,
    fpga_device: str | None = None,
    inputs: list | None = None,
) -> dict:
    """Everything ``codesign report`` writes, as one JSON-able dict.

    ``analog``: keyword arguments of :func:`codesign.report.analog.analog_power` (``neurons``,
    ``steps``, ...) to measure the cells in ngspice (cached in ``BUILD/report_analog``); None
    leaves the section out, with ``analog_off`` as the reason. ``fpga_device``: the chip of the
    FPGA power estimate (:mod:`codesign.report.fpga_power`; default chosen from the build).
    ``inputs``: integer input sequences to measure on instead of the bundle's test set.
    """
    say = progress or (lambda t: print(f"report: {t}", file=sys.stderr, flush=True))
    build = Path(build)
    if not (build / "build.json").is_file():
        raise CodesignError("not a build directory (no build.json; make one with codesign rtl)", path=build)
    info = json.loads((build / "build.json").read_text())
    bundle = load_bundle(build)
    p0 = int(info["lanes"])
    widest = max(layer["size"] for layer in info["layers"])
    lanes = sorted(set(lanes or sweep_lanes(widest)) | {p0})
    seqs, source = load_inputs(bundle, sequences=sequences, steps=steps, given=inputs)
    steps_per_inference = sum(len(s) for s in seqs) / len(seqs)

    synth = _synth_summaries(build)
    clock = _clock(synth, clock_mhz)
    area_path = build / AREA_JSON
    area = json.loads(area_path.read_text()) if area_path.is_file() else None
    leak_uw = area["total_um2"] * leak_nw_per_um2 * 1e-3 if area else 0.0
    sweep = _lane_sweep(bundle, seqs, lanes, info, steps_per_inference, step_rate, leak_uw, say)
    main = next(r for r in sweep if r["lanes"] == p0)
    if analog is not None:
        say("measuring the recurrent cells in ngspice (analog path)")
        analog_section = analog_power(
            bundle,
            seqs,
            step_rate=step_rate,
            steps_per_inference=steps_per_inference,
            cache_root=build / CACHE_DIR,
            source=source,
            progress=say,
            **analog,
        )
    else:
        analog_section = not_measured("not measured", analog_off)
    figures = {
        "build": str(build),
        "bundle": info.get("bundle"),
        "lanes": p0,
        "network": {"layers": info["layers"], "readout": info["readout"], "input": info["input"]},
        "inputs": {"source": source, "sequences": len(seqs), "steps_per_sequence": steps_per_inference},
        "latency": _latency(main, clock, step_rate, synth, info, seqs),
        "energy": _energy_section(main, area, leak_nw_per_um2),
        "fpga_power": fpga_power_section(
            build,
            bundle,
            info,
            synth,
            main,
            clock_mhz=clock["mhz"],
            step_rate=step_rate,
            steps_per_inference=steps_per_inference,
            device=fpga_device,
        ),
        "area": _area(info, area, area_path, synth),
        "dense_vs_event": _dense_vs_event(info, bundle.manifest, main),
        "sweep": [{k: r[k] for k in SWEEP_COLUMNS} for r in sweep],
        "counters": main["counters"],
        "references": REFERENCES,
        "analog": analog_section,
    }
    figures["side_by_side"] = side_by_side(figures)
    return figures
