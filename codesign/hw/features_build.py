"""Generate the Verilog of a random-feature network's accelerator into a build directory.

A feature build directory holds::

    features.v      top module ``features`` (ports ``clk``, ``rst`` (synchronous, active high),
                    ``inputs__*``, ``results__*``, and ``config__*`` with ``weights="spram"``)
    manifest.yaml   copy of the bundle (the cocotb testbench's golden model reads it)
    weights.npz
    build.json      top, weights mode, ports, payload field offsets, the cycle model, sha256s
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from amaranth.back import verilog

import codesign
from codesign.atomic import atomic_dir
from codesign.bundle.io import MANIFEST, WEIGHTS, FeatureBundle, load_any_bundle
from codesign.errors import CodesignError
from codesign.hw.build import drop_huge_init, payload_fields
from codesign.hw.features import FeatureAccelerator

__all__ = ["FEATURE_TOP", "FEATURE_VERILOG", "build_feature_rtl", "feature_verilog"]

FEATURE_TOP = "features"
FEATURE_VERILOG = "features.v"
BUILD_JSON = "build.json"


def feature_verilog(bundle: FeatureBundle, weights: str = "rom") -> tuple[str, FeatureAccelerator]:
    """The Verilog text of the bundle's accelerator (top ``features``) and the component."""
    dut = FeatureAccelerator(bundle, weights=weights)
    text = verilog.convert(dut, name=FEATURE_TOP, emit_src=False)
    if weights == "spram":  # an SPRAM has no initial values: yosys maps none with them
        text = drop_huge_init(text, SimpleNamespace(memories=[SimpleNamespace(style="huge")]))
    return text, dut


def _ports(dut: FeatureAccelerator) -> dict[str, dict[str, object]]:
    ports: dict[str, dict[str, object]] = {
        "clk": {"direction": "in", "width": 1},
        "rst": {"direction": "in", "width": 1},
    }
    for path, member, value in dut.signature.flatten(dut):
        ports["__".join(map(str, path))] = {
            "direction": "in" if member.flow.name == "In" else "out",
            "width": len(value.as_value() if hasattr(value, "as_value") else value),
        }
    return ports


def build_feature_rtl(bundle_dir: Path, out_dir: Path, weights: str = "rom") -> dict:
    """Write ``features.v``, a copy of the bundle and ``build.json`` into ``out_dir`` (atomically).

    Returns the contents of ``build.json``. Raises :class:`CodesignError` if ``bundle_dir`` holds
    no random-feature bundle or the accelerator refuses it (the message names the field).
    """
    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    bundle = load_any_bundle(bundle_dir)
    if not isinstance(bundle, FeatureBundle):
        raise CodesignError("not a random-feature bundle (manifest kind is not 'features')", path=bundle_dir)
    text, dut = feature_verilog(bundle, weights)
    m = bundle.manifest
    info = {
        "top": FEATURE_TOP,
        "verilog": FEATURE_VERILOG,
        "verilog_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "clock": "clk",
        "reset": "rst (synchronous, active high)",
        "weights": weights,
        "bundle": m.name,
        "bundle_weights_sha256": m.checksums.get(WEIGHTS),
        "codesign_version": codesign.__version__,
        "features": m.features.model_dump(mode="json"),
        "input": m.input.model_dump(mode="json"),
        "classes": m.readout.classes,
        "logit_bits": m.logit_bits,
        "cycles": {"frame": dut.cycles.frame, "readout": dut.cycles.readout},
        "ports": _ports(dut),
        "inputs_payload": payload_fields(dut.inputs.payload.shape()),
        "results_payload": payload_fields(dut.results.payload.shape()),
        "config_payload": payload_fields(dut.config.payload.shape()) if weights == "spram" else {},
    }
    with atomic_dir(out_dir) as tmp:
        (tmp / FEATURE_VERILOG).write_text(text)
        shutil.copyfile(bundle_dir / MANIFEST, tmp / MANIFEST)
        shutil.copyfile(bundle_dir / WEIGHTS, tmp / WEIGHTS)
        (tmp / BUILD_JSON).write_text(json.dumps(info, indent=2) + "\n")
    return info
