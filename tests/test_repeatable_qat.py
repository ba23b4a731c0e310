"""QAT trains on the grids export deploys: rows whose bias limits their weight scale, behind a
minGRU layer whose state grid export calibrates."""

from __future__ import annotations

import torch

from codesign.nn.hardware import HardwareStack
from codesign.quant.fixed_point import pow2_frac
from codesign.quant.qat import add_fake_quant
from codesign.quant.stack import quantize_stack
from codesign.train.trainer import plain_state

LAYERS = [{"cell": "mingru", "size": 6}, {"cell": "cmru", "size": 8, "eps": 1.0}]
FORMAT = {"weight_bits": 8, "bias_bits": 16, "alpha_bits": 8, "state_bits": 16, "gate_bits": 6}


def test_rows_behind_a_mingru_train_on_the_weight_grid_export_gives_them() -> None:
    """Export gives row i the scale ``min(pow2_frac(max|w_i|, 8), pow2_frac(|b_i|, 16) - z_frac)``;
    behind a minGRU (z_frac ~12) a bias near 1 leaves 2-3 fractional weight bits, and QAT trained
    those rows on the 8-bit weight grid alone: export rounded them again, coarsely."""
    torch.manual_seed(0)
    model = HardwareStack(3, 2, LAYERS)
    with torch.no_grad():
        model.cells[1].candidate.bias.normal_(0, 1.5)
        model.cells[1].threshold.bias.normal_(0, 1.5)
    add_fake_quant(model, 8, 8, input_frac=5, input_bits=8, bias_bits=16, gate_bits=6, state_bits=16)
    x = torch.randn(64, 12, 3)
    model.eval()
    with torch.no_grad():
        model(x)  # the batch the grid behind the minGRU is estimated from
    state = plain_state(model)
    plain = HardwareStack(3, 2, LAYERS)
    plain.load_state_dict(state)
    manifest, _ = quantize_stack(
        plain,
        name="q",
        input_bits=8,
        input_frac=5,
        layer_formats=[FORMAT, FORMAT],
        readout_formats={"weight_bits": 8},
        calibration=x,  # the same sequences: the estimated grid is the calibrated one
    )
    z_frac = manifest.layers[0].state_frac
    wc, wb = state["cells.1.candidate.weight"].double(), state["cells.1.threshold.weight"].double()
    bc, bb = state["cells.1.candidate.bias"].double(), state["cells.1.threshold.bias"].double()
    capped = 0
    for i in range(wc.shape[0]):
        by_weight = pow2_frac(float(torch.maximum(wc[i].abs(), wb[i].abs()).max()), 8)
        by_bias = pow2_frac(float(torch.maximum(bc[i].abs(), bb[i].abs())), 16) - z_frac
        e = min(by_weight, by_bias)
        capped += by_bias < by_weight
        for row in (wc[i], wb[i]):
            codes = row * 2.0**e
            assert torch.equal(codes, codes.round()), f"row {i}: QAT weights finer than the export's 2**-{e}"
    assert capped >= 2, "the case needs rows whose bias limits the weight scale"
