"""scripts/random_features.py: one cached bank of a set brought as files, the table and the plot."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "random_features.py"
spec = importlib.util.spec_from_file_location("random_features", SCRIPT)
random_features = importlib.util.module_from_spec(spec)
spec.loader.exec_module(random_features)


def test_one_bank_is_cached_then_tabled_and_plotted(tmp_path):
    rng = np.random.default_rng(0)
    for name, n in (("train", 24), ("test", 12)):
        y = np.arange(n) % 2
        x = np.linspace(-1, 1, 30)[None] * np.where(y[:, None] == 0, -1.0, 1.0) + 0.3 * rng.standard_normal(
            (n, 30)
        )
        np.savez(tmp_path / f"{name}.npz", X=x, y=np.array(["a", "b"])[y])
    entry = f"toy={tmp_path / 'train.npz'},{tmp_path / 'test.npz'}"
    first = random_features.ours(entry, 0, 168, str(tmp_path))
    assert first["golden"] >= 0.9 and first["units"] == 168 and first["memory_bits"] > 0
    cached = tmp_path / "toy_u168_s0.json"
    assert json.loads(cached.read_text()) == first
    cached.write_text(json.dumps(dict(first, golden=0.5)))  # a second call reads, never refits
    assert random_features.ours(entry, 0, 168, str(tmp_path))["golden"] == 0.5
    results = {("toy", 168, 0): dict(first), ("toy", "mr", 0): {"minirocket": 1.0}}
    text = random_features.table([entry], [168], [0], results, "cmd")
    row = next(line for line in text.splitlines() if line.startswith("| toy | 168 |"))
    assert f"{100 * first['golden'] - 100:+.1f}" in row
    random_features.plot([entry], [168], [0], results, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
