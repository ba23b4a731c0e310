"""The report as markdown, and the lane-sweep Pareto plot (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

from codesign.atomic import atomic_path

__all__ = ["pareto_png", "render_markdown"]


def _f(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def pareto_png(report: dict, path: str | Path) -> None:
    """Cycles per step against memory bits and against multipliers, one point per lane count.

    The dashed line joins the points no other point beats in both size and cycles (Pareto front).
    """
    from codesign.extras import require

    require("matplotlib", "the report's Pareto plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = report["sweep"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, label in (
        (axes[0], "memory_bits", "memory bits (plan.memories)"),
        (axes[1], "multipliers", "multipliers (lanes x matrices, all engines)"),
    ):
        xs = [p[key] for p in pts]
        ys = [p["cycles_per_step"] for p in pts]
        ax.plot(xs, ys, "o", color="tab:blue")
        front = sorted(
            (x, y)
            for x, y in zip(xs, ys, strict=True)
            if not any(a <= x and b < y for a, b in zip(xs, ys, strict=True))
        )
        ax.plot([x for x, _ in front], [y for _, y in front], "--", color="tab:orange", label="Pareto front")
        ax.legend(fontsize=8)
        for p, x, y in zip(pts, xs, ys, strict=True):
            ax.annotate(f"P={p['lanes']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(label)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("cycles per step (pysim)")
    fig.suptitle(f"{report['bundle']}: lanes P against cycles per step", fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def _n(x: float) -> str:
    """Three significant digits without exponents (``28699``, ``387``, ``2.44``, ``0.0153``)."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _side_by_side(report: dict) -> list[str]:
    """The "Digital and analog side by side" section (``report['side_by_side']``, ``report['analog']``)."""
    an, rows = report.get("analog"), report.get("side_by_side")
    if not an or not rows:
        return []
    rate, t = report["latency"]["step_rate_hz"], report["inputs"]["steps_per_sequence"]
    out = ["## Digital and analog side by side", ""]
    if an["status"] == "measured":
        out += [
            f"Analog: {an['circuit']}, sky130, ngspice {an['ngspice_version']}: {an['scaling']}. "
            f"Inputs: {an['inputs']}. Netlists `{an['netlists']}`, decks and logs `{an['decks']}`.",
            "",
        ]
    else:
        out += [f"Analog (ngspice): **{an['status']}**: {an['reason']}", ""]
    out += [
        f"| path | figure | energy per step | energy per inference ({t:.0f} steps) | power at {rate:g} steps/s | includes | excludes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['path']} | {r['figure']} | {_n(r['pj_per_step'])} pJ | {_n(r['nj_per_inference'])} nJ | "
            f"{_n(r['power_uw'] * 1e3)} nW | {r['includes']} | {r['excludes']} |"
        )
    out.append("")
    if an["status"] == "measured":
        layer = an["layer_nw"]
        per = ", ".join(
            f"n{r['neuron']} {r['total_nW']:.2f}"
            + ("" if r["golden_agreement"] is None else f" ({r['golden_agreement']:.0%})")
            for r in an["per_neuron"]
        )
        out += [
            f"Analog layer power: core {layer['core_nW']:.1f} nW + bias {layer['bias_nW']:.1f} nW = "
            f"{layer['cells']:.1f} nW"
            + (
                f" (shared bias block {an['shared_bias_nw']['bias_nW']:.2f} nW, counted once)"
                if an["shared_bias_nw"]
                else ""
            )
            + f"; candidate input currents {layer['input_nW']:.1f} nW. Per simulated neuron, core + bias in nW "
            f"(agreement with the golden model): {per}"
            + (
                f"; mean agreement {an['golden_agreement_mean']:.0%}"
                if an["golden_agreement_mean"] is not None
                else ""
            )
            + f" ({an['golden_agreement_note']}).",
            "",
            "Assumptions: " + "; ".join(an["assumptions"]) + ".",
            "",
        ]
    return out


def _latency_section(report: dict) -> list[str]:
    """The title, the network and the latency table (with the synthesised devices, if any)."""
    lat, n = report["latency"], report["network"]
    layers = ", ".join(
        f"{la['cell']} d={la['size']}" + (" + DCLS" if la.get("dcls") else "") for la in n["layers"]
    )
    out = [
        f"# Report: {report['bundle']} at P = {report['lanes']}",
        "",
        f"Build `{report['build']}`: {n['input']['size']} inputs, {layers}, readout {n['readout']['classes']} classes "
        f"({'per step' if n['readout']['per_step'] else n['readout']['pooling']}).",
        f"Inputs: {report['inputs']['source']}.",
        "",
        "## Latency",
        "",
        "| figure | value |",
        "|---|---|",
        f"| cycles per step (pysim, total cycles / steps, fill, drain and readout included) | {lat['cycles_per_step']:.1f} |",
        *_stride_rows(lat),
        f"| steady state: busiest layer's busy cycles per step | {_f(lat['steady_cycles_per_step'])} |",
        f"| clock | {lat['clock_mhz']:g} MHz: {lat['clock_source']} |",
        f"| time per step | {lat['time_per_step_us']:.2f} us |",
        f"| step rate / period | {lat['step_rate_hz']:g} steps/s / {lat['step_period_us']:.0f} us |",
        f"| real-time margin (period / time per step) | {lat['realtime_margin']:.0f} x |",
        f"| lowest clock that keeps up | {lat['min_clock_mhz_for_rate'] * 1e3:.1f} kHz |",
        *_link_rows(lat.get("link")),
        "",
    ]
    if lat["synth"]:
        out += [
            "| device | part | status | Fmax MHz (target) | LUT | FF | BRAM | DSP |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for s in lat["synth"]:
            r = s["resources"] or {}
            out.append(
                f"| {s['device']} | {s['part']} | {s['status']} | {_f(s['fmax_mhz'], 4)} ({_f(s['target_mhz'])}) | "
                f"{r.get('lut', '-')} | {r.get('ff', '-')} | {r.get('bram', '-')} | {r.get('dsp', '-')} |"
            )
        out.append("")
    return out


def _energy_section(report: dict) -> list[str]:
    """The energy proxy: per step, per inference, power, per MAC, by category and by memory."""
    lat, en = report["latency"], report["energy"]
    dyn = en["dynamic_pj"]
    return [
        "## Energy and power (proxy)",
        "",
        f"An ASIC proxy, not the FPGA's power (the FPGA estimate is the next section). Per-operation energies: "
        f"{en['table_source']}. Leakage: {en['leak_note']}.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| dynamic energy per step | {en['dynamic_pj_per_step']:.1f} pJ |",
        f"| leakage per step (at {lat['step_rate_hz']:g} steps/s) | {en['leakage_pj_per_step']:.1f} pJ ({en['leakage_uw']:.2f} uW) |",
        f"| energy per inference ({report['inputs']['steps_per_sequence']:.0f} steps) | {en['energy_uj_per_inference'] * 1e3:.2f} nJ "
        f"(dynamic {en['dynamic_uj_per_inference'] * 1e3:.2f} nJ) |",
        f"| power at {lat['step_rate_hz']:g} steps/s | {en['power_uw']:.3f} uW (dynamic {en['dynamic_power_uw']:.3f} uW) |",
        f"| dynamic pJ per MAC (all costs / MACs) | {_f(en['pj_per_mac_dynamic'])} |",
        f"| pJ per synaptic operation (layer MACs, leakage included) | {_f(en['pj_per_synaptic_op'])} |",
        "",
        "Dynamic energy per inference by category (pJ): "
        + ", ".join(f"{k} {v:.0f}" for k, v in dyn.items() if k != "total")
        + ". By memory: "
        + ", ".join(
            f"{k} {v:.0f}" for k, v in sorted(en["dynamic_pj_by_memory"].items(), key=lambda kv: -kv[1]) if v
        )
        + ".",
        "",
    ]


def _fpga_power_section(report: dict) -> list[str]:
    """The FPGA power estimate (codesign.report.fpga_power), beside the ASIC proxy above."""
    fp = report.get("fpga_power")
    if not fp:
        return []
    t = report["inputs"]["steps_per_sequence"]
    share = fp["static_share"] or 0.0
    cls = ", ".join(f"{k} {v:.0f}" for k, v in fp["logic_pj_per_step_by_class"].items() if v)
    return [
        f"## FPGA power (estimate): {fp['part']} ({fp['device']})",
        "",
        f"**FPGA power (estimate): static {fp['static_mw']:.3f} mW, dynamic {fp['dynamic_mw']:.3f} mW at "
        f"{fp['clock_mhz']:g} MHz, {_n(fp['energy_uj_per_step'])} uJ per step and {_n(fp['energy_uj_per_inference'])} uJ "
        f"per inference at {fp['step_rate_hz']:g} steps/s.** This is the chip's power, beside the ASIC proxy above "
        f"(a 45 nm per-operation table); basis: {fp['basis']}.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| static (core) | {fp['static_mw']:.3f} mW: {fp['static_source']} |",
        f"| clock (tree + {fp['activity'].get('ffs', 0):.0f} flip-flops, every cycle) | {fp['clock_mw']:.3f} mW "
        f"({fp['clock_pj_per_cycle']:.1f} pJ a cycle) |",
        f"| logic energy per step (toggles, memory, DSP) | {fp['logic_pj_per_step']:.0f} pJ ({cls}) |",
        f"| dynamic at {fp['clock_mhz']:g} MHz, a step every {fp['cycles_per_step']:.0f} cycles | {fp['dynamic_mw']:.3f} mW |",
        f"| busy share at {fp['step_rate_hz']:g} steps/s | {100 * fp['duty']:.3f} % |",
        f"| average at {fp['step_rate_hz']:g} steps/s (static + clock + logic x rate) | {fp['average_mw']:.3f} mW |",
        f"| energy per step / per inference ({t:.0f} steps) | {_n(fp['energy_uj_per_step'])} uJ / "
        f"{_n(fp['energy_uj_per_inference'])} uJ |",
        "",
        f"Basis: {fp['basis_note']}. Between steps the design is taken to idle with only its clock running "
        "(no clock gating), so at a low step rate the "
        f"static power ({100 * share:.0f} % of the average here) and the idle clock dominate and the computation "
        f"is a small part. Static power is the data sheet's typical core current; {fp['energies_note']}.",
        "",
    ]


def _area_section(report: dict) -> list[str]:
    """Memory bits by kind and the ASIC proxy (when ``codesign area`` ran)."""
    ar = report["area"]
    out = [
        "## Area",
        "",
        "Memory bits by kind (plan.memories): "
        + ", ".join(f"{k} {v}" for k, v in ar["memory_bits_by_kind"].items())
        + f"; total {ar['memory_bits']}.",
        "",
    ]
    if ar["asic"]:
        a = ar["asic"]
        out += [
            f"ASIC proxy (`codesign area`, {ar['asic_source']}): {a['total_um2'] / 1e6:.4f} mm^2 sky130_fd_sc_hd "
            f"(logic {a.get('logic_um2', 0):.0f} um^2, memories as {a.get('memory_model')} {a.get('memory_um2', 0):.0f} um^2).",
            "",
        ]
    else:
        out += ["No `codesign area` JSON in the build (run `codesign area BUILD`).", ""]
    return out


def _lanes_section(report: dict, png_name: str | None) -> list[str]:
    """The lane sweep: cycles per step against memory, multipliers and energy."""
    out = [
        "## Lanes: cycles per step against size",
        "",
        "| P | cycles/step | steady (busiest layer) | memory bits | multipliers | dynamic nJ/inference |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["sweep"]:
        out.append(
            f"| {r['lanes']} | {r['cycles_per_step']:.1f} | {_f(r['steady_cycles_per_step'])} | {r['memory_bits']} | "
            f"{r['multipliers']} | {r['dynamic_uj_per_inference'] * 1e3:.2f} |"
        )
    if png_name:
        out += ["", f"![lanes against cycles per step]({png_name})"]
    return out


def _dense_and_references(report: dict) -> list[str]:
    """Event-driven MACs against dense, then published chips beside this design."""
    en, dv = report["energy"], report["dense_vs_event"]
    out = [
        "",
        "## Dense against event-driven",
        "",
        f"MACs per inference: measured (event-driven, zeros and unchanged states skipped) {dv['measured_macs_per_inference']:.0f}, "
        f"dense (T x d x m x matrices per layer + readout) {dv['dense_macs_per_inference']:.0f}: "
        f"{100 * dv['ratio']:.1f}% of dense. Events per step (all layers): {dv['events_per_step']:.2f}."
        + (
            f" Selective update: {100 * dv['update_rate']:.1f}% of the selective layers' neuron-steps open (p)."
            if dv.get("update_rate") is not None
            else ""
        ),
        "",
        "## Published reference figures (other chips, processes and tasks; scale only)",
        "",
        "| chip | figure | source |",
        "|---|---|---|",
    ]
    for ref in report["references"]:
        out.append(f"| {ref['chip']} | {ref['figure']} | {ref['source']} |")
    out += [
        "",
        f"This design (proxy): {en['energy_uj_per_inference'] * 1e3:.2f} nJ per inference at {en['power_uw']:.3f} uW, "
        f"{_f(en['pj_per_synaptic_op'])} pJ per synaptic operation (layer MAC) with leakage, "
        f"{_f(en['pj_per_mac_dynamic'])} pJ per MAC without it (leakage dominates at a low step rate).",
        "",
    ]
    return out


def _limits_section(report: dict) -> list[str]:
    """What the figures leave out (and whether the analog power is beside them)."""
    an = report.get("analog") or {}
    return [
        "## Not in these figures",
        "",
        "Energy is a 45 nm per-operation proxy, not a power simulation: control, clock tree, I/O and "
        "wiring are not counted, leakage is an assumed figure per um^2. "
        + (
            f"The analog figures are ngspice runs of {len(an['neurons_simulated'])} of the layer's "
            f"{an['layer_neurons']} cells, scaled to the layer, for the recurrent cells only (see above)."
            if an.get("status") == "measured"
            else "The analog (ngspice) power of the cells is not shown beside it: "
            + (f"{an['status']}: {an['reason']}." if an else "not measured.")
        ),
    ]


def render_markdown(report: dict, png_name: str | None, command: str | None) -> str:
    """The report as Markdown, section by section (the figures come from :func:`build_figures`)."""
    out = (
        _latency_section(report)
        + _energy_section(report)
        + _fpga_power_section(report)
        + _area_section(report)
        + _lanes_section(report, png_name)
        + _dense_and_references(report)
        + _side_by_side(report)
        + _limits_section(report)
    )
    if command:
        out += ["", "Made by:", "", "```", command, "```"]
    return "\n".join(out) + "\n"


def _stride_rows(lat: dict) -> list[str]:
    """With an input stride S, a step is an input frame and the layers step once per S frames."""
    stride = lat.get("input_stride", 1)
    if stride == 1:
        return []
    return [
        f"| input stride (input frames per layer step) | {stride} |",
        f"| cycles per layer step | {lat['cycles_per_layer_step']:.1f} |",
    ]


def _link_rows(link: dict | None) -> list[str]:
    """The serial link's lines of the latency table (codesign.report.link)."""
    if not link:
        return []
    faster = ", ".join(f"{int(b) / 1e6:g} Mbaud {m:.0f} x" for b, m in link["margin_at_faster_bauds"].items())
    return [
        f"| UART bytes per step in / out ({link['baud']} baud, 10 bits a byte) | "
        f"{link['bytes_per_step_in']:.1f} / {link['bytes_per_step_out']:.2f} |",
        f"| link time per step / accelerator time per step | {link['link_us_per_step']:.1f} us / "
        f"{link['compute_us_per_step']:.2f} us ({link['bottleneck']} bound) |",
        f"| real-time margin counting the link | {link['realtime_margin']:.1f} x (faster links: {faster}) |",
    ]
