"""build_rtl: Verilog plus a self-contained copy of the bundle, written atomically."""

import hashlib
import json
import re

import pytest

from codesign.bundle.random import make_random_bundle
from codesign.errors import CodesignError
from codesign.hw import build_rtl


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
    assert info["top"] == "accelerator" and info["lanes"] == 2 and info["groups"] == 3
    assert info["bundle"] == "random_cmru_d5_m3_c3_s2"
    assert "module accelerator(" in text
    for port, spec in info["ports"].items():
        assert re.search(rf"\b(input|output)\s+(\[{spec['width'] - 1}:0\]\s+)?{port};", text), port
    assert info["ports"]["state"]["width"] == 5 * 16
    assert (out / "weights.npz").read_bytes() == (bundle_dir / "weights.npz").read_bytes()


def test_every_combinational_block_depends_on_reset_or_an_input(bundle_dir, tmp_path):
    """An ``always @*`` block that reads only registers is never evaluated at time 0 by Icarus
    under cocotb, and stays X until one of them changes: the generator must not emit one."""
    build_rtl(bundle_dir, tmp_path / "rtl", lanes=2)
    text = (tmp_path / "rtl" / "accelerator.v").read_text()
    inputs = ("rst", "steps__valid", "steps__payload", "results__ready")
    blocks = re.findall(r"always @\*(.*?)\n  end", text, re.S)
    assert blocks and all(any(i in b for i in inputs) for b in blocks)


def test_identical_rebuild_keeps_simulator_caches(bundle_dir, tmp_path):
    out = tmp_path / "rtl"
    build_rtl(bundle_dir, out, lanes=1)
    (out / "sim_icarus").mkdir()
    (out / "sim_icarus" / "sim.vvp").write_text("compiled")
    build_rtl(bundle_dir, out, lanes=1)
    assert (out / "sim_icarus" / "sim.vvp").read_text() == "compiled"
    build_rtl(bundle_dir, out, lanes=5)
    assert not (out / "sim_icarus").exists()


@pytest.mark.parametrize("lanes", [0, 6, -3])
def test_bad_lanes_is_a_codesign_error_naming_value_and_range(bundle_dir, tmp_path, lanes):
    with pytest.raises(CodesignError, match=rf"lanes {lanes} is outside the allowed range 1\.\.5"):
        build_rtl(bundle_dir, tmp_path / "rtl", lanes=lanes)
    assert not (tmp_path / "rtl").exists()


def test_missing_bundle_is_a_codesign_error(tmp_path):
    with pytest.raises(CodesignError, match="bundle directory not found"):
        build_rtl(tmp_path / "nope", tmp_path / "rtl")
