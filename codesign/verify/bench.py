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

A bundle with selective-update layers is measured at each update rate of ``rates``: its schedules
are replaced by windowed ones of that open fraction (:func:`codesign.bundle.random.rhythmic_table`,
phases in neuron order, as :mod:`codesign.bundle.reorder` leaves a trained schedule), with a phase
per neuron and with a phase per group of ``P`` neurons (a layer trained with ``selective.share: P``). Its rows add
``update_rate`` (measured), ``open_steps_per_step`` (the RTL counter), the walk floor (skipped
groups cost nothing) and ``open_floor_per_step = sum_l ceil(open_l / P) x work_l`` with
``open_target_per_step = 1.1 x open_floor + 8 x layers``, the target of selective update.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from codesign.atomic import write_text
from codesign.bundle import Bundle, load_bundle
from codesign.bundle.io import check_weights
from codesign.bundle.random import random_integer_inputs, rhythmic_table
from codesign.golden import run_golden
from codesign.hw.plan import plan_accelerator, resolve_narrow
from codesign.hw.pysim import simulate
from codesign.verify.cycles import cycle_floor, open_floor, target_per_step

__all__ = ["bench_bundle", "floor_per_step", "run_bench"]

DEFAULT_BUNDLES = ("spoken_digits_cmru", "japanese_vowels_cmru2", "flip_flop_bgmingru_dcls")
DENSITIES = {"dense": 1.0, "sparse10": 0.1}


def selective_tables(bundle: Bundle) -> dict[int, np.ndarray]:
    """The ``su_gate`` of every selective layer, by layer index."""
    return {
        i: bundle.weights[f"layers.{i}.su_gate"]
        for i, layer in enumerate(bundle.manifest.layers)
        if layer.selective is not None
    }


def floor_per_step(
    bundle: Bundle,
    xs: list[np.ndarray],
    lanes: int,
    *,
    ideal: bool = False,
    passes: list[int] | None = None,
    gaps: list[int] | None = None,
) -> float:
    """Mean over all steps of ``sum_l ceil(d_l / P) x passes_l x work_l``
    (:func:`codesign.verify.cycles.cycle_floor`; ``ideal``: :func:`codesign.verify.cycles.open_floor`;
    ``passes``: cycles per slot of each layer, 1 without shared multipliers; ``gaps``: idle
    cycles after each group, 0 without a shared update unit)."""
    total, steps = 0, 0
    tables = selective_tables(bundle)
    for x in xs:
        gold = run_golden(bundle, np.asarray(x)[None])
        floor = (
            open_floor(bundle.manifest, gold, lanes, passes)
            if ideal
            else cycle_floor(bundle.manifest, gold, lanes, tables, passes, gaps)
        )
        total += int(floor.sum())
        steps += len(x)
    return total / steps


def with_update_rate(bundle: Bundle, rate: float, seed: int, block: int = 1) -> Bundle:
    """``bundle`` with every selective layer's schedule replaced by a windowed one of open fraction
    ``rate``; ``block``: neurons share their phase in blocks of that many (``selective.share``)."""
    rng = np.random.default_rng(seed)
    weights = dict(bundle.weights)
    for i, table in selective_tables(bundle).items():
        weights[f"layers.{i}.su_gate"] = rhythmic_table(rng, *table.shape, rate, block=block)
    return Bundle(bundle.manifest, check_weights(bundle.manifest, weights), bundle.path)


def bench_bundle(
    bundle: Bundle,
    lanes: int,
    density: float,
    *,
    sequences: int,
    steps: int,
    seed: int,
    rate: float | None = None,
    shared: bool = False,
    target: str = "generic",
    share: str = "off",
    narrow: str | None = None,
    share_updates: str = "off",
    merge: str = "off",
) -> dict:
    """One benchmark row: ``bundle`` at ``lanes`` lanes in amaranth.sim against its cycle floor.

    ``target`` and ``share`` (``--share-multipliers``) make the plan of a mapped build: a shared
    multiplier costs ``passes`` cycles per slot, which the floor counts too; ``narrow``
    (``--narrow``, ``None``: the target's default) folds words into slices, at no cycle;
    ``share_updates`` (``--share-updates on``) costs ``P - 1`` idle cycles per group, which the
    floor counts too; ``merge`` (``--merge auto``) shares physical words, at no cycle."""
    if rate is not None:
        bundle = with_update_rate(bundle, rate, seed, block=lanes if shared else 1)
    xs = random_integer_inputs(bundle, sequences=sequences, steps=steps, seed=seed, density=density)
    start = time.perf_counter()
    result = simulate(
        bundle,
        xs,
        lanes=lanes,
        target=target,
        share=share,
        narrow=narrow,
        share_updates=share_updates,
        merge=merge,
    )
    wall = time.perf_counter() - start
    total_steps = sequences * steps
    counters = result.counters
    n_layers = len(bundle.manifest.layers)
    plan = plan_accelerator(bundle.manifest, lanes, target=target, share=share, share_updates=share_updates)
    passes = [e.passes for e in plan.layers]
    floor = floor_per_step(bundle, xs, lanes, passes=passes, gaps=[e.update_gap for e in plan.layers])
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
        "passes": passes,
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
    } | (_selective_figures(bundle, xs, lanes, result, cycles, passes) if selective_tables(bundle) else {})


def _selective_figures(
    bundle: Bundle, xs: list[np.ndarray], lanes: int, result, cycles: float, passes: list[int]
) -> dict:
    total_steps = sum(len(x) for x in xs)
    layers = bundle.manifest.layers
    opened = sum(result.counters.get(f"layer{i}_open_steps", 0) for i in range(len(layers)))
    selective = [i for i, layer in enumerate(layers) if layer.selective is not None]
    rate = opened / (total_steps * sum(layers[i].size for i in selective))
    ideal = floor_per_step(bundle, xs, lanes, ideal=True, passes=passes)
    target = target_per_step(ideal, len(layers))
    return {
        "update_rate": round(rate, 4),
        "open_steps_per_step": round(opened / total_steps, 2),
        "open_floor_per_step": round(ideal, 2),
        "open_target_per_step": round(target, 2),
        "meets_open_target": bool(cycles <= target),
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
    rates: list[float] | None = None,
    target: str = "generic",
    share: str = "off",
    narrow: str | None = None,
    share_updates: str = "off",
    merge: str = "off",
) -> dict:
    """Every bundle x lane count x density (x update rate for selective bundles); the summary dict
    (also written to ``json_path``). ``target``, ``share`` and ``narrow`` as in :func:`bench_bundle`."""
    rows = []
    for path in bundles:
        bundle = load_bundle(path)
        widest = max(layer.size for layer in bundle.manifest.layers)
        for p in lanes:
            if p > widest:
                continue
            points = [(label, density, None, False) for label, density in DENSITIES.items()]
            if selective_tables(bundle):
                points = [
                    (label, d, r, shared)
                    for label, d, _, _ in points
                    for r in (rates or [0.1, 0.3, 1.0])
                    for shared in (False, True)
                ]
            for label, density, rate, shared in points:
                row = {"bundle": bundle.manifest.name, "inputs": label}
                if rate is not None:
                    row["phases"] = "per group of P" if shared else "per neuron"
                row |= bench_bundle(
                    bundle,
                    p,
                    density,
                    sequences=sequences,
                    steps=steps,
                    seed=seed,
                    rate=rate,
                    shared=shared,
                    target=target,
                    share=share,
                    narrow=narrow,
                    share_updates=share_updates,
                    merge=merge,
                )
                rows.append(row)
                extra = ""
                if rate is not None:
                    extra = (
                        f", phases {row['phases']}, p {row['update_rate']:.3f}: open floor "
                        f"{row['open_floor_per_step']:.1f}, target {row['open_target_per_step']:.1f} "
                        f"({'met' if row['meets_open_target'] else 'MISSED'})"
                    )
                progress(
                    f"{row['bundle']:>28} P={p:<3} {label:>8}: {row['cycles_per_step']:8.1f} cycles/step, "
                    f"floor {row['floor_per_step']:7.1f}, target {row['target_per_step']:7.1f} "
                    f"({'met' if row['meets_target'] else 'MISSED'}), slowest layer "
                    f"{row['slowest_layer_per_step']:.1f}, readout {row['readout_cycles_per_sequence']:.0f}/seq"
                    + extra
                )
    summary = {
        "benchmark": "rtl cycles per step (amaranth.sim of the generated accelerator)",
        "floor": "sum over layers of ceil(d_l/P) x passes_l x work_l; target 1.1 x floor + 8 x layers",
        "target": target,
        "share_multipliers": share,
        "narrow": resolve_narrow(narrow, target),
        "share_updates": share_updates,
        "merge": merge,
        "rows": rows,
        "all_met": all(r["meets_target"] for r in rows),
    }
    if json_path is not None:
        write_text(Path(json_path), json.dumps(summary, indent=2) + "\n")
    return summary
