"""The formal harness: the accelerator of a bundle, its environment and its properties in Amaranth.

:class:`FormalHarness` wraps one :class:`codesign.hw.Accelerator` (it never changes it) and drives
its three stream ports from free values (``AnySeq``) that ``Assume`` statements constrain to a
legal environment; ``Assert`` and ``Cover`` statements state what the accelerator promises. The
harness has no ports of its own: a solver (SymbiYosys, :mod:`codesign.formal.sby`) chooses every
input in every cycle, so a passing bounded check holds for every input sequence within the depth,
not for a sample.

Checks (``check``):

``stream``
    The environment offers items under the stream rules, takes results with arbitrary
    back-pressure and writes no configuration. Asserted: a result held while ``ready`` is low
    keeps ``valid`` and its payload; result beats come in class-group order (``group`` 0, 1, ...,
    ``final`` on the last); no result without a sequence (or a step, with a per-step readout)
    accepted before it, and never more sequences in flight than the pipeline can hold;
    ``config.ready`` is high in every cycle. Covered: a whole sequence's result, and a result
    held by back-pressure and then taken.
``live``
    The environment takes every result at once. Asserted: an offered input beat waits at most
    :func:`input_wait_bound` cycles for ``ready``, and while a sequence is in flight a result
    with ``seq_end`` comes at most :func:`result_bound` cycles after the previous one (or after
    the sequence was accepted): no deadlock, and progress within the cycle model's bound plus a
    margin.
``config``
    Two copies of the accelerator see the same inputs and the same back-pressure; one of them
    also receives configuration beats whose target is no loadable memory (in a ``frozen`` build
    every beat, since a ROM has no write port). Asserted: both produce the same results, cycle by
    cycle, and accept inputs in the same cycles, so such a write never disturbs a sequence in
    flight.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from codesign.formal.bounds import input_wait_bound, result_bound
from codesign.formal.env import Handed, harmless_config, legal_items
from codesign.hw.accelerator import Accelerator

__all__ = ["CHECKS", "FormalHarness"]

CHECKS = ("stream", "live", "config")
"""The property sets a harness can carry (one per SymbiYosys run)."""


class FormalHarness(wiring.Component):
    """The environment's free inputs around ``accelerator`` (and, for ``config``, a ``twin``).

    Its ports are the accelerator's ``inputs`` and ``config`` streams and ``results_ready``; a
    solver drives them, constrained by :mod:`codesign.formal.env`.

    Parameters
    ----------
    accelerator : Accelerator
        The design under proof, elaborated unchanged.
    check : str
        One of :data:`CHECKS`.
    twin : Accelerator, optional
        A second accelerator of the same build, required by the ``config`` check.
    """

    def __init__(self, accelerator: Accelerator, check: str, twin: Accelerator | None = None) -> None:
        if check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(CHECKS)}, not {check!r}")
        if check == "config" and twin is None:
            raise ValueError("the config check compares two copies: pass twin=")
        self.dut = accelerator
        self.twin = twin
        self.check = check
        members = accelerator.signature.members
        super().__init__({"inputs": members["inputs"], "config": members["config"], "results_ready": In(1)})

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        m.submodules.dut = dut
        m.d.comb += Assume(~ResetSignal())  # registers and memories start from their initial values
        wiring.connect(m, wiring.flipped(self.inputs), dut.inputs)
        handed = legal_items(m, dut.plan, dut.inputs)
        if self.check == "live":
            m.d.comb += Assume(self.results_ready)
        m.d.comb += dut.results.ready.eq(self.results_ready)
        if self.check == "config":
            self._config_miter(m)
        else:
            m.d.comb += [Assume(~self.config.valid), dut.config.valid.eq(0)]
        if self.check == "stream":
            self._stream_rules(m, handed)
        if self.check == "live":
            self._liveness(m, handed)
        return m

    def _stream_rules(self, m: Module, handed: Handed) -> None:
        dut, plan = self.dut, self.dut.plan
        results = dut.results
        m.d.comb += Assert(dut.config.ready, "config.ready is high in every cycle")
        held = Signal()  # a result was offered and not taken in the previous cycle
        last = Signal(len(results.payload.as_value()), name="result_last")
        m.d.sync += [held.eq(results.valid & ~results.ready), last.eq(results.payload.as_value())]
        with m.If(held):
            m.d.comb += [
                Assert(results.valid, "a held result keeps valid until ready"),
                Assert(results.payload.as_value() == last, "a held result keeps its payload"),
            ]
        groups = plan.readout.groups
        expected = Signal(range(groups), name="expected_group")
        taken = results.valid & results.ready
        final_taken = taken & results.payload.final
        with m.If(taken):
            m.d.comb += [
                Assert(results.payload.group == expected, "result beats come in class-group order"),
                Assert(results.payload.final == (expected == groups - 1), "final marks the last group"),
            ]
            m.d.sync += expected.eq(Mux(expected == groups - 1, 0, expected + 1))
        if not plan.per_step:
            with m.If(final_taken):
                m.d.comb += Assert(results.payload.seq_end, "a once-per-sequence result ends a sequence")
        sent = handed.steps if plan.per_step else handed.sequences
        answered = Signal.like(sent, name="answered")
        with m.If(final_taken):
            m.d.sync += answered.eq(answered + 1)
        m.d.comb += Assert(answered <= sent, "no result without a sequence (or step) accepted before it")
        back_pressured = Signal()
        with m.If(held):
            m.d.sync += back_pressured.eq(1)
        m.d.comb += [
            Cover(final_taken & results.payload.seq_end),
            Cover(back_pressured & final_taken),
        ]

    def _liveness(self, m: Module, handed: Handed) -> None:
        dut, plan = self.dut, self.dut.plan
        inputs, results = dut.inputs, dut.results
        wait_bound, progress_bound = input_wait_bound(plan), result_bound(plan)
        waiting = Signal(range(wait_bound + 2), name="input_wait")
        with m.If(inputs.valid & ~inputs.ready):
            m.d.sync += waiting.eq(waiting + 1)
        with m.Else():
            m.d.sync += waiting.eq(0)
        m.d.comb += Assert(waiting <= wait_bound, "an offered input is taken within the bound")
        answered = Signal.like(handed.sequences, name="answered")
        done = results.valid & results.ready & results.payload.final & results.payload.seq_end
        with m.If(done):
            m.d.sync += answered.eq(answered + 1)
        since = Signal(range(progress_bound + 2), name="since_progress")
        with m.If(done | (handed.sequences == answered)):
            m.d.sync += since.eq(0)
        with m.Else():
            m.d.sync += since.eq(since + 1)
        m.d.comb += [
            Assert(since <= progress_bound, "a sequence in flight yields its result within the bound"),
            Cover(done),
        ]

    def _config_miter(self, m: Module) -> None:
        dut, twin = self.dut, self.twin
        m.submodules.twin = twin
        m.d.comb += [
            twin.inputs.valid.eq(dut.inputs.valid),
            twin.inputs.payload.eq(dut.inputs.payload),
            twin.results.ready.eq(dut.results.ready),
            twin.config.valid.eq(0),
            dut.config.valid.eq(self.config.valid),
            dut.config.payload.eq(self.config.payload),
        ]
        written = harmless_config(m, dut.plan, dut.config)
        m.d.comb += [
            Assert(dut.inputs.ready == twin.inputs.ready, "a configuration beat never changes input ready"),
            Assert(
                dut.results.valid == twin.results.valid, "a configuration beat never changes results.valid"
            ),
        ]
        with m.If(dut.results.valid):
            m.d.comb += Assert(
                dut.results.payload.as_value() == twin.results.payload.as_value(),
                "a configuration beat never changes a result",
            )
        m.d.comb += Cover(written & dut.results.valid & dut.results.payload.final)
