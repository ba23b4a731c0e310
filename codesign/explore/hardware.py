"""Hardware figures of a bundle at P lanes: counts, an estimated cycle floor and proxies.

One function, :func:`hardware_figures` (bundle directory + lanes -> dict of figures), is all the
exploration calls, so figures measured on the RTL or in the report (area, energy, cycles) can
replace these estimates later without touching the rest. Until then every figure here is either
**counted** by the golden model or an **estimate / proxy**, and its key says which:

* ``weight_memory_bits``: bits of every array of the bundle at its declared width
  (:func:`codesign.bundle.inspect.memory_bits`, what ``codesign inspect`` totals);
  ``memory_bits`` adds the state registers (``d * state_bits`` per layer). **Area proxy**.
* ``macs_per_inference``, ``events_per_inference``, ``steps_per_inference``: counted by the golden
  model on the bundle's test set (``GoldenResult.layers[l].macs / .events``, ``readout_macs``),
  averaged over sequences (padded to the set's longest, as the golden model runs them).
* ``cycles_per_step_est``: the event-driven floor ``sum_l ceil(d_l / P) * max(work_l, 1)`` with
  ``work_0`` = non-zero inputs of the step and ``work_l`` = events of layer ``l - 1`` (a lane group
  with no work still issues one slot, ``codesign/hw/accelerator.py``); pipeline fill, drain and
  the readout are not in it. ``cycles_per_inference_est`` adds the readout,
  ``ceil(C / P) * max(non-zero pooled states, 1)``. **Estimates**, not simulated cycles.
* ``energy_pj_proxy``: operation counts times a per-operation energy table (Horowitz, ISSCC 2014,
  45 nm: 8-bit add 0.03 pJ, 32-bit add 0.1 pJ, 8-bit multiply 0.2 pJ, 32-bit multiply 3.1 pJ,
  64-bit read of an 8 KB SRAM about 10 pJ), interpolated in operand width: adders linearly in
  bits, multipliers linearly in the product of the operand widths, SRAM reads per bit. Each MAC
  costs a multiply (weight x input or event delta), an accumulator add and a weight read; each
  neuron and step a gate comparison; each event a state add and write; the readout likewise.
  Leakage, control, clocking, DCLS front-end taps and data movement off the array are not in
  it. **Proxy**.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from codesign.bundle.inspect import memory_bits
from codesign.bundle.io import Bundle, load_bundle
from codesign.bundle.spec import accumulator_bits, front_end_bits, logit_bits, readout_input_bits
from codesign.energy import energy_add, energy_mult, energy_read
from codesign.errors import CodesignError
from codesign.golden.model import MATRICES, GoldenResult, quantize_inputs, run_golden

__all__ = ["FIGURES", "hardware_figures"]

FIGURES = {
    "memory_bits": "area proxy: weight arrays + state registers (bits)",
    "weight_memory_bits": "bits of the bundle's arrays at their widths",
    "macs_per_inference": "counted (golden model), mean over the test set",
    "events_per_inference": "counted (golden model), mean over the test set",
    "steps_per_inference": "sequence length the golden model ran",
    "cycles_per_step_est": "estimate: sum_l ceil(d_l/P) * max(work_l, 1), mean over steps",
    "cycles_per_inference_est": "estimate: the steps' cycles + readout ceil(C/P) * non-zero states",
    "energy_pj_proxy": "proxy: counts x Horowitz 45 nm energy per operation (pJ per inference)",
}
"""Every key :func:`hardware_figures` returns, with what it is (estimate, proxy or count)."""


@functools.lru_cache(maxsize=8)
def _golden_counts(bundle_dir: str, mtime_ns: int) -> tuple[Bundle, GoldenResult]:
    bundle = load_bundle(bundle_dir)
    prov = bundle.manifest.provenance
    if "task" not in prov or "seed" not in prov:
        raise CodesignError(
            "bundle provenance names no task and seed (export it with codesign export)", path=bundle_dir
        )
    from codesign.train.recipe import build_task

    options = {k: v for k, v in prov["task"].items() if k != "name"}
    x, _ = build_task(prov["task"]["name"], options).split("test", int(prov["seed"]))
    return bundle, run_golden(bundle, quantize_inputs(bundle, x.numpy()))


def hardware_figures(bundle_dir: str | Path, lanes: int) -> dict[str, float]:
    """Counts, estimates and proxies of a bundle on ``lanes`` lanes (keys: :data:`FIGURES`).

    The golden model runs the test set of the task recorded in the bundle's provenance.
    """
    if lanes < 1:
        raise CodesignError(f"lanes must be >= 1, got {lanes}")
    bundle_dir = Path(bundle_dir).resolve()
    bundle, golden = _golden_counts(str(bundle_dir), (bundle_dir / "weights.npz").stat().st_mtime_ns)
    m = bundle.manifest
    n, steps = golden.layers[0].events.shape
    cycles = np.zeros((n, steps))
    energy = 0.0
    state_bits = 0
    for i, (layer, trace) in enumerate(zip(m.layers, golden.layers, strict=True)):
        d = layer.size
        work = trace.macs // (d * MATRICES[layer.cell])  # non-zero inputs (layer 0) or events below
        cycles += math.ceil(d / lanes) * np.maximum(work, 1)
        acc = accumulator_bits(m, i)
        macs = trace.macs.sum() / n
        energy += macs * (energy_mult(layer.weight_bits, front_end_bits(m, i)) + energy_add(acc))
        energy += macs * energy_read(layer.weight_bits)
        energy += steps * d * energy_add(acc)  # gate comparison (or its cell's finalize) per neuron
        events = trace.events.sum() / n
        energy += events * (energy_add(layer.state_bits) + energy_read(layer.state_bits))
        state_bits += d * layer.state_bits
    r = m.readout
    readout_macs = golden.readout_macs.sum() / n
    energy += readout_macs * (
        energy_mult(r.weight_bits, readout_input_bits(m))
        + energy_add(logit_bits(m))
        + energy_read(r.weight_bits)
    )
    if not r.per_step and r.pooling == "sum":
        energy += steps * m.layers[-1].size * energy_add(r.sum_bits)
    nonzero = golden.readout_macs.reshape(n, -1) // r.classes
    readout_cycles = (math.ceil(r.classes / lanes) * np.maximum(nonzero, 1)).sum(axis=1)
    weights = sum(memory_bits(bundle).values())
    return {
        "memory_bits": int(weights + state_bits),
        "weight_memory_bits": int(weights),
        "macs_per_inference": float(sum(t.macs.sum() for t in golden.layers) / n + readout_macs),
        "events_per_inference": float(sum(t.events.sum() for t in golden.layers) / n),
        "steps_per_inference": int(steps),
        "cycles_per_step_est": float(cycles.mean()),
        "cycles_per_inference_est": float((cycles.sum(axis=1) + readout_cycles).mean()),
        "energy_pj_proxy": float(energy),
    }
