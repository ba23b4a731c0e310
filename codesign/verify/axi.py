"""Simulate a build's AXI face (``codesign rtl --bus axi``) against the golden model.

:func:`run_axi` runs ``verification/tb_axi.py`` (cocotbext-axi on the AXI4-Stream and AXI4-Lite
interfaces, random stalls on every channel) under Icarus or Verilator and returns its record.
"""

from __future__ import annotations

import json
from pathlib import Path

from codesign.errors import CodesignError
from codesign.hw.build import BUILD_JSON, VERILOG, build_top
from codesign.verify.runner import run_cocotb

__all__ = ["run_axi"]


def run_axi(
    build: Path,
    sim: str = "icarus",
    *,
    vectors: int = 4,
    seed: int = 0,
    max_steps: int = 8,
    timeout_s: float = 900,
    run_dir: Path | None = None,
) -> dict:
    """Drive ``build``'s AXI face with ``vectors`` random sequences of at most ``max_steps`` steps.

    Returns the testbench's record: ``sequences``, ``steps``, ``results``, ``config_writes``,
    ``mismatches``, ``first_mismatch`` (None when bit-exact), ``error`` (absent when every check
    passed), ``cycles``, ``counted`` (the counters read over AXI4-Lite).

    Raises
    ------
    CodesignError
        A build without an AXI face, a simulator that crashed or ran past ``timeout_s``.
    """
    build = Path(build).resolve()
    try:
        info = json.loads((build / BUILD_JSON).read_text())
    except (OSError, ValueError):
        raise CodesignError(
            "build.json missing or unreadable; make the build with codesign rtl", path=build
        ) from None
    if info.get("bus", "stream") != "axi":
        raise CodesignError(
            f"this build's face is {info.get('bus', 'stream')!r}; rebuild with `codesign rtl --bus axi`",
            path=build,
        )
    run_dir = Path(run_dir) if run_dir is not None else build / f"sim_axi_{sim}"
    run_dir.mkdir(parents=True, exist_ok=True)
    job, result = run_dir / "axi_job.json", run_dir / "axi_result.json"
    job.write_text(
        json.dumps({"build": str(build), "vectors": vectors, "seed": seed, "max_steps": max_steps})
    )
    result.unlink(missing_ok=True)
    log = run_cocotb(
        sim,
        build / VERILOG,
        build_top(build),
        "tb_axi",
        run_dir,
        {"CODESIGN_AXI_JOB": str(job), "CODESIGN_RESULT": str(result)},
        seed=seed,
        timeout_s=timeout_s,
    )
    if not result.is_file():
        raise CodesignError(f"{sim} AXI testbench wrote no result (log {log})", path=build)
    return json.loads(result.read_text())
