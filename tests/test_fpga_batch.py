"""``make fpga`` resumes: a finished synthesis is reused while its Verilog, options and flow are
unchanged, here and on Dask workers; failures are retried, damaged cache files ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.errors import CodesignError

BUNDLE = Path(__file__).parents[1] / "models" / "bundles" / "parity_hsru"


def _fake_summary(build: Path, device: str) -> dict:
    info = json.loads((build / "build.json").read_text())
    zero = {"used": 0, "available": 1}
    return {
        "bundle": info["bundle"],
        "lanes": info["lanes"],
        "device": device,
        "status": "ok",
        "fmax_mhz": 50.0,
        "target_mhz": 30.0,
        "timing_met": True,
        "resources": {"lut": 10, "ff": 5, "carry": 1},
        "utilisation": {"ICESTORM_LC": zero, "ICESTORM_RAM": zero, "ICESTORM_DSP": zero},
        "memory_bits": {"block_ram": 0, "lut_ram": 0, "logic": 0},
        "verilog_sha256": info["verilog_sha256"],
    }


@pytest.fixture
def fake_synth(monkeypatch) -> list[tuple[str, str]]:
    """``synthesize`` replaced by a recorder: the (build, device) pairs it was asked for."""
    from codesign.fpga import synth

    calls: list[tuple[str, str]] = []

    def fake(build, device, options=None, *, progress=None):
        calls.append((Path(build).name, device))
        if device == "hx8k":
            raise CodesignError("place and route failed")
        return _fake_summary(Path(build), device)

    monkeypatch.setattr(synth, "synthesize", fake)
    return calls


def _batch(out: Path, *extra: str) -> tuple[int, dict]:
    from codesign.fpga.batch import main

    code = main(["--bundles", str(BUNDLE), "--lanes", "1,2", "--devices", "up5k", "--out", str(out), *extra])
    return code, json.loads((out / "results.json").read_text())


def test_batch_reuses_finished_syntheses_and_reruns_what_changed(tmp_path, fake_synth) -> None:
    out = tmp_path / "fpga"
    code, first = _batch(out)
    assert code == 0 and sorted(fake_synth) == [
        ("parity_hsru_p1_up5k", "up5k"),
        ("parity_hsru_p2_up5k", "up5k"),
    ]
    assert (out / "runs" / "parity_hsru_p1_up5k__up5k.json").is_file()

    fake_synth.clear()  # the same batch again: nothing runs, the same results come back
    code, again = _batch(out)
    assert code == 0 and fake_synth == [] and again["synth"] == first["synth"]
    assert "2 runs (2 from the cache)" in (out / "results.md").read_text()

    fake_synth.clear()  # other Verilog (no counters): both run again
    _batch(out, "--counters", "none")
    assert len(fake_synth) == 2

    fake_synth.clear()  # a damaged cache file is ignored and rewritten
    (out / "runs" / "parity_hsru_p2_up5k__up5k.json").write_text("{not json")
    _batch(out, "--counters", "none")
    assert fake_synth == [("parity_hsru_p2_up5k", "up5k")]


def test_batch_records_failures_and_retries_them(tmp_path, fake_synth) -> None:
    out = tmp_path / "fpga"
    code, results = _batch(out, "--devices", "up5k,hx8k", "--target", "generic", "--lanes", "1")
    assert code == 1 and [f["device"] for f in results["failed"]] == ["hx8k"]
    assert len(results["synth"]) == 1 and not (out / "runs" / "parity_hsru_p1_generic__hx8k.json").exists()
    fake_synth.clear()
    _batch(out, "--devices", "up5k,hx8k", "--target", "generic", "--lanes", "1")
    assert fake_synth == [("parity_hsru_p1_generic", "hx8k")]  # the failure again, the success cached


def test_batch_on_dask_workers_reads_the_same_cache(tmp_path, fake_synth) -> None:
    """Two Dask workers (other processes: the recorder does not reach them) find every synthesis
    already cached by an in-process run, so no tool runs and the results are the same."""
    out = tmp_path / "fpga"
    _, here = _batch(out)
    code, on_dask = _batch(out, "--workers", "2")
    assert code == 0 and on_dask["synth"] == here["synth"]
    assert "2 runs (2 from the cache)" in (out / "results.md").read_text()


def test_batch_refuses_zero_workers(tmp_path) -> None:
    from codesign.fpga.batch import main

    with pytest.raises(SystemExit) as stop:
        main(["--workers", "0", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2 and not (tmp_path / "out").exists()


def test_rebuilding_the_same_verilog_keeps_its_syntheses(tmp_path) -> None:
    """``codesign rtl`` over an identical build keeps ``synth/`` and ``area/`` (a resumed batch
    reuses their bitstreams); a build whose Verilog changes drops them."""
    from codesign.hw.build import build_rtl

    build = tmp_path / "b"
    build_rtl(BUNDLE, build, lanes=1)
    (build / "synth" / "up5k").mkdir(parents=True)
    (build / "synth" / "up5k" / "top.bin").write_bytes(b"bits")
    (build / "area").mkdir()
    build_rtl(BUNDLE, build, lanes=1)
    assert (build / "synth" / "up5k" / "top.bin").read_bytes() == b"bits" and (build / "area").is_dir()
    build_rtl(BUNDLE, build, lanes=2)
    assert not (build / "synth").exists() and not (build / "area").exists()


def test_batch_caches_the_area_proxy_too(tmp_path, fake_synth, monkeypatch) -> None:
    """--area runs `codesign area` once per build; the batch run again reads it from the cache."""
    from codesign.fpga import area

    report = {"bundle": "parity_hsru_hw", "lanes": 1, "total_um2": 10.0, "logic_um2": 6.0}
    report |= {"memory_um2": 4.0, "gates": 3, "flops": 2, "memory_bits": 1}
    runs: list[str] = []

    def fake_area(build, progress=None, **kwargs):
        runs.append(Path(build).name)
        return report

    monkeypatch.setattr(area, "area_report", fake_area)
    out = tmp_path / "fpga"
    _, first = _batch(out, "--lanes", "1", "--area")
    _, again = _batch(out, "--lanes", "1", "--area")
    assert runs == ["parity_hsru_p1_up5k"] and first["area"] == again["area"] == [report]
