"""The deployment bundle: the only thing that crosses from software to hardware.

A bundle is a directory with ``manifest.yaml`` (format version, input, layers, readout, checksums,
provenance) and ``weights.npz`` (integer arrays only, loaded without pickle). See ``docs/bundle.md``.
Back ends that implement only the single-layer spine read it through :mod:`codesign.bundle.spine`.
"""

from codesign.bundle.io import Bundle, load_bundle, save_bundle
from codesign.bundle.spec import FORMAT_VERSION, InputSpec, LayerSpec, Manifest, ReadoutSpec
from codesign.bundle.spine import SpineBundle, from_spine, spine_view
from codesign.bundle.v1 import Formats, NetworkSpec

__all__ = [
    "FORMAT_VERSION",
    "Bundle",
    "Formats",
    "InputSpec",
    "LayerSpec",
    "Manifest",
    "NetworkSpec",
    "ReadoutSpec",
    "SpineBundle",
    "from_spine",
    "load_bundle",
    "save_bundle",
    "spine_view",
]
