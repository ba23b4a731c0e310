"""The generated parts of ``docs/integration.md``: port, payload and register tables, measured latency.

The tables come from the committed reference builds' ``build.json`` (``rtl/copy_first_cmru``, the
stream face at P = 4, and ``rtl/copy_first_cmru_axi``, the AXI face at P = 1; ``make rtl`` keeps
them fresh), and the latency rows from an Amaranth simulation of the same builds. Each generated
block sits between ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` in the page;
``python -m codesign.hw.integration`` rewrites them, and ``tests/test_integration_doc.py`` fails
when the page differs from what this module renders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from codesign.errors import CodesignError
from codesign.hw.reference import REFERENCE_AXI, ROOT

__all__ = ["DOC", "blocks", "fields_table", "measure_latency", "ports_table", "register_table", "render"]

DOC = ROOT / "docs" / "integration.md"
EXAMPLE = "copy_first_cmru"


def _build(name: str) -> dict:
    path = ROOT / "rtl" / name / "build.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise CodesignError("reference build missing or unreadable: run `make rtl`", path=path) from None


def ports_table(info: dict, describe: dict[str, str]) -> str:
    """``| port | direction | bits | meaning |`` of every port of the build's top."""
    rows = ["| port | direction | bits | meaning |", "|---|---|---|---|"]
    for name, spec in info["ports"].items():
        key = next((k for k in describe if name == k or name.startswith((f"{k}__", f"{k}_"))), name)
        rows.append(f"| `{name}` | {spec['direction']} | {spec['width']} | {describe.get(key, '')} |")
    return "\n".join(rows)


def fields_table(fields: dict[str, dict[str, int]]) -> str:
    """``| field | bits | signed |`` of a payload (``build.json``'s field offsets)."""
    rows = ["| field | bits | signed |", "|---|---|---|"]
    for name, f in fields.items():
        lo, hi = f["offset"], f["offset"] + f["width"] - 1
        rows.append(f"| `{name}` | {hi}:{lo} | {'yes' if f['signed'] else 'no'} |")
    return "\n".join(rows)


def register_table(info: dict) -> str:
    """The AXI4-Lite register map as amaranth-soc / SystemRDL users read it."""
    rows = ["| address | name | access | reset | bits | description |", "|---|---|---|---|---|---|"]
    for r in info["axi"]["registers"]:
        reset = "-" if r["reset"] is None else f"0x{r['reset']:08x}"
        rows.append(
            f"| 0x{r['address']:03x} | `{r['name']}` | {r['access']} | {reset} | {r['bits']} | {r['description']} |"
        )
    return "\n".join(rows)


def _latency_bench(acc, seqs: list[np.ndarray]) -> dict[str, int]:
    """Cycles of ``acc`` in Amaranth's simulator: reset to ready, and last input beat to result."""
    from amaranth.hdl import ClockDomain, Elaboratable, Module, Signal
    from amaranth.sim import Simulator

    from codesign.hw.pysim import item_beats

    out: dict[str, int] = {}
    rst = Signal()

    class Top(Elaboratable):  # the sync domain with a reset the bench drives
        def elaborate(self, platform):
            m = Module()
            m.domains.sync = cd = ClockDomain("sync")
            m.d.comb += cd.rst.eq(rst)
            m.submodules.acc = acc
            return m

    async def bench(ctx):
        ctx.set(rst, 1)
        await ctx.delay(2.5e-8)  # two clock edges in reset (a tick would end in DomainReset)
        ctx.set(rst, 0)
        await ctx.tick()
        ctx.set(acc.results.ready, 1)
        n = 0
        while not ctx.get(acc.inputs.ready):
            await ctx.tick()
            n += 1
        out["ready_after_reset"] = n
        for k, seq in enumerate(seqs):
            beats, cycle, last = item_beats([seq]), 0, None
            while True:
                offer = bool(beats)
                if offer:
                    ctx.set(acc.inputs.payload, beats[0])
                ctx.set(acc.inputs.valid, int(offer))
                taken = offer and ctx.get(acc.inputs.ready)
                done = ctx.get(acc.results.valid) and ctx.get(acc.results.payload.final)
                await ctx.tick()
                cycle += 1
                if taken:
                    beats.pop(0)
                    last = cycle if not beats else last
                if done and not beats:
                    out[f"seq{k}"] = cycle - last
                    out[f"seq{k}_total"] = cycle
                    break

    sim = Simulator(Top())
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def measure_latency(bundle_dir: Path, lanes: int) -> dict[str, float]:
    """Measured cycles of a build of ``bundle_dir`` with ``lanes`` lanes: reset to ready, and from
    the last input beat to the final result beat for a one-step sequence with one non-zero input
    and with every input non-zero, and per step over a 32-step dense sequence."""
    from codesign.bundle import load_bundle
    from codesign.hw.accelerator import Accelerator

    bundle = load_bundle(bundle_dir)
    m = bundle.manifest.input.size
    hi = (1 << (bundle.manifest.input.bits - 1)) - 1
    one, dense = np.zeros((1, m), dtype=np.int64), np.full((1, m), hi, dtype=np.int64)
    one[0, 0] = hi
    long = np.full((32, m), hi, dtype=np.int64)
    got = _latency_bench(Accelerator(bundle, lanes=lanes), [one, dense, long])
    return {
        "ready_after_reset": got["ready_after_reset"],
        "one_input": got["seq0"],
        "dense": got["seq1"],
        "per_step_dense": got["seq2_total"] / len(long),
    }


def _latency_rows() -> str:
    rows = [
        "| build | cycles from reset to `inputs.ready` | one-step latency, 1 non-zero input | one-step latency, all 15 non-zero | cycles per step, 32 dense steps |",
        "|---|---|---|---|---|",
    ]
    for lanes in (1, 4):
        f = measure_latency(ROOT / "models" / "bundles" / EXAMPLE, lanes)
        rows.append(
            f"| {EXAMPLE}, P = {lanes} | {f['ready_after_reset']} | {f['one_input']} | {f['dense']} "
            f"| {f['per_step_dense']:.1f} |"
        )
    return "\n".join(rows)


STREAM_PORTS = {
    "clk": "clock; every register samples on its rising edge",
    "rst": "reset: synchronous, active high",
    "inputs": "stream in: one beat per non-zero input of a step",
    "config": "stream in, always ready: one parameter write per beat",
    "results": "stream out: one beat per class group",
    "counters": "free-running counters, 32 bits each, packed (`counters_fields`)",
    "trace_0": "layer 0's group updates (debug)",
}
AXI_PORTS = {
    "aclk": "clock",
    "aresetn": "reset: synchronous, active low",
    "s_axis_tdata": "input item: index and value",
    "s_axis_tready": "low while the core is busy (and before `CONTROL.loaded` on a spram build)",
    "s_axis_tlast": "last item of a step",
    "s_axis_tuser": "last item of a sequence (with `TLAST`)",
    "m_axis_tdata": "result beat: logits of one class group, group, argmax",
    "m_axis_tlast": "last beat of a result",
    "m_axis_tuser": "last result of a sequence",
    "s_axis": "AXI4-Stream slave: the inputs",
    "m_axis": "AXI4-Stream master: the results",
    "s_axil": "AXI4-Lite slave: the registers (32-bit data)",
}


def _waves() -> dict[str, str]:
    """Timing diagrams of the example at P = 4 (:mod:`codesign.hw.waves`): a two-step sequence,
    two items then an empty step, with a gap in the inputs and two cycles of result back-pressure."""
    from codesign.bundle import load_bundle
    from codesign.hw.accelerator import Accelerator
    from codesign.hw.waves import INPUT_SIGNALS, RESULT_SIGNALS, capture, wave_table, wavedrom

    bundle = load_bundle(ROOT / "models" / "bundles" / EXAMPLE)
    seq = np.zeros((2, bundle.manifest.input.size), dtype=np.int64)
    seq[0, 2], seq[0, 7] = 3, -2
    samples = capture(Accelerator(bundle, lanes=4), seq, gaps=frozenset({1}), stall=2)
    last_in = max(c for c, x in enumerate(samples) if x["in_valid"] and x["in_ready"])
    first_out = min(c for c, x in enumerate(samples) if x["res_valid"])
    windows = {
        "inputs": (0, last_in + 3, INPUT_SIGNALS),
        "results": (first_out - 1, len(samples), RESULT_SIGNALS),
    }
    drawn = [
        wavedrom(samples, signals, a, b, f"{name}, cycles {a} to {b - 1}")
        for name, (a, b, signals) in windows.items()
    ]
    return {
        "wave-inputs": wave_table(samples, INPUT_SIGNALS, *windows["inputs"][:2]),
        "wave-results": wave_table(samples, RESULT_SIGNALS, *windows["results"][:2]),
        "wavedrom": "\n\n".join(f"```json\n{json.dumps(d)}\n```" for d in drawn),
    }


def blocks(latency: bool = True) -> dict[str, str]:
    """Every generated block of the page by name (``latency=False`` skips the simulations: the
    latency rows and the timing diagrams)."""
    stream, axi = _build(EXAMPLE), _build(f"{EXAMPLE}_axi")
    out = {
        "stream-ports": ports_table(stream, STREAM_PORTS),
        "stream-inputs": fields_table(stream["inputs_payload"]),
        "stream-config": fields_table(stream["config_payload"]),
        "stream-results": fields_table(stream["results_payload"]),
        "axi-ports": ports_table(axi, AXI_PORTS),
        "axi-registers": register_table(axi),
        "axi-tdata-in": fields_table(axi["axi"]["s_axis_tdata"]),
        "axi-tdata-out": fields_table(axi["axi"]["m_axis_tdata"]),
    }
    if latency:
        out["latency"] = _latency_rows()
        out |= _waves()
    return out


_BLOCK = re.compile(r"(<!-- begin ([a-z0-9-]+) -->\n)(.*?)(<!-- end \2 -->)", re.DOTALL)


def render(text: str, generated: dict[str, str]) -> str:
    """``text`` with every block named in ``generated`` replaced by its contents."""
    return _BLOCK.sub(
        lambda m: (
            m.group(1) + generated[m.group(2)] + "\n" + m.group(4) if m.group(2) in generated else m.group(0)
        ),
        text,
    )


if __name__ == "__main__":
    assert REFERENCE_AXI  # the AXI example build is one of make rtl's
    DOC.write_text(render(DOC.read_text(), blocks()))
    print(DOC)
