"""Parsers of what yosys and nextpnr write: cell counts, memory placement, utilisation, Fmax.

Each parser takes the text (or parsed JSON) of one file, so they are tested on small captured
snippets (``tests/test_fpga_reports.py``) without running a tool.
"""

from __future__ import annotations

__all__ = [
    "MemoryPlacement",
    "critical_path",
    "memory_blocks",
    "block_ram_fill",
    "memory_declarations",
    "memory_mapping",
    "nextpnr_fmax",
    "nextpnr_fmax_from_log",
    "nextpnr_utilisation",
    "place_memories",
    "resource_counts",
    "yosys_cells",
]

import re
from dataclasses import asdict, dataclass

# Verilog memories as Amaranth writes them: ``reg [63:0] gate_weights [59:0];``
_MEMORY_DECL = re.compile(
    r"^\s*reg\s+(?:signed\s+)?\[(\d+):(\d+)\]\s+(\\?\S+)\s*\[(\d+):(\d+)\]\s*;", re.MULTILINE
)
_MODULE = re.compile(r"^\s*module\s+(\\?\S+?)\s*\(", re.MULTILINE)
_LIBMAP = re.compile(
    r"^(?:mapping memory (\S+) via (\S+)|using FF mapping for memory (\S+))\s*$", re.MULTILINE
)
_FMAX_LOG = re.compile(r"Max frequency for clock '([^']+)': ([\d.]+) MHz \((PASS|FAIL) at ([\d.]+) MHz\)")

#: What a yosys memory_libmap target cell means, by substring of its name.
_RAM_KINDS = (
    ("SPRAM", "SPRAM (SB_SPRAM256KA)"),
    ("RAM4K", "EBR (SB_RAM40_4K)"),
    ("PDPW16KD", "EBR (DP16KD, pseudo dual port)"),
    ("DP16KD", "EBR (DP16KD)"),
    ("DPR16X4", "LUT RAM (TRELLIS_DPR16X4)"),
)
LOGIC = "logic (LUTs / FFs)"


def memory_declarations(verilog: str) -> dict[str, dict[str, int]]:
    """``{"<module>.<memory>": {"width", "depth", "bits"}}`` for every ``reg [w] name [d]`` array."""
    spans = [(m.start(), m.group(1).lstrip("\\")) for m in _MODULE.finditer(verilog)]
    out: dict[str, dict[str, int]] = {}
    for m in _MEMORY_DECL.finditer(verilog):
        module = next((name for start, name in reversed(spans) if start <= m.start()), "")
        width = abs(int(m.group(1)) - int(m.group(2))) + 1
        depth = abs(int(m.group(4)) - int(m.group(5))) + 1
        name = m.group(3).lstrip("\\")
        out[f"{module}.{name}" if module else name] = {"width": width, "depth": depth, "bits": width * depth}
    return out


def memory_mapping(yosys_log: str) -> dict[str, str]:
    """``{hierarchical memory name: where it went}`` from yosys' MEMORY_LIBMAP lines."""
    out: dict[str, str] = {}
    for m in _LIBMAP.finditer(yosys_log):
        if m.group(3):
            out[m.group(3)] = LOGIC
        else:
            cell = m.group(2)
            out[m.group(1)] = next((kind for key, kind in _RAM_KINDS if key in cell), cell)
    return out


#: Cells a memory is built from; yosys names them ``<memory>.<row>.<column>``.
RAM_CELLS = ("SB_RAM40_4K", "SB_SPRAM256KA", "DP16KD", "PDPW16KD", "TRELLIS_DPR16X4")
_BLOCK_NAME = re.compile(r"^(.+)\.\d+\.\d+$")


def memory_blocks(netlist: dict, top: str) -> dict[str, int]:
    """``{memory name (without the top's prefix): RAM cells it takes}`` from a yosys JSON netlist."""
    module = netlist.get("modules", {}).get(top, {})
    out: dict[str, int] = {}
    for name, cell in module.get("cells", {}).items():
        if cell.get("type") in RAM_CELLS:
            m = _BLOCK_NAME.match(name.lstrip("\\"))
            if m:
                out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


@dataclass(frozen=True)
class MemoryPlacement:
    name: str  # hierarchical, as yosys names it (e.g. fpga_top.accelerator.gate_weights)
    width: int | None
    depth: int | None
    bits: int | None
    placed: str
    blocks: int | None = None  # RAM cells it takes (EBR / DP16KD / SPRAM / LUT RAM), None for logic

    def as_dict(self) -> dict:
        return asdict(self)


def place_memories(declared: dict[str, dict[str, int]], mapping: dict[str, str]) -> list[MemoryPlacement]:
    """Join the declared sizes with yosys' mapping (a memory yosys folded away entirely is not listed).

    yosys names a memory ``<top>.<instance path>.<memory>``; the declaration is ``<module>.<memory>``.
    They are matched on the memory name, then on the longest common dotted suffix.
    """

    def score(hier: str, decl: str) -> tuple[int, int]:
        a, b = hier.split("."), decl.split(".")
        if a[-1] != b[-1]:
            return (-1, 0)
        n = 1
        while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
            n += 1
        return (n, sum(1 for part in b[:-1] if part in a))  # then: how many of its modules the path names

    rows = []
    for hier, placed in mapping.items():
        best = max(declared, key=lambda d: score(hier, d), default=None)
        size = declared.get(best) if best is not None and score(hier, best)[0] >= 1 else None
        rows.append(
            MemoryPlacement(
                hier,
                size["width"] if size else None,
                size["depth"] if size else None,
                size["bits"] if size else None,
                placed,
            )
        )
    return rows


#: Bits one RAM cell holds, by what :func:`memory_mapping` calls its kind (DP16KD: 18 kbit with parity).
BLOCK_CAPACITY = {
    "EBR (SB_RAM40_4K)": 4096,
    "EBR (DP16KD, pseudo dual port)": 18432,
    "EBR (DP16KD)": 18432,
    "SPRAM (SB_SPRAM256KA)": 262144,
}


def block_ram_fill(memories: list[MemoryPlacement]) -> dict[str, dict[str, float]]:
    """``{"ebr": ..., "spram": ...}``: the memory bits in block RAMs (or single-port RAMs), the
    cells they take, their capacity and the fill (bits / capacity; the issue's target: >= 50 %
    on the UP5K). Only the kinds that hold a memory are listed."""
    out: dict[str, dict[str, float]] = {}
    for mem in memories:
        capacity = BLOCK_CAPACITY.get(mem.placed)
        if capacity is None or not mem.blocks:
            continue
        row = out.setdefault(
            "spram" if mem.placed.startswith("SPRAM") else "ebr", {"bits": 0, "blocks": 0, "capacity": 0}
        )
        row["bits"] += mem.bits or 0
        row["blocks"] += mem.blocks
        row["capacity"] += mem.blocks * capacity
    for row in out.values():
        row["fill"] = round(row["bits"] / row["capacity"], 4)
    return out


def yosys_cells(stat: dict, top: str | None = None) -> dict[str, int]:
    """Cell counts by type from ``stat -json`` (the top module, else the whole design)."""
    modules = stat.get("modules", {})
    if top is not None:
        for key in (top, "\\" + top):
            if key in modules:
                return dict(modules[key].get("num_cells_by_type", {}))
    design = stat.get("design", {})
    return dict(design.get("num_cells_by_type", {}))


_FAMILY_CELLS = {
    "ice40": {
        "lut": ("SB_LUT4",),
        "ff": ("SB_DFF",),  # prefix: SB_DFF, SB_DFFE, SB_DFFESR, ...
        "carry": ("SB_CARRY",),
        "bram": ("SB_RAM40_4K",),
        "spram": ("SB_SPRAM256KA",),
        "dsp": ("SB_MAC16",),
        "lutram": (),
    },
    "ecp5": {
        "lut": ("LUT4",),
        "ff": ("TRELLIS_FF",),
        "carry": ("CCU2C",),
        "bram": ("DP16KD", "PDPW16KD"),
        "spram": (),
        "dsp": ("MULT18X18D", "ALU54B"),
        "lutram": ("TRELLIS_DPR16X4",),
    },
}


def resource_counts(cells: dict[str, int], family: str) -> dict[str, int]:
    """LUT, FF, carry, BRAM, SPRAM, DSP and LUT-RAM counts from a post-synthesis cell list.

    iCE40 FFs are every ``SB_DFF*`` cell; an ECP5 ``CCU2C`` carry cell holds two LUT4s besides
    its carry (counted as carry, not as LUTs).
    """
    table = _FAMILY_CELLS[family]
    out = {}
    for key, names in table.items():
        if key == "ff" and family == "ice40":
            out[key] = sum(n for cell, n in cells.items() if cell.startswith("SB_DFF"))
        else:
            out[key] = sum(cells.get(name, 0) for name in names)
    return out


def nextpnr_utilisation(report: dict) -> dict[str, dict[str, int]]:
    """``{bel type: {"used", "available"}}`` from nextpnr's ``--report`` JSON (types with available > 0)."""
    util = report.get("utilization", report.get("utilisation", {}))
    return {
        k: {"used": int(v.get("used", 0)), "available": int(v.get("available", 0))}
        for k, v in util.items()
        if int(v.get("available", 0)) > 0
    }


def nextpnr_fmax(report: dict) -> dict[str, dict[str, float]]:
    """``{clock: {"achieved", "constraint"}}`` in MHz from nextpnr's ``--report`` JSON."""
    return {
        clock: {"achieved": float(v["achieved"]), "constraint": float(v["constraint"])}
        for clock, v in report.get("fmax", {}).items()
    }


def nextpnr_fmax_from_log(log: str) -> dict[str, dict[str, float]]:
    """The same from the log's last "Max frequency for clock" line per clock (a fallback)."""
    out: dict[str, dict[str, float]] = {}
    for m in _FMAX_LOG.finditer(log):
        out[m.group(1)] = {"achieved": float(m.group(2)), "constraint": float(m.group(4))}
    return out


def critical_path(report: dict) -> dict | None:
    """The slowest same-clock path of nextpnr's report: endpoints, delay, logic levels, sources."""
    paths = [p for p in report.get("critical_paths", []) if p.get("from") == p.get("to") and p.get("path")]
    if not paths:
        return None
    path = max(paths, key=lambda p: sum(s.get("delay", 0.0) for s in p["path"]))
    steps = path["path"]
    delay = sum(s.get("delay", 0.0) for s in steps)
    logic = sum(s.get("delay", 0.0) for s in steps if s.get("type") == "logic")
    nets = [s["net"] for s in steps if s.get("net")]
    sources = sorted({src for s in steps for src in s.get("sources", []) if src})
    return {
        "clock": path["from"],
        "delay_ns": round(delay, 3),
        "logic_ns": round(logic, 3),
        "routing_ns": round(sum(s.get("delay", 0.0) for s in steps if s.get("type") == "routing"), 3),
        "logic_levels": sum(1 for s in steps if s.get("type") == "logic"),
        "from": steps[0].get("from", {}).get("cell"),
        "to": steps[-1].get("to", {}).get("cell"),
        "first_net": nets[0] if nets else None,
        "last_net": nets[-1] if nets else None,
        "sources": sources[:12],
    }
