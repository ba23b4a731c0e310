"""codesign report on a tiny random two-layer bundle: figures, files and the CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from codesign.bundle.random import make_random_network_bundle
from codesign.cli import app
from codesign.energy import access_pj
from codesign.hw.build import build_rtl
from codesign.report.figures import build_figures


def test_report_of_a_tiny_build(tmp_path) -> None:
    bundle = tmp_path / "bundle"
    make_random_network_bundle(
        str(bundle),
        seed=3,
        inputs=3,
        layers=[{"cell": "cmru", "size": 4, "eps": 1}, {"cell": "cmru", "size": 4, "eps": 1}],
        classes=2,
        input_bits=4,
    )
    build = tmp_path / "build"
    build_rtl(bundle, build, lanes=2)

    fig = build_figures(build, sequences=1, steps=6, lanes=[1], progress=lambda _: None)
    assert "random integer inputs" in fig["inputs"]["source"]
    assert [r["lanes"] for r in fig["sweep"]] == [1, 2]
    cps = [r["cycles_per_step"] for r in fig["sweep"]]
    assert cps[0] >= cps[1] > 0
    lat = fig["latency"]
    assert lat["clock_mhz"] == 30.0 and "stated" in lat["clock_source"]
    assert abs(lat["time_per_step_us"] - lat["cycles_per_step"] / 30.0) < 1e-9
    en = fig["energy"]
    assert en["energy_uj_per_inference"] > 0 and en["leakage_uw"] == 0.0
    assert abs(en["power_uw"] - en["dynamic_pj_per_step"] * 100 * 1e-6) < 1e-9
    assert set(fig["area"]["memory_bits_by_kind"]) >= {"weights", "state", "items"}
    dv = fig["dense_vs_event"]
    assert 0 < dv["measured_macs_per_inference"] <= dv["dense_macs_per_inference"]
    # memory access energy: 10 pJ for 64 bits of 8 KB, square root in capacity, floor 1/8
    assert abs(access_pj(64, 65536) - 10.0) < 1e-9
    assert abs(access_pj(64, 4 * 65536) - 20.0) < 1e-9
    assert abs(access_pj(64, 8) - 1.25) < 1e-9

    out = tmp_path / "rep"
    result = CliRunner().invoke(
        app, ["report", str(build), "--out", str(out), "--lanes", "2", "--steps", "5", "--sequences", "1"]
    )
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"report.md", "report.json", "pareto.png"}
    assert json.loads((out / "report.json").read_text())["lanes"] == 2
    assert "## Dense against event-driven" in (out / "report.md").read_text()


def test_report_with_an_input_stride_gives_frames_and_layer_steps(tmp_path) -> None:
    """A step is an input frame; the layers step once per S = 4 frames (a partial last window too)."""
    bundle = tmp_path / "bundle"
    make_random_network_bundle(
        str(bundle),
        seed=5,
        inputs=2,
        layers=[{"cell": "cmru", "size": 3, "eps": 1}],
        classes=2,
        input_bits=4,
        input_stride=4,
    )
    build = tmp_path / "build"
    build_rtl(bundle, build, lanes=1)
    fig = build_figures(build, sequences=2, steps=10, lanes=[1], progress=lambda _: None)
    lat, en = fig["latency"], fig["energy"]
    assert lat["input_stride"] == 4
    # 2 sequences x 10 frames = 20 frames, 2 x ceil(10 / 4) = 6 layer steps
    assert abs(lat["cycles_per_layer_step"] - lat["cycles_per_step"] * 20 / 6) < 1e-9
    assert abs(en["energy_pj_per_layer_step"] - en["energy_pj_per_step"] * 20 / 6) < 1e-9
    dense = fig["dense_vs_event"]["dense_macs_per_inference"]
    assert dense == 3 * 3 * 2 * 2 + 2 * 3  # 3 layer steps x d x m x 2 matrices, readout once
    out = tmp_path / "rep"
    result = CliRunner().invoke(
        app, ["report", str(build), "--out", str(out), "--lanes", "1", "--steps", "10", "--sequences", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "| input stride (input frames per layer step) | 4 |" in (out / "report.md").read_text()
