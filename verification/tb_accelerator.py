"""cocotb testbench: the generated accelerator against the golden integer model, bit for bit.

Shaped like cocotb's ``examples/matrix_multiplier``: a :class:`StepDriver` feeds the ``steps``
stream with random gaps, a :class:`ResultMonitor` takes ``results`` beats under random
back-pressure, a :class:`StepMonitor` samples ``state``/``gate``/counters on every ``step_done``
pulse, a :class:`GoldenModel` turns every sequence the DUT accepted into expected step and result
records (``codesign.golden`` on the bundle copy in the build directory), and an in-order
:class:`Scoreboard` compares them and remembers the first mismatch.

Timing discipline: every component samples and drives at the *falling* clock edge. The DUT's
``ready``/``valid``/``step_done`` outputs depend on registers only (never combinationally on its
inputs), so at a falling edge they hold this cycle's values, and what is written there is stable
before the next rising edge where the transfer happens. This keeps the testbench free of
same-time-step write/read races, which differ between Icarus and Verilator.

Environment (set by ``codesign.verify.runner``):

``CODESIGN_BUILD_DIR``  build directory (``accelerator.v``, ``build.json``, bundle copy) - required
``CODESIGN_VECTORS``    number of sequences (default 20; with an input file: first N, 0 = all)
``CODESIGN_SEED``       seed of random sequences, gaps and back-pressure (default 0)
``CODESIGN_INPUTS``     optional ``.npy`` of inputs (integer: quantized, float: quantized here)
``CODESIGN_GAPS``       ``1`` (default): random valid gaps and ready back-pressure, ``0``: none
``CODESIGN_RESULT``     where to write the JSON result (default ``<build>/tb_result.json``)
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, FallingEdge, RisingEdge

from codesign.bundle import load_bundle, spine_view
from codesign.golden import run_golden
from codesign.verify.vectors import load_vectors

COUNTER_BITS = 32


# --------------------------------------------------------------------------- transactions
@dataclass
class StepRecord:
    """One step as the DUT showed it (or as the golden model expects it)."""

    sequence: int
    step: int
    state: list[int]
    gate: list[int]
    events: int
    macs: int
    cycle: int = 0


@dataclass
class ResultRecord:
    """One result beat."""

    sequence: int
    step: int  # last step of the sequence
    logits: list[int]
    class_index: int
    cycle: int = 0


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def _unpack(value: int, count: int, bits: int, *, signed: bool) -> list[int]:
    mask = (1 << bits) - 1
    out = [(value >> (i * bits)) & mask for i in range(count)]
    return [_signed(v, bits) for v in out] if signed else out


# --------------------------------------------------------------------------- driver and monitors
class Component:
    """A coroutine with ``start()``/``stop()``; an exception inside it is kept for the result file."""

    def __init__(self, dut, errors: list[str]) -> None:
        self._dut = dut
        self._errors = errors
        self._task = None

    def start(self) -> None:
        self._task = cocotb.start_soon(self._guarded())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _guarded(self) -> None:
        try:
            await self._run()
        except Exception as exc:
            self._errors.append(f"{type(self).__name__}: {type(exc).__name__}: {exc}")
            raise

    async def _run(self) -> None:
        raise NotImplementedError


class StepDriver(Component):
    """Drives the ``steps`` stream; each beat waits a random gap before ``valid`` rises."""

    def __init__(
        self,
        dut,
        errors: list[str],
        rng: np.random.Generator,
        gap_probability: float,
        on_accept: Callable[[int, object, int], None],
    ) -> None:
        super().__init__(dut, errors)
        self._rng = rng
        self._gap_probability = gap_probability
        self._on_accept = on_accept
        self._queue: deque[tuple[int, object]] = deque()
        self._appended = Event()
        self._valid = -1
        self.accepted = 0
        self.gapless: list[bool] = []  # per accepted beat: offered right after the previous one

    def append(self, payload: int, meta: object) -> None:
        self._queue.append((payload, meta))
        self._appended.set()

    def _gap(self) -> int:
        gap = 0
        while self._rng.random() < self._gap_probability:
            gap += 1
        return gap

    def _set_valid(self, valid: int) -> None:
        if valid != self._valid:
            self._dut.steps__valid.value = valid
            self._valid = valid

    async def _run(self) -> None:
        dut = self._dut
        current, gap = None, 0
        self._valid = -1
        self._set_valid(0)
        await FallingEdge(dut.clk)
        while True:  # at a falling edge
            if current is None:
                if not self._queue:
                    self._set_valid(0)
                    await self._appended.wait()
                    self._appended.clear()
                    await FallingEdge(dut.clk)
                    continue
                current, gap = self._queue.popleft(), self._gap()
                self.gapless.append(gap == 0)
                if gap == 0:
                    dut.steps__payload.value = current[0]
            if gap:
                self._set_valid(0)
                gap -= 1
                if gap == 0:
                    dut.steps__payload.value = current[0]
                await FallingEdge(dut.clk)
                continue
            self._set_valid(1)
            if int(dut.steps__ready.value):  # transfer at the next rising edge
                self.accepted += 1
                self._on_accept(current[0], current[1], int(dut.cycle_count.value))
                current = None
            else:  # ready only rises at a clock edge
                await RisingEdge(dut.steps__ready)
            await FallingEdge(dut.clk)


class ResultMonitor(Component):
    """Takes ``results`` beats, holding ``ready`` low at random (back-pressure)."""

    def __init__(
        self,
        dut,
        errors: list[str],
        rng: np.random.Generator,
        ready_probability: float,
        on_result: Callable[[object, int], None],
    ) -> None:
        super().__init__(dut, errors)
        self._rng = rng
        self._ready_probability = ready_probability
        self._on_result = on_result

    async def _run(self) -> None:
        dut = self._dut
        ready = -1
        while True:
            if not int(dut.results__valid.value):  # nothing to take: sleep until there is
                await RisingEdge(dut.results__valid)
            await FallingEdge(dut.clk)
            want = int(self._rng.random() < self._ready_probability)
            if want != ready:
                dut.results__ready.value = ready = want
            if ready and int(dut.results__valid.value):  # transfer at the next rising edge
                self._on_result(dut.results__payload.value, int(dut.cycle_count.value))


class StepMonitor(Component):
    """Samples ``state``, ``gate`` and the counters while ``step_done`` is high."""

    def __init__(self, dut, errors: list[str], on_step: Callable[..., None]) -> None:
        super().__init__(dut, errors)
        self._on_step = on_step

    async def _run(self) -> None:
        dut = self._dut
        while True:
            if not int(dut.step_done.value):  # sleep until the next pulse starts
                await RisingEdge(dut.step_done)
            await FallingEdge(dut.clk)
            if int(dut.step_done.value):
                self._on_step(
                    dut.state.value,
                    dut.gate.value,
                    dut.event_count.value,
                    dut.mac_count.value,
                    int(dut.cycle_count.value),
                )


# --------------------------------------------------------------------------- model and scoreboard
class GoldenModel:
    """Collects the beats the DUT accepted; at each ``last`` beat runs the golden model on them."""

    def __init__(
        self,
        bundle,
        on_expected_step: Callable[[StepRecord], None],
        on_expected_result: Callable[[ResultRecord], None],
    ) -> None:
        self._bundle = bundle
        self._on_step = on_expected_step
        self._on_result = on_expected_result
        self._beats: list[np.ndarray] = []
        self.sequences = 0

    def accept(self, x: np.ndarray, last: bool) -> None:
        self._beats.append(x)
        if not last:
            return
        seq = np.stack(self._beats)[None]
        self._beats = []
        g = run_golden(self._bundle, seq)
        n = self.sequences
        for t in range(seq.shape[1]):
            self._on_step(
                StepRecord(
                    n,
                    t,
                    g.states[0, t].tolist(),
                    g.gates[0, t].tolist(),
                    int(g.events[0, t]),
                    int(g.macs[0, t]),
                )
            )
        self._on_result(ResultRecord(n, seq.shape[1] - 1, g.logits[0].tolist(), int(g.classes[0])))
        self.sequences += 1


@dataclass
class Mismatch:
    sequence: int
    step: int
    signal: str
    expected: object
    got: object

    def line(self) -> str:
        return (
            f"sequence {self.sequence}, step {self.step}, signal {self.signal}: "
            f"expected {self.expected}, got {self.got}"
        )


@dataclass
class Scoreboard:
    """In-order checker: pairs expected and actual records as both arrive and compares them."""

    log: object
    mismatches: int = 0
    first: Mismatch | None = None
    steps_checked: int = 0
    results_checked: int = 0
    _exp_steps: deque = field(default_factory=deque)
    _got_steps: deque = field(default_factory=deque)
    _exp_results: deque = field(default_factory=deque)
    _got_results: deque = field(default_factory=deque)

    def report(self, mismatch: Mismatch) -> None:
        self.mismatches += 1
        if self.first is None:
            self.first = mismatch
            self.log.error("first mismatch: %s", mismatch.line())

    def _compare(self, seq: int, step: int, signal: str, expected, got) -> None:
        if expected != got:
            self.report(Mismatch(seq, step, signal, expected, got))

    def expected_step(self, rec: StepRecord) -> None:
        self._exp_steps.append(rec)
        self._drain()

    def actual_step(self, rec: StepRecord) -> None:
        self._got_steps.append(rec)
        self._drain()

    def expected_result(self, rec: ResultRecord) -> None:
        self._exp_results.append(rec)
        self._drain()

    def actual_result(self, rec: ResultRecord) -> None:
        self._got_results.append(rec)
        self._drain()

    def _drain(self) -> None:
        while self._exp_steps and self._got_steps:
            exp, got = self._exp_steps.popleft(), self._got_steps.popleft()
            got.sequence, got.step = exp.sequence, exp.step
            self.steps_checked += 1
            for i, (e, g) in enumerate(zip(exp.state, got.state, strict=True)):
                self._compare(exp.sequence, exp.step, f"state[{i}]", e, g)
            for i, (e, g) in enumerate(zip(exp.gate, got.gate, strict=True)):
                self._compare(exp.sequence, exp.step, f"gate[{i}]", e, g)
            self._compare(exp.sequence, exp.step, "event_count", exp.events, got.events)
            self._compare(exp.sequence, exp.step, "mac_count", exp.macs, got.macs)
        while self._exp_results and self._got_results:
            exp, got = self._exp_results.popleft(), self._got_results.popleft()
            got.sequence, got.step = exp.sequence, exp.step
            self.results_checked += 1
            for k, (e, g) in enumerate(zip(exp.logits, got.logits, strict=True)):
                self._compare(exp.sequence, exp.step, f"logits[{k}]", e, g)
            self._compare(exp.sequence, exp.step, "class_index", exp.class_index, got.class_index)

    def finish(self, lengths: list[int]) -> None:
        """Report what is left unpaired: steps or results the DUT never produced, or extra ones."""
        sequences = len(lengths)
        for exp in list(self._exp_steps)[:1]:
            self.report(Mismatch(exp.sequence, exp.step, "step_done", "a step_done pulse", "none"))
        for _ in list(self._got_steps)[:1]:
            self.report(Mismatch(sequences, 0, "step_done", "no further step", "an extra step_done pulse"))
        if self.results_checked < sequences:
            n = self.results_checked
            self.report(Mismatch(n, lengths[n] - 1, "results__valid", "a result beat", "none"))
        for _ in list(self._got_results)[:1]:
            self.report(Mismatch(sequences, 0, "results__valid", "no further result", "an extra result beat"))


# --------------------------------------------------------------------------- testbench
@dataclass
class Config:
    build_dir: Path
    vectors: int
    seed: int
    inputs: Path | None
    gaps: bool
    result: Path

    @classmethod
    def from_env(cls) -> Config:
        build = os.environ.get("CODESIGN_BUILD_DIR")
        if not build:
            raise RuntimeError("CODESIGN_BUILD_DIR is not set (run through codesign.verify.runner.run_sim)")
        build_dir = Path(build)
        inputs = os.environ.get("CODESIGN_INPUTS") or None
        return cls(
            build_dir=build_dir,
            vectors=int(os.environ.get("CODESIGN_VECTORS", "20")),
            seed=int(os.environ.get("CODESIGN_SEED", "0")),
            inputs=Path(inputs) if inputs else None,
            gaps=os.environ.get("CODESIGN_GAPS", "1") != "0",
            result=Path(os.environ.get("CODESIGN_RESULT") or build_dir / "tb_result.json"),
        )


class Testbench:
    """Wires driver, monitors, golden model and scoreboard around the DUT."""

    def __init__(self, dut, cfg: Config) -> None:
        self.dut = dut
        self.cfg = cfg
        self.build = json.loads((cfg.build_dir / "build.json").read_text())
        self.bundle = load_bundle(cfg.build_dir)
        net = spine_view(self.bundle, consumer="the RTL testbench").net
        self.d, self.m, self.c = net.hidden_size, net.input_size, net.num_classes
        self.state_bits = self.build["state_bits"]
        self.input_bits = self.build["input_bits"]
        self.logit_bits = self.build["logit_bits"]
        self.groups = self.build["groups"]
        self.sequences = load_vectors(self.bundle, vectors=cfg.vectors, seed=cfg.seed, inputs=cfg.inputs)
        rng = np.random.default_rng(cfg.seed + 1)
        self.scoreboard = Scoreboard(dut._log)
        self.model = GoldenModel(self.bundle, self.scoreboard.expected_step, self.scoreboard.expected_result)
        self.errors: list[str] = []
        self.driver = StepDriver(dut, self.errors, rng, 0.3 if cfg.gaps else 0.0, self._on_accept)
        self.result_monitor = ResultMonitor(dut, self.errors, rng, 0.6 if cfg.gaps else 1.0, self._on_result)
        self.step_monitor = StepMonitor(dut, self.errors, self._on_step)
        self.results: list[ResultRecord] = []
        self.steps: list[StepRecord] = []
        self.accept_cycles: list[int] = []
        self.last_events = 0
        self.last_macs = 0
        self.progress = 0

    # packing ------------------------------------------------------------
    def pack_step(self, x: np.ndarray, last: bool) -> int:
        fields = self.build["step_payload"]
        value = 0
        for j in range(self.m):
            f = fields[f"x[{j}]"]
            value |= (int(x[j]) & ((1 << f["width"]) - 1)) << f["offset"]
        return value | (int(last) << fields["last"]["offset"])

    # callbacks ------------------------------------------------------------
    def _on_accept(self, payload: int, meta, cycle: int) -> None:
        x, last = meta
        self.accept_cycles.append(cycle)
        self.progress += 1
        self.model.accept(x, last)

    def _position(self, k: int, *, last: bool = False) -> tuple[int, int]:
        """(sequence, step) of the k-th step overall, or of the k-th sequence's last step."""
        if last:
            return (k, len(self.sequences[k]) - 1) if k < len(self.sequences) else (k, 0)
        for n, seq in enumerate(self.sequences):
            if k < len(seq):
                return n, k
            k -= len(seq)
        return len(self.sequences), k

    def _int(self, value, signal: str, where: tuple[int, int]) -> int:
        """A sampled value as an int; X/Z bits are a mismatch (and read as 0)."""
        if value.is_resolvable:
            return int(value)
        self.scoreboard.report(Mismatch(where[0], where[1], signal, "0/1 bits", str(value)))
        return int(str(value).replace("X", "0").replace("Z", "0").replace("x", "0").replace("z", "0"), 2)

    def _on_step(self, state, gate, events, macs, cycle: int) -> None:
        where = self._position(len(self.steps))
        state, gate = self._int(state, "state", where), self._int(gate, "gate", where)
        events, macs = self._int(events, "event_count", where), self._int(macs, "mac_count", where)
        mod = 1 << COUNTER_BITS
        rec = StepRecord(
            -1,
            -1,
            _unpack(state, self.d, self.state_bits, signed=True),
            _unpack(gate, self.d, 1, signed=False),
            (events - self.last_events) % mod,
            (macs - self.last_macs) % mod,
            cycle,
        )
        self.last_events, self.last_macs = events, macs
        self.steps.append(rec)
        self.progress += 1
        self.scoreboard.actual_step(rec)

    def _on_result(self, payload, cycle: int) -> None:
        payload = self._int(payload, "results__payload", self._position(len(self.results), last=True))
        fields = self.build["result_payload"]
        logits = []
        for k in range(self.c):
            f = fields[f"logits[{k}]"]
            logits.append(_signed((payload >> f["offset"]) & ((1 << f["width"]) - 1), f["width"]))
        f = fields["class_index"]
        rec = ResultRecord(-1, -1, logits, (payload >> f["offset"]) & ((1 << f["width"]) - 1), cycle)
        self.results.append(rec)
        self.progress += 1
        self.scoreboard.actual_result(rec)

    # phases ---------------------------------------------------------------
    async def reset(self) -> None:
        dut = self.dut
        dut.steps__valid.value = 0
        dut.steps__payload.value = 0
        dut.results__ready.value = 0
        dut.rst.value = 1
        Clock(dut.clk, 10, unit="ns").start()
        await ClockCycles(dut.clk, 3)
        dut.rst.value = 0

    def start(self) -> None:
        for seq in self.sequences:
            for t, x in enumerate(seq):
                last = t == len(seq) - 1
                self.driver.append(self.pack_step(x, last), (np.asarray(x, dtype=np.int64), last))
        self.driver.start()
        self.result_monitor.start()
        self.step_monitor.start()

    def stop(self) -> None:
        self.driver.stop()
        self.result_monitor.stop()
        self.step_monitor.stop()

    def stall_limit(self) -> int:
        """Cycles without any progress after which the DUT is declared hung."""
        class_groups = self.build["class_groups"]
        return 50 * (self.groups * (self.m + 1) + class_groups * (self.d + 1) + 20)

    async def wait_done(self) -> bool:
        """Run until every sequence has its result; False if the DUT stopped making progress."""
        limit, chunk = self.stall_limit(), 64
        idle = 0
        while len(self.results) < len(self.sequences):
            before = self.progress
            await ClockCycles(self.dut.clk, chunk)
            idle = 0 if self.progress != before else idle + chunk
            if idle > limit:
                return False
        await ClockCycles(self.dut.clk, 4)  # let stray pulses show up
        return True

    # measurements ---------------------------------------------------------
    def measurements(self) -> dict:
        """Cycles per step while the DUT, not the driver, set the pace.

        For every step ``t >= 1`` whose beat was offered right after the previous beat was
        accepted (no driver gap), ``done(t) - done(t-1)`` is the time the DUT spent on step ``t``.
        The floor ``ceil(d/P) * nnz(x_t)`` is averaged over the same steps.
        """
        mod = 1 << COUNTER_BITS
        intervals, floors, all_floors = [], [], []
        k = 0
        for seq in self.sequences:
            for t in range(len(seq)):
                nnz = int(np.count_nonzero(seq[t]))
                all_floors.append(self.groups * nnz)
                if t and k < min(len(self.steps), len(self.driver.gapless)) and self.driver.gapless[k]:
                    intervals.append((self.steps[k].cycle - self.steps[k - 1].cycle) % mod)
                    floors.append(self.groups * nnz)
                k += 1
        total = 0
        if self.accept_cycles and self.results:
            total = (self.results[-1].cycle - self.accept_cycles[0]) % mod + 1
        return {
            "cycles_per_step": float(np.mean(intervals)) if intervals else None,
            "cycle_floor_per_step": float(np.mean(floors)) if floors else None,
            "measured_steps": len(intervals),
            "cycle_floor_per_step_all": float(np.mean(all_floors)) if all_floors else None,
            "total_cycles": total,
        }


def write_result(tb: Testbench, finished: bool, error: str | None, wall_s: float) -> dict:
    """The JSON the runner reads (written atomically, also when the testbench itself failed)."""
    cfg, sb = tb.cfg, tb.scoreboard
    meas = tb.measurements()
    result = {
        "build_dir": str(cfg.build_dir),
        "seed": cfg.seed,
        "gaps": cfg.gaps,
        "lanes": tb.build["lanes"],
        "sequences": len(tb.sequences),
        "steps": int(sum(len(s) for s in tb.sequences)),
        "steps_checked": sb.steps_checked,
        "results_checked": sb.results_checked,
        "mismatches": sb.mismatches,
        "first_mismatch": None
        if sb.first is None
        else {
            "sequence": sb.first.sequence,
            "step": sb.first.step,
            "signal": sb.first.signal,
            "expected": str(sb.first.expected),
            "got": str(sb.first.got),
            "line": sb.first.line(),
        },
        "hung": not finished,
        "error": error,
        "classes": [r.class_index for r in tb.results],
        "events": int(sum(s.events for s in tb.steps)),
        "macs": int(sum(s.macs for s in tb.steps)),
        **meas,
        "wall_s": wall_s,
    }
    cfg.result.parent.mkdir(parents=True, exist_ok=True)
    tmp = cfg.result.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, cfg.result)
    return result


@cocotb.test()
async def accelerator_matches_golden(dut):
    """Every step's state and gate and every sequence's logits and class equal the golden model's."""
    t0 = time.perf_counter()
    tb = Testbench(dut, Config.from_env())
    finished, error = False, None
    try:
        await tb.reset()
        tb.start()
        finished = await tb.wait_done()
    except BaseException as exc:  # also the cancellation that follows a failing monitor
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        tb.stop()
        error = tb.errors[0] if tb.errors else error
        sb = tb.scoreboard
        if not finished and error is None:
            dut._log.error("no progress for %d cycles: the DUT hung", tb.stall_limit())
        sb.finish([len(s) for s in tb.sequences])
        result = write_result(tb, finished, error, time.perf_counter() - t0)
    dut._log.info(
        "%d sequences, %d steps, %d mismatches, %s cycles/step (floor %s)",
        result["sequences"],
        result["steps"],
        sb.mismatches,
        result["cycles_per_step"],
        result["cycle_floor_per_step"],
    )
    assert sb.mismatches == 0, sb.first.line() if sb.first else "mismatch"
