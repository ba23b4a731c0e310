"""Measurements of single cells: the BMRU's hysteresis and retention, the DPI's step response and
its spread over the process corners.

Each ``measure_*`` function builds a :class:`~codesign.analog.spec.SimSpec`, runs it
(:class:`~codesign.analog.sim.Ctx`) and returns its figures plus the waveforms to plot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import DPI_N, VDD, VOUT, DpiParams, fmt
from codesign.analog.mapping import NA
from codesign.analog.pdk import CORNERS
from codesign.analog.sim import POWER_VECS, Ctx, crossing, powers_nw, time_avg
from codesign.analog.spec import Analysis, SimSpec

PAPER_POWER_NW = 39.86
"""Native CMRU circuit power in CMRU App. E (Cadence, transistor level)."""


@dataclass(frozen=True)
class CellBias:
    """Bias currents of one BMRU cell (A)."""

    i_down: float = 0.15 * NA
    i_up: float = 0.35 * NA
    i_alpha: float = 0.50 * NA

    @property
    def centre(self) -> float:
        return (self.i_up + self.i_down) / 2

    @property
    def set_level(self) -> float:
        return self.i_up + (self.i_up - self.i_down) / 2

    @property
    def reset_level(self) -> float:
        return max(self.i_down - (self.i_up - self.i_down) / 2, 0.2 * self.i_down)


PAPER = CellBias()
"""CMRU Fig. 4C: thresholds 0.35 / 0.15 nA, alpha 0.5 nA (set 0.45, retain 0.25, reset 0.05 nA)."""


def _cell_body(bias: CellBias, input_spec: str) -> str:
    return (
        "Xbias vddb vbb vcn bias_shared\n"
        f"Xc in out vdd vddb vbb vcn bmru_cell I_DOWN={fmt(bias.i_down)} I_UP={fmt(bias.i_up)} "
        f"I_ALPHA={fmt(bias.i_alpha)}\n"
        f"Iin vsrc in {input_spec}\n"
        f"Vm out 0 {VOUT:g}\n"
    )


X_NODE = "v(xc.x)"


@dataclass(frozen=True)
class Hysteresis:
    """A BMRU cell's DC sweeps up and down: its thresholds (A, where the state node crosses VDD/2),
    its output high / low at the window centre, their errors against the bias, the curves."""

    th_up: float
    th_down: float
    out_high: float
    out_low: float
    err_up: float
    err_down: float
    err_alpha: float
    curves: dict
    wall_s: float

    def figures(self) -> dict:
        """The numbers, without the curves (``results.json``)."""
        return {k: v for k, v in vars(self).items() if k != "curves"}


@dataclass(frozen=True)
class DpiResponse:
    """A DPI's step response: tau of the rise (63 %) and of the decay (exponential fit), the target,
    the settled output and gain, the second copy's mismatch, supply powers on / off, the wave."""

    tau_rise_s: float
    tau_fall_s: float
    tau_target_s: float
    i_out_inf: float
    gain: float
    copy_mismatch: float
    power_on: dict
    power_off: dict
    wave: dict
    t_on: float
    t_off: float
    wall_s: float

    def figures(self) -> dict:
        """The numbers, without the wave (``results.json``)."""
        return {k: v for k, v in vars(self).items() if k != "wave"}


# ------------------------------------------------------------------------------------------ hysteresis
def measure_hysteresis(
    bias: CellBias = PAPER,
    ctx: Ctx | None = None,
    *,
    mc_seed: int | None = None,
    step: float = 0.5e-12,
    name: str = "hysteresis",
) -> Hysteresis:
    """DC sweeps of the input up then down; thresholds where the state node crosses VDD/2."""
    ctx = ctx or Ctx()
    lo, top = 0.5 * bias.i_down, 1.4 * bias.i_up
    vecs = [X_NODE, "i(vm)", "i(vdd)", "i(vddb)"]
    spec = SimSpec(
        f"BMRU hysteresis ({ctx.corner})",
        _cell_body(bias, "DC 0"),
        (Analysis.dc("Iin", lo, top, step, "up", vecs), Analysis.dc("Iin", top, lo, step, "dn", vecs)),
        corner=ctx.corner,
        mc_seed=mc_seed,
    )
    res = ctx.simulate(spec, name)
    up, dn = res["up"], res["dn"]
    th_up = crossing(up["scale"], up[X_NODE], VDD / 2)
    th_dn = crossing(dn["scale"], dn[X_NODE], VDD / 2)
    mid = bias.centre
    out_high = float(np.interp(mid, dn["scale"][::-1], dn["i(vm)"][::-1]))
    out_low = float(np.interp(mid, up["scale"], up["i(vm)"]))
    return Hysteresis(
        th_up=th_up,
        th_down=th_dn,
        out_high=out_high,
        out_low=out_low,
        err_up=th_up / bias.i_up - 1,
        err_down=th_dn / bias.i_down - 1,
        err_alpha=out_high / bias.i_alpha - 1 if bias.i_alpha else float("nan"),
        curves={"up": up, "dn": dn},
        wall_s=res.wall_s,
    )


# ------------------------------------------------------------------------------------------ retention
def measure_retention(
    bias: CellBias = PAPER,
    ctx: Ctx | None = None,
    *,
    hold: float = 0.15,
    pulse: float = 2e-3,
    name: str = "retention",
) -> dict:
    """Reset, hold at the window centre, set pulse, hold, reset pulse, hold; drift and delays."""
    ctx = ctx or Ctx()
    tr = 10e-6
    t = [0.0]
    v = [bias.reset_level]
    windows = []  # (start, end, expected state)
    now = 2e-3

    def go(level: float) -> None:
        t.extend([now, now + tr])
        v.extend([v[-1], level])

    go(bias.centre)
    windows.append((now, now + hold, 0))
    now += hold
    set_at = now
    go(bias.set_level)
    now += pulse
    go(bias.centre)
    windows.append((now, now + hold, 1))
    now += hold
    reset_at = now
    go(bias.reset_level)
    now += pulse
    go(bias.centre)
    windows.append((now, now + hold, 0))
    now += hold
    stop = now
    spec = cells.pwl(t, v)
    vecs = [X_NODE, "i(vm)"] + POWER_VECS
    sim = SimSpec(
        f"BMRU retention ({ctx.corner})",
        _cell_body(bias, spec),
        (Analysis.tran(fmt(min(0.5e-3, hold / 20)), stop, "tran", vecs),),
        corner=ctx.corner,
    )
    res = ctx.simulate(sim, name, tran_stop={"tran": stop})
    tab = res["tran"]
    tt, x, io = tab["scale"], tab[X_NODE], tab["i(vm)"]
    rows = []
    for k, (a, b, want) in enumerate(windows):
        m = (tt >= a + 1e-3) & (tt <= b)
        state = (x[m] < VDD / 2).astype(int)
        ok = bool(np.all(state == want))
        lo, hi = float(io[m].min()), float(io[m].max())
        ref = bias.i_alpha or 1e-12
        rows.append(
            {
                "window": k,
                "expected_state": want,
                "held_s": b - a,
                "state_ok": ok,
                "i_out_start_nA": float(io[m][0]) / NA,
                "i_out_end_nA": float(io[m][-1]) / NA,
                "drift_rel_alpha": (hi - lo) / ref,
                "x_min_V": float(x[m].min()),
                "x_max_V": float(x[m].max()),
                **powers_nw(tab, a + 1e-3, b),
            }
        )
    set_delay = crossing(tt, x, VDD / 2, start=int(np.searchsorted(tt, set_at))) - set_at
    reset_delay = crossing(tt, x, VDD / 2, start=int(np.searchsorted(tt, reset_at))) - reset_at
    return {
        "windows": rows,
        "set_delay_s": set_delay,
        "reset_delay_s": reset_delay,
        "hold_s": hold,
        "wave": tab,
        "wall_s": res.wall_s,
    }


# ------------------------------------------------------------------------------------------ DPI
def measure_dpi(
    params: DpiParams = DpiParams(),
    ctx: Ctx | None = None,
    *,
    i_in: float = 0.5 * NA,
    quick: bool = False,
    name: str = "dpi",
) -> DpiResponse:
    """Step response: tau from the rise (63 %) and from an exponential fit of the decay; gain."""
    ctx = ctx or Ctx()
    tau = params.tau_target
    t_on = 5e-3
    t_off = t_on + (5 if quick else 8) * tau
    stop = t_off + (4 if quick else 6) * tau
    spec = cells.pwl([0, t_on, t_on + 10e-6, t_off, t_off + 10e-6], [0, 0, i_in, i_in, 0])
    body = (
        f"Xd in o1 o2 vdd vddb {params.cell} C={fmt(params.c)} I_TAU={fmt(params.i_tau)} I_TH={fmt(params.i_th)}\n"
        f"Iin vsrc in {spec}\nVo1 o1 0 {VOUT:g}\nVo2 o2 0 {VOUT:g}\n"
    )
    vecs = ["i(vo1)", "i(vo2)"] + POWER_VECS
    sim = SimSpec(
        f"DPI step response ({ctx.corner})",
        body,
        (Analysis.tran(fmt(tau / 40), stop, "tran", vecs),),
        corner=ctx.corner,
    )
    res = ctx.simulate(sim, name, tran_stop={"tran": stop})
    tab = res["tran"]
    t, io = tab["scale"], tab["i(vo1)"]
    i0 = time_avg(t, io, t_on - 2e-3, t_on)
    i_inf = time_avg(t, io, t_off - 2e-3, t_off)
    m = t > t_on
    t_rise = crossing(t[m], io[m], i0 + (1 - np.exp(-1)) * (i_inf - i0)) - t_on
    m = (t > t_off) & (io < 0.8 * i_inf) & (io > 0.2 * i_inf)
    tau_fall = float(-1 / np.polyfit(t[m], np.log(io[m]), 1)[0]) if m.sum() > 3 else float("nan")
    return DpiResponse(
        tau_rise_s=t_rise,
        tau_fall_s=tau_fall,
        tau_target_s=tau,
        i_out_inf=i_inf,
        gain=i_inf / i_in,
        copy_mismatch=time_avg(t, tab["i(vo2)"], t_off - 2e-3, t_off) / i_inf - 1,
        power_on=powers_nw(tab, t_off - 2e-3, t_off),
        power_off=powers_nw(tab, stop - 2e-3, stop),
        wave=tab,
        t_on=t_on,
        t_off=t_off,
        wall_s=res.wall_s,
    )


def calibrate_dpi(
    ctx: Ctx | None = None,
    *,
    target_tau: float = 10e-3,
    i_in: float = 0.5 * NA,
    start: DpiParams = DpiParams(),
    iterations: int = 3,
) -> tuple[DpiParams, list[dict]]:
    """Adjust ``I_TAU`` (tau ~ 1/I_TAU, aiming the geometric mean of rise and fall) and ``I_TH`` (gain 1)."""
    p = start
    log = []
    for _ in range(iterations):
        r = measure_dpi(p, ctx, i_in=i_in, quick=True, name="dpi_cal")
        tau_eff = float(np.sqrt(r.tau_rise_s * r.tau_fall_s))
        log.append(
            {
                "i_tau_pA": p.i_tau / 1e-12,
                "i_th_pA": p.i_th / 1e-12,
                "tau_rise_ms": r.tau_rise_s * 1e3,
                "tau_fall_ms": r.tau_fall_s * 1e3,
                "gain": r.gain,
            }
        )
        p = DpiParams(
            c=p.c,
            i_tau=p.i_tau * tau_eff / target_tau,
            # kind n: the gain is I_TH / I_TAU (linear), so I_TH follows I_TAU and then the gain error
            i_th=p.i_th * tau_eff / target_tau / r.gain if p.kind == "n" else p.i_th * (1 / r.gain) ** 1.2,
            tau_target=target_tau,
            kind=p.kind,
        )
    return p, log


def dpi_corners(ctx: Ctx, *, quick: bool = True, corners: tuple[str, ...] = CORNERS) -> list[dict]:
    """Both DPIs (:attr:`DpiParams.kind` ``p``: the first, ``n``: kappa-matched, calibrated at tt)
    at every corner: tau of the rise and of the decay, their worst relative error, the gain.

    Why two: the first DPI's output pFET reads the capacitor node that the nFET pair integrates,
    so its output is the pair's first-order state to the power kappa_p / kappa_n; the corners move
    that ratio (0.84 fs to 1.02 sf), which splits rise and decay (8.2 / 11.3 ms at fs) and moves
    the gain (0.73-1.27; its I_TH reference is a pFET diode driving an nFET gate). ``dpi_n``
    integrates and reads with nFETs and takes its references from nFET diodes.
    """
    rows = []
    for corner in corners:
        c = Ctx(corner=corner, timeout=ctx.timeout, keep_dir=ctx.keep_dir)
        for kind, params in (("p", DpiParams()), ("n", DPI_N)):
            d = measure_dpi(params, c, quick=quick, name=f"dpi_{kind}_{corner}")
            ctx.sim_wall_s += c.sim_wall_s
            ctx.decks += c.decks
            tgt = d.tau_target_s
            rows.append(
                {
                    "corner": corner,
                    "dpi": kind,
                    "tau_rise_ms": d.tau_rise_s * 1e3,
                    "tau_fall_ms": d.tau_fall_s * 1e3,
                    "tau_error_max": max(abs(d.tau_rise_s / tgt - 1), abs(d.tau_fall_s / tgt - 1)),
                    "gain": d.gain,
                    "core_nW_on": d.power_on["core_nW"],
                }
            )
    return rows
