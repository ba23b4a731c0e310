"""The golden-model adapter: from the beats the DUT accepted to the beats it must produce.

:class:`GoldenModel` rebuilds every sequence from what the *input monitor* saw (not from what the
driver meant to send), runs ``codesign.golden`` on it and posts the expected trace beats (every
layer's state and gate, every group it walks, every step) and result beats (every logit, the class) to the
scoreboard's checkers, and the counts the counters must show (:class:`Totals`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tb_coverage as cov
from tb_context import Bench
from tb_scoreboard import Mismatch, ResultBeat, TraceBeat

from codesign.bundle.io import Bundle
from codesign.golden import run_golden
from codesign.hw.plan import plan_accelerator
from codesign.hw.selective import walk
from codesign.verify.cycles import cycle_floor

__all__ = ["GoldenModel", "Totals"]


@dataclass
class Totals:
    """What the counters must have counted since the last snapshot (from the golden model)."""

    sequences: int = 0
    results: int = 0
    steps: int = 0
    macs: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    opens: dict[str, int] = field(default_factory=dict)  # open neuron-steps of selective layers
    readout_macs: int | None = 0
    floor: int = 0


class GoldenModel:
    """Rebuilds each sequence from the beats the input monitor saw and posts the expectations."""

    def __init__(self, tb: Bench) -> None:
        self.tb = tb
        self.bundle: Bundle | None = None
        self.plan = None
        self.sequences = 0
        self.steps: list[dict[int, int]] = []
        self.current: dict[int, int] = {}
        self.classes: list = []
        self.totals = Totals()
        self.ignore = False  # warm-up: beats are not modelled

    def set_bundle(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.plan = plan_accelerator(bundle.manifest, self.tb.lanes, **self.tb.plan_options)

    def on_reset(self) -> None:
        self.steps, self.current = [], {}

    def on_beat(self, beat: dict) -> None:
        if self.ignore:
            return
        m = self.tb.input_size
        if None in beat.values():
            self.tb.scoreboard.report(
                Mismatch(self.sequences, len(self.steps), "inputs", None, "payload", "0/1 bits", beat)
            )
            return
        idx, value = beat["index"], beat["value"]
        if value != 0:
            if idx >= m or idx in self.current:
                self.tb.scoreboard.report(
                    Mismatch(
                        self.sequences, len(self.steps), "inputs", idx, "index", "a new index below M", idx
                    )
                )
            self.current[idx] = value
        if beat["step_end"]:
            self.steps.append(self.current)
            self.current = {}
            if not any(self.steps[-1].values()):
                self.tb.sample("inputs", "empty step")
            if beat["seq_end"]:
                x = np.zeros((len(self.steps), m), dtype=np.int64)
                for t, items in enumerate(self.steps):
                    for j, v in items.items():
                        x[t, j] = v
                self.steps = []
                self.expect(x)

    def expect(self, x: np.ndarray) -> None:
        plan, bundle = self.plan, self.bundle
        n = self.sequences
        self.sequences += 1
        g = run_golden(bundle, x[None])
        tot = self.totals
        tot.sequences += 1
        tot.steps += x.shape[0]
        steps = g.layers[0].states.shape[1]  # layer steps: one per input.stride frames
        tables = {
            i: bundle.weights[f"layers.{i}.su_gate"]
            for i, layer in enumerate(bundle.manifest.layers)
            if layer.selective is not None
        }
        passes = [e.passes for e in plan.layers]
        gaps = [e.update_gap for e in plan.layers]
        tot.floor += int(cycle_floor(bundle.manifest, g, plan.lanes, tables, passes, gaps).sum())
        for e, trace in zip(plan.layers, g.layers, strict=True):
            name = f"layer{e.index}"
            states, gates = trace.states[0], trace.gates[0]
            tot.macs[name] = tot.macs.get(name, 0) + int(trace.macs.sum())
            tot.events[name] = tot.events.get(name, 0) + int(trace.events.sum())
            if trace.opens is not None:
                tot.opens[name] = tot.opens.get(name, 0) + int(trace.opens.sum())
            checker = self.tb.trace_checkers[name]
            for t in range(steps):
                # a selective layer visits only some groups (codesign.hw.selective.walk); a held
                # group's gates come from its biases alone and are not compared
                visits = walk(e, tables.get(e.index), t, seq_end=t == steps - 1, items=int(trace.items[0, t]))
                for grp, held in visits:
                    lo = grp * e.lanes
                    hi = min(lo + e.lanes, e.size)
                    checker.add_expected(
                        TraceBeat(
                            n, t, name, grp,
                            states[t, lo:hi].tolist(), None if held else gates[t, lo:hi].tolist(),
                            int(grp == visits[-1][0]), int(t == steps - 1),
                            hi - lo, lo,
                        )
                    )  # fmt: skip
        # readout
        ro = plan.readout
        logits, classes = g.logits[0], g.classes[0]
        rows = (
            [(t, logits[t], int(classes[t])) for t in range(steps)]
            if plan.per_step
            else [(steps - 1, logits, int(classes))]
        )
        for t, row, cls in rows:
            tot.results += 1
            for grp in range(ro.groups):
                lo = grp * ro.lanes
                hi = min(lo + ro.lanes, ro.size)
                self.tb.result_checker.add_expected(
                    ResultBeat(
                        n, t, "readout", grp, row[lo:hi].tolist(), int(grp == ro.groups - 1),
                        cls, int(t == steps - 1), hi - lo, lo,
                    )
                )  # fmt: skip
            if np.sum(row == row[cls]) > 1:
                self.tb.sample("protocol", "argmax tie")
        readout_macs = int(g.readout_macs.sum())
        if plan.per_step:  # compared once golden counts the readout's events (event-driven)
            last_events = int(g.layers[-1].events.sum())
            if readout_macs != last_events * ro.size:
                tot.readout_macs = None
        if tot.readout_macs is not None:
            tot.readout_macs += readout_macs
        self.classes.append(classes.tolist() if plan.per_step else int(classes))
        cov.cover_sequence(bundle, x, g, plan.lanes)
