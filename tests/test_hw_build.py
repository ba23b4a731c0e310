"""build_rtl: Verilog plus a self-contained copy of the bundle, written atomically."""

import hashlib
import json
import re

import pytest

from codesign.bundle.random import make_random_bundle
from codesign.errors import CodesignError
from codesign.hw.build import build_rtl
from codesign.hw.faults import FAULTS


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("bundle") / "b"
    make_random_bundle(str(path), seed=2, d=5, inputs=3, classes=3)
    return path


def test_build_writes_verilog_bundle_copy_and_report(bundle_dir, tmp_path):
    out = tmp_path / "rtl"
    info = build_rtl(bundle_dir, out, lanes=2)
    assert sorted(p.name for p in out.iterdir()) == [
        "accelerator.v",
        "build.json",
        "manifest.yaml",
        "weights.npz",
    ]
    text = (out / "accelerator.v").read_text()
    assert info == json.loads((out / "build.json").read_text())
    assert info["verilog_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert info["top"] == "random_cmru_d5_m3_c3_s2" and info["lanes"] == 2 and info["faults"] == []
    assert [e["groups"] for e in info["plan"]["engines"]] == [3, 2]  # layer0 d=5, readout C=3
    assert info["bundle"] == "random_cmru_d5_m3_c3_s2"
    assert "module random_cmru_d5_m3_c3_s2(" in text
    for port, spec in info["ports"].items():
        assert re.search(rf"\b(input|output)\s+(\[{spec['width'] - 1}:0\]\s+)?{port};", text), port
    assert {"inputs__payload", "config__payload", "results__payload", "counters", "trace_0"} <= set(
        info["ports"]
    )
    assert info["ports"]["counters"]["width"] == 32 * len(info["plan"]["counters"])
    assert set(info["trace_fields"]) == {"trace_0"}
    assert (out / "weights.npz").read_bytes() == (bundle_dir / "weights.npz").read_bytes()


def test_faults_are_built_in_and_recorded(bundle_dir, tmp_path):
    clean = build_rtl(bundle_dir, tmp_path / "clean", lanes=2)
    info = build_rtl(bundle_dir, tmp_path / "rtl", lanes=2, faults={"readout_bias_ignored"})
    assert info["faults"] == ["readout_bias_ignored"]
    assert info["verilog_sha256"] != clean["verilog_sha256"]
    with pytest.raises(CodesignError, match="unknown fault"):
        build_rtl(bundle_dir, tmp_path / "bad", lanes=2, faults={"nope"})
    assert set(FAULTS) >= {"sat_off_by_one", "stalled_beat_lost"}


def test_identical_rebuild_keeps_simulator_caches(bundle_dir, tmp_path):
    out = tmp_path / "rtl"
    build_rtl(bundle_dir, out, lanes=1)
    (out / "sim_icarus").mkdir()
    (out / "sim_icarus" / "sim.vvp").write_text("compiled")
    build_rtl(bundle_dir, out, lanes=1)
    assert (out / "sim_icarus" / "sim.vvp").read_text() == "compiled"
    build_rtl(bundle_dir, out, lanes=5)
    assert not (out / "sim_icarus").exists()


@pytest.mark.parametrize(
    ("lanes", "message"),
    [
        (0, "lanes must be a positive integer, not 0"),
        (-3, "lanes must be a positive integer, not -3"),
        (6, r"lanes 6 is outside the allowed range 1\.\.5"),
    ],
)
def test_bad_lanes_is_a_codesign_error_naming_value_and_range(bundle_dir, tmp_path, lanes, message):
    with pytest.raises(CodesignError, match=message):
        build_rtl(bundle_dir, tmp_path / "rtl", lanes=lanes)
    assert not (tmp_path / "rtl").exists()


def test_missing_bundle_is_a_codesign_error(tmp_path):
    with pytest.raises(CodesignError, match="bundle directory not found"):
        build_rtl(tmp_path / "nope", tmp_path / "rtl")


def test_counter_sets_and_target_are_recorded(bundle_dir, tmp_path):
    none = build_rtl(bundle_dir, tmp_path / "none", lanes=2, counters="none", target="up5k")
    assert "counters" not in none["ports"] and none["counters_fields"] == {}  # no [-1:0] port
    assert "counters" not in (tmp_path / "none" / "accelerator.v").read_text()
    assert none["plan"]["target"] == "up5k" and none["plan"]["counter_set"] == "none"
    assert {m["style"] for m in none["plan"]["memories"]} <= {"block", "logic"}
    basic = build_rtl(bundle_dir, tmp_path / "basic", lanes=2, counters="basic")
    assert set(basic["plan"]["counters"]) == {
        "cycles", "sequences", "results", "layer0_steps", "layer0_macs", "layer0_events",
        "readout_steps", "readout_macs",
    }  # fmt: skip
    assert {m["style"] for m in basic["plan"]["memories"]} == {"auto"}
    assert basic["shape_sha256"] != build_rtl(bundle_dir, tmp_path / "all", lanes=2)["shape_sha256"]


def test_shared_multipliers_are_recorded(bundle_dir, tmp_path):
    """``--share-multipliers``: build.json says how many multipliers each lane has and how many
    cycles a slot takes; a build without sharing keeps its shape key."""
    shared = build_rtl(bundle_dir, tmp_path / "shared", lanes=2, share="on")
    plan = shared["plan"]
    assert plan["share"] == "1"
    layer = plan["engines"][0]
    assert (layer["lane_multipliers"], layer["passes"]) == (1, len(layer["matrices"]))
    assert "passes_l" in shared["cycle_floor_per_step"]
    alone = build_rtl(bundle_dir, tmp_path / "alone", lanes=2)
    assert alone["plan"]["share"] == "off" and alone["plan"]["engines"][0]["passes"] == 1
    assert shared["shape_sha256"] != alone["shape_sha256"]
    with pytest.raises(CodesignError, match="--share-multipliers 'two'"):
        build_rtl(bundle_dir, tmp_path / "bad", lanes=2, share="two")
    assert not (tmp_path / "bad").exists()


def test_every_memory_of_a_mapped_build_carries_the_plans_style() -> None:
    """Each ``reg [..] name [..]`` memory of a chip build's Verilog has the ``ram_style`` the plan
    chose: the issue stage's item memory had none, so synthesis put it in block RAM where the
    plan had counted LUT RAM (the d = 256 CMRU on the ECP5: 36 DP16KD against the plan's 35)."""

    from pathlib import Path

    from amaranth.back import verilog

    from codesign.bundle import load_bundle
    from codesign.hw import Accelerator

    bundle = load_bundle(Path(__file__).resolve().parents[1] / "models" / "bundles" / "spoken_digits_cmru")
    accel = Accelerator(bundle, lanes=2, target="ecp5", counters="none")
    assert accel.plan.memory("layer0_items").style == "distributed"
    text = verilog.convert(accel, name="accelerator", emit_src=False)
    memories = re.findall(r"(\(\* ram_style = \"(\w+)\" \*\)\s*)?reg \[\d+:0\] (\S+) \[\d+:0\];", text)
    assert memories and all(style for _, style, _ in memories), [
        name for _, style, name in memories if not style
    ]
    items = [style for _, style, name in memories if name == "items"]
    assert items == ["distributed", accel.plan.memory("readout_items").style]
