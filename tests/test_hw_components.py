"""Cycle-level amaranth.sim tests of the accelerator's components, each on its own.

Update units against the integer rules (codesign.golden.model), the lane array against numpy,
the event serializer and the issue stage against the protocol they implement, and the DCLS front
end against the golden model's delay line.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle.io import Bundle, check_weights
from codesign.bundle.random import random_network_manifest, random_network_weights
from codesign.golden.model import dcls_front_end, shift_floor
from codesign.hw.dcls import DelayFrontEnd
from codesign.hw.events import EventSerializer
from codesign.hw.images import memory_images
from codesign.hw.issue import IssueStage
from codesign.hw.lanes import LaneArray
from codesign.hw.plan import plan_accelerator
from codesign.hw.update import abs_at_least, clamp_gate, make_update_unit, saturate_sum
from codesign.hw.update import saturate as hw_saturate
from codesign.intmath import saturate, signed_range


def _run(dut, bench, clock: bool = True, monitors=()) -> None:
    sim = Simulator(dut)
    if clock:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    for monitor in monitors:
        sim.add_process(monitor)
    sim.run()


def _layer_plan(cell: str, **extra):
    layer = {
        "cell": cell,
        "size": 3,
        "state_bits": 6,
        "alpha_bits": 4,
        "gate_bits": 3,
        "leak_shift": 2,
        **extra,
    }
    manifest = random_network_manifest(inputs=2, layers=[layer], classes=2, input_bits=4)
    return plan_accelerator(manifest, 3).layers[0]


def _reference(cell: str, e, acc: dict, params: dict, old: dict) -> tuple[dict, int, int]:
    """(new state, out, gate) by the rules of docs/integer-semantics.md."""
    sb = e.state_bits
    if cell in ("cmru", "bmru", "alphacmru"):
        c, b, h = acc["cand"], acc["thr"], old["h"]
        if cell == "alphacmru":
            alpha = int(saturate(shift_floor(np.int64(acc["alpha"]), params["alpha_shift"]), e.alpha_bits))
        else:
            alpha = params["alpha"]
        gate = int(abs(c) >= abs(b))
        new = int(saturate(np.int64(e.eps * h + (1 if c >= 0 else -1) * alpha), sb)) if gate else h
        return {"h": new}, new, gate
    if cell == "bgmingru":
        u = int(saturate(shift_floor(np.int64(acc["cand"]), params["cand_shift"]), sb))
        gate = int(acc["gate"] >= 0)
        new = u if gate else old["h"]
        return {"h": new}, new, gate
    if cell == "mingru":
        one = 1 << e.gate_bits
        u = int(saturate(shift_floor(np.int64(acc["cand"]), params["cand_shift"]), sb))
        z = int(np.clip(shift_floor(np.int64(acc["gate"]), params["gate_shift"]) + one // 2, 0, one))
        h = old["h"]
        new = h + ((z * (u - h)) >> e.gate_bits)
        return {"h": new}, new, z
    current = int(shift_floor(np.int64(acc["in"]), params["in_shift"]))
    v = int(saturate(np.int64(old["v"] - (old["v"] >> e.leak_shift) + current), sb))
    spike = int(v >= params["theta"])
    d = old["d"] ^ spike
    return {"v": v, "d": d}, d, spike


@pytest.mark.parametrize(
    "cell,extra",
    [
        ("cmru", {"eps": 1}),
        ("cmru", {"eps": -1}),
        ("bmru", {}),
        ("alphacmru", {"eps": 0}),
        ("bgmingru", {}),
        ("mingru", {}),
        ("hsru", {}),
    ],
)
def test_update_unit_follows_the_integer_rules(cell: str, extra: dict) -> None:
    e = _layer_plan(cell, **extra)
    unit = make_update_unit(e)
    rng = np.random.default_rng(len(cell) + e.eps)
    acc_lo, acc_hi = signed_range(e.acc_bits)
    state_lo, state_hi = signed_range(e.state_bits)

    async def bench(ctx):
        for k in range(300):
            small = k % 3 == 0  # near zero: sign(0), ties |c| = |b|, gates at 0
            acc = {
                name: int(rng.integers(-3, 4) if small else rng.integers(acc_lo, acc_hi + 1))
                for name in e.matrices
            }
            if k % 7 == 0 and "thr" in acc:
                acc["thr"] = -acc["cand"]  # a tie
            params = {}
            for name, width in e.params.items():
                lo, hi = signed_range(width)
                if name.endswith("_shift"):
                    lo, hi = max(e.shift_lo, -3), 12
                params[name] = int(rng.integers(lo, hi + 1))
            old = {"h": int(rng.integers(state_lo, state_hi + 1))}
            if cell == "hsru":
                old = {"v": int(rng.integers(state_lo, state_hi + 1)), "d": int(rng.integers(0, 2))}
            for name, value in acc.items():
                ctx.set(unit.acc[name], value)
            for name, value in params.items():
                ctx.set(unit.params[name], value)
            for name, value in old.items():
                ctx.set(unit.old[name], value)
            if e.update_latency > 1:  # presented in C3, answered in C3b (or C3c)
                for _ in range(e.update_latency - 1):
                    await ctx.tick()
            else:
                await ctx.delay(1e-9)
            new, out, gate = _reference(cell, e, acc, params, old)
            hold = ctx.get(unit.hold)  # the next stage keeps the old state and output
            for name, value in new.items():
                got = old[name] if hold else ctx.get(unit.new[name])
                assert got == value, (k, name, acc, params, old)
            old_out = old["d"] if cell == "hsru" else old["h"]
            assert (old_out if hold else ctx.get(unit.out)) == out, (k, acc, params, old)
            assert ctx.get(unit.gate) == gate, (k, acc, params, old)

    _run(unit, bench, clock=e.update_latency > 1)


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_abs_at_least_matches_abs_compare_exhaustively(bits: int) -> None:
    """The sign-split ``|a| >= |b|`` of the CMRU gate, on every pair of ``bits``-bit values."""
    a, b = Signal(signed(bits)), Signal(signed(bits))
    m = Module()
    out = abs_at_least(m, a, b)
    lo, hi = signed_range(bits)

    async def bench(ctx):
        for x in range(lo, hi + 1):
            for y in range(lo, hi + 1):
                ctx.set(a, x)
                ctx.set(b, y)
                await ctx.delay(1e-9)
                assert ctx.get(out) == int(abs(x) >= abs(y)), (x, y)

    _run(m, bench, clock=False)


@pytest.mark.parametrize(("width", "bits"), [(3, 3), (6, 3), (7, 4), (9, 2)])
def test_saturate_by_upper_bits_matches_the_spec_exhaustively(width: int, bits: int) -> None:
    """The reduction form of ``sat_bits`` (upper bits all equal) on every ``width``-bit value."""
    value = Signal(signed(width))
    m = Module()
    out, clipped = hw_saturate(m, value, bits, "sat")
    lo, hi = signed_range(width)

    async def bench(ctx):
        for x in range(lo, hi + 1):
            ctx.set(value, x)
            await ctx.delay(1e-9)
            want = int(saturate(np.int64(x), bits))
            assert ctx.get(out) == want, (x, want)
            assert ctx.get(clipped) == int(want != x), x

    _run(m, bench, clock=False)


@pytest.mark.parametrize(("narrow_bits", "wide_bits", "bits"), [(3, 8, 3), (4, 9, 4), (2, 7, 3), (4, 4, 3)])
def test_saturate_sum_matches_the_spec_exhaustively(narrow_bits: int, wide_bits: int, bits: int) -> None:
    """``sat_bits(a + c)`` with narrow arithmetic, on every pair of a narrow and a wide value."""
    a, c = Signal(signed(narrow_bits)), Signal(signed(wide_bits))
    m = Module()
    out, clipped = saturate_sum(m, a, c, bits, "s")
    alo, ahi = signed_range(narrow_bits)
    clo, chi = signed_range(wide_bits)

    async def bench(ctx):
        for x in range(alo, ahi + 1):
            for y in range(clo, chi + 1):
                ctx.set(a, x)
                ctx.set(c, y)
                await ctx.delay(1e-9)
                want = int(saturate(np.int64(x + y), bits))
                assert ctx.get(out) == want, (x, y, want)
                assert ctx.get(clipped) == int(want != x + y), (x, y)

    _run(m, bench, clock=False)


@pytest.mark.parametrize(("width", "gate_bits"), [(3, 3), (5, 3), (8, 3), (9, 2), (7, 6)])
def test_clamp_gate_matches_the_hard_sigmoid_exhaustively(width: int, gate_bits: int) -> None:
    """minGRU's ``clamp(g + 2**(gb-1), 0, 2**gb)`` by the narrow form, on every ``width``-bit g."""
    value = Signal(signed(width))
    m = Module()
    z = clamp_gate(m, value, gate_bits, "z")
    lo, hi = signed_range(width)
    one = 1 << gate_bits

    async def bench(ctx):
        for x in range(lo, hi + 1):
            ctx.set(value, x)
            await ctx.delay(1e-9)
            assert ctx.get(z) == min(max(x + one // 2, 0), one), x

    _run(m, bench, clock=False)


def test_lane_array_accumulates_from_seeds() -> None:
    dut = LaneArray(lanes=3, matrices=2, weight_bits=5, value_bits=6, acc_bits=20)
    rng = np.random.default_rng(0)

    async def bench(ctx):
        sums = [np.zeros(6, dtype=np.int64)]
        seeds = np.zeros(6, dtype=np.int64)
        for k in range(60):
            first = k % 5 == 0
            w = rng.integers(-16, 16, size=6)
            value = int(rng.integers(-32, 32))
            ctx.set(dut.valid, 1)
            ctx.set(dut.first, int(first))
            ctx.set(dut.value, value)
            ctx.set(dut.weights, [int(v) for v in w])
            ctx.set(dut.seeds, [int(v) for v in seeds])  # the seeds of the previous slot
            seeds = rng.integers(-1000, 1000, size=6)
            await ctx.tick()
            sums.append(((seeds if first else sums[-1]) + w * value).tolist())
            if k >= 2:  # the sum of slot k-2 (LATENCY = 3 cycles)
                assert [ctx.get(dut.acc[i]) for i in range(6)] == sums[-3], k
        ctx.set(dut.valid, 0)
        ctx.set(dut.seeds, [int(v) for v in seeds])
        for _ in range(3):
            await ctx.tick()
        assert [ctx.get(dut.acc[i]) for i in range(6)] == sums[-1]

    _run(dut, bench)


def test_event_serializer_sends_changed_lanes_lowest_first_with_markers() -> None:
    dut = EventSerializer(lanes=4, groups=3, size=10, value_bits=6)
    entries = [
        {"mask": 0b1010, "value": [0, 5, 0, -7], "group": 0, "marker": 0, "seq_end": 0},
        {"mask": 0b0000, "value": [0, 0, 0, 0], "group": 1, "marker": 0, "seq_end": 0},
        {"mask": 0b0011, "value": [1, -2, 0, 0], "group": 2, "marker": 1, "seq_end": 0},
        {"mask": 0b0000, "value": [0, 0, 0, 0], "group": 2, "marker": 1, "seq_end": 1},
    ]
    expect = [(1, 5, 0, 0), (3, -7, 0, 0), (8, 1, 0, 0), (9, -2, 1, 0), (0, 0, 1, 1)]
    rng = np.random.default_rng(1)

    async def bench(ctx):
        got, k = [], 0
        for _ in range(200):
            if k < len(entries):
                ctx.set(dut.entries.payload, entries[k])
            ctx.set(dut.entries.valid, int(k < len(entries)))
            ready = rng.random() < 0.5
            ctx.set(dut.items.ready, int(ready))
            if ready and ctx.get(dut.items.valid):
                p = ctx.get(dut.items.payload)
                got.append((p.index, p.value, p.step_end, p.seq_end))
            if k < len(entries) and ctx.get(dut.entries.ready):
                k += 1
            await ctx.tick()
        assert got == expect

    _run(dut, bench)


def test_issue_stage_walks_every_group_over_the_steps_items() -> None:
    manifest = random_network_manifest(inputs=5, layers=[{"cell": "cmru", "size": 7, "eps": 1}], classes=2)
    plan = plan_accelerator(manifest, 3)
    e = plan.layers[0]  # 3 groups of 3 lanes
    dut = IssueStage(plan, e)
    steps = [[(4, 3), (1, -2)], [], [(0, 7)]]  # (index, value) non-zero items
    beats = []
    for t, items in enumerate(steps):
        if not items:
            beats.append({"index": 0, "value": 0, "step_end": 1, "seq_end": 0})
        for k, (j, v) in enumerate(items):
            beats.append(
                {"index": j, "value": v, "step_end": int(k == len(items) - 1), "seq_end": int(t == 2)}
            )
    rng = np.random.default_rng(2)

    async def bench(ctx):
        slots, b = [], 0
        for _ in range(200):
            if b < len(beats):
                ctx.set(dut.items.payload, beats[b])
            ctx.set(dut.items.valid, int(b < len(beats)))
            ctx.set(dut.credit, int(rng.random() < 0.6))
            s = ctx.get(dut.slot)
            if s.valid:
                slots.append((s.group, s.index, s.value, s.first, s.last, s.step_last, s.seq_first, s.empty))
            if b < len(beats) and ctx.get(dut.items.ready):
                b += 1
            await ctx.tick()
        expect = []
        for t, items in enumerate(steps):
            for g in range(3):
                walk = items or [(0, 0)]
                for k, (j, v) in enumerate(walk):
                    expect.append(
                        (
                            g,
                            j,
                            v,
                            int(k == 0),
                            int(k == len(walk) - 1),
                            int(g == 2),
                            int(t == 0),
                            int(not items),
                        )
                    )
        assert slots == expect

    _run(dut, bench)


def _run_delay_front_end(
    taps: int,
    span: int,
    *,
    same_delays: bool = False,
    density: float = 0.6,
    ready_p: float = 0.7,
    lengths: tuple[int, ...] = (7, 2, 5),
    target: str = "generic",
    seed: int = 3,
    monitors=(),
) -> tuple[int, int, int]:
    """Drive a DCLS front end with three sequences (so slots scheduled past a sequence's end must
    be cleared) and check every step's outputs against the golden front end's non-zero ``z``.
    ``same_delays``: every tap of a channel has one delay (its taps share slots). Returns (cycles
    from the first beat to the last step's marker, non-zero inputs, non-zero outputs)."""
    from codesign.hw.pysim import item_beats

    layer = {"cell": "cmru", "size": 2, "eps": 1, "dcls": {"taps": taps, "span": span, "weight_bits": 5}}
    manifest = random_network_manifest(inputs=3, layers=[layer], classes=2, input_bits=4)
    weights = random_network_weights(manifest, 3)
    if same_delays:
        key = next(k for k in weights if k.endswith("dcls_delay"))
        weights[key] = np.repeat(weights[key][:, :1], taps, axis=1)
    bundle = Bundle(manifest, check_weights(manifest, weights))
    plan = plan_accelerator(manifest, 2, target=target)
    dut = DelayFrontEnd(plan, plan.layers[0], memory_images(bundle, plan))
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(-8, 8, size=(t, 3)) * (rng.random((t, 3)) < density) for t in lengths]
    w = bundle.layer_weights(0)
    expect = []  # per step: the non-zero outputs (in any order) and the step's end
    for x in seqs:
        z = dcls_front_end(x[None], w["dcls_weight"], w["dcls_delay"])[0]
        for t in range(len(x)):
            expect.append(sorted((int(j), int(z[t, j])) for j in np.flatnonzero(z[t])))
    beats = item_beats(seqs)
    span_cycles = {}

    async def bench(ctx):
        got, step, b = [], [], 0
        for cycle in range(3000 + 20 * sum(lengths)):
            if b < len(beats):
                ctx.set(dut.items.payload, beats[b])
            ctx.set(dut.items.valid, int(b < len(beats)))
            ready = rng.random() < ready_p
            ctx.set(dut.outputs.ready, int(ready))
            if ready and ctx.get(dut.outputs.valid):
                p = ctx.get(dut.outputs.payload)
                if p.value != 0:
                    step.append((p.index, p.value))
                if p.step_end:
                    got.append(sorted(step))
                    step = []
                    span_cycles["last"] = cycle
            if b < len(beats) and ctx.get(dut.items.ready):
                span_cycles.setdefault("first", cycle)
                b += 1
            await ctx.tick()
        assert got == expect

    _run(dut, bench, monitors=monitors)
    n_in = sum(int(np.count_nonzero(x)) for x in seqs)
    n_out = sum(len(step) for step in expect)
    return span_cycles["last"] - span_cycles["first"], n_in, n_out


@pytest.mark.parametrize("counts", ["registers", "memory"])
@pytest.mark.parametrize("target", ["generic", "up5k"])
@pytest.mark.parametrize(("taps", "span", "same_delays"), [(3, 4, False), (2, 3, True), (1, 1, False)])
def test_delay_front_end_matches_the_golden_delay_line(
    monkeypatch, taps: int, span: int, same_delays: bool, target: str, counts: str
) -> None:
    """Outputs of every step equal the golden front end's non-zero ``z``, also when taps of a
    channel share a delay (their banks add up; the slot lists the channel once); on the UP5K
    O clears what Z read a cycle later (``DelayFrontEnd.clear_late``). The slot counts in
    registers (up to ``plan.DCLS_COUNT_REGISTERS`` slots) or in a memory (more)."""
    from codesign.hw import plan

    monkeypatch.setattr(plan, "DCLS_COUNT_REGISTERS", span if counts == "registers" else 0)
    _run_delay_front_end(taps, span, same_delays=same_delays, target=target)


@pytest.mark.parametrize(
    ("taps", "span", "same_delays", "density", "ready_p"),
    [(3, 4, False, 0.6, 0.7), (2, 3, True, 1.0, 1.0), (1, 1, False, 0.3, 0.5), (2, 2, False, 1.0, 0.3)],
)
@pytest.mark.parametrize("seed", [3, 4])
def test_up5k_delay_front_end_reads_never_meet_writes(
    collision_watch, taps: int, span: int, same_delays: bool, density: float, ready_p: float, seed: int
) -> None:
    """On the UP5K the banks, the listed flags, the lists and the output queue are marked
    ``no_rw_check`` (``plan.DCLS_COLLISION_FREE``): no read may meet a write of its word. Watched
    over sparse and dense streams, stalled outputs, a delay of zero (``span`` 1: items appended to
    the slot about to be sent) and taps sharing slots."""
    collisions, memories, monitor = collision_watch
    _run_delay_front_end(
        taps,
        span,
        same_delays=same_delays,
        density=density,
        ready_p=ready_p,
        target="up5k",
        seed=seed,
        monitors=[monitor],
        lengths=(9, 1, 6),
    )
    assert collisions == []
    marked = [mem for mem in memories if (mem.attrs or {}).get("no_rw_check")]
    # K banks, the flags, the lists, the output queue
    assert len(marked) == taps + 3, [(mem.depth, mem.shape) for mem in memories]


def test_delay_front_end_takes_an_input_per_cycle() -> None:
    """Dense inputs, outputs always taken: the K taps of an input go in one cycle, so a step costs
    about its non-zero inputs plus its non-zero outputs plus 3, not K x inputs (one tap per cycle:
    K x inputs + outputs + 5, here 660 cycles against 319). On the UP5K one more: R waits while O
    clears the step before's last entry (a bank read never meets a write,
    ``plan.DCLS_COLLISION_FREE``): 358 cycles."""
    steps = 40
    cycles, n_in, n_out = _run_delay_front_end(3, 4, density=1.0, ready_p=1.0, lengths=(steps,))
    assert cycles <= n_in + n_out + 3 * steps, (cycles, n_in, n_out)
    up5k, n_in, n_out = _run_delay_front_end(3, 4, density=1.0, ready_p=1.0, lengths=(steps,), target="up5k")
    assert cycles < up5k <= n_in + n_out + 4 * steps, (cycles, up5k, n_in, n_out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stream_slice_keeps_order_under_random_stalls(seed: int) -> None:
    """Every beat leaves once, in order, whatever valid/ready do; full throughput when ready."""
    from amaranth.lib import data

    from codesign.hw.slice import StreamSlice

    dut = StreamSlice(data.StructLayout({"x": 8}))
    rng = np.random.default_rng(seed)
    sent = list(range(1, 200))

    async def bench(ctx):
        got, k, cycles = [], 0, 0
        while len(got) < len(sent):
            stall_in = seed > 0 and rng.random() < 0.3
            stall_out = seed > 0 and rng.random() < 0.3
            ctx.set(dut.i.valid, int(k < len(sent) and not stall_in))
            ctx.set(dut.i.payload.x, sent[k] if k < len(sent) else 0)
            ctx.set(dut.o.ready, int(not stall_out))
            await ctx.delay(1e-9)
            took_in = ctx.get(dut.i.valid) and ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid) and not stall_out:
                got.append(ctx.get(dut.o.payload.x))
            await ctx.tick()
            k += int(took_in)
            cycles += 1
            assert cycles < 2000
        assert got == sent
        if seed == 0:
            assert cycles == len(sent) + 1  # one cycle of latency, one beat per cycle

    _run(dut, bench)


@pytest.mark.parametrize(
    ("weight_bits", "value_bits"), [(1, 3), (2, 3), (3, 5), (4, 4), (4, 9), (5, 4), (7, 5), (8, 6)]
)
def test_lut_multiply_multiplies_exactly(weight_bits: int, value_bits: int) -> None:
    """The LUT multiplier (radix-4 Booth) equals ``*`` on every operand pair, for even and odd
    weight widths (an odd one gets a sign copy for its last digit)."""
    from amaranth.hdl import Signal, signed
    from amaranth.sim import Simulator

    from codesign.hw.lanes import lut_multiply

    w, v = Signal(signed(weight_bits)), Signal(signed(value_bits))
    product = Signal(signed(weight_bits + value_bits))
    m = Module()
    m.d.comb += product.eq(lut_multiply(w, v))
    sim = Simulator(m)
    pairs = [
        (a, b)
        for a in range(-(1 << (weight_bits - 1)), 1 << (weight_bits - 1))
        for b in range(-(1 << (value_bits - 1)), 1 << (value_bits - 1))
    ]

    async def bench(ctx):
        for a, b in pairs:
            ctx.set(w, a)
            ctx.set(v, b)
            assert ctx.get(product) == a * b, (a, b)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize(
    ("weight_bits", "value_bits", "pieces"), [(8, 4, 2), (8, 4, 4), (6, 5, 3), (4, 6, 2)]
)
def test_serial_multiply_pieces_sum_to_the_product(weight_bits: int, value_bits: int, pieces: int) -> None:
    """The pieces of a digit-serial product (``--share-multipliers X:K``) add up to ``*`` for
    every operand pair, and each fits the piece width (one bit over a product's)."""
    from amaranth.hdl import Signal, signed
    from amaranth.sim import Simulator

    from codesign.hw.lanes import serial_multiply

    w, v = Signal(signed(weight_bits)), Signal(signed(value_bits))
    piece = Signal(range(pieces))
    out = Signal(signed(weight_bits + value_bits + 1))
    m = Module()
    m.d.comb += out.eq(serial_multiply(w, v, piece, pieces))
    sim = Simulator(m)

    async def bench(ctx):
        for a in range(-(1 << (weight_bits - 1)), 1 << (weight_bits - 1)):
            for b in range(-(1 << (value_bits - 1)), 1 << (value_bits - 1)):
                ctx.set(w, a)
                ctx.set(v, b)
                total = 0
                for k in range(pieces):
                    ctx.set(piece, k)
                    total += ctx.get(out)
                assert total == a * b, (a, b)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize(("kind", "depth"), [("fifo", 2), ("fifo", 4), ("fifo", 16), ("registers", 2)])
def test_credit_fifo_keeps_order_and_never_overfills(kind: str, depth: int) -> None:
    """Writers reserve a credit, write a few cycles later (or cancel); random back-pressure. The
    two-entry register queue (a once-per-sequence queue without its register slice) obeys the
    same contract: a write never finds it full, nothing is lost, repeated or reordered."""
    from amaranth.hdl import unsigned

    from codesign.hw.queue import CreditFIFO, RegisterQueue

    dut = CreditFIFO(unsigned(8), depth) if kind == "fifo" else RegisterQueue(unsigned(8))
    rng = np.random.default_rng(depth + (kind == "registers"))

    async def bench(ctx):
        pending: list[tuple[int, int | None]] = []  # (cycle to write, value or None = cancel)
        sent, got, cycle, value = [], [], 0, 0
        while len(got) < 60 and cycle < 5000:
            reserve = ctx.get(dut.credit) and rng.random() < 0.6
            due = [p for p in pending if p[0] == cycle]
            pending = [p for p in pending if p[0] != cycle]
            write = next((v for _, v in due if v is not None), None)
            cancel = any(v is None for _, v in due)
            ctx.set(dut.reserve, int(reserve))
            ctx.set(dut.w.valid, int(write is not None))
            ctx.set(dut.w.payload, write or 0)
            ctx.set(dut.cancel, int(cancel))
            ready = rng.random() < 0.5
            ctx.set(dut.r.ready, int(ready))
            if ready and ctx.get(dut.r.valid):
                got.append(ctx.get(dut.r.payload))
            if reserve:  # one write or cancel per cycle: keep the due cycles distinct
                at = max([cycle + int(rng.integers(1, 5)), *(p[0] + 1 for p in pending)])
                if rng.random() < 0.2:
                    pending.append((at, None))
                else:
                    value = (value + 1) % 256
                    sent.append(value)
                    pending.append((at, value))
            await ctx.tick()
            cycle += 1
        assert got == sent[: len(got)] and len(got) >= 60

    _run(dut, bench)


def test_register_queue_hands_an_entry_on_in_one_cycle() -> None:
    """An entry written to the empty register queue is at ``r`` the next cycle (its output is the
    register the serializer reads); the credits stop at two reservations and come back on pops."""
    from amaranth.hdl import unsigned

    from codesign.hw.queue import RegisterQueue

    dut = RegisterQueue(unsigned(8))

    async def bench(ctx):
        ctx.set(dut.r.ready, 0)
        for _ in range(2):
            assert ctx.get(dut.credit)
            ctx.set(dut.reserve, 1)
            await ctx.tick()
        ctx.set(dut.reserve, 0)
        assert not ctx.get(dut.credit)
        ctx.set(dut.w.valid, 1)
        ctx.set(dut.w.payload, 7)
        await ctx.tick()
        ctx.set(dut.w.payload, 9)
        assert ctx.get(dut.r.valid) and ctx.get(dut.r.payload) == 7
        await ctx.tick()
        ctx.set(dut.w.valid, 0)
        ctx.set(dut.r.ready, 1)
        assert ctx.get(dut.r.payload) == 7 and not ctx.get(dut.credit)
        await ctx.tick()
        assert ctx.get(dut.r.valid) and ctx.get(dut.r.payload) == 9 and ctx.get(dut.credit)
        await ctx.tick()
        assert not ctx.get(dut.r.valid)

    _run(dut, bench)


def test_registered_address_rom_reads_like_a_synchronous_port() -> None:
    """A LUT ROM behind a registered address (the UP5K's bias and parameter ROMs) gives, cycle
    for cycle, the words a synchronous read port gives: the word of the address presented with
    ``en`` from the next cycle on, held while ``en`` is low."""
    from codesign.hw.arrays import ArrayMemory
    from codesign.hw.plan import MemoryPlan

    plan = MemoryPlan("rom", 8, 3, 6, "weights", style="logic", rom=True)
    rng = np.random.default_rng(5)
    image = rng.integers(-32, 32, size=(8, 3)).tolist()
    m = Module()
    sync_rd = ArrayMemory(m, "a", plan, image).read_port()
    lean_rd = ArrayMemory(m, "b", plan, image).registered_address_port(m)
    addr, en = Signal(range(8)), Signal()
    m.d.comb += [sync_rd.addr.eq(addr), sync_rd.en.eq(en), lean_rd.addr.eq(addr), lean_rd.en.eq(en)]

    async def bench(ctx):
        expected = None
        for _ in range(200):
            a, e = int(rng.integers(8)), bool(rng.random() < 0.5)
            ctx.set(addr, a)
            ctx.set(en, e)
            await ctx.tick()
            if e:
                expected = image[a]
            if expected is not None:
                assert [ctx.get(lean_rd.data[i]) for i in range(3)] == expected
                assert [ctx.get(sync_rd.data[i]) for i in range(3)] == expected

    _run(m, bench)


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(2, 12),
    values=st.lists(st.integers(-(1 << 10), (1 << 10) - 1), min_size=1, max_size=5),
    zero=st.booleans(),
)
def test_sum_is_zero_without_a_carry_chain(width: int, values: list[int], zero: bool) -> None:
    """``dcls.sum_is_zero`` (carry-save to two terms, then ``A ^ B == (A | B) << 1``) equals
    ``sum == 0`` modulo ``2**width`` for one to five terms, zero sums made on purpose."""
    from codesign.hw.dcls import sum_is_zero

    bits = 11
    if zero and len(values) > 1:
        values = [*values[:-1], -sum(values[:-1])]
    values = [min(max(v, -(1 << (bits - 1))), (1 << (bits - 1)) - 1) for v in values]
    m = Module()
    terms = [Signal(signed(bits), name=f"t{n}") for n in range(len(values))]
    out = Signal()
    m.d.comb += out.eq(sum_is_zero(m, terms, width))

    async def bench(ctx):
        for t, v in zip(terms, values, strict=True):
            ctx.set(t, v)
        await ctx.delay(1e-9)
        assert ctx.get(out) == int(sum(values) % (1 << width) == 0), values

    _run(m, bench, clock=False)
