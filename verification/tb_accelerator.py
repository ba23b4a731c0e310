"""cocotb tests: the generated accelerator against the golden integer model, bit for bit.

Shaped like cocotb's ``examples/matrix_multiplier``, one module per job:

* ``tb_drivers``: the clock loop, stream drivers with random gaps, random back-pressure;
* ``tb_monitors``: stream and trace monitors (reset-aware, X-aware);
* ``tb_golden``: the golden-model adapter (expected beats from what the input monitor saw);
* ``tb_scoreboard``: in-order checkers, compare functions, the first mismatch;
* ``tb_coverage``: functional coverage of what was checked;
* ``tb_stimulus``: corner bundles and corner inputs;
* ``tb_bench``: the :class:`~tb_bench.Testbench` that wires them and its phases;
* this module: the tests, named once in :data:`codesign.verify.job.TESTS`.
"""

from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from tb_bench import StopOnMismatch, Testbench
from tb_stimulus import corner_bundles, corner_sequences

from codesign.hw.pysim import item_beats
from codesign.intmath import signed_range


async def _run_test(dut, name: str, body) -> None:
    tb = Testbench(dut, name)
    dut.rst.value = 1
    dut.inputs__valid.value = 0
    dut.config__valid.value = 0
    dut.results__ready.value = 0
    Clock(dut.clk, 10, unit="ns").start()
    tb.start()
    error = None
    profile = None
    if os.environ.get("CODESIGN_PROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    try:
        await tb.reset()
        await body(tb)
    except StopOnMismatch:
        pass
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["CODESIGN_PROFILE"])
        tb.stop()
        error = tb.errors[0] if tb.errors else error
        record = tb.write_result(True, error)
        dut._log.info(
            "%s: %d sequences, %d steps, %d mismatches",
            name,
            record["sequences"],
            record["steps"],
            record["mismatches"],
        )
    assert tb.scoreboard.mismatches == 0, tb.scoreboard.first.line()


# --------------------------------------------------------------------------- tests
@cocotb.test()
async def random_sequences(dut):
    """Random sequences through every bundle of the job (reloaded through ``config`` between
    bundles in runtime builds), random stalls on every stream: every state, gate, logit, class
    and counter equals the golden model's."""

    async def body(tb: Testbench) -> None:
        for k, bundle in enumerate(tb.bundles()):
            await tb.use(bundle)
            seqs = tb.random_sequences(bundle, tb.job.vectors, tb.job.seed * 1000 + k)
            await tb.run_sequences(seqs)

    await _run_test(dut, "random_sequences", body)


@cocotb.test()
async def directed_corners(dut):
    """Corner bundles (gates always / never open, sign(0), ties, saturation, DCLS delays at span-1
    and 0; runtime builds) under corner inputs (all-zero, T = 1, maximum magnitude, saturating
    ramps, alternating signs), half of them back to back with no stall at all."""

    async def body(tb: Testbench) -> None:
        variants = [("own", b) for b in tb.bundles()[:1]]
        if tb.runtime:
            variants += list(corner_bundles(variants[0][1]).items())
        for k, (_, bundle) in enumerate(variants):
            await tb.use(bundle)
            seqs = corner_sequences(bundle, tb.rng, short=k > 0)
            await tb.run_sequences(seqs[: len(seqs) // 2], gaps=k % 2 == 0)
            await tb.run_sequences(seqs[len(seqs) // 2 :], gaps=False)

    await _run_test(dut, "directed_corners", body)


@cocotb.test()
async def reset_mid_sequence(dut):
    """A reset in the middle of a sequence; the sequences sent afterwards are still right."""

    async def body(tb: Testbench) -> None:
        bundle = tb.bundles()[-1]
        await tb.use(bundle)
        seqs = tb.random_sequences(bundle, tb.job.reset_sequences, tb.job.seed + 77)
        seqs = [np.concatenate([s, s]) if len(s) < 6 else s for s in seqs]
        words = [tb.inputs_fields.pack(b) for b in item_beats(seqs)]
        tb.input_driver.append(words)
        half = len(words) // 2
        await tb.wait_until(lambda: tb.input_driver.sent >= half, "half the input beats")
        await ClockCycles(dut.clk, int(tb.rng.integers(0, 5)))
        await tb.reset(int(tb.rng.integers(1, 4)))
        tb.sample("protocol", "reset mid-sequence")  # memories keep their contents: no reload
        await tb.run_sequences(tb.random_sequences(bundle, 4, tb.job.seed + 78))

    await _run_test(dut, "reset_mid_sequence", body)


@cocotb.test()
async def long_sequence(dut):
    """One sequence of ``long_steps`` steps (default 10000), sparse inputs."""

    async def body(tb: Testbench) -> None:
        bundle = tb.bundles()[0]
        await tb.use(bundle)
        fmt = bundle.manifest.input
        lo, hi = signed_range(fmt.bits)
        x = tb.rng.integers(lo, hi + 1, size=(tb.job.long_steps, fmt.size))
        x[tb.rng.random(x.shape) >= 0.1] = 0
        await tb.run_sequences([x.astype(np.int64)], gaps=False)

    await _run_test(dut, "long_sequence", body)
