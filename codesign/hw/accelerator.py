"""The event-driven, lane-multiplexed accelerator for one bundle.

Datapath (docs/integer-semantics.md), three pipeline stages::

    issue      pick the next non-zero input of the current lane group (priority encoder over
               the remaining mask), present its memory address and register its value
    accumulate lane l: cand_acc += Wc * x, thr_acc += Wb * x (seeded with the biases on a
               group's first slot); a group with no non-zero input still issues one slot
               (biases only)
    finalize   the cycle after a group's last slot: gate |c| >= |b|, sign (sign(0) = +1),
               h <- sat(eps*h + s*alpha) if gated, written into the state registers

The issue stage never waits for the other two, so a step costs ``ceil(d/P) * max(nnz, 1)`` issue
cycles and consecutive steps are back to back (the floor is ``ceil(d/P) * nnz``). After the step
flagged ``last`` the pipeline drains, and the same three stages compute the readout over class
groups, skipping neurons whose state is 0; finalize then stores the logits and folds them into a
running argmax (ties keep the lower index). The result beat is offered on ``results`` and the
state is cleared for the next sequence, which may start before the result has been accepted.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory

from codesign.bundle import Bundle, SpineBundle, spine_view
from codesign.hw.memories import ceil_div, memory_images
from codesign.hw.signature import AcceleratorSignature

__all__ = ["Accelerator"]


def _one_hot_select(one_hot, values):
    """The value whose ``one_hot`` bit is set (0 if none is), as a balanced AND-OR tree.

    Signed values are sign-extended by the ORs. Written as expressions on purpose: Amaranth turns
    them into continuous ``assign``s, which every simulator evaluates at time 0, whereas a ``case``
    in an ``always @*`` block is only evaluated once one of its inputs changes (Icarus under
    cocotb leaves it X until then).
    """
    terms = [Mux(bit, value, 0) for bit, value in zip(one_hot, values, strict=True)]
    while len(terms) > 1:
        terms = [a | b for a, b in zip(terms[0::2], terms[1::2], strict=False)] + terms[len(terms) & ~1 :]
    return terms[0]


def _lowest_set_bit(m: Module, mask: Signal) -> tuple[Signal, Signal]:
    """Priority encoder: (one-hot of the lowest set bit of ``mask``, its index); both 0 if none."""
    width = len(mask)
    one_hot = Signal(width, name=f"{mask.name}_lowest")
    index = Signal(max(1, (width - 1).bit_length()), name=f"{mask.name}_index")
    m.d.comb += one_hot.eq(mask & (~mask + 1))
    for b in range(len(index)):
        bits = [one_hot[i] for i in range(width) if (i >> b) & 1]
        if bits:
            m.d.comb += index[b].eq(Cat(*bits).any())
    return one_hot, index


class Accelerator(wiring.Component):
    """Binary-gated recurrent layer + linear readout + argmax for one bundle.

    Parameters
    ----------
    bundle : :class:`codesign.bundle.Bundle`
        The deployed network; its weights initialise the on-chip memories.
    lanes : int
        Parallel lanes ``P`` (``1 <= P <= d``): neurons are processed in groups of ``P``.
    counter_bits : int
        Width of the observability counters.

    Interface attributes
    --------------------
    See :class:`codesign.hw.AcceleratorSignature` (``steps``, ``results``, ``state``, ``gate``,
    ``step_done``, ``cycle_count``, ``event_count``, ``mac_count``).

    Raises
    ------
    ValueError
        If ``lanes`` is outside ``1..d`` (the message names the value and the range).
    """

    def __init__(self, bundle: Bundle | SpineBundle, *, lanes: int = 1, counter_bits: int = 32) -> None:
        bundle = spine_view(bundle, consumer="the RTL generator")
        d = bundle.net.hidden_size
        if not isinstance(lanes, int) or isinstance(lanes, bool) or not 1 <= lanes <= d:
            self._MustUse__silence = True  # never built: no "created but never used" warning
            raise ValueError(f"lanes must be an integer in 1..{d} (the hidden size), not {lanes!r}")
        self._bundle = bundle
        self._lanes = lanes
        manifest = bundle.manifest
        fmt = manifest.formats
        super().__init__(
            AcceleratorSignature(
                inputs=bundle.net.input_size,
                input_bits=fmt.input.bits,
                hidden=d,
                state_bits=fmt.state.bits,
                classes=bundle.net.num_classes,
                logit_bits=manifest.logit_bits,
                counter_bits=counter_bits,
            )
        )

    @property
    def bundle(self) -> Bundle:
        return self._bundle

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def groups(self) -> int:
        """Neuron groups per step, ``ceil(d / lanes)``."""
        return ceil_div(self._bundle.net.hidden_size, self._lanes)

    @property
    def class_groups(self) -> int:
        """Class groups of the readout, ``ceil(C / lanes)``."""
        return ceil_div(self._bundle.net.num_classes, self._lanes)

    def elaborate(self, platform):
        m = Module()
        bundle, lanes = self._bundle, self._lanes
        manifest, fmt = bundle.manifest, bundle.manifest.formats
        d, n_in, n_cls = bundle.net.hidden_size, bundle.net.input_size, bundle.net.num_classes
        eps = bundle.net.eps
        groups, class_groups = self.groups, self.class_groups
        acc_bits, logit_bits = manifest.accumulator_bits, manifest.logit_bits
        state_bits = fmt.state.bits
        state_min, state_max = -(1 << (state_bits - 1)), (1 << (state_bits - 1)) - 1

        # ---------------------------------------------------------------- memories
        images = memory_images(bundle, lanes)
        gate_word = data.ArrayLayout(
            data.StructLayout({"cand": signed(fmt.weight.bits), "thr": signed(fmt.weight.bits)}), lanes
        )
        param_word = data.ArrayLayout(
            data.StructLayout(
                {
                    "cand_bias": signed(fmt.bias.bits),
                    "thr_bias": signed(fmt.bias.bits),
                    "alpha": signed(fmt.alpha.bits),
                }
            ),
            lanes,
        )
        m.submodules.gate_weights = gate_weights = Memory(
            shape=gate_word, depth=groups * n_in, init=images.gate_weights
        )
        m.submodules.neuron_params = neuron_params = Memory(
            shape=param_word, depth=groups, init=images.neuron_params
        )
        m.submodules.readout_weights = readout_weights = Memory(
            shape=data.ArrayLayout(signed(fmt.readout_weight.bits), lanes),
            depth=class_groups * d,
            init=images.readout_weights,
        )
        m.submodules.readout_bias = readout_bias = Memory(
            shape=data.ArrayLayout(signed(fmt.readout_bias.bits), lanes),
            depth=class_groups,
            init=images.readout_bias,
        )
        gate_rd = gate_weights.read_port()
        params_rd = neuron_params.read_port()
        readout_rd = readout_weights.read_port()
        readout_bias_rd = readout_bias.read_port()

        # ---------------------------------------------------------------- architectural state
        state = [Signal(signed(state_bits), name=f"state_{i}") for i in range(d)]
        gate = Signal(d)
        logits = [Signal(signed(logit_bits), name=f"logit_{k}") for k in range(n_cls)]
        best_logit = Signal(signed(logit_bits))
        best_class = Signal(len(self.results.payload.class_index))
        m.d.comb += [self.state[i].eq(state[i]) for i in range(d)]
        m.d.comb += [
            self.gate.eq(gate),
            self.results.payload.class_index.eq(best_class),
        ]
        m.d.comb += [self.results.payload.logits[k].eq(logits[k]) for k in range(n_cls)]

        # ---------------------------------------------------------------- issue stage
        mask_bits = max(n_in, d)
        step_inputs = Signal(data.ArrayLayout(signed(fmt.input.bits), n_in))
        step_nonzero = Signal(n_in)  # non-zero inputs of the current step
        step_is_last = Signal()  # the current step ends its sequence
        pending = Signal(mask_bits)  # inputs (or states) not yet issued for this group
        group = Signal(range(max(groups, class_groups)))
        weight_base = Signal(range(max(groups * n_in, class_groups * d) + 1))
        group_first = Signal(init=1)
        state_nonzero = Signal(d)
        m.d.comb += state_nonzero.eq(Cat(*(state[i] != 0 for i in range(d))))

        slot_one_hot, slot_index = _lowest_set_bit(m, pending)
        slot_final = Signal()  # this slot is the group's last
        m.d.comb += slot_final.eq((pending & ~slot_one_hot) == 0)
        operand_shape = signed(max(fmt.input.bits, state_bits))
        input_value = Signal(operand_shape)  # the selected input (layer) or neuron state (readout);
        state_value = Signal(operand_shape)  # 0 on a biases-only slot (a group without non-zero inputs)
        m.d.comb += [
            input_value.eq(_one_hot_select(slot_one_hot[:n_in], [step_inputs[j] for j in range(n_in)])),
            state_value.eq(_one_hot_select(slot_one_hot[:d], state)),
        ]

        m.d.comb += [
            gate_rd.addr.eq(weight_base + slot_index),
            readout_rd.addr.eq(weight_base + slot_index),
            params_rd.addr.eq(group),
            readout_bias_rd.addr.eq(group),
        ]

        # accumulate-stage inputs (registered by the issue stage)
        acc_valid = Signal()
        acc_first = Signal()
        acc_final = Signal()
        acc_last_group = Signal()
        acc_readout = Signal()
        acc_group = Signal.like(group)
        acc_operand = Signal(operand_shape)

        def issue(readout: bool) -> None:
            last_group = class_groups - 1 if readout else groups - 1
            m.d.sync += [
                acc_valid.eq(1),
                acc_first.eq(group_first),
                acc_final.eq(slot_final),
                acc_last_group.eq(group == last_group),
                acc_readout.eq(readout),
                acc_group.eq(group),
                acc_operand.eq(state_value if readout else input_value),
            ]
            with m.If(slot_final):
                m.d.sync += [
                    group.eq(group + 1),
                    weight_base.eq(weight_base + (d if readout else n_in)),
                    group_first.eq(1),
                    pending.eq(state_nonzero if readout else step_nonzero),
                ]
            with m.Else():
                m.d.sync += [pending.eq(pending & ~slot_one_hot), group_first.eq(0)]

        def start_group_zero(mask) -> None:
            m.d.sync += [group.eq(0), weight_base.eq(0), group_first.eq(1), pending.eq(mask)]

        beat = self.steps.payload
        beat_nonzero = Signal(n_in)
        m.d.comb += beat_nonzero.eq(Cat(*(beat.x[j] != 0 for j in range(n_in))))

        def accept_step() -> None:
            with m.If(self.steps.valid):
                m.d.sync += [
                    step_inputs.eq(beat.x),
                    step_nonzero.eq(beat_nonzero),
                    step_is_last.eq(beat.last),
                ]
                start_group_zero(beat_nonzero)

        # finalize-stage inputs (registered by the accumulate stage)
        fin_valid = Signal()
        fin_readout = Signal()
        fin_last_group = Signal()
        fin_group = Signal.like(group)
        readout_done = Signal()  # finalize is storing the last class group

        step_ending = Signal()  # the issue stage is on the step's last slot
        m.d.comb += step_ending.eq(slot_final & (group == groups - 1))
        m.d.sync += acc_valid.eq(0)
        with m.FSM(name="phase") as phase:
            with m.State("IDLE"):
                accept_step()
                with m.If(self.steps.valid):
                    m.next = "LAYER"
            with m.State("LAYER"):
                issue(readout=False)
                with m.If(step_ending):
                    with m.If(step_is_last):
                        m.next = "DRAIN"
                    with m.Else():
                        accept_step()
                        with m.If(~self.steps.valid):
                            m.next = "IDLE"
            with m.State("DRAIN"):  # let the last step reach the state registers
                with m.If(~acc_valid & ~fin_valid & ~self.results.valid):
                    start_group_zero(state_nonzero)
                    m.next = "READOUT"
            with m.State("READOUT"):
                issue(readout=True)
                with m.If(slot_final & (group == class_groups - 1)):
                    m.next = "FLUSH"
            with m.State("FLUSH"):  # wait for the last logits, then start the next sequence
                with m.If(readout_done):
                    m.next = "IDLE"
        # ready does not depend on valid; it is high while idle and on a step's last slot
        m.d.comb += self.steps.ready.eq(
            phase.ongoing("IDLE") | (phase.ongoing("LAYER") & step_ending & ~step_is_last)
        )

        # ---------------------------------------------------------------- accumulate stage
        cand_acc_shape = signed(max(acc_bits, logit_bits))
        cand_acc = [Signal(cand_acc_shape, name=f"cand_acc_{lane}") for lane in range(lanes)]
        thr_acc = [Signal(signed(acc_bits), name=f"thr_acc_{lane}") for lane in range(lanes)]
        lane_alpha = [Signal(signed(fmt.alpha.bits), name=f"alpha_{lane}") for lane in range(lanes)]
        with m.If(acc_valid):
            for lane in range(lanes):
                weights, params = gate_rd.data[lane], params_rd.data[lane]
                cand_weight = Mux(acc_readout, readout_rd.data[lane], weights.cand)
                cand_seed = Mux(acc_readout, readout_bias_rd.data[lane], params.cand_bias)
                m.d.sync += [
                    cand_acc[lane].eq(Mux(acc_first, cand_seed, cand_acc[lane]) + cand_weight * acc_operand),
                    thr_acc[lane].eq(
                        Mux(acc_first, params.thr_bias, thr_acc[lane]) + weights.thr * acc_operand
                    ),
                ]
                with m.If(acc_first):
                    m.d.sync += lane_alpha[lane].eq(params.alpha)
        m.d.sync += [
            fin_valid.eq(acc_valid & acc_final),
            fin_readout.eq(acc_readout),
            fin_last_group.eq(acc_last_group),
            fin_group.eq(acc_group),
        ]

        # MACs counted one cycle late so that mac_count lines up with step_done
        last_group_lanes = d - (groups - 1) * lanes
        mac_pending = Signal(range(2 * lanes + 1))
        m.d.sync += mac_pending.eq(
            Mux(
                acc_valid & ~acc_readout & (acc_operand != 0),
                Mux(acc_group == groups - 1, 2 * last_group_lanes, 2 * lanes),
                0,
            )
        )

        # ---------------------------------------------------------------- finalize stage
        fin_group_is = Signal(max(groups, class_groups))  # one-hot decode of fin_group
        m.d.comb += fin_group_is.eq(1 << fin_group)
        layer_update = Signal()
        m.d.comb += [
            layer_update.eq(fin_valid & ~fin_readout),
            readout_done.eq(fin_valid & fin_readout & fin_last_group),
        ]
        sum_shape = signed(max(state_bits, fmt.alpha.bits) + 2)
        changed = []
        for lane in range(lanes):
            members = [g for g in range(groups) if g * lanes + lane < d]
            old = _one_hot_select(
                [fin_group_is[g] for g in members], [state[g * lanes + lane] for g in members]
            )
            old_state = Signal(signed(state_bits), name=f"old_state_{lane}")
            lane_gate = Signal(name=f"gate_{lane}")
            update = Signal(sum_shape, name=f"update_{lane}")
            new_state = Signal(signed(state_bits), name=f"new_state_{lane}")
            cand, thr = cand_acc[lane], thr_acc[lane]
            kept = {1: old_state, 0: Const(0, sum_shape), -1: -old_state}[eps]
            m.d.comb += [
                old_state.eq(old),
                lane_gate.eq(abs(cand) >= abs(thr)),
                update.eq(kept + Mux(cand >= 0, lane_alpha[lane], -lane_alpha[lane])),
            ]
            saturated = Mux(update > state_max, state_max, Mux(update < state_min, state_min, update))
            m.d.comb += new_state.eq(Mux(lane_gate, saturated, old_state))
            lane_exists = (fin_group != groups - 1) if lane >= last_group_lanes else Const(1)
            changed.append(lane_exists & (new_state != old_state))
            for g in range(groups):
                neuron = g * lanes + lane
                if neuron < d:
                    with m.If(layer_update & fin_group_is[g]):
                        m.d.sync += [state[neuron].eq(new_state), gate[neuron].eq(lane_gate)]

        # readout: store logits, fold the group's best into the running argmax
        last_class_lanes = n_cls - (class_groups - 1) * lanes
        candidates = []
        for lane in range(lanes):
            lane_exists = (fin_group != class_groups - 1) if lane >= last_class_lanes else Const(1)
            candidates.append(
                (lane_exists, cand_acc[lane][:logit_bits].as_signed(), Const(lane, range(lanes)))
            )
            for k in range(class_groups):
                cls = k * lanes + lane
                if cls < n_cls:
                    with m.If(fin_valid & fin_readout & fin_group_is[k]):
                        m.d.sync += logits[cls].eq(cand_acc[lane])
        level = 0
        while len(candidates) > 1:  # balanced tree; on ties the left (lower index) wins
            paired = []
            for node, (left, right) in enumerate(zip(candidates[0::2], candidates[1::2], strict=False)):
                valid = Signal(name=f"argmax_{level}_{node}_valid")
                logit = Signal(signed(logit_bits), name=f"argmax_{level}_{node}_logit")
                best_lane = Signal(range(lanes), name=f"argmax_{level}_{node}_lane")
                take_right = right[0] & (~left[0] | (right[1] > left[1]))
                m.d.comb += [
                    valid.eq(left[0] | right[0]),
                    logit.eq(Mux(take_right, right[1], left[1])),
                    best_lane.eq(Mux(take_right, right[2], left[2])),
                ]
                paired.append((valid, logit, best_lane))
            if len(candidates) % 2:
                paired.append(candidates[-1])
            candidates = paired
            level += 1
        group_best_logit = Signal(signed(logit_bits))
        group_best_lane = Signal(range(lanes))
        m.d.comb += [group_best_logit.eq(candidates[0][1]), group_best_lane.eq(candidates[0][2])]
        with m.If(fin_valid & fin_readout & ((fin_group == 0) | (group_best_logit > best_logit))):
            m.d.sync += [best_logit.eq(group_best_logit), best_class.eq(fin_group * lanes + group_best_lane)]

        # result beat and end of sequence
        with m.If(self.results.valid & self.results.ready):
            m.d.sync += self.results.valid.eq(0)
        with m.If(readout_done):
            m.d.sync += self.results.valid.eq(1)
            m.d.sync += [state[i].eq(0) for i in range(d)]

        # ---------------------------------------------------------------- observability
        events = Signal(range(lanes + 1))
        m.d.comb += events.eq(Mux(layer_update, sum(changed), 0))
        m.d.sync += [
            self.step_done.eq(layer_update & fin_last_group),
            self.cycle_count.eq(self.cycle_count + 1),
            self.event_count.eq(self.event_count + events),
            self.mac_count.eq(self.mac_count + mac_pending),
        ]
        return m
