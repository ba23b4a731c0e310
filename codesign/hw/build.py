"""Elaborate the accelerator for a bundle into a self-contained build directory.

A build directory holds everything a simulator or an FPGA flow needs and nothing that points back
into the source tree::

    accelerator.v     generated Verilog (top module ``accelerator``, ports ``clk`` and ``rst``
                      (synchronous, active high) plus the signature's members)
    manifest.yaml     copy of the bundle it was built from (the testbench's golden model reads it)
    weights.npz
    build.json        top name, lanes, ports and widths, payload field offsets, bundle name,
                      codesign version, sha256 of accelerator.v
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

import codesign
from codesign.atomic import atomic_dir
from codesign.bundle import Bundle, SpineBundle, load_bundle, spine_view
from codesign.bundle.io import MANIFEST, WEIGHTS
from codesign.errors import CodesignError
from codesign.hw.accelerator import Accelerator

__all__ = ["BUILD_JSON", "TOP", "VERILOG", "build_rtl", "check_lanes", "payload_fields"]

TOP = "accelerator"
VERILOG = "accelerator.v"
BUILD_JSON = "build.json"


def check_lanes(bundle: Bundle | SpineBundle, lanes: object) -> int:
    bundle = spine_view(bundle, consumer="the RTL generator")
    """Return ``lanes`` if it is a legal lane count for ``bundle``, else raise :class:`CodesignError`."""
    d = bundle.net.hidden_size
    if not isinstance(lanes, int) or isinstance(lanes, bool) or not 1 <= lanes <= d:
        raise CodesignError(
            f"lanes {lanes!r} is outside the allowed range 1..{d} (1 up to the hidden size d={d} of bundle "
            f"'{bundle.manifest.name}')"
        )
    return lanes


def payload_fields(layout) -> dict[str, dict[str, int]]:
    """Flat ``{field: {"offset", "width"}}`` of a struct payload, array elements as ``name[i]``."""
    out: dict[str, dict[str, int]] = {}
    for name, field in layout:
        shape = field.shape
        if hasattr(shape, "elem_shape"):
            elem = shape.elem_shape
            width = elem.width if hasattr(elem, "width") else elem.size
            for i in range(shape.length):
                out[f"{name}[{i}]"] = {"offset": field.offset + i * width, "width": width, "signed": 1}
        else:
            out[name] = {"offset": field.offset, "width": field.width, "signed": 0}
    return out


def _ports(accelerator: Accelerator) -> dict[str, dict[str, object]]:
    ports: dict[str, dict[str, object]] = {
        "clk": {"direction": "in", "width": 1},
        "rst": {"direction": "in", "width": 1},
    }
    for path, member, value in accelerator.signature.flatten(accelerator):
        ports["__".join(map(str, path))] = {
            "direction": "in" if member.flow == wiring.In else "out",
            "width": len(value.as_value() if hasattr(value, "as_value") else value),
        }
    return ports


def build_rtl(bundle_dir: Path, out_dir: Path, lanes: int = 1) -> dict:
    """Generate ``accelerator.v`` for the bundle in ``bundle_dir`` into ``out_dir`` (atomically).

    Parameters
    ----------
    bundle_dir : Path
        Bundle directory (``manifest.yaml`` + ``weights.npz``).
    out_dir : Path
        Build directory to (re)create; simulator caches (``sim_*``) of an identical previous build
        are kept.
    lanes : int
        Parallel lanes ``P``, ``1 <= P <= d``.

    Returns
    -------
    dict
        The contents of ``build.json``.

    Raises
    ------
    CodesignError
        If the bundle is malformed or ``lanes`` is outside ``1..d``.
    """
    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    bundle = spine_view(load_bundle(bundle_dir), consumer="the RTL generator")
    check_lanes(bundle, lanes)
    accelerator = Accelerator(bundle, lanes=lanes)
    text = verilog.convert(accelerator, name=TOP, emit_src=False)
    digest = hashlib.sha256(text.encode()).hexdigest()
    manifest, net = bundle.manifest, bundle.net
    info = {
        "top": TOP,
        "verilog": VERILOG,
        "verilog_sha256": digest,
        "clock": "clk",
        "reset": "rst (synchronous, active high)",
        "lanes": lanes,
        "groups": accelerator.groups,
        "class_groups": accelerator.class_groups,
        "bundle": manifest.name,
        "bundle_weights_sha256": manifest.checksums.get(WEIGHTS),
        "codesign_version": codesign.__version__,
        "network": {
            "inputs": net.input_size,
            "hidden": net.hidden_size,
            "classes": net.num_classes,
            "cell": net.cell,
            "eps": net.eps,
        },
        "accumulator_bits": manifest.accumulator_bits,
        "logit_bits": manifest.logit_bits,
        "state_bits": manifest.formats.state.bits,
        "input_bits": manifest.formats.input.bits,
        "ports": _ports(accelerator),
        "step_payload": payload_fields(accelerator.steps.payload.shape()),
        "result_payload": payload_fields(accelerator.results.payload.shape()),
        "cycle_floor_per_step": "ceil(hidden / lanes) * nonzero inputs",
    }
    previous = _read_json(out_dir / BUILD_JSON)
    with atomic_dir(out_dir) as tmp:
        (tmp / VERILOG).write_text(text)
        shutil.copyfile(bundle_dir / MANIFEST, tmp / MANIFEST)
        shutil.copyfile(bundle_dir / WEIGHTS, tmp / WEIGHTS)
        (tmp / BUILD_JSON).write_text(json.dumps(info, indent=2) + "\n")
        if (
            previous.get("verilog_sha256") == digest
            and previous.get("bundle_weights_sha256") == info["bundle_weights_sha256"]
        ):
            # Same RTL and same bundle copy: keep the compiled simulators and keep accelerator.v's
            # timestamp, so the next simulation does not recompile.
            for cache in out_dir.glob("sim_*"):
                if cache.is_dir():
                    os.replace(cache, tmp / cache.name)
            shutil.copystat(out_dir / VERILOG, tmp / VERILOG)
    return info


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
