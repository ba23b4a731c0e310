"""Static timing over a netlist mapped to the characterised cells, with their NLDM tables.

A net's load is the capacitance of the input pins it drives plus :data:`WIRE_PF_PER_SINK` per
driven pin (a stated wire-load model: no placement exists). Arrival times and transitions
propagate through the combinational cells in topological order, rise and fall apart, along the
arcs' unateness; the tables are interpolated (and extrapolated) bilinearly in input transition and
load. Start points are the primary inputs (arrival 0, transition :data:`INPUT_SLEW_NS`) and the
flip-flops' outputs (clock-to-Q with an ideal clock of transition :data:`CLOCK_SLEW_NS`); end
points are the flip-flops' data pins (plus their setup time) and the primary outputs. A net with
more than :data:`MAX_FANOUT` pins is timed through a balanced ``buf_1`` tree (its buffers are
counted in the result). Memory
macros count as primary ports: their read data start paths, their inputs end them. The
critical path is the latest end point; Fmax is its inverse. No clock skew, no wire delay.
"""

from __future__ import annotations

__all__ = ["CLOCK_SLEW_NS", "INPUT_SLEW_NS", "WIRE_PF_PER_SINK", "Netlist", "critical_path", "interpolate"]

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass, field

from codesign.asic.cells import PREFIX
from codesign.errors import CodesignError

MEMORY_CELL = "$__codesign_memory"
"""The cell type the memories keep in the mapped netlist (see :mod:`codesign.asic.synth`)."""
WIRE_PF_PER_SINK = 0.002
"""Wire-load model: 2 fF of wire per driven input pin (about 10-20 um of sky130 metal 1-2)."""
MAX_FANOUT = 8
"""A net with more input pins than this is timed as a balanced tree of ``buf_1`` of this fan-out,
as a placed flow buffers it; without a tree a drive-1 cell sees nanoseconds of load."""
INPUT_SLEW_NS = 0.1
"""Transition of the primary inputs."""
CLOCK_SLEW_NS = 0.1
"""Transition of the (ideal) clock at every flip-flop."""


def interpolate(table: list[list[float]], xs: list[float], ys: list[float], x: float, y: float) -> float:
    """Bilinear interpolation of ``table[i][j]`` over ``xs`` x ``ys``; linear extrapolation outside."""

    def bracket(axis: list[float], v: float) -> tuple[int, float]:
        i = min(max(bisect.bisect_right(axis, v) - 1, 0), len(axis) - 2)
        return i, (v - axis[i]) / (axis[i + 1] - axis[i])

    i, u = bracket(xs, x)
    j, w = bracket(ys, y)
    a, b = table[i][j], table[i][j + 1]
    c, d = table[i + 1][j], table[i + 1][j + 1]
    return (1 - u) * ((1 - w) * a + w * b) + u * ((1 - w) * c + w * d)


@dataclass
class Netlist:
    """A flat mapped netlist: cells with their type and pin -> net bit, and the module's ports."""

    cells: dict[str, tuple[str, dict[str, int | str]]]
    inputs: set[int | str] = field(default_factory=set)
    outputs: set[int | str] = field(default_factory=set)
    macro_params: dict[str, dict] = field(default_factory=dict)  # memory macros: name -> parameters

    @classmethod
    def from_yosys(cls, netlist: dict, top: str) -> Netlist:
        """From ``write_json``: one-bit cell connections, port bits of ``top``."""
        try:
            module = netlist["modules"][top]
        except KeyError:
            raise CodesignError(f"mapped netlist has no module {top!r}") from None
        cells, macros = {}, {}
        ins, outs = set(), set()
        for port in module["ports"].values():
            (ins if port["direction"] == "input" else outs).update(
                b for b in port["bits"] if isinstance(b, int)
            )
        for name, cell in module["cells"].items():
            if cell["type"] == MEMORY_CELL:
                # a memory macro: its read data start paths, everything it reads ends them
                macros[name] = cell.get("parameters", {})
                for pin, bits in cell["connections"].items():
                    real = (b for b in bits if isinstance(b, int))
                    (ins if pin.startswith("RD_DATA") else outs).update(real)
                continue
            conns = {pin: bits[0] for pin, bits in cell["connections"].items() if bits}
            cells[name] = (cell["type"], conns)
        return cls(cells, ins, outs, macros)


class _Trees:
    """The buffer trees of the nets with more than :data:`MAX_FANOUT` sinks (none without ``buf_1``)."""

    def __init__(self, sinks: dict, load: dict, records: dict[str, dict]) -> None:
        self.buf = records.get("buf_1")
        self.load = load
        self.levels: dict = {}  # bit -> [(buffers, load each drives)], from the driver's side
        if self.buf is None:
            return
        c_in = self.buf["pins"]["A"]["capacitance"] + WIRE_PF_PER_SINK
        for bit, n in sinks.items():
            if n <= MAX_FANOUT:
                continue
            counts = [math.ceil(n / MAX_FANOUT)]
            while counts[-1] > MAX_FANOUT:
                counts.append(math.ceil(counts[-1] / MAX_FANOUT))
            counts.reverse()  # top level first; the last level drives the sinks
            per = [
                min(MAX_FANOUT, math.ceil(nxt / cnt)) * c_in
                for cnt, nxt in zip(counts, counts[1:], strict=False)
            ]
            self.levels[bit] = list(zip(counts, [*per, load[bit] / counts[-1]], strict=True))

    @property
    def buffers(self) -> int:
        return sum(cnt for levels in self.levels.values() for cnt, _ in levels)

    def driver_load(self, bit) -> float:
        levels = self.levels.get(bit)
        if not levels:
            return self.load[bit]
        return levels[0][0] * (self.buf["pins"]["A"]["capacitance"] + WIRE_PF_PER_SINK)

    def through(self, bit, edge: str, t: float, slew: float) -> tuple[float, float]:
        """Arrival and transition at the sinks of ``bit`` for an edge leaving its driver at ``t``."""
        arc = self.buf["arcs"][0] if self.buf else None
        for _, load in self.levels.get(bit, []):
            xs, ys = self.buf["slews"], self.buf["loads"]
            t += interpolate(arc[f"cell_{edge}"], xs, ys, slew, load)
            slew = interpolate(arc[f"{edge}_transition"], xs, ys, slew, load)
        return t, slew


def _loads(net: Netlist, records: dict[str, dict]) -> tuple[dict, dict, dict]:
    """Per net bit: the driving (cell, pin), the total load in pF and the number of sinks."""
    driver, load, sinks = {}, defaultdict(float), defaultdict(int)
    for name, (ctype, conns) in net.cells.items():
        rec = records.get(ctype.removeprefix(PREFIX))
        if rec is None:
            raise CodesignError(
                f"mapped netlist uses cell {ctype}, which is not in the characterised library"
            )
        for pin, bit in conns.items():
            if pin in rec["outputs"]:
                driver[bit] = (name, pin)
            elif isinstance(bit, int):
                load[bit] += rec["pins"][pin]["capacitance"] + WIRE_PF_PER_SINK
                sinks[bit] += 1
    return driver, load, sinks


def _order(net: Netlist, records: dict[str, dict], driver: dict) -> list[str]:
    """Combinational cells in topological order (sequential cells are cut points)."""
    deps = {}
    for name, (ctype, conns) in net.cells.items():
        rec = records[ctype.removeprefix(PREFIX)]
        if rec["kind"] != "comb":
            continue
        deps[name] = {
            driver[b][0]
            for p, b in conns.items()
            if p in rec["inputs"]
            and b in driver
            and records[net.cells[driver[b][0]][0].removeprefix(PREFIX)]["kind"] == "comb"
        }
    order, state = [], {}
    for root in deps:
        stack = [(root, iter(deps[root]))]
        if state.get(root):
            continue
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[node] = 2
                order.append(node)
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
            elif state[nxt] == 1:
                raise CodesignError(f"combinational loop through cell {nxt}")
    return order


def _through(rec: dict, arc: dict, a_in: dict, load: float) -> dict:
    """(arrival, transition) of each output edge from the input's per-edge (arrival, transition)."""
    xs, ys = rec["slews"], rec["loads"]
    out = {}
    for edge in ("rise", "fall"):
        sources = {
            "positive_unate": [edge],
            "negative_unate": ["fall" if edge == "rise" else "rise"],
            "non_unate": ["rise", "fall"],
        }[arc["sense"]]
        best = None
        for src in sources:
            if src not in a_in:
                continue
            t_in, slew = a_in[src][:2]
            t = t_in + interpolate(arc[f"cell_{edge}"], xs, ys, slew, load)
            if best is None or t > best[0]:
                best = (t, interpolate(arc[f"{edge}_transition"], xs, ys, slew, load), src)
        if best is not None:
            out[edge] = best
    return out


def critical_path(net: Netlist, records: dict[str, dict]) -> dict:
    """The latest end point: delay (ns), Fmax (MHz), its kind and the cells along the path."""
    driver, load, sinks = _loads(net, records)
    trees = _Trees(sinks, load, records)
    arrival: dict[int | str, dict] = {}  # bit -> edge -> (time, transition, from-edge, from-bit, cell)
    for bit in net.inputs:
        arrival[bit] = {
            e: (*trees.through(bit, e, 0.0, INPUT_SLEW_NS), None, None, "input") for e in ("rise", "fall")
        }
    setups = {}
    for name, (ctype, conns) in net.cells.items():
        rec = records[ctype.removeprefix(PREFIX)]
        if rec["kind"] == "comb":
            continue
        arc = rec["arcs"][0]
        q = conns.get(arc["output"])
        if q is not None:
            res = _through(
                rec, arc, {e: (0.0, CLOCK_SLEW_NS) for e in ("rise", "fall")}, trees.driver_load(q)
            )
            arrival[q] = {e: (*trees.through(q, e, t, s), None, None, name) for e, (t, s, _) in res.items()}
        for pin in rec["inputs"]:
            if pin != arc["pin"]:
                setups[(name, pin)] = max(rec.get("setup", {"rise": 0.0, "fall": 0.0}).values())
    for name in _order(net, records, driver):
        ctype, conns = net.cells[name]
        rec = records[ctype.removeprefix(PREFIX)]
        for arc in rec["arcs"]:
            src_bit, dst = conns.get(arc["pin"]), conns.get(arc["output"])
            if dst is None or src_bit not in arrival:
                continue
            for edge, (t0, s0, from_edge) in _through(
                rec, arc, arrival[src_bit], trees.driver_load(dst)
            ).items():
                t, s = trees.through(dst, edge, t0, s0)
                if edge not in arrival.get(dst, {}) or t > arrival[dst][edge][0]:
                    arrival.setdefault(dst, {})[edge] = (t, s, from_edge, src_bit, name)
    return _worst(net, arrival, setups) | {"buffers": trees.buffers, "max_fanout": MAX_FANOUT}


def _worst(net: Netlist, arrival: dict, setups: dict) -> dict:
    ends = [((name, pin), setup) for (name, pin), setup in setups.items()]
    best = None
    for (name, pin), setup in ends:
        bit = net.cells[name][1].get(pin)
        for edge, entry in arrival.get(bit, {}).items():
            total = entry[0] + setup
            if best is None or total > best[0]:
                best = (total, bit, edge, f"{name}.{pin} (setup {setup:.3f} ns)")
    for bit in net.outputs:
        for edge, entry in arrival.get(bit, {}).items():
            if best is None or entry[0] > best[0]:
                best = (entry[0], bit, edge, "primary output")
    if best is None:
        return {"delay_ns": 0.0, "fmax_mhz": float("inf"), "endpoint": "none", "cells": []}
    total, bit, edge, endpoint = best
    path = []
    while bit is not None and bit in arrival and edge is not None:
        t, _, from_edge, from_bit, cell = arrival[bit][edge]
        path.append({"cell": cell, "edge": edge, "arrival_ns": round(t, 4)})
        bit, edge = from_bit, from_edge
    path.reverse()
    return {"delay_ns": total, "fmax_mhz": 1000.0 / total, "endpoint": endpoint, "cells": path}
