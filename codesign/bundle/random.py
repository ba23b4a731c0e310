"""Bundles with random legal weights for the whole cell family, drawn from a seed.

Each array mixes uniform values over its format with the format's extremes (most negative, most
positive, zero) so that saturation, sign(0) and the widest accumulators are exercised. Shifts are
drawn so that requantized values land in a useful range (neither always 0 nor always saturated).
"""

from __future__ import annotations

import numpy as np

from codesign.bundle import v1
from codesign.bundle.cells import CELL_NAMES, CELLS
from codesign.bundle.io import Bundle, save_bundle
from codesign.bundle.spec import (
    FORMAT_VERSION,
    InputSpec,
    LayerSpec,
    Manifest,
    ReadoutSpec,
    array_table,
    shift_bounds,
)
from codesign.bundle.spec import accumulator_bits as acc_bits
from codesign.bundle.spine import SpineBundle, as_bundle, from_spine
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


def random_network_manifest(
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
    input_stride: int = 1,
) -> Manifest:
    """A manifest from plain layer dicts (``{"cell": "cmru", "size": 8, "eps": 1, ...}``)."""
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name or f"random_{'_'.join(layer['cell'] for layer in layers)}_s{seed}",
        input=InputSpec(size=inputs, bits=input_bits, frac=input_frac, stride=input_stride),
        layers=[LayerSpec.model_validate(layer) for layer in layers],
        readout=ReadoutSpec(classes=classes, pooling=pooling, per_step=per_step),
        provenance={"source": "random-bundle", "seed": seed},
    )


def rhythmic_table(
    rng: np.random.Generator,
    period: int,
    size: int,
    rate: float,
    *,
    shuffled: bool = False,
    block: int = 1,
) -> np.ndarray:
    """A selective-update table ``(period, size)`` whose open fraction is close to ``rate``.

    Each neuron is open on a window of ``round(rate x period)`` consecutive steps (at least one)
    starting at its phase; phases ascend with the neuron index, so at every step the open neurons
    are one cyclic run of indices and share as few lane groups as possible (what the export's
    reordering gives). ``shuffled`` draws each gate independently instead (the worst packing).
    ``block``: neurons ``block x j ..`` share a phase (a schedule trained with ``selective.share``).
    """
    if shuffled:
        return (rng.random((period, size)) < rate).astype(np.int64)
    width = max(1, min(period, round(rate * period)))
    phases = np.repeat(np.sort(rng.integers(0, period, size=-(-size // block))), block)[:size]
    t = np.arange(period)[:, None]
    return (((t - phases[None, :]) % period) < width).astype(np.int64)


def random_network_weights(
    manifest: Manifest, seed: int, *, update_rate: float | None = None
) -> dict[str, np.ndarray]:
    """Random legal arrays for ``manifest``; ``update_rate`` sets the open fraction of selective
    layers' schedules (default: drawn per layer, windows or independent bits)."""
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
            if key == "su_gate":
                if update_rate is None:
                    rate = float(rng.choice([0.0, 0.1, 0.3, 0.6, 1.0]))
                    weights[name] = rhythmic_table(rng, *shape, rate, shuffled=bool(rng.random() < 0.5))
                else:
                    weights[name] = rhythmic_table(rng, *shape, update_rate)
                continue
            if key.endswith("_shift"):
                # bring the accumulator down to about the state (or alpha, or gate) width
                target = {"alpha_shift": layer.alpha_bits, "gate_shift": layer.gate_bits + 1}.get(
                    key, layer.state_bits
                )
                # typical accumulators sit well below their worst case: aim a few bits lower
                base = max(0, acc_bits(manifest, index) - 1 - target - 5)
                lo, hi = shift_bounds(acc_bits(manifest, index))
                weights[name] = np.clip(base + rng.integers(-3, 2, size=shape), max(lo, -8), hi)
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


def make_random_network_bundle(
    out: str,
    *,
    seed: int,
    inputs: int,
    layers: list[dict],
    classes: int,
    update_rate: float | None = None,
    **options,
) -> Bundle:
    manifest = random_network_manifest(inputs=inputs, layers=layers, classes=classes, seed=seed, **options)
    return save_bundle(out, manifest, random_network_weights(manifest, seed, update_rate=update_rate))


# ---------------------------------------------------------------- single-layer (spine-shaped) bundles


def random_manifest(
    *,
    d: int,
    inputs: int,
    classes: int,
    cell: str = "cmru",
    eps: int = 1,
    formats: v1.Formats | None = None,
    name: str | None = None,
    seed: int = 0,
) -> v1.Manifest:
    """A one-layer CMRU/BMRU manifest in the spine's shape (flat formats), as the RTL sees it."""
    return v1.Manifest(
        format_version=v1.FORMAT_VERSION,
        name=name or f"random_{cell}_d{d}_m{inputs}_c{classes}_s{seed}",
        network=v1.NetworkSpec(input_size=inputs, hidden_size=d, num_classes=classes, cell=cell, eps=eps),
        formats=formats or v1.Formats(),
        provenance={"source": "random-bundle", "seed": seed},
    )


def random_weights(manifest: v1.Manifest, seed: int) -> dict[str, np.ndarray]:
    """Spine-named arrays (``w_cand`` ... ``b_out``) for :func:`random_manifest`."""
    rng = np.random.default_rng(seed)
    f, net = manifest.formats, manifest.network
    dims = {"d": net.hidden_size, "M": net.input_size, "C": net.num_classes}
    weights: dict[str, np.ndarray] = {}
    for name, (shape_expr, key) in v1.WEIGHT_ARRAYS.items():
        shape = tuple(dims[k] for k in shape_expr.split(","))
        # biases over their full width would swamp the products: keep them near one product's scale
        mag = f.weight.bits + f.input.bits - 1 if key == "bias" else None
        if key == "readout_bias":
            mag = f.readout_weight.bits + f.state.bits - 1
        weights[name] = _draw(rng, shape, getattr(f, key).bits, mag)
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
    formats: v1.Formats | None = None,
) -> Bundle:
    """A random one-layer CMRU/BMRU bundle (what the RTL regression draws), saved in format 2."""
    manifest = random_manifest(
        d=d, inputs=inputs, classes=classes, cell=cell, eps=eps, formats=formats, seed=seed
    )
    bundle = from_spine(manifest, random_weights(manifest, seed))
    return save_bundle(out, bundle.manifest, bundle.weights)


def random_integer_inputs(
    bundle: Bundle | SpineBundle,
    *,
    sequences: int,
    steps: int | tuple[int, int],
    seed: int,
    density: float = 0.4,
) -> list[np.ndarray]:
    """Random integer input sequences in the bundle's input format; most entries are zero.

    ``steps`` is a length or an inclusive ``(min, max)`` range. Zeros are frequent because the
    accelerator skips them (event-driven): both paths must be exercised.
    """
    rng = np.random.default_rng(seed)
    fmt = as_bundle(bundle).manifest.input
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


FAMILY_CELLS = CELL_NAMES


def random_family_bundle(
    seed: int,
    *,
    max_layers: int = 3,
    max_size: int = 8,
    max_inputs: int = 6,
    max_classes: int = 5,
    selective: bool = False,
    stride: bool = False,
) -> Bundle:
    """A random member of the whole hardware family (in memory): 1-``max_layers`` layers of any
    cell, eps, widths, DCLS front ends (about one layer in three), last/sum/per-step readouts.

    Widths are drawn small so that saturation, sign(0) and ties happen in short sequences.
    ``selective`` gives layers (each with probability 0.7, at least one) a selective-update
    schedule of period 1 to 16, drawn from a second generator so that the rest of the bundle is
    the one the same seed gives without it. ``stride`` gives the input a stride of 2 to 8 (from
    a third generator) and a once-per-sequence readout (a per-step one takes no stride).
    """
    from codesign.bundle.io import check_weights

    rng = np.random.default_rng(seed)
    layers = []
    for _ in range(int(rng.integers(1, max_layers + 1))):
        cell = str(rng.choice(FAMILY_CELLS))
        layer = {
            "cell": cell,
            "size": int(rng.integers(1, max_size + 1)),
            "weight_bits": int(rng.integers(2, 9)),
            "state_bits": int(rng.integers(3, 17)),
            "bias_bits": int(rng.integers(4, 17)),
            "alpha_bits": int(rng.integers(2, 9)),
            "gate_bits": int(rng.integers(1, 7)),
            "leak_shift": int(rng.integers(1, 5)),
        }
        if CELLS[cell].has_eps:
            layer["eps"] = int(rng.choice(list(CELLS[cell].eps)))
        if rng.random() < 0.35:
            layer["dcls"] = {
                "taps": int(rng.integers(1, 4)),
                "span": int(rng.integers(1, 7)),
                "weight_bits": int(rng.integers(2, 9)),
            }
        layers.append(layer)
    if selective:
        su_rng = np.random.default_rng([seed, 20])
        chosen = su_rng.random(len(layers)) < 0.7
        chosen[int(su_rng.integers(len(layers)))] = True
        for layer, on in zip(layers, chosen, strict=True):
            if on:
                layer["selective"] = {"period": int(2 ** su_rng.integers(0, 5))}
    per_step = bool(rng.random() < 0.25)
    pooling = "last" if per_step else str(rng.choice(["last", "sum"]))
    input_stride = int(2 ** np.random.default_rng([seed, 30]).integers(1, 4)) if stride else 1
    per_step = per_step and input_stride == 1
    manifest = random_network_manifest(
        inputs=int(rng.integers(1, max_inputs + 1)),
        layers=layers,
        classes=int(rng.integers(1, max_classes + 1)),
        input_bits=int(rng.integers(2, 9)),
        pooling=pooling,
        per_step=per_step,
        seed=seed,
        input_stride=input_stride,
    )
    return Bundle(manifest, check_weights(manifest, random_network_weights(manifest, seed)))
