"""Measurements of the native CMRU ladder: its stage thresholds and the set / reset programme of
CMRU Fig. 4C (one alpha per pulse, staircases of held levels)."""

from __future__ import annotations

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import VDD, VOUT, DpiParams, fmt
from codesign.analog.mapping import NA
from codesign.analog.measure_cells import PAPER, CellBias
from codesign.analog.ngspice import SimulationError
from codesign.analog.sim import POWER_VECS, Ctx, crossing, powers_nw, time_avg
from codesign.analog.spec import Analysis, SimSpec


# ------------------------------------------------------------------------------------------ ladder
def measure_ladder_thresholds(
    ctx: Ctx | None = None,
    *,
    shift_gain: float | None = None,
    ramp_s: float = 0.3,
    dpi: cells.DpiParams = cells.DpiParams(),
) -> dict[str, float]:
    """Static thresholds of native CMRU stages 1 and 2 (a 3-stage dynamic ladder at the widest
    window 0.15 / 0.35 nA): offsets (pA) of the input current where the count leaves its start.

    Four ladders start from the operating point at 0, 1, 1 and 2 stages on; their input ramps
    slowly (0.15 nA over ``ramp_s``) up from the centre (``up1``: stage 1 sets, ``up2``: stage 2)
    or down (``down1``: stage 1 resets, ``down2``: stage 2). Stage 2 sees ``I_in + D_1`` against a
    window shifted by ``I_alpha G / THRESHOLD_TRIM`` (``G``: ``shift_gain`` on both thresholds, by
    default the calibrated :data:`codesign.analog.mapping.LADDER_SHIFT_GAINS` of the ``dpi`` kind,
    down and up); its offsets should equal stage 1's (the
    ramp lags both alike, about +1 / -3 pA).
    """
    from codesign.analog.mapping import LADDER_SHIFT_GAINS, THRESHOLD_TRIM

    ctx = ctx or Ctx()
    g_d, g_u = LADDER_SHIFT_GAINS[dpi.kind] if shift_gain is None else (shift_gain, shift_gain)
    a_ = 0.5 * NA
    dn, up = 0.15 * NA / THRESHOLD_TRIM, 0.35 * NA / THRESHOLD_TRIM
    lad = "cmru_native_3_dyn" + ("_n" if dpi.kind == "n" else "")
    t0 = 0.02
    cases = {
        "up1": (0, 0.25 * NA, 0.40 * NA),
        "up2": (1, 0.25 * NA, 0.40 * NA),
        "down1": (1, 0.25 * NA, 0.10 * NA),
        "down2": (2, 0.25 * NA, 0.10 * NA),
    }
    body, nodes = [], []
    for nm, (n0, lo, hi) in cases.items():
        body += [
            f"Xl{nm} in{nm} out{nm} vdd vddb bd1{nm} bu1{nm} bd2{nm} bu2{nm} {lad} I_ALPHA={fmt(a_)}",
            f"Ib1{nm} bd1{nm} 0 DC {fmt(dn)}",
            f"Ib2{nm} bu1{nm} 0 DC {fmt(up)}",
            f"Ib3{nm} bd2{nm} 0 DC {fmt(dn + a_ * g_d / THRESHOLD_TRIM)}",
            f"Ib4{nm} bu2{nm} 0 DC {fmt(up + a_ * g_u / THRESHOLD_TRIM)}",
            f"Iin{nm} vsrc in{nm} PWL(0 {fmt(lo)} {t0:g} {fmt(lo)} {t0 + ramp_s:.6g} {fmt(hi)})",
            f"Vo{nm} out{nm} 0 {VOUT:g}",
        ]
        for k in range(1, 4):
            on = k <= n0
            nodes.append(
                f"v(xl{nm}.x{k})={0 if on else VDD:g} v(xl{nm}.xs{k}.y)={VDD if on else 0:g}"
                + ("" if on or dpi.kind == "n" else f" v(xl{nm}.xd{k}.vc)=1.79")
            )
    body.append(".nodeset " + " ".join(nodes))
    stop = t0 + ramp_s
    spec = SimSpec(
        "native CMRU stage thresholds",
        "\n".join(body) + "\n",
        (Analysis.tran("0.2m", stop, "tran", [f"i(vo{nm})" for nm in cases]),),
        corner=ctx.corner,
        library="\n" + cells.cmru_ladder(3, dpi, dynamic=True),
    )
    tab = ctx.simulate(spec, "ladder_thresholds", tran_stop={"tran": stop})["tran"]
    t = tab["scale"]
    out = {}
    for nm, (n0, lo, hi) in cases.items():
        cnt = tab[f"i(vo{nm})"] / a_
        rising = hi > lo
        hit = np.nonzero(((cnt > n0 + 0.5) if rising else (cnt < n0 - 0.5)) & (t > t0))[0]
        if not len(hit):
            raise SimulationError(f"ladder threshold ramp {nm}: the count never left {n0}")
        i_at = lo + (hi - lo) * (t[hit[0]] - t0) / ramp_s
        out[f"{nm}_offset_pA"] = float((i_at - (0.35 * NA if rising else 0.15 * NA)) / 1e-12)
    return out


def ladder_program(
    stages: int,
    bias: CellBias,
    quick: bool,
    *,
    set_pulses: int | None = None,
    reset_pulses: int | None = None,
    gap: float = 35e-3,
) -> list[tuple[float, float, str]]:
    """Input segments (duration, level, label) for the native CMRU test (CMRU Fig. 4C).

    Set pulses (5 ms at the set level, one alpha each) separated by ``gap`` at the retain level,
    a long hold, reset pulses, then (full run) the set level held until the ladder is full and the
    reset level held until it is empty.
    """
    set_pulses = stages if set_pulses is None else set_pulses
    reset_pulses = stages if reset_pulses is None else reset_pulses
    pulse = 5e-3
    seg = [(5e-3, bias.reset_level, "reset"), (15e-3, bias.centre, "retain")]
    for k in range(set_pulses):
        seg += [(pulse, bias.set_level, f"set pulse {k + 1}"), (gap, bias.centre, f"after set {k + 1}")]
    seg[-1] = (gap + (10e-3 if quick else 100e-3), bias.centre, seg[-1][2])
    for k in range(reset_pulses):
        seg += [(pulse, bias.reset_level, f"reset pulse {k + 1}"), (gap, bias.centre, f"after reset {k + 1}")]
    if not quick:
        seg += [
            ((stages + 1) * 20e-3, bias.set_level, "set held"),
            (30e-3, bias.centre, "after set held"),
            ((stages + 1) * 20e-3, bias.reset_level, "reset held"),
            (20e-3, bias.centre, "after reset held"),
        ]
    return seg


def measure_ladder(
    stages: int = 4,
    ctx: Ctx | None = None,
    *,
    bias: CellBias = PAPER,
    dpi: DpiParams = DpiParams(),
    quick: bool = False,
    name: str = "cmru_ladder",
    **program,
) -> dict:
    """Native CMRU: set / reset pulses (one alpha each), holds, held set / reset levels (staircases).

    ``program``: keyword arguments of :func:`ladder_program` (pulse counts, gap).
    """
    ctx = ctx or Ctx()
    seg = ladder_program(stages, bias, quick, **program)
    t, v, marks = [0.0], [seg[0][1]], []
    now = 0.0
    for dur, level, label in seg:
        if level != v[-1]:
            t += [now, now + 10e-6]
            v += [v[-1], level]
        marks.append((now, now + dur, label, level))
        now += dur
    stop = now
    lib = "\n" + cells.cmru_ladder(stages, dpi) + "\n"
    nodeset = " ".join(f"v(xl.xd{k}.vc)=1.79 v(xl.x{k})=1.8 v(xl.xs{k}.y)=0" for k in range(1, stages + 1))
    body = (
        f"Xl in out vdd vddb cmru_native_{stages} I_DOWN={fmt(bias.i_down)} I_UP={fmt(bias.i_up)} "
        f"I_ALPHA={fmt(bias.i_alpha)}\n"
        f"Iin vsrc in {cells.pwl(t, v)}\nVm out 0 {VOUT:g}\n.nodeset {nodeset}\n"
    )
    vecs = ["i(vm)"] + POWER_VECS + [f"v(xl.x{k})" for k in range(1, stages + 1)]
    spec = SimSpec(
        f"native CMRU, {stages} stages ({ctx.corner})",
        body,
        (Analysis.tran("1m", stop, "tran", vecs),),
        corner=ctx.corner,
        library=lib,
    )
    res = ctx.simulate(spec, name, tran_stop={"tran": stop}, timeout=max(ctx.timeout, 600.0))
    tab = res["tran"]
    tt, io = tab["scale"], tab["i(vm)"]
    alpha = bias.i_alpha
    rows = []
    level = 0
    for a, b, label, _lev in marks:
        if label.startswith("after set ") and label != "after set held":
            level = min(level + 1, stages)
        elif label.startswith("after reset ") and label != "after reset held":
            level = max(level - 1, 0)
        elif label == "after set held":
            level = stages
        elif label == "after reset held":
            level = 0
        elif not label.startswith("retain"):
            continue
        measured = time_avg(tt, io, b - 3e-3, b)
        m = (tt >= b - min(b - a - 2e-3, 0.1)) & (tt <= b)
        rows.append(
            {
                "event": label,
                "t_end_s": b,
                "expected_level": level,
                "expected_nA": level * alpha / NA,
                "measured_nA": measured / NA,
                "error_rel_alpha": (measured - level * alpha) / alpha,
                "drift_rel_alpha": float(io[m].max() - io[m].min()) / alpha,
                "held_s": b - a,
                **powers_nw(tab, b - min(b - a - 2e-3, 0.02), b),
            }
        )
    steps = {}
    for a, b, label, _ in marks:
        if label in ("set held", "reset held"):
            m = (tt >= a) & (tt <= b + 5e-3)
            times = []
            for n in range(stages):
                lvl = (n + 0.5) * alpha
                c = crossing(
                    tt[m], io[m] if label == "set held" else -io[m], lvl if label == "set held" else -lvl
                )
                times.append(c - a)
            steps[label] = times if label == "set held" else times[::-1]
    return {
        "levels": rows,
        "staircase_s": steps,
        "power": powers_nw(tab, 5e-3, stop),
        "wave": tab,
        "marks": marks,
        "stages": stages,
        "wall_s": res.wall_s,
    }
