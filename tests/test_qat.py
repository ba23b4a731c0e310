"""QAT: the grid seen in training is exactly the grid the export rounds to."""

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
