"""The environment of the formal harness: the rules the solver's free inputs must keep.

The harness's own ports are the accelerator's inputs, its configuration stream and the results'
``ready``; a solver drives them freely in every cycle. The functions here ``Assume`` what a legal
host does (``docs/accelerator.md``, Interfaces) and count what it handed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Assume, Const, Module, Signal, Value

from codesign.hw.plan import AcceleratorPlan

__all__ = ["COUNT_BITS", "Handed", "held_stream", "legal_items", "harmless_config"]

COUNT_BITS = 16
"""Width of the harness's transfer counters (far beyond any proof depth)."""


@dataclass
class Handed:
    """What the host handed over so far: accepted ``step_end`` and ``seq_end`` beats."""

    steps: Signal
    sequences: Signal


def held_stream(m: Module, valid: Value, ready: Value, payload: Value, what: str) -> None:
    """Assume the source rule of a stream: a beat offered and not taken stays, unchanged."""
    held = Signal(name=f"{what}_held")
    last = Signal(len(payload), name=f"{what}_last")
    m.d.sync += [held.eq(valid & ~ready), last.eq(payload)]
    with m.If(held):
        m.d.comb += [Assume(valid), Assume(payload == last)]


def legal_items(m: Module, plan: AcceleratorPlan, items) -> Handed:
    """Assume ``items`` is a legal input stream and count its steps and sequences.

    A step's non-zero items carry distinct indices below the input size; a beat with value 0 is
    the bare marker of a step without one (``step_end`` set); ``seq_end`` comes with ``step_end``.
    """
    payload = items.payload
    held_stream(m, items.valid, items.ready, payload.as_value(), "items")
    size = plan.input_size
    seen = Signal(size, name="items_seen")  # indices of the step's non-zero items so far
    m.d.comb += Assume(~payload.seq_end | payload.step_end)
    if 2 ** len(payload.index) > size:
        m.d.comb += Assume(payload.index < size)
    with m.If(items.valid):
        with m.If(payload.value == 0):
            m.d.comb += Assume(payload.step_end)
        with m.Else():
            m.d.comb += Assume(~seen.bit_select(payload.index, 1))
    steps = Signal(COUNT_BITS, name="steps_handed")
    sequences = Signal(COUNT_BITS, name="sequences_handed")
    with m.If(items.valid & items.ready):
        with m.If(payload.step_end):
            m.d.sync += [seen.eq(0), steps.eq(steps + 1)]
        with m.Elif(payload.value != 0):
            m.d.sync += seen.eq(seen | (Const(1, size) << payload.index))
        with m.If(payload.seq_end):
            m.d.sync += sequences.eq(sequences + 1)
    return Handed(steps, sequences)


def harmless_config(m: Module, plan: AcceleratorPlan, config) -> Signal:
    """Assume every configuration beat targets no loadable memory; return a flag that one came.

    In a ``frozen`` build the engines' memories are ROMs and ignore every beat; the targets that
    stay loadable (the single-port RAMs of ``spram``, or everything in ``baked`` and ``runtime``)
    are excluded."""
    for mem in plan.memories:
        if mem.config_id is not None and not mem.rom:
            m.d.comb += Assume(~(config.valid & (config.payload.target == mem.config_id)))
    written = Signal(name="config_written")
    with m.If(config.valid):
        m.d.sync += written.eq(1)
    return written
