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
from amaranth.lib.wiring import In, Out

from codesign.hw.config import ConfigSignature
from codesign.hw.counters import CounterBank
from codesign.hw.front import MacFront
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits
from codesign.hw.queue import CreditFIFO
from codesign.hw.signature import ItemLayout, ResultLayout

__all__ = ["ReadoutEngine"]


class ReadoutEngine(wiring.Component):
    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        self.plan, self.engine = plan, e
        self.front = MacFront(plan, e, images)
        self.counters = CounterBank(plan, e.name)
        super().__init__(
            {
                "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
                "results": Out(stream.Signature(ResultLayout(e))),
                "config": In(ConfigSignature(plan)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        e = self.engine
        m.submodules.front = front = self.front
        wiring.connect(m, wiring.flipped(self.items), front.items)
        wiring.connect(m, wiring.flipped(self.config), front.config)
        s3 = front.slot
        finalize = Signal()
        m.d.comb += finalize.eq(s3.valid & s3.last)
        if "acc" in e.memories:  # per-step logits are kept and updated by events
            m.d.comb += [
                front.acc_write.addr.eq(s3.group),
                front.acc_write.en.eq(finalize),
                front.acc_write.data.eq(front.acc),
            ]
        (group_logit, group_lane), s4, finalize4, logits4 = self._argmax_tree(m, s3, finalize, front.acc)
        class_now = self._running_best(m, s4, finalize4, group_logit, group_lane)
        self._results_out(m, front, s4, finalize4, logits4, class_now)
        return m

    # ------------------------------------------------------------ argmax within a group
    def _argmax_tree(self, m: Module, s3, finalize, acc):
        """A balanced tree over the group's lanes, one registered level per cycle (on ties the
        lower lane wins); the slot, its flags and the logits travel beside it. A one-cycle tree
        was the ECP5's longest path from P = 4 on."""
        e = self.engine
        p, groups = e.lanes, e.groups
        last_lanes = e.size - (groups - 1) * p
        nodes = []
        for lane in range(p):
            exists = 1 if lane < last_lanes else (s3.group != groups - 1)
            nodes.append((exists, acc[lane], lane))
        slot, fin, logits = s3, finalize, acc
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
            logits_next = Signal.like(acc, name=f"logits_argmax_{level}")
            m.d.sync += [slot_next.eq(slot), fin_next.eq(fin), logits_next.eq(logits)]
            slot, fin, logits = slot_next, fin_next, logits_next
            nodes = paired
            level += 1
        return (nodes[0][1], nodes[0][2]), slot, fin, logits

    # ------------------------------------------------------------ argmax across groups
    def _running_best(self, m: Module, s4, finalize4, group_logit, group_lane):
        """The running comparison across groups, one stage after the tree: the class so far."""
        e = self.engine
        best_logit = Signal(signed(e.acc_bits))
        best_class = Signal(index_bits(e.size))
        take = Signal()
        class_now = Signal(index_bits(e.size))
        m.d.comb += [
            take.eq((s4.group == 0) | (group_logit > best_logit)),
            class_now.eq(Mux(take, s4.group * e.lanes + group_lane, best_class)),
        ]
        with m.If(finalize4 & take):
            m.d.sync += [best_logit.eq(group_logit), best_class.eq(class_now)]
        return class_now

    # ------------------------------------------------------------ results out
    def _results_out(self, m: Module, front: MacFront, s4, finalize4, logits4, class_now) -> None:
        """One result beat per class group into the queue (room reserved when the group started)."""
        e = self.engine
        beat = Signal(ResultLayout(e))
        for lane in range(e.lanes):
            m.d.comb += beat.logits[lane].eq(logits4[lane])
        m.d.comb += [
            beat.group.eq(s4.group),
            beat.final.eq(s4.step_last),
            beat.class_index.eq(class_now),
            beat.seq_end.eq(s4.seq_end),
        ]
        layout, plan = ResultLayout(e), e.memories["queue"]
        assert plan.width == layout.size, (plan.width, layout.size)  # the plan sized the queue right
        m.submodules.results = queue = CreditFIFO(layout, e.queue_depth, attrs=plan.attrs)
        m.d.comb += [
            queue.w.payload.eq(beat),
            queue.w.valid.eq(finalize4),
            queue.reserve.eq(front.starting),
            front.credit.eq(queue.credit),
        ]
        wiring.connect(m, queue.r, wiring.flipped(self.results))
