"""A recurrent layer as an engine: issue stage, lane array, update units, state in memories.

Pipeline (one slot per cycle; ``docs/accelerator.md`` has the cycle model)::

    C0 issue      the issue stage picks (group g, item s) and reads the item memory; the slot
                  is registered
    C1 fetch      read the weight word of the item's input (and, on a group's first slot, the
                  biases, or the accumulators an event-driven layer keeps)
    C2 operands   the lane array registers the weight word, the value and the seeds
    C2a multiply  the lane array registers weight x value
    C2b add       the lane array accumulates; on a group's last slot read the group's state,
                  parameters and pooled sum
    C3 update     one update unit per lane, its results registered; kept accumulators written
    C4 write-back write state (and pooled sum) back; the group's entry (events or final vector)
                  goes to the event FIFO; trace beat

State, accumulators, pooled sums, weights and biases live in memories addressed by group: nothing
grows as a ``d``-wide register file or multiplexer. A sequence's first step reads its state as 0
(no clearing pass).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory
from codesign.hw.config import ConfigWriteLayout, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.events import EntryLayout, EventSerializer
from codesign.hw.issue import IssueStage, SlotLayout
from codesign.hw.lanes import LaneArray
from codesign.hw.plan import AcceleratorPlan, EnginePlan
from codesign.hw.signature import ItemLayout, TraceLayout
from codesign.hw.slice import StreamSlice
from codesign.hw.update import make_update_unit, saturate

__all__ = ["ENTRY_FIFO_DEPTH", "LayerEngine", "popcount"]

ENTRY_FIFO_DEPTH = 16
"""Entries a group may reserve ahead. A group reserves one when it starts (C0) and returns it when
the serializer takes the entry, about 10 cycles later through the pipeline; with fewer credits
than that, groups of one or two slots (sparse steps) wait for credit (8 cost 5 % at P = 1)."""


def popcount(bits) -> object:
    return sum(bits[i] for i in range(len(bits)))


class LayerEngine(wiring.Component):
    """One layer of the network (any cell kind), time-multiplexed over ``P`` lanes."""

    def __init__(
        self,
        plan: AcceleratorPlan,
        e: EnginePlan,
        images: dict[str, list[list[int]]] | None = None,
    ) -> None:
        self.plan, self.engine = plan, e
        self.images = images or {}
        self.issue = IssueStage(
            e, plan.counter_bits, lose_stalled=plan.faults.active("stalled_beat_lost", e.index)
        )
        value_bits = e.delta_bits if e.emit == "delta" else (e.pool_bits or e.output_bits)
        self.value_bits = value_bits
        names = [f"{e.name}_macs", f"{e.name}_events", f"{e.name}_saturations"]
        for key, mem in e.memories.items():
            if key not in ("items", "dcls_taps", "dcls_zbuf", "dcls_lists", "dcls_counts"):
                names += [f"{mem.name}_reads", f"{mem.name}_writes"]
        self.counters = CounterBank("", names, plan.counter_bits)
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
                "events": Out(stream.Signature(ItemLayout(e.size, value_bits))),
                "config": In(ConfigWriteLayout(plan)),
                "trace": Out(TraceLayout(e)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        p, n_mat, groups = e.lanes, len(e.matrices), e.groups

        front = MacFront(m, self, e, self.images, self.counters)
        issue, lanes, s3 = front.issue, front.lanes, front.s3
        params, state, state_wr = front.params, front.state, front.state_wr
        acc_wr, pool, pool_wr, last_lanes = front.acc_wr, front.pool, front.pool_wr, front.last_lanes

        # ------------------------------------------------------------ C3 update
        # One update unit per lane computes the new state from the accumulators, the parameters
        # and the old state; its results are registered, so C4 (write-back, events, pooled sum)
        # starts from flip-flops. The issue stage's pause between steps (``drain_cycles``) keeps
        # the next step's reads of a group behind C4's write of it.
        finalize = Signal()
        m.d.comb += finalize.eq(s3.valid & s3.last)
        first = s3.seq_first
        n_fields = len(e.state_fields)
        if acc_wr is not None:
            m.d.comb += [acc_wr.addr.eq(s3.group), acc_wr.en.eq(finalize)]
            for i in range(p * n_mat):
                m.d.comb += acc_wr.data[i].eq(lanes.acc[i])
        s4 = Signal(SlotLayout(e), name="slot_c4")
        finalize4 = Signal()
        m.d.sync += [s4.eq(s3), finalize4.eq(finalize)]
        lane_regs = []
        for lane in range(p):
            unit = make_update_unit(e, self.plan.faults)
            m.submodules[f"update_{lane}"] = unit
            for k, name in enumerate(e.matrices):
                m.d.comb += unit.acc[name].eq(lanes.acc[lane * n_mat + k])
            for k, name in enumerate(e.params):
                m.d.comb += unit.params[name].eq(params[lane * len(e.params) + k])
            for k, name in enumerate(e.state_fields):
                m.d.comb += unit.old[name].eq(Mux(first, 0, state[lane * n_fields + k]))
            regs = {
                "new": Signal.like(unit.new, name=f"new_c4_{lane}"),
                "old": Signal.like(unit.old, name=f"old_c4_{lane}"),
                "hold": Signal(name=f"hold_c4_{lane}"),
                "out": Signal.like(unit.out, name=f"out_c4_{lane}"),
                "gate": Signal.like(unit.gate, name=f"gate_c4_{lane}"),
                "saturated": Signal(name=f"saturated_c4_{lane}"),
                "potential": Signal.like(unit.potential, name=f"potential_c4_{lane}"),
            }
            m.d.sync += [
                regs["new"].eq(unit.new),
                regs["old"].eq(unit.old),
                regs["hold"].eq(unit.hold),
                regs["out"].eq(unit.out),
                regs["gate"].eq(unit.gate),
                regs["saturated"].eq(unit.saturated),
                regs["potential"].eq(unit.potential),
            ]
            if pool_wr is not None:
                regs["old_pool"] = Signal(signed(e.pool_bits), name=f"old_pool_c4_{lane}")
                m.d.sync += regs["old_pool"].eq(Mux(first, 0, pool[lane]))
            lane_regs.append(regs)

        # ------------------------------------------------------------ C4 write-back
        lane_valid = Signal(p)
        for lane in range(p):
            exists = 1 if lane < last_lanes else (s4.group != groups - 1)
            m.d.comb += lane_valid[lane].eq(exists)
        entry = Signal(EntryLayout(p, groups, self.value_bits))
        changed = Signal(p)
        saturated = Signal(p)
        m.d.comb += [state_wr.addr.eq(s4.group), state_wr.en.eq(finalize4)]
        if pool_wr is not None:
            m.d.comb += [pool_wr.addr.eq(s4.group), pool_wr.en.eq(finalize4)]
        trace = Signal(TraceLayout(e))
        for lane, regs in enumerate(lane_regs):
            hold = regs["hold"]
            for k, name in enumerate(e.state_fields):
                kept = Mux(hold, regs["old"][name], regs["new"][name])
                m.d.comb += state_wr.data[lane * n_fields + k].eq(kept)
            old_out = Signal(signed(e.output_bits), name=f"old_out_{lane}")
            m.d.comb += old_out.eq(regs["old"].d[0] if e.kind == "hsru" else regs["old"].h)
            out = Signal(signed(e.output_bits), name=f"out_{lane}")
            m.d.comb += out.eq(Mux(hold, old_out, regs["out"]))
            lane_sat = regs["saturated"]
            if pool_wr is not None:
                if self.plan.faults.active("sum_wraps", e.index):
                    pooled = Signal(signed(e.pool_bits), name=f"pool_{lane}")
                    m.d.comb += pooled.eq(regs["old_pool"] + out)
                    pool_clipped = 0
                else:
                    pooled, pool_clipped = saturate(m, regs["old_pool"] + out, e.pool_bits, f"pool_{lane}")
                m.d.comb += pool_wr.data[lane].eq(pooled)
                lane_sat = lane_sat | pool_clipped
            m.d.comb += [
                changed[lane].eq(lane_valid[lane] & (out != old_out)),
                saturated[lane].eq(lane_valid[lane] & lane_sat),
                trace.state[lane].eq(out),
                trace.gate[lane].eq(regs["gate"]),
            ]
            if e.kind == "hsru":
                m.d.comb += trace.potential[lane].eq(regs["potential"])
            if e.emit == "delta":
                dropped = lane == 0 and self.plan.faults.active("event_dropped", e.index)
                m.d.comb += [
                    entry.mask[lane].eq(0 if dropped else changed[lane]),
                    entry.value[lane].eq(out - old_out),
                ]
            else:
                final = pooled if pool_wr is not None else out
                m.d.comb += [
                    entry.mask[lane].eq(lane_valid[lane] & s4.seq_end & (final != 0)),
                    entry.value[lane].eq(final),
                ]
        m.d.comb += [
            entry.group.eq(s4.group),
            entry.marker.eq(s4.step_last & (s4.seq_end if e.emit == "final" else 1)),
            entry.seq_end.eq(s4.seq_end),
            trace.valid.eq(finalize4),
            trace.group.eq(s4.group),
            trace.step_end.eq(s4.step_last),
            trace.seq_end.eq(s4.seq_end),
        ]
        m.d.sync += self.trace.eq(trace)
        with m.If(finalize4):
            self.counters.count(m, f"{e.name}_events", popcount(changed))
            self.counters.count(m, f"{e.name}_saturations", popcount(saturated))

        # ------------------------------------------------------------ events out
        m.submodules.entries = fifo = SyncFIFOBuffered(
            width=len(Cat(entry.as_value())), depth=ENTRY_FIFO_DEPTH
        )
        m.d.comb += [fifo.w_data.eq(entry.as_value()), fifo.w_en.eq(finalize4)]
        m.submodules.serializer = ser = EventSerializer(
            lanes=p, groups=groups, size=e.size, value_bits=self.value_bits
        )
        # a register slice: the serializer's pick (lowest changed lane, pop when it is the last)
        # straight from the FIFO's block RAM output was the ECP5's longest path at P = 4
        m.submodules.entry_slice = cut = StreamSlice(EntryLayout(p, groups, self.value_bits))
        m.d.comb += [
            cut.i.payload.eq(fifo.r_data),
            cut.i.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(cut.i.ready),
        ]
        wiring.connect(m, cut.o, ser.entries)
        wiring.connect(m, ser.items, wiring.flipped(self.events))
        reserved = Signal(range(ENTRY_FIFO_DEPTH + 2))
        popped = fifo.r_en & fifo.r_rdy
        m.d.sync += reserved.eq(reserved + issue.starting - popped)
        m.d.comb += issue.credit.eq(reserved < ENTRY_FIFO_DEPTH)
        return m


class MacFront:
    """Stages C0-C2 of an engine (issue, fetch, MAC), shared by the layers and the readout.

    Builds the issue stage, the weight/bias (and kept-accumulator) memories with their
    configuration write ports, the lane array and the reads the update stage needs; ``s3`` is
    the slot as it reaches C3; ``params``, ``state`` and ``pool`` are the group's words as they
    reach C3 (registered), ``state_wr``, ``acc_wr`` and ``pool_wr`` the write ports.
    """

    def __init__(self, m: Module, owner, e: EnginePlan, images: dict, counters: CounterBank) -> None:
        self.__dict__.update(_build_front(m, owner, e, images, counters))


def _build_front(m, owner, e, images, counters):
    self = owner
    self_counters = counters
    p, n_mat, groups = e.lanes, len(e.matrices), e.groups
    mems = e.memories
    m.submodules.issue = issue = self.issue
    wiring.connect(m, wiring.flipped(self.items), issue.items)
    # the slot is registered once more before the fetch: the item memory's output through the
    # weight address adder into the weight memory was the ECP5's longest path at P = 2
    slot = Signal(SlotLayout(e), name="slot_c1")
    m.d.sync += slot.eq(issue.slot)

    # ------------------------------------------------------------ memories
    weights = ArrayMemory(m, "weights", mems["weights"], images.get(mems["weights"].name))
    bias = ArrayMemory(m, "bias", mems["bias"], images.get(mems["bias"].name))
    w_rd, b_rd = weights.read_port(), bias.read_port()
    for mem, key in ((weights, "weights"), (bias, "bias")):
        port = mem.write_port(granular=True)
        drive_config_write(m, port, self.config, mems[key])
        count_memory(m, self_counters, mems[key].name, [w_rd if key == "weights" else b_rd], [port])
    params_rd = None
    if "params" in mems:
        params = ArrayMemory(m, "params", mems["params"], images.get(mems["params"].name))
        params_rd = params.read_port()
        port = params.write_port(granular=True)
        drive_config_write(m, port, self.config, mems["params"])
        count_memory(m, self_counters, mems["params"].name, [params_rd], [port])
    state_rd = state_wr = None
    if "state" in mems:
        state = ArrayMemory(m, "state", mems["state"])
        state_rd, state_wr = state.read_port(), state.write_port()
        count_memory(m, self_counters, mems["state"].name, [state_rd], [state_wr])
    acc_rd = acc_wr = None
    if "acc" in mems:
        accm = ArrayMemory(m, "acc", mems["acc"])
        acc_rd, acc_wr = accm.read_port(), accm.write_port()
        count_memory(m, self_counters, mems["acc"].name, [acc_rd], [acc_wr])
    pool_rd = pool_wr = None
    if "pool" in mems:
        pool = ArrayMemory(m, "pool", mems["pool"])
        pool_rd, pool_wr = pool.read_port(), pool.write_port()
        count_memory(m, self_counters, mems["pool"].name, [pool_rd], [pool_wr])
    for port in (w_rd, b_rd, params_rd, state_rd, acc_rd, pool_rd):
        if port is not None:
            m.d.comb += port.en.eq(0)

    # ------------------------------------------------------------ C1 fetch
    m.d.comb += [w_rd.addr.eq(slot.base + slot.index), b_rd.addr.eq(slot.group)]
    with m.If(slot.valid & ~slot.empty):
        m.d.comb += w_rd.en.eq(1)
    use_acc = Signal()
    m.d.comb += use_acc.eq(~slot.seq_first if acc_rd is not None else 0)
    with m.If(slot.valid & slot.first):
        if acc_rd is None:
            m.d.comb += b_rd.en.eq(1)
        else:
            with m.If(use_acc):
                m.d.comb += [acc_rd.en.eq(1), acc_rd.addr.eq(slot.group)]
            with m.Else():
                m.d.comb += b_rd.en.eq(1)
    s2 = Signal(SlotLayout(e), name="slot_c2")
    use_acc2 = Signal()
    m.d.sync += [s2.eq(slot), use_acc2.eq(use_acc)]

    # ------------------------------------------------------------ C2 MAC
    m.submodules.lanes = lanes = LaneArray(
        lanes=p, matrices=n_mat, weight_bits=e.weight_bits, value_bits=e.item_bits, acc_bits=e.acc_bits
    )
    m.d.comb += [
        lanes.valid.eq(s2.valid),
        lanes.first.eq(s2.first),
        lanes.value.eq(s2.value),
        # a biases-only slot does not read the weights: multiply 0 by 0, not by whatever the
        # read register holds (never loaded after power-up: X in a 4-state simulator)
        lanes.weights.eq(Mux(s2.empty, 0, w_rd.data.as_value())),
    ]
    no_bias = owner.plan.faults.active("readout_bias_ignored", e.index)
    for i in range(p * n_mat):
        bias_seed = 0 if no_bias else b_rd.data[i]
        seed = bias_seed if acc_rd is None else Mux(use_acc2, acc_rd.data[i], bias_seed)
        m.d.comb += lanes.seeds[i].eq(seed)
    last_lanes = e.size - (groups - 1) * p
    valid_lanes = Mux(s2.group == groups - 1, last_lanes, p) if last_lanes != p else p
    with m.If(s2.valid & ~s2.empty & (s2.value != 0)):
        self_counters.count(m, f"{e.name}_macs", valid_lanes * n_mat)
    # the lane array registers its operands in C2, multiplies in C2a and accumulates in C2b; a
    # group's last slot reads the update stage's state, parameters and pooled sum in C2a and
    # registers them in C2b, so they reach C3 with the sums and from flip-flops (a block RAM's
    # clock-to-output delay is not on the update stage's path)
    s2a = Signal(SlotLayout(e), name="slot_c2a")
    s2b = Signal(SlotLayout(e), name="slot_c2b")
    m.d.sync += [s2a.eq(s2), s2b.eq(s2a)]
    finals = [port for port in (params_rd, state_rd, pool_rd) if port is not None]
    with m.If(s2a.valid & s2a.last):
        for port in finals:
            m.d.comb += [port.en.eq(1), port.addr.eq(s2a.group)]
    held = {}
    for key, port in (("params", params_rd), ("state", state_rd), ("pool", pool_rd)):
        if port is not None:
            held[key] = Signal.like(port.data, name=f"{key}_c3")
            m.d.sync += held[key].eq(port.data)
    s3 = Signal(SlotLayout(e), name="slot_c3")
    m.d.sync += s3.eq(s2b)

    return dict(
        issue=issue,
        lanes=lanes,
        s3=s3,
        params=held.get("params"),
        state=held.get("state"),
        state_wr=state_wr,
        acc_wr=acc_wr,
        pool=held.get("pool"),
        pool_wr=pool_wr,
        last_lanes=last_lanes,
    )
