"""codesign report-cells on a tiny configuration: the table, the files, the cache and bad arguments."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from codesign.cli import app
from codesign.study.cells import CellsSettings, render_markdown

TINY = [
    "report-cells",
    "--task",
    "japanese_vowels",
    "--size",
    "4",
    "--iterations",
    "4",  # about one epoch of the JapaneseVowels training set at batch 64
    "--seeds",
    "0",
    "--sequences",
    "1",
    "--no-wide-alpha",
    "--no-area",  # yosys takes 15-25 s a build here; the committed report has the area column
]


@pytest.mark.slow
def test_tiny_report_and_its_cache(tmp_path) -> None:
    out, work = tmp_path / "report", tmp_path / "work"
    args = [*TINY, "--out", str(out), "--work", str(work)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    for name in ("report.md", "report.json", "commands.txt", "accuracy_energy.png"):
        assert (out / name).is_file(), name
    assert (out / "accuracy_energy.png").read_bytes()[:4] == b"\x89PNG"

    report = json.loads((out / "report.json").read_text())
    rows = report["rows"]
    assert [r["cell"] for r in rows] == ["cmru", "bmru", "alphacmru"]
    for r in rows:
        h = r["hardware"]
        for key in (
            "cycles_per_step",
            "macs_run_per_inference",
            "macs_dense_per_inference",
            "energy_nj_per_inference",
            "dynamic_nj_per_inference",
            "power_uw",
            "memory_bits",
        ):
            assert h[key] > 0, (r["cell"], key)
        assert h["events_per_step"] >= 0
        assert h["asic_um2"] is None  # --no-area
        assert r["parameters"] > 0 and r["parameter_bits"] > 0
        assert 0 <= r["accuracy"]["quantized"]["mean"] <= 1
        assert r["seeds"][0]["torch_vs_golden_mismatches"] == 0
        assert r["reused"] == {"runs": False, "bundles": False, "hardware": False}
    by = {r["cell"]: r for r in rows}
    # the third matrix: more weights, multipliers and dense MACs than the CMRU at the same d
    assert by["alphacmru"]["parameter_bits"] > by["cmru"]["parameter_bits"]
    assert by["alphacmru"]["hardware"]["multipliers"] > by["cmru"]["hardware"]["multipliers"]
    assert (
        by["alphacmru"]["hardware"]["macs_dense_per_inference"]
        > by["cmru"]["hardware"]["macs_dense_per_inference"]
    )
    assert by["bmru"]["eps"] == 0 and by["cmru"]["eps"] == 1

    md = (out / "report.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("| ") and "nJ" in line]
    assert [line.split(" | ")[0] for line in table] == ["| CMRU", "| BMRU", "| alphaCMRU"]
    assert "## What the numbers show" in md and "![" in md
    commands = (out / "commands.txt").read_text()
    assert commands.startswith("codesign report-cells --task japanese_vowels --size 4 ")
    assert "codesign area" not in commands and "--no-area" in commands

    bundles = {r["cell"]: r["seeds"][0]["bundle_dir"] for r in rows}
    stamps = {
        c: (work / "bundles" / b.split("/")[-1] / "weights.npz").stat().st_mtime_ns
        for c, b in bundles.items()
    }

    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    again = json.loads((out / "report.json").read_text())
    for r in again["rows"]:
        assert r["reused"] == {"runs": True, "bundles": True, "hardware": True}, r["cell"]
        path = work / "bundles" / r["seeds"][0]["bundle_dir"].split("/")[-1] / "weights.npz"
        assert path.stat().st_mtime_ns == stamps[r["cell"]]
    assert [r["hardware"] for r in again["rows"]] == [r["hardware"] for r in rows]

    # one cell with the ASIC area: the bundle is reused, the hardware figures are remade with area
    area_args = [a for a in args if a != "--no-area"] + ["--cells", "bmru", "--area"]
    third = CliRunner().invoke(app, area_args)
    assert third.exit_code == 0, third.output
    (row,) = json.loads((out / "report.json").read_text())["rows"]
    assert row["reused"] == {"runs": True, "bundles": True, "hardware": False}
    assert row["hardware"]["asic_um2"] > 0
    assert row["hardware"]["energy_nj_per_inference"] > row["hardware"]["dynamic_nj_per_inference"]  # leakage
    assert "um^2 |" in (out / "report.md").read_text()


def test_markdown_of_a_made_up_report() -> None:
    """The sentences follow the numbers: wide alpha that helps is explained, leakage share stated."""

    def row(key, cell, label, q, fq, energy, dyn, area, mats, alpha_bits=8):
        return {
            "key": key,
            "cell": cell,
            "label": label,
            "parameters": 100 * mats,
            "parameter_bits": 800 * mats,
            "matrices": mats,
            "eps": 0 if cell == "bmru" else 1,
            "state_bits": 16,
            "alpha_bits": alpha_bits,
            "inputs": 12,
            "classes": 9,
            "pooling": "sum",
            "accuracy": {
                "float": {"mean": fq, "min": fq, "max": fq},
                "quantized": {"mean": q, "min": q - 0.01, "max": q + 0.01},
            },
            "seeds": [
                {
                    "seed": 0,
                    "float_accuracy": fq,
                    "quantized_accuracy": q,
                    "events_per_step_golden": 5.0,
                    "bundle_dir": f"w/bundles/{key}",
                }
            ],
            "hardware_seed": 0,
            "hardware": {
                "cycles_per_step": 128.0,
                "clock_mhz": 30.0,
                "events_per_step": 6.0 if cell != "bmru" else 3.0,
                "macs_run_per_inference": 5000.0 * mats,
                "macs_dense_per_inference": 8000.0 * mats,
                "macs_ratio": 0.625,
                "energy_nj_per_inference": energy,
                "dynamic_nj_per_inference": dyn,
                "power_uw": energy / 29 * 100 * 1e-3,
                "dynamic_power_uw": dyn / 29 * 100 * 1e-3,
                "asic_um2": area,
                "memory_bits": 5000 + 1000 * mats,
                "memory_bits_by_kind": {"weights": 4000 + 1000 * mats, "state": 256},
                "multipliers": mats + 1,
                "steps_per_inference": 29.0,
                "inputs": "test set",
            },
        }

    settings = CellsSettings(task="japanese_vowels", seeds=(0,))
    report = {
        "title": "BMRU against CMRU against alphaCMRU at the same size",
        "settings": {**settings.__dict__, "seeds": [0], "cells": list(settings.cells)},
        "base_recipe": "flows/explore/jv_base.yaml",
        "task": {"name": "uea", "dataset": "JapaneseVowels"},
        "test_sequences": 370,
        "quant": {
            "input": {"bits": 8},
            "layer": {"weight_bits": 8, "bias_bits": 16, "alpha_bits": 8, "state_bits": 16},
            "readout": {"weight_bits": 8},
        },
        "command": "codesign report-cells",
        "rows": [
            row("cmru", "cmru", "CMRU", 0.92, 0.92, 900.0, 8.0, 280000.0, 2),
            row("bmru", "bmru", "BMRU", 0.93, 0.92, 890.0, 7.5, 279000.0, 2),
            row("alphacmru", "alphacmru", "alphaCMRU", 0.36, 0.84, 1000.0, 10.0, 335000.0, 3),
            row(
                "alphacmru_wide_alpha",
                "alphacmru",
                "alphaCMRU (16-bit alpha)",
                0.81,
                0.84,
                1001.0,
                10.1,
                336000.0,
                3,
                16,
            ),
        ],
    }
    md = render_markdown(report, "x.png")
    assert "loses 48.0 points to quantization" in md
    assert "the narrow alpha clips or rounds away part of the learned step sizes" in md
    assert "with alpha_bits = 16 (same float runs) it scores 81.0 %" in md
    assert "+50 % parameter bits" in md and "+20 % ASIC area" in md
    assert "3.00 against 6.00 events per step" in md
    assert "Leakage (assumed per um^2 of ASIC area) is at least 99.0 %" in md
    assert md.count("| alphaCMRU") == 6  # two rows in each of the main, memory and per-seed tables


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--size", "0"], "--size 0"),
        (["--cells", "cmru,lstm"], "give one or more of cmru, bmru, alphacmru"),
        (["--cells", "cmru,cmru"], "listed twice"),
        (["--seeds", "0,x"], "--seeds '0,x' is not a comma-separated list of integers"),
        (["--seeds", ""], "--seeds needs at least one seed"),
        (["--iterations", "0"], "--iterations 0"),
        (["--weight-bits", "1"], "--weight-bits 1"),
        (["--sequences", "0"], "--sequences 0"),
        (["--step-rate", "0"], "--step-rate 0"),
        (["--task", "mnist"], "unknown task; use one of japanese_vowels"),
        (["--task", "missing.yaml"], "recipe file not found"),
    ],
)
def test_bad_arguments_are_one_clear_line(tmp_path, extra, message) -> None:
    result = CliRunner().invoke(app, ["report-cells", "--out", str(tmp_path / "r"), *extra])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output
    assert not (tmp_path / "r").exists()


def test_out_that_is_a_file_is_refused(tmp_path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    result = CliRunner().invoke(app, ["report-cells", "--out", str(target)])
    assert result.exit_code == 2
    assert "is a file" in result.output
