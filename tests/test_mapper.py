"""The mapper (``codesign rtl --device``), its cost model, ``codesign sim --test-set`` and the
warning of ``codesign synth`` on a build not mapped for its device."""

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign import mapper
from codesign.bundle import load_bundle
from codesign.cli import app
from codesign.errors import CodesignError
from codesign.fpga.commands import mapping_warning
from codesign.hw import cost

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "models" / "bundles"
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def cycle_cache(tmp_path: Path, monkeypatch) -> None:
    """Cycle-model runs cached in the test's own folder, on a short slice of the test set."""
    monkeypatch.setattr(mapper, "CACHE", tmp_path / "cycles")
    monkeypatch.setattr(mapper, "CYCLE_STEPS", 12)


@pytest.mark.parametrize("bundle", ["copy_first_cmru", "parity_hsru"])
def test_mapper_picks_a_build_that_fits_and_meets_the_rate(bundle: str) -> None:
    m = mapper.map_bundle(BUNDLES / bundle, "up5k", objective="area", step_rate=100)
    w = m.winner
    device = cost.get_device("up5k")
    assert w.fits and not w.resources.misses(device)
    assert w.cycles_per_step is not None and w.cycles_per_step * 100 <= 30e6
    assert m.fitting <= m.candidates <= m.tried
    # the winner has the smallest area score of every fitting candidate
    assert mapper.area_score(w.resources, device) == min(
        mapper.area_score(c.resources, device) for c in m.ranked
    )
    # its options rebuild the same prediction
    plan = cost.build_plan(load_bundle(BUNDLES / bundle), w.lanes, target="up5k", **w.options)
    assert cost.predict(plan, device) == w.resources


def test_explicit_options_stay_and_override() -> None:
    fixed = {"weights": "baked", "counters": "all", "share": "off"}
    m = mapper.map_bundle(BUNDLES / "copy_first_cmru", "ecp5-25k", objective="area", fixed=fixed, lanes=2)
    assert m.winner.lanes == 2
    assert {k: m.winner.options[k] for k in fixed} == fixed
    assert all(c.lanes == 2 and c.options["weights"] == "baked" for c in m.ranked)


def test_nothing_fits_names_the_nearest_and_its_miss() -> None:
    # every memory writable, every counter, every lane: JapaneseVowels' two layers overflow the UP5K
    fixed = {"weights": "baked", "counters": "all", "share": "off", "narrow": "off", "merge": "off"}
    with pytest.raises(CodesignError) as err:
        mapper.map_bundle(BUNDLES / "japanese_vowels_cmru2", "up5k", fixed=fixed, lanes=16)
    text = str(err.value)
    assert "nothing fits the up5k" in text and "the nearest" in text
    assert "--lanes 16 --weights baked" in text
    assert "needs" in text and " of " in text


def test_a_step_rate_out_of_reach_names_the_fastest_and_the_clock_it_needs() -> None:
    fixed = {"weights": "frozen", "counters": "none", "share": "off"}
    with pytest.raises(
        CodesignError, match=r"meets 1e\+09 steps/s at 30 MHz: the fastest.*MHz would meet the rate"
    ):
        mapper.map_bundle(BUNDLES / "copy_first_cmru", "up5k", fixed=fixed, lanes=1, step_rate=1e9)


def test_rtl_device_writes_the_mapping_into_build_json(tmp_path: Path) -> None:
    out = tmp_path / "b"
    res = invoke(
        "rtl",
        BUNDLES / "copy_first_cmru",
        "--out",
        out,
        "--device",
        "up5k",
        "--step-rate",
        "100",
        "--objective",
        "area",
    )
    assert res.exit_code == 0, res.output
    assert "candidates fit the up5k" in res.output and "chosen: P =" in res.output
    info = json.loads((out / "build.json").read_text())
    rec = info["mapping"]
    assert rec["device"] == "up5k" and rec["objective"] == "area" and rec["step_rate_hz"] == 100
    assert rec["lanes"] == info["lanes"] and rec["options"]["weights"] == info["weights"]
    assert set(rec["predicted"]) == {"logic_cells", "block_rams", "sprams", "dsps"}
    assert rec["candidates"] >= rec["fitting"] >= 1
    assert info["plan"]["target"] == "up5k" and info["plan"]["counter_set"] == rec["options"]["counters"]
    # mapped for the up5k: synth says nothing; for another device it warns and names the command
    assert mapping_warning(out, "up5k") is None
    warning = mapping_warning(out, "ecp5-25k")
    assert "mapped for up5k, not ecp5-25k" in warning
    assert f"codesign rtl {out} --out {out} --device ecp5-25k" in warning


def test_synth_warns_on_a_build_made_without_device(tmp_path: Path) -> None:
    out = tmp_path / "g"
    assert invoke("rtl", BUNDLES / "parity_hsru", "--out", out).exit_code == 0
    assert "mapping" not in json.loads((out / "build.json").read_text())
    warning = mapping_warning(out, "up5k")
    assert "was not mapped for a device" in warning and "--device up5k" in warning


@pytest.mark.parametrize(
    "args, message",
    [
        (["--step-rate", "100"], "--step-rate choose among builds for a chip: give --device too"),
        (["--device", "up5k", "--target", "ecp5"], "--target ecp5 contradicts --device up5k"),
        (["--device", "nope"], "--device 'nope' is not one of up5k, hx8k, ecp5-25k, ecp5-85k, asic"),
        (
            ["--device", "up5k", "--objective", "speed"],
            "--objective 'speed' is not one of energy, area, latency",
        ),
    ],
)
def test_rtl_device_refuses_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    res = runner.invoke(app, ["rtl", str(BUNDLES / "parity_hsru"), "--out", str(tmp_path / "x"), *args])
    assert res.exit_code == 2
    assert message in " ".join(res.output.split())


def test_cost_model_matches_the_measured_builds() -> None:
    """Block RAMs, SPRAMs and DSPs exact on every measured build; logic cells within 15 % on the
    UP5K builds and the small ECP5 ones, and within 10 % in the median."""
    rows = cost._rows(cost.load_measured(), ROOT)
    errors = []
    for r in rows:
        p = r["predicted"]
        where = f"{r['bundle']} P={r['lanes']} {r['device']}"
        assert (p.block_rams, p.sprams, p.dsps) == (r["block_rams"], r["sprams"], r["dsps"]), where
        err = abs(p.logic_cells - r["logic_cells"]) / r["logic_cells"]
        errors.append(err)
        if r["device"] == "up5k" or r["lanes"] >= 2:
            assert err < 0.15, f"{where}: {p.logic_cells} predicted, {r['logic_cells']} measured"
    assert statistics.median(errors) < 0.10


def test_cost_check_prints_the_table(capsys) -> None:
    assert cost.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "| spoken_digits_cmru_d16 | 4 | up5k |" in out and "2785 / " in out


def test_sim_test_set_simulates_the_bundles_own_sequences(tmp_path: Path) -> None:
    out = tmp_path / "cf"
    assert invoke("rtl", BUNDLES / "copy_first_cmru", "--out", out, "--lanes", "2").exit_code == 0
    res = invoke("sim", out, "--test-set", "2", "--timeout", "600")
    assert res.exit_code == 0, res.output
    assert "bit-exact: 2/2 sequences, 0 mismatches; RTL accuracy" in res.output
    res = runner.invoke(app, ["sim", str(out), "--test-set", "2", "--inputs", str(out / "x.npy")])
    assert res.exit_code == 2 and "--test-set brings its own inputs" in res.output


def test_sim_test_set_needs_a_task_in_the_provenance(tmp_path: Path) -> None:
    bundle = tmp_path / "rb"
    assert (
        invoke("random-bundle", "--out", bundle, "--d", "4", "--inputs", "3", "--classes", "2").exit_code == 0
    )
    assert invoke("rtl", bundle, "--out", tmp_path / "r").exit_code == 0
    res = runner.invoke(app, ["sim", str(tmp_path / "r"), "--test-set", "1"])
    assert res.exit_code == 2 and "names no task and seed" in " ".join(res.output.split())


def test_confirm_picks_on_the_measured_figures(tmp_path: Path, monkeypatch) -> None:
    """``--confirm N`` synthesises the N best (here a stand-in for the FPGA batch) and picks the
    best measured one that places and meets the clock; one that misses the clock is passed over."""
    import codesign.fpga.batch_jobs as batch_jobs

    m = mapper.map_bundle(BUNDLES / "copy_first_cmru", "up5k", objective="area", step_rate=100)
    first, second, third = m.ranked[:3]
    measured = {  # build folder -> (logic cells, timing met)
        "c0": (3000, True),
        "c1": (1000, False),
        "c2": (1500, True),
    }
    jobs = []

    def fake_run_job(job: dict) -> list[dict]:
        jobs.append(job)
        cells, met = measured[Path(job["build"]).parent.name]
        util = {
            "ICESTORM_LC": {"used": cells},
            "ICESTORM_RAM": {"used": 5},
            "ICESTORM_SPRAM": {"used": 0},
            "ICESTORM_DSP": {"used": 2},
        }
        summary = {"status": "ok", "utilisation": util, "timing_met": met, "fmax_mhz": 31.0 if met else 20.0}
        return [{"kind": "synth", "summary": summary}]

    monkeypatch.setattr(batch_jobs, "run_job", fake_run_job)
    got = mapper.confirm(m, BUNDLES / "copy_first_cmru", tmp_path / "work", 3)
    assert len(jobs) == 3 and all(j["devices"] == ["up5k"] and j["target"] == "up5k" for j in jobs)
    assert [j["lanes"] for j in jobs] == [first.lanes, second.lanes, third.lanes]
    assert got.winner.flags() == third.flags()
    assert got.winner.resources.logic_cells == 1500 and got.record()["measured"]["fmax_mhz"] == 31.0
    assert "--confirm 3" in got.reason and "measured best" in got.reason
