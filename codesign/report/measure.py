"""Inputs and simulated counters: ``codesign.hw.pysim.simulate`` at one lane count.

The inputs are the caller's own sequences when given, else the first sequences of the bundle's own test set (the task and seed of its
provenance, quantized as the golden model does) when that set can be built here, otherwise random
integer inputs (:func:`codesign.bundle.random.random_integer_inputs`); ``source`` says which.
"""

from __future__ import annotations

import math

import numpy as np

from codesign.bundle.io import Bundle

__all__ = ["dense_macs", "load_inputs", "measure"]


def load_inputs(
    bundle: Bundle,
    *,
    sequences: int,
    steps: int | None,
    seed: int = 0,
    given: list[np.ndarray] | None = None,
) -> tuple[list[np.ndarray], str]:
    """``sequences`` integer input sequences (at most ``steps`` long) and a sentence saying where from.

    ``given``: the caller's own integer sequences, taken before the bundle's test set."""
    if given is not None:
        seqs = [np.asarray(s[:steps] if steps else s, dtype=np.int64) for s in list(given)[:sequences]]
        if not seqs:
            from codesign.errors import CodesignError

            raise CodesignError("inputs: no sequences given")
        return seqs, f"the caller's inputs: the first {len(seqs)} sequences, {len(seqs[0])} steps each"
    prov = bundle.manifest.provenance or {}
    task = prov.get("task") if isinstance(prov, dict) else None
    reason = "the bundle's provenance names no task and seed"
    if task and "seed" in prov:
        try:
            from codesign.golden.model import quantize_inputs
            from codesign.train.recipe import build_task

            options = {k: v for k, v in task.items() if k != "name"}
            x, _ = build_task(task["name"], options).split("test", int(prov["seed"]))
            q = quantize_inputs(bundle, x.numpy()[:sequences])
            seqs = [np.asarray(s[:steps] if steps else s, dtype=np.int64) for s in q]
            source = (
                f"the bundle's own test set (task '{task['name']}', seed {prov['seed']}): the first "
                f"{len(seqs)} sequences, {len(seqs[0])} steps each"
            )
            return seqs, source
        except Exception as err:  # noqa: BLE001 - any failure falls back to random inputs, said so
            reason = f"its test set could not be built here ({type(err).__name__}: {err})"
    from codesign.bundle.random import random_integer_inputs

    t = steps or 50
    seqs = random_integer_inputs(bundle, sequences=sequences, steps=t, seed=seed)
    return seqs, f"random integer inputs ({sequences} x {t} steps, density 0.4, seed {seed}): {reason}"


def measure(bundle: Bundle, sequences: list[np.ndarray], lanes: int) -> dict:
    """Cycles and counters of the accelerator at ``lanes`` on ``sequences``, per step and per engine.

    A *step* is an input frame; with ``input.stride`` S the layers run one *layer step* per S
    frames (``layer_steps``, ``cycles_per_layer_step``)."""
    from codesign.hw.pysim import simulate

    result = simulate(bundle, sequences, lanes=lanes)
    steps = sum(len(s) for s in sequences)
    stride = bundle.manifest.input.stride
    layer_steps = sum(-(-len(s) // stride) for s in sequences)
    c = result.counters
    busy = {k.removesuffix("_busy_cycles"): v / steps for k, v in c.items() if k.endswith("_busy_cycles")}
    layer_busy = [v for k, v in busy.items() if k.startswith("layer")]
    return {
        "lanes": lanes,
        "sequences": len(sequences),
        "steps": steps,
        "input_stride": stride,
        "layer_steps": layer_steps,
        "cycles": int(result.cycles),
        "cycles_per_step": result.cycles / steps,
        "cycles_per_layer_step": result.cycles / layer_steps,
        "busy_cycles_per_step": busy,
        "steady_cycles_per_step": max(layer_busy) if layer_busy else None,
        "counters": {k: int(v) for k, v in c.items()},
    }


def dense_macs(build: dict, steps: int, sequences: int) -> float:
    """MACs of dense (every input, every step) execution of ``sequences`` sequences of ``steps``
    layer steps in total."""
    total = 0.0
    for e in build["plan"]["engines"]:
        if e["kind"] == "readout":
            continue
        total += steps * e["size"] * e["inputs"] * len(e["matrices"])
    ro = build["readout"]
    d_last = build["layers"][-1]["size"]
    total += (steps if ro["per_step"] else sequences) * ro["classes"] * d_last
    return total


def sweep_lanes(widest: int) -> list[int]:
    """1, 2, 4, ... up to the widest layer, and the widest layer itself."""
    out = [2**k for k in range(int(math.log2(widest)) + 1)]
    return sorted(set(out) | {widest})
