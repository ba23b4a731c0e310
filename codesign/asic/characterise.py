"""Characterise one sky130_fd_sc_hd cell in ngspice: NLDM timing, transition energy, pin
capacitance and leakage per state, into a JSON-ready dict.

One deck per cell (:mod:`codesign.asic.spice`) holds every stimulus as its own copy of the cell:

* **arcs** (combinational, latch ``D -> Q``, clock gate ``CLK -> GCLK``): the related pin rises
  at :data:`T_RISE` and falls at :data:`T_FALL` with the grid's input slew, the side inputs at a
  sensitising value (:func:`codesign.asic.cells.sensitising`), the output loaded by the grid's
  capacitance. Delay is 50 % in to 50 % out, transition 10-90 %, energy what the cell's supply
  delivers from the input edge to the next edge (pJ).
* **clocked arcs** (flip-flop and latch ``CLK/GATE -> Q``): the clock loads 0, the data rises,
  the clock rises (Q rises), falls, the data falls, the clock rises (Q falls): the clock edges
  take the grid's slew. The same copy gives the clock-pin energy of a falling clock edge and the
  data-pin energy of a data edge that changes no output.
* **clock energy without output change** (flip-flop with constant data, clock gate with GATE low).
* **setup** (flip-flop): data edges ever closer to the clock edge; the setup time is the last
  offset at which clock-to-Q grows by less than 10 %.
* **leakage**: one copy per input state (and stored state), static for the last half of the run.

Internal energy, as in Liberty: for an output rise the supply energy less ``C_load * VDD^2`` (the
energy drawn for the load, half of which the load later dissipates on its fall), for an output
fall the supply energy itself; their sum over a rise and a fall is the cycle's energy less the
load's ``C * VDD^2``, which a toggle-based estimate adds as ``C * VDD^2 / 2`` per transition.
Pin capacitance is the charge the input source delivers over a rail-to-rail edge divided by VDD
(Miller charge included), the mean of the rising and falling edge at the middle grid point.
"""

from __future__ import annotations

__all__ = ["LOADS_PF", "SLEWS_NS", "characterise_cell"]

import itertools
import math
from pathlib import Path

from codesign.asic.cells import CELLS, CellSpec, sensitising, truth_table, unateness
from codesign.asic.pdk import Corner, cell_area, cell_file
from codesign.asic.spice import RAMP_PER_SLEW, SLEW_HIGH, SLEW_LOW, Edge, Instance, Waves, run_instances
from codesign.errors import CodesignError

SLEWS_NS = (0.04, 0.2, 0.8)
"""Input transitions (10-90 %) of the NLDM grid, ns."""
LOADS_PF = (0.002, 0.008, 0.032)
"""Output loads of the NLDM grid, pF (about 1, 4 and 16 drive-1 inputs)."""
FAST_RAMP = 0.05
"""Rail-to-rail ramp (ns) of the edges that only set a state up."""
T_RISE, T_FALL, T_END = 1.0, 6.0, 11.0
"""Combinational arcs: the related input rises at T_RISE, falls at T_FALL; the run ends at T_END (ns)."""
SEQ = {
    "load_rise": 0.3,
    "load_fall": 1.0,
    "d1": 1.5,
    "c1": 3.0,
    "c2": 6.0,
    "d2": 7.5,
    "c3": 9.0,
    "c4": 12.0,
    "end": 15.0,
}
"""Clocked stimulus (ns): a state-loading clock pulse, data up, clock up/down, data down, clock up/down."""
SETUP_OFFSETS = (0.4, 0.25, 0.15, 0.1, 0.07, 0.05, 0.03, 0.01, -0.01, -0.03)
"""Data-to-clock offsets (ns, 50 % to 50 %) tried for the setup time, largest first."""
LEAK_STOP_NS = 1e6
"""Leakage is the supply current 1 ms after the state was set: a node that a pass transistor
left a threshold short of its rail creeps there in subthreshold with a current that falls as
1/t (still 0.4-0.8 nW 40 ns after a dfxtp_1 data edge), so the current must be read late."""


def _ramp(slew: float) -> float:
    return slew * RAMP_PER_SLEW


def _grid():
    return [(i, j) for i in range(len(SLEWS_NS)) for j in range(len(LOADS_PF))]


def _comb_instances(spec: CellSpec) -> tuple[list[Instance], list[dict]]:
    insts, arcs = [], []
    for out in spec.outputs:
        for pin in spec.inputs:
            side = sensitising(spec, pin, out)
            if side is None:
                continue
            arcs.append({"pin": pin, "output": out, "when": side, "sense": unateness(spec, pin, out)})
            for i, j in _grid():
                ramp = _ramp(SLEWS_NS[i])
                edges = {pin: [Edge(T_RISE, 1, ramp), Edge(T_FALL, 0, ramp)]}
                loads = {o: (LOADS_PF[j] if o == out else 0.0) for o in spec.outputs}
                insts.append(Instance(f"arc:{pin}:{out}:{i}:{j}", side | {pin: 0}, edges, loads))
    return insts, arcs


def _arc_point(
    w: Waves, k: int, pin: str, out: str, rising_in: bool, slew: float, load: float, out_before: int
):
    """Delay, transition and supply energy of the output edge caused by one input edge."""
    t0 = T_RISE if rising_in else T_FALL
    t1 = T_FALL if rising_in else T_END
    ramp = _ramp(slew)
    out_rising = out_before == 0
    t50 = w.crossing(k, out, 0.5, out_rising, t0)
    lo, hi = (SLEW_LOW, SLEW_HIGH) if out_rising else (SLEW_HIGH, SLEW_LOW)
    tr = w.crossing(k, out, hi, out_rising, t0) - w.crossing(k, out, lo, out_rising, t0)
    energy = w.supply_energy(k, t0, t1)
    if math.isnan(t50) or math.isnan(tr):
        raise CodesignError(f"output {out} did not switch on a {'rising' if rising_in else 'falling'} {pin}")
    return out_rising, t50 - (t0 + ramp / 2), tr, energy


def _comb_arcs(spec: CellSpec, w: Waves, insts: list[Instance], arcs: list[dict], vdd: float) -> dict:
    pins: dict[str, list[float]] = {p: [] for p in spec.inputs}
    index = {inst.tag: k for k, inst in enumerate(insts)}
    n = len(SLEWS_NS)
    for arc in arcs:
        pin, out = arc["pin"], arc["output"]
        lo = arc["when"] | {pin: 0}
        before = truth_table(spec, out)[tuple(lo[p] for p in spec.inputs)]
        tables = {key: [[0.0] * len(LOADS_PF) for _ in range(n)] for key in _TABLES}
        for i, j in _grid():
            k = index[f"arc:{pin}:{out}:{i}:{j}"]
            for rising_in, prev in ((True, before), (False, 1 - before)):
                up, delay, tr, energy = _arc_point(w, k, pin, out, rising_in, SLEWS_NS[i], LOADS_PF[j], prev)
                edge = "rise" if up else "fall"
                tables[f"cell_{edge}"][i][j] = delay
                tables[f"{edge}_transition"][i][j] = tr
                tables[f"{edge}_energy"][i][j] = energy
                tables[f"{edge}_power"][i][j] = energy - (LOADS_PF[j] * vdd**2 if up else 0.0)
            if (i, j) == (n // 2, len(LOADS_PF) // 2):
                q_up = w.source_charge(k, pin, T_RISE, T_FALL)
                q_down = -w.source_charge(k, pin, T_FALL, T_END)
                pins[pin].append((q_up + q_down) / 2 / vdd)
        arc.update(tables)
    return {p: {"capacitance": sum(v) / len(v)} for p, v in pins.items() if v}


_TABLES = (
    "cell_rise",
    "cell_fall",
    "rise_transition",
    "fall_transition",
    "rise_energy",
    "fall_energy",
    "rise_power",
    "fall_power",
)


def _seq_edges(clock_ramp: float, data_up: bool = True) -> tuple[dict[str, list[Edge]], int]:
    s = SEQ
    clock = [Edge(s["load_rise"], 1, FAST_RAMP), Edge(s["load_fall"], 0, FAST_RAMP)]
    clock += [Edge(s["c1"], 1, clock_ramp), Edge(s["c2"], 0, clock_ramp)]
    clock += [Edge(s["c3"], 1, clock_ramp), Edge(s["c4"], 0, clock_ramp)]
    start = 0 if data_up else 1
    data = [Edge(s["d1"], 1 - start, FAST_RAMP), Edge(s["d2"], start, FAST_RAMP)]
    return {"clock": clock, "data": data}, start


def _seq_instances(spec: CellSpec) -> list[Instance]:
    c, d, q = spec.clock, spec.data, spec.state_out
    mid_j = len(LOADS_PF) // 2
    insts = []
    for i, j in _grid():
        edges, start = _seq_edges(_ramp(SLEWS_NS[i]))
        insts.append(
            Instance(
                f"clk:{i}:{j}", {c: 0, d: start}, {c: edges["clock"], d: edges["data"]}, {q: LOADS_PF[j]}
            )
        )
    for i in range(len(SLEWS_NS)):
        edges, _ = _seq_edges(_ramp(SLEWS_NS[i]))
        # flop and latch: constant data 0 (the output stays low); clock gate: GATE low (gated)
        insts.append(Instance(f"clkonly:{i}", {c: 0, d: 0}, {c: edges["clock"]}, {q: LOADS_PF[mid_j]}))
    if spec.kind == "latch":  # transparent D -> Q with GATE high
        for i, j in _grid():
            ramp = _ramp(SLEWS_NS[i])
            edges = {d: [Edge(T_RISE, 1, ramp), Edge(T_FALL, 0, ramp)]}
            insts.append(Instance(f"arc:{d}:{q}:{i}:{j}", {d: 0, c: 1}, edges, {q: LOADS_PF[j]}))
    return insts


def _setup_instances(spec: CellSpec) -> list[Instance]:
    c, d, q = spec.clock, spec.data, spec.state_out
    ramp = _ramp(SLEWS_NS[len(SLEWS_NS) // 2])
    t_c50 = SEQ["c1"] + ramp / 2
    out = []
    for up in (True, False):
        start = 0 if up else 1
        for n, off in enumerate(SETUP_OFFSETS):
            clock = [Edge(SEQ["load_rise"], 1, FAST_RAMP), Edge(SEQ["load_fall"], 0, FAST_RAMP)]
            clock += [Edge(SEQ["c1"], 1, ramp), Edge(SEQ["c2"], 0, ramp)]
            data = [Edge(t_c50 - off - FAST_RAMP / 2, 1 - start, FAST_RAMP)]
            tag = f"setup:{'rise' if up else 'fall'}:{n}"
            out.append(
                Instance(tag, {c: 0, d: start}, {c: clock, d: data}, {q: LOADS_PF[len(LOADS_PF) // 2]})
            )
    return out


def _leak_states(spec: CellSpec) -> list[tuple[dict[str, int], int | None]]:
    """(input levels, stored state) of every static state of the cell (None: combinational).

    A transparent latch (latch with GATE high, clock gate with CLK low) stores its input."""
    if spec.kind == "comb":
        return [
            (dict(zip(spec.inputs, bits, strict=True)), None)
            for bits in itertools.product((0, 1), repeat=len(spec.inputs))
        ]
    states = set()
    for cf, df, q in itertools.product((0, 1), repeat=3):
        transparent = (spec.kind == "latch" and cf) or (spec.kind == "clock_gate" and not cf)
        states.add((cf, df, df if transparent else q))
    return [({spec.clock: cf, spec.data: df}, stored) for cf, df, stored in sorted(states)]


def _leak_instances(spec: CellSpec) -> list[Instance]:
    """One copy per static state. A combinational cell's inputs are constant; a sequential cell
    first loads its state: a clock pulse with the data at the state's value, the final clock
    level, then the final data level (a transparent latch takes it)."""
    out = []
    for n, (levels, stored) in enumerate(_leak_states(spec)):
        if stored is None:
            out.append(Instance(f"leak:{n}", dict(levels)))
            continue
        c, d = spec.clock, spec.data
        clock = [Edge(SEQ["load_rise"], 1, FAST_RAMP), Edge(SEQ["load_fall"], 0, FAST_RAMP)]
        if levels[c]:
            clock.append(Edge(2.0, 1, FAST_RAMP))
        data = [Edge(2.5, levels[d], FAST_RAMP)] if levels[d] != stored else []
        out.append(Instance(f"leak:{n}", {c: 0, d: stored}, {c: clock, d: data}))
    return out


def _leakage(spec: CellSpec, w: Waves, insts: list[Instance]) -> list[dict]:
    index = {inst.tag: k for k, inst in enumerate(insts)}
    rows = []
    for n, (levels, stored) in enumerate(_leak_states(spec)):
        row = {"inputs": levels, "power": w.final_power(index[f"leak:{n}"])}
        if stored is not None:
            row["state"] = stored
        rows.append(row)
    return rows


def _clocked_arc(spec: CellSpec, w: Waves, index: dict[str, int], hidden: dict) -> dict:
    """The clock (GATE) -> output arc of a flop, latch or clock gate over the grid."""
    c, q = spec.clock, spec.state_out
    n = len(SLEWS_NS)
    tables = {key: [[0.0] * len(LOADS_PF) for _ in range(n)] for key in _TABLES}
    # flop / latch: Q rises after c1 and falls after c3; clock gate: GCLK follows c1 up and c2 down
    edges = (
        (("c1", "c2", True), ("c2", "d2", False))
        if spec.kind == "clock_gate"
        else (("c1", "c2", True), ("c3", "c4", False))
    )
    for i, j in _grid():
        k = index[f"clk:{i}:{j}"]
        ramp = _ramp(SLEWS_NS[i])
        for start, stop, up in edges:
            t0, t1 = SEQ[start], SEQ[stop]
            clock_up = start in ("c1", "c3")
            t50 = w.crossing(k, q, 0.5, up, t0)
            lo, hi = (SLEW_LOW, SLEW_HIGH) if up else (SLEW_HIGH, SLEW_LOW)
            tr = w.crossing(k, q, hi, up, t0) - w.crossing(k, q, lo, up, t0)
            if math.isnan(t50) or math.isnan(tr):
                raise CodesignError(
                    f"{spec.name}: {q} did not {'rise' if up else 'fall'} after the {c} edge at {t0} ns"
                )
            edge = "rise" if up else "fall"
            energy = w.supply_energy(k, t0, t1)
            clock_hidden = hidden[f"{'rise' if clock_up else 'fall'}_energy_by_slew"][i]
            tables[f"cell_{edge}"][i][j] = t50 - (t0 + ramp / 2)
            tables[f"{edge}_transition"][i][j] = tr
            tables[f"{edge}_energy"][i][j] = energy
            tables[f"{edge}_power"][i][j] = energy - clock_hidden - (LOADS_PF[j] * w.vdd**2 if up else 0.0)
    sense = "positive_unate" if spec.kind == "clock_gate" else "non_unate"
    kind = {"flop": "rising_edge", "latch": "rising_edge", "clock_gate": "combinational"}[spec.kind]
    return {"pin": c, "output": q, "when": {}, "sense": sense, "type": kind} | tables


def _hidden(spec: CellSpec, w: Waves, index: dict[str, int]) -> dict[str, dict]:
    """Energy per clock edge that changes no output (by clock slew) and per data edge, and the pins' capacitance."""
    c, d = spec.clock, spec.data
    rise, fall, cap_c = [], [], []
    for i in range(len(SLEWS_NS)):
        k = index[f"clkonly:{i}"]
        rise.append((w.supply_energy(k, SEQ["c1"], SEQ["c2"]) + w.supply_energy(k, SEQ["c3"], SEQ["c4"])) / 2)
        fall.append(
            (w.supply_energy(k, SEQ["c2"], SEQ["d2"]) + w.supply_energy(k, SEQ["c4"], SEQ["end"])) / 2
        )
        q_up = w.source_charge(k, c, SEQ["c1"], SEQ["c2"])
        q_down = -w.source_charge(k, c, SEQ["c2"], SEQ["d2"])
        cap_c.append((q_up + q_down) / 2 / w.vdd)
    mid = len(SLEWS_NS) // 2
    k = index[f"clk:{mid}:{len(LOADS_PF) // 2}"]
    d_rise = w.supply_energy(k, SEQ["d1"], SEQ["c1"])
    d_fall = w.supply_energy(k, SEQ["d2"], SEQ["c3"])
    q_up = w.source_charge(k, d, SEQ["d1"], SEQ["c1"])
    q_down = -w.source_charge(k, d, SEQ["d2"], SEQ["c3"])
    return {
        c: {
            "capacitance": cap_c[mid],
            "rise_energy": rise[mid],
            "fall_energy": fall[mid],
            "rise_energy_by_slew": rise,
            "fall_energy_by_slew": fall,
        },
        d: {"capacitance": (q_up + q_down) / 2 / w.vdd, "rise_energy": d_rise, "fall_energy": d_fall},
    }


def _setup(spec: CellSpec, w: Waves, index: dict[str, int], arc: dict) -> dict[str, float]:
    """Setup time (ns) for a rising and a falling data edge: the smallest offset, scanning down
    from the largest, at which clock-to-Q stays within 110 % of its value with a settled input."""
    mid_i, mid_j = len(SLEWS_NS) // 2, len(LOADS_PF) // 2
    t_c50 = SEQ["c1"] + _ramp(SLEWS_NS[mid_i]) / 2
    out = {}
    for edge in ("rise", "fall"):
        nominal = arc[f"cell_{edge}"][mid_i][mid_j]
        passed = None
        for n, off in enumerate(SETUP_OFFSETS):
            t50 = w.crossing(index[f"setup:{edge}:{n}"], spec.state_out, 0.5, edge == "rise", SEQ["c1"])
            if math.isnan(t50) or t50 - t_c50 > 1.1 * nominal:
                break
            passed = off
        if passed is None:
            raise CodesignError(
                f"{spec.name}: no data-to-clock offset up to {SETUP_OFFSETS[0]} ns latched the data"
            )
        out[edge] = passed
    return out


def _seq_results(spec: CellSpec, w: Waves, insts: list[Instance], vdd: float) -> dict:
    index = {inst.tag: k for k, inst in enumerate(insts)}
    hidden = _hidden(spec, w, index)
    arcs = [_clocked_arc(spec, w, index, hidden[spec.clock])]
    pins = hidden
    if spec.kind == "latch":
        transparent = {
            "pin": spec.data,
            "output": spec.state_out,
            "when": {spec.clock: 1},
            "sense": "positive_unate",
        }
        _comb_arcs(spec_with_output(spec), w, insts, [transparent], vdd)
        arcs.append(transparent)
    return {"arcs": arcs, "pins": pins}


def spec_with_output(spec: CellSpec) -> CellSpec:
    """A latch seen as the combinational cell ``Q = D`` while GATE is high (its transparent arc)."""
    return CellSpec(spec.name, "comb", spec.inputs, {spec.state_out: spec.data})


def characterise_cell(name: str, corner: Corner, keep_dir: Path | None = None) -> dict:
    """Every measurement of cell ``name`` at ``corner``, as a JSON-ready dict (times ns, loads and
    capacitances pF, energies pJ, leakage W)."""
    spec = CELLS[name]
    spice = cell_file(name, ".spice")
    if spec.kind == "comb":
        insts, arcs = _comb_instances(spec)
        stop = T_END
    else:
        insts, arcs = _seq_instances(spec), []
        stop = SEQ["end"]
    w = run_instances(spec.lib_name, spice, insts, corner, stop_ns=stop, keep_dir=keep_dir)
    if spec.kind == "flop":
        setup_insts = _setup_instances(spec)
        setup_w = run_instances(
            spec.lib_name, spice, setup_insts, corner, stop_ns=SEQ["c2"], keep_dir=keep_dir, name="setup"
        )
    leak_insts = _leak_instances(spec)
    leak_w = run_instances(
        spec.lib_name,
        spice,
        leak_insts,
        corner,
        stop_ns=LEAK_STOP_NS,
        step_ns=0.0,
        keep_dir=keep_dir,
        name="leak",
    )
    out = {
        "cell": name,
        "kind": spec.kind,
        "area": cell_area(name),
        "corner": {
            "name": corner.name,
            "process": corner.process,
            "vdd": corner.vdd,
            "temp_c": corner.temp_c,
        },
        "slews": list(SLEWS_NS),
        "loads": list(LOADS_PF),
        "inputs": list(spec.inputs),
        "outputs": {o: spec.outputs.get(o, "") for o in spec.output_pins},
    }
    if spec.kind == "comb":
        out["pins"] = _comb_arcs(spec, w, insts, arcs, corner.vdd)
        out["arcs"] = arcs
    else:
        out |= _seq_results(spec, w, insts, corner.vdd)
        if spec.kind == "flop":
            out["setup"] = _setup(
                spec, setup_w, {i.tag: k for k, i in enumerate(setup_insts)}, out["arcs"][0]
            )
    out["leakage"] = _leakage(spec, leak_w, leak_insts)
    out["leakage_mean"] = sum(r["power"] for r in out["leakage"]) / len(out["leakage"])
    return out
