"""Check the characterised tables against direct ngspice runs of the same cells in another circuit.

For a combinational cell: a chain. An ideal ramp drives copy 1, copy 1 drives copy 2 (the cell
under test, on its own supply), copy 2 drives the related pin of three more copies (fan-out 3),
side inputs at the first arc's sensitising values. Copy 2's input transition (set by copy 1, not
by a ramp), its delay, output transition and supply energy per edge are measured and compared with
the tables interpolated at that transition and at three times the related pin's capacitance
(the load is real gate capacitance, not a linear capacitor). The chain's leakage in both input
states (its operating point: a combinational chain has one) is compared with the sum of each
copy's characterised leakage in its state.

For the flip-flop: the clock reaches the flop under test through two ``inv_1`` (a real clock
edge), its output drives the data pins of three more flops; clock-to-Q delay, output transition
and supply energy per clocked edge are compared the same way.
"""

from __future__ import annotations

__all__ = ["checks", "failures", "validate_cell", "validation_table"]

import math

from codesign.analog.ngspice import control_block, run_deck
from codesign.asic import characterise as ch
from codesign.asic.cells import CELLS, evaluate
from codesign.asic.pdk import Corner, cell_file, model_block
from codesign.asic.spice import (
    OPTIONS,
    RAMP_PER_SLEW,
    SLEW_HIGH,
    SLEW_LOW,
    STATIC_OPTIONS,
    Waves,
    cell_ports,
    crossing,
)
from codesign.asic.sta import interpolate

FANOUT = 3
DRIVE_SLEW_NS = 0.1
"""Transition of the ideal ramp at the head of the chain."""


def _inst(name: str, cell: str, pins: dict[str, str], supply: str) -> str:
    spec = CELLS[cell]
    ports = cell_ports(cell_file(cell, ".spice"), spec.lib_name)
    fixed = {"VGND": "0", "VNB": "0", "VPB": supply, "VPWR": supply}
    return f"X{name} " + " ".join(fixed.get(p) or pins[p] for p in ports) + f" {spec.lib_name}"


def _deck(
    c: Corner, cells: set[str], body: list[str], analysis: str, vectors: list[str], static: bool
) -> str:
    lines = ["* codesign.asic validation", model_block(c).rstrip()]
    lines += [f'.include "{cell_file(n, ".spice")}"' for n in sorted(cells)]
    lines += [STATIC_OPTIONS if static else OPTIONS, f".temp {c.temp_c:g}"]
    return "\n".join(lines + body) + "\n" + control_block([(analysis, "tran", vectors)]) + ".end\n"


def _chain(rec: dict, vdd: float, head: str) -> tuple[list[str], list[str]]:
    """Netlist lines of the fan-out chain (the head driven by node ``head``) and the copies' names."""
    arc = rec["arcs"][0]
    pin, out = arc["pin"], arc["output"]
    side = {p: ("hi" if v else "lo") for p, v in arc["when"].items()}
    others = [o for o in rec["outputs"] if o != out]
    lines = [f"vhi hi 0 {vdd:g}", "vlo lo 0 0"] + [f"vdd{k} vdd{k} 0 {vdd:g}" for k in (1, 2, 3)]
    names = ["s1", "s2"] + [f"f{k}" for k in range(FANOUT)]
    for k, name in enumerate(names):
        src = head if k == 0 else ("n1" if k == 1 else "n2")
        dst = {0: "n1", 1: "n2"}.get(k, f"nf{k}")
        pins = side | {pin: src, out: dst} | {o: f"{name}_{o.lower()}" for o in others}
        lines.append(_inst(name, rec["cell"], pins, f"vdd{min(k + 1, 3)}"))
    return lines, names


def _edge_check(rec: dict, w: Waves, t0: float, t1: float, load: float) -> dict:
    """Measured and predicted delay, transition and energy of copy 2's output edge in [t0, t1)."""
    arc = rec["arcs"][0]
    t, vin, vout = w.t, w.table["v(n1)"] / w.vdd, w.table["v(n2)"] / w.vdd
    in_up = vin[t.searchsorted(t1 - 0.05)] > 0.5
    out_up = vout[t.searchsorted(t1 - 0.05)] > 0.5
    t_in = crossing(t, vin, 0.5, in_up, t0)
    lo, hi = (SLEW_LOW, SLEW_HIGH) if in_up else (SLEW_HIGH, SLEW_LOW)
    slew = crossing(t, vin, hi, in_up, t0) - crossing(t, vin, lo, in_up, t0)
    lo, hi = (SLEW_LOW, SLEW_HIGH) if out_up else (SLEW_HIGH, SLEW_LOW)
    meas_tr = crossing(t, vout, hi, out_up, t0) - crossing(t, vout, lo, out_up, t0)
    meas_delay = crossing(t, vout, 0.5, out_up, t0) - t_in
    meas_energy = w.supply_energy(2, t0, t1)
    edge = "rise" if out_up else "fall"
    xs, ys = rec["slews"], rec["loads"]
    pred = {
        "delay": interpolate(arc[f"cell_{edge}"], xs, ys, slew, load),
        "transition": interpolate(arc[f"{edge}_transition"], xs, ys, slew, load),
        "energy": interpolate(arc[f"{edge}_energy"], xs, ys, slew, load),
    }
    meas = {"delay": meas_delay, "transition": meas_tr, "energy": meas_energy}
    return {"edge": edge, "input_slew": slew, "load": load, "measured": meas, "predicted": pred}


def _comb(rec: dict, c: Corner) -> dict:
    arc = rec["arcs"][0]
    load = FANOUT * rec["pins"][arc["pin"]]["capacitance"]
    ramp = DRIVE_SLEW_NS * RAMP_PER_SLEW
    body, _ = _chain(rec, c.vdd, "a")
    body.append(
        f"va a 0 PWL(0 0 {ch.T_RISE}n 0 {ch.T_RISE + ramp}n {c.vdd:g} {ch.T_FALL}n {c.vdd:g} {ch.T_FALL + ramp}n 0)"
    )
    vecs = ["v(n1)", "v(n2)", "i(vdd2)"]
    deck = _deck(c, {rec["cell"]}, body, f"tran 0.02n {ch.T_END}n 0 0.02n", vecs, static=False)
    res = run_deck(deck, outputs=["tran"], timeout=900, name=f"validate_{rec['cell']}")
    tab = res.tables["tran"]
    w = Waves(tab["scale"] * 1e9, tab, c.vdd)
    edges = [_edge_check(rec, w, ch.T_RISE, ch.T_FALL, load), _edge_check(rec, w, ch.T_FALL, ch.T_END, load)]
    return {"cell": rec["cell"], "edges": edges, "leakage": _comb_leakage(rec, c)}


def _comb_leakage(rec: dict, c: Corner) -> list[dict]:
    spec = CELLS[rec["cell"]]
    arc = rec["arcs"][0]
    rows = []
    for level in (0, 1):
        body, names = _chain(rec, c.vdd, "lvl")
        body.append(f"vl lvl 0 {level * c.vdd:g}")
        deck = _deck(
            c,
            {rec["cell"]},
            body,
            "op",
            ["i(vdd1)", "i(vdd2)", "i(vdd3)"],
            True,
        )
        tab = run_deck(deck, outputs=["tran"], timeout=900, name=f"leak_{rec['cell']}").tables["tran"]
        measured = -sum(tab[f"i(vdd{k})"][0] for k in (1, 2, 3)) * c.vdd
        predicted, v = 0.0, level
        by_state = {tuple(r["inputs"].values()): r["power"] for r in rec["leakage"]}
        for k, _ in enumerate(names):
            inputs = arc["when"] | {arc["pin"]: v}
            predicted += by_state[tuple(inputs[p] for p in spec.inputs)]
            if k < 2:  # the chain's first two copies drive the next stage
                v = evaluate(spec.outputs[arc["output"]], inputs)
        rows.append({"input": level, "measured": measured, "predicted": predicted})
    return rows


def _flop(rec: dict, c: Corner) -> dict:
    """The flip-flop clocked through two ``inv_1``, its Q on the D pins of three more flops."""
    s, vdd = ch.SEQ, c.vdd
    ramp = DRIVE_SLEW_NS * RAMP_PER_SLEW
    clock = [(s["load_rise"], 1), (s["load_fall"], 0), (s["c1"], 1), (s["c2"], 0), (s["c3"], 1), (s["c4"], 0)]
    pts, level = ["0 0"], 0
    for t, new in clock:
        pts += [f"{t}n {level * vdd:g}", f"{t + ramp}n {new * vdd:g}"]
        level = new
    body = [f"vdd{k} vdd{k} 0 {vdd:g}" for k in (1, 2, 3)] + ["vlo lo 0 0", f"vclk a 0 PWL({' '.join(pts)})"]
    d = f"vd d 0 PWL(0 0 {s['d1']}n 0 {s['d1'] + 0.05}n {vdd:g} {s['d2']}n {vdd:g} {s['d2'] + 0.05}n 0)"
    body += [
        d,
        _inst("i1", "inv_1", {"A": "a", "Y": "ckb"}, "vdd1"),
        _inst("i2", "inv_1", {"A": "ckb", "Y": "n1"}, "vdd1"),
    ]
    body.append(_inst("dut", "dfxtp_1", {"CLK": "n1", "D": "d", "Q": "n2"}, "vdd2"))
    body += [_inst(f"f{k}", "dfxtp_1", {"CLK": "lo", "D": "n2", "Q": f"q{k}"}, "vdd3") for k in range(FANOUT)]
    deck = _deck(
        c, {"inv_1", "dfxtp_1"}, body, f"tran 0.02n {s['end']}n 0 0.02n", ["v(n1)", "v(n2)", "i(vdd2)"], False
    )
    tab = run_deck(deck, outputs=["tran"], timeout=900, name="validate_dfxtp_1").tables["tran"]
    w = Waves(tab["scale"] * 1e9, tab, vdd)
    load = FANOUT * rec["pins"]["D"]["capacitance"]
    edges = [_edge_check(rec, w, s["c1"], s["c2"], load), _edge_check(rec, w, s["c3"], s["c4"], load)]
    return {"cell": rec["cell"], "edges": edges, "leakage": []}


def validate_cell(rec: dict, c: Corner) -> dict:
    """Measured and predicted figures of one combinational cell or the flip-flop (see the module docstring)."""
    if rec["cell"] == "dfxtp_1":
        return _flop(rec, c)
    if rec["kind"] != "comb":
        raise ValueError(f"{rec['cell']}: only combinational cells and dfxtp_1 are validated in a chain")
    return _comb(rec, c)


TOLERANCE_PCT = 5.0
"""The target: tables within 5 % of the direct runs ..."""
TOLERANCE_NS = 0.005
"""... or within 5 ps for a delay or transition (a 30 ps edge is 10 % off at 3 ps)."""


def _err(pred: float, meas: float) -> float:
    return 100.0 * (pred - meas) / meas if meas else math.inf


def _cycle(result: dict, which: str) -> float:
    """The energy of one rise and one fall of the output (an edge alone can be near zero: a falling
    output takes almost nothing from the supply)."""
    return sum(e[which]["energy"] for e in result["edges"])


def checks(result: dict) -> list[tuple[str, float, float, bool]]:
    """(what, table, direct, within tolerance) for every compared figure of one cell."""
    out = []
    for e in result["edges"]:
        for key in ("delay", "transition"):
            p, m = e["predicted"][key], e["measured"][key]
            ok = abs(_err(p, m)) <= TOLERANCE_PCT or abs(p - m) <= TOLERANCE_NS
            out.append((f"{key} {e['edge']}", p, m, ok))
    p, m = _cycle(result, "predicted"), _cycle(result, "measured")
    out.append(("energy per rise + fall", p, m, abs(_err(p, m)) <= TOLERANCE_PCT))
    for row in result["leakage"]:
        ok = abs(_err(row["predicted"], row["measured"])) <= TOLERANCE_PCT
        out.append((f"leakage, input {row['input']}", row["predicted"], row["measured"], ok))
    return out


def validation_table(results: list[dict]) -> str:
    """Markdown tables: per cell and edge the table's and the direct run's figures, the energy of
    a rise and a fall together, the chain's leakage, each with its difference in %."""
    lines = [
        "| cell | edge | input slew ps | load fF | delay ps (table / direct) | diff % | transition ps | diff % | energy fJ (table / direct) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        for e in r["edges"]:
            p, m = e["predicted"], e["measured"]
            lines.append(
                f"| {r['cell']} | {e['edge']} | {e['input_slew'] * 1e3:.0f} | {e['load'] * 1e3:.2f} "
                f"| {p['delay'] * 1e3:.1f} / {m['delay'] * 1e3:.1f} | {_err(p['delay'], m['delay']):+.1f} "
                f"| {p['transition'] * 1e3:.1f} / {m['transition'] * 1e3:.1f} | {_err(p['transition'], m['transition']):+.1f} "
                f"| {p['energy'] * 1e3:.2f} / {m['energy'] * 1e3:.2f} |"
            )
    lines += [
        "",
        "| cell | energy per rise + fall fJ (table / direct) | diff % | leakage pW, input 0 | diff % | leakage pW, input 1 | diff % | all within target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        p, m = _cycle(r, "predicted"), _cycle(r, "measured")
        row = f"| {r['cell']} | {p * 1e3:.2f} / {m * 1e3:.2f} | {_err(p, m):+.1f} "
        for leak in r["leakage"] or [None, None]:
            if leak is None:
                row += "| - | - "
                continue
            row += f"| {leak['predicted'] * 1e12:.2f} / {leak['measured'] * 1e12:.2f} | {_err(leak['predicted'], leak['measured']):+.1f} "
        row += f"| {'yes' if all(c[3] for c in checks(r)) else 'no'} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def failures(results: list[dict]) -> list[str]:
    """``cell: what table / direct`` for every figure outside the target."""
    return [
        f"{r['cell']}: {what} {p:.4g} / {m:.4g}" for r in results for what, p, m, ok in checks(r) if not ok
    ]
