"""codesign report: the analog (ngspice) power of the recurrent cells beside the digital proxy."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from codesign.bundle import load_bundle
from codesign.bundle.random import make_random_bundle, make_random_network_bundle, random_integer_inputs
from codesign.cli import app
from codesign.hw.build import build_rtl
from codesign.report import analog as report_analog
from codesign.report.analog import analog_power, pick_neurons
from codesign.report.figures import build_figures
from codesign.report.render import render_markdown

REPORT = ["--steps", "4", "--sequences", "1", "--lanes", "1"]


@pytest.fixture(scope="module")
def bmru_build(tmp_path_factory):
    """A d = 2 BMRU bundle (eps 0, last-step readout) built at P = 1."""
    root = tmp_path_factory.mktemp("bmru")
    make_random_bundle(str(root / "bundle"), seed=1, d=2, inputs=2, classes=2, cell="bmru", eps=0)
    build_rtl(root / "bundle", root / "build", lanes=1)
    return root / "build"


def _report(build, out, *extra):
    result = CliRunner().invoke(app, ["report", str(build), "--out", str(out), *REPORT, *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), result.output


@pytest.mark.parametrize(
    ("d", "n", "want"), [(32, 8, [0, 4, 9, 13, 18, 22, 27, 31]), (3, 8, [0, 1, 2]), (5, 1, [0])]
)
def test_pick_neurons_spreads_over_the_layer(d, n, want) -> None:
    assert pick_neurons(d, n) == want


@pytest.mark.sim
@pytest.mark.skipif(shutil.which("ngspice") is None, reason="ngspice not installed (apt-get install ngspice)")
def test_side_by_side_for_a_small_bmru_bundle_and_the_cache(bmru_build, tmp_path, monkeypatch) -> None:
    fig, md, output = _report(bmru_build, tmp_path / "rep", "--analog")
    an = fig["analog"]
    assert an["status"] == "measured", an
    assert an["layer_neurons"] == 2 and an["neurons_simulated"] == [0, 1] and an["steps_simulated"] == 4
    assert not an["cached"]
    t = fig["inputs"]["steps_per_sequence"]
    assert t == 4
    # positive, and consistent: per inference = per step x steps, power = per step x step rate
    assert an["power_uw"] > 0 and an["energy_pj_per_step"] > 0 and an["input_power_uw"] > 0
    assert an["energy_uj_per_inference"] == pytest.approx(an["energy_pj_per_step"] * t * 1e-6, rel=1e-9)
    assert an["power_uw"] == pytest.approx(an["energy_pj_per_step"] * 100 * 1e-6, rel=1e-9)
    layer = an["layer_nw"]
    assert layer["cells"] == pytest.approx(layer["core_nW"] + layer["bias_nW"], rel=1e-12)
    assert an["shared_bias_nw"]["bias_nW"] > 0  # BMRU layers share one bias block, counted once
    for r in an["per_neuron"]:
        assert r["core_nW"] > 0 and r["bias_nW"] > 0 and r["total_nW"] > 0
    # a BMRU cell (~1-4 nW) is nowhere near a constant or a unit slip of its pA-nA currents
    assert 0.5 < an["layer_nw"]["cells"] / 2 < 10
    rows = fig["side_by_side"]
    assert [r["path"] for r in rows] == ["digital"] * 3 + ["analog"] * 4 + ["published"]
    assert an["synapses_nw"] > 0 and rows[4]["pj_per_step"] == pytest.approx(an["synapse_pj_per_step"])
    assert "synapse mirror arrays" in rows[4]["figure"]
    for r in rows:
        assert r["pj_per_step"] > 0
        assert r["nj_per_inference"] == pytest.approx(r["pj_per_step"] * t * 1e-3, rel=1e-9)
        assert r["power_uw"] == pytest.approx(r["pj_per_step"] * 100 * 1e-6, rel=1e-9)
    assert rows[3]["pj_per_step"] == pytest.approx(an["energy_pj_per_step"])
    # the layer with its synapses: cells + arrays + candidate input currents, beside the published 100 nW
    assert rows[6]["pj_per_step"] == pytest.approx(sum(r["pj_per_step"] for r in rows[3:6]))
    assert rows[6]["figure"] == "analog layer total, synapses included"
    assert rows[7]["power_uw"] == pytest.approx(0.1) and "100 nW" in rows[7]["figure"]
    assert rows[7]["nj_per_inference"] == pytest.approx(0.1e-6 * t / 100 * 1e9)
    assert rows[0]["pj_per_step"] == pytest.approx(fig["energy"]["dynamic_pj_per_step"])
    assert "## Digital and analog side by side" in md and "| analog | 2 recurrent cells, ngspice" in md
    assert "not shown beside it" not in md
    assert "analog cells (ngspice, 2 of 2 neurons x 4 steps" in output
    cache = bmru_build / report_analog.CACHE_DIR / an["cache_key"]
    measurement = cache / "measurement.json"
    assert measurement.is_file() and (cache / "netlists" / "neuron_001.spice").is_file()
    assert (cache / "decks" / "neuron_0.log").is_file()
    stamp = measurement.stat().st_mtime_ns

    # second run: the cached measurement, no ngspice at all
    def no_ngspice(*_a, **_k):
        raise AssertionError("ngspice ran although the measurement is cached")

    monkeypatch.setattr("codesign.analog.sim.run_deck", no_ngspice)
    fig2, md2, output2 = _report(bmru_build, tmp_path / "rep2", "--analog")
    assert fig2["analog"]["cached"] and fig2["analog"]["cache_key"] == an["cache_key"]
    assert fig2["analog"]["energy_pj_per_step"] == an["energy_pj_per_step"]
    assert measurement.stat().st_mtime_ns == stamp
    assert "(cached measurement)" in output2
    assert md2 == md.replace(str(tmp_path / "rep"), str(tmp_path / "rep2"))  # the same report, faster

    # another step rate reuses the measurement (BMRU frames stay at their 10 ms floor) and rescales it
    fig3, _, _ = _report(bmru_build, tmp_path / "rep3", "--analog", "--step-rate", "200")
    assert fig3["analog"]["cached"]
    assert fig3["analog"]["energy_pj_per_step"] == pytest.approx(an["energy_pj_per_step"] / 2, rel=1e-9)
    assert fig3["analog"]["power_uw"] == pytest.approx(an["power_uw"], rel=1e-9)

    # other inputs are another measurement
    monkeypatch.undo()
    fig4, _, _ = _report(
        bmru_build, tmp_path / "rep4", "--analog", "--analog-neurons", "1", "--analog-steps", "2"
    )
    assert not fig4["analog"]["cached"] and fig4["analog"]["cache_key"] != an["cache_key"]
    assert fig4["analog"]["neurons_simulated"] == [0] and fig4["analog"]["steps_simulated"] == 2


def test_a_bundle_the_analog_path_cannot_build_gets_its_reason(tmp_path) -> None:
    bundle = tmp_path / "bundle"
    make_random_network_bundle(
        str(bundle),
        seed=3,
        inputs=3,
        layers=[{"cell": "bmru", "size": 2, "eps": 0}, {"cell": "bmru", "size": 2, "eps": 0}],
        classes=2,
        input_bits=4,
    )
    build = tmp_path / "build"
    build_rtl(bundle, build, lanes=1)
    fig = build_figures(
        build, sequences=1, steps=3, lanes=[1], analog={"neurons": 1, "steps": 2}, progress=lambda _: None
    )
    an = fig["analog"]
    assert an["status"] == "not buildable"
    assert "2 layers (supported: 1)" in an["reason"] and "analog path" in an["reason"]
    assert [r["path"] for r in fig["side_by_side"]] == ["digital"] * 3 + ["published"]
    md = render_markdown(fig, None, None)
    assert "## Digital and analog side by side" in md
    assert "Analog (ngspice): **not buildable**: bundle" in md
    assert "not shown beside it: not buildable: " in md
    assert not (build / report_analog.CACHE_DIR).exists()


def test_eps_minus_one_is_refused_with_the_analog_paths_reason(tmp_path) -> None:
    make_random_bundle(str(tmp_path / "b"), seed=2, d=2, inputs=2, classes=2, cell="cmru", eps=-1)
    bundle = load_bundle(tmp_path / "b")
    seqs = random_integer_inputs(bundle, sequences=1, steps=3, seed=0)
    an = analog_power(bundle, seqs, step_rate=100.0, steps_per_inference=3, cache_root=tmp_path / "cache")
    assert an["status"] == "not buildable" and "eps -1 has no analog primitive" in an["reason"]


def test_no_analog_and_a_missing_simulator(bmru_build, tmp_path, monkeypatch) -> None:
    fig, md, _ = _report(bmru_build, tmp_path / "off", "--no-analog")
    assert fig["analog"] == {"status": "not measured", "reason": "--no-analog"}
    assert "not shown beside it: not measured: --no-analog." in md
    assert [r["path"] for r in fig["side_by_side"]] == ["digital"] * 3 + ["published"]

    monkeypatch.setattr(report_analog, "availability", lambda: "ngspice not found; install it")
    fig, md, output = _report(bmru_build, tmp_path / "auto")
    assert fig["analog"]["status"] == "not measured"
    assert "ngspice not found; install it" in fig["analog"]["reason"]
    assert "report: no analog column: ngspice or the sky130 models are not available" in output
    result = CliRunner().invoke(
        app, ["report", str(bmru_build), "--out", str(tmp_path / "on"), *REPORT, "--analog"]
    )
    assert result.exit_code == 2
    assert "--analog needs ngspice and the sky130 models" in result.output


def test_old_report_json_without_an_analog_section_still_renders(bmru_build) -> None:
    fig = build_figures(bmru_build, sequences=1, steps=3, lanes=[1], progress=lambda _: None)
    fig.pop("analog"), fig.pop("side_by_side")
    md = render_markdown(fig, None, None)
    assert "## Digital and analog side by side" not in md and "not shown beside it: not measured." in md
    assert np.isfinite(fig["energy"]["dynamic_pj_per_step"])
