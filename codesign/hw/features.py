"""The accelerator of a random-feature network (``kind: features``, ``codesign/bundle/features.py``).

One engine walks the bank once per input frame, time-multiplexed over its pairs, and runs the
readout once per sequence::

    inputs (frames) -> delay line (span frames) -> pair walk (9 taps per pair)
                    -> unit stage (threshold, alpha, saturating counter) -> counters memory
    seq_end -> readout (W @ counts + b, one class at a time) -> argmax -> results

* **Frames.** One ``inputs`` beat is one frame: ``values`` (``channels`` integers of
  ``input.bits``) and ``seq_end`` (the sequence's last frame). The frame goes into a circular
  delay line of ``span`` frames (a :class:`~amaranth.lib.memory.Memory`).
* **Pairs.** For pair ``p`` (dilation group ``g``, kernel ``k``) the walk spends
  ``slots = max(9, biases)`` cycles: slot ``i < 9`` reads frame ``t - i*d``, sums its channels of
  ``mask[p]`` and adds ``2 s`` (tap ``i`` in ``KERNEL_POSITIONS[k]``) or ``-s``; a tap before the
  sequence's first frame adds 0. The kernel weights come from an 84-entry table of 9-bit tap masks
  built from the kernel index (no weight memory); the dilations from a table of ``len(dilations)``.
* **Units.** While the walk runs the next pair, the ``biases`` units of the finished pair read
  their threshold, alpha and count (ROMs and one RAM, one unit per cycle) and write
  ``min(count + (y > threshold ? alpha : 0), 2**(state_bits-1) - 1)``. A sequence's first frame
  reads every count as 0, so no pass clears the counters.
* **Readout.** After the ``seq_end`` frame: for class ``c``, ``bias[c] + sum_j W[c, j] * count[j]``
  (one product per cycle, weights in a ROM or, with ``weights="spram"``, in a single-port RAM loaded
  through ``config``); one ``results`` beat per class as the accelerator's readout sends one per
  class group (``logits[1]``, ``group``, ``final``, ``class_index``, ``seq_end``), the final beat
  carrying the argmax (the lowest index among equal maxima, as numpy's ``argmax``).

:func:`feature_cycles` is the cycle model: the frame period and the readout's latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from codesign.bundle.features import KERNEL_POSITIONS, KERNEL_TAPS, FeatureSpec
from codesign.bundle.io import FeatureBundle
from codesign.errors import CodesignError
from codesign.hw.plan import index_bits
from codesign.intmath import bits_for_magnitude

__all__ = [
    "FEATURE_WEIGHT_MODES",
    "MAX_RTL_CHANNELS",
    "FeatureAccelerator",
    "FeatureConfigLayout",
    "FeatureCycles",
    "FeatureResultLayout",
    "FeatureSignature",
    "FrameLayout",
    "feature_cycles",
]

FEATURE_WEIGHT_MODES = ("rom", "spram")
"""``rom``: every parameter is a ROM holding the bundle's values; ``spram``: the same, but the
readout weights are a single-port RAM (the UP5K's SPRAM, which has no initial values) loaded
through the ``config`` stream before the first sequence."""

MAX_RTL_CHANNELS = 64
"""Channels a frame may have: the channel sum of a tap is one adder tree over the frame."""


def _slots(spec: FeatureSpec) -> int:
    """Walk cycles per pair: the 9 taps, or the pair's units if there are more."""
    return max(KERNEL_TAPS, spec.biases)


@dataclass(frozen=True)
class FeatureCycles:
    """The cycle model of :class:`FeatureAccelerator` (every stream at full rate)."""

    frame: int
    """Cycles from one frame's acceptance to the next's: ``pairs * max(9, biases) + biases + 4``."""
    readout: int
    """Cycles from the end of the ``seq_end`` frame's period to the final result beat's first cycle:
    ``classes * (size + 4) - 1`` (one product per unit and class, then three cycles of pipeline
    and one result beat per class)."""

    def sequence(self, frames: int) -> int:
        """Cycles of a sequence of ``frames`` frames, from its first acceptance to its final beat."""
        return frames * self.frame + self.readout


def feature_cycles(spec: FeatureSpec, classes: int) -> FeatureCycles:
    """Cycles per frame and cycles of the readout of a bank with ``classes`` classes."""
    return FeatureCycles(
        frame=spec.pairs * _slots(spec) + spec.biases + 4,
        readout=classes * (spec.size + 4) - 1,
    )


class FrameLayout(data.StructLayout):
    """One input beat: a frame of ``channels`` signed integers and the sequence-end flag."""

    def __init__(self, channels: int, input_bits: int) -> None:
        super().__init__({"values": data.ArrayLayout(signed(input_bits), channels), "seq_end": unsigned(1)})


class FeatureResultLayout(data.StructLayout):
    """One result beat, the shape of the recurrent accelerator's with one class per group."""

    def __init__(self, classes: int, logit_bits: int) -> None:
        super().__init__(
            {
                "logits": data.ArrayLayout(signed(logit_bits), 1),
                "group": unsigned(index_bits(classes)),
                "final": unsigned(1),
                "class_index": unsigned(index_bits(classes)),
                "seq_end": unsigned(1),
            }
        )


class FeatureConfigLayout(data.StructLayout):
    """One readout weight write (``weights="spram"``): ``W[addr // size, addr % size] = value``."""

    def __init__(self, words: int) -> None:
        super().__init__({"addr": unsigned(index_bits(words)), "value": signed(32)})


class FeatureSignature(wiring.Signature):
    """Ports of :class:`FeatureAccelerator`: ``inputs`` (frames), ``results``, and ``config``
    (readout weight writes, always ready) with ``weights="spram"``."""

    def __init__(self, bundle: FeatureBundle, spram: bool) -> None:
        m = bundle.manifest
        members = {
            "inputs": In(stream.Signature(FrameLayout(m.features.channels, m.input.bits))),
            "results": Out(stream.Signature(FeatureResultLayout(m.readout.classes, m.logit_bits))),
        }
        if spram:
            members["config"] = In(stream.Signature(FeatureConfigLayout(m.readout.classes * m.features.size)))
        super().__init__(members)


def _kernel_table(kernels: int) -> list[int]:
    """9-bit tap masks of kernels ``0 .. kernels - 1``: bit ``i`` set where tap ``i`` weighs 2."""
    return [sum(1 << i for i in KERNEL_POSITIONS[k]) for k in range(kernels)]


def _rom(m: Module, name: str, shape, init, *, comb: bool = False):
    """A ROM (``lib.memory`` with initial values) and its one read port (synchronous unless
    ``comb``: a table small enough for LUTs)."""
    values = [int(v) for v in np.asarray(init).ravel()]
    mem = Memory(
        shape=shape, depth=max(1, len(values)), init=values, attrs={"ram_style": "logic"} if comb else None
    )
    m.submodules[name] = mem
    return mem.read_port(domain="comb" if comb else "sync")


class FeatureAccelerator(wiring.Component):
    """The accelerator of one random-feature bundle (module docstring).

    Parameters
    ----------
    bundle : FeatureBundle
        The network: its bank, its arrays and its readout.
    weights : ``"rom"`` or ``"spram"``
        Where the readout weights live (:data:`FEATURE_WEIGHT_MODES`).
    """

    def __init__(self, bundle: FeatureBundle, *, weights: str = "rom") -> None:
        spec = bundle.manifest.features
        problem = None
        if weights not in FEATURE_WEIGHT_MODES:
            problem = f"weights must be one of {', '.join(FEATURE_WEIGHT_MODES)}, not {weights!r}"
        elif spec.channels > MAX_RTL_CHANNELS:
            problem = (
                f"features.channels {spec.channels}: the feature accelerator takes at most "
                f"{MAX_RTL_CHANNELS} channels per frame"
            )
        if problem is not None:
            self._MustUse__silence = True  # never built: no "created but never used" warning
            raise CodesignError(problem)
        self.bundle = bundle
        self.spec: FeatureSpec = spec
        self.weights_mode = weights
        self.cycles = feature_cycles(spec, bundle.manifest.readout.classes)
        self.counts_memory = Memory(shape=unsigned(spec.state_bits - 1), depth=spec.size, init=[])
        """The units' counts (a simulation reads them: the last states the readout reads)."""
        super().__init__(FeatureSignature(bundle, weights == "spram"))

    def elaborate(self, platform):
        m = Module()
        walk = _Walk(self, m)
        units = _Units(self, m, walk)
        readout = _Readout(self, m, units)
        self._control(m, walk, units, readout)
        return m

    def _control(self, m: Module, walk, units, readout) -> None:
        """The frame / walk / drain / readout / emit sequence."""
        spec = self.spec
        span = spec.span
        classes = self.bundle.manifest.readout.classes
        fresh = Signal(init=1)  # the next frame starts a sequence
        last = Signal()  # the frame being walked ends its sequence
        wp = Signal(range(span))
        beat = self.inputs.payload
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.inputs.ready.eq(1)
                with m.If(self.inputs.valid):
                    m.d.comb += [
                        walk.write.addr.eq(wp),
                        walk.write.data.eq(beat.values.as_value()),
                        walk.write.en.eq(1),
                    ]
                    m.d.sync += [
                        walk.base.eq(wp),
                        wp.eq(Mux(wp == span - 1, 0, wp + 1)),
                        units.first.eq(fresh),
                        fresh.eq(0),
                        walk.t_cur.eq(Mux(fresh, 0, Mux(walk.t_cur == span, span, walk.t_cur + 1))),
                        last.eq(beat.seq_end),
                    ]
                    m.next = "WALK"
            with m.State("WALK"):
                m.d.comb += walk.issue.eq(1)
                with m.If(walk.done):
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(~walk.busy & ~units.busy):
                    with m.If(last):
                        m.next = "RISSUE"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("RISSUE"):
                m.d.comb += [readout.issue.eq(1), units.readout.eq(1)]
                with m.If(readout.row_done):
                    m.next = "RWAIT"
            with m.State("RWAIT"):
                m.d.comb += units.readout.eq(1)
                with m.If(readout.logit_ready):
                    m.next = "EMIT"
            with m.State("EMIT"):
                m.d.comb += units.readout.eq(1)
                final = readout.cls == classes - 1
                m.d.comb += [
                    self.results.valid.eq(1),
                    self.results.payload.logits[0].eq(readout.acc),
                    self.results.payload.group.eq(readout.cls),
                    self.results.payload.final.eq(final),
                    self.results.payload.class_index.eq(readout.best_next),
                    self.results.payload.seq_end.eq(final),
                ]
                with m.If(self.results.ready):
                    m.d.comb += readout.taken.eq(1)
                    with m.If(final):
                        m.d.sync += fresh.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "RISSUE"


class _Walk:
    """The delay line and the pair walk: ``y_p`` in ``acc`` one cycle after ``fire`` is set."""

    def __init__(self, top: FeatureAccelerator, m: Module) -> None:
        spec, ib = top.spec, top.bundle.manifest.input.bits
        w = top.bundle.weights
        span, slots, kernels, groups = spec.span, _slots(spec), spec.kernels, len(spec.dilations)
        delay = Memory(shape=unsigned(spec.channels * ib), depth=span, init=[])
        m.submodules.delay_line = delay
        self.write = delay.write_port()
        rd = delay.read_port()
        masks = np.asarray(w["features.mask"], dtype=np.int64)
        mask_words = [int(sum(int(b) << c for c, b in enumerate(row))) for row in masks]
        mask_rd = _rom(m, "mask_rom", unsigned(spec.channels), mask_words)
        ktab = _rom(m, "kernel_table", unsigned(KERNEL_TAPS), _kernel_table(kernels), comb=True)
        dtab = _rom(
            m, "dilation_table", unsigned(max(spec.dilations).bit_length()), spec.dilations, comb=True
        )

        self.issue = Signal()  # the walk advances this cycle
        self.base = Signal(range(span))  # the walked frame's place in the delay line
        self.t_cur = Signal(range(span + 1))  # its step in the sequence, saturated at span
        g, k = Signal(range(groups)), Signal(range(kernels))
        slot, off = Signal(range(slots)), Signal(range(span))
        pair = Signal(range(spec.pairs))
        last_slot = slot == slots - 1
        last_pair = (g == groups - 1) & (k == kernels - 1)
        self.done = self.issue & last_slot & last_pair
        m.d.comb += [ktab.addr.eq(k), dtab.addr.eq(g), mask_rd.addr.eq(pair)]
        diff = Signal(signed(len(off) + 2))
        m.d.comb += [diff.eq(self.base - off), rd.addr.eq(Mux(diff < 0, diff + span, diff))]
        with m.If(self.issue):
            with m.If(last_slot):
                m.d.sync += [slot.eq(0), off.eq(0), pair.eq(Mux(last_pair, 0, pair + 1))]
                with m.If(k == kernels - 1):
                    m.d.sync += [k.eq(0), g.eq(Mux(g == groups - 1, 0, g + 1))]
                with m.Else():
                    m.d.sync += k.eq(k + 1)
            with m.Else():
                m.d.sync += slot.eq(slot + 1)
                with m.If(slot < KERNEL_TAPS - 1):
                    m.d.sync += off.eq(off + dtab.data)
        # stage 1: the tap's frame and the pair's mask are read; one term of y_p
        s1_valid, s1_ok, s1_w2, s1_first, s1_last = (
            Signal(name=f"s1_{n}") for n in ("valid", "ok", "w2", "first", "last")
        )
        m.d.sync += [
            s1_valid.eq(self.issue),
            s1_ok.eq((slot < KERNEL_TAPS) & (off <= self.t_cur)),
            s1_w2.eq((ktab.data >> slot)[0]),
            s1_first.eq(slot == 0),
            s1_last.eq(last_slot),
        ]
        frame = data.View(data.ArrayLayout(signed(ib), spec.channels), rd.data)
        s_bits = bits_for_magnitude(spec.channels << (ib - 1)) + 1
        s = Signal(signed(s_bits))
        m.d.comb += s.eq(sum(Mux(mask_rd.data[c], frame[c], 0) for c in range(spec.channels)))
        term = Signal(signed(s_bits + 1))
        m.d.comb += term.eq(Mux(s1_ok, Mux(s1_w2, s << 1, -s), 0))
        self.acc = Signal(signed(spec.conv_bits(ib) + 1))
        with m.If(s1_valid):
            m.d.sync += self.acc.eq(Mux(s1_first, 0, self.acc) + term)
        self.fire = Signal()  # acc holds a pair's y_p this cycle
        m.d.sync += self.fire.eq(s1_valid & s1_last)
        self.busy = s1_valid | self.fire


class _Units:
    """The unit stage: thresholds, alphas and the counters memory (read by the readout too)."""

    def __init__(self, top: FeatureAccelerator, m: Module, walk: _Walk) -> None:
        spec, ib = top.spec, top.bundle.manifest.input.bits
        w = top.bundle.weights
        size, biases = spec.size, spec.biases
        hi = (1 << (spec.state_bits - 1)) - 1
        thr = _rom(m, "threshold_rom", signed(spec.conv_bits(ib)), w["features.threshold"])
        alpha = _rom(m, "alpha_rom", unsigned(spec.alpha_bits), w["features.alpha"])
        counts = top.counts_memory
        m.submodules.counts = counts
        self.read = counts.read_port()
        cw = counts.write_port()
        self.first = Signal()  # the walked frame is its sequence's first: counts read as 0
        self.readout = Signal()  # the readout owns the counters' read port
        self.raddr = Signal(range(size))  # the readout's address
        y_hold = Signal.like(walk.acc)
        left = Signal(range(biases))
        uj = Signal(range(size))
        u1_valid, u1_j, u1_y = Signal(), Signal(range(size)), Signal.like(walk.acc)
        issue = Signal()
        y_now = Mux(walk.fire, walk.acc, y_hold)
        with m.If(walk.fire):
            m.d.sync += [y_hold.eq(walk.acc), left.eq(biases - 1)]
            m.d.comb += issue.eq(1)
        with m.Elif(left != 0):
            m.d.sync += left.eq(left - 1)
            m.d.comb += issue.eq(1)
        m.d.comb += [thr.addr.eq(uj), alpha.addr.eq(uj), self.read.addr.eq(Mux(self.readout, self.raddr, uj))]
        m.d.sync += [u1_valid.eq(issue), u1_j.eq(uj), u1_y.eq(y_now)]
        with m.If(issue):
            m.d.sync += uj.eq(Mux(uj == size - 1, 0, uj + 1))
        old = Mux(self.first, 0, self.read.data)
        total = Signal(max(spec.state_bits - 1, spec.alpha_bits) + 1)
        m.d.comb += total.eq(old + Mux(u1_y > thr.data, alpha.data, 0))
        m.d.comb += [cw.addr.eq(u1_j), cw.data.eq(Mux(total > hi, hi, total)), cw.en.eq(u1_valid)]
        self.busy = walk.busy | (left != 0) | u1_valid


class _Readout:
    """``bias[c] + sum_j W[c, j] * count[j]`` one class at a time, and the running argmax."""

    def __init__(self, top: FeatureAccelerator, m: Module, units: _Units) -> None:
        manifest, w = top.bundle.manifest, top.bundle.weights
        size, classes = manifest.features.size, manifest.readout.classes
        words = classes * size
        wshape = signed(manifest.readout.weight_bits)
        if top.weights_mode == "spram":
            mem = Memory(shape=wshape, depth=words, init=[], attrs={"ram_style": "huge"})
            m.submodules.readout_weights = mem
            wrd, wwr = mem.read_port(), mem.write_port()
            raddr = Signal(range(words))
            cfg = top.config.payload
            writing = top.config.valid
            m.d.comb += top.config.ready.eq(1)  # a write lands in its cycle
            addr = Signal(range(words))  # one address for both ports: yosys infers an SPRAM
            m.d.comb += [
                addr.eq(Mux(writing, cfg.addr, raddr)),
                wwr.addr.eq(addr),
                wrd.addr.eq(addr),
                wwr.data.eq(cfg.value),
                wwr.en.eq(writing),
                wrd.en.eq(~writing),
            ]
        else:
            wrd = _rom(m, "readout_weights", wshape, w["readout.weight"])
            raddr = wrd.addr
        bias = _rom(m, "bias_rom", signed(manifest.readout.bias_bits), w["readout.bias"], comb=True)
        self.issue, self.taken = Signal(), Signal()
        self.cls = Signal(range(classes))
        j = Signal(range(size))
        wa = Signal(range(words))
        m.d.comb += [raddr.eq(wa), units.raddr.eq(j), bias.addr.eq(self.cls)]
        self.row_done = self.issue & (j == size - 1)
        with m.If(self.issue):
            m.d.sync += [j.eq(Mux(j == size - 1, 0, j + 1)), wa.eq(Mux(wa == words - 1, 0, wa + 1))]
        r1_valid, r1_first, r1_last = Signal(), Signal(), Signal()
        m.d.sync += [r1_valid.eq(self.issue), r1_first.eq(j == 0), r1_last.eq(self.row_done)]
        count = Signal(signed(manifest.features.state_bits))
        m.d.comb += count.eq(units.read.data)
        prod = Signal(signed(manifest.readout.weight_bits + manifest.features.state_bits))
        r2_valid, r2_first, r2_last = Signal(), Signal(), Signal()
        m.d.sync += [
            prod.eq(wrd.data * count),
            r2_valid.eq(r1_valid),
            r2_first.eq(r1_first),
            r2_last.eq(r1_last),
        ]
        self.acc = Signal(signed(manifest.logit_bits))
        with m.If(r2_valid):
            m.d.sync += self.acc.eq(Mux(r2_first, bias.data, self.acc) + prod)
        self.logit_ready = Signal()
        m.d.sync += self.logit_ready.eq(r2_valid & r2_last)
        best = Signal.like(self.acc)
        best_idx = Signal(range(classes))
        better = (self.cls == 0) | (self.acc > best)
        self.best_next = Mux(better, self.cls, best_idx)
        with m.If(self.taken):
            m.d.sync += [
                best.eq(Mux(better, self.acc, best)),
                best_idx.eq(self.best_next),
                self.cls.eq(Mux(self.cls == classes - 1, 0, self.cls + 1)),
            ]
