"""Hardware-profile cells: the parallel (training) path equals the step-by-step path."""

import pytest
import torch

from codesign.nn.hardware import HW_CELLS, HardwareStack, layer_sequential


@pytest.mark.parametrize("cell", sorted(HW_CELLS))
@pytest.mark.parametrize("seed", range(12))
def test_scan_equals_sequential(cell: str, seed: int) -> None:
    """Before the fix, HSRU spikes were 1 +- 2**-52 (rounding in hard + soft - soft.detach()) and
    the XOR scan's mod 2 turned them into states of 1.9999999999999998."""
    torch.manual_seed(seed)
    options = {"eps": 1.0} if cell in ("cmru", "alphacmru") else {}
    if cell == "hsru":
        options["leak_shift"] = 2
    module = HW_CELLS[cell](4, 3, **options).double()
    x = torch.randn(2, 30, 4, dtype=torch.float64) * 3
    fast, _ = module(x)
    torch.testing.assert_close(fast, layer_sequential(module, x), rtol=1e-12, atol=1e-12)
    if cell == "hsru":
        assert set(fast.unique().tolist()) <= {0.0, 1.0}


def test_stack_shapes_and_pooling() -> None:
    layers = [{"cell": "cmru", "size": 5, "dcls": {"taps": 2, "span": 4}}, {"cell": "hsru", "size": 3}]
    x = torch.randn(2, 7, 3)
    assert HardwareStack(3, 4, layers)(x).shape == (2, 4)
    assert HardwareStack(3, 4, layers, pooling="sum")(x).shape == (2, 4)
    assert HardwareStack(3, 4, layers, per_step=True)(x).shape == (2, 7, 4)
