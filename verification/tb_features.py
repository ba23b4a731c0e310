"""cocotb test: the random-feature accelerator (``features.v``) against the golden model, bit for bit.

The design is a feature build directory (:func:`codesign.hw.features_build.build_feature_rtl`).
Settings come from ``CODESIGN_FEATURES_JOB`` (JSON: ``build``, ``sequences``, ``seed``,
``max_steps``, ``gaps``); the result goes to ``CODESIGN_RESULT`` (JSON: sequences, frames,
mismatches, the first mismatch, the measured and modelled cycles).

Random sequences of random lengths (values uniform over the input format, a quarter of them at
full scale, which drives the counters into saturation) go in as frames; every logit, every
``class_index`` and the beats' ``group``, ``final`` and ``seq_end`` are compared with
:func:`codesign.golden.features.run_features_ragged`. Without gaps every sequence's cycles from its
first frame's acceptance to its final beat must equal :meth:`FeatureCycles.sequence`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

from codesign.board.fields import Fields
from codesign.bundle.io import load_any_bundle
from codesign.golden.features import run_features_ragged
from codesign.intmath import signed_range

#: Cycles without a handshake before the test gives up (a hung design).
SILENCE_CYCLES = 200_000


def random_sequences(build: dict, count: int, seed: int, max_steps: int) -> list[np.ndarray]:
    """``count`` integer sequences ``(T, channels)``, ``T`` in 1 .. ``max_steps``."""
    rng = np.random.default_rng(seed)
    lo, hi = signed_range(build["input"]["bits"])
    channels = build["features"]["channels"]
    seqs = []
    for i in range(count):
        steps = int(rng.integers(1, max_steps + 1))
        if i % 4 == 3:  # full scale: the largest sums, counters into saturation
            seqs.append(rng.choice([lo, hi], size=(steps, channels)).astype(np.int64))
        else:
            seqs.append(rng.integers(lo, hi + 1, (steps, channels)))
    return seqs


class _Check:
    """The first mismatch and the count of them."""

    def __init__(self) -> None:
        self.mismatches, self.first = 0, None

    def expect(self, what: str, got, want) -> None:
        if got != want:
            self.mismatches += 1
            self.first = self.first or f"{what}: RTL {got}, golden {want}"


async def _load_config(dut, build: dict, weights: np.ndarray) -> None:
    fields = Fields(build["config_payload"])
    for addr, value in enumerate(weights.ravel()):
        await FallingEdge(dut.clk)
        dut.config__valid.value = 1
        dut.config__payload.value = fields.pack({"addr": addr, "value": int(value)})
    await FallingEdge(dut.clk)
    dut.config__valid.value = 0


async def _stream(dut, build: dict, seqs: list[np.ndarray], gaps: bool, rng, check: _Check) -> dict:
    """Frames in, result beats out, compared as they come; returns the measured cycles."""
    bundle = load_any_bundle(Path(os.environ["CODESIGN_FEATURES_BUILD"]))
    want = run_features_ragged(bundle, seqs)
    classes = build["classes"]
    in_fields, out_fields = Fields(build["inputs_payload"]), Fields(build["results_payload"])
    channels = build["features"]["channels"]
    frames = [(s[t], t == len(s) - 1) for s in seqs for t in range(len(s))]
    nxt, seq, cls, cycle, idle, fed = 0, 0, 0, 0, 0, 0  # fed: sequences whose last frame went in
    first_accept: dict[int, int] = {}
    spans: list[int] = []
    while seq < len(seqs):
        await FallingEdge(dut.clk)
        cycle, idle = cycle + 1, idle + 1
        if idle > SILENCE_CYCLES:
            raise TimeoutError(f"no handshake for {SILENCE_CYCLES} cycles (sequence {seq}, class {cls})")
        offer = nxt < len(frames) and (not gaps or rng.random() < 0.7)
        take = not gaps or rng.random() < 0.6
        dut.inputs__valid.value = int(offer)
        dut.results__ready.value = int(take)
        if offer:
            values, end = frames[nxt]
            beat = {f"values[{c}]": int(values[c]) for c in range(channels)} | {"seq_end": int(end)}
            dut.inputs__payload.value = in_fields.pack(beat)
            if dut.inputs__ready.value.is_resolvable and int(dut.inputs__ready.value):
                first_accept.setdefault(fed, cycle)
                fed += int(end)
                nxt, idle = nxt + 1, 0
        valid = dut.results__valid.value
        if not valid.is_resolvable:
            check.expect(f"sequence {seq} results__valid", "X", 0)
            continue
        if take and int(valid):
            beat = out_fields.unpack_value(dut.results__payload.value)  # a field with X bits: None
            final = cls == classes - 1
            check.expect(f"sequence {seq} beat {cls} group", beat["group"], cls)
            check.expect(f"sequence {seq} class {cls} logit", beat["logits[0]"], int(want.logits[seq, cls]))
            check.expect(f"sequence {seq} beat {cls} final", beat["final"], int(final))
            check.expect(f"sequence {seq} beat {cls} seq_end", beat["seq_end"], int(final))
            idle, cls = 0, cls + 1
            if final:
                check.expect(f"sequence {seq} class_index", beat["class_index"], int(want.classes[seq]))
                spans.append(cycle - first_accept.get(seq, cycle))
                seq, cls = seq + 1, 0
    dut.inputs__valid.value = 0
    return {"sequence_cycles": spans}


@cocotb.test()
async def features_random(dut):
    """Random sequences (random gaps and back-pressure when the job asks): every logit and class
    equals the golden model's; without gaps every sequence takes the modelled cycles."""
    job = json.loads(os.environ["CODESIGN_FEATURES_JOB"])
    build = json.loads((Path(job["build"]) / "build.json").read_text())
    os.environ["CODESIGN_FEATURES_BUILD"] = job["build"]
    rng = np.random.default_rng(job["seed"])
    seqs = random_sequences(build, job["sequences"], job["seed"], job["max_steps"])
    check = _Check()
    dut.rst.value = 1
    dut.inputs__valid.value = 0
    dut.results__ready.value = 0
    if build["weights"] == "spram":
        dut.config__valid.value = 0
    Clock(dut.clk, 10, unit="ns").start()
    await ClockCycles(dut.clk, 3)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    if build["weights"] == "spram":
        bundle = load_any_bundle(Path(job["build"]))
        await _load_config(dut, build, np.asarray(bundle.weights["readout.weight"]))
    measured = await _stream(dut, build, seqs, bool(job["gaps"]), rng, check)
    cyc = build["cycles"]
    model = [len(s) * cyc["frame"] + cyc["readout"] for s in seqs]
    if not job["gaps"]:
        for i, (got, want) in enumerate(zip(measured["sequence_cycles"], model, strict=True)):
            check.expect(f"sequence {i} cycles", got, want)
    result = {
        "sequences": len(seqs),
        "frames": int(sum(len(s) for s in seqs)),
        "mismatches": check.mismatches,
        "first_mismatch": check.first,
        "sequence_cycles": measured["sequence_cycles"],
        "model_cycles": model,
    }
    Path(os.environ["CODESIGN_RESULT"]).write_text(json.dumps(result, indent=2) + "\n")
    assert check.mismatches == 0, check.first
