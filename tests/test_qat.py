"""QAT: the grid seen in training is exactly the grid the export rounds to."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.nn.hardware import HardwareStack
from codesign.quant.fixed_point import pow2_frac
from codesign.quant.qat import FakeQuant, add_fake_quant
from codesign.train.trainer import plain_state


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), bits=st.integers(2, 10), scale=st.floats(1e-3, 1e3))
def test_fake_quant_values_lie_on_the_export_grid(seed: int, bits: int, scale: float) -> None:
    w = torch.randn(6, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale
    q = FakeQuant(bits)(w)
    for row_w, row_q in zip(w, q, strict=True):
        f = pow2_frac(float(row_w.abs().max()), bits)
        codes = row_q * 2.0**f
        assert torch.equal(codes, codes.round()) and codes.abs().max() <= 2 ** (bits - 1) - 1


def test_straight_through_gradient() -> None:
    w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    (FakeQuant(3)(w) * 2.0).sum().backward()
    assert torch.equal(w.grad, torch.full_like(w, 2.0))


def test_cmru_rows_share_a_scale_and_bake_into_plain_weights() -> None:
    torch.manual_seed(0)
    model = HardwareStack(3, 2, [{"cell": "cmru", "size": 4}])
    add_fake_quant(model, 4, 6)
    state = plain_state(model)
    cand, thr = state["cells.0.candidate.weight"], state["cells.0.threshold.weight"]
    for i in range(4):
        f = pow2_frac(float(torch.maximum(cand[i].abs().max(), thr[i].abs().max())), 4)
        for row in (cand[i], thr[i]):
            assert torch.equal(row * 2.0**f, (row * 2.0**f).round())
    plain = HardwareStack(3, 2, [{"cell": "cmru", "size": 4}])
    plain.load_state_dict(state)  # no parametrization keys left


def test_qat_feeds_the_model_inputs_on_the_deployed_input_grid() -> None:
    """Fine-tuning must see the inputs the hardware sees (8 bits, 2**-5 grid, saturated)."""
    torch.manual_seed(0)
    model = HardwareStack(3, 2, [{"cell": "cmru", "size": 4}])
    seen: list[torch.Tensor] = []
    model.cells[0].register_forward_pre_hook(lambda m, args: seen.append(args[0].detach().clone()))
    add_fake_quant(model, 8, 6, input_frac=5, input_bits=8)
    x = torch.tensor([[[0.01, 0.02, 5.0], [-0.03, -9.0, 1.0 / 3.0]]])
    model(x)
    expected = torch.tensor([[[0.0, 1 / 32, 127 / 32], [-1 / 32, -4.0, 11 / 32]]])
    assert seen[0].dtype == x.dtype and torch.equal(seen[0], expected)


def test_every_cmru_bias_and_dcls_weight_trains_on_its_export_grid() -> None:
    """Deeper layers and DCLS fronts too: baked QAT values survive the export's rounding unchanged."""
    from codesign.bundle.io import Bundle, check_weights
    from codesign.quant.stack import deployed_from_bundle, quantize_stack

    torch.manual_seed(3)
    layers = [
        {"cell": "cmru", "size": 16, "eps": 1.0, "dcls": {"taps": 2, "span": 4}},
        {"cell": "bmru", "size": 12},
        {"cell": "cmru", "size": 16, "eps": -1.0, "dcls": {"taps": 2, "span": 3}},
    ]
    model = HardwareStack(3, 2, layers)
    with torch.no_grad():
        for cell in model.cells:
            cell.alpha.mul_(torch.rand(()) * 3)
            cell.candidate.bias.normal_(0, 0.7)
            cell.threshold.bias.normal_(0, 0.7)
    add_fake_quant(model, 4, 6, input_frac=3, input_bits=8, dcls_weight_bits=5)
    plain = HardwareStack(3, 2, layers)
    plain.load_state_dict(plain_state(model))
    manifest, weights = quantize_stack(
        plain,
        name="q",
        input_bits=8,
        input_frac=3,
        layer_formats=[{"weight_bits": 4, "alpha_bits": 6, "dcls_weight_bits": 5}] * 3,
        readout_formats={"weight_bits": 4},
        calibration=torch.randn(4, 7, 3),
    )
    bundle = Bundle(manifest, check_weights(manifest, weights))
    for index in range(3):
        # not coarser either: with 32 random biases per layer some integer code is odd
        codes = np.concatenate([bundle.layer_weights(index)[k] for k in ("b_cand", "b_thr")])
        assert (codes % 2 == 1).any(), f"layer {index}: QAT used a coarser bias grid than the export"
    deployed = deployed_from_bundle(bundle).model

    def same_up_to_one_power_of_two(got: torch.Tensor, want: torch.Tensor) -> bool:
        """The deployed model keeps rows on their accumulator scale: equal up to 2**k per row."""
        k = want.abs().argmax()
        scale = got.flatten()[k] / want.flatten()[k]
        return bool(torch.log2(scale) == torch.log2(scale).round()) and torch.equal(got, want * scale)

    for index, (ours, theirs) in enumerate(zip(plain.cells, deployed.cells, strict=True)):
        # the deployed DCLS keeps integer weights, so what reaches the cell is scaled by 2**e_d
        front_ours, front_theirs = plain.fronts[index], deployed.fronts[index]
        dscale = 1.0
        if hasattr(front_ours, "weight"):
            w_ours, w_theirs = front_ours.weight.detach().double(), front_theirs.weight.detach().double()
            assert same_up_to_one_power_of_two(w_theirs, w_ours), f"layer {index} DCLS weights"
            dscale = float(w_theirs.abs().max() / w_ours.abs().max())
        for name in ("candidate", "threshold"):
            a, b = getattr(ours, name), getattr(theirs, name)
            for i in range(a.weight.shape[0]):
                row_ours = torch.cat([a.weight[i], a.bias[i : i + 1]]).detach().double()
                row_theirs = torch.cat([b.weight[i], b.bias[i : i + 1] / dscale]).detach().double()
                assert same_up_to_one_power_of_two(row_theirs, row_ours), (index, name, i)


def test_qat_sees_the_rest_gates_the_export_writes() -> None:
    """A float near-tie must not train as an open gate that the export then closes (or vice versa)."""
    model = HardwareStack(2, 2, [{"cell": "cmru", "size": 1, "eps": 1.0}])
    with torch.no_grad():
        model.cells[0].candidate.weight.copy_(torch.tensor([[0.4693, -0.2]]))
        model.cells[0].threshold.weight.copy_(torch.tensor([[0.3305, 0.1]]))
        model.cells[0].candidate.bias.fill_(0.1380)
        model.cells[0].threshold.bias.fill_(-0.1395)
    add_fake_quant(model, 7, 6, input_frac=0, input_bits=4)
    cell = model.cells[0]
    assert cell.candidate.bias.abs().item() < cell.threshold.bias.abs().item()  # closed, as in float
    (cell.candidate.bias.sum() + cell.threshold.bias.sum()).backward()  # straight-through gradient
    assert cell.candidate.parametrizations.bias.original.grad.item() == 1.0


def _deployed(model: HardwareStack, calibration: torch.Tensor, fmt: dict):
    """QAT values baked into a plain copy, exported, and rebuilt from the bundle alone."""
    from codesign.bundle.io import Bundle, check_weights
    from codesign.quant.stack import deployed_from_bundle, quantize_stack

    plain = HardwareStack(3, 2, model.layer_specs).double()
    plain.load_state_dict(plain_state(model))
    manifest, weights = quantize_stack(
        plain,
        name="q",
        input_bits=8,
        input_frac=4,
        layer_formats=[fmt],
        readout_formats={"weight_bits": 8},
        calibration=calibration,
    )
    return deployed_from_bundle(Bundle(manifest, check_weights(manifest, weights)))


def test_alphacmru_trains_on_the_deployed_alpha_grid() -> None:
    """The states QAT computes are the deployed states: alpha_t on its alpha_bits grid, rounded.

    Before, QAT trained a continuous alpha_t that the datapath floors onto a grid set by the
    largest |alpha_t|: a small alpha_t lost up to a whole step, and eps = 1 summed the losses
    (tests/test_deployed_equals_trained.py, alphaCMRU at 8 bits: 99.33 % trained, 98.00 % deployed).
    """
    from codesign.quant.fixed_point import quantize_input

    torch.manual_seed(1)
    layers = [{"cell": "alphacmru", "size": 6, "eps": 1.0}]
    model = HardwareStack(3, 2, layers).double()
    with torch.no_grad():  # small alpha_t beside large ones: a few grid steps wide
        model.cells[0].alpha_proj.bias.copy_(torch.tensor([0.013, -0.021, 0.4, 0.05, -0.9, 0.007]))
    add_fake_quant(model, 8, 6, input_frac=4, input_bits=8)
    x = quantize_input(torch.randn(16, 20, 3, generator=torch.Generator().manual_seed(2)), 8, 4)
    with torch.no_grad():
        trained = model.cells[0](x)[0]
    deployed = _deployed(model, x, {"weight_bits": 8, "alpha_bits": 6})
    outs, _ = deployed.trace(x)
    assert torch.equal(outs[0], trained)


def test_mingru_trains_on_the_deployed_gate_grid() -> None:
    """The minGRU gate QAT computes is the deployed one: rounded to 2**-gate_bits, not floored."""
    from codesign.quant.fixed_point import quantize_input

    torch.manual_seed(4)
    model = HardwareStack(3, 2, [{"cell": "mingru", "size": 6}]).double()
    add_fake_quant(model, 8, 6, input_frac=4, input_bits=8, gate_bits=4)
    x = quantize_input(torch.randn(16, 20, 3, generator=torch.Generator().manual_seed(5)), 8, 4)
    cell = model.cells[0]
    with torch.no_grad():
        trained = cell.gate_quant(cell.gate(x))
    deployed = _deployed(model, x, {"weight_bits": 8, "gate_bits": 4}).model.cells[0]
    with torch.no_grad():
        on_grid = torch.floor(deployed.gate(x) * 2.0**4) * 2.0**-4  # the datapath's shr onto the gate grid
    assert torch.equal(on_grid, trained)
    assert not torch.equal(torch.floor(cell.gate(x) * 2.0**4) * 2.0**-4, trained)  # rounding matters here
