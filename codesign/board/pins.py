"""The chip at its UART pins under Icarus or Verilator: the host's bytes in, the golden model's answers out.

:func:`run_pins` simulates the folder :func:`codesign.fpga.pins.pins_build` writes (``fpga_top``,
mapped for a device or as RTL) with the cocotb testbench ``verification/tb_pins.py``: a serial
model of the host's UART carries what :class:`codesign.board.protocol.BoardProtocol` encodes
(identify, weights, sequences) onto ``uart_rx`` at the wrapper's divisor and decodes ``uart_tx``
with the driver's decoder; every sequence's logits and classes are compared with the golden
model's. :func:`pins_mutant` makes a copy with one LUT of the netlist inverted, which a run must
catch.
"""

from __future__ import annotations

__all__ = ["PinsReport", "pins_mutant", "run_pins"]

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from codesign.errors import CodesignError
from codesign.fpga.netlist import flip_lut
from codesign.fpga.pins import PINS_JSON, PINS_VERILOG
from codesign.verify.runner import SIMULATORS, run_cocotb

_TEST_MODULE = "tb_pins"
_RESULT = "pins_result.json"


@dataclass
class PinsReport:
    """One run at the pins: sequences, mismatches, the first difference, cycles and bytes."""

    sim: str
    device: str | None
    divisor: int
    sequences: int
    steps: int
    mismatches: int
    first_mismatch: str | None
    cycles: int
    bytes_sent: int
    bytes_received: int
    identity: str | None
    wall_s: float
    log_path: str

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and self.first_mismatch is None

    def summary_line(self) -> str:
        where = f"fpga_top at its pins ({self.device or 'RTL'}, divisor {self.divisor})"
        if self.ok:
            return (
                f"bit-exact: {self.sequences}/{self.sequences} sequences, 0 mismatches; {where}: "
                f"{self.bytes_sent} bytes in, {self.bytes_received} out, {self.cycles} cycles"
            )
        return f"{where}: {self.first_mismatch or f'{self.mismatches} mismatches'}"

    def summary_json(self) -> dict:
        return {"ok": self.ok, **asdict(self)}


def _pins_info(folder: Path) -> dict:
    path = folder / PINS_JSON
    if not path.is_file() or not (folder / PINS_VERILOG).is_file():
        raise CodesignError(
            f"not a pins folder: {PINS_JSON} or {PINS_VERILOG} missing (codesign sim BUILD --pins makes one)",
            path=folder,
        )
    return json.loads(path.read_text())


def run_pins(
    folder: Path,
    sim: str = "icarus",
    *,
    vectors: int = 4,
    seed: int = 0,
    max_steps: int = 8,
    timeout_s: float = 1800,
    stop_on_mismatch: bool = False,
) -> PinsReport:
    """Simulate ``folder`` (:func:`codesign.fpga.pins.pins_build`) at its pins on ``vectors`` random
    sequences of 1..``max_steps`` steps; raises :class:`CodesignError` when the simulator fails."""
    if sim not in SIMULATORS:
        raise CodesignError(f"--sim {sim!r} is not one of {', '.join(SIMULATORS)}")
    if vectors < 1 or max_steps < 1:
        raise CodesignError(f"vectors ({vectors}) and max_steps ({max_steps}) must be at least 1")
    folder = Path(folder).resolve()
    info = _pins_info(folder)
    run_dir = folder / f"sim_{sim}"
    run_dir.mkdir(parents=True, exist_ok=True)
    job = {
        "build": str(folder),
        "vectors": vectors,
        "seed": seed,
        "max_steps": max_steps,
        "divisor": info["divisor"],
        "stop_on_mismatch": stop_on_mismatch,
    }
    (run_dir / "pins_job.json").write_text(json.dumps(job, indent=1) + "\n")
    result = run_dir / _RESULT
    result.unlink(missing_ok=True)
    t0 = time.perf_counter()
    env = {"CODESIGN_PINS_JOB": str(run_dir / "pins_job.json"), "CODESIGN_RESULT": str(result)}
    log = run_cocotb(
        sim, folder / PINS_VERILOG, info["top"], _TEST_MODULE, run_dir, env, seed=seed, timeout_s=timeout_s
    )
    if not result.is_file():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.is_file() else ""
        raise CodesignError(f"{sim} simulation at the pins ended without a result; log {log}:\n{tail}")
    rec = json.loads(result.read_text())
    return PinsReport(
        sim=sim,
        device=info["device"],
        divisor=info["divisor"],
        sequences=rec["sequences"],
        steps=rec["steps"],
        mismatches=rec["mismatches"],
        first_mismatch=rec["first_mismatch"],
        cycles=rec["cycles"],
        bytes_sent=rec["bytes_sent"],
        bytes_received=rec["bytes_received"],
        identity=rec["identity"],
        wall_s=round(time.perf_counter() - t0, 1),
        log_path=str(log),
    )


def pins_mutant(folder: Path, index: int, out: Path, within: str = "") -> str:
    """A copy of the pins folder ``folder`` in ``out`` with LUT ``index`` of its netlist inverted
    (:func:`codesign.fpga.netlist.flip_lut`; ``within``: among the LUTs of one flattened module,
    e.g. ``uart_rx.``, ``bridge.``, ``accelerator.``); returns the change."""
    folder = Path(folder)
    info = _pins_info(folder)
    if info["device"] is None:
        raise CodesignError("the RTL has no LUTs to invert: make the pins folder for a device", path=folder)
    mutated, change = flip_lut((folder / PINS_VERILOG).read_text(), index, within)
    shutil.copytree(folder, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("sim_*"))
    (Path(out) / PINS_VERILOG).write_text(mutated)
    info["verilog_sha256"] = hashlib.sha256(mutated.encode()).hexdigest()
    (Path(out) / PINS_JSON).write_text(json.dumps(info, indent=2) + "\n")
    return change
