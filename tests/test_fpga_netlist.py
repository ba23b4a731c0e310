"""The chip's netlist, simulated: the accelerator as yosys maps it for the iCE40 and ECP5, against golden."""

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


def test_an_unknown_chip_is_refused_and_the_ecp5_is_mapped_with_synth_ecp5():
    with pytest.raises(CodesignError, match=r"--netlist 'up6k' is not one of up5k, hx8k, ecp5-25k, ecp5-85k"):
        synth_script("up6k")
    for device in ("ecp5-25k", "ecp5-85k"):
        assert "synth_ecp5 -top accelerator\n" in synth_script(device)
    assert "synth_ice40 -top accelerator -dsp -spram\n" in synth_script("up5k")


def test_the_ecp5_cell_models_give_the_black_boxes_a_body():
    models = cell_models("ecp5-25k")
    assert "`include" not in models and "$error" not in models
    assert models.startswith("`define NO_INCLUDES")
    for cell in ("LUT4", "TRELLIS_FF", "CCU2C", "TRELLIS_DPR16X4", "PFUMX", "L6MUX21"):
        assert f"module {cell}" in models
    # one DP16KD and one MULT18X18D, each with behaviour (an always block or an assign)
    for cell, body in (("DP16KD", "always @("), ("MULT18X18D", "assign {P35")):
        assert models.count(f"module {cell}(") == 1
        module = models[models.index(f"module {cell}(") :]
        assert body in module[: module.index("endmodule")]


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


def _netlist_regress():
    sys.path.insert(0, str(ROOT / "verification"))
    try:
        import netlist_regress
    finally:
        sys.path.remove(str(ROOT / "verification"))
    return netlist_regress


def test_every_netlist_regression_variant_builds_and_differs(tmp_path):
    """``make sim-netlist``'s variants are legal ``codesign rtl`` options and give distinct designs
    (a variant may share its RTL with another when it maps it for another chip or at the pins)."""
    regress = _netlist_regress()
    assert {v.name for v in regress.VARIANTS} >= set(regress.QUICK)
    assert {v.device for v in regress.VARIANTS} == {"up5k", "ecp5-25k"}
    assert {(v.device, v.pins) for v in regress.VARIANTS} >= {("up5k", True), ("ecp5-25k", True)}
    designs, built = set(), {}
    for variant in regress.VARIANTS:
        options = repr(sorted(variant.rtl_kwargs().items()))
        if options not in built:  # a variant at the pins may reuse another's options
            build_rtl(BUNDLE, tmp_path / variant.name, **variant.rtl_kwargs())
            built[options] = (tmp_path / variant.name / "accelerator.v").read_text()
        designs.add((built[options], variant.device, variant.pins))
    assert len(designs) == len(regress.VARIANTS), "two variants simulate the same design"


def test_the_matrix_covers_both_chips_at_one_and_four_lanes_and_says_what_does_not_fit():
    regress = _netlist_regress()
    plan = regress.matrix_designs(
        ["copy_first_cmru", "spoken_digits_cmru_stack"], [1, 4], ["up5k", "ecp5-25k"]
    )
    names = {(b, v.name): misfit for b, v, misfit in plan}
    assert len(plan) == 8 and names[("copy_first_cmru", "ecp5-25k_p4")] == ""
    assert "logic cells" in names[("spoken_digits_cmru_stack", "up5k_p4")]  # the cost model's reason
    ecp5 = next(v for b, v, _ in plan if v.name == "ecp5-25k_p1")
    assert (ecp5.device, ecp5.target, ecp5.lanes) == ("ecp5-25k", "ecp5", 1)
    rows = [
        {
            "design": "copy_first_cmru__up5k_p1",
            "sim": "icarus",
            "status": "ok",
            "sequences": 2,
            "wall_s": 3.0,
        },
        {"design": "big__up5k_p4", "sim": "icarus", "status": "does not fit", "reason": "needs 9 of 8 DSPs"},
    ]
    table = regress.matrix_table(rows, "python verification/netlist_regress.py --matrix")
    assert "Command: `python verification/netlist_regress.py --matrix`" in table
    assert "| copy_first_cmru | up5k | 1 | ok (2 seq, 3.0 s) |" in table
    assert "| big | up5k | 4 | does not fit: needs 9 of 8 DSPs |" in table


def test_a_stopped_matrix_leaves_the_table_of_what_finished(tmp_path, monkeypatch):
    """The table is rewritten after every design: a matrix stopped part way (here: the second design
    fails hard) still leaves the first design's results and says how many are left."""
    regress = _netlist_regress()
    calls = []

    def fake_run(bundle, variant, sims, vectors, out):
        calls.append(bundle)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return [
            {"design": f"{bundle}__{variant.name}", "sim": s, "status": "ok", "sequences": 2} for s in sims
        ]

    monkeypatch.setattr(regress, "run_design", fake_run)
    table = tmp_path / "matrix.md"
    argv = ["--matrix", "--bundles", "copy_first_cmru,parity_hsru", "--lanes", "1", "--devices", "up5k"]
    with pytest.raises(KeyboardInterrupt):
        regress.main([*argv, "--out", str(tmp_path), "--table", str(table)])
    text = table.read_text()
    assert "| copy_first_cmru | up5k | 1 | ok (2 seq, None s) | ok (2 seq, None s) |" in text
    assert "parity_hsru" not in text.split("Command:")[1].split("\n", 1)[1]
    assert "2 simulator runs, 0 failing; designs not finished yet: 1 (the command resumes)." in text


def test_a_matrix_build_that_fits_and_does_not_build_fails(tmp_path, monkeypatch):
    """In ``--matrix`` every option is the device's default, so a design the cost model fits but
    yosys cannot map (the selective UP5K build's ``su_walk`` in block RAM) fails the run; a
    variant run keeps "not built" for options a bundle cannot take."""
    regress = _netlist_regress()

    def fake_run(bundle, variant, sims, vectors, out):
        return [
            {"design": f"{bundle}__{variant.name}", "sim": s, "status": "not built", "reason": "no mapping"}
            for s in sims
        ]

    monkeypatch.setattr(regress, "run_design", fake_run)
    table = tmp_path / "matrix.md"
    argv = ["--matrix", "--bundles", "copy_first_cmru", "--lanes", "1", "--devices", "up5k"]
    assert regress.main([*argv, "--out", str(tmp_path), "--table", str(table)]) == 1
    assert (
        "0 simulator runs, 0 failing; designs the cost model fits that did not build: 1." in table.read_text()
    )
    argv = ["--bundles", "copy_first_cmru", "--variants", "spram_p2", "--out", str(tmp_path)]
    assert regress.main(argv) == 0


@pytest.fixture(scope="module")
def ecp5_netlist(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("netlist") / "build"
    build_rtl(BUNDLE, build, lanes=2, weights="frozen", target="ecp5", counters="none", share="auto")
    return netlist_build(build, "ecp5-25k")


@pytest.mark.sim
@pytest.mark.slow
def test_the_ecp5_netlist_is_bit_exact_and_uses_the_chips_primitives(ecp5_netlist):
    text = (ecp5_netlist / "accelerator.v").read_text()
    design = text[: text.index("`define NO_INCLUDES")]
    for cell in ("DP16KD", "MULT18X18D", "LUT4", "TRELLIS_FF"):
        assert f"  {cell} " in design, f"the mapped design has no {cell}"
    report = run_sim(ecp5_netlist, "icarus", vectors=3, seed=1, waves="never", timeout_s=900)
    assert report.sequences == 3 and report.mismatches == 0, report.summary_line()


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.long
def test_an_ecp5_netlist_mutant_is_caught(ecp5_netlist, tmp_path):
    change = invert_lut(ecp5_netlist, 0, tmp_path / "mutant")
    assert "LUT 0 of" in change and ".INIT(16'h" in change
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
