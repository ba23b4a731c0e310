"""The flow's stages: run once, skip when unchanged, rerun what changed, fail loudly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codesign.errors import CodesignError
from codesign.flow.recipe_flow import FlowOptions, flow_stages
from codesign.flow.stages import Stage, StageFailed, run_stages

PY = (sys.executable, "-c")
# Copies the file named first to the file named second and counts its runs in a third.
COPY = "import sys, pathlib as p; a, b, n = map(p.Path, sys.argv[1:4]); b.write_text(a.read_text()); n.write_text(n.read_text() + 'x' if n.exists() else 'x')"


def _copy(name: str, src: Path, dst: Path, runs: Path) -> Stage:
    return Stage(name, [COPY, str(src), str(dst), str(runs)], reads=[src], writes=[dst], program=PY)


@pytest.fixture
def chain(tmp_path: Path):
    src = tmp_path / "in.txt"
    src.write_text("one")
    stages = [
        _copy("first", src, tmp_path / "mid.txt", tmp_path / "first.runs"),
        _copy("second", tmp_path / "mid.txt", tmp_path / "out.txt", tmp_path / "second.runs"),
    ]
    return tmp_path, src, stages


def _runs(folder: Path, name: str) -> int:
    path = folder / f"{name}.runs"
    return len(path.read_text()) if path.exists() else 0


def test_a_second_run_skips_every_stage(chain):
    folder, _, stages = chain
    lines: list[str] = []
    first = run_stages(stages, folder, progress=lines.append)
    again = run_stages(stages, folder, progress=lines.append)
    assert [o.status for o in first] == ["ran", "ran"]
    assert [o.status for o in again] == ["skipped", "skipped"]
    assert (_runs(folder, "first"), _runs(folder, "second")) == (1, 1)
    assert any("[2/2] second: unchanged, skipped" in line for line in lines)
    assert (folder / "logs" / "first.log").read_text().startswith("$ codesign ")


def test_a_changed_input_reruns_its_stage_and_those_that_read_its_outputs(chain):
    folder, src, stages = chain
    run_stages(stages, folder, progress=lambda _: None)
    src.write_text("two")
    outcomes = run_stages(stages, folder, progress=lambda _: None)
    assert [o.status for o in outcomes] == ["ran", "ran"]
    assert (folder / "out.txt").read_text() == "two"


def test_a_rerun_that_writes_the_same_bytes_leaves_the_next_stage_skipped(chain):
    folder, _, stages = chain
    run_stages(stages, folder, progress=lambda _: None)
    outcomes = run_stages(stages, folder, progress=lambda _: None, force=["first"])
    assert [o.status for o in outcomes] == ["ran", "skipped"]


def test_a_deleted_output_or_a_damaged_record_reruns(chain):
    folder, _, stages = chain
    run_stages(stages, folder, progress=lambda _: None)
    (folder / "out.txt").unlink()
    assert [o.status for o in run_stages(stages, folder, progress=lambda _: None)] == ["skipped", "ran"]
    (folder / "flow.json").write_text("{not json")
    assert [o.status for o in run_stages(stages, folder, progress=lambda _: None)] == ["ran", "ran"]


def test_a_failing_stage_stops_the_flow_with_its_log_and_records_nothing(chain):
    folder, src, stages = chain
    bad = Stage("bad", ["import sys; print('the reason'); sys.exit(3)"], reads=[src], program=PY)
    with pytest.raises(StageFailed, match=r"(?s)'bad' failed \(exit 3\).*the reason"):
        run_stages([stages[0], bad, stages[1]], folder, progress=lambda _: None)
    assert set(json.loads((folder / "flow.json").read_text())) == {"first"}
    assert not (folder / "out.txt").exists()


def test_a_stage_that_does_not_write_its_outputs_fails(tmp_path: Path):
    lazy = Stage("lazy", ["pass"], writes=[tmp_path / "never.txt"], program=PY)
    with pytest.raises(StageFailed, match="did not write"):
        run_stages([lazy], tmp_path, progress=lambda _: None)


def test_force_names_a_stage(chain):
    folder, _, stages = chain
    with pytest.raises(CodesignError, match="--force nope: no such stage"):
        run_stages(stages, folder, progress=lambda _: None, force=["nope"])


def test_flow_options_are_checked(tmp_path: Path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\n")
    with pytest.raises(CodesignError, match="--device 'up6k' is not one of"):
        FlowOptions(recipe=recipe, folder=tmp_path, device="up6k")
    with pytest.raises(CodesignError, match="recipe file not found"):
        FlowOptions(recipe=tmp_path / "missing.yaml", folder=tmp_path)


def test_the_flow_maps_simulates_and_implements_for_its_device(tmp_path: Path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\n")
    fpga = flow_stages(FlowOptions(recipe=recipe, folder=tmp_path, device="ecp5-25k", step_rate=50))
    assert [s.name for s in fpga] == ["train", "export", "map", "sim", "synth", "report"]
    mapped = fpga[2].argv
    assert mapped[mapped.index("--device") + 1] == "ecp5-25k" and "--step-rate" in mapped
    asic = flow_stages(FlowOptions(recipe=recipe, folder=tmp_path, device="asic"))
    assert [s.name for s in asic] == ["train", "export", "map", "sim", "area", "report"]


@pytest.mark.slow
@pytest.mark.sim
def test_a_recipe_flows_to_a_report_and_a_second_run_skips_every_stage(tmp_path: Path):
    """The whole flow on a small recipe for the ASIC (train .. area .. report), then resumed."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    recipe = yaml.safe_load((root / "models" / "copy_first_cmru.yaml").read_text())
    recipe["task"].update(length=20, val_size=100, test_size=100)
    recipe["train"].update(iterations=60, eval_every=30, max_seconds=None)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    opts = FlowOptions(recipe=path, folder=tmp_path / "flow", device="asic", sequences=3)
    first = run_stages(flow_stages(opts), opts.folder, progress=lambda _: None)
    assert [o.status for o in first] == ["ran"] * 6
    sim = json.loads((opts.folder / "sim.json").read_text())
    assert sim["sequences"] == 3 and sim["mismatches"] == 0
    report = json.loads((opts.folder / "report.json").read_text())
    assert report["latency"]["cycles_per_step"] > 0
    mapping = json.loads((opts.folder / "build" / "build.json").read_text())["mapping"]
    assert mapping["device"] == "asic"
    again = run_stages(flow_stages(opts), opts.folder, progress=lambda _: None)
    assert [o.status for o in again] == ["skipped"] * 6
