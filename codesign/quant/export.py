"""Quantize a trained :class:`HardwareNet` and write its deployment bundle.

Scales (all powers of two, see ``docs/integer-semantics.md``):

* gate weights and biases of neuron i share ``2**-e_i``, the largest that lets both the weights
  (``weight.bits``) and the biases (``bias.bits``, at the accumulator scale ``2**-(e_i + input.frac)``) fit;
* ``alpha`` and the state share ``2**-state_frac``, the finest at which ``alpha`` fits ``alpha.bits``;
* readout weights share ``2**-e_o``; the readout bias sits at the logit scale ``2**-(e_o + state_frac)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from codesign import __version__
from codesign.bundle import FORMAT_VERSION, Bundle, Formats, Manifest, NetworkSpec, save_bundle
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs, run_golden
from codesign.nn.net import HardwareNet
from codesign.quant.deployed import DeployedNet
from codesign.quant.fixed_point import pow2_frac, quantize
from codesign.train.trainer import accuracy, load_run, make_recipe_task

SUPPORTED = "cell cmru with eps in {-1, 0, 1} or cell bmru (eps 0), one layer, last pooling"


def check_deployable(model: torch.nn.Module) -> None:
    """Refuse models the version-1 bundle cannot describe, saying why."""
    if not isinstance(model, HardwareNet):
        raise CodesignError(
            f"a {type(model).__name__} is not deployable: only the hardware profile (recipe model.arch: hardware) "
            f"maps to the accelerator. Supported: {SUPPORTED}"
        )
    cell = model.cell_name
    if cell == "alphacmru":
        raise CodesignError(
            "cell alphacmru is not deployable yet: its input-dependent alpha needs a quantized alpha "
            f"projection the bundle does not describe. Supported: {SUPPORTED}"
        )
    if model.rnn.eps not in (-1.0, 0.0, 1.0):
        raise CodesignError(
            f"eps {model.rnn.eps} is not deployable: the datapath computes eps * h exactly only for eps in "
            f"{{-1, 0, 1}} (anneal eps to 0 for BMRU hardware). Supported: {SUPPORTED}"
        )


def _row_fracs(w: torch.Tensor, b: torch.Tensor, wbits: int, bbits: int, input_frac: int) -> list[int]:
    return [
        min(pow2_frac(float(w[i].abs().max()), wbits), pow2_frac(float(b[i].abs()), bbits) - input_frac)
        for i in range(w.shape[0])
    ]


def quantize_model(
    model: HardwareNet, formats: Formats
) -> tuple[DeployedNet, dict[str, np.ndarray], Formats]:
    """Integer weights, the matching float64 fake-quant model, and formats with ``state_frac`` set."""
    check_deployable(model)
    f = formats
    rnn = model.rnn
    with torch.no_grad():
        wc, bc = rnn.candidate.weight.double(), rnn.candidate.bias.double()
        wb, bb = rnn.threshold.weight.double(), rnn.threshold.bias.double()
        alpha = rnn.alpha.double()
        wo, bo = model.readout.weight.double(), model.readout.bias.double()
    for name, t in [("candidate", wc), ("threshold", wb), ("alpha", alpha), ("readout", wo)]:
        if not torch.isfinite(t).all():
            raise CodesignError(f"model parameter '{name}' holds NaN or Inf; cannot quantize")
    gate_w = torch.maximum(wc.abs(), wb.abs())
    gate_b = torch.maximum(bc.abs(), bb.abs())
    e = torch.tensor(
        _row_fracs(gate_w, gate_b, f.weight.bits, f.bias.bits, f.input.frac), dtype=torch.float64
    )
    state_frac = pow2_frac(float(alpha.abs().max()), f.alpha.bits)
    e_o = min(
        pow2_frac(float(wo.abs().max()), f.readout_weight.bits),
        pow2_frac(float(bo.abs().max()), f.readout_bias.bits) - state_frac,
    )
    q = {
        "w_cand": quantize(wc, e[:, None], f.weight.bits),
        "b_cand": quantize(bc, e + f.input.frac, f.bias.bits),
        "w_thr": quantize(wb, e[:, None], f.weight.bits),
        "b_thr": quantize(bb, e + f.input.frac, f.bias.bits),
        "alpha": quantize(alpha, state_frac, f.alpha.bits),
        "w_out": quantize(wo, e_o, f.readout_weight.bits),
        "b_out": quantize(bo, e_o + state_frac, f.readout_bias.bits),
    }
    formats = f.model_copy(update={"state_frac": state_frac})
    fq = HardwareNet(
        model.rnn.input_size, model.rnn.hidden_size, wo.shape[0], cell=model.cell_name, eps=model.rnn.eps
    ).double()
    with torch.no_grad():
        fq.rnn.candidate.weight.copy_(q["w_cand"].double() * 2.0 ** -e[:, None])
        fq.rnn.candidate.bias.copy_(q["b_cand"].double() * 2.0 ** -(e + f.input.frac))
        fq.rnn.threshold.weight.copy_(q["w_thr"].double() * 2.0 ** -e[:, None])
        fq.rnn.threshold.bias.copy_(q["b_thr"].double() * 2.0 ** -(e + f.input.frac))
        fq.rnn.alpha.copy_(q["alpha"].double() * 2.0**-state_frac)
        fq.readout.weight.copy_(q["w_out"].double() * 2.0**-e_o)
        fq.readout.bias.copy_(q["b_out"].double() * 2.0 ** -(e_o + state_frac))
    deployed = DeployedNet(
        fq, f.input.bits, f.input.frac, f.state.bits, state_frac, logit_frac=e_o + state_frac
    )
    return deployed, {k: v.numpy() for k, v in q.items()}, formats


def export_run(run_dir: str | Path, out: str | Path, formats: Formats | None = None) -> tuple[Bundle, dict]:
    """Quantize a run's best checkpoint, check torch == golden on its test set, write the bundle."""
    recipe, model, summary = load_run(run_dir)
    formats = formats or recipe.quant
    deployed, weights, formats = quantize_model(model, formats)
    net = model.rnn
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name=recipe.name,
        network=NetworkSpec(
            input_size=net.input_size,
            hidden_size=net.hidden_size,
            num_classes=model.readout.out_features,
            cell=model.cell_name,
            eps=int(net.eps),
        ),
        formats=formats,
    )
    bundle = Bundle(manifest, weights)
    task = make_recipe_task(recipe)
    x_test, y_test = task.split("test", recipe.seed)
    golden = run_golden(bundle, quantize_inputs(bundle, x_test.numpy()))
    torch_logits = deployed.integer_logits(x_test).numpy()
    mismatches = int((torch_logits != golden.logits).any(axis=1).sum())
    if mismatches:
        raise AssertionError(f"quantized torch and golden disagree on {mismatches} test sequences: a bug")
    report = {
        "recipe": recipe.name,
        "run": str(run_dir),
        "task": recipe.task.model_dump(),
        "seed": recipe.seed,
        "float_test_accuracy": accuracy(model, x_test, y_test),
        "quantized_test_accuracy": float((golden.classes == y_test.numpy()).mean()),
        "torch_vs_golden_mismatches": mismatches,
        "test_sequences": len(y_test),
        "codesign_version": __version__,
        "best_val_accuracy": summary.get("best_val_accuracy"),
    }
    bundle = save_bundle(out, manifest.model_copy(update={"provenance": report}), weights)
    return bundle, report
