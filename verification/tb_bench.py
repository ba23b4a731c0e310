"""The testbench: drivers, monitors, golden model and scoreboard wired around the DUT, and the
phases the tests are made of (reset, load weights, warm-up, run sequences, check counters).

The job comes from the environment (set by ``codesign.verify.runner``):

``CODESIGN_BUILD_DIR``  build directory (``accelerator.v``, ``build.json``, bundle copy) - required
``CODESIGN_JOB``        JSON file of a :class:`codesign.verify.job.Job`
``CODESIGN_RESULT``     where the JSON result goes (default ``<build>/tb_result.json``)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tb_coverage as cov
from cocotb.triggers import ClockCycles, FallingEdge
from tb_drivers import ClockLoop, ReadyDriver, StreamDriver
from tb_fields import Fields
from tb_golden import GoldenModel, Totals
from tb_monitors import StreamMonitor, TraceMonitor
from tb_scoreboard import InOrderChecker, Mismatch, Scoreboard, compare_result, compare_trace
from tb_stimulus import corner_bundles

from codesign.bundle import load_bundle
from codesign.bundle.io import Bundle
from codesign.hw.images import config_beats
from codesign.hw.plan import plan_accelerator
from codesign.hw.pysim import item_beats
from codesign.intmath import signed_range
from codesign.verify.job import Job
from codesign.verify.vectors import load_vectors

__all__ = ["StopOnMismatch", "Testbench"]

_WARMED_UP: list[bool] = []

_LOADED: dict = {}
"""What the loadable memories of a runtime build hold, ``(target, addr, elem) -> value`` (absent: 0);
kept across the tests of one simulator run, as the memories are."""


class StopOnMismatch(Exception):
    """Ends a test at its first mismatch (``Job.stop_on_mismatch``: the mutation check)."""


class Testbench:
    """Wires drivers, monitors, golden model and scoreboard around the DUT."""

    def __init__(self, dut, test: str) -> None:
        self.dut = dut
        self.test = test
        build = os.environ.get("CODESIGN_BUILD_DIR")
        if not build:
            raise RuntimeError("CODESIGN_BUILD_DIR is not set (run through codesign.verify.runner.run_sim)")
        self.build_dir = Path(build)
        self.build = json.loads((self.build_dir / "build.json").read_text())
        job_path = os.environ.get("CODESIGN_JOB")
        self.job = Job.read(Path(job_path)) if job_path else Job()
        self.result_path = Path(os.environ.get("CODESIGN_RESULT") or self.build_dir / "tb_result.json")
        self.lanes = self.build["lanes"]
        # the plan the build was made with (a --target build may give the readout fewer lanes)
        self.plan_options = {
            "target": self.build["plan"].get("target", "generic"),
            "counters": self.build["plan"].get("counter_set", "all"),
            "share": self.build["plan"].get("share", "off"),
            "narrow": self.build["plan"].get("narrow", "off"),
            "share_updates": self.build["plan"].get("share_updates", "off"),
            "merge": self.build["plan"].get("merge", "off"),
        }
        self.runtime = self.build["weights"] == "runtime"
        # a spram build (--weights spram) loads its own bundle's weights into its single-port RAMs,
        # which hold X until then: every element is written, zeros too
        self.spram = self.build["weights"] == "spram"
        if self.spram:
            self.plan_options |= {"frozen": True, "spram": True}
            if not _LOADED:
                _LOADED["valid"] = False
        self.own_bundle = load_bundle(self.build_dir)
        self.input_size = self.own_bundle.manifest.input.size
        self.seed = self.job.seed + sum(map(ord, test))
        self.rng = np.random.default_rng(self.seed)
        self.errors: list[str] = []
        self._stalls_seen: set[str] = set()
        self.progress = 0
        self.phase_cycles = 0
        self.phase_steps = 0
        self.scoreboard = Scoreboard(dut._log)
        self.loop = ClockLoop(self)
        self.inputs_fields = Fields(self.build["inputs_payload"])
        self.config_fields = Fields(self.build["config_payload"])
        self.results_fields = Fields(self.build["results_payload"])
        self.counter_fields = Fields(self.build["counters_fields"])  # empty: no counters port
        self.model = GoldenModel(self)
        self.trace_checkers = {}
        self.trace_monitors = []
        for port, spec in self.build["trace_fields"].items():
            name = "layer" + port.split("_")[1]
            self.trace_checkers[name] = InOrderChecker(name, self.scoreboard, compare_trace)
            self.trace_monitors.append(
                TraceMonitor(self, port, Fields(spec), self.trace_checkers[name].add_actual)
            )
        self.result_checker = InOrderChecker("results", self.scoreboard, compare_result)
        self.input_driver = StreamDriver(self, "inputs", "input", self.rng, 0.3)
        self.config_driver = StreamDriver(self, "config", "config", self.rng, 0.1)
        self.result_ready = ReadyDriver(self, "results", self.rng, 0.6)
        self.input_monitor = StreamMonitor(self, "inputs", self.inputs_fields, self.model.on_beat)
        self.result_monitor = StreamMonitor(self, "results", self.results_fields, self._on_result)
        self.components = [
            self.input_driver,
            self.config_driver,
            self.result_ready,
            self.input_monitor,
            self.result_monitor,
            *self.trace_monitors,
        ]
        self.results_seen = 0
        self.snapshot: dict[str, int] | None = None
        self.counter_totals: dict[str, int] = {}
        self.xcounters: set[str] = set()  # counters that held X (reported when checked)
        self.sequences_run = 0
        self.steps_run = 0
        self.floor_total = 0
        self.t0 = time.perf_counter()
        self.set_gaps(self.job.gaps)

    # ------------------------------------------------------------------ coverage, gaps, results
    def sample(self, point: str, value: str) -> None:
        cov.sample(point, value)

    def sample_stall(self, what: str) -> None:
        key = {
            "input gap": "input valid gap",
            "input not ready": "input not ready",
            "config gap": "config gap",
            "result back-pressure": "result back-pressure",
        }.get(what)
        if key and key not in self._stalls_seen:
            self._stalls_seen.add(key)
            self.sample("stall", key)

    def set_gaps(self, gaps: bool) -> None:
        self.input_driver.gap_probability = 0.3 if gaps else 0.0
        self.config_driver.gap_probability = 0.1 if gaps else 0.0
        self.result_ready.ready_probability = 0.6 if gaps else 1.0

    def _on_result(self, beat: dict) -> None:
        if beat["final"] is None:  # an X: a mismatch to report, not a crash of the testbench
            self.scoreboard.report(Mismatch(None, None, "readout", None, "final", "0 or 1", "X"))
        elif beat["final"]:
            self.results_seen += 1
        self.result_checker.add_actual(beat)

    # ------------------------------------------------------------------ phases
    @property
    def cycle(self) -> int:
        return self.loop.cycle

    def start(self) -> None:
        for c in self.components:
            c.start()
        self.loop.start()

    def stop(self) -> None:
        for c in self.components:
            c.stop()
        self.loop.stop()

    async def reset(self, cycles: int = 3) -> None:
        """Synchronous reset; drops queued beats, partial sequences and pending expectations."""
        dut = self.dut
        await FallingEdge(dut.clk)
        dut.rst.value = 1
        self.input_driver.flush()
        self.config_driver.flush()
        await ClockCycles(dut.clk, cycles)
        await FallingEdge(dut.clk)
        self.model.on_reset()
        for ch in (*self.trace_checkers.values(), self.result_checker):
            ch.flush()
        self.results_seen = 0
        self.model.totals = Totals()
        dut.rst.value = 0
        await FallingEdge(dut.clk)
        self.snapshot = self.read_counters()

    def stall_limit(self) -> int:
        work = sum(e["groups"] * (e["inputs"] + 4) for e in self.build["plan"]["engines"])
        return 64 * work + 4000

    async def wait_until(self, done: Callable[[], bool], what: str) -> bool:
        """Watchdog: wait for ``done()``; a stretch of ``stall_limit`` cycles without any transfer or
        trace beat is a hang (reported as a mismatch)."""
        limit, idle = self.stall_limit(), 0
        while not done():
            before = self.progress
            await ClockCycles(self.dut.clk, 16)
            idle = 0 if self.progress != before else idle + 16
            if idle > limit:
                self.scoreboard.report(
                    Mismatch(
                        self.model.sequences,
                        None,
                        "accelerator",
                        None,
                        "progress",
                        what,
                        f"no transfer for {idle} cycles",
                    )
                )
                return False
            if self.errors:
                raise RuntimeError(self.errors[0])
            if self.job.stop_on_mismatch and self.scoreboard.mismatches:
                raise StopOnMismatch(self.scoreboard.first.line())
        return True

    async def load(self, bundle: Bundle) -> None:
        """Load every parameter of ``bundle`` through ``config``.

        Only the elements that differ from what the memories hold are written (memories keep
        their contents through reset and from one test to the next; a runtime build starts at
        zero). If a load did not finish, the next one writes every element.
        """
        plan = plan_accelerator(bundle.manifest, self.lanes, **self.plan_options)
        image = _LOADED if _LOADED.get("valid", True) else None
        beats = [
            (t, a, e, v)
            for t, a, e, v in config_beats(bundle, plan)
            if image is None or image.get((t, a, e), 0) != v
        ]
        _LOADED.clear()
        _LOADED["valid"] = False
        f = self.config_fields
        self.config_driver.append(
            f.pack({"target": t, "addr": a, "elem": e, "value": v}) for t, a, e, v in beats
        )
        if await self.wait_until(self.config_driver.idle, "config"):
            _LOADED.update({(t, a, e): v for t, a, e, v in config_beats(bundle, plan)})
            _LOADED["valid"] = True
        await ClockCycles(self.dut.clk, 2)

    async def warm_up(self) -> None:
        """Unchecked dense sequences, then a reset (``Job.warm_up``, once per simulator run).

        Loads every memory read port's data register before the checked sequences. Off by
        default: the power-up X it once hid (a never-loaded read register times 0 on a
        biases-only slot, under Icarus) is fixed in the RTL (a biases-only slot multiplies 0 by 0),
        and the regression runs without it so that such an X would show.
        """
        bundle = self.model.bundle
        fmt = bundle.manifest.input
        lo, hi = signed_range(fmt.bits)
        x = np.array([np.full(fmt.size, hi if t % 2 == 0 else lo) for t in range(4)], dtype=np.int64)
        self.model.ignore = True
        if self.runtime:  # every gate open: every neuron of every layer changes, the readout gets items
            await self.load(corner_bundles(bundle)["gate open"])
        self.input_driver.append(self.inputs_fields.pack(b) for b in item_beats([x, -x]))
        await self.wait_until(self.input_driver.idle, "warm-up inputs")
        await ClockCycles(
            self.dut.clk, 50 * sum(e["groups"] * (e["inputs"] + 4) for e in self.build["plan"]["engines"])
        )
        await self.reset()
        if self.runtime or self.spram:
            await self.load(bundle)
        self.model.ignore = False
        _WARMED_UP.append(True)

    async def use(self, bundle: Bundle) -> None:
        if self.runtime or self.spram:
            if self.runtime and self.model.bundle is not None:
                self.sample("protocol", "weights reloaded")
            await self.load(bundle)
        if self.job.warm_up and not _WARMED_UP:
            self.model.set_bundle(bundle)
            await self.warm_up()
        self.model.set_bundle(bundle)
        cov.cover_bundle(bundle, self.lanes)

    async def run_sequences(self, sequences: list[np.ndarray], *, gaps: bool | None = None) -> None:
        """Send sequences, wait for every result and trace beat, then check the counters."""
        if gaps is not None:
            self.set_gaps(gaps)
        if len(sequences) > 1 and gaps is False:
            self.sample("inputs", "back-to-back sequences")
        start_results = self.result_checker.checked
        want_results = sum(len(s) if self.model.plan.per_step else 1 for s in sequences)
        ro_groups = self.model.plan.readout.groups
        words = [self.inputs_fields.pack(b) for b in item_beats(sequences)]
        c0 = self.cycle
        self.input_driver.append(words)

        def done():
            return (
                self.result_checker.checked - start_results >= want_results * ro_groups
                and not self.result_checker.expected
                and all(not ch.expected for ch in self.trace_checkers.values())
            )

        await self.wait_until(done, "every result and trace beat")  # a hang is reported as a mismatch
        self.phase_cycles += self.cycle - c0
        self.phase_steps += sum(len(s) for s in sequences)
        await ClockCycles(self.dut.clk, 8)  # extra beats show up as unpaired actuals
        for ch in (*self.trace_checkers.values(), self.result_checker):
            ch.finish()
        self.sequences_run += len(sequences)
        self.steps_run += sum(len(s) for s in sequences)
        self.check_counters()
        if gaps is not None:
            self.set_gaps(self.job.gaps)

    def read_counters(self) -> dict[str, int | None]:
        """Every counter (``None`` for one holding X or Z bits); none for a build without counters."""
        if not self.counter_fields.spec:
            return {}
        return self.counter_fields.unpack_value(self.dut.counters.value)

    def check_counters(self) -> None:
        """Counters moved by exactly what the golden model says (MACs and events per layer, readout
        MACs, sequences, results) since the last snapshot."""
        now = self.read_counters()
        before = self.snapshot or {}
        delta = {  # the counters wrap at their width (build.json: counters_fields)
            k: None
            if v is None or before.get(k, 0) is None
            else (v - before.get(k, 0)) % (1 << self.counter_fields.spec[k]["width"])
            for k, v in now.items()
        }
        tot = self.model.totals
        expected = {"sequences": tot.sequences, "results": tot.results}
        for name, v in tot.macs.items():
            expected[f"{name}_macs"] = v
        for name, v in tot.events.items():
            expected[f"{name}_events"] = v
        for name, v in tot.opens.items():
            expected[f"{name}_open_steps"] = v
        if tot.readout_macs is not None:
            expected["readout_macs"] = tot.readout_macs
        for name, v in expected.items():
            if name in delta and delta[name] != v:
                layer = name.rsplit("_", 1)[0] if name.startswith(("layer", "readout")) else "accelerator"
                self.scoreboard.report(Mismatch(None, None, layer, None, f"counter {name}", v, delta[name]))
        for k, v in delta.items():
            if v is None:
                self.xcounters.add(k)
            else:
                self.counter_totals[k] = self.counter_totals.get(k, 0) + v
        self.floor_total += tot.floor
        self.model.totals = Totals()
        self.snapshot = now

    # ------------------------------------------------------------------ sequences
    def bundles(self) -> list[Bundle]:
        if self.job.bundles and self.runtime:
            return [load_bundle(Path(b)) for b in self.job.bundles]
        return [self.own_bundle]

    def random_sequences(self, bundle: Bundle, count: int, seed: int) -> list[np.ndarray]:
        inputs = Path(self.job.inputs) if self.job.inputs else None
        return load_vectors(bundle, vectors=count, seed=seed, inputs=inputs, max_steps=self.job.max_steps)

    def write_result(self, passed: bool, error: str | None) -> dict:
        sb = self.scoreboard
        steps = self.phase_steps
        record = {
            "test": self.test,
            "passed": passed and sb.mismatches == 0 and error is None,
            "sequences": self.sequences_run,
            "steps": self.steps_run,
            "mismatches": sb.mismatches,
            "first_mismatch": None if sb.first is None else sb.first.to_dict(),
            "error": error,
            "classes": self.model.classes,
            "cycles": self.phase_cycles,
            "cycles_per_step": self.phase_cycles / steps if steps else None,
            "cycle_floor_per_step": self.floor_total / self.steps_run if self.steps_run else None,
            "counters": self.counter_totals,
            "x_counters": sorted(self.xcounters),
            "coverage": cov.export(),
            "wall_s": time.perf_counter() - self.t0,
        }
        try:
            data = json.loads(self.result_path.read_text())
        except (OSError, ValueError):
            data = {}
        tests = data.get("tests", {})
        tests[self.test] = record
        data = {
            "build_dir": str(self.build_dir),
            "lanes": self.lanes,
            "weights": self.build["weights"],
            "tests": tests,
        }
        self.result_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.result_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        os.replace(tmp, self.result_path)
        return record
