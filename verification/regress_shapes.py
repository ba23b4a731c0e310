"""The shapes of the regression's random designs: layer stacks, widths, lanes, readouts, and the
bundles drawn from a shape.

A *shape* is a dict of :func:`make_shape_bundle`'s arguments (inputs, layers with their cells and
widths, classes, readout, lanes); every bundle of a shape shares its RTL build (the weights are
loaded through ``config``). :data:`QUICK_SHAPES` are the quick tier's fixed shapes,
:data:`SHARED_SHAPE` the shared-multiplier designs'.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codesign.bundle.cells import CELL_NAMES
from codesign.bundle.cells import CELLS as CELL_KINDS
from codesign.bundle.io import save_bundle
from codesign.bundle.random import random_network_manifest, random_network_weights
from codesign.bundle.spec import Manifest
from codesign.errors import CodesignError

__all__ = [
    "CELLS",
    "QUICK_SHAPES",
    "SHARED_SHAPE",
    "describe",
    "make_shape_bundle",
    "manifest_for",
    "random_shape",
    "selective_shape",
]

CELLS = CELL_NAMES


def random_layer(rng: np.random.Generator, cell: str, index: int) -> dict:
    layer: dict = {
        "cell": cell,
        "size": int(rng.integers(1, 9)),
        "weight_bits": int(rng.integers(2, 9)),
        "bias_bits": int(rng.integers(4, 17)),
        "state_bits": int(rng.integers(3, 11)),
    }
    if CELL_KINDS[cell].has_eps:
        layer["eps"] = int(rng.choice(list(CELL_KINDS[cell].eps)))
    if cell in ("cmru", "bmru"):
        layer["alpha_bits"] = int(rng.integers(2, 9))
    if cell == "alphacmru":
        layer["alpha_bits"] = int(rng.integers(2, 7))
    if cell == "mingru":
        layer["gate_bits"] = int(rng.integers(1, 7))
    if cell == "hsru":
        layer["leak_shift"] = int(rng.integers(1, 5))
    if rng.random() < 0.35:
        layer["dcls"] = {
            "taps": int(rng.integers(1, 4)),
            "span": int(rng.integers(1, 9)),
            "weight_bits": int(rng.integers(2, 7)),
        }
    return layer


def random_shape(seed: int, index: int) -> dict:
    """Keyword arguments of :func:`make_shape_bundle` for shape ``index`` (layer 0's cell cycles)."""
    rng = np.random.default_rng([seed, index])
    for _ in range(100):
        n_layers = int(rng.choice([1, 2, 3], p=[0.4, 0.4, 0.2]))
        cells = [CELLS[index % len(CELLS)]] + [str(rng.choice(CELLS)) for _ in range(n_layers - 1)]
        layers = [random_layer(rng, c, i) for i, c in enumerate(cells)]
        per_step = bool(rng.random() < 0.3)
        shape = {
            "inputs": int(rng.integers(1, 7)),
            "layers": layers,
            "classes": int(rng.integers(1, 7)),
            "input_bits": int(rng.integers(2, 9)),
            "pooling": "last" if per_step else str(rng.choice(["last", "sum"])),
            "per_step": per_step,
            "sum_bits": int(rng.integers(4, 13)),
        }
        widest = max(layer["size"] for layer in layers)
        shape["lanes"] = int(rng.integers(1, widest + 1))
        # an input stride on about a third of the once-per-sequence shapes, from its own generator
        # (the shapes' other draws stay those of the same seed without it)
        stride_rng = np.random.default_rng([seed, index, 30])
        if not per_step and stride_rng.random() < 0.35:
            shape["input_stride"] = int(2 ** stride_rng.integers(1, 4))
        try:
            manifest_for(shape, "probe", 0)
        except (ValueError, CodesignError):
            continue
        return shape
    raise RuntimeError(f"no legal shape drawn for index {index}")


def selective_shape(seed: int, index: int) -> dict:
    """A random shape (layer 0's cell cycles backwards) whose layers have selective update (each
    with probability 0.7, at least one; periods 1 to 16). Bundles of the shape draw their
    schedules (windows or independent bits at rates 0 to 1: ``codesign.bundle.random``)."""
    shape = random_shape(seed + 7919, len(CELLS) - 1 - index % len(CELLS))
    rng = np.random.default_rng([seed, index, 20])
    layers = [dict(layer) for layer in shape["layers"]]
    chosen = rng.random(len(layers)) < 0.7
    chosen[int(rng.integers(len(layers)))] = True
    for layer, on in zip(layers, chosen, strict=True):
        if on:
            layer["selective"] = {"period": int(2 ** rng.integers(0, 5))}
    return shape | {"layers": layers}


def manifest_for(shape: dict, name: str, seed: int):
    man = random_network_manifest(
        inputs=shape["inputs"],
        layers=shape["layers"],
        classes=shape["classes"],
        input_bits=shape["input_bits"],
        pooling=shape["pooling"],
        per_step=shape["per_step"],
        name=name,
        seed=seed,
        input_stride=shape.get("input_stride", 1),
    )
    if shape["pooling"] != "sum":
        return man
    data = man.model_dump(mode="json")
    data["readout"]["sum_bits"] = shape["sum_bits"]
    return Manifest.model_validate(data)


def make_shape_bundle(shape: dict, out: Path, name: str, seed: int) -> Path:
    man = manifest_for(shape, name, seed)
    save_bundle(out, man, random_network_weights(man, seed))
    return out


def describe(shape: dict) -> str:
    parts = []
    for layer in shape["layers"]:
        s = f"{layer['cell']}{layer['size']}"
        if "eps" in layer:
            s += f"e{layer['eps']}"
        if "dcls" in layer:
            s += f"+dcls{layer['dcls']['taps']}x{layer['dcls']['span']}"
        if layer.get("selective"):
            s += f"+su{layer['selective']['period']}"
        parts.append(s)
    ro = "per_step" if shape["per_step"] else shape["pooling"]
    stride = f"/S{shape['input_stride']}" if shape.get("input_stride", 1) > 1 else ""
    return f"M{shape['inputs']}{stride} {'-'.join(parts)} C{shape['classes']} {ro} P{shape['lanes']}"


SHARED_SHAPE = {
    "inputs": 5,
    "layers": [
        {"cell": "mingru", "size": 6, "state_bits": 6, "gate_bits": 3, "dcls": {"taps": 2, "span": 3}},
        {
            "cell": "alphacmru",
            "size": 5,
            "eps": 1,
            "state_bits": 5,
            "alpha_bits": 4,
            "dcls": {"taps": 2, "span": 2},
        },
    ],
    "classes": 3,
    "input_bits": 4,
    "pooling": "last",
    "per_step": False,
    "sum_bits": 8,
    "lanes": 2,
}
"""The shared-multiplier design (``--filter shared``): one multiplier per lane over minGRU's two
matrices and alphaCMRU's three (2 and 3 cycles per slot), both behind DCLS front ends."""


QUICK_SHAPES = [
    {
        "inputs": 4,
        "layers": [
            {
                "cell": "cmru",
                "size": 6,
                "eps": 1,
                "state_bits": 4,
                "alpha_bits": 4,
                "dcls": {"taps": 2, "span": 4},
            },
            {"cell": "bmru", "size": 5, "state_bits": 3},
        ],
        "classes": 3,
        "input_bits": 4,
        "pooling": "sum",
        "per_step": False,
        "sum_bits": 5,
        "lanes": 2,
        "input_stride": 2,
    },
    {
        "inputs": 3,
        "layers": [
            {"cell": "mingru", "size": 4, "state_bits": 6, "gate_bits": 3},
            {"cell": "hsru", "size": 5, "state_bits": 6, "leak_shift": 1},
        ],
        "classes": 4,
        "input_bits": 4,
        "pooling": "last",
        "per_step": True,
        "sum_bits": 8,
        "lanes": 3,
    },
    {
        "inputs": 5,
        "layers": [
            {"cell": "alphacmru", "size": 7, "eps": -1, "state_bits": 5, "alpha_bits": 4},
            {"cell": "bgmingru", "size": 3, "state_bits": 5, "dcls": {"taps": 1, "span": 3}},
            {"cell": "cmru", "size": 2, "eps": 0, "state_bits": 4},
        ],
        "classes": 2,
        "input_bits": 3,
        "pooling": "last",
        "per_step": False,
        "sum_bits": 8,
        "lanes": 4,
    },
    {
        "inputs": 4,
        "layers": [
            {"cell": "hsru", "size": 7, "state_bits": 6, "leak_shift": 2, "selective": {"period": 4}},
            {"cell": "mingru", "size": 5, "state_bits": 6, "gate_bits": 2, "selective": {"period": 2}},
        ],
        "classes": 3,
        "input_bits": 4,
        "pooling": "last",
        "per_step": True,
        "sum_bits": 8,
        "lanes": 2,
    },
]
"""The quick tier (``make test``): four shapes that together hold every cell kind, DCLS on a
first and a later layer, an input stride in front of a DCLS layer, sum pooling that saturates, per-step logits, partial lane groups, and
selective update on a first (scratch) and a later (event-driven) layer."""
