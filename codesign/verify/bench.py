"""``codesign bench rtl``: cycles per step of the accelerator against the work floor, as JSON.

For each bundle and lane count ``P`` the accelerator runs in amaranth.sim (the same RTL as the
Verilog) on dense and on 10%-dense random inputs, sequences driven back to back. Figures:

* ``cycles_per_step``: cycles from the first input beat to the last result, over all steps;
* ``floor_per_step``: ``sum_l ceil(d_l / P) x work_l`` averaged over the steps, with ``work_0`` =
  non-zero inputs (or non-zero DCLS outputs) and ``work_l`` = events of layer ``l-1`` (read off
  the golden model's MAC counts: ``work_l = macs_l / (d_l x matrices)``);
* ``target_per_step = 1.1 x floor + 8 x layers`` and whether it is met;
* ``slowest_layer_per_step``: the busiest engine's busy cycles per step: the layers run as a
  pipeline, so in steady state a step costs about the slowest engine, not the sum;
* ``readout_cycles_per_sequence``: the readout engine's busy cycles (reported separately).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from codesign.atomic import write_text
from codesign.bundle import Bundle, load_bundle
from codesign.bundle.random import random_integer_inputs
from codesign.golden import run_golden
from codesign.hw.pysim import simulate
from codesign.verify.cycles import cycle_floor, target_per_step

__all__ = ["bench_bundle", "floor_per_step", "run_bench"]

DEFAULT_BUNDLES = ("spoken_digits_cmru", "japanese_vowels_cmru2", "flip_flop_bgmingru_dcls")
DENSITIES = {"dense": 1.0, "sparse10": 0.1}


def floor_per_step(bundle: Bundle, xs: list[np.ndarray], lanes: int) -> float:
    """Mean over all steps of ``sum_l ceil(d_l / P) x work_l`` (:func:`codesign.verify.cycles.cycle_floor`)."""
    total, steps = 0, 0
    for x in xs:
        total += int(cycle_floor(bundle.manifest, run_golden(bundle, np.asarray(x)[None]), lanes).sum())
        steps += len(x)
    return total / steps


def bench_bundle(
    bundle: Bundle, lanes: int, density: float, *, sequences: int, steps: int, seed: int
) -> dict:
    xs = random_integer_inputs(bundle, sequences=sequences, steps=steps, seed=seed, density=density)
    start = time.perf_counter()
    result = simulate(bundle, xs, lanes=lanes)
    wall = time.perf_counter() - start
    total_steps = sequences * steps
    counters = result.counters
    n_layers = len(bundle.manifest.layers)
    floor = floor_per_step(bundle, xs, lanes)
    cycles = result.cycles / total_steps
    engines = {}
    for i, layer in enumerate(bundle.manifest.layers):
        busy = counters[f"layer{i}_busy_cycles"] / total_steps
        if layer.dcls is not None:
            busy = max(busy, counters[f"layer{i}_dcls_cycles"] / total_steps)
        engines[f"layer{i}"] = round(busy, 2)
    target = target_per_step(floor, n_layers)
    return {
        "lanes": lanes,
        "density": density,
        "sequences": sequences,
        "steps_per_sequence": steps,
        "cycles_per_step": round(cycles, 2),
        "floor_per_step": round(floor, 2),
        "target_per_step": round(target, 2),
        "meets_target": bool(cycles <= target),
        "ratio_to_floor": round(cycles / floor, 3) if floor else None,
        "busy_cycles_per_step": engines,
        "slowest_layer_per_step": max(engines.values()),
        "readout_cycles_per_sequence": round(counters["readout_busy_cycles"] / sequences, 2),
        "layer_macs": [counters[f"layer{i}_macs"] for i in range(n_layers)],
        "layer_events": [counters[f"layer{i}_events"] for i in range(n_layers)],
        "readout_macs": counters["readout_macs"],
        "simulated_in_s": round(wall, 2),
    }


def run_bench(
    bundles: list[Path],
    lanes: list[int],
    *,
    sequences: int = 4,
    steps: int = 40,
    seed: int = 0,
    json_path: Path | None = None,
    progress=print,
) -> dict:
    """Every bundle x lane count x density; the summary dict (also written to ``json_path``)."""
    rows = []
    for path in bundles:
        bundle = load_bundle(path)
        widest = max(layer.size for layer in bundle.manifest.layers)
        for p in lanes:
            if p > widest:
                continue
            for label, density in DENSITIES.items():
                row = {"bundle": bundle.manifest.name, "inputs": label}
                row |= bench_bundle(bundle, p, density, sequences=sequences, steps=steps, seed=seed)
                rows.append(row)
                progress(
                    f"{row['bundle']:>28} P={p:<3} {label:>8}: {row['cycles_per_step']:8.1f} cycles/step, "
                    f"floor {row['floor_per_step']:7.1f}, target {row['target_per_step']:7.1f} "
                    f"({'met' if row['meets_target'] else 'MISSED'}), slowest layer "
                    f"{row['slowest_layer_per_step']:.1f}, readout {row['readout_cycles_per_sequence']:.0f}/seq"
                )
    summary = {
        "benchmark": "rtl cycles per step (amaranth.sim of the generated accelerator)",
        "floor": "sum over layers of ceil(d_l/P) x work_l; target 1.1 x floor + 8 x layers",
        "rows": rows,
        "all_met": all(r["meets_target"] for r in rows),
    }
    if json_path is not None:
        write_text(Path(json_path), json.dumps(summary, indent=2) + "\n")
    return summary
