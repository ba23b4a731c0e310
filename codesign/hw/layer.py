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

from amaranth.hdl import Array, Module, Mux, Signal, Value, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.bundle.cells import CELLS
from codesign.hw.config import ConfigSignature
from codesign.hw.counters import CounterBank
from codesign.hw.events import EntryLayout, EventSerializer
from codesign.hw.front import MacFront, lane_reads, state_by_lane
from codesign.hw.issue import SlotLayout
from codesign.hw.plan import AcceleratorPlan, EnginePlan
from codesign.hw.queue import CreditFIFO, RegisterQueue
from codesign.hw.signature import ItemLayout, TraceLayout
from codesign.hw.slice import StreamSlice
from codesign.hw.update import make_update_unit, saturate

__all__ = ["LayerEngine", "delay", "popcount"]


def popcount(bits) -> object:
    return sum(bits[i] for i in range(len(bits)))


def delay(m: Module, value, cycles: int, name: str):
    """``value`` as it was ``cycles`` cycles ago (``value`` itself for 0)."""
    for k in range(cycles):
        reg = Signal.like(value, name=f"{name}_d{k + 1}") if isinstance(value, Signal) else None
        if reg is None:
            reg = Signal(Value.cast(value).shape(), name=f"{name}_d{k + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


class LayerEngine(wiring.Component):
    """One layer of the network (any cell kind), time-multiplexed over ``P`` lanes."""

    def __init__(
        self,
        plan: AcceleratorPlan,
        e: EnginePlan,
        images: dict[str, list[list[int]]] | None = None,
    ) -> None:
        self.plan, self.engine = plan, e
        self.front = MacFront(plan, e, images)
        self.value_bits = e.delta_bits if e.emit == "delta" else (e.pool_bits or e.output_bits)
        self.counters = CounterBank(plan, e.name)
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
                "events": Out(stream.Signature(ItemLayout(e.size, self.value_bits))),
                "config": In(ConfigSignature(plan)),
                "trace": Out(TraceLayout(e)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.front = front = self.front
        wiring.connect(m, wiring.flipped(self.items), front.items)
        wiring.connect(m, wiring.flipped(self.config), front.config)
        s4, finalize4, lane_results = self._update(m, front)
        entry, finalize4 = self._write_back(m, front, s4, finalize4, lane_results)
        self._events_out(m, front, entry, finalize4)
        return m

    # ------------------------------------------------------------ C3 update
    def _update(self, m: Module, front: MacFront):
        """One update unit per lane computes the new state from the accumulators, the parameters
        and the old state; its results are registered, so C4 (write-back, events, pooled sum)
        starts from flip-flops. The issue stage's pause between steps (``drain_cycles``) keeps
        the next step's reads of a group behind C4's write of it."""
        e = self.engine
        p, n_mat, n_fields = e.lanes, len(e.matrices), len(e.state_fields)
        s3 = front.slot
        finalize = Signal()
        m.d.comb += finalize.eq(s3.valid & s3.last)
        first = s3.seq_first
        if "acc" in e.memories:  # an event-driven layer keeps its sums for the next step
            m.d.comb += [
                front.acc_write.addr.eq(s3.group),
                front.acc_write.en.eq(finalize),
                front.acc_write.data.eq(front.acc),
            ]
        # a two-stage unit answers in C3b: what the engine keeps beside it waits as long
        late = e.update_latency - 1
        if e.shared_update:
            return self._shared_update(m, front, finalize, late)
        s4 = Signal(SlotLayout(e), name="slot_c4")
        finalize4 = Signal()
        m.d.sync += [s4.eq(delay(m, s3, late, "slot")), finalize4.eq(delay(m, finalize, late, "finalize"))]
        lane_regs = []
        for lane in range(p):
            unit = make_update_unit(e, self.plan.faults)
            m.submodules[f"update_{lane}"] = unit
            for k, name in enumerate(e.matrices):
                m.d.comb += unit.acc[name].eq(front.acc[lane * n_mat + k])
            for k, name in enumerate(e.params):
                m.d.comb += unit.params[name].eq(front.params[lane * len(e.params) + k])
            for k, name in enumerate(e.state_fields):
                m.d.comb += unit.old[name].eq(Mux(first, 0, front.state[lane * n_fields + k]))
            regs = {}
            for key in ("new", "old", "hold", "out", "gate", "saturated", "potential"):
                regs[key] = Signal.like(getattr(unit, key), name=f"{key}_c4_{lane}")
                kept = delay(m, unit.old, late, f"old_{lane}") if key == "old" else getattr(unit, key)
                m.d.sync += regs[key].eq(kept)
            if "pool" in e.memories:
                regs["old_pool"] = Signal(signed(e.pool_bits), name=f"old_pool_c4_{lane}")
                old_pool = Mux(first, 0, front.pool[lane])
                m.d.sync += regs["old_pool"].eq(delay(m, old_pool, late, f"old_pool_{lane}"))
            lane_regs.append(regs)
        results = [
            self._lane_results(m, lane, regs, ~s4.open[lane] if e.period else None)
            for lane, regs in enumerate(lane_regs)
        ]
        return s4, finalize4, results

    def _shared_update(self, m: Module, front: MacFront, finalize, late: int):
        """One update unit for the ``P`` lanes (``--share-updates on``): lane ``l`` of a group has
        its turn in the ``l``-th cycle after its sums are ready (C3 + l), when its inputs are
        picked and registered; the unit works on them in the next cycle (and ``late`` more), and
        the pooled sum and change event follow one cycle after the unit, into lane ``l``'s C4
        registers (``EnginePlan.shared_stages``: two stages, each cycle one adder or the unit, not
        both). C4 (write-back, entry, trace) follows the last lane, ``P - 1 + 2`` cycles later than
        with a unit per lane. The issue stage waits ``P - 1`` cycles after a group's last slot
        (``EnginePlan.update_gap``), so the sums (the lane array's registers), the state,
        parameters and pooled sums (the front end's held registers, or the block RAM's read of
        the lane's words in its turn, :func:`~codesign.hw.front.lane_reads`) stay this group's
        until the last lane has read them. The unit sees each lane's inputs exactly as a lane's
        own unit would: the same sums in the same order."""
        e = self.engine
        p = e.lanes
        s3 = front.slot
        turn, first, first_unit, serving, unit, by_turn = self._shared_inputs(m, front, finalize)
        lag = late + 1  # the unit's results follow the turn by its input register and its stages
        # the lane whose results the unit gives now
        done = delay(m, serving, lag, "update_serving")
        done_lane = delay(m, turn, lag, "update_turn")
        s4 = Signal(SlotLayout(e), name="slot_c4")
        finalize4 = Signal()
        c4 = lag + 1 + p - 1  # after the last lane's pooled sum and change (one cycle after the unit)
        m.d.sync += [s4.eq(delay(m, s3, c4, "slot")), finalize4.eq(delay(m, finalize, c4, "finalize"))]
        unit_regs = {
            key: getattr(unit, key) for key in ("new", "hold", "out", "gate", "saturated", "potential")
        }
        unit_regs["old"] = unit.old
        if late:  # the old state beside the unit's results, seen through its fields
            unit_regs["old"] = Signal.like(unit.old, name="old_late")
            m.d.comb += unit_regs["old"].eq(delay(m, unit.old, late, "old"))
        old_pool = None
        if "pool" in e.memories:  # the lane's pooled sum, read with its other inputs
            if "pool" in by_turn:  # on the read port in the unit's first cycle
                old_pool = delay(m, Mux(first_unit, 0, front.pool_lane[0]), lag, "old_pool")
            else:
                pool = Array(front.pool[lane] for lane in range(p))[turn]
                old_pool = delay(m, Mux(first, 0, pool), lag + 1, "old_pool")
        closed = None
        if e.period:  # the turn's lane is closed this step (su_open of the group's slot)
            open_held = Signal(p, name="open_held")
            with m.If(finalize):
                m.d.sync += open_held.eq(s3.open)
            closed = delay(m, ~Mux(turn == 0, s3.open, open_held).bit_select(turn, 1), lag, "closed")
        results = self._lane_results(m, "shared", unit_regs, closed, pooled=False)
        tail, done, done_lane = self._shared_tail(
            m, front, finalize, results, turn, lag, done, done_lane, old_pool
        )
        return s4, finalize4, self._shared_keep(m, tail, done, done_lane)

    def _shared_inputs(self, m: Module, front: MacFront, finalize):
        """The shared unit's turn (which lane it serves), and that lane's sums, parameters and
        old state picked into the unit's input registers."""
        e = self.engine
        p, n_mat, n_fields, n_par = e.lanes, len(e.matrices), len(e.state_fields), len(e.params)
        s3 = front.slot
        # which lane the unit serves: 0 in the group's C3, then 1 .. P-1 (``turn`` counts them)
        turn = Signal(range(p), name="update_turn")
        with m.If(finalize):
            m.d.sync += turn.eq(1)
        with m.Elif(turn != 0):
            m.d.sync += turn.eq(Mux(turn == p - 1, 0, turn + 1))
        first_held = Signal(name="seq_first_held")
        with m.If(finalize):
            m.d.sync += first_held.eq(s3.seq_first)
        first = Mux(turn == 0, s3.seq_first, first_held)
        serving = Signal(name="update_serving")
        m.d.comb += serving.eq(finalize | (turn != 0))
        unit = make_update_unit(e, self.plan.faults)
        m.submodules.update = unit
        # the turn's inputs, picked and registered: the unit works on them in the next cycle
        for k, name in enumerate(e.matrices):
            picked = Array(front.acc[lane * n_mat + k] for lane in range(p))[turn]
            m.d.sync += unit.acc[name].eq(picked)
        for k, name in enumerate(e.params):
            picked = Array(front.params[lane * n_par + k] for lane in range(p))[turn]
            m.d.sync += unit.params[name].eq(picked)
        # the lane's state and pooled sum read on its turn: on the read port a cycle later
        by_turn = lane_reads(self.plan, e)
        first_unit = delay(m, first, 1, "seq_first_unit")
        for k, name in enumerate(e.state_fields):
            if "state" in by_turn:
                m.d.comb += unit.old[name].eq(Mux(first_unit, 0, front.state_lane[k]))
            else:
                state = Array(front.state[lane * n_fields + k] for lane in range(p))[turn]
                m.d.sync += unit.old[name].eq(Mux(first, 0, state))
        return turn, first, first_unit, serving, unit, by_turn

    def _shared_tail(
        self, m: Module, front: MacFront, finalize, results, turn, lag, done, done_lane, old_pool
    ):
        """One cycle after the unit: the lane's state write (on the UP5K), pooled sum and change."""
        e = self.engine
        s3 = front.slot
        # one cycle after the unit, from its registered results: the state written to its memory
        # (on the UP5K), the pooled sum (one saturating adder, not P) and the change event (one
        # subtractor): what C4 needs of the lane
        tail = {}
        for key, value in results.items():
            if key == "kept":
                tail[key] = {f: delay(m, v, 1, f"kept_{f}") for f, v in value.items()}
            else:
                tail[key] = delay(m, value, 1, f"{key}_unit")
        done, done_lane = delay(m, done, 1, "update_done"), delay(m, done_lane, 1, "update_lane")
        if state_by_lane(self.plan, e):  # the state goes to its memory in the lane's tail cycle
            group_held = Signal.like(s3.group, name="group_held")
            with m.If(finalize):
                m.d.sync += group_held.eq(s3.group)
            group = delay(m, Mux(turn == 0, s3.group, group_held), lag + 1, "update_group")
            write = front.state_lane_write
            m.d.comb += [write.addr.eq(group), write.lane.eq(done_lane), write.en.eq(done)]
            m.d.comb += [write.data[k].eq(tail["kept"][f]) for k, f in enumerate(e.state_fields)]
            del tail["kept"]
        if old_pool is not None:
            pooled, pool_clipped = self._pool(m, "shared", old_pool + tail["out"])
            tail["pooled"] = pooled
            tail["saturated"] = Value.cast(tail["saturated"] | pool_clipped)
        if e.emit == "delta":  # its value and whether it is one, not the output and the one before
            tail["delta"] = Value.cast(tail["out"] - tail["old_out"])
            tail["differs"] = Value.cast(tail["out"] != tail["old_out"])
            del tail["old_out"]
        return tail, done, done_lane

    def _shared_keep(self, m: Module, tail: dict, done, done_lane) -> list[dict]:
        """Each lane's C4 registers, written on its turn only."""
        p = self.engine.lanes
        # kept per lane: the lane's registers are written on its turn only, so they hold for C4
        # and the folded writes after it (``MacFront._sliced_write``) until the next group's turn
        lane_results = []
        for lane in range(p):
            kept = {}
            for key, value in tail.items():
                if key == "kept":
                    kept[key] = {f: Signal.like(v, name=f"kept_{f}_c4_{lane}") for f, v in value.items()}
                    with m.If(done & (done_lane == lane)):
                        m.d.sync += [kept[key][f].eq(v) for f, v in value.items()]
                    continue
                kept[key] = Signal.like(value, name=f"{key}_c4_{lane}")
                with m.If(done & (done_lane == lane)):
                    m.d.sync += kept[key].eq(value)
            lane_results.append(kept)
        return lane_results

    def _lane_results(self, m: Module, name: str, regs: dict, closed, pooled: bool = True) -> dict:
        """One lane's write-back values from its update unit's outputs (``regs``): the kept state
        fields, its output and the one before, its pooled sum, whether a saturation clipped, its
        gate and potential. ``closed``: the selective walk closed the lane this step (it keeps its
        whole state)."""
        e = self.engine
        kind = CELLS[e.kind]
        hold = regs["hold"] if closed is None else regs["hold"] | closed
        kept = {f: Mux(hold, regs["old"][f], regs["new"][f]) for f in e.state_fields}
        old_out = Signal(signed(e.output_bits), name=f"old_out_{name}")
        out = Signal(signed(e.output_bits), name=f"out_{name}")
        m.d.comb += [old_out.eq(regs["old"][kind.output_field]), out.eq(Mux(hold, old_out, regs["out"]))]
        saturated = regs["saturated"] & ~hold if e.period else regs["saturated"]
        results = {
            "kept": kept,
            "out": out,
            "old_out": old_out,
            "gate": Value.cast(regs["gate"]),
            "potential": Value.cast(regs["potential"]),
        }
        if "pool" in e.memories and pooled:  # (a shared unit adds it one cycle later)
            total, pool_clipped = self._pool(m, name, regs["old_pool"] + out)
            results["pooled"] = total
            saturated = saturated | pool_clipped
        results["saturated"] = Value.cast(saturated)
        return results

    # ------------------------------------------------------------ C4 write-back
    def _write_back(self, m: Module, front: MacFront, s4, finalize4, lane_results):
        """Write the kept state (and pooled sum) back, build the group's entry and trace beat from
        each lane's results (:meth:`_lane_results`)."""
        e = self.engine
        p, n_fields = e.lanes, len(e.state_fields)
        kind = CELLS[e.kind]
        last_lanes = e.size - (e.groups - 1) * p
        pooled_sum = "pool" in e.memories
        entry = Signal(EntryLayout(p, e.groups, self.value_bits))
        changed = Signal(p)
        saturated = Signal(p)
        by_lane = state_by_lane(self.plan, e)  # written on the update unit's turns instead
        if not by_lane:
            m.d.comb += [front.state_write.addr.eq(s4.group), front.state_write.en.eq(finalize4)]
        if pooled_sum:
            m.d.comb += [front.pool_write.addr.eq(s4.group), front.pool_write.en.eq(finalize4)]
        trace = Signal(TraceLayout(e))
        for lane, results in enumerate(lane_results):
            valid = 1 if lane < last_lanes else (s4.group != e.groups - 1)
            for k, name in enumerate(e.state_fields if not by_lane else ()):
                m.d.comb += front.state_write.data[lane * n_fields + k].eq(results["kept"][name])
            out = results["out"]
            # shared unit: the change event was computed on the lane's turn
            differs = results["differs"] if "differs" in results else out != results["old_out"]
            delta = results["delta"] if "delta" in results else out - results["old_out"]
            lane_sat = results["saturated"]
            if pooled_sum:
                pooled = results["pooled"]
                m.d.comb += front.pool_write.data[lane].eq(pooled)
            m.d.comb += [
                changed[lane].eq(valid & differs),
                saturated[lane].eq(valid & lane_sat),
                trace.state[lane].eq(out),
                trace.gate[lane].eq(results["gate"]),
            ]
            if kind.potential_field is not None:
                m.d.comb += trace.potential[lane].eq(results["potential"])
            if e.emit == "delta":
                dropped = lane == 0 and self.plan.faults.active("event_dropped", e.index)
                m.d.comb += [
                    entry.mask[lane].eq(0 if dropped else changed[lane]),
                    entry.value[lane].eq(delta),
                ]
            else:
                final = pooled if pooled_sum else out
                m.d.comb += [
                    entry.mask[lane].eq(valid & s4.seq_end & (final != 0)),
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
            if e.period:  # padding lanes are closed in su_open
                self.counters.count(m, f"{e.name}_open_steps", popcount(s4.open))
        return entry, finalize4

    def _pool(self, m: Module, lane: int | str, total):
        """The saturating pooled sum of one lane (``(value, clipped)``)."""
        e = self.engine
        if self.plan.faults.active("sum_wraps", e.index):
            pooled = Signal(signed(e.pool_bits), name=f"pool_{lane}")
            m.d.comb += pooled.eq(total)
            return pooled, 0
        return saturate(m, total, e.pool_bits, f"pool_{lane}")

    # ------------------------------------------------------------ events out
    def _events_out(self, m: Module, front: MacFront, entry, finalize4) -> None:
        """Queue the group's entry (room reserved when the group started) and serialize it."""
        e = self.engine
        layout = EntryLayout(e.lanes, e.groups, self.value_bits)
        plan = e.memories["queue"]
        assert plan.width == layout.size, (plan.width, layout.size)  # the plan sized the queue right
        if e.queue_depth == RegisterQueue.depth:  # once per sequence: two entries in flip-flops
            m.submodules.entries = queue = RegisterQueue(layout)
        else:
            m.submodules.entries = queue = CreditFIFO(layout, e.queue_depth, attrs=plan.attrs)
        # a final vector is sent in the sequence's last step only (the entries of the steps before
        # were empty and unmarked: the serializer dropped them); only that step takes credits
        m.d.comb += [
            queue.w.payload.eq(entry),
            queue.w.valid.eq(finalize4 & (entry.seq_end if e.emit == "final" else 1)),
            queue.reserve.eq(front.starting),
            front.credit.eq(queue.credit),
        ]
        m.submodules.serializer = ser = EventSerializer(
            lanes=e.lanes, groups=e.groups, size=e.size, value_bits=self.value_bits
        )
        if isinstance(queue, RegisterQueue) or self.plan.target == "up5k":
            # its output is a register already; or on the UP5K, whose 30 MHz leave room for the
            # block RAM's read before the serializer's pick, and whose logic cells do not for a
            # slice's two copies of an entry (152 flip-flops in JapaneseVowels' layer 0 at P = 4)
            wiring.connect(m, queue.r, ser.entries)
        else:
            # a register slice: the serializer's pick (lowest changed lane, pop when it is the
            # last) straight from the FIFO's block RAM output was the ECP5's longest path at P = 4
            m.submodules.entry_slice = cut = StreamSlice(layout)
            wiring.connect(m, queue.r, cut.i)
            wiring.connect(m, cut.o, ser.entries)
        wiring.connect(m, ser.items, wiring.flipped(self.events))
