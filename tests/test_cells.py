"""CMRU family: parallel scan == sequential reference (forward and gradients), surrogate, API."""

import math

import pytest
import torch

from codesign.nn import BMRU, CMRU, AlphaCMRU, HardwareStack, heaviside, sign


def _pair(cell: torch.nn.Module, x: torch.Tensor, h0=None):
    cell.mode = "scan"
    h_scan, last_scan = cell(x, h0)
    cell.mode = "sequential"
    h_seq, last_seq = cell(x, h0)
    return h_scan, h_seq, last_scan, last_seq


@pytest.mark.parametrize("eps", [-1.0, 0.0, 0.25, 1.0])
@pytest.mark.parametrize("cls", [CMRU, AlphaCMRU])
@pytest.mark.parametrize("steps", [1, 5, 64, 131])
def test_scan_equals_sequential(cls, eps: float, steps: int) -> None:
    torch.manual_seed(steps)
    cell = cls(4, 6, eps=eps).double()
    x = torch.randn(3, steps, 4, dtype=torch.float64)
    h0 = torch.randn(3, 6, dtype=torch.float64)
    h_scan, h_seq, last_scan, last_seq = _pair(cell, x, h0)
    torch.testing.assert_close(h_scan, h_seq, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(last_scan, h_scan[:, -1])
    # gradients w.r.t. every parameter and the input
    w = torch.randn_like(h_scan)
    grads = []
    for mode in ("scan", "sequential"):
        cell.mode = mode
        xr = x.clone().requires_grad_()
        cell.zero_grad()
        (cell(xr, h0)[0] * w).sum().backward()
        grads.append([xr.grad] + [p.grad.clone() for p in cell.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_bmru_overwrites_with_plus_minus_alpha() -> None:
    torch.manual_seed(0)
    cell = BMRU(3, 8).double()
    h, _ = cell(torch.randn(2, 50, 3, dtype=torch.float64))
    alpha = cell.alpha.detach().abs()
    assert torch.all((h.abs() == alpha) | (h == 0))
    with pytest.raises(ValueError, match="eps = 0"):
        BMRU(3, 8, eps=1.0)


def test_cmru_eps1_is_a_counter_of_alpha_steps() -> None:
    torch.manual_seed(1)
    cell = CMRU(2, 4, eps=1.0, alpha_init=0.5).double()
    h, _ = cell(torch.randn(5, 40, 2, dtype=torch.float64))
    k = h / 0.5
    assert torch.equal(k, k.round())


def test_retain_mode_keeps_state_and_gradient() -> None:
    cell = CMRU(1, 1, eps=0.0).double()
    with torch.no_grad():
        cell.candidate.weight.fill_(1.0)
        cell.candidate.bias.zero_()
        cell.threshold.weight.zero_()
        cell.threshold.bias.fill_(0.5)
    x = torch.zeros(1, 20, 1, dtype=torch.float64)
    x[0, 0, 0] = 1.0  # one update at t=0, then |c| = 0 < 0.5: retain
    h, _ = cell(x)
    assert torch.all(h == cell.alpha.detach())


def test_sign_of_zero_is_plus_one_and_heaviside_of_zero_is_one() -> None:
    zero = torch.zeros(3)
    assert torch.equal(sign(zero), torch.ones(3))
    assert torch.equal(heaviside(zero), torch.ones(3))


@pytest.mark.parametrize("alpha_surr", [0.0, 1.0, 2.5])
def test_atan_surrogate_gradient(alpha_surr: float) -> None:
    x = torch.linspace(-2, 2, 9, dtype=torch.float64, requires_grad=True)
    heaviside(x, alpha_surr).sum().backward()
    expected = 1 / (1 + (math.pi * alpha_surr * x.detach()) ** 2)
    torch.testing.assert_close(x.grad, expected)
    x.grad = None
    sign(x, alpha_surr).sum().backward()
    torch.testing.assert_close(x.grad, 2 * expected)


def test_eps_validated_and_shapes_checked() -> None:
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        CMRU(2, 2, eps=1.5)
    cell = CMRU(2, 3)
    with pytest.raises(ValueError, match="batch, time, 2"):
        cell(torch.zeros(4, 2))
    net = HardwareStack(2, 5, [{"cell": "bmru", "size": 3}])
    assert net(torch.zeros(4, 7, 2)).shape == (4, 5)
    with pytest.raises(ValueError, match="unknown hardware cell"):
        HardwareStack(2, 5, [{"cell": "lstm", "size": 3}])
