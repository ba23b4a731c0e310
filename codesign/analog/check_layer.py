"""The BMRU layer check of ``analog-check`` (``agreement``): a bmru bundle's layer netlist driven by
test inputs in ngspice, its states against the golden model (:func:`~codesign.analog.trace.run_bundle_trace`)."""

from __future__ import annotations

from pathlib import Path

from codesign.analog import report as rep
from codesign.analog.check_inputs import default_agreement_bundle, load_check_bundle, sequence_inputs
from codesign.analog.check_registry import Check, CheckOptions, Figures, Say, file_digest
from codesign.analog.sim import Ctx
from codesign.analog.trace import run_bundle_trace


def spec_agreement(options: CheckOptions) -> dict:
    return {
        "quick": options.quick,
        "bundle": file_digest(options.bundle),
        "inputs": file_digest(options.inputs),
        "sequences": options.sequences,
        "steps": options.steps,
        "neurons": options.neurons,
    }


def run_agreement(options: CheckOptions, ctx: Ctx, _deps: dict, _say: Say):
    given = load_check_bundle(Path(options.bundle) if options.bundle else None)
    bundle = given if given is not None and given.net.eps == 0 else default_agreement_bundle()
    xq, source = sequence_inputs(
        bundle,
        Path(options.inputs) if options.inputs and bundle is given else None,
        options.sequences or (1 if options.quick else 4),
        options.steps or (12 if options.quick else 25),
    )
    d = bundle.net.hidden_size
    n = options.neurons
    pick = list(range(min(n, d))) if n else (list(range(min(2, d))) if options.quick else None)
    return run_bundle_trace(bundle, xq, ctx, neurons=pick), bundle, source, xq.shape


def summarize_agreement(measured, _options: CheckOptions, out: Path) -> Figures:
    tr, bundle, source, shape = measured
    rep.write_agreement(out, tr, bundle, source)
    rate = tr.agreement
    metrics = {
        "bundle": bundle.manifest.name,
        "inputs": source,
        "rows": tr.rows,
        "agreement": rate,
        "layer_power": tr.power,
    }
    roots = [r["root_error_max_margin_pA"] for r in tr.rows if r["root_errors"]]
    detail = (
        f"BMRU layer {bundle.manifest.name} ({source}, {shape[0]} x {shape[1]} steps, 10 ms frames): "
        f"state agreement {rate:.1%} over {sum(r['compared'] for r in tr.rows)} neuron-steps ("
        + ", ".join(f"n{r['neuron']} {r['state_agreement']:.0%}" for r in tr.rows)
        + ")"
        + (
            f"; every run of disagreement starts at or right after a step within {max(roots):.2f} pA of a threshold"
            if roots
            else ""
        )
    )
    return Figures(None, metrics, detail)


AGREEMENT = Check(
    "agreement",
    spec_agreement,
    run_agreement,
    summarize_agreement,
    target="gate / state sequence of the layer netlist vs the golden model (reported)",
)
