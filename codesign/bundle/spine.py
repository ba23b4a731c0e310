"""The single-layer view of a bundle, for back ends that implement only the spine's network.

The analog netlist generator (per-neuron BMRU cells) was written against format 1 (the RTL
generator once was too; it now takes the whole family, see docs/accelerator.md): one layer with flat
``formats`` and arrays named ``w_cand``, ``w_out`` ... :func:`spine_view` presents any format-2
bundle that fits that shape in those terms, and refuses the others with the reason, so each back
end states plainly which part of the family it supports. :func:`from_spine` goes the other way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.bundle import v1
from codesign.bundle.io import V1_ARRAYS, Bundle, check_weights, parse_manifest
from codesign.errors import CodesignError


@dataclass(frozen=True)
class SpineBundle:
    """A format-2 bundle seen as format 1 (``manifest`` is a :class:`codesign.bundle.v1.Manifest`)."""

    manifest: v1.Manifest
    weights: dict[str, np.ndarray]
    path: Path | None = None
    source: Bundle | None = None

    @property
    def net(self) -> v1.NetworkSpec:
        return self.manifest.network

    def __getitem__(self, name: str) -> np.ndarray:
        return self.weights[name]


def spine_view(bundle: Bundle | SpineBundle, *, consumer: str = "this back end") -> SpineBundle:
    """The bundle as one CMRU/BMRU layer with last pooling; a clear error when it is not one."""
    if isinstance(bundle, SpineBundle):
        return bundle
    m = bundle.manifest
    problems = []
    if len(m.layers) != 1:
        problems.append(f"{len(m.layers)} layers (supported: 1)")
    layer = m.layers[0]
    if layer.cell not in ("cmru", "bmru"):
        problems.append(f"cell {layer.cell!r} (supported: cmru, bmru)")
    if layer.dcls is not None:
        problems.append("a DCLS front end (not supported)")
    if m.input.stride != 1:
        problems.append(f"input stride {m.input.stride} (supported: 1)")
    if m.readout.pooling != "last" or m.readout.per_step:
        problems.append("a sum-pooled or per-step readout (supported: last-step pooling)")
    if problems:
        raise CodesignError(
            f"bundle '{m.name}' has {', '.join(problems)}: {consumer} implements one CMRU/BMRU "
            "layer with a last-step readout"
        )
    manifest = v1.Manifest(
        format_version=v1.FORMAT_VERSION,
        name=m.name,
        network=v1.NetworkSpec(
            input_size=m.input.size,
            hidden_size=layer.size,
            num_classes=m.readout.classes,
            cell=layer.cell,
            eps=layer.eps,
        ),
        formats=v1.Formats(
            input=v1.InputFormat(bits=m.input.bits, frac=m.input.frac, overflow=m.input.overflow),
            weight=v1.IntFormat(bits=layer.weight_bits),
            bias=v1.IntFormat(bits=layer.bias_bits),
            alpha=v1.IntFormat(bits=layer.alpha_bits),
            state=v1.IntFormat(bits=layer.state_bits),
            readout_weight=v1.IntFormat(bits=m.readout.weight_bits),
            readout_bias=v1.IntFormat(bits=m.readout.bias_bits),
            state_frac=layer.state_frac,
        ),
        checksums=dict(m.checksums),
        provenance=dict(m.provenance),
    )
    names = {v: k for k, v in V1_ARRAYS.items()}
    return SpineBundle(manifest, {names[k]: v for k, v in bundle.weights.items()}, bundle.path, bundle)


def from_spine(
    bundle_or_manifest: SpineBundle | v1.Manifest,
    weights: dict[str, np.ndarray] | None = None,
    path: Path | None = None,
) -> Bundle:
    """A format-2 :class:`Bundle` from a single-layer (format-1 shaped) manifest and arrays."""
    if isinstance(bundle_or_manifest, SpineBundle):
        if bundle_or_manifest.source is not None:
            return bundle_or_manifest.source
        manifest1, weights, path = (
            bundle_or_manifest.manifest,
            bundle_or_manifest.weights,
            bundle_or_manifest.path,
        )
    else:
        manifest1 = bundle_or_manifest
    manifest = parse_manifest(manifest1.model_dump(mode="json"))
    renamed = {V1_ARRAYS.get(k, k): v for k, v in (weights or {}).items()}
    return Bundle(manifest, check_weights(manifest, renamed), path)


def as_bundle(bundle: Bundle | SpineBundle) -> Bundle:
    """Accept either view where a format-2 bundle is needed (the golden model)."""
    return from_spine(bundle) if isinstance(bundle, SpineBundle) else bundle
