"""Run the accelerator in Amaranth's Python simulator (no HDL simulator needed).

Used by the unit tests and for quick cycle counts; the cocotb testbench in ``verification/`` does
the same against the generated Verilog under Icarus and Verilator. :func:`item_beats` is the
host's side of the input protocol (non-zero inputs as items, step and sequence markers), shared
with the testbench.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from amaranth.sim import Simulator

from codesign.bundle import Bundle
from codesign.hw.accelerator import Accelerator
from codesign.hw.images import config_beats

__all__ = ["PysimResult", "SequenceTrace", "item_beats", "simulate"]


def item_beats(sequences: Sequence[np.ndarray]) -> list[dict]:
    """The ``inputs`` beats of integer sequences ``(T, M)``: non-zero inputs, step/sequence markers."""
    beats = []
    for seq in sequences:
        seq = np.asarray(seq)
        for t, x in enumerate(seq):
            nz = np.flatnonzero(x)
            last_step = t == len(seq) - 1
            if nz.size == 0:
                beats.append({"index": 0, "value": 0, "step_end": 1, "seq_end": int(last_step)})
                continue
            for k, j in enumerate(nz):
                end = k == nz.size - 1
                beats.append(
                    {
                        "index": int(j),
                        "value": int(x[j]),
                        "step_end": int(end),
                        "seq_end": int(end and last_step),
                    }
                )
    return beats


@dataclass
class SequenceTrace:
    """What the accelerator showed for one sequence."""

    states: list[np.ndarray] = field(default_factory=list)  # per layer: (T, d)
    gates: list[np.ndarray] = field(default_factory=list)  # per layer: (T, d)
    logits: np.ndarray | None = None  # (C,) or (T, C) per step
    classes: np.ndarray | None = None  # () or (T,)
    walked: list[np.ndarray] = field(default_factory=list)  # per layer: (T, groups) groups that ran


@dataclass
class PysimResult:
    sequences: list[SequenceTrace]
    cycles: int
    counters: dict[str, int]


class _Recorder:
    """Collects what the accelerator shows, cycle by cycle: trace beats into each sequence's
    :class:`SequenceTrace`, result beats into logits and classes."""

    def __init__(self, plan, lengths: list[int]) -> None:
        self.plan = plan
        self.lengths = lengths
        self.steps_seen = [[0] * len(plan.layers) for _ in lengths]
        self.layer_seq = [0] * len(plan.layers)
        self.traces = [
            SequenceTrace(
                states=[np.zeros((t, e.size), dtype=np.int64) for e in plan.layers],
                gates=[np.zeros((t, e.size), dtype=np.int64) for e in plan.layers],
                walked=[np.zeros((t, e.groups), dtype=bool) for e in plan.layers],
            )
            for t in lengths
        ]
        ro = plan.readout
        self.logits = np.zeros(ro.groups * ro.lanes, dtype=np.int64)
        self.got_logits: list[np.ndarray] = []
        self.got_classes: list[int] = []

    def trace(self, li: int, e, tr) -> None:
        """One valid beat of layer ``li``'s trace port: a group of states and gates of one step."""
        s = self.layer_seq[li]
        t = self.steps_seen[s][li]
        trace = self.traces[s]
        lo = tr.group * e.lanes
        for lane in range(e.lanes):
            if lo + lane < e.size:
                trace.states[li][t, lo + lane] = tr.state[lane]
                trace.gates[li][t, lo + lane] = tr.gate[lane]
        trace.walked[li][t, tr.group] = True
        if tr.step_end:
            # a selective layer skips groups whose neurons are all closed: they hold
            # their state (gates of a skipped group are not reported: left 0)
            for grp in np.flatnonzero(~trace.walked[li][t]):
                a, b = grp * e.lanes, min((grp + 1) * e.lanes, e.size)
                if t > 0:
                    trace.states[li][t, a:b] = trace.states[li][t - 1, a:b]
            self.steps_seen[s][li] += 1
            if tr.seq_end:
                self.layer_seq[li] += 1

    def result(self, payload) -> bool:
        """One accepted result beat; True when it completes a result (the last group)."""
        ro = self.plan.readout
        g = payload.group
        for lane in range(ro.lanes):
            self.logits[g * ro.lanes + lane] = payload.logits[lane]
        if payload.final:
            self.got_logits.append(self.logits[: ro.size].copy())
            self.got_classes.append(payload.class_index)
        return bool(payload.final)

    def finish(self) -> list[SequenceTrace]:
        """Hands the results to their sequences (one per step with per-step logits)."""
        k = 0
        for s, t in enumerate(self.lengths):
            if self.plan.per_step:
                self.traces[s].logits = np.stack(self.got_logits[k : k + t])
                self.traces[s].classes = np.array(self.got_classes[k : k + t])
                k += t
            else:
                self.traces[s].logits = self.got_logits[s]
                self.traces[s].classes = np.array(self.got_classes[s])
        return self.traces


def simulate(
    bundle: Bundle,
    sequences: Sequence[np.ndarray],
    *,
    lanes: int = 1,
    weights: str = "baked",
    seed: int | None = None,
    max_cycles: int = 2_000_000,
    target: str = "generic",
    counters: str = "all",
    share: str | int = "off",
    narrow: str | None = None,
    share_updates: str = "off",
    merge: str = "off",
    monitors: Sequence[Callable] = (),
    faults: frozenset[str] | set[str] = frozenset(),
) -> PysimResult:
    """Feed integer sequences (each ``(T, M)``) through the accelerator and record what it shows.

    With ``seed`` set, input beats get random gaps and results random back-pressure. With
    ``weights="runtime"`` the parameters (``"spram"``: the weights in single-port RAMs) are
    loaded through the configuration stream first. ``monitors``: Amaranth processes
    (``async def monitor(ctx)``) run beside the testbench, after the design is elaborated (the
    tests' watch on block-RAM reads and writes of one word in one cycle). ``faults``: deliberate
    bugs built in (:data:`codesign.hw.faults.FAULTS`), to see that a check catches them.
    """
    dut = Accelerator(
        bundle,
        lanes=lanes,
        weights=weights,
        target=target,
        counters=counters,
        share=share,
        narrow=narrow,
        share_updates=share_updates,
        merge=merge,
        faults=faults,
    )
    plan = dut.plan
    rng = np.random.default_rng(seed) if seed is not None else None
    beats = item_beats(sequences)
    # a runtime build's memories, and a spram build's single-port RAMs, start at zero here
    cfg = config_beats(bundle, plan, skip_zeros=True) if weights in ("runtime", "spram") else []
    stride = bundle.manifest.input.stride
    lengths = [-(-len(s) // stride) for s in sequences]  # layer steps: one per window of frames
    n_results = sum(lengths) if plan.per_step else len(sequences)
    record = _Recorder(plan, lengths)
    out = {"cycles": 0, "counters": {}}

    async def testbench(ctx):
        for target, addr, elem, value in cfg:
            ctx.set(dut.config.valid, 1)
            ctx.set(dut.config.payload, {"target": target, "addr": addr, "elem": elem, "value": value})
            await ctx.tick()
        ctx.set(dut.config.valid, 0)
        beat = 0
        results_done = 0
        cycle = 0
        while results_done < n_results:
            if cycle >= max_cycles:
                raise RuntimeError(
                    f"accelerator produced {results_done} of {n_results} results in {cycle} cycles"
                )
            offer = beat < len(beats) and (rng is None or rng.random() < 0.7)
            if offer:
                ctx.set(dut.inputs.payload, beats[beat])
            ctx.set(dut.inputs.valid, int(offer))
            ready = rng is None or rng.random() < 0.6
            ctx.set(dut.results.ready, int(ready))
            for li, e in enumerate(plan.layers):
                tr = ctx.get(getattr(dut, f"trace_{e.index}"))
                if tr.valid:
                    record.trace(li, e, tr)
            if offer and ctx.get(dut.inputs.ready):
                beat += 1
            if ready and ctx.get(dut.results.valid):
                results_done += record.result(ctx.get(dut.results.payload))
            await ctx.tick()
            cycle += 1
        out["cycles"] = cycle
        out["counters"] = {name: ctx.get(dut.counters[name]) for name in plan.counters}

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    for monitor in monitors:
        sim.add_process(monitor)
    sim.run()
    return PysimResult(record.finish(), out["cycles"], out["counters"])
