"""Drive :class:`~codesign.hw.features.FeatureAccelerator` in Amaranth's simulator.

:func:`simulate_features` feeds sequences of integer frames, collects every result beat and the
cycle of every handshake, cycle by cycle, so that tests compare the RTL with the golden model
(``codesign/golden/features.py``) and the cycle model (:func:`codesign.hw.features.feature_cycles`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from amaranth.sim import Simulator

from codesign.bundle.io import FeatureBundle
from codesign.errors import CodesignError
from codesign.hw.features import FeatureAccelerator

__all__ = ["FeatureSimResult", "simulate_features"]


@dataclass
class FeatureSimResult:
    """What the accelerator sent for a list of sequences."""

    logits: np.ndarray
    """``(sequences, classes)`` from the result beats."""
    classes: np.ndarray
    """``(sequences,)``: ``class_index`` of each final beat."""
    accepts: list[int] = field(default_factory=list)
    """Cycle of every frame's acceptance (in order)."""
    finals: list[int] = field(default_factory=list)
    """Cycle of every final result beat's handshake."""
    counts: list[np.ndarray] = field(default_factory=list)
    """The counters memory at each final beat ``(size,)`` (the units' last states)."""


def _config_beats(bundle: FeatureBundle) -> list[tuple[int, int]]:
    return [(a, int(v)) for a, v in enumerate(np.asarray(bundle.weights["readout.weight"]).ravel())]


def simulate_features(
    bundle: FeatureBundle,
    sequences: list[np.ndarray],
    *,
    weights: str = "rom",
    gaps: int | None = None,
    max_cycles: int = 2_000_000,
) -> FeatureSimResult:
    """Run ``sequences`` (each ``(T_i, channels)`` integers) through the accelerator.

    ``gaps``: ``None`` keeps every stream at full rate; a seed makes input gaps and result
    back-pressure at random. Raises :class:`CodesignError` past ``max_cycles``.
    """
    dut = FeatureAccelerator(bundle, weights=weights)
    classes = bundle.manifest.readout.classes
    rng = np.random.default_rng(gaps) if gaps is not None else None
    frames = [(seq[t], t == len(seq) - 1) for seq in sequences for t in range(len(seq))]
    out = FeatureSimResult(
        np.zeros((len(sequences), classes), dtype=np.int64), np.zeros(len(sequences), np.int64)
    )
    counts_mem = dut.counts_memory

    async def bench(ctx) -> None:
        if weights == "spram":  # the readout weights through config, before the first frame
            for addr, value in _config_beats(bundle):
                ctx.set(dut.config.valid, 1)
                ctx.set(dut.config.payload.addr, addr)
                ctx.set(dut.config.payload.value, value)
                await ctx.tick()
            ctx.set(dut.config.valid, 0)
        nxt, seq, cls = 0, 0, 0
        for cycle in range(max_cycles):
            if seq == len(sequences):
                return
            offer = nxt < len(frames) and (rng is None or rng.random() < 0.7)
            ctx.set(dut.inputs.valid, offer)
            if offer:
                values, end = frames[nxt]
                for c, v in enumerate(values):
                    ctx.set(dut.inputs.payload.values[c], int(v))
                ctx.set(dut.inputs.payload.seq_end, int(end))
            take = rng is None or rng.random() < 0.6
            ctx.set(dut.results.ready, take)
            if offer and ctx.get(dut.inputs.ready):
                out.accepts.append(cycle)
                nxt += 1
            if take and ctx.get(dut.results.valid):
                beat = ctx.get(dut.results.payload)
                if int(beat.group) != cls:
                    raise CodesignError(f"result beat of class {int(beat.group)} where class {cls} was due")
                out.logits[seq, cls] = int(beat.logits[0])
                cls += 1
                if beat.final:
                    out.classes[seq] = int(beat.class_index)
                    out.finals.append(cycle)
                    out.counts.append(
                        np.array([ctx.get(counts_mem.data[j]) for j in range(counts_mem.depth)])
                    )
                    seq, cls = seq + 1, 0
            await ctx.tick()
        raise CodesignError(f"the feature accelerator's simulation did not finish in {max_cycles} cycles")

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out
