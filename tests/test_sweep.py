"""``codesign sweep``: one table of golden-model accuracy per weight width, PTQ and QAT."""

import re
from pathlib import Path

from rich.console import Console

from codesign.quant.sweep import sweep
from codesign.train.recipe import parse_recipe
from codesign.train.trainer import train

RECIPE = {
    "name": "tiny_sweep",
    "task": {"name": "copy_first", "length": 12, "val_size": 32, "test_size": 64},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 4, "eps": 1.0},
    "train": {"iterations": 20, "batch_size": 16, "eval_every": 10, "eval_batches": 1},
}


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| (float|\d-bit weights) \|(.*)\|$", line)
        if m:
            rows[m[1]] = [v.strip() for v in m[2].split("|") if v.strip()]
    return rows


def test_sweep_writes_every_width_and_reruns_with_other_qat_budgets(tmp_path: Path) -> None:
    run = tmp_path / "run"
    train(parse_recipe(RECIPE), run, progress=False)
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    out = sweep(run, [8, 3], qat_iterations=4, out=tmp_path / "q.md", work=run / "sweep", console=console)
    rows = _rows(out.read_text())
    assert list(rows) == ["float", "8-bit weights", "3-bit weights"]
    for label in ("8-bit weights", "3-bit weights"):
        assert all(0.0 <= float(v) <= 100.0 for v in rows[label])
    assert "--qat-iterations 4" in out.read_text()
    # another QAT budget is another fine-tuning run, not a clash with the first one's directory
    out = sweep(
        run,
        [3],
        qat_iterations=6,
        qat_scratch=True,
        out=tmp_path / "q.md",
        work=run / "sweep",
        console=console,
    )
    text = out.read_text()
    assert list(_rows(text)) == ["float", "3-bit weights"] and "QAT from scratch (20 iterations)" in text
    assert all(0.0 <= float(v) <= 100.0 for v in _rows(text)["3-bit weights"])
    assert "--qat-scratch" in text and (run / "sweep" / "scratch3" / "best.pt").is_file()
    assert (run / "sweep" / "qat3-4it-lr0.0002").is_dir() and (run / "sweep" / "qat3-6it-lr0.0002").is_dir()
