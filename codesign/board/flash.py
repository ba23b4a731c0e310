"""Program a board with the bitstream ``codesign synth`` made: openFPGALoader or iceprog, whichever
is on ``PATH`` (openFPGALoader first; iceprog only for iCE40 boards).

The run is chosen from ``BUILD/synth/<name>/summary.json``: ``name`` is the board or device the
bitstream was made for (``--board`` / ``--device`` of ``codesign synth``); with one finished run
it may be left out. The programmer's command line comes from the board (``summary.json``'s
``flash``), or a generic one for a ``--device`` run.
"""

from __future__ import annotations

__all__ = ["PROGRAMMERS", "find_bitstream", "flash", "flash_command"]

import json
import shlex
import shutil
import subprocess
from pathlib import Path

from codesign.errors import CodesignError

#: Programmers tried in this order.
PROGRAMMERS = ("openFPGALoader", "iceprog")
_GENERIC = {
    "ice40": ("openFPGALoader {bitstream}", "iceprog {bitstream}"),
    "ecp5": ("openFPGALoader {bitstream}",),
}


def find_bitstream(build: Path, name: str | None = None) -> tuple[Path, dict]:
    """The bitstream and summary of the synth run ``name`` of ``build`` (the only one if ``None``)."""
    runs = sorted(
        p.parent for p in (Path(build) / "synth").glob("*/summary.json") if not p.parent.name.startswith(".")
    )
    if name is not None:
        runs = [r for r in runs if r.name == name]
    done = []
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        if summary.get("bitstream") and (run / summary["bitstream"]).is_file():
            done.append((run / summary["bitstream"], summary))
    if not done:
        what = f"for {name!r} " if name else ""
        raise CodesignError(
            f"no bitstream {what}under {Path(build) / 'synth'}; make one with `codesign synth BUILD --board B`"
        )
    if len(done) > 1:
        names = ", ".join(p.parent.name for p, _ in done)
        raise CodesignError(f"bitstreams for {names} under {Path(build) / 'synth'}: say which with --target")
    return done[0]


def flash_command(bitstream: Path, summary: dict) -> list[str]:
    """The first programmer command line whose tool is on ``PATH``."""
    family = "ice40" if str(bitstream).endswith(".bin") else "ecp5"
    for line in summary.get("flash") or _GENERIC[family]:
        argv = shlex.split(line.format(bitstream=bitstream))
        if shutil.which(argv[0]):
            return argv
    tools = " or ".join(PROGRAMMERS if family == "ice40" else PROGRAMMERS[:1])
    raise CodesignError(
        f"--flash needs {tools} on PATH to program {bitstream} (openFPGALoader: your distribution's package "
        "or https://github.com/trabucayre/openFPGALoader; iceprog: the icestorm package)"
    )


def flash(build: Path, name: str | None = None, *, timeout_s: float = 120.0) -> str:
    """Program the board; returns the command that ran."""
    bitstream, summary = find_bitstream(build, name)
    argv = flash_command(bitstream, summary)
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise CodesignError(
            f"{argv[0]} did not finish within {timeout_s:g} s (is the board connected?)"
        ) from None
    if run.returncode != 0:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        raise CodesignError(f"{' '.join(argv)} failed (exit {run.returncode}): {' / '.join(tail)}")
    return " ".join(argv)
