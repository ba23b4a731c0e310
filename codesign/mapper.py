"""Pick the build for a device: ``codesign rtl BUNDLE --out B --device D``.

The mapper enumerates the legal mapping options for the device (lanes 1, 2, 4, ... up to the
widest layer, weights, counters, shared multipliers with their ``:K`` serial products, folded
words, shared update units, merged words), plans each (:func:`codesign.hw.cost.build_plan`, a few
milliseconds) and predicts its resources (:func:`codesign.hw.cost.predict`: block RAMs, SPRAMs
and DSPs counted from the plan, logic cells by the fitted model). Plans that come out identical
are one candidate. Candidates that fit the device are ranked by the objective:

* ``area``: logic cells plus the hard blocks, each weighed at an eighth of its share of the
  chip's logic cells (:func:`area_score`): the blocks are on the chip anyway, but a design that
  leaves some free places more easily;
* ``energy``: the leakage of that area over the time a step takes (the step period when a step
  rate is given, else ``cycles / clock``); the dynamic energy is the same MACs and reads for
  every mapping of one network, so it does not rank them;
* ``latency``: cycles per step.

Cycles per step come from the cycle model (:func:`codesign.hw.pysim.simulate`) on the bundle's
own test inputs, or the caller's (:func:`codesign.report.measure.load_inputs`), one run per *cycle signature*:
the lanes, passes per slot (shared and digit-serial multipliers), shared update units and
pipeline stages of every engine. Weights, counters, folded and merged words take the same cycles,
so most candidates share a run. Runs are cached in ``~/.cache/codesign/cycles``. The winner is
the best candidate that meets the step rate at the clock; ``--confirm N`` synthesises the N best
(:func:`codesign.fpga.batch_jobs.run_job`, cached) and picks on the measured figures.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codesign.errors import CodesignError
from codesign.hw.cost import Device, Resources, build_plan, get_device, predict
from codesign.hw.plan import AcceleratorPlan

__all__ = [
    "OBJECTIVES",
    "Candidate",
    "Mapping",
    "area_score",
    "enumerate_candidates",
    "map_bundle",
    "search_space",
]

OBJECTIVES = ("energy", "area", "latency")
OPTION_KEYS = ("weights", "counters", "share", "narrow", "share_updates", "merge")
"""The mapping options besides lanes, as :func:`codesign.hw.build.build_rtl` names them."""
FLAGS = {
    "weights": "--weights",
    "counters": "--counters",
    "share": "--share-multipliers",
    "narrow": "--narrow",
    "share_updates": "--share-updates",
    "merge": "--merge",
}
BLOCK_WEIGHT = 1 / 8
"""A hard block (block RAM, SPRAM, DSP) weighs this fraction of its share of the chip's cells."""
LEAK_NW_PER_CELL = 10.0
"""Leakage of one logic-cell equivalent (nW), an assumption: only ratios between candidates of
one device matter, and it scales them all alike."""
CYCLE_SEQUENCES = 1
CYCLE_STEPS = 30
"""The cycle model runs the first ``CYCLE_SEQUENCES`` test sequences, ``CYCLE_STEPS`` steps each."""
CACHE = Path(os.environ.get("CODESIGN_CACHE", Path.home() / ".cache" / "codesign")) / "cycles"


def lane_counts(widest: int) -> list[int]:
    """1, 2, 4, ... below the widest layer, and the widest layer itself."""
    out = [1]
    while out[-1] * 2 < widest:
        out.append(out[-1] * 2)
    return sorted(set(out) | {widest})


def search_space(device: Device, fixed: dict[str, str]) -> dict[str, list[str]]:
    """The values of each option the mapper tries on ``device``; an option in ``fixed`` (given on
    the command line) takes only its value."""
    weights = ["frozen", "spram", "baked", "runtime"] if device.sprams else ["frozen", "baked", "runtime"]
    bases = ["off", "auto", "1", "2"] if device.dsps else ["off", "1", "2"]
    share = [b + suffix for b in bases for suffix in ("", ":2", ":4")]
    space = {
        "weights": weights,
        "counters": ["none", "basic", "all"],
        "share": share,
        "narrow": ["off", "auto"],
        "share_updates": ["off", "on"],
        "merge": ["off", "auto"],
    }
    for key, value in fixed.items():
        space[key] = [value]
    return space


@dataclass
class Candidate:
    """One build the mapper weighs."""

    lanes: int
    options: dict[str, str]
    plan: AcceleratorPlan
    resources: Resources
    misses: list[str]
    cycles_per_step: float | None = None
    measured: dict | None = None  # --confirm: the synthesis summary

    @property
    def fits(self) -> bool:
        return not self.misses

    def flags(self) -> str:
        """The ``codesign rtl`` options that build it."""
        return " ".join([f"--lanes {self.lanes}", *(f"{FLAGS[k]} {v}" for k, v in self.options.items())])

    def signature(self) -> str:
        """What decides the cycles per step: every engine's lanes, passes, update units, stages."""
        engines = [
            (e.lanes, e.groups, e.passes, e.update_gap, e.shared_stages, e.update_latency, e.queue_depth)
            for e in self.plan.engines
        ]
        return json.dumps({"target": self.plan.target, "engines": engines})


def area_score(resources: Resources, device: Device) -> float:
    """Logic cells plus each hard block at :data:`BLOCK_WEIGHT` of its share of the chip's cells."""
    cells = device.logic_cells or 5280
    score = float(resources.logic_cells)
    for used, avail in (
        (resources.block_rams, device.block_rams),
        (resources.sprams, device.sprams),
        (resources.dsps, device.dsps),
    ):
        if avail:
            score += BLOCK_WEIGHT * used * cells / avail
    return score


def _plan_key(plan: AcceleratorPlan) -> str:
    """Plans that differ only in the names of options without effect (``1:2`` where no product is
    serial, ``--merge auto`` where nothing merges) are one candidate."""
    from codesign.hw.build import plan_summary

    summary = plan_summary(plan)
    for name in ("share", "narrow", "share_updates", "merge"):
        summary.pop(name)
    return hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()


def _redundant(options: dict[str, str], fixed: dict[str, str], plan_of, serial_anywhere: bool) -> bool:
    """Whether the combination plans as a simpler one does: ``X:K`` where no product is a LUT
    product, ``--narrow auto`` where no lane takes its matrices in passes (checked on the simpler
    combination's plan, which the search plans anyway)."""
    from codesign.hw.plan import matrix_passes

    base_share, _, k = options["share"].partition(":")
    if k and "share" not in fixed and not serial_anywhere:
        base = plan_of(options | {"share": base_share})
        if base is not None and not any(e.multiplier == "lut" for e in base.engines):
            return True
    if options["narrow"] == "auto" and "narrow" not in fixed:
        base = plan_of(options | {"narrow": "off"})
        if base is not None and not any(matrix_passes(e) > 1 for e in base.engines):
            return True
    return False


def enumerate_candidates(
    bundle, device: Device, fixed: dict[str, str], lanes: int | None = None
) -> tuple[list[Candidate], int]:
    """Every distinct plan of the search space with its predicted resources, and how many option
    combinations were tried. Combinations the plan refuses (``--weights spram`` where no matrix
    fits an SPRAM) are left out; combinations that plan as a simpler one (:func:`_redundant`,
    ``--share-updates on`` at one lane) are not planned twice."""
    from codesign.hw.targets import get_target

    widest = max(layer.size for layer in bundle.manifest.layers)
    space = search_space(device, fixed)
    serial_anywhere = not get_target(device.target).multipliers  # X:K serialises every engine there
    seen: set[str] = set()
    out: list[Candidate] = []
    tried = 0
    for p in [lanes] if lanes else lane_counts(widest):
        plans: dict[tuple, AcceleratorPlan | None] = {}

        def plan_of(options: dict[str, str], p: int = p, plans: dict = plans) -> AcceleratorPlan | None:
            key = tuple(options[k] for k in OPTION_KEYS)
            if key not in plans:
                try:
                    plans[key] = build_plan(bundle, p, target=device.target, **options)
                except CodesignError:
                    plans[key] = None
            return plans[key]

        for values in itertools.product(*(space[k] for k in OPTION_KEYS)):
            options = dict(zip(OPTION_KEYS, values, strict=True))
            tried += 1
            if p == 1 and options["share_updates"] == "on" and "share_updates" not in fixed:
                continue  # the same plan as off
            if _redundant(options, fixed, plan_of, serial_anywhere):
                continue
            plan = plan_of(options)
            if plan is None:
                continue
            key = _plan_key(plan)
            if key in seen:
                continue
            seen.add(key)
            resources = predict(plan, device)
            out.append(Candidate(p, options, plan, resources, resources.misses(device)))
    return out, tried


@dataclass
class CycleModel:
    """Cycles per step of a candidate, one simulation per cycle signature (cached on disk)."""

    bundle: object
    bundle_dir: Path
    progress: Callable[[str], None] = lambda text: None
    runs: dict[str, float] = field(default_factory=dict)
    _inputs: list | None = None
    source: str = ""

    given: list | None = None  # the caller's integer input sequences, else the bundle's test set

    def inputs(self) -> list:
        if self._inputs is None:
            from codesign.report.measure import load_inputs

            self._inputs, self.source = load_inputs(
                self.bundle, sequences=CYCLE_SEQUENCES, steps=CYCLE_STEPS, given=self.given
            )
        return self._inputs

    def _cache_path(self, signature: str) -> Path:
        from codesign.bundle.io import MANIFEST, WEIGHTS

        h = hashlib.sha256()
        for name in (MANIFEST, WEIGHTS):
            h.update((self.bundle_dir / name).read_bytes())
        for src in sorted(Path(__file__).parent.glob("*.py")):
            h.update(src.read_bytes())
        h.update(f"{signature}{CYCLE_SEQUENCES}{CYCLE_STEPS}".encode())
        if self.given is not None:  # the caller's inputs time the candidates: they key the cache
            for seq in self.inputs():
                h.update(seq.tobytes())
        return CACHE / f"{h.hexdigest()}.json"

    def cycles(self, c: Candidate) -> float:
        sig = c.signature()
        if sig not in self.runs:
            path = self._cache_path(sig)
            try:
                self.runs[sig] = float(json.loads(path.read_text())["cycles_per_step"])
            except (OSError, ValueError, KeyError):
                self.runs[sig] = self._simulate(c)
                from codesign.atomic import write_text

                write_text(path, json.dumps({"cycles_per_step": self.runs[sig], "signature": sig}) + "\n")
        c.cycles_per_step = self.runs[sig]
        return c.cycles_per_step

    def _simulate(self, c: Candidate) -> float:
        from codesign.hw.pysim import simulate

        seqs = self.inputs()
        self.progress(
            f"cycle model: P = {c.lanes}, {c.options['share']} multipliers, "
            f"share-updates {c.options['share_updates']}"
        )
        opts = {k: v for k, v in c.options.items() if k not in ("weights", "counters")}
        result = simulate(self.bundle, seqs, lanes=c.lanes, target=c.plan.target, counters="none", **opts)
        return result.cycles / sum(len(s) for s in seqs)


@dataclass
class Mapping:
    """The mapper's choice and what it weighed."""

    device: Device
    objective: str
    step_rate: float | None
    clock_mhz: float
    winner: Candidate
    ranked: list[Candidate]  # fitting candidates, best first (cycles known for the ones checked)
    candidates: int  # distinct plans weighed
    tried: int  # option combinations tried
    fitting: int
    reason: str
    inputs: str = ""

    def record(self) -> dict:
        """The ``mapping`` record of ``build.json``."""
        w = self.winner
        return {
            "device": self.device.name,
            "target": self.device.target,
            "objective": self.objective,
            "step_rate_hz": self.step_rate,
            "clock_mhz": self.clock_mhz,
            "lanes": w.lanes,
            "options": dict(w.options),
            "command_options": w.flags(),
            "predicted": w.resources.as_dict(),
            "measured": w.measured,
            "cycles_per_step": w.cycles_per_step,
            "cycle_inputs": self.inputs,
            "candidates": self.candidates,
            "combinations_tried": self.tried,
            "fitting": self.fitting,
            "reason": self.reason,
        }


def _score(c: Candidate, device: Device, objective: str, step_rate: float | None, clock_mhz: float) -> float:
    """The objective's figure of a candidate (lower is better); energy and latency need cycles."""
    area = area_score(c.resources, device)
    if objective == "area":
        return area
    if objective == "latency":
        return c.cycles_per_step
    seconds = 1.0 / step_rate if step_rate else c.cycles_per_step / (clock_mhz * 1e6)
    return area * LEAK_NW_PER_CELL * 1e-9 * seconds * 1e12  # pJ of leakage per step


def _needs_cycles(objective: str, step_rate: float | None) -> bool:
    return objective == "latency" or (objective == "energy" and not step_rate)


def _nearest(cands: list[Candidate], device: Device) -> Candidate:
    """The candidate that misses the device by the least (its worst resource ratio)."""

    def worst(c: Candidate) -> float:
        r = c.resources
        ratios = [r.logic_cells / device.logic_cells]
        for used, avail in (
            (r.block_rams, device.block_rams),
            (r.sprams, device.sprams),
            (r.dsps, device.dsps),
        ):
            ratios.append(used / avail if avail else (float("inf") if used else 0.0))
        return max(ratios)

    return min(cands, key=lambda c: (worst(c), c.resources.logic_cells))


def _rate_ok(c: Candidate, step_rate: float | None, clock_mhz: float) -> bool:
    return not step_rate or c.cycles_per_step * step_rate <= clock_mhz * 1e6


SIMULATE_AT_MOST = 12
"""Cycle signatures the energy objective without a step rate simulates (the smallest candidates')."""


def _rank(
    fitting: list[Candidate], device: Device, objective: str, step_rate: float | None, clock: float, model
) -> list[Candidate]:
    """The fitting candidates best first, cycles known for those the objective or the rate needed."""
    by_area = sorted(fitting, key=lambda c: (area_score(c.resources, device), c.lanes))
    if objective == "latency":
        for c in by_area:
            model.cycles(c)
        return sorted(by_area, key=lambda c: (c.cycles_per_step, area_score(c.resources, device)))
    if _needs_cycles(objective, step_rate):
        signatures: set[str] = set()
        known = []
        for c in by_area:
            sig = c.signature()
            if sig in signatures or len(signatures) < SIMULATE_AT_MOST:
                signatures.add(sig)
                model.cycles(c)
                known.append(c)
        return sorted(known, key=lambda c: _score(c, device, objective, step_rate, clock))
    return by_area  # energy at a fixed step rate ranks like area (leakage over the same period)


def _pick(ranked: list[Candidate], step_rate: float | None, clock: float, model) -> Candidate | None:
    for c in ranked:
        if step_rate and c.cycles_per_step is None:
            model.cycles(c)
        if _rate_ok(c, step_rate, clock):
            return c
    return None


def _reason(
    winner: Candidate, ranked: list[Candidate], device: Device, objective: str, step_rate, clock
) -> str:
    r = winner.resources
    what = {
        "area": f"the smallest area score ({area_score(r, device):,.0f})",
        "energy": "the least energy per step"
        + (" (at a fixed step rate: the smallest area leaking over the period)" if step_rate else ""),
        "latency": f"the fewest cycles per step ({winner.cycles_per_step:.1f})",
    }[objective]
    text = (
        f"P = {winner.lanes} won on {what}: {r.logic_cells:,} {device.cell_name}, {r.block_rams} block RAMs, "
        f"{r.sprams} SPRAMs, {r.dsps} DSPs predicted"
    )
    ahead = [c for c in ranked if c is not winner and ranked.index(c) < ranked.index(winner)]
    if ahead:
        text += f"; {len(ahead)} better-ranked candidate(s) miss the step rate at {clock:g} MHz"
    if step_rate and winner.cycles_per_step:
        text += (
            f"; {winner.cycles_per_step:.1f} cycles per step meet {step_rate:g} steps/s with a margin of "
            f"{clock * 1e6 / (winner.cycles_per_step * step_rate):,.0f}x"
        )
    return text


def map_bundle(
    bundle_dir: Path,
    device_name: str,
    *,
    objective: str = "energy",
    step_rate: float | None = None,
    clock_mhz: float | None = None,
    fixed: dict[str, str] | None = None,
    lanes: int | None = None,
    progress: Callable[[str], None] = lambda text: None,
    inputs: list | None = None,
) -> Mapping:
    """Choose the build of the bundle in ``bundle_dir`` for ``device_name``.

    ``fixed``: options given explicitly (:data:`OPTION_KEYS`), which the search keeps; ``lanes``
    likewise. ``inputs``: integer input sequences the cycle model plays instead of the bundle's
    test set. Raises a :class:`CodesignError` naming the nearest candidate and what it misses by
    when nothing fits, or the fastest fitting one and the rate it reaches when none meets the
    step rate."""
    from codesign.bundle import load_bundle

    if objective not in OBJECTIVES:
        raise CodesignError(f"--objective {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if step_rate is not None and step_rate <= 0:
        raise CodesignError(f"--step-rate {step_rate:g}: a step rate must be > 0 steps per second")
    device = get_device(device_name)
    clock = clock_mhz or device.clock_mhz
    if clock <= 0:
        raise CodesignError(f"--clock {clock:g}: a clock must be > 0 MHz")
    bundle_dir = Path(bundle_dir)
    bundle = load_bundle(bundle_dir)
    cands, tried = enumerate_candidates(bundle, device, dict(fixed or {}), lanes)
    if not cands:
        raise CodesignError(
            f"no build of the bundle for {device.name} with the options given", path=bundle_dir
        )
    fitting = [c for c in cands if c.fits]
    if not fitting:
        near = _nearest(cands, device)
        raise CodesignError(
            f"nothing fits the {device.name}: of {len(cands)} candidates the nearest, `{near.flags()}`, "
            + ", ".join(near.misses),
            path=bundle_dir,
        )
    model = CycleModel(bundle, bundle_dir, progress, given=inputs)
    ranked = _rank(fitting, device, objective, step_rate, clock, model)
    winner = _pick(ranked, step_rate, clock, model)
    if winner is None:
        fastest = min(ranked, key=lambda c: model.cycles(c))
        rate = clock * 1e6 / fastest.cycles_per_step
        raise CodesignError(
            f"no build that fits the {device.name} meets {step_rate:g} steps/s at {clock:g} MHz: the fastest, "
            f"`{fastest.flags()}`, takes {fastest.cycles_per_step:.1f} cycles per step ({rate:,.0f} steps/s; "
            f"{fastest.cycles_per_step * step_rate / 1e6:.2f} MHz would meet the rate)",
            path=bundle_dir,
        )
    if winner.cycles_per_step is None:
        model.cycles(winner)
    return Mapping(
        device=device,
        objective=objective,
        step_rate=step_rate,
        clock_mhz=clock,
        winner=winner,
        ranked=ranked,
        candidates=len(cands),
        tried=tried,
        fitting=len(fitting),
        reason=_reason(winner, ranked, device, objective, step_rate, clock),
        inputs=model.source,
    )


def _measured(summary: dict, device: Device) -> Resources | None:
    """Resources of a ``codesign synth`` summary (None: it did not place)."""
    if summary.get("status") != "ok":
        return None
    util = summary["utilisation"]

    def used(*bels: str) -> int:
        return sum(util.get(b, {}).get("used", 0) for b in bels)

    cells = used("ICESTORM_LC") if device.family == "ice40" else int(summary["resources"]["lut"])
    return Resources(
        cells, used("ICESTORM_RAM", "DP16KD"), used("ICESTORM_SPRAM"), used("ICESTORM_DSP", "MULT18X18D")
    )


def confirm(
    mapping: Mapping, bundle_dir: Path, work: Path, n: int, progress: Callable[[str], None] = lambda t: None
) -> Mapping:
    """Synthesise the ``n`` best candidates that meet the step rate (:func:`run_job`, cached under
    ``work/runs``) and pick again on the measured figures: fits, meets the clock, best by the
    objective with the measured resources. Without a placed candidate the prediction stands."""
    from codesign.fpga.batch_jobs import make_job, run_job

    device = mapping.device
    if device.family == "asic":
        raise CodesignError("--confirm synthesises for an FPGA: --device asic has no synthesis")
    chosen = [
        c
        for c in mapping.ranked
        if c.cycles_per_step is None or _rate_ok(c, mapping.step_rate, mapping.clock_mhz)
    ]
    placed: list[Candidate] = []
    for i, c in enumerate(chosen[:n]):
        progress(f"confirm {i + 1}/{min(n, len(chosen))}: synthesising `{c.flags()}` for {device.name}")
        job = make_job(bundle_dir, c.lanes, device.target, [device.name], work / f"c{i}", dict(c.options))
        for record in run_job(job):
            if record["kind"] != "synth":
                continue
            c.measured = record["summary"]
            got = _measured(record["summary"], device)
            if got is not None and not got.misses(device) and record["summary"].get("timing_met"):
                placed.append(Candidate(c.lanes, c.options, c.plan, got, [], c.cycles_per_step, c.measured))
    if not placed:
        mapping.reason += f"; --confirm {n}: none of the synthesised candidates placed and met the clock"
        return mapping
    best = min(
        placed, key=lambda c: _score(c, device, mapping.objective, mapping.step_rate, mapping.clock_mhz)
    )
    mapping.winner = best
    m = best.resources
    mapping.reason = (
        f"--confirm {n}: of {len(placed)} synthesised candidates that place and meet {mapping.clock_mhz:g} MHz, "
        f"`{best.flags()}` measured best: {m.logic_cells:,} {device.cell_name}, {m.block_rams} block RAMs, "
        f"{m.sprams} SPRAMs, {m.dsps} DSPs, Fmax {best.measured['fmax_mhz']:.1f} MHz"
    )
    return mapping


def mapping_table(mapping: Mapping, rows: int = 10):
    """The candidates weighed, best first, as a rich table (the winner marked)."""
    from rich.table import Table

    d = mapping.device
    table = Table(
        title=f"{mapping.fitting} of {mapping.candidates} candidates fit the {d.name} "
        f"(objective {mapping.objective}, clock {mapping.clock_mhz:g} MHz"
        + (f", {mapping.step_rate:g} steps/s" if mapping.step_rate else "")
        + ")",
        title_justify="left",
    )
    for col in ("", "P", "weights", "counters", "multipliers", "narrow", "share-upd.", "merge"):
        table.add_column(col)
    for col in ("LUT4" if d.family == "ecp5" else "cells", "BRAM", "SPRAM", "DSP", "cycles/step", "area"):
        table.add_column(col, justify="right")
    shown = mapping.ranked[:rows]
    if mapping.winner not in shown:
        shown = [*shown[: rows - 1], mapping.winner]
    for c in shown:
        r = c.resources
        o = c.options
        table.add_row(
            "*" if c is mapping.winner else "",
            str(c.lanes),
            o["weights"],
            o["counters"],
            o["share"],
            o["narrow"],
            o["share_updates"],
            o["merge"],
            f"{r.logic_cells:,}",
            str(r.block_rams),
            str(r.sprams),
            str(r.dsps),
            "-" if c.cycles_per_step is None else f"{c.cycles_per_step:.1f}",
            f"{area_score(r, d):,.0f}",
            style="bold" if c is mapping.winner else None,
        )
    return table
