"""The regression's jobs: build every design, run each under a simulator, one :class:`Row` per job.

Builds run in a process pool (Amaranth elaboration is Python-bound); simulations in a thread pool
(each thread waits on a simulator subprocess). A mutant runs until its first mismatch and records
the test that caught it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from regress_plan import Design

from codesign.errors import CodesignError
from codesign.verify.runner import run_sim

__all__ = ["Row", "build_args", "run_all", "run_job"]


@dataclass
class Row:
    design: Design
    sim: str
    ok: bool = False
    caught_by: str | None = None
    sequences: int = 0
    steps: int = 0
    mismatches: int = 0
    message: str = ""
    accuracy: float | None = None
    wall_s: float = 0.0
    tests: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)
    waveform: str | None = None
    cycles_per_step: float | None = None
    floor: float | None = None


def build_args(d: Design) -> tuple:
    """What :func:`_build` takes for design ``d`` (a picklable tuple, for a process pool)."""
    return (
        str(d.bundle),
        str(d.build),
        d.lanes,
        d.faults,
        d.share,
        d.weights,
        d.target,
        d.narrow,
        d.share_updates,
        d.merge,
        d.netlist,
        d.pins,
        d.counters,
        d.bus,
    )


def _build(args: tuple) -> tuple[str, str | None]:
    """Build one design (and map it for its chip, the netlist designs); ``(build, error or None)``."""
    (
        bundle,
        out,
        lanes,
        faults,
        share,
        weights,
        target,
        narrow,
        share_updates,
        merge,
        netlist,
        pins,
        counters,
        bus,
    ) = args
    from codesign.fpga.netlist import netlist_build
    from codesign.fpga.pins import pins_build
    from codesign.hw.build import build_rtl

    try:
        build_rtl(
            Path(bundle),
            Path(out),
            lanes=lanes,
            weights=weights,
            faults=set(faults),
            share=share,
            target=target,
            narrow=narrow,
            share_updates=share_updates,
            merge=merge,
            counters=counters,
            bus=bus,
        )
        if netlist is not None:
            (pins_build if pins else netlist_build)(Path(out), netlist)
    except Exception as err:  # noqa: BLE001 - reported with the design's name
        return str(out), f"{type(err).__name__}: {err}"
    return str(out), None


def _run_pins(row: Row, design: Design, sim: str, seed: int, timeout_s: float) -> None:
    """A netlist of ``fpga_top`` at its UART pins (:func:`codesign.board.pins.run_pins`) into ``row``."""
    from codesign.board.pins import run_pins

    try:
        rep = run_pins(
            design.sim_build,
            sim,
            vectors=design.vectors,
            seed=seed,
            max_steps=design.max_steps,
            timeout_s=timeout_s,
        )
    except CodesignError as err:
        row.message = str(err).splitlines()[0]
        return
    row.sequences, row.steps, row.mismatches, row.ok = rep.sequences, rep.steps, rep.mismatches, rep.ok
    row.message = rep.summary_line()
    first = {"line": rep.first_mismatch} if rep.first_mismatch else None
    row.tests = {
        "sequences_at_the_pins": {
            "passed": rep.ok,
            "sequences": rep.sequences,
            "steps": rep.steps,
            "mismatches": rep.mismatches,
            "first_mismatch": first,
            "wall_s": rep.wall_s,
        }
    }


def _run_axi(row: Row, design: Design, sim: str, seed: int, timeout_s: float) -> None:
    """The AXI face under cocotbext-axi (:func:`codesign.verify.axi.run_axi`) into ``row``."""
    from codesign.verify.axi import run_axi

    t0 = time.perf_counter()
    try:
        rec = run_axi(
            design.build,
            sim,
            vectors=design.vectors,
            seed=seed,
            max_steps=design.max_steps,
            timeout_s=timeout_s,
        )
    except CodesignError as err:
        row.message = str(err).splitlines()[0]
        return
    row.sequences, row.steps, row.mismatches = rec["sequences"], rec["steps"], rec["mismatches"]
    row.ok = rec["mismatches"] == 0 and "error" not in rec
    row.message = (
        rec.get("error") or rec["first_mismatch"] or f"{rec['sequences']} sequences bit-exact over AXI"
    )
    first = {"line": rec["first_mismatch"]} if rec["first_mismatch"] else None
    row.tests = {
        "sequences_over_axi": {
            "passed": row.ok,
            "sequences": rec["sequences"],
            "steps": rec["steps"],
            "mismatches": rec["mismatches"],
            "first_mismatch": first,
            "wall_s": time.perf_counter() - t0,
        }
    }


def run_job(design: Design, sim: str, seed: int, timeout_s: float) -> Row:
    row = Row(design, sim)
    t0 = time.perf_counter()
    mutant = design.kind == "mutant"
    if design.bus == "axi":
        _run_axi(row, design, sim, seed, timeout_s)
        row.wall_s = time.perf_counter() - t0
        return row
    if design.pins:
        _run_pins(row, design, sim, seed, timeout_s)
        row.wall_s = time.perf_counter() - t0
        return row
    bundles = design.bundles
    if sim == "icarus" and design.icarus_bundles:
        bundles = bundles[: design.icarus_bundles]
    try:
        rep = run_sim(
            design.sim_build,
            sim=sim,
            vectors=0 if sim in design.inputs else design.vectors,
            seed=seed,
            inputs=design.inputs.get(sim),
            labels=design.labels if sim in design.inputs else None,
            timeout_s=timeout_s,
            tests=design.icarus_tests if sim == "icarus" and design.icarus_tests else design.tests,
            bundles=bundles,
            max_steps=design.max_steps,
            long_steps=design.long_steps,
            waves="never" if mutant else "on_failure",
            stop_on_mismatch=mutant,
        )
    except CodesignError as err:
        row.message = str(err).splitlines()[0]
    else:
        row.sequences, row.steps, row.mismatches = rep.sequences, rep.steps, rep.mismatches
        row.ok = rep.ok
        row.message = rep.summary_line()
        row.accuracy = rep.accuracy
        row.tests = {
            t: {k: r[k] for k in ("passed", "sequences", "steps", "mismatches", "first_mismatch", "wall_s")}
            for t, r in rep.tests.items()
        }
        row.coverage = rep.coverage
        row.waveform = rep.waveform
        row.cycles_per_step, row.floor = rep.cycles_per_step, rep.cycle_floor_per_step
        if mutant:
            row.caught_by = rep.failed_test
    row.wall_s = time.perf_counter() - t0
    return row


def print_row(k: int, n: int, row: Row) -> None:
    d = row.design
    if d.kind == "mutant":
        verdict = f"CAUGHT by {row.caught_by}" if row.caught_by else "ESCAPED"
        extra = row.message if row.caught_by else row.message
        print(f"[{k}/{n}] {d.name:<28} {row.sim:<9} {verdict}: {extra} ({row.wall_s:.1f} s)", flush=True)
        return
    status = "PASS" if row.ok else "FAIL"
    bundles = len(d.bundles) or 1
    if row.sim == "icarus" and d.icarus_bundles:
        bundles = min(bundles, d.icarus_bundles)
    acc = "" if row.accuracy is None else f", RTL accuracy {row.accuracy:.3f}"
    print(
        f"[{k}/{n}] {d.name:<28} {row.sim:<9} {status} {bundles} bundles, {row.sequences} sequences, "
        f"{row.steps} steps, {row.mismatches} mismatches{acc} ({row.wall_s:.1f} s) {'' if row.ok else row.message}",
        flush=True,
    )


def run_all(designs: list[Design], mutants: list[Design], args, t0: float) -> list[Row]:
    """Build every design and mutant (``--jobs`` processes), then run each design under every
    simulator and each mutant under ``--mutant-sim`` (``--jobs`` threads), longest first; a line is
    printed as each job ends."""
    builds = [build_args(d) for d in designs + mutants]
    failed_builds = {}
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, err in pool.map(_build, builds):
            if err:
                failed_builds[path] = err
                print(f"build failed: {path}: {err}", flush=True)
    print(f"{len(builds)} builds in {time.perf_counter() - t0:.1f} s", flush=True)
    jobs = [(d, sim) for d in designs for sim in args.sims]
    mutant_sim = args.mutant_sim if args.mutant_sim in args.sims else args.sims[0]
    jobs += [(m, mutant_sim) for m in mutants]
    # longest first: the long sequence and the reference bundles, then the rest
    order = {"long": 0, "netlist": 1, "reference": 1, "axi": 2, "random": 2, "mutant": 3}
    jobs.sort(key=lambda j: (order[j[0].kind], j[1] != "verilator"))
    rows: list[Row] = []
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for d, sim in jobs:
            if str(d.build) in failed_builds:
                row = Row(d, sim, message=f"build failed: {failed_builds[str(d.build)]}")
                rows.append(row)
                continue
            futures[pool.submit(run_job, d, sim, args.seed, args.timeout)] = (d, sim)
        for fut in as_completed(futures):
            row = fut.result()
            with lock:
                rows.append(row)
                print_row(len(rows), len(jobs), row)
    return rows
