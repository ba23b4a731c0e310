"""Bundles with random legal weights, so hardware can be tested without training.

Weights are drawn from a seed. Each array mixes uniform values over its whole format with the
format's extremes (most negative, most positive, zero) so that saturation, sign(0) and the widest
accumulators are exercised, not just typical values.
"""

from __future__ import annotations

import numpy as np

from codesign.bundle.io import Bundle, expected_shape, save_bundle
from codesign.bundle.schema import FORMAT_VERSION, WEIGHT_ARRAYS, Formats, Manifest, NetworkSpec
from codesign.intmath import signed_range


def _draw(
    rng: np.random.Generator, shape: tuple[int, ...], bits: int, magnitude_bits: int | None = None
) -> np.ndarray:
    lo, hi = signed_range(bits)
    if magnitude_bits is not None and magnitude_bits < bits:
        lo, hi = signed_range(magnitude_bits)
    values = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    extremes = np.array([signed_range(bits)[0], signed_range(bits)[1], 0], dtype=np.int64)
    pick = rng.random(shape) < 0.05
    values[pick] = rng.choice(extremes, size=int(pick.sum()))
    return values


def random_manifest(
    *,
    d: int,
    inputs: int,
    classes: int,
    cell: str = "cmru",
    eps: int = 1,
    formats: Formats | None = None,
    name: str | None = None,
    seed: int = 0,
) -> Manifest:
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name or f"random_{cell}_d{d}_m{inputs}_c{classes}_s{seed}",
        network=NetworkSpec(input_size=inputs, hidden_size=d, num_classes=classes, cell=cell, eps=eps),
        formats=formats or Formats(),
        provenance={"source": "random-bundle", "seed": seed},
    )


def random_weights(manifest: Manifest, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = manifest.formats
    weights: dict[str, np.ndarray] = {}
    for name, (_, key) in WEIGHT_ARRAYS.items():
        bits = getattr(f, key).bits
        shape = expected_shape(manifest, name)
        # Biases drawn over their full width would swamp the products; keep them on the scale of
        # one weight x input product most of the time (extremes still appear).
        mag = f.weight.bits + f.input.bits - 1 if key == "bias" else None
        if key == "readout_bias":
            mag = f.readout_weight.bits + f.state.bits - 1
        weights[name] = _draw(rng, shape, bits, mag)
    if manifest.network.cell == "bmru" or manifest.network.eps == 0:
        pass  # any alpha is legal; the state is +-alpha after the first update
    return weights


def make_random_bundle(
    out: str,
    *,
    seed: int,
    d: int,
    inputs: int,
    classes: int,
    cell: str = "cmru",
    eps: int = 1,
    formats: Formats | None = None,
) -> Bundle:
    manifest = random_manifest(
        d=d, inputs=inputs, classes=classes, cell=cell, eps=eps, formats=formats, seed=seed
    )
    return save_bundle(out, manifest, random_weights(manifest, seed))


def random_integer_inputs(
    bundle: Bundle, *, sequences: int, steps: int | tuple[int, int], seed: int, density: float = 0.4
) -> list[np.ndarray]:
    """Random integer input sequences in the bundle's input format; most entries are zero.

    ``steps`` is a length or an inclusive ``(min, max)`` range. Zeros are frequent because the
    accelerator skips them (event-driven): both paths must be exercised.
    """
    rng = np.random.default_rng(seed)
    lo, hi = signed_range(bundle.manifest.formats.input.bits)
    m = bundle.net.input_size
    out = []
    for _ in range(sequences):
        t = steps if isinstance(steps, int) else int(rng.integers(steps[0], steps[1] + 1))
        x = rng.integers(lo, hi + 1, size=(t, m), dtype=np.int64)
        x[rng.random((t, m)) >= density] = 0
        ext = rng.random((t, m)) < 0.02
        x[ext] = rng.choice(np.array([lo, hi]), size=int(ext.sum()))
        out.append(x)
    return out
