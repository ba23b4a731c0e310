"""scripts/order_probe.py: the three frame orders it scores, and a set no results file lists."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "order_probe.py"
spec = importlib.util.spec_from_file_location("order_probe", SCRIPT)
order_probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(order_probe)


def test_the_orders_keep_every_frame_and_move_only_time() -> None:
    x = torch.arange(2 * 5 * 3, dtype=torch.float64).reshape(2, 5, 3)
    orders = order_probe._orders(x, seed=0)
    assert list(orders) == list(order_probe.ORDERS)
    assert torch.equal(orders["as is"], x)
    assert torch.equal(orders["reversed"][:, 0], x[:, -1])
    shuffled = orders["shuffled"]
    assert not torch.equal(shuffled, x)  # seed 0 moves some frame of five
    # the same permutation for every series, frames kept whole
    assert torch.equal(torch.sort(shuffled[:, :, 0], dim=1).values, x[:, :, 0])
    assert torch.equal(shuffled[1] - shuffled[0], x[1] - x[0])


def test_a_set_in_no_results_file_stops_before_anything_loads(tmp_path: Path, monkeypatch) -> None:
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"k": {"name": "GunPoint", "ours": [{"run": "runs/missing"}]}}))
    out = tmp_path / "order.md"
    argv = ["order_probe.py", "--sets", "ArrowHead", "--out", str(out), f"a={results}"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="ArrowHead in none of the results files"):
        order_probe.main()
    assert not out.exists()
