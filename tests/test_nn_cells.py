"""New cells: the parallel path equals the sequential reference (forward and every gradient), API checks.

float64, odd lengths, T = 1 and a length that takes the chunked scan path.
"""

import math

import pytest
import torch

from codesign.nn import (
    HSRU,
    LRU,
    DCLS1d,
    MGRADELayer,
    MinGRU,
    RhythmicGate,
    SelectiveUpdateGRU,
    SelectiveUpdateMinGRU,
    param_groups,
)
from codesign.nn.hsru import spike
from codesign.nn.surnn import step_gate

STEPS = [1, 4, 67]
BATCH, INPUT, HIDDEN = 3, 4, 5


def _flatten(result) -> list[torch.Tensor]:
    out = []
    for item in result:
        if isinstance(item, (tuple, list)):
            out.extend(_flatten(item))
        else:
            out.append(torch.view_as_real(item) if item.is_complex() else item)
    return out


def _run(cell: torch.nn.Module, mode: str, x: torch.Tensor, state, weights: list[torch.Tensor] | None = None):
    """Outputs and gradients (input, state, every parameter) of one evaluation in ``mode``."""
    cell.mode = mode
    cell.zero_grad()
    xr = x.clone().requires_grad_()
    state_r = None
    if state is not None:
        state_r = (
            tuple(s.clone().requires_grad_() for s in state)
            if isinstance(state, tuple)
            else state.clone().requires_grad_()
        )
    outs = _flatten(cell(xr, state_r))
    if weights is None:
        weights = [torch.randn_like(o) for o in outs]
    sum((o * w).sum() for o, w in zip(outs, weights, strict=True)).backward()
    states = list(state_r) if isinstance(state_r, tuple) else ([state_r] if state_r is not None else [])
    grads = (
        [xr.grad]
        + [s.grad for s in states]
        + [p.grad if p.grad is not None else torch.zeros_like(p) for p in cell.parameters()]
    )
    return [o.detach() for o in outs], grads, weights


def _assert_modes_agree(cell, x, state, fast="scan", skip_param=lambda name: False) -> None:
    outs_fast, grads_fast, w = _run(cell, fast, x, state)
    outs_seq, grads_seq, _ = _run(cell, "sequential", x, state, w)
    for a, b in zip(outs_fast, outs_seq, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    names = (
        ["input"]
        + [f"state{i}" for i in range(len(grads_fast) - 1 - len(list(cell.parameters())))]
        + [name for name, _ in cell.named_parameters()]
    )
    for name, a, b in zip(names, grads_fast, grads_seq, strict=True):
        if not skip_param(name):
            torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-9, msg=lambda m, n=name: f"{n}: {m}")


def _x(steps: int) -> torch.Tensor:
    return torch.randn(BATCH, steps, INPUT, dtype=torch.float64)


@pytest.mark.parametrize("steps", STEPS)
def test_mingru_scan_equals_sequential(steps: int) -> None:
    torch.manual_seed(steps)
    cell = MinGRU(INPUT, HIDDEN).double()
    _assert_modes_agree(cell, _x(steps), torch.randn(BATCH, HIDDEN, dtype=torch.float64))
    _assert_modes_agree(cell, _x(steps), None)


def test_mingru_is_eqs_32_to_34_and_gate_inits() -> None:
    torch.manual_seed(0)
    cell = MinGRU(2, 3).double()
    x = torch.randn(1, 2, 2, dtype=torch.float64)
    h, last = cell(x)
    w_z, w_h = cell.projection.weight[:3], cell.projection.weight[3:]
    b_z, b_h = cell.projection.bias[:3], cell.projection.bias[3:]
    h1 = torch.sigmoid(x[0, 0] @ w_z.T + b_z) * (x[0, 0] @ w_h.T + b_h)
    z2 = torch.sigmoid(x[0, 1] @ w_z.T + b_z)
    h2 = (1 - z2) * h1 + z2 * (x[0, 1] @ w_h.T + b_h)
    torch.testing.assert_close(h[0], torch.stack([h1, h2]))
    torch.testing.assert_close(last, h[:, -1])
    assert torch.all(MinGRU(2, 8, gate_bias_init="open").projection.bias[:8] > 3)
    assert torch.all(MinGRU(2, 8, gate_bias_init="closed").projection.bias[:8] < -3)
    ugi = torch.sigmoid(MinGRU(2, 8, gate_bias_init="ugi").projection.bias[:8])
    assert torch.all((ugi >= 1 / 8 - 1e-6) & (ugi <= 7 / 8 + 1e-6))
    with pytest.raises(ValueError, match="gate_bias_init"):
        MinGRU(2, 8, gate_bias_init="wide")


@pytest.mark.parametrize("gamma", ["tied", "learned"])
@pytest.mark.parametrize("steps", STEPS)
def test_lru_scan_equals_sequential(steps: int, gamma: str) -> None:
    torch.manual_seed(steps)
    cell = LRU(INPUT, HIDDEN, gamma=gamma).double()
    x0 = torch.randn(BATCH, HIDDEN, dtype=torch.complex128)
    _assert_modes_agree(cell, _x(steps), x0)


def test_lru_init_ring_and_normalisation() -> None:
    torch.manual_seed(0)
    cell = LRU(3, 256, r_min=0.5, r_max=0.8, max_phase=math.pi)
    lam = cell.eigenvalues().detach()
    assert torch.all((lam.abs() >= 0.5 - 1e-6) & (lam.abs() <= 0.8 + 1e-6))
    assert torch.all(lam.angle() >= -1e-6)  # phases in [0, pi]
    torch.testing.assert_close(cell.normalisation().detach(), torch.sqrt(1 - lam.abs() ** 2))
    y, x_last = cell(torch.randn(2, 9, 3))
    assert y.shape == (2, 9, 256) and y.dtype == torch.float32 and x_last.is_complex()
    with pytest.raises(ValueError, match="r_min"):
        LRU(3, 4, r_min=0.9, r_max=0.5)


@pytest.mark.parametrize("steps", STEPS)
def test_dcls_conv_equals_delay_line(steps: int) -> None:
    torch.manual_seed(steps)
    conv = DCLS1d(INPUT, kernel_count=3, kernel_length=6, sigma=0.7).double()
    _assert_modes_agree_single(conv, _x(steps))
    conv.hard()
    _assert_modes_agree_single(conv, _x(steps))


def _assert_modes_agree_single(module, x) -> None:
    outs = {}
    for mode in ("scan", "sequential"):
        module.mode = mode
        module.zero_grad()
        xr = x.clone().requires_grad_()
        y = module(xr)
        (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)).sum().backward()
        outs[mode] = [y.detach(), xr.grad] + [
            p.grad if p.grad is not None else torch.zeros_like(p) for p in module.parameters()
        ]
    for a, b in zip(outs["scan"], outs["sequential"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_dcls_kernel_hard_soft_and_clamp() -> None:
    torch.manual_seed(0)
    conv = DCLS1d(2, kernel_count=2, kernel_length=8, sigma=0.5).double()
    with torch.no_grad():
        conv.positions.copy_(
            torch.tensor([[1.3, 5.6], [0.2, 9.0]], dtype=torch.float64)
        )  # 9.0 lies beyond Gamma - 1 = 7
        conv.weight.copy_(torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64))
    n = torch.arange(8, dtype=torch.float64)
    expected = 1.0 * torch.exp(-0.5 * ((n - 1.3) / 0.5) ** 2) - 2.0 * torch.exp(-0.5 * ((n - 5.6) / 0.5) ** 2)
    torch.testing.assert_close(conv.kernel()[0], expected)
    assert conv.kernel()[1].argmax() == 7  # clamped to the last delay
    x = torch.randn(1, 20, 2, dtype=torch.float64)
    soft = conv(x)
    conv.hard()
    assert conv.delays().tolist() == [[1, 6], [0, 7]]
    hard = conv(x)
    shifted = lambda seq, k: torch.cat([seq.new_zeros(k), seq[:-k]]) if k else seq  # noqa: E731
    torch.testing.assert_close(hard[0, :, 0], shifted(x[0, :, 0], 1) - 2.0 * shifted(x[0, :, 0], 6))
    torch.testing.assert_close(hard[0, :, 1], 0.5 * x[0, :, 1] + 3.0 * shifted(x[0, :, 1], 7))
    torch.testing.assert_close(conv.soft()(x), soft)  # positions untouched by hard()
    conv.clamp_()
    assert conv.positions.max().item() == 7.0


@pytest.mark.parametrize("recurrent", ["mingru", "lru"])
@pytest.mark.parametrize("steps", STEPS)
def test_mgrade_scan_equals_sequential(steps: int, recurrent: str) -> None:
    torch.manual_seed(steps)
    layer = MGRADELayer(INPUT, HIDDEN, kernel_count=2, kernel_length=5, recurrent=recurrent).double()
    h0 = torch.randn(BATCH, HIDDEN, dtype=torch.complex128 if recurrent == "lru" else torch.float64)
    _assert_modes_agree(layer, _x(steps), h0)
    assert layer.conv.mode == "sequential" and layer.rnn.mode == "sequential"


def test_mgrade_layer_options_hard_mode_and_param_groups() -> None:
    torch.manual_seed(0)
    layer = MGRADELayer(6, 6, kernel_count=1, kernel_length=2, mlp_expansion=0, norm=False)
    assert layer.mlp is None and layer.norm is None and isinstance(layer.skip, torch.nn.Identity)
    x = torch.randn(2, 11, 6)
    y, h_last = layer(x)
    h, _ = layer.rnn(layer.conv(x))
    torch.testing.assert_close(y, x + h)
    layer.hard()
    assert layer.conv.hard_mode and layer.conv.delays().max() <= 1
    layer.soft()
    torch.testing.assert_close(layer(x)[0], y)
    groups = {g["name"]: g for g in layer.param_groups(1e-3, weight_decay=0.1, position_lr_scale=5.0)}
    assert groups["positions"]["params"] == [layer.conv.positions]
    assert groups["positions"]["lr"] == pytest.approx(5e-3) and groups["positions"]["weight_decay"] == 0.0
    assert groups["weights"]["weight_decay"] == 0.1
    n_params = sum(len(g["params"]) for g in groups.values())
    assert n_params == len(list(layer.parameters()))
    torch.optim.AdamW(param_groups(layer, 1e-3))  # accepted by torch
    wide = MGRADELayer(3, 7, kernel_length=4)
    assert wide(torch.randn(2, 5, 3))[0].shape == (2, 5, 7)
    with pytest.raises(ValueError, match="recurrent"):
        MGRADELayer(3, 3, recurrent="gru")


@pytest.mark.parametrize("steps", STEPS)
def test_hsru_scan_equals_sequential(steps: int) -> None:
    torch.manual_seed(steps)
    cell = HSRU(INPUT, HIDDEN, threshold_init=0.3).double()
    v0 = torch.randn(BATCH, HIDDEN, dtype=torch.float64)
    d0 = (torch.rand(BATCH, HIDDEN) < 0.5).double()
    _assert_modes_agree(cell, _x(steps), (v0, d0))
    _assert_modes_agree(cell, _x(steps), None)


def test_hsru_digital_state_is_the_parity_of_spikes() -> None:
    torch.manual_seed(1)
    cell = HSRU(1, 4, threshold_init=0.0, leak_init=0.5).double()
    x = torch.randn(2, 300, 1, dtype=torch.float64)
    y, (v_last, d_last) = cell(x)
    current = cell.input(x)
    v = torch.zeros(2, 4, dtype=torch.float64)
    count = torch.zeros(2, 4, dtype=torch.float64)
    for t in range(300):
        v = cell.leak() * v + current[:, t]
        count += (v >= cell.threshold).double()
    torch.testing.assert_close(v_last, v)
    assert torch.equal(d_last, count.remainder(2))
    assert y.shape == (2, 300, 4) and y.abs().max() <= 1
    with pytest.raises(ValueError, match="D0"):
        cell(x, (torch.zeros(2, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.float64)))


def test_fast_sigmoid_and_sigmoid_surrogates() -> None:
    x = torch.linspace(-2, 2, 9, dtype=torch.float64, requires_grad=True)
    spike(x, 3.0).sum().backward()
    torch.testing.assert_close(x.grad, 1 / (1 + 3.0 * x.detach().abs()) ** 2)
    assert torch.equal(spike(torch.zeros(1)), torch.ones(1))
    x.grad = None
    step_gate(x, "sigmoid", 2.0).sum().backward()
    s = torch.sigmoid(2.0 * x.detach())
    torch.testing.assert_close(x.grad, 2.0 * s * (1 - s))
    x.grad = None
    step_gate(x, "ste").sum().backward()
    torch.testing.assert_close(x.grad, torch.ones_like(x))
    assert torch.equal(step_gate(torch.zeros(1)), torch.zeros(1))  # suRNN: 1{a > 0}


def test_rhythmic_gate_is_eq_6() -> None:
    torch.manual_seed(0)
    gate = RhythmicGate(3, 4, min_period=2.0, max_period=50.0).double()
    a = gate.preactivation(7, offset=2)
    t = torch.arange(3, 10, dtype=torch.float64)
    manual = gate.bias + sum(
        gate.amplitude[:, k] * torch.sin(gate.omega[k] * t[:, None] + gate.phase[:, k]) for k in range(4)
    )
    torch.testing.assert_close(a, manual)
    assert torch.equal(gate(7, offset=2), (manual > 0).double())
    torch.testing.assert_close(
        2 * math.pi / gate.omega[[0, -1]], torch.tensor([2.0, 50.0], dtype=torch.float64)
    )


@pytest.mark.parametrize("steps", STEPS)
def test_selective_update_mingru_scan_equals_sequential(steps: int) -> None:
    torch.manual_seed(steps)
    cell = SelectiveUpdateMinGRU(INPUT, HIDDEN, max_period=20.0).double()
    _assert_modes_agree(cell, _x(steps), torch.randn(BATCH, HIDDEN, dtype=torch.float64))
    assert cell.gate.amplitude.grad.abs().sum() > 0  # the surrogate reaches the generator


def test_selective_update_carries_exactly_when_gate_is_off() -> None:
    torch.manual_seed(0)
    cell = SelectiveUpdateMinGRU(2, 3, bias_init=-100.0).double()  # a < 0 always: never updates
    h0 = torch.randn(1, 3, dtype=torch.float64)
    h, _ = cell(torch.randn(1, 50, 2, dtype=torch.float64), h0)
    assert torch.equal(h, h0.unsqueeze(1).expand_as(h))
    gru = SelectiveUpdateGRU(2, 3, bias_init=100.0).double()  # always updates: a torch.nn.GRU
    x = torch.randn(2, 9, 2, dtype=torch.float64)
    for mode in ("sequential", "fused"):
        gru.mode = mode
        torch.testing.assert_close(gru(x)[0], gru.gru(x)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("steps", STEPS)
def test_selective_update_gru_fused_equals_sequential(steps: int) -> None:
    torch.manual_seed(steps)
    cell = SelectiveUpdateGRU(INPUT, HIDDEN, max_period=20.0).double()
    assert 0 < cell.gate(steps).mean() < 1 or steps == 1
    # The fused kernel's straight-through backward gives every gradient, the generator's included.
    _assert_modes_agree(cell, _x(steps), torch.randn(BATCH, HIDDEN, dtype=torch.float64), fast="fused")
    assert cell.gate.phase.grad.abs().sum() > 0


@pytest.mark.parametrize(
    "factory",
    [
        lambda: MinGRU(INPUT, HIDDEN),
        lambda: LRU(INPUT, HIDDEN),
        lambda: MGRADELayer(INPUT, HIDDEN),
        lambda: HSRU(INPUT, HIDDEN),
        lambda: SelectiveUpdateMinGRU(INPUT, HIDDEN),
        lambda: SelectiveUpdateGRU(INPUT, HIDDEN),
    ],
)
def test_gru_style_api_and_bad_input(factory) -> None:
    cell = factory()
    y, _ = cell(torch.randn(2, 3, INPUT))
    assert y.shape == (2, 3, HIDDEN)
    with pytest.raises(ValueError, match=f"batch, time, {INPUT}"):
        cell(torch.randn(2, 3, INPUT + 1))
    with pytest.raises(ValueError, match="empty"):
        cell(torch.randn(2, 0, INPUT))
    with pytest.raises(ValueError, match="mode"):
        type(cell)(INPUT, HIDDEN, mode="parallel")
    with pytest.raises(ValueError, match="sizes"):
        type(cell)(0, HIDDEN)


def test_cells_by_name() -> None:
    from codesign.nn import CELL_TYPES, build_cell

    assert isinstance(build_cell("mingru", 3, 4), MinGRU)
    assert build_cell("cmru", 3, 4, eps=-1.0).eps == -1.0
    assert set(CELL_TYPES) >= {
        "bmru",
        "cmru",
        "alphacmru",
        "mingru",
        "lru",
        "mgrade",
        "hsru",
        "sugru",
        "sumingru",
    }
    with pytest.raises(ValueError, match="unknown cell 'gru'"):
        build_cell("gru", 3, 4)
    with pytest.raises(ValueError, match="cell 'lru'.*colour"):
        build_cell("lru", 3, 4, colour="red")
