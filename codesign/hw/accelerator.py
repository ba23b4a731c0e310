"""The event-driven, lane-multiplexed accelerator for a whole bundle.

A chain of engines joined by item streams (``docs/accelerator.md``)::

    inputs -> [InputStride] -> [DelayFrontEnd 0] -> LayerEngine 0 -> [DelayFrontEnd 1]
           -> LayerEngine 1 -> ... -> ReadoutEngine -> results

Each engine has its own lanes and memories and works on its own step, so the layers form a
pipeline: while layer 1 computes step t, layer 0 computes step t+1. Only outputs that changed
travel between layers. A configuration stream loads every parameter at run time; counters and
per-layer traces make the work observable.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from codesign.bundle import Bundle
from codesign.errors import CodesignError
from codesign.hw.config import ConfigSignature
from codesign.hw.counters import CounterBank
from codesign.hw.dcls import DelayFrontEnd
from codesign.hw.images import memory_images
from codesign.hw.layer import LayerEngine
from codesign.hw.plan import AcceleratorPlan, frozen_shift_ranges, plan_accelerator
from codesign.hw.readout import ReadoutEngine
from codesign.hw.signature import AcceleratorSignature, ItemLayout
from codesign.hw.slice import StreamSlice
from codesign.hw.stride import InputStride

__all__ = ["Accelerator", "WEIGHT_MODES"]

WEIGHT_MODES = ("baked", "runtime", "frozen", "spram")
"""``baked``: memories start with the bundle's parameters; ``runtime``: they start at zero and
the configuration stream loads them (the Verilog then depends only on the bundle's shape);
``frozen``: the engines' weight, bias and parameter memories and the DCLS taps are ROMs holding
the bundle's values (no write port: configuration beats to them are ignored). A frozen
build is the smallest: a ROM in LUTs needs no flip-flop per stored bit, and synthesis folds its
constants."""


class Accelerator(wiring.Component):
    """The accelerator of one bundle with ``lanes`` lanes per engine (``min(lanes, size)``).

    Parameters
    ----------
    bundle : Bundle
        The deployed network (format 2); every member of the golden model's family is accepted.
    lanes : int
        ``P``: neurons (or classes) computed in parallel; ``1 <= P <=`` the widest layer.
    weights : ``"baked"``, ``"runtime"``, ``"frozen"`` or ``"spram"``
        Whether the parameter memories start with the bundle's values, at zero, or are ROMs
        (``spram``: ROMs but the largest weight matrices, in single-port RAMs loaded through
        ``config``).
    target : str
        Chip the plan maps memories and multiplies onto (``codesign.hw.targets``).
    counters : str
        ``all``, ``basic`` or ``none``: the observability counters the build carries.
    share : str or int
        ``off``, ``on``, ``auto`` or ``N``: multipliers per lane shared over the matrices
        (:data:`codesign.hw.plan.SHARE_MODES`).
    narrow : str
        ``off`` or ``auto``: weight words of engines with shared multipliers folded into one slice
        per pass (:data:`codesign.hw.plan.NARROW_MODES`); ``None``: the target's default
        (``auto`` on the UP5K, :func:`codesign.hw.plan.resolve_narrow`).
    share_updates : str
        ``off`` or ``on``: one update unit per layer serving its lanes in turn, ``P - 1`` idle
        issue cycles per group (:data:`codesign.hw.plan.SHARE_UPDATE_MODES`).
    merge : str
        ``off`` or ``auto``: memories read at one address in one cycle in one physical word
        (:data:`codesign.hw.plan.MERGE_MODES`).
    faults : set of str
        Deliberate bugs (:data:`codesign.hw.faults.FAULTS`) for the regression's mutation check.
    """

    def __init__(
        self,
        bundle: Bundle,
        *,
        lanes: int = 1,
        weights: str = "baked",
        counter_bits: int = 32,
        faults: frozenset[str] | set[str] = frozenset(),
        target: str = "generic",
        counters: str = "all",
        share: str | int = "off",
        narrow: str | None = None,
        share_updates: str = "off",
        merge: str = "off",
    ) -> None:
        try:
            if weights not in WEIGHT_MODES:
                raise CodesignError(f"weights must be one of {', '.join(WEIGHT_MODES)}, not {weights!r}")
            self.plan: AcceleratorPlan = plan_accelerator(
                bundle.manifest,
                lanes,
                counter_bits=counter_bits,
                faults=faults,
                target=target,
                counters=counters,
                frozen=weights in ("frozen", "spram"),
                spram=weights == "spram",
                share=share,
                narrow=narrow,
                share_updates=share_updates,
                merge=merge,
                shift_ranges=frozen_shift_ranges(
                    bundle.manifest, {i: bundle.layer_weights(i) for i in range(len(bundle.manifest.layers))}
                )
                if weights in ("frozen", "spram")
                else None,
            )
        except CodesignError:
            self._MustUse__silence = True  # never built: no "created but never used" warning
            raise
        self.bundle = bundle
        self.weights_mode = weights
        images = memory_images(bundle, self.plan) if weights in ("baked", "frozen", "spram") else {}
        self.layer_engines = [LayerEngine(self.plan, e, images) for e in self.plan.layers]
        self.front_ends = {
            e.index: DelayFrontEnd(self.plan, e, images) for e in self.plan.layers if e.dcls is not None
        }
        first = self.plan.layers[0]
        self.stride = InputStride(self.plan, first) if first.stride > 1 else None
        self.readout = ReadoutEngine(self.plan, self.plan.readout, images)
        self.top_counters = CounterBank(self.plan, "top")
        super().__init__(AcceleratorSignature(self.plan))

    @property
    def lanes(self) -> int:
        return self.plan.lanes

    def counter_banks(self) -> list[CounterBank]:
        """Every component's counters (each component keeps the ones the plan gives it)."""
        banks = [self.top_counters]
        for engine in (*self.layer_engines, self.readout):
            banks += [engine.counters, engine.front.counters, engine.front.issue.counters]
        banks += [fe.counters for fe in self.front_ends.values()]
        if self.stride is not None:
            banks.append(self.stride.counters)
        return banks

    def all_counters(self) -> dict:
        out = {}
        for bank in self.counter_banks():
            out.update(bank.signals)
        return out

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        # the port's ready is tied high (a write lands in one cycle wherever it goes); inside, the
        # configuration is an always-ready stream fanned out to every engine by wiring.connect
        config = ConfigSignature(plan).create(path=("config_fanout",))
        m.d.comb += [
            self.config.ready.eq(1),
            config.valid.eq(self.config.valid),
            config.payload.eq(self.config.payload),
        ]
        consumers = []
        source = wiring.flipped(self.inputs)
        if self.stride is not None:  # S input frames -> one step of layer 0
            m.submodules.input_stride = self.stride
            wiring.connect(m, source, self.stride.items)
            source = self.stride.outputs
        for engine in self.layer_engines:
            e = engine.engine
            if e.index in self.front_ends:
                fe = self.front_ends[e.index]
                m.submodules[f"{e.name}_dcls"] = fe
                consumers.append(fe.config)
                wiring.connect(m, source, fe.items)
                source = fe.outputs
            m.submodules[e.name] = engine
            consumers.append(engine.config)
            wiring.connect(m, source, engine.items)
            m.submodules[f"{e.name}_slice"] = cut = StreamSlice(ItemLayout(e.size, engine.value_bits))
            wiring.connect(m, engine.events, cut.i)
            source = cut.o
            m.d.comb += getattr(self, f"trace_{e.index}").eq(engine.trace)
        m.submodules.readout = self.readout
        consumers.append(self.readout.config)
        for consumer in consumers:  # one source, many always-ready sinks (no ready to merge)
            wiring.connect(m, config, consumer)
        wiring.connect(m, source, self.readout.items)
        wiring.connect(m, self.readout.results, wiring.flipped(self.results))
        self._count_ports(m)
        signals = self.all_counters()
        missing = set(plan.counters) - set(signals)
        if missing:  # pragma: no cover - a plan/component mismatch is a bug
            raise RuntimeError(f"counters without a source: {sorted(missing)}")
        for name in plan.counters:
            m.d.comb += self.counters[name].eq(signals[name])
        return m

    def _count_ports(self, m: Module) -> None:
        top = self.top_counters
        top.count(m, "cycles", 1)
        top.count(m, "input_stall_cycles", self.inputs.valid & ~self.inputs.ready)
        top.count(m, "result_stall_cycles", self.results.valid & ~self.results.ready)
        top.count(m, "sequences", self.inputs.valid & self.inputs.ready & self.inputs.payload.seq_end)
        top.count(m, "results", self.results.valid & self.results.ready & self.results.payload.final)
