"""Lay a bundle's weights out in lane-packed memory words.

The accelerator serves ``d`` neurons (or ``C`` classes in the readout) with ``P`` lanes: neuron
``g*P + l`` is lane ``l`` of group ``g``. One memory word holds what all ``P`` lanes of a group need
for one input, so a single read feeds every lane. Lanes past ``d`` (or ``C``) in the last group
are padded with zeros; they are never written back.

================== ============================ ===========================================
memory             address                      word (lane ``l``)
================== ============================ ===========================================
``gate_weights``   ``g*M + j``                  ``cand = Wc[g*P+l, j]``, ``thr = Wb[g*P+l, j]``
``neuron_params``  ``g``                        ``cand_bias``, ``thr_bias``, ``alpha``
``readout_weights``  ``k*d + i``  (class group k)  ``Wo[k*P+l, i]``
``readout_bias``   ``k``                        ``bo[k*P+l]``
================== ============================ ===========================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.bundle import Bundle

__all__ = ["MemoryImages", "ceil_div", "memory_images"]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class MemoryImages:
    """Initial contents of the four weight memories, as nested lists of Python ints."""

    gate_weights: list[list[dict[str, int]]]
    neuron_params: list[list[dict[str, int]]]
    readout_weights: list[list[int]]
    readout_bias: list[list[int]]


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows,) + a.shape[1:], dtype=np.int64)
    out[: a.shape[0]] = a
    return out


def memory_images(bundle: Bundle, lanes: int) -> MemoryImages:
    """Pack the bundle's arrays for ``lanes`` lanes (see the module docstring for the layout)."""
    w = bundle.weights
    d, m, c = bundle.net.hidden_size, bundle.net.input_size, bundle.net.num_classes
    groups, class_groups = ceil_div(d, lanes), ceil_div(c, lanes)
    wc = _pad_rows(w["w_cand"], groups * lanes).reshape(groups, lanes, m)
    wb = _pad_rows(w["w_thr"], groups * lanes).reshape(groups, lanes, m)
    bc = _pad_rows(w["b_cand"], groups * lanes).reshape(groups, lanes)
    bb = _pad_rows(w["b_thr"], groups * lanes).reshape(groups, lanes)
    alpha = _pad_rows(w["alpha"], groups * lanes).reshape(groups, lanes)
    wo = _pad_rows(w["w_out"], class_groups * lanes).reshape(class_groups, lanes, d)
    bo = _pad_rows(w["b_out"], class_groups * lanes).reshape(class_groups, lanes)
    gate_weights = [
        [{"cand": int(wc[g, lane, j]), "thr": int(wb[g, lane, j])} for lane in range(lanes)]
        for g in range(groups)
        for j in range(m)
    ]
    neuron_params = [
        [
            {"cand_bias": int(bc[g, lane]), "thr_bias": int(bb[g, lane]), "alpha": int(alpha[g, lane])}
            for lane in range(lanes)
        ]
        for g in range(groups)
    ]
    readout_weights = [
        [int(wo[k, lane, i]) for lane in range(lanes)] for k in range(class_groups) for i in range(d)
    ]
    readout_bias = [[int(bo[k, lane]) for lane in range(lanes)] for k in range(class_groups)]
    return MemoryImages(gate_weights, neuron_params, readout_weights, readout_bias)
