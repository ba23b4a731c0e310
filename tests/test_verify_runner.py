"""cocotb runs of generated accelerators under Icarus and Verilator, against the golden model."""

import shutil

import numpy as np
import pytest

from codesign.bundle import Formats, load_bundle, save_bundle
from codesign.bundle.random import make_random_bundle
from codesign.errors import CodesignError
from codesign.golden import run_golden
from codesign.hw import build_rtl
from codesign.verify import run_sim
from codesign.verify.runner import simulator_env
from codesign.verify.vectors import load_vectors


def make_build(tmp_path, *, lanes, seed=1, **kw):
    bundle = make_random_bundle(str(tmp_path / "bundle"), seed=seed, **kw)
    build_rtl(bundle.path, tmp_path / "rtl", lanes=lanes)
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
    return make_build(
        tmp_path_factory.mktemp("cmru"),
        lanes=2,
        d=5,
        inputs=3,
        classes=3,
        eps=-1,
        formats=Formats.model_validate({"state": {"bits": 4}}),
    )


@pytest.mark.sim
def test_icarus_cmru_is_bit_exact(cmru_build):
    report = run_sim(cmru_build, sim="icarus", vectors=8, seed=3)
    assert report.summary_line() == "bit-exact: 8/8 sequences, 0 mismatches"
    assert report.first_mismatch is None and report.accuracy is None
    assert report.cycles_per_step >= report.cycle_floor_per_step > 0
    assert (cmru_build / "sim_icarus" / "sim.vvp").is_file()


@pytest.mark.sim
def test_icarus_bmru_all_lanes_is_bit_exact(tmp_path):
    build = make_build(tmp_path, lanes=6, d=6, inputs=5, classes=4, cell="bmru", eps=0, seed=4)
    report = run_sim(build, sim="icarus", vectors=6, seed=1)
    assert report.ok, report.summary_line()


@pytest.mark.sim
def test_verilator_is_bit_exact(tmp_path):
    build = make_build(
        tmp_path,
        lanes=3,
        d=7,
        inputs=4,
        classes=3,
        eps=1,
        formats=Formats.model_validate({"state": {"bits": 3}}),
    )
    report = run_sim(build, sim="verilator", vectors=6, seed=2, timeout_s=600)
    assert report.summary_line() == "bit-exact: 6/6 sequences, 0 mismatches"


@pytest.mark.sim
def test_wrong_readout_bias_in_expectation_is_a_logit_mismatch(cmru_build, tmp_path):
    build = tmp_path / "rtl"
    shutil.copytree(cmru_build, build)

    def edit(w):
        w["readout.bias"][1] += 1 if w["readout.bias"][1] < 0 else -1

    corrupt_bundle_copy(build, tmp_path, edit)
    report = run_sim(build, sim="icarus", vectors=3, seed=3)
    assert not report.ok and report.mismatches >= 3
    assert report.summary_line().startswith("sequence 0, step ")
    assert "signal logits[1]: expected " in report.summary_line()


@pytest.mark.sim
def test_wrong_alpha_in_expectation_is_a_state_mismatch(cmru_build, tmp_path):
    build = tmp_path / "rtl"
    shutil.copytree(cmru_build, build)

    def edit(w):
        w["layers.0.alpha"][:] = np.where(w["layers.0.alpha"] == 5, 6, 5)

    corrupt_bundle_copy(build, tmp_path, edit)
    report = run_sim(build, sim="icarus", vectors=3, seed=3)
    assert not report.ok
    assert "signal state[" in report.first_mismatch, report.first_mismatch


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


def test_missing_icarus_names_the_install_command(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CodesignError, match=r"install it with `apt-get install -y iverilog`"):
        simulator_env("icarus")


def test_unknown_simulator_and_bad_build_dir_are_codesign_errors(tmp_path):
    with pytest.raises(CodesignError, match="unknown simulator 'xsim'; choose one of icarus, verilator"):
        run_sim(tmp_path, sim="xsim")
    with pytest.raises(CodesignError, match="not a build directory: build.json missing"):
        run_sim(tmp_path, sim="icarus")


def test_integer_inputs_outside_the_format_are_refused(cmru_build, tmp_path):
    np.save(tmp_path / "x.npy", np.full((1, 2, 3), 1000, dtype=np.int64))
    with pytest.raises(CodesignError, match=r"x\.npy: integer inputs must lie in the 8-bit input format"):
        run_sim(cmru_build, sim="icarus", inputs=tmp_path / "x.npy")


@pytest.mark.sim
def test_cli_sim_takes_every_sequence_of_an_input_file(cmru_build, tmp_path):
    """`codesign sim --inputs` used to stop silently at the random-vector default (20)."""
    from typer.testing import CliRunner

    from codesign.cli import app

    x = np.random.default_rng(1).integers(-3, 4, size=(23, 3, 3)).astype(np.float64)
    np.save(tmp_path / "x.npy", x)
    res = CliRunner().invoke(app, ["sim", str(cmru_build), "--inputs", str(tmp_path / "x.npy")])
    assert res.exit_code == 0, res.output
    assert "bit-exact: 23/23 sequences, 0 mismatches" in res.output
