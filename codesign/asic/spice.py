"""Decks of many independent cell instances in one ngspice run, and the waveform arithmetic.

A characterisation deck holds one copy of a cell per stimulus (:class:`Instance`), each with its
own supply source (``vdd<k>``), its own input sources and its own output loads, so one transient
measures every grid point of a cell while the models are read once. The waveforms come back
through :func:`codesign.analog.ngspice.run_deck` (batch subprocess, timeout); the measurements
(50 % crossings, 10-90 % transitions, supply energy, input charge) are numpy on those tables.

Times are in ns and loads in pF at this interface; the deck itself is in SI units.
"""

from __future__ import annotations

__all__ = ["Edge", "Instance", "Waves", "cell_ports", "run_instances"]

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from codesign.analog.ngspice import control_block, run_deck
from codesign.asic.pdk import Corner, model_block
from codesign.errors import CodesignError

SLEW_LOW, SLEW_HIGH = 0.1, 0.9
"""Transition thresholds (fractions of the supply): slews are 10-90 %, delays 50-50 %."""

RAMP_PER_SLEW = 1.0 / (SLEW_HIGH - SLEW_LOW)
"""A linear input ramp of 10-90 % slew ``s`` lasts ``s * RAMP_PER_SLEW`` from rail to rail."""

OPTIONS = ".option scale=1e-6 gmin=1e-15 abstol=1e-12 reltol=1e-3 method=gear"
"""Switching runs. The cell netlists write widths in um (``w=650000u`` with scale 1e-6); gmin
1e-15 keeps the solver's conductances out of the pW leakages. Against reltol 1e-4 / abstol 1e-15
these moved an inv_1 delay by under 1 % and its internal energy (a few % of the supply energy)
by under 7 %, at a third of the time."""
STATIC_OPTIONS = ".option scale=1e-6 gmin=1e-15 abstol=1e-15 reltol=1e-4 method=gear"
"""Leakage runs: pA currents need abstol well below them."""


@dataclass(frozen=True)
class Edge:
    """One input transition: it starts at ``t`` ns, ramps for ``ramp`` ns, to ``level`` (0/1)."""

    t: float
    level: int
    ramp: float


@dataclass
class Instance:
    """One copy of the cell: a constant level (0/1) or a start level and edges per input pin."""

    tag: str
    levels: dict[str, int]
    edges: dict[str, list[Edge]] = field(default_factory=dict)
    loads: dict[str, float] = field(default_factory=dict)  # output pin -> pF


def cell_ports(spice: Path, subckt: str) -> list[str]:
    """The port order of ``.subckt SUBCKT`` in a cell netlist."""
    m = re.search(
        rf"^\.subckt\s+{re.escape(subckt)}\s+(.*)$", spice.read_text(), re.MULTILINE | re.IGNORECASE
    )
    if not m:
        raise CodesignError(f"no .subckt {subckt} in the cell netlist", path=spice)
    return m.group(1).split()


def _pwl(start: int, edges: list[Edge], vdd: float) -> str:
    points = [(0.0, start * vdd)]
    level = start
    for e in sorted(edges, key=lambda e: e.t):
        points += [(e.t, level * vdd), (e.t + e.ramp, e.level * vdd)]
        level = e.level
    return "PWL(" + " ".join(f"{t:.6g}n {v:.6g}" for t, v in points) + ")"


def _instance_lines(k: int, inst: Instance, ports: list[str], subckt: str, vdd: float) -> list[str]:
    supplies = {"VGND": "0", "VNB": "0", "VPB": f"vdd{k}", "VPWR": f"vdd{k}"}
    nodes = [supplies.get(p, f"n{k}_{p.lower()}") for p in ports]
    lines = [f"vdd{k} vdd{k} 0 {vdd:g}", f"X{k} {' '.join(nodes)} {subckt}"]
    for pin, level in inst.levels.items():
        src = _pwl(level, inst.edges[pin], vdd) if inst.edges.get(pin) else f"{level * vdd:g}"
        lines.append(f"v{k}_{pin.lower()} n{k}_{pin.lower()} 0 {src}")
    for pin, load in inst.loads.items():
        if load > 0:
            lines.append(f"c{k}_{pin.lower()} n{k}_{pin.lower()} 0 {load:.6g}p")
    return lines


@dataclass
class Waves:
    """The transient of a deck: time in ns and each instance's pin voltages, supply and source currents."""

    t: np.ndarray
    table: dict[str, np.ndarray]
    vdd: float

    def v(self, k: int, pin: str) -> np.ndarray:
        return self.table[f"v(n{k}_{pin.lower()})"]

    def supply_energy(self, k: int, t0: float, t1: float) -> float:
        """Energy in pJ that ``vdd<k>`` delivers between ``t0`` and ``t1`` ns."""
        return self.vdd * _integral(self.t, -self.table[f"i(vdd{k})"], t0, t1) * 1e-9 * 1e12

    def source_charge(self, k: int, pin: str, t0: float, t1: float) -> float:
        """Charge in pC that the source of input ``pin`` pushes into the cell between ``t0`` and ``t1``."""
        return _integral(self.t, -self.table[f"i(v{k}_{pin.lower()})"], t0, t1) * 1e-9 * 1e12

    def final_power(self, k: int) -> float:
        """Power in W that ``vdd<k>`` delivers at the last time point."""
        return float(-self.table[f"i(vdd{k})"][-1]) * self.vdd

    def crossing(self, k: int, pin: str, frac: float, rising: bool, after: float) -> float:
        """First time (ns) after ``after`` at which ``pin`` crosses ``frac`` of the supply going up (down)."""
        return crossing(self.t, self.v(k, pin) / self.vdd, frac, rising, after)


def _integral(t: np.ndarray, y: np.ndarray, t0: float, t1: float) -> float:
    grid = np.union1d(t[(t > t0) & (t < t1)], [t0, t1])
    return float(np.trapezoid(np.interp(grid, t, y), grid))


def crossing(t: np.ndarray, v: np.ndarray, level: float, rising: bool, after: float) -> float:
    """First time after ``after`` at which ``v`` crosses ``level`` in the given direction (NaN if none)."""
    sign = 1.0 if rising else -1.0
    d = sign * (v - level)
    idx = np.nonzero((d[:-1] < 0) & (d[1:] >= 0) & (t[1:] > after))[0]
    if idx.size == 0:
        return float("nan")
    i = int(idx[0])
    return float(t[i] + (t[i + 1] - t[i]) * (-d[i]) / (d[i + 1] - d[i]))


def deck_text(
    subckt: str, spice: Path, instances: list[Instance], c: Corner, stop_ns: float, step_ns: float
) -> tuple[str, list[str]]:
    """The deck and the vectors it writes: a transient to ``stop_ns``; with ``step_ns`` 0 the
    solver picks its steps and only the supply currents are written (a leakage run)."""
    ports = cell_ports(spice, subckt)
    lines = [f"* {subckt}: {len(instances)} instances, corner {c.label}", model_block(c).rstrip()]
    lines += [f'.include "{spice}"', OPTIONS if step_ns else STATIC_OPTIONS, f".temp {c.temp_c:g}"]
    vectors = []
    for k, inst in enumerate(instances):
        lines += _instance_lines(k, inst, ports, subckt, c.vdd)
        vectors.append(f"i(vdd{k})")
        if step_ns:
            vectors += [f"i(v{k}_{p.lower()})" for p in inst.levels]
            vectors += [f"v(n{k}_{p.lower()})" for p in [*inst.levels, *inst.loads]]
    analysis = (
        f"tran {step_ns:g}n {stop_ns:g}n 0 {step_ns:g}n"
        if step_ns
        else f"tran {stop_ns / 1000:g}n {stop_ns:g}n"
    )
    control = control_block([(analysis, "tran", vectors)])
    return "\n".join(lines) + "\n" + control + ".end\n", vectors


def run_instances(
    subckt: str,
    spice: Path,
    instances: list[Instance],
    c: Corner,
    *,
    stop_ns: float,
    step_ns: float = 0.02,
    timeout_s: float = 900.0,
    keep_dir: Path | None = None,
    name: str = "",
) -> Waves:
    """Simulate every instance in one transient to ``stop_ns`` (see :func:`deck_text` for ``step_ns`` 0)."""
    deck, _ = deck_text(subckt, spice, instances, c, stop_ns, step_ns)
    res = run_deck(
        deck,
        outputs=["tran"],
        timeout=timeout_s,
        name=subckt.lower() + (f"_{name}" if name else ""),
        keep_dir=keep_dir,
        tran_stop={"tran": stop_ns * 1e-9},
    )
    table = res.tables["tran"]
    return Waves(table["scale"] * 1e9, table, c.vdd)
