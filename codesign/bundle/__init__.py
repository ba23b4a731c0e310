"""The deployment bundle: the only thing that crosses from software to hardware.

A bundle is a directory with ``manifest.yaml`` (format version, network, integer formats,
checksums, provenance) and ``weights.npz`` (integer arrays only, loaded without pickle).
See ``docs/bundle.md``.
"""

from codesign.bundle.io import Bundle, load_bundle, save_bundle
from codesign.bundle.schema import FORMAT_VERSION, Formats, Manifest, NetworkSpec

__all__ = ["FORMAT_VERSION", "Bundle", "Formats", "Manifest", "NetworkSpec", "load_bundle", "save_bundle"]
