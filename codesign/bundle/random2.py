"""Bundles with random legal weights for the whole cell family, drawn from a seed.

Each array mixes uniform values over its format with the format's extremes (most negative, most
positive, zero) so that saturation, sign(0) and the widest accumulators are exercised. Shifts are
drawn so that requantized values land in a useful range (neither always 0 nor always saturated).
"""

from __future__ import annotations

import numpy as np

from codesign.bundle.io2 import Bundle, save_bundle
from codesign.bundle.spec import FORMAT_VERSION, InputSpec, LayerSpec, Manifest, ReadoutSpec, array_table
from codesign.bundle.spec import accumulator_bits as acc_bits
from codesign.intmath import signed_range


def _draw(
    rng: np.random.Generator, shape: tuple[int, ...], bits: int, magnitude_bits: int | None = None
) -> np.ndarray:
    lo, hi = signed_range(min(bits, magnitude_bits or bits))
    values = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    extremes = np.array([*signed_range(bits), 0], dtype=np.int64)
    pick = rng.random(shape) < 0.05
    values[pick] = rng.choice(extremes, size=int(pick.sum()))
    return values


def random_manifest(
    *,
    inputs: int,
    layers: list[dict],
    classes: int,
    input_bits: int = 8,
    input_frac: int = 0,
    pooling: str = "last",
    per_step: bool = False,
    name: str | None = None,
    seed: int = 0,
) -> Manifest:
    """A manifest from plain layer dicts (``{"cell": "cmru", "size": 8, "eps": 1, ...}``)."""
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name or f"random_{'_'.join(layer['cell'] for layer in layers)}_s{seed}",
        input=InputSpec(size=inputs, bits=input_bits, frac=input_frac),
        layers=[LayerSpec.model_validate(layer) for layer in layers],
        readout=ReadoutSpec(classes=classes, pooling=pooling, per_step=per_step),
        provenance={"source": "random-bundle", "seed": seed},
    )


def random_weights(manifest: Manifest, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    for name, (shape, bits) in array_table(manifest).items():
        if name.startswith("layers."):
            index = int(name.split(".")[1])
            layer = manifest.layers[index]
            key = name.split(".")[2]
            if key == "dcls_delay":
                weights[name] = rng.integers(0, layer.dcls.span, size=shape, dtype=np.int64)
                continue
            if key.endswith("_shift"):
                # bring the accumulator down to about the state (or alpha, or gate) width
                target = {"alpha_shift": layer.alpha_bits, "gate_shift": layer.gate_bits + 1}.get(
                    key, layer.state_bits
                )
                # typical accumulators sit well below their worst case: aim a few bits lower
                base = max(0, acc_bits(manifest, index) - 1 - target - 5)
                weights[name] = np.clip(base + rng.integers(-3, 2, size=shape), -8, 63)
                continue
            if key == "theta":
                quarter = 1 << max(0, layer.state_bits - 5)
                weights[name] = rng.integers(-quarter, quarter + 1, size=shape, dtype=np.int64)
                continue
            if key == "alpha":  # small enough that a counter takes several steps to saturate
                weights[name] = _draw(rng, shape, bits, max(2, min(bits, layer.state_bits - 3)))
                continue
            mag = layer.weight_bits + 2 if key.startswith("b_") else None
            weights[name] = _draw(rng, shape, bits, mag)
        else:
            r = manifest.readout
            weights[name] = _draw(rng, shape, bits, r.weight_bits + 8 if name == "readout.bias" else None)
    return weights


def make_random_bundle(
    out: str, *, seed: int, inputs: int, layers: list[dict], classes: int, **options
) -> Bundle:
    manifest = random_manifest(inputs=inputs, layers=layers, classes=classes, seed=seed, **options)
    return save_bundle(out, manifest, random_weights(manifest, seed))


def random_integer_inputs(
    bundle: Bundle, *, sequences: int, steps: int | tuple[int, int], seed: int, density: float = 0.4
) -> list[np.ndarray]:
    """Random integer input sequences in the bundle's input format; most entries are zero.

    ``steps`` is a length or an inclusive ``(min, max)`` range. Zeros are frequent because the
    accelerator skips them (event-driven): both paths must be exercised.
    """
    rng = np.random.default_rng(seed)
    fmt = bundle.manifest.input
    lo, hi = signed_range(fmt.bits)
    out = []
    for _ in range(sequences):
        t = steps if isinstance(steps, int) else int(rng.integers(steps[0], steps[1] + 1))
        x = rng.integers(lo, hi + 1, size=(t, fmt.size), dtype=np.int64)
        x[rng.random((t, fmt.size)) >= density] = 0
        ext = rng.random((t, fmt.size)) < 0.02
        x[ext] = rng.choice(np.array([lo, hi]), size=int(ext.sum()))
        out.append(x)
    return out
