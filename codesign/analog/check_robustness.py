"""The ``robustness`` check of ``analog-check``: the paper-setting BMRU's thresholds over Monte Carlo
mismatch draws (sky130 ``mc_mm_switch``, seed k is ``.option seed=k``) and process corners, with
(full run) the reference neuron's golden trace and the DPI at every corner; spread and yield."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codesign.analog import report as rep
from codesign.analog.cells import DpiParams
from codesign.analog.check_inputs import reference_bundle
from codesign.analog.check_registry import Check, CheckOptions, Figures, Say
from codesign.analog.mapping import NA, AnyBundle
from codesign.analog.measure_cells import PAPER, measure_dpi, measure_hysteresis
from codesign.analog.ngspice import SimulationError
from codesign.analog.sim import Ctx
from codesign.analog.trace import run_bundle_trace


def spec_robustness(options: CheckOptions) -> dict:
    return {"quick": options.quick, "seeds": options.seeds, "corners": list(options.corners)}


def run_robustness(options: CheckOptions, ctx: Ctx, _deps: dict, say: Say) -> list[dict]:
    ref_bundle, ref_x = reference_bundle()
    rows = []
    for corner in ("tt", *options.corners):
        cctx = Ctx(corner=corner, timeout=options.timeout)
        draws = [None] + list(range(1, options.seeds + 1)) if corner == "tt" else [None]
        for seed in draws:
            say(f"      robustness: corner {corner}, mismatch seed {'-' if seed is None else seed}")
            rows.append(_robustness_row(cctx, corner, seed, ref_bundle, ref_x, options.quick))
        ctx.sim_wall_s += cctx.sim_wall_s
        ctx.decks += cctx.decks
    return rows


def summarize_robustness(rows: list[dict], _options: CheckOptions, out: Path) -> Figures:
    rep.write_robustness(out, rows)
    mc = [r for r in rows if r["corner"] == "tt" and r["seed"] != ""]
    summary = _mc_summary(mc)
    metrics = {"rows": rows, "montecarlo": summary}
    nan = float("nan")
    corner_txt = "; ".join(
        f"{r['corner']}: up {r.get('th_up_nA', nan):.3f} down {r.get('th_down_nA', nan):.3f} nA"
        + (f", trace {r['trace_agreement']:.0%}" if "trace_agreement" in r else "")
        + (
            f", DPI tau {r['dpi_tau_rise_ms']:.1f}/{r['dpi_tau_fall_ms']:.1f} ms"
            if "dpi_tau_rise_ms" in r
            else ""
        )
        for r in rows
        if r["corner"] != "tt"
    )
    detail = (
        f"MC {len(mc)} seeds: up {summary.get('up_mean_nA', nan):.4f} nA sigma "
        f"{summary.get('up_sigma_rel', nan):.1%}, down {summary.get('down_mean_nA', nan):.4f}"
        f" nA sigma {summary.get('down_sigma_rel', nan):.1%}, out sigma "
        f"{summary.get('out_sigma_rel', nan):.1%}; window yield {summary.get('window_yield', 0):.0%}"
    )
    if "trace_yield" in summary:
        detail += f", trace yield {summary['trace_yield']:.0%}"
    if corner_txt:
        detail += "; " + corner_txt
    return Figures(None, metrics, detail, results={"robustness": metrics, "montecarlo_summary": summary})


def _robustness_row(
    ctx: Ctx, corner: str, seed: int | None, ref_bundle: AnyBundle, ref_x: np.ndarray, quick: bool
) -> dict:
    row: dict[str, object] = {"corner": corner, "seed": "" if seed is None else seed}
    try:
        h = measure_hysteresis(PAPER, ctx, mc_seed=seed, step=1e-12, name=f"hyst_{corner}_{seed}")
    except SimulationError as err:
        return row | {"error": str(err)}
    up, dn, out = h.th_up, h.th_down, h.out_high
    row |= {
        "th_up_nA": up / NA,
        "th_down_nA": dn / NA,
        "out_nA": out / NA,
        "window_ok": bool(
            PAPER.reset_level < dn < PAPER.centre < up < PAPER.set_level
            and abs(out / PAPER.i_alpha - 1) < 0.10
        ),
    }
    if not quick:
        try:
            tr = run_bundle_trace(ref_bundle, ref_x, ctx, mc_seed=seed, name=f"ref_trace_{corner}_{seed}")
            row |= {"trace_agreement": tr.agreement, "trace_ok": tr.agreement == 1.0}
        except SimulationError as err:
            row |= {"trace_agreement": float("nan"), "trace_ok": False, "error": str(err)}
        if seed is None:
            try:
                d = measure_dpi(DpiParams(), ctx, quick=True, name=f"dpi_{corner}")
                row |= {
                    "dpi_tau_rise_ms": d.tau_rise_s * 1e3,
                    "dpi_tau_fall_ms": d.tau_fall_s * 1e3,
                    "dpi_gain": d.gain,
                }
            except SimulationError as err:
                row |= {"error": str(err)}
    return row


def _mc_summary(rows: list[dict]) -> dict:
    rows = [r for r in rows if "th_up_nA" in r]
    if not rows:
        return {}
    up = np.array([r["th_up_nA"] for r in rows])
    dn = np.array([r["th_down_nA"] for r in rows])
    out = np.array([r["out_nA"] for r in rows])
    s = {
        "n": len(rows),
        "up_mean_nA": float(up.mean()),
        "up_sigma_rel": float(up.std(ddof=1) / up.mean()) if len(up) > 1 else 0.0,
        "down_mean_nA": float(dn.mean()),
        "down_sigma_rel": float(dn.std(ddof=1) / dn.mean()) if len(dn) > 1 else 0.0,
        "out_mean_nA": float(out.mean()),
        "out_sigma_rel": float(out.std(ddof=1) / out.mean()) if len(out) > 1 else 0.0,
        "window_yield": float(np.mean([r["window_ok"] for r in rows])),
    }
    err = np.maximum(np.abs(up - PAPER.i_up / NA), np.abs(dn - PAPER.i_down / NA)) * 1e3  # pA
    for margin in (5, 10, 20, 35, 50):
        s[f"yield_thresholds_within_{margin}pA"] = float(np.mean(err < margin))
    tr = [r for r in rows if "trace_ok" in r]
    if tr:
        s["trace_yield"] = float(np.mean([r["trace_ok"] for r in tr]))
        s["trace_agreement_mean"] = float(np.mean([r["trace_agreement"] for r in tr]))
    return s


ROBUSTNESS = Check(
    "robustness",
    spec_robustness,
    run_robustness,
    summarize_robustness,
    target="Monte Carlo mismatch and process corners: spread and yield (reported)",
)
