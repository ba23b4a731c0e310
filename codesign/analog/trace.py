"""A bundle's BMRU layer driven by integer test inputs in ngspice, read back step by step and
compared with the golden model (:func:`run_bundle_trace`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import VDD, VOUT, fmt
from codesign.analog.drive import Timing, neuron_drive
from codesign.analog.mapping import AnyBundle, NeuronMap, accumulators, golden_bits, map_bundle, spine
from codesign.analog.sim import POWER_VECS, Ctx, powers_nw
from codesign.analog.spec import Analysis, SimSpec
from codesign.errors import CodesignError


# ------------------------------------------------------------------------------------------ bundle traces
@dataclass
class TraceResult:
    rows: list[dict]
    q_analog: np.ndarray  # (steps, d) 0/1: the sign bit of the (first) cell of each neuron
    q_golden: np.ndarray  # (steps, d) -1/0/1
    gates: np.ndarray  # (steps, d)
    power: dict
    wave: dict
    drives: list
    timing: Timing
    wall_s: float
    s_analog: np.ndarray | None = None  # (steps, d) -1/0/+1: the state's sign (0: not yet updated)
    pair: bool = False

    @property
    def s_golden(self) -> np.ndarray:
        """The golden state's sign: +1 / -1 after a neuron's first update, 0 before it."""
        return np.where(self.q_golden == 1, 1, np.where(self.q_golden == 0, -1, 0)).astype(np.int8)

    @property
    def compared(self) -> np.ndarray:
        """Neuron-steps compared: all of them with a complementary pair (it has the 0 state), those
        after the first update with a single cell (it starts at -alpha, the golden model at 0)."""
        return np.ones(self.q_golden.shape, bool) if self.pair else self.q_golden >= 0

    @property
    def agreement(self) -> float:
        m = self.compared
        sa = self.s_analog if self.s_analog is not None else 2 * self.q_analog.astype(np.int8) - 1
        return float((sa[m] == self.s_golden[m]).mean()) if m.any() else float("nan")


def flatten_sequences(xq: np.ndarray) -> np.ndarray:
    """``(N, T, M)`` -> ``(N*T, M)`` played back to back (the golden model restarts each sequence from 0)."""
    return np.asarray(xq).reshape(-1, xq.shape[-1])


def run_bundle_trace(
    bundle: AnyBundle,
    xq: np.ndarray,
    ctx: Ctx | None = None,
    *,
    maps: list[NeuronMap] | None = None,
    neurons: list[int] | None = None,
    timing: Timing = Timing(),
    mc_seed: int | None = None,
    name: str = "agreement",
    pair: bool = False,
    reltol: float | None = None,
    drive_accs: tuple[np.ndarray, np.ndarray] | None = None,
) -> TraceResult:
    """Drive the layer netlist with the currents of integer inputs ``xq`` (N, T, M); compare with golden.

    ``pair``: every neuron is a complementary pair of cells (``bmru_pair``) reset at the start so
    that the analog state is the golden model's three-valued one (0 before the first update); the
    reset is released in phase A of the first step (the candidate at the window centre). ``xq``
    must then hold one sequence (the pair is reset once). ``reltol``: ngspice's relative tolerance
    (default 1e-4, :data:`codesign.analog.ngspice.TIGHT_OPTIONS`). ``drive_accs``: the candidate
    and threshold sums ``(c, b)`` of shape ``(N*T, d)`` that drive the cells instead of the exact
    integers (the measured synapse arrays, :mod:`codesign.analog.synapse_sim`); the golden
    comparison and the margins stay on the integers.
    """
    ctx = ctx or Ctx()
    bundle = spine(bundle)
    if bundle.net.eps != 0:
        raise CodesignError("behavioural agreement runs BMRU cells: the bundle must have eps 0 (cell bmru)")
    xq = np.asarray(xq, dtype=np.int64)
    if pair and xq.shape[0] != 1:
        raise CodesignError(f"a complementary-pair trace runs one sequence (reset once), not {xq.shape[0]}")
    maps = maps or map_bundle(bundle, xq)
    neurons = list(range(bundle.net.hidden_size)) if neurons is None else neurons
    q_gold, g_gold = _golden_bits_checked(bundle, xq)
    c, b = accumulators(bundle, xq)
    c2, b2 = c.reshape(-1, c.shape[-1]), b.reshape(-1, b.shape[-1])
    steps = c2.shape[0]
    stop = timing.stop(steps)
    spec, drives, xnodes = _layer_spec(
        bundle, maps, neurons, drive_accs or (c2, b2), timing, pair, ctx.corner, mc_seed, reltol
    )
    res = ctx.simulate(
        spec,
        name,
        tran_stop={"tran": stop},
        timeout=max(ctx.timeout, 60 + 2.0 * steps * len(neurons) * (2 if pair else 1)),
    )
    tab = res["tran"]
    ts = np.array([timing.sample_time(k) for k in range(steps)])
    qg = q_gold.reshape(-1, q_gold.shape[-1])
    gg = g_gold.reshape(-1, g_gold.shape[-1])
    qa = np.zeros((steps, len(neurons)), dtype=np.int8)
    sa = np.zeros((steps, len(neurons)), dtype=np.int8)
    rows = []
    for j, i in enumerate(neurons):
        x_at = [np.interp(ts, tab["scale"], tab[v]) for v in xnodes[i]]
        bits = [(x < VDD / 2).astype(np.int8) for x in x_at]
        qa[:, j] = bits[0]
        sa[:, j] = (bits[0] + bits[1] - 1) if pair else (2 * bits[0] - 1)
        rows.append(_neuron_row(i, maps[i], sa[:, j], x_at, qg[:, i], gg[:, i], c2[:, i], b2[:, i], pair))
    power = powers_nw(tab, timing.t_pre, stop)
    return TraceResult(
        rows, qa, qg[:, neurons], gg[:, neurons], power, tab, drives, timing, res.wall_s, sa, pair
    )


def _golden_bits_checked(bundle, xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The golden sign bits and gates, checked against the golden model's states."""
    from codesign.golden import run_golden

    gold = run_golden(bundle, xq)
    q_gold, g_gold = golden_bits(bundle, xq)
    alpha = bundle.weights["alpha"]
    defined = q_gold >= 0
    expect = np.where(q_gold == 1, alpha, -alpha)
    if not np.array_equal(gold.states[defined], expect[defined]) or np.any(gold.states[~defined] != 0):
        raise AssertionError("golden states disagree with the sign-bit reconstruction: a bug")
    return q_gold, g_gold


def _layer_spec(bundle, maps, neurons, accs, timing: Timing, pair: bool, corner, mc_seed, reltol):
    """The layer's deck: one neuron subcircuit per neuron, its input and threshold drives, the read
    nodes; returns the spec, the drives and every neuron's state nodes."""
    from codesign.analog.netlist import neuron_subckt

    dc, db = accs
    steps = dc.shape[0]
    stop = timing.stop(steps)
    body = ["Xbias vddb vbb vcn bias_shared"]
    if pair:
        t_rel = timing.t_release
        body.append(f"Vrst rst 0 PWL(0 {VDD:g} {t_rel:.9g} {VDD:g} {t_rel + timing.t_ramp:.9g} 0)")
        body.append(f"Vrstb rstb 0 PWL(0 0 {t_rel:.9g} 0 {t_rel + timing.t_ramp:.9g} {VDD:g})")
    rst = " rst rstb" if pair else ""
    subckts, drives = [], []
    for i in neurons:
        nm = maps[i]
        subckts.append(neuron_subckt(nm, bundle_name=bundle.manifest.name, pair=pair))
        dr = neuron_drive(nm, dc[:, i], db[:, i], timing)
        drives.append(dr)
        n = f"neuron_{i:03d}"
        if nm.fixed_threshold:
            body.append(f"Xn{i} in{i} out{i} vdd vddb vbb vcn{rst} {n}")
        else:
            body.append(f"Xn{i} in{i} out{i} vdd vddb vbb vcn vbd{i} vbu{i}{rst} {n}")
            body.append(f"Ithd{i} vbd{i} 0 {cells.pwl(dr.t_down, dr.i_down)}")
            body.append(f"Ithu{i} vbu{i} 0 {cells.pwl(dr.t_up, dr.i_up)}")
        body.append(f"Iin{i} vsrc in{i} {cells.pwl(dr.t_in, dr.i_in)}")
        body.append(f"Vo{i} out{i} 0 {VOUT:g}")
    xnodes = {i: ([f"v(xn{i}.xc.xa)", f"v(xn{i}.xc.xb)"] if pair else [f"v(xn{i}.xc.x)"]) for i in neurons}
    vecs = [v for i in neurons for v in xnodes[i]] + [f"i(vo{i})" for i in neurons] + POWER_VECS
    spec = SimSpec(
        f"bundle {bundle.manifest.name}: {steps} steps x {len(neurons)} neurons ({corner})",
        "\n".join(body) + "\n",
        (Analysis.tran(fmt(timing.t_step / 4), stop, "tran", vecs),),
        corner=corner,
        library="\n" + "\n".join(subckts),
        mc_seed=mc_seed,
        reltol=reltol,
    )
    return spec, drives, xnodes


def _neuron_row(i, nm: NeuronMap, sa, x_at, qg, gg, c, b, pair: bool) -> dict:
    """One neuron's agreement figures: states, gates, events, root errors and their margins."""
    steps = len(sa)
    undecided = np.zeros(steps, bool)
    for x in x_at:  # a transition still under way when read
        undecided |= (x > 0.2 * VDD) & (x < 0.8 * VDD)
    sg = np.where(qg == 1, 1, np.where(qg == 0, -1, 0)).astype(np.int8)
    sgn = np.where(c >= 0, 1, -1).astype(np.int8)
    m = np.ones(steps, bool) if pair else qg >= 0
    prev = np.concatenate([[0 if pair else -1], sa[:-1]])
    gate_ok = np.where(gg == 1, sa == sgn, sa == prev)
    ev_g = np.concatenate([[False], sg[1:] != sg[:-1]])
    ev_a = np.concatenate([[False], sa[1:] != sa[:-1]])
    me = np.concatenate([[False], m[1:] & m[:-1]])
    margin = margins(nm, c, b)
    wrong = m & (sa != sg)
    # a root error starts a run of disagreement (a missed or spurious update); retains then carry it.
    # Its cause is that step or the one before (a near-tie half switched, read, then relaxed back).
    root = wrong & ~np.concatenate([[False], wrong[:-1]])
    cause = np.minimum(margin, np.concatenate([[np.inf], margin[:-1]]))
    return {
        "neuron": i,
        "thresholds": "fixed" if nm.fixed_threshold else "per-step",
        "B": nm.b_max,
        "k_pA_per_unit": nm.k / 1e-12,
        "steps": steps,
        "compared": int(m.sum()),
        "state_agreement": float((sa[m] == sg[m]).mean()) if m.any() else float("nan"),
        "gate_consistency": float(gate_ok[1:][m[1:]].mean()) if m[1:].any() else float("nan"),
        "events_golden": int(ev_g[me].sum()),
        "events_analog": int(ev_a[me].sum()),
        "event_agreement": float((ev_g[me] == ev_a[me]).mean()) if me.any() else float("nan"),
        "root_errors": int(root.sum()),
        "root_error_max_margin_pA": float(cause[root].max() / 1e-12) if root.any() else float("nan"),
        "root_error_steps": [int(k) for k in np.nonzero(root)[0]],
        "steps_margin_below_5pA": int((m & (margin < 5e-12)).sum()),
        "ties": int((np.abs(c) == np.abs(b)).sum()),
        "undecided_reads": int(undecided.sum()),
    }


def margins(nm: NeuronMap, c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance (A) from each step's input current to the nearer threshold current."""
    i_in = nm.input_current(c, b)
    lo, hi = nm.threshold_targets(b)
    return np.minimum(np.abs(i_in - lo), np.abs(i_in - hi))
