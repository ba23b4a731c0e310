"""A trained one-layer bundle as the analog path runs it: the layer view (one layer, last-step
readout), its task's quantized test set, and the digital readout applied to analog states.

Shared by :mod:`~codesign.analog.evaluate`, :mod:`~codesign.analog.ladder_model`,
:mod:`~codesign.analog.mismatch`, :mod:`~codesign.analog.synapse` and
:mod:`~codesign.analog.synapse_sim`; it imports none of them.
"""

from __future__ import annotations

import numpy as np

from codesign.bundle import Bundle
from codesign.bundle.cells import CELLS
from codesign.errors import CodesignError
from codesign.intmath import signed_range

__all__ = ["analog_readout", "layer_view", "test_set"]


def layer_view(bundle: Bundle) -> Bundle:
    """The bundle as the analog layer sees it: its one layer with a last-step readout (the real
    readout, pooled or not, is applied digitally by :func:`analog_readout`)."""
    man = bundle.manifest
    if len(man.layers) != 1:
        raise CodesignError(f"analog-eval runs one-layer bundles; {man.name!r} has {len(man.layers)} layers")
    layer = man.layers[0]
    if CELLS[layer.cell].rule != "cmru" or layer.eps not in (0, 1) or layer.dcls is not None:
        raise CodesignError(
            f"analog-eval runs BMRU layers (cell bmru, or cmru with eps 0) and native CMRU ladders "
            f"(cmru with eps 1), no DCLS front end; "
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
