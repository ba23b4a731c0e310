"""linear_scan against the step-by-step reference, forward and backward (accelerated-scan style)."""

import pytest
import torch

from codesign.nn.scan import linear_scan, sequential_scan


@pytest.mark.parametrize("steps", [1, 2, 3, 7, 64, 65, 257])
@pytest.mark.parametrize("with_h0", [False, True])
def test_scan_matches_reference_forward_and_backward(steps: int, with_h0: bool) -> None:
    g = torch.Generator().manual_seed(steps)
    a = torch.empty(3, steps, 5, dtype=torch.float64).uniform_(-1.1, 1.1, generator=g).requires_grad_()
    b = torch.randn(3, steps, 5, dtype=torch.float64, generator=g).requires_grad_()
    h0 = torch.randn(3, 5, dtype=torch.float64, generator=g).requires_grad_() if with_h0 else None
    fast = linear_scan(a, b, h0)
    slow = sequential_scan(a, b, h0)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-10)
    w = torch.randn_like(fast)
    inputs = [a, b] + ([h0] if with_h0 else [])
    g_fast = torch.autograd.grad((fast * w).sum(), inputs, allow_unused=True, materialize_grads=True)
    g_slow = torch.autograd.grad((slow * w).sum(), inputs, allow_unused=True, materialize_grads=True)
    for x, y in zip(g_fast, g_slow, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)


def test_scan_gradcheck() -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.empty(2, 9, 3, dtype=torch.float64).uniform_(-1, 1, generator=g).requires_grad_()
    b = torch.randn(2, 9, 3, dtype=torch.float64, generator=g).requires_grad_()
    assert torch.autograd.gradcheck(linear_scan, (a, b))


def test_scan_exact_for_binary_gates() -> None:
    """a in {0, 1, -1} and integer b: the scan is exact (no rounding), as the CMRU needs."""
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-1, 2, (4, 300, 6), generator=g).double()
    b = torch.randint(-5, 6, (4, 300, 6), generator=g).double()
    assert torch.equal(linear_scan(a, b), sequential_scan(a, b))


def test_scan_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="batch, time, d"):
        linear_scan(torch.zeros(2, 3), torch.zeros(2, 3))
