"""Run the accelerator in Amaranth's Python simulator (no HDL simulator needed).

Used by the unit tests and for quick cycle counts; the cocotb testbench in ``verification/`` does
the same against the generated Verilog under Icarus and Verilator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from amaranth.sim import Simulator

from codesign.bundle import Bundle, spine_view
from codesign.hw.accelerator import Accelerator

__all__ = ["PysimResult", "SequenceTrace", "simulate"]


@dataclass
class SequenceTrace:
    """What the accelerator showed for one sequence."""

    states: list[np.ndarray] = field(default_factory=list)  # (d,) at every step_done
    gates: list[np.ndarray] = field(default_factory=list)  # (d,) at every step_done
    events: list[int] = field(default_factory=list)  # event_count increase per step
    macs: list[int] = field(default_factory=list)  # mac_count increase per step
    done_cycles: list[int] = field(default_factory=list)  # cycle_count at every step_done
    logits: np.ndarray | None = None
    class_index: int | None = None


@dataclass
class PysimResult:
    sequences: list[SequenceTrace]
    cycles: int  # cycles until the last result beat


def simulate(
    bundle: Bundle,
    sequences: Sequence[np.ndarray],
    *,
    lanes: int = 1,
    seed: int | None = None,
    max_cycles: int = 1_000_000,
) -> PysimResult:
    """Feed integer sequences (each ``(T, M)``) through the accelerator and record what it shows.

    With ``seed`` set, input beats get random gaps and the output random back-pressure; without
    it the accelerator is driven as fast as it accepts (the cycle counts are then the design's).
    """
    bundle = spine_view(bundle, consumer="the RTL generator")
    dut = Accelerator(bundle, lanes=lanes)
    d = bundle.net.hidden_size
    n_cls = bundle.net.num_classes
    rng = np.random.default_rng(seed) if seed is not None else None
    beats = [(x, t == len(seq) - 1) for seq in sequences for t, x in enumerate(np.asarray(seq))]
    traces = [SequenceTrace() for _ in sequences]
    total = {"cycles": 0}

    async def testbench(ctx):
        beat, seq_out, seq_steps = 0, 0, 0
        last_events, last_macs = 0, 0
        cycle = 0
        while seq_out < len(sequences):
            if cycle >= max_cycles:
                raise RuntimeError(
                    f"accelerator produced {seq_out} of {len(sequences)} results in {cycle} cycles"
                )
            offer = beat < len(beats) and (rng is None or rng.random() < 0.7)
            if offer:
                x, last = beats[beat]
                ctx.set(dut.steps.payload, {"x": [int(v) for v in x], "last": int(last)})
            ctx.set(dut.steps.valid, int(offer))
            ready = rng is None or rng.random() < 0.6
            ctx.set(dut.results.ready, int(ready))
            if ctx.get(dut.step_done):
                tr = traces[seq_steps]
                tr.states.append(np.array([ctx.get(dut.state[i]) for i in range(d)], dtype=np.int64))
                gate = ctx.get(dut.gate)
                tr.gates.append(np.array([(gate >> i) & 1 for i in range(d)], dtype=np.int8))
                events, macs = ctx.get(dut.event_count), ctx.get(dut.mac_count)
                tr.events.append(events - last_events)
                tr.macs.append(macs - last_macs)
                last_events, last_macs = events, macs
                tr.done_cycles.append(ctx.get(dut.cycle_count))
                if len(tr.states) == len(sequences[seq_steps]):
                    seq_steps += 1
            if offer and ctx.get(dut.steps.ready):
                beat += 1
            if ready and ctx.get(dut.results.valid):
                payload = ctx.get(dut.results.payload)
                traces[seq_out].logits = np.array(
                    [int(payload.logits[k]) for k in range(n_cls)], dtype=np.int64
                )
                traces[seq_out].class_index = int(payload.class_index)
                seq_out += 1
            await ctx.tick()
            cycle += 1
        total["cycles"] = cycle

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return PysimResult(traces, total["cycles"])
