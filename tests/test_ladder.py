"""``codesign ladder``: ladder files, a tiny ladder on a real LocalCluster, resumed without retraining."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from codesign.errors import CodesignError
from codesign.explore.ladder import load_ladder, run_ladder

RECIPE = {
    "name": "tiny_ladder",
    "task": {"name": "copy_first", "classes": 4, "length": 10, "val_size": 64, "test_size": 64},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 4, "eps": 1.0},
    "train": {"iterations": 20, "batch_size": 16, "eval_every": 10, "eval_batches": 1},
    "quant": {"input": {"bits": 4, "frac": 0}},
}
RUNGS = [
    {"name": "cmru", "what": "CMRU 4", "deploy": True},
    {
        "name": "stack",
        "what": "minGRU 4 -> CMRU 4",
        "set": ["model.layers=[{cell: mingru, size: 4}, {cell: cmru, size: 4, eps: 1.0}]"],
    },
]


def _ladder(tmp_path: Path, **changes) -> Path:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(RECIPE))
    path = tmp_path / "ladder.yaml"
    path.write_text(
        yaml.safe_dump({"base": "base.yaml", "seeds": [0], "weight_bits": 4, "rungs": RUNGS} | changes)
    )
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rung": []}, "unknown key 'rung'"),
        ({"base": "missing.yaml"}, "base: recipe 'missing.yaml' not found"),
        ({"rungs": [RUNGS[0], RUNGS[0]]}, "rung names repeat: cmru"),
        ({"rungs": [{"name": "a b"}]}, "rungs.0.name"),
        ({"rungs": [{"name": "x", "set": ["model.cell=lstm"]}]}, "rung 'x': "),
        ({"rungs": [{"name": "x", "set": ["nokey"]}]}, "is not KEY=VALUE"),
        ({"seeds": []}, "seeds"),
    ],
)
def test_ladder_errors_name_the_key(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(CodesignError, match="ladder.yaml") as err:
        load_ladder(_ladder(tmp_path, **changes))
    assert message in str(err.value)


def test_unknown_only_rung_is_refused(tmp_path: Path) -> None:
    console = Console(file=open(os.devnull, "w"))  # noqa: SIM115
    with pytest.raises(CodesignError, match="--only nope: no such rung; rungs: cmru, stack"):
        run_ladder(_ladder(tmp_path), tmp_path / "out", only={"nope"}, console=console)


def test_tiny_ladder_trains_exports_and_resumes(tmp_path: Path) -> None:
    """Two rungs on a LocalCluster: a table row each, golden only where deployed; a re-run trains nothing."""
    console = Console(file=open(os.devnull, "w"))  # noqa: SIM115
    ladder, out = _ladder(tmp_path), tmp_path / "out"
    first = run_ladder(ladder, out, workers=1, console=console)
    assert first["finished"] == 2 and not first["failed"]
    cmru, stack = first["rows"]
    assert (cmru["rung"], stack["rung"]) == ("cmru", "stack")
    assert stack["state_words"] == 8 and cmru["state_words"] == 4
    assert cmru["memory_bits"] == cmru["parameters"] * 4 + 4 * 16
    assert len(cmru["golden_accuracy"]) == 1 and 0 <= cmru["golden_accuracy"][0] <= 1
    assert cmru["bundle_memory_bits"] > 0 and cmru["energy_nj_proxy"] > 0
    assert stack["golden_accuracy"] == [] and stack["bundle_memory_bits"] is None
    record = json.loads((out / "cmru" / "s0.json").read_text())
    assert record["torch_vs_golden_mismatches"] == 0
    table = (out / "table.md").read_text()
    assert (
        "| cmru | CMRU 4 |" in table and "| stack | minGRU 4 -> CMRU 4 |" in table and "Made by: `" in table
    )

    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("summary.json")}
    again = run_ladder(ladder, out, train=False, console=console)
    assert again["rows"] == first["rows"]
    rerun = run_ladder(ladder, out, console=console)  # nothing pending: no cluster, no training
    assert rerun["rows"] == first["rows"]
    assert {p: p.stat().st_mtime_ns for p in out.rglob("summary.json")} == stamps

    # an edited rung is not served from the old record: its run directory refuses the new recipe
    changed = yaml.safe_load(ladder.read_text())
    changed["rungs"][1]["set"] = ["model.hidden_size=5"]
    ladder.write_text(yaml.safe_dump(changed))
    failed = run_ladder(ladder, out, workers=1, console=console)["failed"]
    assert len(failed) == 1 and "stack seed 0: " in failed[0] and "rung 'stack' changed since" in failed[0]
