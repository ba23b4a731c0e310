"""Pack a bundle's arrays into the accelerator's memory words (initial values or configuration beats).

Neuron ``g*P + l`` is lane ``l`` of group ``g``. One word holds what all ``P`` lanes of a group need
for one input, every matrix of the cell side by side, so one read feeds every lane:

==================== ====================== =================================================
memory               address                element ``l*n + k`` (lane ``l``, field ``k`` of ``n``)
==================== ====================== =================================================
``<e>_weights``      ``g*m + j``            ``W_k[g*P+l, j]`` (matrices in plan order; folded
                                            by ``--narrow``: :func:`_fold`)
``<e>_bias``         ``g``                  ``b_k[g*P+l]``
``<e>_params``       ``g``                  parameter ``k`` of neuron ``g*P+l``
``<e>_dcls_taps``    ``j`` (channel)        element ``2k``: tap weight, ``2k+1``: tap delay
``<e>_su_open``      ``t*G + g``            1 if neuron ``g*P+l`` updates at phase ``t``
``<e>_su_walk``      ``t*(G+1) + k``        ``k = 0``: groups walked at phase ``t``; then them
==================== ====================== =================================================

Lanes past ``d`` in the last group are zero and never written back. The same packing gives the
configuration stream's beats ``(target, addr, elem, value)``, so a build made with
``weights="runtime"`` can be loaded with any bundle of the same shape.
"""

from __future__ import annotations

import numpy as np

from codesign.bundle.io import Bundle
from codesign.hw.plan import AcceleratorPlan, EnginePlan

__all__ = ["config_beats", "memory_images"]

_MATRIX_ARRAYS = {"cand": "cand", "thr": "thr", "alpha": "alpha", "gate": "gate", "in": "in"}


def _engine_arrays(bundle: Bundle, e: EnginePlan) -> dict[str, np.ndarray]:
    """Arrays of one engine under plan names: ``w_<matrix>``, ``b_<matrix>``, params, dcls."""
    if e.kind == "readout":
        return {"w_logit": bundle.weights["readout.weight"], "b_logit": bundle.weights["readout.bias"]}
    return bundle.layer_weights(e.index)


def _lane_major(a: np.ndarray, groups: int, lanes: int) -> np.ndarray:
    """Rows padded to ``groups*lanes`` and split ``(groups, lanes, ...)``."""
    out = np.zeros((groups * lanes,) + a.shape[1:], dtype=np.int64)
    out[: a.shape[0]] = a
    return out.reshape((groups, lanes) + a.shape[1:])


def _fold(words: np.ndarray, e: EnginePlan, key: str) -> np.ndarray:
    """Words ``(rows, P, n)`` of memory ``key`` (weights, biases) as it holds them: one word of ``P x n`` elements per
    row, or, folded (``--narrow``, ``MemoryPlan.fold = F``), ``F`` words per row, word ``F r + q``
    holding the ``u`` matrices of pass ``q`` of every lane (element ``l u + j``: matrix
    ``q u + j`` of lane ``l``, zero past the last matrix)."""
    rows, p, n = words.shape
    folds = e.memories[key].fold if key in e.memories else 1
    if folds == 1:
        return words.reshape(rows, p * n)
    u = e.memories[key].elements // p
    padded = np.zeros((rows, p, folds * u), dtype=np.int64)
    padded[:, :, :n] = words
    return padded.reshape(rows, p, folds, u).transpose(0, 2, 1, 3).reshape(rows * folds, p * u)


def engine_images(bundle: Bundle, e: EnginePlan) -> dict[str, np.ndarray]:
    """``{memory key: array (depth, elements)}`` of one engine's loadable memories."""
    arrays = _engine_arrays(bundle, e)
    g, p, m = e.groups, e.lanes, e.inputs
    images: dict[str, np.ndarray] = {}
    w = np.stack([_lane_major(arrays[f"w_{k}"], g, p) for k in e.matrices], axis=-1)  # (g, p, m, n)
    images["weights"] = _fold(w.transpose(0, 2, 1, 3).reshape(g * m, p, len(e.matrices)), e, "weights")
    b = np.stack([_lane_major(arrays[f"b_{k}"], g, p) for k in e.matrices], axis=-1)  # (g, p, n)
    images["bias"] = _fold(b, e, "bias")
    if e.params:
        prm = np.stack([_lane_major(arrays[k], g, p) for k in e.params], axis=-1)
        images["params"] = prm.reshape(g, p * len(e.params))
    if e.dcls is not None:
        taps = np.stack([arrays["dcls_weight"], arrays["dcls_delay"]], axis=-1)  # (m, K, 2)
        images["dcls_taps"] = taps.reshape(e.dcls.channels, 2 * e.dcls.taps)
    if e.period:
        from codesign.hw.selective import selective_images

        images |= selective_images(arrays["su_gate"], e)
    return images


def memory_images(bundle: Bundle, plan: AcceleratorPlan) -> dict[str, list[list[int]]]:
    """Initial contents of every loadable memory by memory name, as lists of words of ints."""
    out: dict[str, list[list[int]]] = {}
    for e in plan.engines:
        for key, image in engine_images(bundle, e).items():
            out[e.memories[key].name] = image.tolist()
    return out


def config_beats(
    bundle: Bundle, plan: AcceleratorPlan, *, skip_zeros: bool = False
) -> list[tuple[int, int, int, int]]:
    """Configuration beats ``(target, addr, elem, value)`` that load every parameter of ``bundle``.

    With ``skip_zeros`` the beats of zero elements are left out (valid only after the memories
    were cleared, e.g. on a fresh ``weights="runtime"`` build).
    """
    beats = []
    for e in plan.engines:
        for key, image in engine_images(bundle, e).items():
            mem = e.memories[key]
            if mem.config_id is None:  # a frozen build's ROM: nothing to load
                continue
            for addr, word in enumerate(image.tolist()):
                for elem, value in enumerate(word):
                    if skip_zeros and value == 0:
                        continue
                    beats.append((mem.config_id, addr, elem, int(value)))
    return beats
