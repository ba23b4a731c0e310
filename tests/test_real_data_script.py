"""scripts/real_data.py: the 'before' column read from an earlier table, and the per-set aim column."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "real_data.py"
spec = importlib.util.spec_from_file_location("real_data", SCRIPT)
real_data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real_data)

EARLIER = """# Real-data accuracy of deployable models beside MiniRocket

| data set | test sequences | recipe | network | golden accuracy (%) | float (%) | MiniRocket (%) | golden - MiniRocket (points) |
|---|---|---|---|---|---|---|---|
| ItalyPowerDemand | 1029 | `models/classify_hw.yaml` | CMRU 16, last pooling, 8-bit weights | 66.6 [61.1; 71.2] | 66.9 [60.6; 72.3] | 96.5 [96.3; 96.7] | -29.9 |
| GunPoint | 150 | `models/classify_hw.yaml` | CMRU 16, last pooling, 8-bit weights | 88.0 [84.0; 94.7] | 89.3 [86.0; 95.3] | 99.3 [99.3; 99.3] | -11.3 |

Made by ...
"""


def test_before_reads_the_golden_column_per_data_set(tmp_path) -> None:
    path = tmp_path / "before.md"
    path.write_text(EARLIER)
    assert real_data.read_before(path) == {
        "ItalyPowerDemand": "66.6 [61.1; 71.2]",
        "GunPoint": "88.0 [84.0; 94.7]",
    }


def test_before_refuses_a_file_without_a_table(tmp_path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# notes\n\nno table here\n")
    with pytest.raises(SystemExit, match="notes.md: no rows"):
        real_data.read_before(path)
    with pytest.raises(SystemExit, match="missing.md: file not found"):
        real_data.read_before(tmp_path / "missing.md")


def test_aim_says_met_or_by_how_much_it_misses() -> None:
    assert real_data.against_aim([0.95, 0.96], [0.99, 0.99], 5.0) == "met"  # 4.5 points below
    assert real_data.against_aim([0.90], [0.95], 5.0) == "met"  # exactly 5 points below
    assert real_data.against_aim([0.80, 0.84], [0.99], 5.0) == "misses by 12.0"
    assert real_data.against_aim([1.0], [0.9], 5.0) == "met"  # above the baseline
    assert real_data.against_aim([0.9], [float("nan")], 5.0) == "no baseline"


def test_entry_recipe_applies_settings_then_task_options(tmp_path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\ntask: {name: uea, dataset: GunPoint}\nmodel: {cell: cmru, hidden_size: 8}\n")
    path, parsed = real_data.entry_recipe(
        f"{recipe}:dataset=ArrowHead", ["train.threads=1", "train.lr=0.003"]
    )
    assert path == str(recipe) and parsed.task.options()["dataset"] == "ArrowHead"
    assert parsed.train.threads == 1 and parsed.train.lr == 0.003
    assert parsed.train.selection == "average"  # the series defaults fill in the rest


ABLATION = Path(__file__).resolve().parents[1] / "scripts" / "ablation_table.py"
spec_ab = importlib.util.spec_from_file_location("ablation_table", ABLATION)
ablation_table = importlib.util.module_from_spec(spec_ab)
spec_ab.loader.exec_module(ablation_table)


def results(golden: dict[str, list[float]], minirocket: float = float("nan")) -> str:
    import json

    return json.dumps(
        {
            f"r.yaml:dataset={name}": {
                "name": name,
                "ours": [{"golden": g} for g in gs],
                "minirocket": [minirocket],
            }
            for name, gs in golden.items()
        }
    )


def test_ablation_table_has_a_column_per_setting_and_means_over_common_sets(tmp_path) -> None:
    (tmp_path / "a.json").write_text(results({"A": [0.5, 0.7], "B": [0.9, 0.9]}, 0.95))
    (tmp_path / "b.json").write_text(results({"A": [0.8, 0.8]}))
    out = tmp_path / "t.md"
    import sys

    argv = sys.argv
    sys.argv = ["x", "--out", str(out), f"base={tmp_path}/a.json", f"new={tmp_path}/b.json"]
    try:
        ablation_table.main()
    finally:
        sys.argv = argv
    text = out.read_text()
    assert "| data set | base | new | MiniRocket |" in text
    assert "| A | 60.0 [50.0; 70.0] | 80.0 [80.0; 80.0] | 95.0 [95.0; 95.0] |" in text
    assert "| B | 90.0 [90.0; 90.0] | not run | 95.0 [95.0; 95.0] |" in text
    assert "| mean of the 1 sets every column covers | 60.0 | 80.0 | 95.0 |" in text
    assert "| sets where the column is best | 0 | 1 | |" in text
    assert "| against base, on the sets both cover (points) | - | +20.0 on 1 | |" in text
    with pytest.raises(SystemExit, match="LABEL=RESULTS.json"):
        ablation_table.load("no-label")


def test_ablation_table_keeps_its_notes_when_rerun(tmp_path) -> None:
    """The notes under a table come from their own file: a rerun of the table does not lose them."""
    import sys

    (tmp_path / "a.json").write_text(results({"A": [0.5]}))
    (tmp_path / "notes.md").write_text("What it shows: A is hard.\n")
    out = tmp_path / "t.md"
    argv = sys.argv
    sys.argv = ["x", "--out", str(out), "--notes", str(tmp_path / "notes.md"), f"base={tmp_path}/a.json"]
    try:
        ablation_table.main()
        ablation_table.main()
    finally:
        sys.argv = argv
    text = out.read_text()
    assert text.count("What it shows: A is hard.") == 1 and "--notes" in text


def _load_script(name: str):
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_unseen_sets_downloads_nothing_when_the_files_are_there(tmp_path, monkeypatch) -> None:
    unseen = _load_script("unseen_sets")
    train, test = unseen.files_of("PLAID", tmp_path)
    assert (train.name, test.name) == ("PLAID_TRAIN.ts", "PLAID_TEST.ts")
    for name in unseen.SETS:
        for path in unseen.files_of(name, tmp_path):
            path.write_text("x")

    def no_download(*args, **kwargs):
        raise AssertionError("pip ran although every file is there")

    monkeypatch.setattr(unseen.subprocess, "run", no_download)
    unseen.extract(list(unseen.SETS), tmp_path)


def test_the_network_column_names_a_dcls_front_end() -> None:
    """Without it a lone CMRU behind delays read like the plain one."""
    from codesign.train.recipe import parse_recipe

    layers = [{"cell": "cmru", "size": 16, "eps": 1.0, "dcls": {"taps": 4, "span": 16}}]
    recipe = parse_recipe(
        {
            "name": "r",
            "task": {"name": "uea", "dataset": "GunPoint"},
            "model": {"arch": "hardware", "layers": layers},
        }
    )
    assert real_data.describe(recipe) == "DCLS 4x16 > CMRU 16, last pooling, 8-bit weights"
    scaled = parse_recipe(
        {"name": "r", "task": {"name": "uea", "dataset": "Covid3Month_disc"}, "model": {"layers": layers}}
    )
    assert real_data.describe(scaled).endswith("8-bit weights; each series scaled on its own")


def test_the_made_by_line_repeats_where_the_runs_are_kept() -> None:
    """A table made from runs in another --work must say so: its command otherwise trains them all again."""
    argv = ["--seeds", "0,1", "--work", "runs/w", "--json", "o.json", "--set", "model.layers=[{cell: cmru}]"]
    args = real_data.parse_args([*argv, "--out", "t.md", "models/classify_hw.yaml:dataset=GunPoint"])
    line = real_data.made_by(args)
    assert "--work runs/w " in line and "--json o.json " in line and "--baselines" not in line
    assert "--set 'model.layers=[{cell: cmru}]' " in line
    assert "--work" not in real_data.made_by(real_data.parse_args(["e.yaml"]))


def test_a_finished_run_of_another_recipe_is_never_reused(tmp_path, monkeypatch) -> None:
    """The table once read a finished run whatever recipe it held: a rerun with other settings in
    the same --work reported the old runs under the new settings."""
    from codesign.errors import CodesignError
    from codesign.train.trainer import recipe_text

    files = Path(__file__).parent / "data" / "files"
    entry = f"models/classify_files_hw.yaml:train={files / 'tiny_TRAIN.ts'},test={files / 'tiny_TEST.ts'}"
    _, other = real_data.entry_recipe(entry, ["train.lr=0.5"])
    _, recipe = real_data.entry_recipe(entry)
    run = tmp_path / "classify_files_hw_tiny_TRAIN_s0"
    run.mkdir()
    (run / "recipe.yaml").write_text(recipe_text(other.model_copy(update={"seed": 0})))
    (run / "summary.json").write_text("{}")
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    with pytest.raises(CodesignError, match="holds a finished run of another recipe"):
        real_data.ours(recipe.model_dump(mode="json"), 0, tmp_path)


def test_the_network_column_gives_the_span_auto_resolves_to() -> None:
    from codesign.train.recipe import parse_recipe

    layers = [{"cell": "cmru", "size": 16, "eps": 1.0, "dcls": {"taps": 8, "span": "auto"}}]
    data = {"name": "r", "task": {"name": "uea", "dataset": "GunPoint"}, "model": {"layers": layers}}
    recipe = parse_recipe(data)
    assert real_data.describe(recipe, 24).startswith("DCLS 8x16 > CMRU 16, ")
    assert real_data.describe(recipe, 150).startswith("DCLS 8x64 > CMRU 16, ")
    assert real_data.describe(recipe).startswith("DCLS 8xauto > CMRU 16, ")
    strided = parse_recipe(data | {"model": {"layers": layers, "input_stride": 4}})
    assert real_data.describe(strided, 150).startswith("DCLS 8x32 > CMRU 16, ")  # 38 steps
