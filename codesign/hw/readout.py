"""The readout: a linear layer over the last layer's output, then argmax.

It is an engine like the layers (same issue stage, lane array and memories; lanes serve classes):

* ``pooling: last`` / ``sum``: the last layer sends, at the end of a sequence, its final vector
  (``h_T`` or the saturating pooled sum) as items; the readout computes ``W r + b`` from the
  biases over the non-zero entries, once per sequence.
* ``per_step``: the last layer's change events update logits kept in a memory
  (``logits_t = logits_{t-1} + W[:, i] * delta``), so each step costs its events, not ``d``.

Each class group's logits leave as one result beat; the running argmax (lowest index on ties)
rides on the final beat.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from codesign.hw.config import ConfigWriteLayout
from codesign.hw.counters import CounterBank
from codesign.hw.issue import IssueStage
from codesign.hw.layer import ENTRY_FIFO_DEPTH, MacFront
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.signature import ItemLayout, ResultLayout

__all__ = ["ReadoutEngine"]


class ReadoutEngine(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        self.plan, self.engine = plan, e
        self.images = images or {}
        self.issue = IssueStage(e, plan.counter_bits)
        names = [f"{e.name}_macs"]
        for key, mem in e.memories.items():
            if key != "items":
                names += [f"{mem.name}_reads", f"{mem.name}_writes"]
        self.counters = CounterBank("", names, plan.counter_bits)
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
                "results": Out(stream.Signature(ResultLayout(e))),
                "config": In(ConfigWriteLayout(plan)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        p, groups = e.lanes, e.groups
        front = MacFront(m, self, e, self.images, self.counters)
        lanes, s3, acc_wr = front.lanes, front.s3, front.acc_wr
        finalize = Signal()
        m.d.comb += finalize.eq(s3.valid & s3.last)
        if acc_wr is not None:
            m.d.comb += [acc_wr.addr.eq(s3.group), acc_wr.en.eq(finalize)]
            for i in range(p):
                m.d.comb += acc_wr.data[i].eq(lanes.acc[i])

        # argmax over the group's lanes: a balanced tree, one registered level per cycle (on
        # ties the lower lane wins); the slot, its flags and the logits travel beside it. A
        # one-cycle tree was the ECP5's longest path from P = 4 on.
        last_lanes = front.last_lanes
        nodes = []
        for lane in range(p):
            exists = 1 if lane < last_lanes else (s3.group != groups - 1)
            nodes.append((exists, lanes.acc[lane], lane))
        slot, fin, logits = s3, finalize, lanes.acc
        level = 0
        while len(nodes) > 1 or level == 0:
            paired = []
            for k in range(0, len(nodes), 2):
                valid = Signal(name=f"argmax_{level}_{k // 2}_valid")
                logit = Signal(signed(e.acc_bits), name=f"argmax_{level}_{k // 2}_logit")
                lane = Signal(range(p), name=f"argmax_{level}_{k // 2}_lane")
                left = nodes[k]
                if k + 1 < len(nodes):
                    right = nodes[k + 1]
                    take_right = right[0] & (~Mux(left[0], 1, 0) | (right[1] > left[1]))
                    m.d.sync += [
                        valid.eq(Mux(left[0], 1, 0) | right[0]),
                        logit.eq(Mux(take_right, right[1], left[1])),
                        lane.eq(Mux(take_right, right[2], left[2])),
                    ]
                else:  # an odd node (or P = 1) waits a cycle with the others
                    m.d.sync += [valid.eq(left[0]), logit.eq(left[1]), lane.eq(left[2])]
                paired.append((valid, logit, lane))
            slot_next = Signal.like(s3, name=f"slot_argmax_{level}")
            fin_next = Signal(name=f"finalize_argmax_{level}")
            logits_next = Signal.like(lanes.acc, name=f"logits_argmax_{level}")
            m.d.sync += [slot_next.eq(slot), fin_next.eq(fin), logits_next.eq(logits)]
            slot, fin, logits = slot_next, fin_next, logits_next
            nodes = paired
            level += 1
        # the running comparison across groups, one stage after the tree
        group_logit, group_lane = nodes[0][1], nodes[0][2]
        logits4, s4, finalize4 = logits, slot, fin
        best_logit = Signal(signed(e.acc_bits))
        best_class = Signal(index_bits(e.size))
        take = Signal()
        class_now = Signal(index_bits(e.size))
        m.d.comb += [
            take.eq((s4.group == 0) | (group_logit > best_logit)),
            class_now.eq(Mux(take, s4.group * p + group_lane, best_class)),
        ]
        with m.If(finalize4 & take):
            m.d.sync += [best_logit.eq(group_logit), best_class.eq(class_now)]

        beat = Signal(ResultLayout(e))
        for lane in range(p):
            m.d.comb += beat.logits[lane].eq(logits4[lane])
        m.d.comb += [
            beat.group.eq(s4.group),
            beat.final.eq(s4.step_last),
            beat.class_index.eq(class_now),
            beat.seq_end.eq(s4.seq_end),
        ]
        m.submodules.results = fifo = SyncFIFOBuffered(width=len(beat.as_value()), depth=ENTRY_FIFO_DEPTH)
        m.d.comb += [fifo.w_data.eq(beat.as_value()), fifo.w_en.eq(finalize4)]
        m.d.comb += [
            self.results.payload.eq(fifo.r_data),
            self.results.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.results.ready),
        ]
        reserved = Signal(range(ENTRY_FIFO_DEPTH + 2))
        popped = fifo.r_en & fifo.r_rdy
        m.d.sync += reserved.eq(reserved + front.issue.starting - popped)
        m.d.comb += front.issue.credit.eq(reserved < ENTRY_FIFO_DEPTH)
        return m
