"""``codesign margin``: the real-time margin of every reference bundle on the iCEBreaker, link included.

For each bundle of ``models/bundles/`` and each lane count (P = 1 and 4 by default), on the
iCEBreaker's UP5K clocked straight from its 12 MHz oscillator, at 100 steps per second:

* whether the build fits the UP5K, by the mapper's resource prediction
  (:func:`codesign.hw.cost.predict`: logic cells fitted, block RAMs, SPRAMs and DSPs counted);
* accelerator cycles per step, from the cycle model (:func:`codesign.hw.pysim.simulate`, the
  build's own options) on the bundle's own test inputs (:func:`codesign.report.measure.load_inputs`), no synthesis;
* the UART's bytes per step each way and the margin counting the link
  (:func:`codesign.report.link.link_latency`) at 115,200 baud and at 3 Mbaud, the fastest rate a
  12 MHz clock makes with the UART's 4 cycles a bit, which the iCEBreaker's FT2232H carries
  (it goes to 12 Mbaud);
* the bottleneck (link or accelerator) and the FPGA power estimate at 100 steps per second
  (:mod:`codesign.hw.power`, the coarse basis: cycle-model counters and predicted logic cells).

Every build is made with ``--target up5k --weights frozen --share-multipliers auto --counters basic``,
or with ``--weights spram`` where only that fits (the ``weights`` column).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from codesign.errors import CodesignError

__all__ = ["ICEBREAKER_CLOCK_MHZ", "LINK_BAUDS", "margin_row", "margin_table", "render_margin"]

ICEBREAKER_CLOCK_MHZ = 12.0
LINK_BAUDS = (115_200, 3_000_000)
"""The default rate of ``codesign board`` and the fastest the 12 MHz clock makes (divisor 4)."""
BUILD_OPTIONS = {"weights": "frozen", "share": "auto", "counters": "basic", "target": "up5k"}


def _fit(bundle, lanes: int) -> tuple[dict, dict]:
    """``(options, predicted UP5K resources with what does not fit)``: the ROM build, else the one
    with the largest weight matrices in SPRAM (``--weights spram``) when only that fits."""
    from codesign.hw.cost import build_plan, get_device, predict

    device = get_device("up5k")
    first = None
    for weights in ("frozen", "spram"):
        opts = {**BUILD_OPTIONS, "weights": weights}
        res = predict(build_plan(bundle, lanes, **opts), device)
        fit = {**res.as_dict(), "misses": res.misses(device)}
        if not fit["misses"]:
            return opts, fit
        first = first or (opts, fit)
    return first


def margin_row(
    bundle_dir: Path, lanes: int, *, sequences: int = 2, steps: int | None = None, step_rate: float = 100.0
) -> dict:
    """One row of the table: the bundle at ``lanes`` on the iCEBreaker (see the module docstring)."""
    from codesign.bundle.io import load_bundle
    from codesign.hw.build import build_rtl
    from codesign.hw.power import coarse_activity, estimate, load_power_data
    from codesign.hw.pysim import simulate
    from codesign.report.link import link_latency
    from codesign.report.measure import load_inputs

    bundle = load_bundle(bundle_dir)
    row: dict = {"bundle": Path(bundle_dir).name, "lanes": lanes}
    widest = max(layer.size for layer in bundle.manifest.layers)
    if lanes > widest:
        return {**row, "status": f"P = {lanes} exceeds the widest layer (d = {widest})"}
    opts, fit = _fit(bundle, lanes)
    row["resources"], row["weights"] = fit, opts["weights"]
    if fit["misses"]:
        return {**row, "status": "does not fit the UP5K: " + "; ".join(fit["misses"])}
    with tempfile.TemporaryDirectory(prefix="codesign-margin-") as tmp:
        info = build_rtl(Path(bundle_dir), Path(tmp) / "build", lanes=lanes, **opts)
    seqs, source = load_inputs(bundle, sequences=sequences, steps=steps)
    result = simulate(bundle, seqs, lanes=lanes, **opts)
    run = {
        "steps": sum(len(x) for x in seqs),
        "sequences": len(seqs),
        "cycles": int(result.cycles),
        "counters": {k: int(v) for k, v in result.counters.items()},
    }
    cps = run["cycles"] / run["steps"]
    links = {
        str(baud): link_latency(
            info, seqs, baud=baud, cycles_per_step=cps, clock_mhz=ICEBREAKER_CLOCK_MHZ, step_rate=step_rate
        )
        for baud in LINK_BAUDS
    }
    luts = fit["logic_cells"]
    activity = coarse_activity(
        info["plan"],
        run["counters"],
        steps=run["steps"],
        cycles=run["cycles"],
        luts=luts,
        ffs=luts // 2,
        family="ice40",
    )
    power = estimate(
        load_power_data("up5k"),
        activity,
        clock_mhz=ICEBREAKER_CLOCK_MHZ,
        step_rate=step_rate,
        steps_per_inference=run["steps"] / run["sequences"],
        cycles_per_step=cps,
    )
    return {
        **row,
        "status": "ok",
        "inputs": source,
        "cycles_per_step": cps,
        "accelerator_us_per_step": cps / ICEBREAKER_CLOCK_MHZ,
        "accelerator_margin": 1e6 / step_rate / (cps / ICEBREAKER_CLOCK_MHZ),
        "link": links,
        "fpga_power": {
            k: power[k]
            for k in (
                "static_mw",
                "clock_mw",
                "logic_pj_per_step",
                "average_mw",
                "energy_uj_per_step",
                "duty",
            )
        },
    }


def margin_table(
    bundles_dir: Path,
    lanes: tuple[int, ...] = (1, 4),
    *,
    sequences: int = 2,
    steps: int | None = None,
    step_rate: float = 100.0,
    only: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Every bundle under ``bundles_dir`` (or those named in ``only``) at each lane count."""
    say = progress or (lambda t: print(f"margin: {t}", file=sys.stderr, flush=True))
    dirs = sorted(p for p in Path(bundles_dir).iterdir() if (p / "manifest.yaml").is_file())
    if only:
        unknown = sorted(set(only) - {p.name for p in dirs})
        if unknown:
            raise CodesignError(f"no bundle {', '.join(unknown)} under {bundles_dir}", path=bundles_dir)
        dirs = [p for p in dirs if p.name in only]
    if not dirs:
        raise CodesignError("no bundle (a folder with manifest.yaml) here", path=bundles_dir)
    rows = []
    for d in dirs:
        for p in lanes:
            say(f"{d.name} P = {p}")
            try:
                rows.append(margin_row(d, p, sequences=sequences, steps=steps, step_rate=step_rate))
            except CodesignError as err:
                rows.append({"bundle": d.name, "lanes": p, "status": f"not built: {err}"})
    return {
        "board": "iCEBreaker (iCE40 UP5K, 12 MHz oscillator, FT2232H)",
        "clock_mhz": ICEBREAKER_CLOCK_MHZ,
        "step_rate_hz": step_rate,
        "bauds": list(LINK_BAUDS),
        "build_options": BUILD_OPTIONS,
        "rows": rows,
    }


def _ok_row(r: dict) -> str:
    slow, fast = (r["link"][str(b)] for b in LINK_BAUDS)
    fp = r["fpga_power"]
    return (
        f"| {r['bundle']} | {r['lanes']} | {r['weights']} | {r['resources']['logic_cells']} / {r['resources']['block_rams']} / "
        f"{r['resources']['dsps']} | {r['cycles_per_step']:.0f} | {r['accelerator_us_per_step']:.1f} | "
        f"{slow['bytes_per_step_in']:.1f} / {slow['bytes_per_step_out']:.2f} | "
        f"{slow['link_us_per_step']:.0f} | {slow['realtime_margin']:.1f} x, {slow['bottleneck']} | "
        f"{fast['realtime_margin']:.1f} x, {fast['bottleneck']} | {fp['average_mw']:.3f} | {fp['energy_uj_per_step']:.2f} |"
    )


def _summary(table: dict) -> list[str]:
    """One paragraph over the rows: the worst margins, the bottlenecks, the share of the power
    that is static or clock."""
    ok = [r for r in table["rows"] if r.get("status") == "ok"]
    if not ok:
        return []
    slow, fast = (str(b) for b in LINK_BAUDS)
    worst = min(ok, key=lambda r: r["link"][slow]["realtime_margin"])
    link_bound = sum(r["link"][slow]["bottleneck"] == "link" for r in ok)
    idle = [
        (r["fpga_power"]["static_mw"] + r["fpga_power"]["clock_mw"]) / r["fpga_power"]["average_mw"]
        for r in ok
    ]
    acc = max(ok, key=lambda r: r["accelerator_us_per_step"])
    return [
        "",
        (
            "Every build in the table keeps up"
            if worst["link"][slow]["realtime_margin"] >= 1
            else "Not every build keeps up"
        )
        + ": the smallest margin at 115,200 baud is "
        f"{worst['link'][slow]['realtime_margin']:.1f} x ({worst['bundle']}, P = {worst['lanes']}), at 3 Mbaud "
        f"{min(r['link'][fast]['realtime_margin'] for r in ok):.1f} x. The link is the bottleneck in "
        f"{link_bound} of {len(ok)} rows at 115,200 baud; the slowest accelerator ({acc['bundle']}, "
        f"P = {acc['lanes']}) takes {acc['accelerator_us_per_step']:.1f} us of the {1e6 / table['step_rate_hz']:.0f} us "
        f"step. The static power and the running clock are {100 * min(idle):.0f}-{100 * max(idle):.0f} % of the "
        "estimated FPGA power at this rate.",
    ]


def render_margin(table: dict, command: str | None) -> str:
    """The table as a Markdown page (the command that made it under it)."""
    rate, clock = table["step_rate_hz"], table["clock_mhz"]
    out = [
        "# Real-time margin on the iCEBreaker, link included",
        "",
        f"Every reference bundle on the {table['board']}, clocked at {clock:g} MHz, at {rate:g} steps per "
        f"second (a step period of {1e6 / rate:.0f} us). Margin = step period / the longer of the accelerator's "
        "and the UART's time per step (the UART is full duplex: a step costs its busier direction, 10 bits a "
        "byte). Cycles come from the cycle model on the bundle's own test inputs, resources from the mapper's "
        "prediction, not from synthesis. Builds: "
        + " ".join(
            f"`--{k.replace('_', '-') if k != 'share' else 'share-multipliers'} {v}`"
            for k, v in table["build_options"].items()
        )
        + " (`--weights spram` where only that fits the UP5K: the weights column).",
        "",
        f"The FPGA power is an **estimate** (`codesign/hw/power.py`, coarse basis: cycle-model counters and "
        f"predicted logic cells, approximate per-event energies): the average at {rate:g} steps/s, static core "
        "power + the running clock + the logic's energy per step x the rate. At this rate the accelerator is "
        "busy well under 1 % of the time, so the static power and the idle clock dominate.",
        "",
        f"| bundle | P | weights | LC / BRAM / DSP (UP5K 5280 / 30 / 8) | cycles/step | accelerator us/step | UART bytes/step in / out | "
        f"link us/step at 115,200 | margin at 115,200 baud | margin at 3 Mbaud | FPGA mW at {rate:g}/s (estimate) | uJ/step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    skipped = []
    for r in table["rows"]:
        if r.get("status") == "ok":
            out.append(_ok_row(r))
        else:
            skipped.append(f"- {r['bundle']} P = {r['lanes']}: {r['status']}")
    out += _summary(table)
    if skipped:
        out += [
            "",
            "Not in the table (with these options; `codesign rtl BUNDLE --device up5k` searches further "
            "mapping options, shared multipliers, folded words and shared update units among them, and "
            "can fit some of these, see [the FPGA flow](fpga.md)):",
            "",
            *skipped,
        ]
    if command:
        out += ["", "Made by:", "", "```", command, "```"]
    return "\n".join(out) + "\n"
