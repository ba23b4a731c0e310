"""The single-cell checks of ``analog-check``: BMRU hysteresis and retention, the DPI's step
response and both DPIs over the process corners (:mod:`codesign.analog.measure_cells`)."""

from __future__ import annotations

from pathlib import Path

from codesign.analog import report as rep
from codesign.analog.cells import DpiParams
from codesign.analog.check_registry import Check, CheckOptions, Figures, Say
from codesign.analog.mapping import NA
from codesign.analog.measure_cells import (
    PAPER,
    CellBias,
    DpiResponse,
    Hysteresis,
    dpi_corners,
    measure_dpi,
    measure_hysteresis,
    measure_retention,
)
from codesign.analog.sim import Ctx

SETTINGS = (
    PAPER,
    CellBias(0.2 * NA, 0.3 * NA, 0.25 * NA),
    CellBias(0.1 * NA, 0.5 * NA, 1.0 * NA),
    CellBias(0.5 * NA, 1.0 * NA, 0.5 * NA),
)
"""Bias settings of the full hysteresis check (quick: the paper's only)."""


def _quick(options: CheckOptions) -> dict:
    return {"quick": options.quick}


# ------------------------------------------------------------------------------------------ hysteresis
def run_hysteresis(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say) -> tuple[Hysteresis, list[dict]]:
    hy = measure_hysteresis(PAPER, ctx, step=2e-12 if options.quick else 1e-12)
    prog = []
    for k, st in enumerate(SETTINGS[:1] if options.quick else SETTINGS):
        h = hy if k == 0 else measure_hysteresis(st, ctx, step=1e-12, name=f"hysteresis_{k}")
        prog.append(
            {
                "I_DOWN_nA": st.i_down / NA,
                "I_UP_nA": st.i_up / NA,
                "I_ALPHA_nA": st.i_alpha / NA,
                "th_down_nA": h.th_down / NA,
                "th_up_nA": h.th_up / NA,
                "out_nA": h.out_high / NA,
                "err_down": h.err_down,
                "err_up": h.err_up,
                "err_alpha": h.err_alpha,
            }
        )
    return hy, prog


def summarize_hysteresis(
    measured: tuple[Hysteresis, list[dict]], _options: CheckOptions, out: Path
) -> Figures:
    hy, prog = measured
    ok = all(max(abs(p["err_down"]), abs(p["err_up"]), abs(p["err_alpha"])) <= 0.05 for p in prog)
    rep.write_hysteresis(out, hy, prog)
    metrics = hy.figures() | {"settings": prog}
    return Figures(
        ok,
        metrics,
        f"up {hy.th_up / NA:.4f} nA ({hy.err_up:+.1%}), down {hy.th_down / NA:.4f} nA "
        f"({hy.err_down:+.1%}), out {hy.out_high / NA:.4f} nA ({hy.err_alpha:+.1%}); "
        f"{len(prog)} bias setting(s), all within 5%: {ok}",
    )


# ------------------------------------------------------------------------------------------ retention
def run_retention(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say) -> dict:
    return measure_retention(PAPER, ctx, hold=0.01 if options.quick else 0.15)


def summarize_retention(rt: dict, options: CheckOptions, out: Path) -> Figures:
    hold = rt["hold_s"]
    need = hold if options.quick else 0.1
    ok = all(
        w["state_ok"] and w["held_s"] >= need - 1e-9 and w["drift_rel_alpha"] < 0.01 for w in rt["windows"]
    )
    rep.write_retention(out, rt)
    worst = max(w["drift_rel_alpha"] for w in rt["windows"])
    return Figures(
        ok,
        {k: v for k, v in rt.items() if k != "wave"},
        f"{len(rt['windows'])} holds of {hold * 1e3:.0f} ms at 0.25 nA, states kept: "
        f"{all(w['state_ok'] for w in rt['windows'])}, worst output drift {worst:.1e} alpha; set / reset "
        f"delay {rt['set_delay_s'] * 1e6:.0f} / {rt['reset_delay_s'] * 1e6:.0f} us at 0.1 nA overdrive",
    )


# ------------------------------------------------------------------------------------------ DPI
def run_dpi(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say) -> DpiResponse:
    return measure_dpi(DpiParams(), ctx, quick=options.quick)


def summarize_dpi(dp: DpiResponse, _options: CheckOptions, out: Path) -> Figures:
    tgt = dp.tau_target_s
    ok = abs(dp.tau_rise_s / tgt - 1) <= 0.10 and abs(dp.tau_fall_s / tgt - 1) <= 0.10
    rep.write_dpi(out, dp)
    return Figures(
        ok,
        dp.figures(),
        f"tau rise {dp.tau_rise_s * 1e3:.2f} ms, decay {dp.tau_fall_s * 1e3:.2f} ms (target "
        f"{tgt * 1e3:.0f} ms), gain {dp.gain:.3f}",
    )


def run_dpi_corners(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say) -> list[dict]:
    return dpi_corners(ctx, quick=options.quick)


def summarize_dpi_corners(rows: list[dict], _options: CheckOptions, out: Path) -> Figures:
    rep.write_csv(out / "dpi_corners.csv", rows)
    worst = {kind: max(r["tau_error_max"] for r in rows if r["dpi"] == kind) for kind in ("p", "n")}
    return Figures(
        worst["n"] <= 0.10,
        {"rows": rows},
        f"tau (rise and decay) over tt/ss/ff/sf/fs worst {worst['n'] * 100:.1f} % from 10 ms with the "
        f"kappa-matched dpi_n (the first dpi: {worst['p'] * 100:.1f} %); gain "
        + ", ".join(
            f"{kind} {min(r['gain'] for r in rows if r['dpi'] == kind):.2f}-"
            f"{max(r['gain'] for r in rows if r['dpi'] == kind):.2f}"
            for kind in ("p", "n")
        ),
    )


HYSTERESIS = Check(
    "hysteresis",
    _quick,
    run_hysteresis,
    summarize_hysteresis,
    target="thresholds within 5% of 0.35 / 0.15 nA, output within 5% of alpha = 0.5 nA",
)
RETENTION = Check(
    "retention",
    _quick,
    run_retention,
    summarize_retention,
    target="each state held >= 100 ms at the retain level, output drift < 1% of alpha",
)
DPI = Check("dpi", _quick, run_dpi, summarize_dpi, target="tau (rise 63% and decay fit) within 10% of 10 ms")
DPI_CORNERS = Check("dpi_corners", _quick, run_dpi_corners, summarize_dpi_corners)
