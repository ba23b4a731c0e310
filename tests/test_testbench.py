"""The cocotb testbench's parts that need no simulator: names, job settings, the result handler."""

from __future__ import annotations

import ast
import logging
import sys
from pathlib import Path

import pytest

from codesign.verify.job import REGRESSION_TESTS, TESTS, Job

VERIFICATION = Path(__file__).resolve().parents[1] / "verification"


@pytest.fixture(scope="module")
def tb_modules():
    sys.path.insert(0, str(VERIFICATION))
    try:
        import tb_bench
        import tb_scoreboard

        yield tb_bench, tb_scoreboard
    finally:
        sys.path.remove(str(VERIFICATION))


def test_cocotb_tests_are_the_declared_ones() -> None:
    tree = ast.parse((VERIFICATION / "tb_accelerator.py").read_text())
    decorated = [
        node.name
        for node in tree.body
        if isinstance(node, ast.AsyncFunctionDef)
        and any("cocotb.test" in ast.unparse(d) for d in node.decorator_list)
    ]
    assert tuple(decorated) == TESTS
    assert set(REGRESSION_TESTS) < set(TESTS)


def test_job_round_trips_and_refuses_unknown_settings(tmp_path) -> None:
    job = Job(bundles=["a"], vectors=3, seed=7, gaps=False)
    job.write(tmp_path / "job.json")
    assert Job.read(tmp_path / "job.json") == job
    (tmp_path / "bad.json").write_text('{"vectors": 2, "vector": 3}')
    with pytest.raises(ValueError, match="unknown job setting.*'vector'"):
        Job.read(tmp_path / "bad.json")


def test_an_x_on_the_final_bit_is_a_mismatch_not_a_crash(tb_modules) -> None:
    """It used to reach ``self.tb`` (which a Testbench does not have): AttributeError."""
    tb_bench, tb_scoreboard = tb_modules
    tb = object.__new__(tb_bench.Testbench)
    tb.scoreboard = tb_scoreboard.Scoreboard(logging.getLogger("tb"))
    tb.result_checker = tb_scoreboard.InOrderChecker("results", tb.scoreboard, tb_scoreboard.compare_result)
    tb.results_seen = 0
    tb._on_result({"final": None, "group": 0, "seq_end": 0, "class_index": 0, "logits[0]": 1})
    assert tb.scoreboard.mismatches == 1
    assert "final" in tb.scoreboard.first.line() and "X" in tb.scoreboard.first.line()
    tb._on_result({"final": 1, "group": 0, "seq_end": 1, "class_index": 0, "logits[0]": 1})
    assert tb.results_seen == 1


def test_counter_deltas_wrap_at_the_counter_width(tb_modules) -> None:
    tb_bench, tb_scoreboard = tb_modules
    from tb_fields import Fields
    from tb_golden import Totals

    tb = object.__new__(tb_bench.Testbench)
    tb.counter_fields = Fields({"cycles": {"offset": 0, "width": 8, "signed": False}})
    tb.scoreboard = tb_scoreboard.Scoreboard(logging.getLogger("tb"))
    tb.snapshot = {"cycles": 250}
    tb.counter_totals, tb.xcounters, tb.floor_total = {}, set(), 0

    class Model:
        totals = Totals()

    tb.model = Model()
    tb.read_counters = lambda: {"cycles": 4}  # 250 -> 4 on an 8-bit counter: 10 cycles
    tb.check_counters()
    assert tb.counter_totals == {"cycles": 10}
