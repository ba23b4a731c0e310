"""The chip's netlist, simulated: the accelerator as yosys maps it for the iCE40, against golden."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codesign.errors import CodesignError
from codesign.fpga.netlist import cell_models, invert_lut, netlist_build, synth_script
from codesign.hw.build import build_rtl
from codesign.verify.runner import run_sim

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "models" / "bundles" / "copy_first_cmru"


def test_the_ecp5_and_unknown_chips_are_refused_with_the_reason():
    with pytest.raises(CodesignError, match=r"--netlist ecp5-25k: cannot simulate .*DP16KD"):
        synth_script("ecp5-25k")
    with pytest.raises(CodesignError, match=r"--netlist 'up6k' is not one of up5k, hx8k"):
        synth_script("up6k")


def test_the_cell_models_are_one_plain_verilog_text():
    models = cell_models("up5k")
    assert "`include" not in models
    assert models.startswith("`define NO_ICE40_DEFAULT_ASSIGNMENTS")
    for cell in ("SB_LUT4", "SB_RAM40_4K", "SB_MAC16", "SB_SPRAM256KA", "SB_CARRY", "SB_DFFESR"):
        assert f"module {cell}" in models


@pytest.fixture(scope="module")
def up5k_netlist(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("netlist") / "build"
    build_rtl(BUNDLE, build, lanes=2, weights="frozen", target="up5k", counters="none", share="auto")
    return netlist_build(build, "up5k")


@pytest.mark.sim
@pytest.mark.slow
def test_the_up5k_netlist_is_bit_exact_and_uses_the_chips_primitives(up5k_netlist):
    text = (up5k_netlist / "accelerator.v").read_text()
    design = text[: text.index("`define NO_ICE40")]
    for cell in ("SB_RAM40_4K", "SB_MAC16", "SB_LUT4"):
        assert f"  {cell} " in design, f"the mapped design has no {cell}"
    report = run_sim(up5k_netlist, "icarus", vectors=3, seed=1, waves="never", timeout_s=900)
    assert report.sequences == 3 and report.mismatches == 0, report.summary_line()
    # a second build of the same RTL reuses the netlist
    again = netlist_build(up5k_netlist.parents[1], "up5k")
    assert again == up5k_netlist and (again / "accelerator.v").read_text() == text


@pytest.mark.sim
@pytest.mark.slow
def test_a_netlist_mutant_is_caught(up5k_netlist, tmp_path):
    change = invert_lut(up5k_netlist, 0, tmp_path / "mutant")
    assert "LUT 0 of" in change
    try:
        report = run_sim(
            tmp_path / "mutant",
            "icarus",
            vectors=3,
            seed=1,
            waves="never",
            timeout_s=900,
            stop_on_mismatch=True,
        )
    except CodesignError as err:  # a mutant that hangs a stream ends in the testbench's stall error
        assert "no transfer" in str(err) or "failed" in str(err), err
    else:
        assert report.mismatches > 0, f"mutant {change} survived: {report.summary_line()}"


def test_every_netlist_regression_variant_builds_and_differs(tmp_path):
    """``make sim-netlist``'s variants are legal ``codesign rtl`` options and give distinct designs."""
    sys.path.insert(0, str(ROOT / "verification"))
    try:
        from netlist_regress import QUICK, VARIANTS
    finally:
        sys.path.remove(str(ROOT / "verification"))

    assert {v.name for v in VARIANTS} >= set(QUICK)
    verilog = {}
    for variant in VARIANTS:
        build_rtl(BUNDLE, tmp_path / variant.name, **variant.rtl_kwargs())
        verilog[variant.name] = (tmp_path / variant.name / "accelerator.v").read_text()
    assert len(set(verilog.values())) == len(VARIANTS), "two variants generate the same design"
