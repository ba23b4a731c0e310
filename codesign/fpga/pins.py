"""The whole chip at its pins, for simulation: ``fpga_top`` (UART, bridge, accelerator) as one file.

:mod:`codesign.fpga.netlist` maps the accelerator alone; what goes on the chip is the accelerator
behind the UART wrapper (:mod:`codesign.fpga.wrapper`), and the host only ever sees the bytes at
its ``uart_rx`` / ``uart_tx`` pins. :func:`pins_build` writes the wrapper exactly as
``codesign synth`` does (same identity word, same message timeout, no PLL: the testbench drives
``clk``, the clock the wrapper's ``sync`` domain runs on) with a small UART divisor, so a byte
takes ``10 x divisor`` cycles rather than some 2600 at 115200 baud and 30 MHz, and either

* maps it with ``codesign synth``'s yosys mapping for a device (``synth_ice40 -dsp -spram`` /
  ``synth_ecp5``, memories in block RAM) and appends the primitives' simulation models
  (:func:`codesign.fpga.netlist.cell_models`), or
* with ``device=None``, concatenates the RTL (``accelerator.v`` and the wrapper's Verilog): the
  reference the UART model is checked against.

::

    BUILD/pins/<device|rtl>/fpga_top.v    the design at its pins, one self-contained file
    BUILD/pins/<device|rtl>/pins.json     device, divisor, identity, the Verilog's SHA-256
    BUILD/pins/<device|rtl>/build.json, manifest.yaml, weights.npz   the build's, unchanged

A folder is reused while the RTL, the wrapper and the script are unchanged.
"""

from __future__ import annotations

__all__ = ["PINS_DIVISOR", "PINS_JSON", "PINS_VERILOG", "pins_build", "pins_script"]

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from codesign.atomic import atomic_dir
from codesign.errors import CodesignError
from codesign.fpga.ecp5_cells import check_modelled
from codesign.fpga.netlist import NETLIST_DEVICES, cell_models
from codesign.fpga.ports import build_identity, load_port_map
from codesign.fpga.tools import run_tool
from codesign.fpga.wrapper import TOP_NAME, top_verilog

#: Clock cycles per UART bit in simulation (the receiver's least).
PINS_DIVISOR = 4
PINS_VERILOG = "fpga_top.v"
PINS_JSON = "pins.json"
_BUNDLE_FILES = ("build.json", "manifest.yaml", "weights.npz")


def pins_script(device: str, *, abc: bool = False) -> str:
    """The yosys script: ``codesign synth``'s mapping of ``fpga_top`` for ``device``, then Verilog."""
    if device not in NETLIST_DEVICES:
        raise CodesignError(f"--netlist {device!r} is not one of {', '.join(NETLIST_DEVICES)}")
    if device.startswith("ecp5"):
        from codesign.fpga.synth import (
            ECP5_ABC_FALLBACK,
        )  # abc9's LUT mapping replaced, as codesign synth retries

        steps = (step.format(top=TOP_NAME, dsp="") for step in ECP5_ABC_FALLBACK)
        synth = "\n".join(steps) if abc else f"synth_ecp5 -top {TOP_NAME}"
    else:
        synth = f"synth_ice40 -top {TOP_NAME}" + (" -dsp -spram" if device == "up5k" else "")
    return "\n".join(
        [
            "read_verilog accelerator.v",
            "read_verilog top.v",
            'setattr -set ram_style "block" m:* a:ram_style %d',
            synth,
            "write_verilog -noattr netlist.v",
            "",
        ]
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _map(tmp: Path, device: str, timeout_s: float) -> str:
    """yosys on ``tmp/accelerator.v`` + ``tmp/top.v``; ECP5 retries without abc9 as ``codesign synth`` does."""
    from codesign.fpga.synth import ABC9_ASSERT

    (tmp / "synth.ys").write_text(pins_script(device))
    args = ["-q", "-l", "yosys.log", "-s", "synth.ys"]
    try:
        run_tool("yosys", args, cwd=tmp, timeout=timeout_s, what="pins netlist")
    except CodesignError:
        log = (tmp / "yosys.log").read_text(errors="replace") if (tmp / "yosys.log").is_file() else ""
        if not device.startswith("ecp5") or ABC9_ASSERT not in log:
            raise
        (tmp / "synth.ys").write_text(pins_script(device, abc=True))
        run_tool("yosys", args, cwd=tmp, timeout=timeout_s, what="pins netlist")
    mapped = (tmp / "netlist.v").read_text()
    check_modelled(mapped)
    (tmp / "netlist.v").unlink()
    return mapped + "\n" + cell_models(device)


def pins_build(
    build: Path,
    device: str | None,
    *,
    divisor: int = PINS_DIVISOR,
    counters: bool = False,
    timeout_s: float = 1800,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """``fpga_top`` of ``build`` for simulation at its pins: mapped for ``device``, or RTL (``None``).

    ``counters`` serialises the counters output for the snapshot command (``codesign synth
    --counters``). Returns the folder (``BUILD/pins/<device>`` or ``BUILD/pins/rtl``).
    """
    build = Path(build)
    rtl = build / "accelerator.v"
    if not rtl.is_file() or not (build / "build.json").is_file():
        raise CodesignError(
            "not a build folder: accelerator.v or build.json missing (make one with codesign rtl)", path=build
        )
    if divisor < 4:
        raise CodesignError(f"UART divisor {divisor} must be at least 4 (cycles a bit)")
    info = json.loads((build / "build.json").read_text())
    ports = load_port_map(build, counters=counters)
    identity = build_identity(info, counters=ports.snapshot_port is not None)
    top = top_verilog(ports, divisor, identity=identity)
    script = pins_script(device) if device is not None else "rtl"
    models = cell_models(device) if device is not None else ""
    key = _sha256(rtl.read_text() + top + script + models)
    out = build / "pins" / (device or "rtl")
    stamp = out / "pins.key"
    if stamp.is_file() and stamp.read_text().strip() == key and (out / PINS_VERILOG).is_file():
        return out
    if progress:
        progress(f"yosys maps fpga_top of {build} for {device}" if device else f"fpga_top of {build} (RTL)")
    with atomic_dir(out) as tmp:
        shutil.copyfile(rtl, tmp / "accelerator.v")
        (tmp / "top.v").write_text(top)
        if device is None:
            text = rtl.read_text() + "\n" + top
        else:
            text = _map(tmp, device, timeout_s)
        (tmp / PINS_VERILOG).write_text(text)
        for name in _BUNDLE_FILES:
            if (build / name).is_file():
                shutil.copyfile(build / name, tmp / name)
        record = {
            "device": device,
            "top": TOP_NAME,
            "divisor": divisor,
            "counters": ports.snapshot_port is not None,
            "identity": identity,
            "verilog_sha256": _sha256(text),
            "rtl_sha256": _sha256(rtl.read_text()),
            "script": script,
        }
        (tmp / PINS_JSON).write_text(json.dumps(record, indent=2) + "\n")
        (tmp / "accelerator.v").unlink()
        (tmp / "pins.key").write_text(key + "\n")
    return out
