"""The native CMRU checks of ``analog-check``: the ladder's Fig. 4C programme (``cmru_ladder``) and
native CMRU neurons of a cmru eps 1 bundle against the golden model (``ladder_agreement``)."""

from __future__ import annotations

from pathlib import Path

from codesign.analog import report as rep
from codesign.analog.check_inputs import default_ladder_bundle, load_check_bundle, sequence_inputs
from codesign.analog.check_registry import Check, CheckOptions, Figures, Say, file_digest
from codesign.analog.ladder_trace import run_ladder_trace
from codesign.analog.measure_cells import PAPER_POWER_NW
from codesign.analog.measure_ladder import measure_ladder
from codesign.analog.ngspice import SimulationError
from codesign.analog.sim import Ctx


# ------------------------------------------------------------------------------------------ cmru_ladder
def spec_ladder(options: CheckOptions) -> dict:
    return {"quick": options.quick, "stages": options.stages}


def run_ladder(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say) -> dict | SimulationError:
    try:
        return measure_ladder(options.stages, ctx, quick=options.quick)
    except SimulationError as err:
        return err


def summarize_ladder(ld: dict | SimulationError, options: CheckOptions, out: Path) -> Figures:
    if isinstance(ld, SimulationError):
        return Figures(False, {"error": str(ld)}, str(ld))
    lv = ld["levels"]
    ok = all(abs(r["error_rel_alpha"]) <= 0.05 and r["drift_rel_alpha"] <= 0.05 for r in lv)
    rep.write_ladder(out, ld)
    p = ld["power"]
    stair = ld["staircase_s"].get("set held")
    detail = (
        f"{options.stages} stages: {len(lv)} levels within 5% of n alpha: {ok} (worst "
        f"{max(abs(r['error_rel_alpha']) for r in lv):.1%}); power core {p['core_nW']:.2f} + bias "
        f"{p['bias_nW']:.2f} = {p['core_nW'] + p['bias_nW']:.2f} nW (paper {PAPER_POWER_NW} nW)"
    )
    if stair:
        detail += "; held set level: +alpha at " + ", ".join(f"{x * 1e3:.1f}" for x in stair) + " ms"
    return Figures(ok, {k: v for k, v in ld.items() if k not in ("wave", "marks")}, detail)


# ------------------------------------------------------------------------------------------ ladder_agreement
def spec_ladder_agreement(options: CheckOptions) -> dict:
    return {
        "quick": options.quick,
        "stages": options.stages,
        "bundle": file_digest(options.bundle),
        "inputs": file_digest(options.inputs),
        "steps": options.steps,
        "neurons": options.neurons,
    }


def run_ladder_agreement(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say):
    given = load_check_bundle(Path(options.bundle) if options.bundle else None)
    lb = given if given is not None and given.net.eps == 1 else default_ladder_bundle()
    inputs = Path(options.inputs) if options.inputs and lb is given else None
    xl, source = sequence_inputs(lb, inputs, 1, options.steps or (6 if options.quick else 20))
    nl = min(options.neurons or 2, lb.net.hidden_size)
    stages = max(options.stages, 6)
    try:
        ltr = run_ladder_trace(lb, xl, ctx, stages=stages, neurons=list(range(nl)))
    except SimulationError as err:
        return err
    return ltr, lb, source, xl.shape[1], stages


def summarize_ladder_agreement(measured, _options: CheckOptions, out: Path) -> Figures:
    if isinstance(measured, SimulationError):
        return Figures(None, {"error": str(measured)}, str(measured))
    ltr, lb, source, steps, stages = measured
    rep.write_ladder_agreement(out, ltr, lb, source)
    metrics = {
        "bundle": lb.manifest.name,
        "inputs": source,
        "rows": ltr.rows,
        "agreement": ltr.agreement,
        "stages": stages,
        "power": ltr.power,
    }
    detail = (
        f"native CMRU {lb.manifest.name} ({source}, {steps} steps, {stages} stages, 60 ms "
        f"frames): stage-count agreement {ltr.agreement:.1%} over "
        f"{sum(r['compared'] for r in ltr.rows)} neuron-steps ("
        + ", ".join(
            f"n{r['neuron']} {r['count_agreement']:.0%}, {r['wrong_updates']} of {r['steps']} steps mis-updated"
            + (
                f" (within {r['wrong_update_max_margin_pA']:.1f} pA of a threshold)"
                if r["wrong_updates"]
                else ""
            )
            for r in ltr.rows
        )
        + f"); power {ltr.power['core_nW'] + ltr.power['bias_nW']:.1f} nW for {len(ltr.rows)} neurons"
    )
    return Figures(None, metrics, detail)


CMRU_LADDER = Check(
    "cmru_ladder",
    spec_ladder,
    run_ladder,
    summarize_ladder,
    target="each set / reset event moves the output by one alpha (level within 5% of n alpha), holds",
)
LADDER_AGREEMENT = Check(
    "ladder_agreement",
    spec_ladder_agreement,
    run_ladder_agreement,
    summarize_ladder_agreement,
    target="stage count of native CMRU neurons vs the golden state (eps 1, reported)",
)
