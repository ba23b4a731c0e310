"""Every fast scan path against the step-by-step reference, forward and backward (accelerated-scan style).

The evaluator has two regimes (step by step for wide steps, chunked for narrow ones, recursively);
the lengths below cross the chunking thresholds, and every closed form is checked against the
generic scan of its equivalent ``(a, b)``.
"""

import pytest
import torch

from codesign.nn import scan as scan_module
from codesign.nn.scan import cumulative_scan, last_update_scan, linear_scan, sequential_scan, xor_scan

LENGTHS = [1, 2, 3, 31, 64, 65, 97, 200, 1031]


def _grads(out: torch.Tensor, weight: torch.Tensor, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad((out * weight).sum(), inputs, allow_unused=True, materialize_grads=True)


@pytest.fixture(params=["chunked", "stepwise"])
def regime(request, monkeypatch):
    """Force the narrow (chunked) or the wide (step by step) evaluator."""
    monkeypatch.setattr(scan_module, "WIDE_STEP", 10**9 if request.param == "chunked" else 1)
    return request.param


@pytest.mark.parametrize("steps", LENGTHS)
def test_linear_scan_matches_reference(steps: int, regime: str) -> None:
    g = torch.Generator().manual_seed(steps)
    a = torch.empty(2, steps, 3, dtype=torch.float64).uniform_(-1.1, 1.1, generator=g).requires_grad_()
    b = torch.randn(2, steps, 3, dtype=torch.float64, generator=g).requires_grad_()
    h0 = torch.randn(2, 3, dtype=torch.float64, generator=g).requires_grad_()
    for init in (None, h0):
        fast, slow = linear_scan(a, b, init), sequential_scan(a, b, init)
        torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-10)
        w = torch.randn_like(fast)
        inputs = [a, b] + ([h0] if init is not None else [])
        for x, y in zip(_grads(fast, w, inputs), _grads(slow, w, inputs), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("steps", [1, 7, 66])
def test_complex_scan_gradcheck(steps: int, regime: str) -> None:
    g = torch.Generator().manual_seed(steps)
    a = torch.complex(
        torch.rand(1, steps, 2, dtype=torch.float64, generator=g) * 0.9,
        torch.rand(1, steps, 2, dtype=torch.float64, generator=g) * 0.4,
    ).requires_grad_()
    b = torch.randn(1, steps, 2, dtype=torch.complex128, generator=g).requires_grad_()
    h0 = torch.randn(1, 2, dtype=torch.complex128, generator=g).requires_grad_()
    torch.testing.assert_close(linear_scan(a, b, h0), sequential_scan(a, b, h0), rtol=1e-10, atol=1e-10)
    assert torch.autograd.gradcheck(linear_scan, (a, b, h0), fast_mode=True)


def test_real_scan_gradcheck_with_h0(regime: str) -> None:
    g = torch.Generator().manual_seed(5)
    a = torch.empty(2, 70, 2, dtype=torch.float64).uniform_(-1, 1, generator=g).requires_grad_()
    b = torch.randn(2, 70, 2, dtype=torch.float64, generator=g).requires_grad_()
    h0 = torch.randn(2, 2, dtype=torch.float64, generator=g).requires_grad_()
    assert torch.autograd.gradcheck(linear_scan, (a, b, h0), fast_mode=True)


def test_expanded_gate_gets_reduced_gradient() -> None:
    """A per-channel constant gate broadcast over batch and time (LRU, HSRU leak)."""
    g = torch.Generator().manual_seed(1)
    lam = torch.rand(4, dtype=torch.float64, generator=g).requires_grad_()
    b = torch.randn(3, 99, 4, dtype=torch.float64, generator=g)
    fast = linear_scan(lam.expand(3, 99, 4), b)
    slow = sequential_scan(lam.expand(3, 99, 4), b)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-10)
    w = torch.randn_like(fast)
    torch.testing.assert_close(_grads(fast, w, [lam])[0], _grads(slow, w, [lam])[0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("steps", LENGTHS)
def test_binary_gates_are_exact(steps: int, regime: str) -> None:
    """a in {-1, 0, 1} and integer b: every path is exact (the CMRU family needs it)."""
    g = torch.Generator().manual_seed(steps)
    a = torch.randint(-1, 2, (3, steps, 5), generator=g).float()
    b = torch.randint(-5, 6, (3, steps, 5), generator=g).float()
    h0 = torch.randint(-3, 4, (3, 5), generator=g).float()
    assert torch.equal(linear_scan(a, b, h0), sequential_scan(a, b, h0))


@pytest.mark.parametrize("steps", LENGTHS)
def test_cumulative_scan_is_cumsum(steps: int, regime: str) -> None:
    g = torch.Generator().manual_seed(steps)
    b = torch.randn(2, steps, 3, dtype=torch.float64, generator=g).requires_grad_()
    h0 = torch.randn(2, 3, dtype=torch.float64, generator=g).requires_grad_()
    fast = cumulative_scan(b, h0)
    slow = linear_scan(torch.ones_like(b), b, h0)
    torch.testing.assert_close(fast, h0.unsqueeze(1) + b.cumsum(1), rtol=1e-10, atol=1e-10)
    w = torch.randn_like(fast)
    for x, y in zip(_grads(fast, w, [b, h0]), _grads(slow, w, [b, h0]), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)
    integers = torch.randint(-9, 10, (2, steps, 3), generator=g).float()
    assert torch.equal(cumulative_scan(integers), integers.cumsum(1))


@pytest.mark.parametrize("method", ["scan", "gather"])
@pytest.mark.parametrize("steps", [1, 2, 65, 300])
def test_last_update_scan(method: str, steps: int, regime: str) -> None:
    g = torch.Generator().manual_seed(steps)
    z = (torch.rand(3, steps, 4, dtype=torch.float64, generator=g) < 0.2).double().requires_grad_()
    v = torch.randn(3, steps, 4, dtype=torch.float64, generator=g).requires_grad_()
    h0 = torch.randn(3, 4, dtype=torch.float64, generator=g).requires_grad_()
    for init in (None, h0):
        fast = last_update_scan(z, v, init, method=method)
        slow = sequential_scan(1 - z, z * v, init)
        assert torch.equal(fast, slow)
        w = torch.randn_like(fast)
        inputs = [z, v] + ([h0] if init is not None else [])
        for x, y in zip(_grads(fast, w, inputs), _grads(slow, w, inputs), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="method"):
        last_update_scan(z, v, method="cumsum")


@pytest.mark.parametrize("steps", [1, 2, 64, 257, 1000])
def test_xor_scan_is_the_differentiable_xor(steps: int, regime: str) -> None:
    g = torch.Generator().manual_seed(steps)
    s = (torch.rand(2, steps, 3, dtype=torch.float64, generator=g) < 0.5).double().requires_grad_()
    d0 = (torch.rand(2, 3, dtype=torch.float64, generator=g) < 0.5).double().requires_grad_()
    for init in (None, d0):
        fast = xor_scan(s, init)
        slow = sequential_scan(1 - 2 * s, s, init)
        assert torch.equal(fast, slow)
        w = torch.randn_like(fast)
        inputs = [s] + ([d0] if init is not None else [])
        for x, y in zip(_grads(fast, w, inputs), _grads(slow, w, inputs), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)


def test_long_sequences_stay_finite_and_exact(monkeypatch) -> None:
    """T = 65536: no NaN/Inf in values or gradients; binary gates stay exact at any length."""
    g = torch.Generator().manual_seed(0)
    a = torch.rand(2, 65536, 8, generator=g).requires_grad_()
    b = torch.randn(2, 65536, 8, generator=g).requires_grad_()
    h = linear_scan(a, b)
    h.square().mean().backward()
    assert torch.isfinite(h).all() and torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()
    s = (torch.rand(2, 65536, 8, generator=g) < 0.5).float()
    d = xor_scan(s)
    assert torch.equal(d, s.cumsum(1).remainder(2))
    unit = torch.randint(-1, 2, (2, 65536, 8), generator=g).float()
    chunked = linear_scan(unit, unit)
    monkeypatch.setattr(scan_module, "WIDE_STEP", 1)  # the plain step-by-step loop as reference
    assert torch.equal(chunked, linear_scan(unit, unit))


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="batch, time, d"):
        linear_scan(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="h0 must be"):
        linear_scan(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), torch.zeros(4))
    with pytest.raises(ValueError, match="empty"):
        cumulative_scan(torch.zeros(2, 0, 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_long_chunks_flush_vanishing_gate_products(dtype: torch.dtype) -> None:
    """Chunks long enough that the gate products are flushed before going subnormal."""
    g = torch.Generator().manual_seed(7)
    a = (torch.rand(1, 3000, 2, generator=g) * 0.3).to(dtype)
    b = torch.randn(1, 3000, 2, generator=g).to(dtype)
    assert scan_module._chunk_length(3000, 2) > scan_module._FLUSH_EVERY
    torch.testing.assert_close(linear_scan(a, b), sequential_scan(a, b), rtol=1e-5, atol=1e-5)
