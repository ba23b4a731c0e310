"""cocotb runs of generated accelerators under Icarus and Verilator, against the golden model."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from codesign.bundle import load_bundle, save_bundle
from codesign.bundle.random import make_random_network_bundle
from codesign.errors import CodesignError
from codesign.golden import run_golden
from codesign.hw.build import build_rtl
from codesign.verify import run_sim
from codesign.verify.runner import simulator_env
from codesign.verify.vectors import load_vectors

LAYERS = [{"cell": "cmru", "size": 5, "eps": -1, "state_bits": 4}]


def make_build(tmp_path, *, lanes=2, seed=1, layers=LAYERS, weights="runtime", **kw):
    bundle = make_random_network_bundle(
        str(tmp_path / f"bundle{seed}"), seed=seed, inputs=3, layers=layers, classes=3, **kw
    )
    build_rtl(bundle.path, tmp_path / "rtl", lanes=lanes, weights=weights)
    return tmp_path / "rtl"


def corrupt_bundle_copy(build_dir, tmp_path, edit):
    """Replace the bundle copy the testbench's golden model reads (not the RTL's memories)."""
    bundle = load_bundle(build_dir)
    weights = {k: v.copy() for k, v in bundle.weights.items()}
    edit(weights)
    wrong = save_bundle(tmp_path / "wrong", bundle.manifest, weights)
    for name in ("manifest.yaml", "weights.npz"):
        shutil.copyfile(wrong.path / name, build_dir / name)


@pytest.fixture(scope="module")
def cmru_build(tmp_path_factory):
    return make_build(tmp_path_factory.mktemp("cmru"), weights="baked")


@pytest.mark.sim
def test_icarus_cmru_is_bit_exact(cmru_build):
    report = run_sim(cmru_build, sim="icarus", vectors=6, seed=3)
    assert report.summary_line() == "bit-exact: 6/6 sequences, 0 mismatches"
    assert report.first_mismatch is None and report.accuracy is None and report.waveform is None
    assert report.cycles_per_step >= report.cycle_floor_per_step > 0
    assert report.counters["layer0_macs"] > 0 and report.counters["sequences"] == 6
    assert report.counters["layer0_weights_reads"] > 0  # no X counters under Icarus
    assert (cmru_build / "sim_icarus" / "sim.vvp").is_file()


@pytest.mark.sim
def test_runtime_build_loads_two_bundles_through_config(tmp_path):
    layers = [
        {"cell": "bmru", "size": 4, "state_bits": 3, "dcls": {"taps": 2, "span": 3}},
        {"cell": "hsru", "size": 3, "state_bits": 5, "leak_shift": 1},
    ]
    build = make_build(tmp_path, lanes=3, layers=layers, per_step=True)
    other = make_random_network_bundle(
        str(tmp_path / "other"), seed=9, inputs=3, layers=layers, classes=3, per_step=True
    )
    report = run_sim(build, sim="icarus", vectors=3, seed=1, bundles=[build, other.path])
    assert report.ok, report.summary_line()
    assert report.sequences == 6
    assert report.coverage["protocol"]["weights reloaded"] >= 1


@pytest.mark.sim
@pytest.mark.slow
def test_verilator_is_bit_exact(tmp_path):
    build = make_build(tmp_path, lanes=3, layers=[{"cell": "cmru", "size": 7, "eps": 1, "state_bits": 3}])
    report = run_sim(build, sim="verilator", vectors=6, seed=2, timeout_s=900)
    assert report.summary_line() == "bit-exact: 6/6 sequences, 0 mismatches"


@pytest.mark.sim
def test_wrong_readout_bias_in_expectation_is_a_logit_mismatch_with_a_waveform(cmru_build, tmp_path):
    build = tmp_path / "rtl"
    shutil.copytree(cmru_build, build)

    def edit(w):
        w["readout.bias"][1] += 1 if w["readout.bias"][1] < 0 else -1

    corrupt_bundle_copy(build, tmp_path, edit)
    report = run_sim(build, sim="icarus", vectors=3, seed=3)
    assert not report.ok and report.mismatches >= 3 and report.failed_test == "random_sequences"
    assert report.summary_line().startswith("random_sequences: sequence 0, step ")
    assert ", readout, class 1, signal logit: expected " in report.summary_line()
    assert report.waveform is not None and report.waveform.endswith(".fst")
    top = json.loads((build / "build.json").read_text())["top"]  # the waveform is named after the top
    assert (build / "sim_icarus_waves" / f"{top}.fst").stat().st_size > 0


@pytest.mark.sim
def test_wrong_alpha_in_expectation_is_a_state_mismatch(cmru_build, tmp_path):
    build = tmp_path / "rtl"
    shutil.copytree(cmru_build, build)

    def edit(w):
        w["layers.0.alpha"][:] = np.where(w["layers.0.alpha"] == 5, 6, 5)

    corrupt_bundle_copy(build, tmp_path, edit)
    report = run_sim(build, sim="icarus", vectors=3, seed=3, waves="never")
    assert not report.ok and report.waveform is None
    assert ", layer0, neuron " in report.first_mismatch and "signal state: expected" in report.first_mismatch


@pytest.mark.sim
def test_float_inputs_are_quantized_and_labels_give_accuracy(cmru_build, tmp_path):
    bundle = load_bundle(cmru_build)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, size=(4, 6, 3))
    x[rng.random(x.shape) < 0.5] = 0.0
    np.save(tmp_path / "x.npy", x)
    xq = load_vectors(bundle, vectors=0, seed=0, inputs=tmp_path / "x.npy")
    classes = run_golden(bundle, np.stack(xq)).classes
    labels = classes.copy()
    labels[0] = (labels[0] + 1) % 3
    np.save(tmp_path / "y.npy", labels)
    report = run_sim(
        cmru_build, sim="icarus", vectors=0, inputs=tmp_path / "x.npy", labels=tmp_path / "y.npy"
    )
    assert report.ok and report.sequences == 4
    assert report.accuracy == pytest.approx(0.75)
    assert report.summary_line() == "bit-exact: 4/4 sequences, 0 mismatches; RTL accuracy 0.7500"


@pytest.mark.sim
def test_icarus_build_flags_run_every_combinational_block_at_time_zero(tmp_path):
    """yosys makes each ``always @*`` block sensitive to a dummy register whose declaration
    initializer must fire at time 0. Under cocotb's -g2012 it does not, and a block that reads only
    registers stays X; the runner's -g2005 gives the event (the pattern as write_verilog emits it)."""
    (tmp_path / "t.v").write_text(
        "module t; reg [1:0] st = 0; reg kick = 0; reg y;\n"
        "always @* begin if (kick) begin end y = 1'h0; case (st) 2'h0: y = 1'h1; endcase end\n"
        'initial #1 $display("y=%b", y);\nendmodule\n'
    )
    seen = {}
    for flag in ("-g2012", "-g2005"):
        vvp = tmp_path / f"t{flag}.vvp"
        subprocess.run(["iverilog", flag, "-o", str(vvp), str(tmp_path / "t.v")], check=True, timeout=60)
        out = subprocess.run(["vvp", "-n", str(vvp)], check=True, timeout=60, capture_output=True, text=True)
        seen[flag] = out.stdout.strip().splitlines()[0]
    assert seen == {"-g2012": "y=x", "-g2005": "y=1"}


def test_missing_icarus_names_the_install_command(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CodesignError, match=r"install it with `apt-get install -y iverilog`"):
        simulator_env("icarus")


def test_unknown_simulator_test_and_bad_build_dir_are_codesign_errors(tmp_path, cmru_build):
    with pytest.raises(CodesignError, match="unknown simulator 'xsim'; choose one of icarus, verilator"):
        run_sim(tmp_path, sim="xsim")
    with pytest.raises(CodesignError, match="not a build directory: build.json missing"):
        run_sim(tmp_path, sim="icarus")
    with pytest.raises(CodesignError, match=r"unknown test\(s\) \['nope'\]"):
        run_sim(cmru_build, sim="icarus", tests=["nope"])
    with pytest.raises(CodesignError, match="only into a build made with weights='runtime'"):
        run_sim(cmru_build, sim="icarus", bundles=[cmru_build])


def test_integer_inputs_outside_the_format_are_refused(cmru_build, tmp_path):
    np.save(tmp_path / "x.npy", np.full((1, 2, 3), 1000, dtype=np.int64))
    with pytest.raises(CodesignError, match=r"x\.npy: integer inputs must lie in the 8-bit input format"):
        run_sim(cmru_build, sim="icarus", inputs=tmp_path / "x.npy")


@pytest.mark.sim
def test_cli_sim_takes_every_sequence_of_an_input_file_and_writes_json(cmru_build, tmp_path):
    """`codesign sim --inputs` used to stop silently at the random-vector default (20)."""
    from typer.testing import CliRunner

    from codesign.cli import app

    x = np.random.default_rng(1).integers(-3, 4, size=(23, 3, 3)).astype(np.float64)
    np.save(tmp_path / "x.npy", x)
    res = CliRunner().invoke(
        app, ["sim", str(cmru_build), "--inputs", str(tmp_path / "x.npy"), "--json", str(tmp_path / "s.json")]
    )
    assert res.exit_code == 0, res.output
    assert "bit-exact: 23/23 sequences, 0 mismatches" in res.output
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["sequences"] == 23 and s["mismatches"] == 0 and s["steps"] == 23 * 3
    assert s["cycles"] > 0 and s["cycles_per_step"] >= s["cycle_floor_per_step"] > 0
    assert {"cycles", "layer0_macs", "layer0_events", "readout_macs", "input_stall_cycles"} <= set(
        s["counters"]
    )
