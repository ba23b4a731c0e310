"""Native CMRU neurons (cmru eps 1) driven by one test sequence in ngspice: stage counts read back
and compared with the golden model (:func:`run_ladder_trace`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import VOUT
from codesign.analog.ladder_deck import LADDER_DECKS, LadderDeck
from codesign.analog.mapping import AnyBundle, NeuronMap, accumulators, ladder_shift, map_bundle, spine
from codesign.analog.sim import POWER_VECS, Ctx, powers_nw
from codesign.analog.spec import Analysis, SimSpec
from codesign.analog.trace import margins
from codesign.errors import CodesignError


@dataclass
class LadderTraceResult:
    rows: list[dict]
    n_analog: np.ndarray  # (steps, d) stages on, read from the output current
    n_golden: np.ndarray  # (steps, d) n0 + sum of the golden updates (s per gate), clipped to [0, N]
    in_range: np.ndarray  # (steps, d) the golden count never left [0, N] up to that step
    power: dict
    wave: dict
    drives: list
    timing: object
    n0: int  # the preamble's init frames (the largest reset state of the neurons)
    stages: int  # the longest ladder
    wall_s: float
    n0s: np.ndarray | None = None  # (d,) each neuron's reset state (stages on = golden state 0)
    stage_counts: np.ndarray | None = None  # (d,) each neuron's ladder length
    cpu_s: float = float("nan")  # ngspice's CPU time
    stats: dict | None = None  # ngspice's counters (codesign.analog.ngspice.solver_stats)

    @property
    def agreement(self) -> float:
        m = self.in_range
        return float((self.n_analog[m] == self.n_golden[m]).mean()) if m.any() else float("nan")

    @property
    def h_analog(self) -> np.ndarray:
        """``(steps, d)`` the analog state in units of alpha: stages on minus the reset state."""
        return self.n_analog - self.n0s[None, :]

    @property
    def h_golden(self) -> np.ndarray:
        return self.n_golden - self.n0s[None, :]


def run_ladder_trace(
    bundle: AnyBundle,
    xq: np.ndarray,
    ctx: Ctx | None = None,
    *,
    stages: int = 8,
    maps: list[NeuronMap] | None = None,
    neurons: list[int] | None = None,
    timing=None,
    name: str = "ladder_agreement",
    ranges: list[tuple[int, int]] | None = None,
    drive_accs: tuple[np.ndarray, np.ndarray] | None = None,
    reltol: float | None = None,
    mc_seed: int | None = None,
    init: str = "pulses",
    dpi: cells.DpiParams = cells.DpiParams(),
    deck: LadderDeck | None = None,
    trim: tuple[float, float] = (0.0, 0.0),
    overdrive: float | None = None,
) -> LadderTraceResult:
    """Native CMRU neurons (cmru eps 1) driven by one test sequence; stage counts vs the golden model.

    Each neuron is a ``stages``-stage ladder started at ``n0 = stages // 2`` stages on (golden state
    0); the golden state after step t is ``(n_t - n0) alpha_i`` with ``n_t`` the stages on. Steps after
    the golden count first leaves ``[0, stages]`` (where the ladder saturates) are not compared.
    ``ranges``: ``(n0, stages)`` of every neuron in ``neurons`` instead (ladders of their own
    lengths, :func:`ladder_ranges`); the preamble then lasts ``max(n0)`` init frames for all.
    ``drive_accs``: the candidate and threshold sums ``(c, b)`` of shape ``(T, d)`` that drive the
    ladders instead of the exact integers (the simulated synapse arrays); the golden comparison
    and the margins stay on the integers. ``reltol``: ngspice's relative tolerance.

    ``init``: how a ladder reaches its reset state ``n0``: ``pulses`` plays ``n0`` set pulses of
    one init frame each (60 ms) before the first step; ``nodeset`` starts the transient from the
    operating point with stages ``1..n0`` on (a ``.nodeset`` of every stage's ``x`` and ``y``; the
    DPIs find their own level), which saves the preamble's simulated time. Either way the count
    read just before the first step is checked (``init_count_ok`` of every row). ``dpi``: the DPI
    between the stages (:data:`codesign.analog.cells.DPI_N`: the kappa-matched one, with its own
    calibrated window shift, :data:`codesign.analog.mapping.LADDER_SHIFT_GAINS`). ``deck``: how
    ngspice simulates it (:mod:`codesign.analog.ladder_deck`: solver options, the drive's ramps,
    the vectors saved; the reference deck by default). Its ramp replaces ``timing.t_ramp``.
    ``trim``: ``(up, down)`` (A) by which every step's window narrows during its pulse
    (:func:`codesign.analog.drive.ladder_drive`); neurons with fixed thresholds are not trimmed.
    ``overdrive``: the candidate clipped to at most this far (A) past its step's window (``None``:
    its own clip).
    The golden comparison and the margins stay on the untrimmed integers.
    """
    if init not in ("pulses", "nodeset"):
        raise CodesignError(f"ladder init must be pulses or nodeset, not {init!r}")
    from codesign.analog.drive import LadderTiming

    ctx = ctx or Ctx()
    deck = deck or LADDER_DECKS["reference"]
    timing = replace(timing or LadderTiming(), t_ramp=deck.t_ramp)
    bundle = spine(bundle)
    if bundle.net.eps != 1:
        raise CodesignError(f"native CMRU ladders implement cmru eps 1; this bundle has eps {bundle.net.eps}")
    xq = np.asarray(xq, dtype=np.int64)[:1]
    maps = maps or map_bundle(bundle, xq)
    neurons = list(range(bundle.net.hidden_size)) if neurons is None else neurons
    n0_all, st_all = _ladder_lengths(bundle.net.hidden_size, neurons, ranges, stages)
    # the preamble: init frames of the neuron that needs most (none when the operating point starts there)
    n0 = int(max(n0_all[neurons])) if init == "pulses" else 0
    stages = int(max(st_all[neurons]))
    c, b = accumulators(bundle, xq)
    c1, b1 = c[0], b[0]
    steps = c1.shape[0]
    upd, raw, in_range = _golden_counts(bundle, xq, c1, b1, n0_all, st_all)
    accs = (c1, b1) if drive_accs is None else (np.asarray(drive_accs[0]), np.asarray(drive_accs[1]))
    body, subckts, drives = _ladder_body(
        bundle, maps, neurons, accs, n0_all, st_all, timing, n0, init, dpi, trim, overdrive
    )
    stop = timing.stop(steps, n0)
    vecs = [f"i(vo{i})" for i in neurons] + POWER_VECS
    title = (
        f"bundle {bundle.manifest.name}: native CMRU, {stages} stages, {steps} steps x {len(neurons)} neurons"
    )
    lengths = sorted({int(st_all[i]) for i in neurons})
    spec = _ladder_spec(
        title, body, subckts, lengths, vecs, stop, timing, ctx.corner, dpi, deck, mc_seed, reltol
    )
    text = spec.deck()
    if deck.prune_models and mc_seed is None:
        from codesign.analog.model_prune import prune_deck_models

        text = prune_deck_models(text, ctx.corner)
    res = ctx.run(
        text,
        name,
        spec.outputs,
        tran_stop={"tran": stop},
        timeout=max(ctx.timeout, 120 + 10.0 * steps * float(st_all[neurons].sum()) / 4),
    )
    tab = res["tran"]
    golden = (raw, upd, in_range, c1, b1)
    n_a, rows = _read_ladders(tab, timing, n0, steps, neurons, maps, golden, n0_all, st_all)
    power = powers_nw(tab, timing.pre(n0), stop)
    return LadderTraceResult(
        rows,
        n_a,
        raw[:, neurons],
        in_range[:, neurons],
        power,
        tab,
        drives,
        timing,
        n0,
        stages,
        res.wall_s,
        n0_all[neurons],
        st_all[neurons],
        res.cpu_s,
        res.stats,
    )


def _read_ladders(tab, timing, n0, steps, neurons, maps, golden, n0_all, st_all):
    """Stages on at every step's sample time (the output current in alphas) and every ladder's row."""
    raw, upd, in_range, c1, b1 = golden
    ts = np.array([timing.sample_time(k, n0) for k in range(steps)])
    n_a = np.zeros((steps, len(neurons)), dtype=np.int64)
    rows = []
    t_init = timing.step_start(0, n0) - 0.5e-3
    for j, i in enumerate(neurons):
        i_out = np.interp(ts, tab["scale"], tab[f"i(vo{i})"])
        n_a[:, j] = np.rint(i_out / maps[i].i_alpha).astype(np.int64)
        n_init = int(np.rint(np.interp(t_init, tab["scale"], tab[f"i(vo{i})"]) / maps[i].i_alpha))
        counts = (n_a[:, j], raw[:, i], upd[:, i], in_range[:, i])
        rows.append(
            _ladder_row(i, maps[i], counts, i_out, n_init, int(n0_all[i]), int(st_all[i]), c1[:, i], b1[:, i])
        )
    return n_a, rows


def _ladder_spec(
    title, body, subckts, lengths, vecs, stop, timing, corner, dpi, deck, mc_seed, reltol
) -> SimSpec:
    """The ladders' deck: both ladder subcircuits of every length used, the neurons, one transient."""
    lib = "\n" + "\n".join(
        cells.cmru_ladder(n, dpi) + "\n" + cells.cmru_ladder(n, dpi, dynamic=True) for n in lengths
    )
    if deck.save_read_only:
        body = [*body, ".save " + " ".join(vecs)]
    return SimSpec(
        title,
        "\n".join(body) + "\n",
        (Analysis.tran(f"{timing.t_max:.6g}", stop, "tran", vecs),),
        corner=corner,
        library=lib + "\n".join(subckts),
        mc_seed=mc_seed,
        reltol=reltol,
        options=deck.options,
        stats=True,
    )


def _ladder_lengths(d: int, neurons: list[int], ranges, stages: int) -> tuple[np.ndarray, np.ndarray]:
    """Every neuron's reset state ``n0`` and ladder length, from ``ranges`` (default: ``stages // 2``
    of ``stages``); a bad range is one :class:`CodesignError`."""
    if ranges is None:
        ranges = [(stages // 2, stages)] * len(neurons)
    if (
        len(ranges) != len(neurons)
        or any(not 0 <= a <= n for a, n in ranges)
        or any(n < 1 for _, n in ranges)
    ):
        raise CodesignError(
            f"ladder ranges {ranges}: need one (n0, stages) with 0 <= n0 <= stages per neuron"
        )
    n0_all = np.zeros(d, dtype=np.int64)
    st_all = np.zeros(d, dtype=np.int64)
    for i, (a, n) in zip(neurons, ranges, strict=True):
        n0_all[i], st_all[i] = a, n
    return n0_all, st_all


def _golden_counts(bundle, xq, c1, b1, n0_all, st_all):
    """The golden updates (+1, 0, -1), the count ``n0 + sum of updates`` and where it stays within
    the ladder, checked against the golden model's states."""
    from codesign.golden import run_golden

    gold = run_golden(bundle, xq)
    upd = np.where(np.abs(c1) >= np.abs(b1), np.where(c1 >= 0, 1, -1), 0)
    raw = n0_all[None, :] + np.cumsum(upd, axis=0)
    in_range = np.cumprod((raw >= 0) & (raw <= st_all[None, :]), axis=0).astype(bool)
    alpha = bundle.weights["alpha"]
    limit = (1 << (bundle.manifest.formats.state.bits - 1)) - 1
    unsaturated = np.cumprod(np.abs(alpha * (raw - n0_all)) <= limit, axis=0).astype(bool)
    if np.any((gold.states[0] != alpha * (raw - n0_all)) & unsaturated):
        raise AssertionError("golden states disagree with the update count: a bug")
    return upd, raw, in_range


def _ladder_body(bundle, maps, neurons, accs, n0_all, st_all, timing, n0, init, dpi, trim, overdrive):
    """Every neuron's ladder subcircuit, drives (input, thresholds, shifted thresholds of stages
    >= 2) and ``.nodeset`` of its reset state."""
    from codesign.analog.drive import ladder_drive
    from codesign.analog.netlist import neuron_subckt

    body, subckts, drives, nodesets = [], [], [], []
    dc, db = accs
    for i in neurons:
        nm = maps[i]
        n_i = int(st_all[i])
        subckts.append(
            neuron_subckt(nm, bundle_name=bundle.manifest.name, native_stages=n_i, dpi_kind=dpi.kind)
        )
        pulses = int(n0_all[i]) if init == "pulses" else 0
        dr = ladder_drive(
            nm,
            dc[:, i],
            db[:, i],
            pulses,
            timing,
            pre_pulses=n0,
            hold=init == "nodeset",
            trim=trim,
            overdrive=overdrive,
        )
        drives.append(dr)
        n = f"neuron_{i:03d}"
        if nm.fixed_threshold:
            body.append(f"Xn{i} in{i} out{i} vdd vddb {n}")
        else:
            body.append(f"Xn{i} in{i} out{i} vdd vddb vbd{i} vbu{i} vbdb{i} vbub{i} {n}")
            body.append(f"Ithd{i} vbd{i} 0 {cells.pwl(dr.t_down, dr.i_down)}")
            body.append(f"Ithu{i} vbu{i} 0 {cells.pwl(dr.t_up, dr.i_up)}")
            sh_d, sh_u = (ladder_shift(nm.i_alpha, dpi.kind, side) for side in ("down", "up"))
            body.append(f"Ithdb{i} vbdb{i} 0 {cells.pwl(dr.t_down, [v + sh_d for v in dr.i_down])}")
            body.append(f"Ithub{i} vbub{i} 0 {cells.pwl(dr.t_up, [v + sh_u for v in dr.i_up])}")
        body.append(f"Iin{i} vsrc in{i} {cells.pwl(dr.t_in, dr.i_in)}")
        body.append(f"Vo{i} out{i} 0 {VOUT:g}")
        on = int(n0_all[i]) if init == "nodeset" else 0
        nodesets += [f"v(xn{i}.xl.x{k})=0 v(xn{i}.xl.xs{k}.y)=1.8" for k in range(1, on + 1)]
        off_dpi = "" if dpi.kind == "n" else "v(xn{i}.xl.xd{k}.vc)=1.79 "  # dpi_n: vc low when off
        nodesets += [
            off_dpi.format(i=i, k=k) + f"v(xn{i}.xl.x{k})=1.8 v(xn{i}.xl.xs{k}.y)=0"
            for k in range(on + 1, n_i + 1)
        ]
    body.append(".nodeset " + " ".join(nodesets))
    return body, subckts, drives


def _ladder_row(i, nm, counts, i_out, n_init: int, n0: int, stages: int, c, b) -> dict:
    """One ladder's agreement figures: counts, per-step updates, mis-updates and their margins."""
    n_a, raw, upd, m = counts
    # per-step updates: one missed or spurious update offsets every later count, so also compare the steps
    d_a = np.diff(n_a, prepend=n0)
    d_g = np.diff(raw, prepend=n0)
    prev_a = np.concatenate([[n0], n_a[:-1]])
    blocked = ((prev_a <= 0) & (d_g < 0)) | ((prev_a >= stages) & (d_g > 0))  # ladder already full/empty
    wrong = m & (d_a != d_g) & ~blocked
    margin = margins(nm, c, b)
    return {
        "neuron": i,
        "thresholds": "fixed" if nm.fixed_threshold else "per-step",
        "B": nm.b_max,
        "k_pA_per_unit": nm.k / 1e-12,
        "stages": stages,
        "n0": n0,
        "init_count": n_init,
        "init_count_ok": n_init == n0,
        "steps": len(n_a),
        "compared": int(m.sum()),
        "wrong_update_steps": [int(k) for k in np.nonzero(wrong)[0]],
        "wrong_update_margins_pA": [float(margin[k] / 1e-12) for k in np.nonzero(wrong)[0]],
        "updates_golden": int(np.abs(upd).sum()),
        "count_agreement": float((n_a[m] == raw[m]).mean()) if m.any() else float("nan"),
        "worst_level_error_rel_alpha": float(np.max(np.abs(i_out[m] / nm.i_alpha - raw[m])))
        if m.any()
        else float("nan"),
        "update_agreement": float((d_a[m] == d_g[m]).mean()) if m.any() else float("nan"),
        "wrong_updates": int(wrong.sum()),
        "blocked_by_saturation": int((m & blocked & (d_a != d_g)).sum()),
        "wrong_update_max_margin_pA": float(margin[wrong].max() / 1e-12) if wrong.any() else float("nan"),
    }


def ladder_ranges(bundle: AnyBundle, xq: np.ndarray, spare: int = 1) -> list[tuple[int, int]]:
    """``(n0, stages)`` of every neuron's ladder for one sequence ``xq`` (1, T, M): the golden update
    count's range over the sequence (0 included) with ``spare`` stages beyond each end.

    A chip would size every ladder for the test set's range (JapaneseVowels CMRU: 26-50 stages per
    neuron); simulating the stages a sequence never reaches costs SPICE time and changes nothing
    but their idle power. The spare stages keep an analog overshoot visible as a disagreement
    instead of hiding it in a full or empty ladder.
    """
    c, b = accumulators(spine(bundle), np.asarray(xq, dtype=np.int64)[:1])
    upd = np.where(np.abs(c[0]) >= np.abs(b[0]), np.where(c[0] >= 0, 1, -1), 0)
    cnt = np.cumsum(upd, axis=0)
    lo = np.minimum(cnt.min(axis=0), 0) - spare
    hi = np.maximum(cnt.max(axis=0), 0) + spare
    return [(int(-a), int(h - a)) for a, h in zip(lo, hi, strict=True)]
