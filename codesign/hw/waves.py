"""Timing diagrams of the stream face, drawn from a simulation of a build.

:func:`capture` runs the accelerator in Amaranth's simulator with a reset the bench drives, feeds
one sequence (with the input gaps and result back-pressure it is given) and samples the
``inputs`` and ``results`` handshakes every cycle. :func:`wavedrom` turns a window of the samples
into WaveDrom JSON (https://wavedrom.com), :func:`wave_table` into a Markdown table of the same
cycles; ``docs/integration.md`` shows both (:mod:`codesign.hw.integration`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["INPUT_SIGNALS", "RESULT_SIGNALS", "capture", "wave_table", "wavedrom"]

# (name, sample key, valid key or None for a 1-bit handshake signal)
INPUT_SIGNALS = [
    ("inputs.valid", "in_valid", None),
    ("inputs.ready", "in_ready", None),
    ("inputs.index", "index", "in_valid"),
    ("inputs.value", "value", "in_valid"),
    ("inputs.step_end", "step_end", "in_valid"),
    ("inputs.seq_end", "in_seq_end", "in_valid"),
]
RESULT_SIGNALS = [
    ("results.valid", "res_valid", None),
    ("results.ready", "res_ready", None),
    ("results.group", "group", "res_valid"),
    ("results.final", "final", "res_valid"),
    ("results.class_index", "class_index", "res_valid"),
    ("results.seq_end", "res_seq_end", "res_valid"),
]


def capture(acc, sequence: np.ndarray, *, gaps: frozenset[int] = frozenset(), stall: int = 0) -> list[dict]:
    """Per-cycle samples of ``acc`` (an :class:`~codesign.hw.accelerator.Accelerator`) running
    ``sequence`` ``(T, M)`` right after a reset: no input beat is offered in the cycles of
    ``gaps``; ``results.ready`` stays low for the first ``stall`` cycles a result beat waits."""
    from amaranth.hdl import ClockDomain, Elaboratable, Module, Signal
    from amaranth.sim import Simulator

    from codesign.hw.pysim import item_beats

    rst = Signal()
    samples: list[dict] = []

    class Top(Elaboratable):  # the sync domain with a reset the bench drives
        def elaborate(self, platform):
            m = Module()
            m.domains.sync = cd = ClockDomain("sync")
            m.d.comb += cd.rst.eq(rst)
            m.submodules.acc = acc
            return m

    async def bench(ctx):
        ctx.set(rst, 1)
        await ctx.delay(2.5e-8)
        ctx.set(rst, 0)
        await ctx.tick()
        beats, stalled, cycle, tail = item_beats([sequence]), 0, 0, None
        while tail is None or cycle < tail:
            offer = bool(beats) and cycle not in gaps
            if offer:
                ctx.set(acc.inputs.payload, beats[0])
            ctx.set(acc.inputs.valid, int(offer))
            res_valid = ctx.get(acc.results.valid)
            ready = int(not res_valid or stalled >= stall)
            stalled += int(bool(res_valid))
            ctx.set(acc.results.ready, ready)
            p, r = ctx.get(acc.inputs.payload), ctx.get(acc.results.payload)
            samples.append(
                {
                    "in_valid": int(offer),
                    "in_ready": int(ctx.get(acc.inputs.ready)),
                    "index": int(p.index),
                    "value": int(p.value),
                    "step_end": int(p.step_end),
                    "in_seq_end": int(p.seq_end),
                    "res_valid": int(res_valid),
                    "res_ready": ready,
                    "group": int(r.group),
                    "final": int(r.final),
                    "class_index": int(r.class_index),
                    "res_seq_end": int(r.seq_end),
                }
            )
            if offer and samples[-1]["in_ready"]:
                beats.pop(0)
            if res_valid and ready and r.final and r.seq_end:
                tail = cycle + 3
            await ctx.tick()
            cycle += 1
            if cycle > 100_000:  # pragma: no cover - a hang is a bug of the design
                raise RuntimeError("no final result within 100000 cycles")

    sim = Simulator(Top())
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return samples


def _value(sample: dict, key: str, valid: str | None):
    return sample[key] if valid is None or sample[valid] else None


def wavedrom(samples: list[dict], signals, start: int, stop: int, title: str) -> dict:
    """WaveDrom JSON of cycles ``start`` to ``stop - 1``: 1-bit signals as levels, fields as data
    while their stream's ``valid`` is high (``x`` otherwise)."""
    rows = [{"name": "clk", "wave": "p" + "." * (stop - start - 1)}]
    for name, key, valid in signals:
        wave, data, last = "", [], object()
        for s in samples[start:stop]:
            v = _value(s, key, valid)
            if v == last:
                wave += "."
            elif valid is None:
                wave += str(v)
            elif v is None:
                wave += "x"
            else:
                wave += "="
                data.append(str(v))
            last = v
        rows.append({"name": name, "wave": wave} | ({"data": data} if data else {}))
    return {"signal": rows, "head": {"text": title}, "foot": {"tick": start}}


def wave_table(samples: list[dict], signals, start: int, stop: int) -> str:
    """The same cycles as a Markdown table: a column per cycle, ``.`` where a field is not valid."""
    cycles = range(start, stop)
    rows = ["| cycle | " + " | ".join(str(c) for c in cycles) + " |", "|---|" + "---|" * len(cycles)]
    for name, key, valid in signals:
        cells = [_value(samples[c], key, valid) for c in cycles]
        rows.append(f"| `{name}` | " + " | ".join("." if v is None else str(v) for v in cells) + " |")
    return "\n".join(rows)
