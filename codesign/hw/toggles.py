"""Activity of a mapped netlist's simulation: toggles and accesses per FPGA resource, from a VCD.

:mod:`codesign.hw.power` prices events; this module counts them. The netlist is the one
``codesign sim BUILD --netlist DEVICE`` simulates (yosys' ``write_verilog`` of the chip's
primitives, :mod:`codesign.fpga.netlist`), the VCD the one Icarus writes of its top module.

:func:`netlist_cells` reads the top module's cell instances and the nets on their ports.
:func:`vcd_activity` replays the VCD once and counts, per resource class:

* ``lut_toggles`` / ``carry_toggles`` / ``ff_toggles``: 0->1 and 1->0 changes of the nets a LUT
  (``SB_LUT4``, ``LUT4``, the ECP5 wide-function muxes, LUT-RAM outputs), a carry (``SB_CARRY``,
  ``CCU2C``) or a flip-flop (``SB_DFF*``, ``TRELLIS_FF``) drives (x and z are no toggle);
* ``bram_reads`` / ``bram_writes``: rising clock edges at which a block RAM port is enabled
  (iCE40 ``SB_RAM40_4K``: ``RE & RCLKE``, ``WE & WCLKE``; ECP5 ``DP16KD``: ``CEA/CEB`` with
  ``WEA/WEB`` choosing write, ``PDPW16KD``: ``CER``, ``CEW``), the enables sampled before the edge;
* ``spram_reads`` / ``spram_writes``: ``SB_SPRAM256KA`` edges with ``CHIPSELECT`` (``WREN`` a write);
* ``dsp_ops``: cycles in which a multiplier's (``SB_MAC16``, ``MULT18X18D``, ``ALU54B``) output changes;
* ``cycles``: rising edges of the top module's clock; ``ffs``: flip-flops clocked every cycle.

A zero-delay simulation has no glitches, so the LUT toggles are a lower bound of the chip's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codesign.errors import CodesignError
from codesign.hw.power import ACTIVITY_KEYS

__all__ = ["Cell", "netlist_cells", "parse_bits", "vcd_activity"]

# cell type -> (class, output ports)
_OUTPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "SB_LUT4": ("lut", ("O",)),
    "LUT4": ("lut", ("Z",)),
    "PFUMX": ("lut", ("Z",)),
    "L6MUX21": ("lut", ("Z",)),
    "TRELLIS_DPR16X4": ("lut", ("DO",)),
    "SB_CARRY": ("carry", ("CO",)),
    "CCU2C": ("carry", ("S0", "S1", "COUT")),
    "TRELLIS_FF": ("ff", ("Q",)),
    "SB_MAC16": ("dsp", ("O",)),
    "MULT18X18D": ("dsp", tuple(f"P{i}" for i in range(36))),
    "ALU54B": ("dsp", tuple(f"R{i}" for i in range(54))),
}
_BRAM = {"SB_RAM40_4K", "DP16KD", "PDPW16KD"}
_SPRAM = {"SB_SPRAM256KA"}
# (clock, enables that must all be 1, enables that must all be 0, event)
_PORTS: dict[str, tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...]] = {
    "SB_RAM40_4K": (
        ("RCLK", ("RE", "RCLKE"), (), "bram_reads"),
        ("WCLK", ("WE", "WCLKE"), (), "bram_writes"),
    ),
    "DP16KD": (
        ("CLKA", ("CEA",), ("WEA",), "bram_reads"),
        ("CLKA", ("CEA", "WEA"), (), "bram_writes"),
        ("CLKB", ("CEB",), ("WEB",), "bram_reads"),
        ("CLKB", ("CEB", "WEB"), (), "bram_writes"),
    ),
    "PDPW16KD": (("CLKR", ("CER",), (), "bram_reads"), ("CLKW", ("CEW",), (), "bram_writes")),
    "SB_SPRAM256KA": (
        ("CLOCK", ("CHIPSELECT",), ("WREN",), "spram_reads"),
        ("CLOCK", ("CHIPSELECT", "WREN"), (), "spram_writes"),
    ),
}

_CELL_START = re.compile(r"^  (?P<type>[A-Za-z_][\w$]*) (?:#\(|(?P<name>\\\S+|[A-Za-z_][\w$]*)\s*\()$")
_INSTANCE = re.compile(r"^  (?:\)\s*)?(?P<name>\\\S+|[A-Za-z_][\w$]*)\s*\($")
_PORT = re.compile(r"^\s*\.(?P<port>\w+)\((?P<expr>.*)\),?$")
_CONST = re.compile(r"^(\d+)'([bhdo])([0-9a-fA-FxXzZ_]+)$")
_REF = re.compile(r"^(?P<name>\\\S+|[A-Za-z_][\w$]*)\s*(?:\[(?P<hi>\d+)(?::(?P<lo>\d+))?\])?$")

Bit = tuple[str, int] | str  # (net, index) or a constant "0" / "1" / "x"


@dataclass
class Cell:
    """One primitive instance of the mapped netlist: its type, name and the bits on its ports."""

    type: str
    name: str
    ports: dict[str, list[Bit]] = field(default_factory=dict)


def parse_bits(expr: str) -> list[Bit]:
    """The bits of a port connection, most significant first: ``{ a [3], 2'h1, b }`` -> refs and constants.

    A whole-net reference without a range (``b``) is one bit ``(b, -1)``: the net's only bit,
    whatever its index (resolved against the VCD's declaration).
    """
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        parts = _split_concat(expr[1:-1])
    else:
        parts = [expr]
    out: list[Bit] = []
    for part in parts:
        part = part.strip()
        if not part:
            continue
        const = _CONST.match(part)
        if const:
            out += _const_bits(int(const.group(1)), const.group(2), const.group(3))
            continue
        ref = _REF.match(part)
        if not ref:
            raise CodesignError(f"netlist: cannot read the connection {part!r}")
        name, hi, lo = ref.group("name"), ref.group("hi"), ref.group("lo")
        if hi is None:
            out.append((name, -1))
        elif lo is None:
            out.append((name, int(hi)))
        else:
            step = -1 if int(hi) >= int(lo) else 1
            out += [(name, i) for i in range(int(hi), int(lo) + step, step)]
    return out


def _split_concat(body: str) -> list[str]:
    """Split a concatenation's body at its commas (escaped names end at a space, never hold a comma
    that matters: yosys writes ``\\a.b [3] ,``)."""
    return [p for p in re.split(r",(?![^\[]*\])", body)]


def _const_bits(width: int, base: str, digits: str) -> list[str]:
    digits = digits.replace("_", "").lower()
    if base == "b":
        bits = digits
    elif base == "h":
        bits = "".join("xxxx" if c == "x" else "zzzz" if c == "z" else f"{int(c, 16):04b}" for c in digits)
    else:
        bits = f"{int(digits, 8 if base == 'o' else 10):b}"
    bits = bits[-width:].rjust(width, "0")
    return list(bits)


def _cell_blocks(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """``(type, lines)`` of each cell instance in the top module's text (two-space indented)."""
    i = 0
    while i < len(lines):
        m = _CELL_START.match(lines[i])
        if not m:
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j] != "  );":
            j += 1
        yield m.group("type"), lines[i : j + 1]
        i = j + 1


def netlist_cells(netlist: Path | str, top: str = "accelerator") -> list[Cell]:
    """The primitive instances of module ``top`` in ``netlist`` (the models after it are ignored)."""
    text = Path(netlist).read_text() if isinstance(netlist, Path) else netlist
    start = re.search(rf"^module {re.escape(top)}\(", text, re.MULTILINE)
    if start is None:
        raise CodesignError(f"netlist: no module {top}", path=netlist if isinstance(netlist, Path) else None)
    end = text.index("\nendmodule", start.end())
    lines = text[start.end() : end].splitlines()
    cells = []
    for kind, block in _cell_blocks(lines):
        if (
            kind not in _OUTPUTS
            and kind not in _BRAM
            and kind not in _SPRAM
            and not kind.startswith("SB_DFF")
        ):
            continue
        start = _CELL_START.match(block[0])
        name, ports = start.group("name") or "", {}
        in_ports = bool(name)
        for line in block[1:]:
            inst = _INSTANCE.match(line)
            if inst and not in_ports:
                name, in_ports = inst.group("name"), True
                continue
            port = _PORT.match(line)
            if port and in_ports:
                ports[port.group("port")] = parse_bits(port.group("expr"))
        cells.append(Cell(kind, name, ports))
    return cells


# ---- VCD ------------------------------------------------------------------------------------


@dataclass
class _Var:
    name: str
    width: int
    lsb: int  # index of the rightmost bit
    msb: int


def _declarations(lines: Iterator[str], top: str) -> dict[str, list[_Var]]:
    """Id code -> variables of the first scope named ``top`` (at any depth: the module itself, or
    its instance in a testbench), read up to ``$enddefinitions``; the scopes inside it are skipped."""
    stack: list[str] = []
    top_depth, out = 0, {}
    for line in lines:
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "$scope":
            stack.append(tokens[2])
            if not top_depth and tokens[2] == top:
                top_depth = len(stack)
        elif tokens[0] == "$upscope":
            if len(stack) == top_depth:
                top_depth = -1  # the top scope is closed: a later scope of the same name is not it
            stack.pop()
        elif tokens[0] == "$var" and len(stack) == top_depth:
            width, code, name = int(tokens[2]), tokens[3], tokens[4]
            msb, lsb = width - 1, 0
            if len(tokens) > 6 and tokens[5].startswith("["):
                rng = tokens[5].strip("[]").split(":")
                msb, lsb = int(rng[0]), int(rng[-1])
            out.setdefault(code, []).append(_Var(name, width, lsb, msb))
        elif tokens[0] == "$enddefinitions":
            return out
    raise CodesignError("VCD: no $enddefinitions line")


def _value(text: str, width: int) -> tuple[int, int]:
    """``(bits, unknown mask)`` of a VCD vector value, left-extended as VCD says."""
    text = text.lower()
    if len(text) < width:
        pad = text[0] if text[0] in "xz" else "0"
        text = pad * (width - len(text)) + text
    value = int(text.replace("x", "0").replace("z", "0"), 2)
    unknown = int("".join("1" if c in "xz" else "0" for c in text), 2) if ("x" in text or "z" in text) else 0
    return value, unknown


def _changes(lines: Iterable[str]) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """``(time, [(code, value), ...])`` per timestamp of the VCD's value section."""
    time, batch = 0, []
    for line in lines:
        line = line.strip()
        if not line or line[0] == "$":
            continue
        head = line[0]
        if head == "#":
            if batch:
                yield time, batch
            time, batch = int(line[1:]), []
        elif head in "bB":
            value, code = line[1:].split()
            batch.append((code, value))
        elif head in "rR":
            continue
        else:
            batch.append((line[1:], head))
    if batch:
        yield time, batch


class _Activity:
    """The replay's state: current values, per-bit classes, enables to sample at clock edges."""

    def __init__(self, cells: list[Cell], decls: dict[str, list[_Var]], clock: str) -> None:
        by_name = {v.name: (code, v) for code, vs in decls.items() for v in vs}
        if clock not in by_name:
            raise CodesignError(f"VCD: no clock net {clock!r} in the top module")
        self.clock = by_name[clock][0]
        self.width = {code: max(v.width for v in vs) for code, vs in decls.items()}
        self.value = dict.fromkeys(decls, 0)
        self.unknown = {code: (1 << w) - 1 for code, w in self.width.items()}
        self.masks: dict[str, dict[str, int]] = {}  # code -> class -> bit mask
        self.counts = dict.fromkeys(ACTIVITY_KEYS, 0)
        self.cycles, self.ffs, self.unresolved = 0, 0, 0
        self.diff: dict[str, int] = {}  # bits changed since the last clock edge
        self.dsps: list[list[tuple[str, int]]] = []  # each multiplier's output bits (code, bit)
        self.ports: list[tuple[str, list, list, str]] = []  # (event, pins at 1, pins at 0, cell name)
        self._resolve = lambda bit: _locate(bit, by_name)
        for cell in cells:
            self._add(cell)

    def _add(self, cell: Cell) -> None:
        kind = "ff" if cell.type.startswith("SB_DFF") else _OUTPUTS.get(cell.type, ("", ()))[0]
        if kind == "ff":
            self.ffs += 1
        outs = ("Q",) if cell.type.startswith("SB_DFF") else _OUTPUTS.get(cell.type, ("", ()))[1]
        located = [self._resolve(b) for p in outs for b in cell.ports.get(p, [])]
        if kind == "dsp":
            self.dsps.append([loc for loc in located if loc])
        elif kind:
            for loc in located:
                if loc is None:
                    self.unresolved += 1
                    continue
                code, bit = loc
                masks = self.masks.setdefault(code, {})
                masks[kind] = masks.get(kind, 0) | (1 << bit)
        for clock, ones, zeros, event in _PORTS.get(cell.type, ()):
            clk = [self._resolve(b) for b in cell.ports.get(clock, [])]
            if len(clk) != 1 or clk[0] is None or clk[0][0] != self.clock:
                continue  # a port on another clock or tied off: not counted
            self.ports.append(
                (event, [self._pin(cell, p) for p in ones], [self._pin(cell, p) for p in zeros], cell.name)
            )

    def _pin(self, cell: Cell, port: str):
        bits = cell.ports.get(port, ["0"])
        return bits[-1] if isinstance(bits[-1], str) else self._resolve(bits[-1]) or "x"

    def level(self, pin) -> int | None:
        if isinstance(pin, str):
            return {"0": 0, "1": 1}.get(pin)
        code, bit = pin
        if (self.unknown[code] >> bit) & 1:
            return None
        return (self.value[code] >> bit) & 1

    def edge(self) -> None:
        """A rising clock edge: count the enabled memory ports (values as they were before it)."""
        self.cycles += 1
        for event, ones, zeros, _ in self.ports:
            if all(self.level(p) == 1 for p in ones) and all(self.level(p) == 0 for p in zeros):
                self.counts[event] += 1

    def apply(self, batch: list[tuple[str, str]]) -> None:
        for code, text in batch:
            if code not in self.width:
                continue
            value, unknown = _value(text, self.width[code])
            old, old_unknown = self.value[code], self.unknown[code]
            diff = (old ^ value) & ~(old_unknown | unknown)
            if diff:
                for kind, mask in self.masks.get(code, {}).items():
                    self.counts[f"{kind}_toggles"] += (diff & mask).bit_count()
                self.diff[code] = self.diff.get(code, 0) | diff
            self.value[code], self.unknown[code] = value, unknown

    def dsp_cycle(self) -> None:
        """Once per cycle: a multiplier whose output bits changed since the last edge made a product."""
        for bits in self.dsps:
            if any((self.diff.get(code, 0) >> bit) & 1 for code, bit in bits):
                self.counts["dsp_ops"] += 1
        self.diff = {}


def _locate(bit: Bit, by_name: dict[str, tuple[str, _Var]]) -> tuple[str, int] | None:
    """``(VCD code, bit position from the right)`` of a netlist bit; None for a constant or a net not dumped."""
    if isinstance(bit, str):
        return None
    name, index = bit
    found = by_name.get(name) or by_name.get(name.rstrip())
    if found is None:
        return None
    code, var = found
    if index < 0:
        return code, 0
    pos = index - var.lsb if var.msb >= var.lsb else var.lsb - index
    return (code, pos) if 0 <= pos < var.width else None


def vcd_activity(vcd: Path, cells: list[Cell], *, top: str = "accelerator", clock: str = "clk") -> dict:
    """Replay ``vcd`` (Icarus, the top module dumped) and count the events of :mod:`codesign.hw.power`."""
    path = Path(vcd)
    if not path.is_file():
        raise CodesignError("VCD file not found", path=path)
    with path.open() as f:
        decls = _declarations(f, top)
        if not decls:
            raise CodesignError(f"VCD: no variables in a top scope named {top!r}", path=path)
        act = _Activity(cells, decls, clock)
        clk_code = act.clock
        for _time, batch in _changes(f):
            rises = (
                any(code == clk_code and value == "1" for code, value in batch)
                and act.level((clk_code, 0)) == 0
            )
            if rises:
                act.edge()
                act.dsp_cycle()
            act.apply(batch)
    return {
        **act.counts,
        "cycles": act.cycles,
        "ffs": act.ffs,
        "cells": len(cells),
        "unresolved_bits": act.unresolved,
        "memory_ports": len(act.ports),
        "multipliers": len(act.dsps),
    }
