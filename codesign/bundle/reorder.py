"""Reorder the neurons of selective-update layers so that open neurons share lane groups.

The accelerator skips a group of ``P`` lanes only when all its neurons are closed
(``codesign/hw/selective.py``), so the order of the neurons decides how many groups a step
walks. A permutation of a layer's neurons changes nothing the network computes: the layer's rows
(weights, biases, per-neuron parameters, schedule columns) and the next layer's columns (or the
readout's) move together, and the logits are the same integers.

:func:`schedule_order` sorts neurons by the circular mean of the steps at which they are open
(the phase of their rhythm), then by their pattern, so neurons that open together sit side by
side; for windowed schedules every step's open neurons become one run of indices.
"""

from __future__ import annotations

import numpy as np

from codesign.bundle.cells import CELLS
from codesign.bundle.io import Bundle, check_weights

__all__ = ["permute_layer", "reorder_selective", "schedule_order"]


def schedule_order(table: np.ndarray) -> np.ndarray:
    """A permutation of the neurons (columns of ``table``, ``(period, d)``) grouping co-open ones."""
    period, d = table.shape
    angle = np.exp(2j * np.pi * np.arange(period) / period)
    phase = np.angle((np.asarray(table) != 0).T @ angle)  # (d,) circular mean of open steps
    rate = (np.asarray(table) != 0).mean(axis=0)
    patterns = [tuple(col) for col in (np.asarray(table) != 0).T.astype(int)]
    return np.array(sorted(range(d), key=lambda i: (round(float(phase[i]), 9), -rate[i], patterns[i])))


def permute_layer(bundle: Bundle, index: int, order: np.ndarray) -> Bundle:
    """The same network with layer ``index``'s neuron ``k`` moved to position ``order.argsort()[k]``
    (new neuron ``j`` is old neuron ``order[j]``)."""
    m = bundle.manifest
    layer = m.layers[index]
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(layer.size)):
        raise ValueError(f"order must be a permutation of 0..{layer.size - 1}")
    w = dict(bundle.weights)
    p = f"layers.{index}."
    kind = CELLS[layer.cell]
    for name in kind.matrices:
        w[p + f"w_{name}"] = w[p + f"w_{name}"][order]
        w[p + f"b_{name}"] = w[p + f"b_{name}"][order]
    for name in kind.params:
        w[p + name] = w[p + name][order]
    if layer.selective is not None:
        w[p + "su_gate"] = w[p + "su_gate"][:, order]
    if index + 1 < len(m.layers):
        nxt, q = m.layers[index + 1], f"layers.{index + 1}."
        for name in CELLS[nxt.cell].matrices:
            w[q + f"w_{name}"] = w[q + f"w_{name}"][:, order]
        if nxt.dcls is not None:
            w[q + "dcls_weight"] = w[q + "dcls_weight"][order]
            w[q + "dcls_delay"] = w[q + "dcls_delay"][order]
    else:
        w["readout.weight"] = w["readout.weight"][:, order]
    return Bundle(m, check_weights(m, w), bundle.path)


def reorder_selective(bundle: Bundle) -> tuple[Bundle, dict[int, list[int]]]:
    """Every selective layer in :func:`schedule_order`; returns the bundle and the orders used."""
    orders: dict[int, list[int]] = {}
    for index, layer in enumerate(bundle.manifest.layers):
        if layer.selective is None:
            continue
        order = schedule_order(bundle.weights[f"layers.{index}.su_gate"])
        if not np.array_equal(order, np.arange(layer.size)):
            bundle = permute_layer(bundle, index, order)
            orders[index] = order.tolist()
    return bundle, orders
