"""suRNN (torch side): the fused suGRU's straight-through backward, mask-aware streaming
inference and the update rate ``p``."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from codesign.nn.surnn import (
    SelectiveUpdateGRU,
    SelectiveUpdateMinGRU,
    _fused_kernel,
    open_rows,
    update_rate,
)

CELLS = {
    "sugru": (SelectiveUpdateGRU, ("sequential", "fused")),
    "sumingru": (SelectiveUpdateMinGRU, ("scan", "sequential")),
}


def _rhythmic_gates(steps: int, hidden: int, p: float, seed: int = 0) -> torch.Tensor:
    """A rhythmic schedule with about ``p`` of its neuron-steps open (a quantile threshold)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(1, steps + 1, dtype=torch.float64)[:, None]
    a = torch.sin(t * torch.rand(hidden, generator=g) + 6.3 * torch.rand(hidden, generator=g))
    if p >= 1.0:
        return torch.ones(steps, hidden)
    return (a > torch.quantile(a.flatten(), 1 - p)).float()


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("surrogate", ["sigmoid", "ste"])
def test_generator_gets_a_gradient_in_every_mode(name: str, surrogate: str) -> None:
    cls, modes = CELLS[name]
    torch.manual_seed(0)
    cell = cls(3, 6, max_period=20.0, surrogate=surrogate)
    x = torch.randn(2, 30, 3)
    for mode in modes:
        cell.mode = mode
        cell.zero_grad()
        (cell(x)[0] * torch.randn(2, 30, 6)).sum().backward()
        for pname, param in cell.gate.named_parameters():
            assert param.grad is not None and param.grad.abs().sum() > 0, f"{mode}: gate.{pname}"


@pytest.mark.parametrize("with_h0", [False, True])
def test_fused_forward_unchanged_and_gradients_equal_sequential(with_h0: bool) -> None:
    torch.manual_seed(1)
    cell = SelectiveUpdateGRU(3, 5, max_period=20.0).double()
    x = torch.randn(2, 23, 3, dtype=torch.float64)
    h0 = torch.randn(2, 5, dtype=torch.float64) if with_h0 else None
    weight = torch.randn(2, 23, 5, dtype=torch.float64)
    grads = {}
    for mode in ("fused", "sequential"):
        cell.mode = mode
        cell.zero_grad()
        xr = x.clone().requires_grad_()
        hr = h0.clone().requires_grad_() if with_h0 else None
        y = cell(xr, hr)[0]
        (y * weight).sum().backward()
        grads[mode] = [y.detach(), xr.grad] + ([hr.grad] if with_h0 else [])
        grads[mode] += [p.grad.clone() for p in cell.parameters()]
        if mode == "fused":  # the forward is the fused kernel, bit for bit, with or without autograd
            with torch.no_grad():
                kernel = _fused_kernel(
                    x, cell.gate(23).double(), h0, *cell._weights(), cell.carry_drive, True
                )
                assert torch.equal(cell(x, h0)[0], kernel)
            assert torch.equal(y.detach(), kernel)
    for a, b in zip(grads["fused"], grads["sequential"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("p", [0.1, 0.3, 1.0])
def test_masked_stream_equals_dense(name: str, p: float) -> None:
    cls, _ = CELLS[name]
    torch.manual_seed(2)
    cell = cls(4, 16).eval()
    x = torch.randn(3, 40, 4)
    h0 = torch.randn(3, 16)
    gates = _rhythmic_gates(40, 16, p)
    dense, last = cell.stream(x, h0, masked=False, gates=gates)
    masked, _ = cell.stream(x, h0, masked=True, gates=gates)
    torch.testing.assert_close(masked, dense, rtol=0, atol=1e-6)
    assert torch.equal(last, dense[:, -1])
    # a closed neuron keeps its state exactly
    prev = torch.cat([h0[:, None], masked[:, :-1]], dim=1)
    closed = (gates == 0).expand_as(masked)
    assert torch.equal(masked[closed], prev[closed])
    # the generator's own schedule: the stream is the training forward, step by step
    torch.testing.assert_close(cell.stream(x, h0)[0], cell(x, h0)[0], rtol=0, atol=1e-6)


def test_open_rows_and_gate_shape_check() -> None:
    idx, rows = open_rows(torch.tensor([0.0, 1.0, 0.0, 1.0]), 3)
    assert idx.tolist() == [1, 3] and rows.tolist() == [1, 3, 5, 7, 9, 11]
    with pytest.raises(ValueError, match="gates must be"):
        SelectiveUpdateMinGRU(2, 3).stream(torch.randn(1, 5, 2), gates=torch.ones(4, 3))


def test_update_rate() -> None:
    assert update_rate(torch.nn.GRU(2, 3), 10) is None
    assert update_rate(SelectiveUpdateGRU(2, 3, bias_init=100.0), 50) == 1.0
    assert update_rate(SelectiveUpdateMinGRU(2, 3, bias_init=-100.0), 50) == 0.0
    torch.manual_seed(0)
    stack = torch.nn.Sequential(SelectiveUpdateMinGRU(2, 3), SelectiveUpdateGRU(3, 5))
    manual = torch.cat([stack[0].gate(40), stack[1].gate(40)], dim=1).mean().item()
    assert update_rate(stack, 40) == pytest.approx(manual)


def test_run_summary_reports_the_update_rate(tmp_path) -> None:
    import json

    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import SUMMARY, train

    recipe = parse_recipe(
        {
            "name": "cm_sugru_tiny",
            "seed": 0,
            "task": {"name": "copying_memory", "delay": 5, "prefix": 2, "val_size": 8, "test_size": 8},
            "model": {
                "arch": "backbone",
                "cell": "sugru",
                "hidden_size": 4,
                "dim": 4,
                "cell_options": {"mode": "fused"},
            },
            "train": {"iterations": 2, "batch_size": 4, "eval_every": 1, "eval_batches": 1, "threads": 1},
        }
    )
    result = train(recipe, tmp_path, progress=False)
    summary = json.loads((tmp_path / SUMMARY).read_text())
    assert 0.0 <= summary["update_rate"] <= 1.0 and summary["update_rate"] == result.update_rate


def test_bench_surnn_quick() -> None:
    from codesign.nn.bench_surnn import SurnnBenchConfig, bench_surnn, markdown_table, schedule_at_rate

    cfg = SurnnBenchConfig.quick()
    report = bench_surnn(dataclasses.replace(cfg, measured=(("run", 0.5),)))
    assert len(report["points"]) == 2 * 4  # two cells, the measured rate and 0.1, 0.3, 1.0
    assert all(pt["max_abs_diff"] <= 1e-6 and pt["speedup"] > 0 for pt in report["points"])
    assert "measured: run" in markdown_table(report, ["run"])
    gates = schedule_at_rate(SelectiveUpdateGRU(4, 50), 100, 0.3)
    assert abs(float(gates.mean()) - 0.3) < 0.01
