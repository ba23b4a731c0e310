"""The quick tier of the formal checks (codesign/formal, docs/formal.md): SymbiYosys on small designs.

The stream rules at a small depth on two bundles (a reference bundle and a random member of the
family), the port-path check, the CMRU update unit against its rule (and the saturation mutant it
catches), the configuration check, one iCE40 netlist against its RTL, and the plumbing: a false
property fails with a step and a trace, a hung solver is killed. ``make formal`` runs the full
suite (docs/reports/formal.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from amaranth.hdl import Assert, Fragment, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.bundle import load_bundle
from codesign.errors import CodesignError
from codesign.formal import tools
from codesign.formal.bounds import result_bound, step_cycles
from codesign.formal.equiv import miter_verilog
from codesign.formal.jobs import accelerator_options, job_key, run_job
from codesign.formal.paths import comb_paths
from codesign.formal.sby import run_sby
from codesign.formal.suite import expected, plan_jobs, write_report
from codesign.hw.accelerator import Accelerator
from codesign.hw.plan import plan_accelerator

BUNDLES = Path(__file__).resolve().parents[1] / "models" / "bundles"
PARITY = f"bundle:{BUNDLES / 'parity_hsru'}"


def _job(source: str, check: str, depth: int, **extra) -> dict:
    return {
        "source": source,
        "design": "t",
        "lanes": 1,
        "check": check,
        "mode": "bmc",
        "depth": depth,
        **extra,
    }


@pytest.mark.parametrize("source", [PARITY, "random:11"])
def test_stream_rules_hold_at_small_depth(source):
    row = run_job(_job(source, "stream", 8))
    assert row["status"] == "PASS", row


def test_no_input_reaches_an_output_without_a_flip_flop():
    assert comb_paths(Accelerator(load_bundle(BUNDLES / "parity_hsru"), lanes=1, counters="none")) == {}


class _Passthrough(wiring.Component):
    """ready follows the consumer's ready and valid follows valid in the same cycle."""

    def __init__(self):
        super().__init__({"i": In(stream.Signature(4)), "o": Out(stream.Signature(4))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.i.ready.eq(self.o.ready), self.o.valid.eq(self.i.valid)]
        m.d.sync += self.o.payload.eq(self.i.payload)
        return m


def test_a_combinational_ready_path_is_found():
    assert comb_paths(_Passthrough()) == {"i__valid": ["o__valid"], "o__ready": ["i__ready"]}


def test_update_unit_rule_and_its_saturation_mutant():
    source = f"bundle:{BUNDLES / 'japanese_vowels_cmru_d8'}"
    assert run_job(_job(source, "unit", 1))["status"] == "PASS"
    caught = run_job(_job(source, "unit", 1, faults=["sat_off_by_one"]))
    assert caught["status"] == "FAIL"
    assert any("units.py" in line for line in caught["failed"]), caught


def test_configuration_beats_to_no_memory_never_disturb_a_sequence():
    assert run_job(_job(PARITY, "config", 6))["status"] == "PASS"


def test_ice40_netlist_equals_its_rtl():
    job = _job(PARITY, "equiv", 4, weights="frozen", device="hx8k")
    row = run_job(job)
    assert row["status"] == "PASS", row


def test_miter_compares_payloads_only_while_valid():
    accelerator = Accelerator(load_bundle(BUNDLES / "parity_hsru"), lanes=1, counters="none")
    text = miter_verilog(accelerator)
    Fragment.get(accelerator, None)  # elaborated, as a build would (no unused-component warnings)
    assert "if (gold_results__valid) assert (gold_results__payload == gate_results__payload);" in text
    assert "    assert (gold_inputs__ready == gate_inputs__ready);" in text


class _Counter(wiring.Component):
    def __init__(self):
        super().__init__({"count": Out(4)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.count.eq(self.count + 1)
        m.d.comb += Assert(self.count != 5, "the counter never reaches 5")
        return m


def test_a_false_property_fails_with_its_step_and_trace(tmp_path):
    proof = run_sby(_Counter(), mode="bmc", depth=8, keep=tmp_path / "run")
    assert proof.status == "FAIL"
    assert proof.step == 5
    assert proof.trace is not None and proof.trace.exists()
    assert run_sby(_Counter(), mode="bmc", depth=5).status == "PASS"  # step 5 lies beyond 0..4


def test_a_hung_tool_is_killed_with_its_group(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\ntime.sleep(60)\n"
    )
    import sys

    code, _ = tools.run([sys.executable, str(script)], cwd=tmp_path, timeout=1)
    assert code is None


def test_bounds_follow_the_cycle_model():
    plan = plan_accelerator(load_bundle(BUNDLES / "parity_hsru").manifest, 1)
    layer = plan.layers[0]
    assert step_cycles(layer) >= layer.groups * max(layer.inputs, 1) + 1
    assert result_bound(plan) > sum(2 * step_cycles(e) for e in plan.engines)


def test_build_options_are_read_back(tmp_path):
    (tmp_path / "build.json").write_text(
        json.dumps({"lanes": 2, "weights": "frozen", "plan": {"target": "up5k", "counter_set": "basic"}})
    )
    assert accelerator_options(tmp_path) == {
        "lanes": 2,
        "weights": "frozen",
        "target": "up5k",
        "counters": "basic",
        "faults": [],
    }
    with pytest.raises(CodesignError, match="not a build directory"):
        accelerator_options(tmp_path / "missing")


def test_suite_plan_and_report(tmp_path):
    jobs = plan_jobs(BUNDLES, mutants=False)
    assert len({job_key(j) for j in jobs}) == len(jobs)
    checks = {(j["design"], j["check"]) for j in jobs}
    assert ("parity_hsru", "live") in checks and ("parity_hsru", "equiv") in checks
    rows = [
        dict(jobs[0], status="PASS", seconds=1.0, failed=[]),
        dict(jobs[0], faults=["sat_off_by_one"], check="unit", status="FAIL", seconds=1.0, failed=["x"]),
    ]
    write_report(rows, tmp_path / "formal.md", "make formal")
    text = (tmp_path / "formal.md").read_text()
    assert "1 of 1 checks pass" in text and "| sat_off_by_one |" in text and "**caught**" in text


def test_suite_expectations():
    assert expected({"status": "PASS"}) and expected({"status": "N/A"})
    assert not expected({"status": "TIMEOUT"})
    assert expected({"status": "PASS", "faults": ["sign0_flipped"]})  # a mutant may escape a check
    assert expected({"status": "FAIL", "gate_faults": ["sign0_flipped"]})
    assert not expected({"status": "PASS", "gate_faults": ["sign0_flipped"]})  # the miter must see it


def test_prove_command_on_a_build(tmp_path):
    from typer.testing import CliRunner

    from codesign.cli import app

    runner = CliRunner()
    build = tmp_path / "build"
    assert (
        runner.invoke(
            app, ["rtl", str(BUNDLES / "parity_hsru"), "--out", str(build), "--counters", "none"]
        ).exit_code
        == 0
    )
    res = runner.invoke(app, ["prove", str(build), "--depth", "4", "--checks", "stream,paths"])
    assert res.exit_code == 0, res.output
    assert "stream  depth   4: PASS" in res.output and "paths" in res.output
    res = runner.invoke(app, ["prove", str(build), "--checks", "nothing"])
    assert res.exit_code != 0 and "--checks nothing: each must be one of" in res.output
