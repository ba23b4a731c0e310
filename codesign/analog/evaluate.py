"""``codesign analog-eval``: a trained BMRU bundle's own test sequences through the layer netlist.

Each test sequence drives the sky130 layer netlist of ``codesign analog`` in ngspice (one BMRU
cell per neuron, the input and threshold currents of :mod:`codesign.analog.mapping` from ideal
current sources, one 10 ms frame per step); the cells' sign bits are read at the end of every
frame and turned back into the integer states ``h = alpha (2 q - 1)``. The readout is digital, as
on a mixed-signal chip: last-step or saturating sum pooling and ``W h + b`` in integers, argmax
with the lowest index on ties. Reported beside the golden model on the same sequences: accuracy,
per-step state agreement (steps where the golden state is defined), energy per inference from
the supply currents, the frame time, and the smallest current margins met.

What it does not do yet (issue 21): synapses as circuits (the input-weight products are ideal
sources computed in Python), native CMRU ladders (eps = 1), Monte Carlo, mismatch-aware training.

Sequences run on Dask (a local cluster of ``workers`` single-threaded processes, or
``scheduler``); each sequence's result is cached as JSON under ``cache`` (atomic writes, keyed by
the bundle's weights, the settings and the sequence), so an interrupted run resumes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from codesign.atomic import write_text
from codesign.bundle import Bundle, load_bundle
from codesign.bundle.cells import CELLS
from codesign.errors import CodesignError
from codesign.intmath import signed_range

__all__ = ["analog_eval", "analog_readout"]

VERSION = "analog-eval-1"
"""Part of every cache key: bump it when what a cached sequence holds changes."""


def _layer_view(bundle: Bundle) -> Bundle:
    """The bundle as the analog layer sees it: its one layer with a last-step readout (the real
    readout, pooled or not, is applied digitally by :func:`analog_readout`)."""
    man = bundle.manifest
    if len(man.layers) != 1:
        raise CodesignError(f"analog-eval runs one-layer bundles; {man.name!r} has {len(man.layers)} layers")
    layer = man.layers[0]
    if CELLS[layer.cell].rule != "cmru" or layer.eps != 0 or layer.dcls is not None:
        raise CodesignError(
            f"analog-eval runs BMRU layers (cell bmru, or cmru with eps 0, no DCLS front end); "
            f"{man.name!r} has cell {layer.cell!r} eps {layer.eps}"
            + (" with a DCLS front end" if layer.dcls is not None else "")
        )
    if man.readout.per_step:
        raise CodesignError("analog-eval reads one class per sequence; per-step readouts are not supported")
    readout = man.readout.model_copy(update={"pooling": "last"})
    return Bundle(man.model_copy(update={"readout": readout}), bundle.weights, bundle.path)


def test_set(bundle: Bundle) -> tuple[np.ndarray, np.ndarray]:
    """The quantized test inputs and labels of the task in a trained bundle's provenance."""
    prov = bundle.manifest.provenance
    task = prov.get("task")
    if not isinstance(task, dict) or "name" not in task or "seed" not in prov:
        raise CodesignError(
            "the bundle's provenance names no task and seed (export it from a run with codesign export)",
            path=bundle.path,
        )
    from codesign.golden import quantize_inputs
    from codesign.train.recipe import build_task

    t = build_task(task["name"], {k: v for k, v in task.items() if k != "name"})
    x, y = t.split("test", int(prov["seed"]))
    return quantize_inputs(bundle, np.asarray(x)), np.asarray(y)


def analog_readout(bundle: Bundle, states: np.ndarray) -> tuple[np.ndarray, int]:
    """``(logits, class)`` of one sequence's states ``(T, d)`` with the bundle's digital readout."""
    r = bundle.manifest.readout
    if r.pooling == "sum":
        lo, hi = signed_range(r.sum_bits)
        pooled = np.zeros(states.shape[1], dtype=np.int64)
        for row in states:  # saturating at every step, as the golden model and the RTL
            pooled = np.clip(pooled + row, lo, hi)
    else:
        pooled = states[-1].astype(np.int64)
    w = bundle.weights["readout.weight"].astype(np.int64)
    logits = w @ pooled + bundle.weights["readout.bias"].astype(np.int64)
    return logits, int(np.argmax(logits))  # argmax: the lowest index on ties


def _key(bundle: Bundle, settings: dict, n: int) -> str:
    text = json.dumps(
        {"v": VERSION, "weights": bundle.manifest.checksums, "settings": settings, "sequence": n},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _run_sequence(bundle_dir: str, n: int, corner: str, cache: str, key: str) -> dict:
    """One test sequence in ngspice (a Dask task); its result cached as ``cache/key.json``."""
    from codesign.analog.checks import Ctx, run_bundle_trace
    from codesign.analog.mapping import map_bundle

    path = Path(cache) / f"{key}.json"
    if path.is_file():
        return json.loads(path.read_text())
    bundle = load_bundle(bundle_dir)
    view = _layer_view(bundle)
    xq, _ = test_set(bundle)
    maps = map_bundle(view, xq)  # scales from the whole test set: the same for every sequence
    trace = run_bundle_trace(view, xq[n : n + 1], Ctx(corner=corner), maps=maps, name=f"seq{n:05d}")
    record = {
        "sequence": n,
        "steps": int(xq.shape[1]),
        "q_analog": trace.q_analog.astype(int).tolist(),
        "agreement": trace.agreement,
        "compared": int((trace.q_golden >= 0).sum()),
        "power_nW": trace.power,
        "min_root_margin_pA": min(
            (r["root_error_max_margin_pA"] for r in trace.rows if r["root_errors"]), default=None
        ),
        "steps_margin_below_5pA": int(sum(r["steps_margin_below_5pA"] for r in trace.rows)),
        "undecided_reads": int(sum(r["undecided_reads"] for r in trace.rows)),
        "t_step_s": trace.timing.t_step,
        "wall_s": trace.wall_s,
    }
    write_text(path, json.dumps(record))
    return record


def analog_eval(
    bundle_dir: Path,
    sequences: int,
    *,
    corner: str = "tt",
    cache: Path | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int, dict], None] | None = None,
) -> dict:
    """Run ``sequences`` test sequences of a trained BMRU bundle in ngspice; the summary dict."""
    from codesign.golden import run_golden

    bundle_dir = Path(bundle_dir).resolve()
    bundle = load_bundle(bundle_dir)
    _layer_view(bundle)  # refuse what the analog path cannot run, before anything starts
    if sequences < 1:
        raise CodesignError(f"--sequences must be at least 1, not {sequences}")
    xq, y = test_set(bundle)
    count = min(sequences, len(xq))
    cache = Path(cache) if cache is not None else bundle_dir.parent / f"{bundle_dir.name}_analog_eval"
    cache.mkdir(parents=True, exist_ok=True)
    settings = {"corner": corner}
    keys = [_key(bundle, settings, n) for n in range(count)]
    records = _gather(str(bundle_dir), keys, corner, cache, scheduler, workers, progress)
    return _summarize(bundle, xq[:count], y[:count], records, run_golden(bundle, xq[:count]), corner)


def _gather(bundle_dir, keys, corner, cache, scheduler, workers, progress) -> list[dict]:
    from codesign.explore.runner import dask_client

    records: list[dict | None] = [None] * len(keys)
    todo = []
    for n, key in enumerate(keys):
        path = cache / f"{key}.json"
        if path.is_file():
            records[n] = json.loads(path.read_text())
        else:
            todo.append(n)
    done = len(keys) - len(todo)
    if todo:
        from distributed import as_completed

        with dask_client(scheduler, workers) as client:
            futures = {
                client.submit(_run_sequence, bundle_dir, n, corner, str(cache), keys[n], pure=False): n
                for n in todo
            }
            for future in as_completed(list(futures)):
                n = futures[future]
                records[n] = future.result()
                done += 1
                if progress is not None:
                    progress(done, len(keys), records[n])
    return [r for r in records if r is not None]


def _summarize(bundle: Bundle, xq, y, records: list[dict], gold, corner: str) -> dict:
    alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
    analog_classes, golden_classes, margins, as_golden_start = [], [], [], []
    agree = compared = 0
    energy = []
    for n, rec in enumerate(records):
        q = np.asarray(rec["q_analog"], dtype=np.int64)
        states = alpha[None, :] * (2 * q - 1)
        _, cls = analog_readout(bundle, states)
        analog_classes.append(cls)
        # diagnostic: the same states with the golden model's 0 before a neuron's first update (a
        # two-state cell has no such state: it starts at -alpha)
        untouched = gold.layers[0].states[n] == 0
        as_golden_start.append(analog_readout(bundle, np.where(untouched, 0, states))[1])
        golden_classes.append(int(gold.classes[n]))
        agree += rec["agreement"] * rec["compared"] if rec["compared"] else 0
        compared += rec["compared"]
        total_nw = sum(rec["power_nW"].values())
        energy.append(total_nw * 1e-9 * rec["steps"] * rec["t_step_s"] * 1e9)  # nJ
        if rec["min_root_margin_pA"] is not None:
            margins.append(rec["min_root_margin_pA"])
    analog_classes, golden_classes = np.asarray(analog_classes), np.asarray(golden_classes)
    power = {k: float(np.mean([r["power_nW"][k] for r in records])) for k in records[0]["power_nW"]}
    return {
        "bundle": bundle.manifest.name,
        "corner": corner,
        "sequences": len(records),
        "steps_per_sequence": records[0]["steps"],
        "analog_accuracy": float((analog_classes == y).mean()),
        "golden_accuracy": float((golden_classes == y).mean()),
        "class_agreement": float((analog_classes == golden_classes).mean()),
        "analog_accuracy_with_golden_start": float((np.asarray(as_golden_start) == y).mean()),
        "start_note": "a BMRU cell has two states and starts at -alpha; the golden state is 0 until a "
        "neuron's first update. analog_accuracy_with_golden_start reads those steps as 0 (a diagnostic: "
        "a chip would need a per-neuron 'updated' bit to do the same)",
        "state_agreement": agree / compared if compared else float("nan"),
        "neuron_steps_compared": compared,
        "energy_per_inference_nj": float(np.mean(energy)),
        "power_nw": power,
        "power_note": "supply currents of the cells (core), their bias generators (bias) and the ideal "
        "input sources (input); synapses are not circuits yet",
        "time_per_step_s": records[0]["t_step_s"],
        "worst_root_error_margin_pa": max(margins) if margins else None,
        "steps_margin_below_5pa": int(sum(r["steps_margin_below_5pA"] for r in records)),
        "undecided_reads": int(sum(r["undecided_reads"] for r in records)),
        "simulated_s": float(sum(r["wall_s"] for r in records)),
        "synapses": "ideal current sources (not circuits yet)",
    }
