"""``codesign analog-eval``: a trained BMRU bundle's own test sequences through the layer netlist.

Each test sequence drives the sky130 layer netlist of ``codesign analog`` in ngspice (one BMRU
cell per neuron, the input and threshold currents of :mod:`codesign.analog.mapping` from ideal
current sources, one 10 ms frame per step); the cells' sign bits are read at the end of every
frame and turned back into the integer states ``h = alpha (2 q - 1)``. The readout is digital, as
on a mixed-signal chip: last-step or saturating sum pooling and ``W h + b`` in integers, argmax
with the lowest index on ties. Reported beside the golden model on the same sequences: accuracy,
per-step state agreement (steps where the golden state is defined), energy per inference from
the supply currents, the frame time, and the smallest current margins met.

``synapses="circuit"`` drives the cells with the sums of the bundle's synapse arrays simulated in
ngspice (:mod:`codesign.analog.synapse_sim`) instead of the exact integers; the stage that turns
those sums into the cells' candidate and threshold currents (scale, centre, the per-step division
of the step mapping) is still an ideal source. A cmru eps 1 layer runs as native CMRU ladders
(:func:`_run_ladder_sequence`), and the step-level ladder model of
:mod:`codesign.analog.ladder_model`, fitted on those runs, covers the whole test set. ``mc`` adds the behavioural Monte Carlo of
:mod:`codesign.analog.mismatch` over the whole test set and, with ``mc_spice``, ngspice Monte Carlo
draws on a subset to check it.

Sequences run on Dask (a local cluster of ``workers`` single-threaded processes, or
``scheduler``); each sequence's result is cached as JSON under ``cache`` (atomic writes, keyed by
the bundle's weights, the settings and the sequence), so an interrupted run resumes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from codesign.analog.eval_settings import (
    LADDER_CIRCUIT,
    any_ladder_option,
    cell_settings,
    check_options,
    ladder_settings,
)
from codesign.analog.layer import analog_readout, layer_view, test_set
from codesign.atomic import write_text
from codesign.bundle import Bundle, load_bundle
from codesign.errors import CodesignError

__all__ = ["LADDER_CIRCUIT", "analog_eval", "analog_readout", "test_set"]

VERSION = "analog-eval-2"
"""Part of every cache key: bump it when what a cached sequence holds changes."""


def _key(bundle: Bundle, settings: dict, n: int) -> str:
    text = json.dumps(
        {"v": VERSION, "weights": bundle.manifest.checksums, "settings": settings, "sequence": n},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _timing(settings: dict):
    from codesign.analog.drive import Timing

    return Timing(t_step=settings["frame_ms"] * 1e-3)


def _run_sequence(bundle_dir: str, n: int, settings: dict, cache: str, key: str) -> dict:
    """One test sequence in ngspice (a Dask task); its result cached as ``cache/key.json``."""
    from codesign.analog.mapping import accumulators, map_bundle
    from codesign.analog.sim import Ctx
    from codesign.analog.trace import margins, run_bundle_trace

    path = Path(cache) / f"{key}.json"
    if path.is_file():
        return json.loads(path.read_text())
    bundle = load_bundle(bundle_dir)
    view = layer_view(bundle)
    xq, _ = test_set(bundle)
    if view.manifest.layers[0].eps == 1:
        record = _run_ladder_sequence(view, xq, n, settings, Path(cache), key)
        write_text(path, json.dumps(record))
        return record
    # scales from the whole test set: the same for every sequence
    maps = map_bundle(view, xq, normalise=settings.get("scale", "neuron") == "step")
    pair = settings["start"] == "pair"
    drive, syn = None, {}
    if settings.get("synapses", "ideal") == "circuit":
        drive, syn = _array_drive(view, xq[n], Path(cache), settings)
    trace = run_bundle_trace(
        view,
        xq[n : n + 1],
        Ctx(corner=settings["corner"]),
        maps=maps,
        name=f"seq{n:05d}",
        mc_seed=settings.get("mc_seed"),
        pair=pair,
        timing=_timing(settings),
        reltol=settings.get("reltol"),
        drive_accs=drive,
    )
    c, b = accumulators(view, xq[n : n + 1])
    if drive is not None:
        syn["sum_error_max_units"] = float(max(np.abs(drive[0] - c[0]).max(), np.abs(drive[1] - b[0]).max()))
        syn["sum_error_rel_max"] = float(
            max(
                (np.abs(drive[0] - c[0]) / np.maximum(np.abs(c[0]), 1)).max(),
                (np.abs(drive[1] - b[0]) / np.maximum(np.abs(b[0]), 1)).max(),
            )
        )
    roots = [
        [
            r["neuron"],
            k,
            float(margins(maps[r["neuron"]], c[0, :, r["neuron"]], b[0, :, r["neuron"]])[k] / 1e-12),
        ]
        for r in trace.rows
        for k in r["root_error_steps"]
    ]
    record = {
        "sequence": n,
        "steps": int(xq.shape[1]),
        "q_analog": trace.q_analog.astype(int).tolist(),
        "s_analog": trace.s_analog.astype(int).tolist(),
        "root_errors": roots,
        "agreement": trace.agreement,
        "compared": int(trace.compared.sum()),
        "power_nW": trace.power,
        "min_root_margin_pA": min(
            (r["root_error_max_margin_pA"] for r in trace.rows if r["root_errors"]), default=None
        ),
        "steps_margin_below_5pA": int(sum(r["steps_margin_below_5pA"] for r in trace.rows)),
        "undecided_reads": int(sum(r["undecided_reads"] for r in trace.rows)),
        "t_step_s": trace.timing.t_step,
        "wall_s": trace.wall_s,
    }
    if syn:
        record["power_nW"]["synapses_nW"] = syn.pop("power_nW")
        record["synapse_sums"] = syn
    write_text(path, json.dumps(record))
    return record


def _run_ladder_sequence(view: Bundle, xq: np.ndarray, n: int, settings: dict, cache: Path, key: str) -> dict:
    """One test sequence through native CMRU ladders (eps 1), one ladder per neuron.

    Every neuron's ladder spans the golden update count's range over this sequence plus
    ``ladder_spare`` stages each side (:func:`codesign.analog.ladder_trace.ladder_ranges`); the ladders
    are simulated ``ladder_group`` neurons per ngspice deck (they share nothing but the supplies:
    each neuron's input, thresholds and bias generators are its own), so a deck's preamble is as
    long as its own largest reset state needs. Every deck's result is cached too
    (``cache/decks/<key>_n<first neuron>.json``): a sequence takes an hour of ngspice, so an
    interrupted one resumes at its next deck.
    """
    from codesign.analog.drive import LadderTiming
    from codesign.analog.ladder_trace import ladder_ranges
    from codesign.analog.mapping import map_bundle

    maps = map_bundle(view, xq, normalise=settings.get("scale", "neuron") == "step")
    x = xq[n : n + 1]
    ranges = ladder_ranges(view, x, settings["ladder_spare"])
    drive, syn = None, {}
    if settings.get("synapses", "ideal") == "circuit":
        drive, syn = _array_drive(view, xq[n], cache, settings)
    d = len(maps)
    group = settings["ladder_group"]
    timing = LadderTiming(
        t_step=settings["frame_ms"] * 1e-3,
        t_max=settings.get("tmax_ms", 1.0) * 1e-3,
        t_c=settings.get("ladder_pulse_ms", 4.0) * 1e-3,
    )
    h_a = np.zeros((x.shape[1], d), dtype=np.int64)
    h_g = np.zeros_like(h_a)
    rows, wall, cpu, energy, solver = [], 0.0, 0.0, {}, {}
    measured = True  # every deck recorded its CPU time and counters (decks cached before lack them)
    for g0 in range(0, d, group):
        neurons = list(range(g0, min(g0 + group, d)))
        deck_path = cache / "decks" / f"{key}_n{g0:03d}.json"
        if deck_path.is_file():
            part = json.loads(deck_path.read_text())
        else:
            part = _ladder_deck(
                view, x, settings, maps, neurons, ranges, drive, timing, f"seq{n:05d}_n{g0:03d}"
            )
            deck_path.parent.mkdir(parents=True, exist_ok=True)
            write_text(deck_path, json.dumps(part))
        h_a[:, neurons] = np.asarray(part["h_analog"])
        h_g[:, neurons] = np.asarray(part["h_golden"])
        rows += part["rows"]
        wall += part["wall_s"]
        measured &= "cpu_s" in part and "iterations" in part.get("ngspice", {})
        cpu += part.get("cpu_s", 0.0)
        for k in ("iterations", "points", "rejected"):
            if k in part.get("ngspice", {}):
                solver[k] = solver.get(k, 0) + int(part["ngspice"][k])
        for k, v in part["power_nW"].items():  # power of this deck's neurons: the layer's is the sum
            energy[k] = energy.get(k, 0.0) + v
    roots = [
        [r["neuron"], k, m]
        for r in rows
        for k, m in zip(r["wrong_update_steps"], r["wrong_update_margins_pA"], strict=True)
    ]
    record = {
        "sequence": n,
        "steps": int(x.shape[1]),
        "h_analog": h_a.tolist(),
        "root_errors": roots,
        "agreement": float((h_a == h_g).mean()),
        "compared": int(h_a.size),
        "power_nW": energy,
        "min_root_margin_pA": max((m for _, _, m in roots), default=None),
        "steps_margin_below_5pA": 0,
        "undecided_reads": int(sum(r["worst_level_error_rel_alpha"] > 0.25 for r in rows)),
        "worst_level_error_rel_alpha": float(max(r["worst_level_error_rel_alpha"] for r in rows)),
        "ladder_stages": [int(r["stages"]) for r in rows],
        "ladder_n0": [int(r["n0"]) for r in rows],
        "init_ok": all(r["init_count_ok"] for r in rows),
        "t_step_s": timing.t_step,
        "wall_s": wall,
        "cpu_s": cpu if measured else None,
        "ngspice": solver if measured else {},
    }
    if syn:
        record["power_nW"]["synapses_nW"] = syn.pop("power_nW")
    return record


def _ladder_deck(view, x, settings, maps, neurons, ranges, drive, timing, name) -> dict:
    """One ngspice deck of ladders: the analog and golden counts (state units), rows and power."""
    from codesign.analog.cells import DPI_N, DpiParams
    from codesign.analog.ladder_deck import LADDER_DECKS
    from codesign.analog.ladder_trace import run_ladder_trace
    from codesign.analog.sim import Ctx

    tr = run_ladder_trace(
        view,
        x,
        Ctx(corner=settings["corner"], timeout=3600.0),
        maps=maps,
        neurons=neurons,
        timing=timing,
        name=name,
        ranges=[ranges[i] for i in neurons],
        drive_accs=drive,
        reltol=settings.get("reltol"),
        mc_seed=settings.get("mc_seed"),
        init=settings["ladder_init"],
        dpi=DPI_N if settings.get("ladder_dpi", "p") == "n" else DpiParams(),
        deck=LADDER_DECKS[settings.get("ladder_deck", "reference")],
        trim=tuple(v * 1e-12 for v in settings.get("ladder_trim_pa", (0.0, 0.0))),
        overdrive=settings["ladder_overdrive_pa"] * 1e-12 if "ladder_overdrive_pa" in settings else None,
    )
    return {
        "h_analog": tr.h_analog.tolist(),
        "h_golden": tr.h_golden.tolist(),
        "rows": tr.rows,
        "wall_s": tr.wall_s,
        "cpu_s": tr.cpu_s,
        "ngspice": tr.stats or {},
        "power_nW": tr.power,
    }


def _array_drive(view: Bundle, x: np.ndarray, cache: Path, settings: dict) -> tuple[tuple, dict]:
    """The candidate and threshold sums of one sequence ``x`` (T, M) from the chip's simulated
    synapse arrays (:mod:`codesign.analog.synapse_sim`), and their mean supply power."""
    from codesign.analog.mapping import spine
    from codesign.analog.synapse_sim import array_sums, array_supply, line_offsets, load_or_measure

    sp = spine(view)
    w = sp.weights
    arr = np.concatenate([w["w_cand"], w["w_thr"]]).astype(np.int64)
    x_max = 1 << (sp.manifest.formats.input.bits - 1)
    from codesign.analog.synapse import SynapseDesign

    design = SynapseDesign(i_x=settings["synapse_ix_fa"] * 1e-15)
    table = load_or_measure(
        arr, x_max, cache, design, corner=settings["corner"], mc_seed=settings.get("mc_seed")
    )
    sums, lines = array_sums(table, arr, x)
    if settings.get("synapse_trim", "none") == "offset":
        sums = sums - line_offsets(table, arr, x.shape[1])[None, :]
    d = w["w_cand"].shape[0]
    c = sums[:, :d] + w["b_cand"][None, :]
    b = sums[:, d:] + w["b_thr"][None, :]
    power = array_supply(table, x, lines)
    return (c, b), {"power_nW": float(power.mean() / 1e-9)}


def analog_eval(
    bundle_dir: Path,
    sequences: int,
    *,
    corner: str = "tt",
    cache: Path | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int, dict], None] | None = None,
    start: str = "pair",
    frame_ms: float | None = None,
    mc: int = 0,
    mc_spice: int = 0,
    mc_sequences: int = 2,
    scale: str = "step",
    reltol: float = 1e-4,
    tmax_ms: float = 1.0,
    synapses: str = "ideal",
    synapse_ix_fa: float = 1000.0,
    synapse_trim: str = "offset",
    ladder_spare: int = 1,
    ladder_group: int = 8,
    ladder_init: str = "nodeset",
    ladder_dpi: str = "p",
    ladder_pulse_ms: float = 4.0,
    ladder_deck: str = "reference",
    first: int = 0,
    ladder_trim_pa: tuple[float, float] = (0.0, 0.0),
    ladder_overdrive_pa: float = 0.0,
) -> dict:
    """Run ``sequences`` test sequences of a trained BMRU or native CMRU bundle in ngspice; the summary dict.

    A cmru eps 1 layer runs as native CMRU ladders (:func:`_run_ladder_sequence`): one ladder per
    neuron spanning the golden count's range over the sequence plus ``ladder_spare`` stages each
    side, ``ladder_group`` neurons per ngspice deck, reset to ``n0`` stages by ``ladder_init``
    (``nodeset``: from the operating point; ``pulses``: n0 set pulses; see
    :func:`codesign.analog.ladder_trace.run_ladder_trace`), 60 ms frames unless ``frame_ms`` says otherwise
    (:class:`codesign.analog.drive.LadderTiming`); ``start`` does not apply (a ladder resets to
    ``n0`` stages on). BMRU frames default to 10 ms.

    ``start``: ``pair`` makes every neuron a complementary pair of cells reset to the golden
    model's 0 start state (:func:`codesign.analog.netlist.neuron_subckt`); ``single`` is one cell
    per neuron, which starts at ``-alpha``. ``frame_ms``: the time one step gets (the cells switch in
    ``C dV / overdrive``: a longer frame resolves smaller margins).

    The native CMRU options (``ladder_*``, ``tmax_ms``) are described at :func:`~codesign.analog.eval_settings.ladder_settings`;
    ``scale``, ``reltol``, ``synapses*`` and ``mc*`` at :func:`~codesign.analog.eval_settings.cell_settings`. ``first``: the
    index of the first test sequence run (``sequences`` from there on), so that runs can share out
    the test set; their caches are shared (a sequence's key does not depend on it).
    """
    from codesign.golden import run_golden

    bundle_dir = Path(bundle_dir).resolve()
    bundle = load_bundle(bundle_dir)
    layer_view(bundle)  # refuse what the analog path cannot run, before anything starts
    check_options(sequences, start, mc, mc_spice, mc_sequences, synapses, synapse_trim, scale, reltol)
    eps = bundle.manifest.layers[0].eps
    if frame_ms is None:
        frame_ms = 60.0 if eps == 1 else 10.0
    if not 3.0 <= frame_ms <= 1000.0:
        raise CodesignError(f"--frame-ms must be between 3 and 1000 ms, not {frame_ms:g}")
    xq, y = test_set(bundle)
    if not 0 <= first < len(xq):
        raise CodesignError(
            f"--first must be between 0 and {len(xq) - 1} (the test set's last sequence), not {first}"
        )
    count = min(sequences, len(xq) - first)
    cache = Path(cache) if cache is not None else bundle_dir.parent / f"{bundle_dir.name}_analog_eval"
    cache.mkdir(parents=True, exist_ok=True)
    settings = {"corner": corner, "start": start if eps == 0 else "ladder", "frame_ms": float(frame_ms)}
    ladder = {
        "ladder_spare": ladder_spare,
        "ladder_group": ladder_group,
        "ladder_init": ladder_init,
        "tmax_ms": tmax_ms,
        "ladder_pulse_ms": ladder_pulse_ms,
        "ladder_dpi": ladder_dpi,
        "ladder_deck": ladder_deck,
        "ladder_trim_pa": ladder_trim_pa,
        "ladder_overdrive_pa": ladder_overdrive_pa,
    }
    if eps == 1:
        if not 0 <= ladder_spare <= 8 or ladder_group < 1:
            raise CodesignError(
                f"--ladder-spare {ladder_spare} / --ladder-group {ladder_group}: need 0..8 spare stages, groups >= 1"
            )
        if ladder_init not in ("nodeset", "pulses"):
            raise CodesignError(f"--ladder-init must be nodeset or pulses, not {ladder_init!r}")
        if mc:
            raise CodesignError("--mc runs BMRU layers (the behavioural mismatch model has no ladder)")
        settings |= ladder_settings(**ladder)
    elif any_ladder_option(**ladder):
        raise CodesignError(
            "--tmax-ms, --ladder-dpi, --ladder-pulse-ms, --ladder-deck, --ladder-trim-pa and --ladder-overdrive-pa "
            "apply to native CMRU ladders "
            "(cmru eps 1) only"
        )
    settings |= cell_settings(scale, reltol, synapses, synapse_ix_fa, synapse_trim)
    tasks = [(n, settings) for n in range(first, first + count)]
    spice_mc = [
        (n, settings | {"mc_seed": seed}) for seed in range(1, mc_spice + 1) for n in range(mc_sequences)
    ]
    records = _gather(str(bundle_dir), bundle, tasks + spice_mc, cache, scheduler, workers, progress)
    run = slice(first, first + count)
    summary = _summarize(bundle, xq[run], y[run], records[:count], run_golden(bundle, xq[run]), settings)
    summary["first_sequence"] = first
    if eps == 1:
        from codesign.analog.ladder_model import ladder_model_summary

        summary["ladder_model"] = ladder_model_summary(bundle, xq, y, records[:count], scale == "step")
    if mc:
        from codesign.analog.mismatch import mismatch_summary

        summary["mismatch"] = mismatch_summary(bundle, xq, y, mc, records[count:], spice_mc, settings)
    return summary


def _gather(bundle_dir, bundle, tasks, cache, scheduler, workers, progress) -> list[dict]:
    """Records of ``tasks`` ``(sequence, settings)``: from the cache, or run on Dask and cached."""
    from codesign.runner import dask_client

    keys = [_key(bundle, st, n) for n, st in tasks]
    records: list[dict | None] = [None] * len(keys)
    todo = []
    for i, key in enumerate(keys):
        path = cache / f"{key}.json"
        if path.is_file():
            records[i] = json.loads(path.read_text())
        else:
            todo.append(i)
    done = len(keys) - len(todo)
    if todo:
        from distributed import as_completed

        with dask_client(scheduler, workers) as client:
            futures = {
                client.submit(
                    _run_sequence, bundle_dir, tasks[i][0], tasks[i][1], str(cache), keys[i], pure=False
                ): i
                for i in todo
            }
            for future in as_completed(list(futures)):
                n = futures[future]
                records[n] = future.result()
                done += 1
                if progress is not None:
                    progress(done, len(keys), records[n])
    return [r for r in records if r is not None]


def _effort_measured(record: dict) -> bool:
    """Whether every deck of a sequence record recorded its ngspice CPU time and iterations.

    Records made before decks recorded them have no ``cpu_s``; those whose decks were partly
    cached from such a run hold ``None`` (``NaN`` in caches written before this check), and their
    iteration sums cover only some decks."""
    cpu = record.get("cpu_s")
    return isinstance(cpu, (int, float)) and math.isfinite(cpu) and "iterations" in record.get("ngspice", {})


def ngspice_effort(records: list[dict]) -> tuple[float | None, float | None]:
    """Mean ngspice CPU seconds and Newton iterations per sequence over the records that measured
    both for every deck (``None`` when none did): never a NaN, never a partial sum."""
    measured = [r for r in records if _effort_measured(r)]
    if not measured:
        return None, None
    return (
        float(np.mean([r["cpu_s"] for r in measured])),
        float(np.mean([r["ngspice"]["iterations"] for r in measured])),
    )


def _ladder_summary(records: list[dict], settings: dict) -> dict:
    """The native CMRU part of the summary: ladder settings, ngspice effort, stages, init failures."""
    out: dict = {}
    out["ladder_spare"] = settings["ladder_spare"]
    out["tmax_ms"] = settings.get("tmax_ms", 1.0)
    out["ladder_dpi"] = settings.get("ladder_dpi", "p")
    out["ladder_pulse_ms"] = settings.get("ladder_pulse_ms", 4.0)
    out["ladder_deck"] = settings.get("ladder_deck", "reference")
    out["ladder_trim_pa"] = settings.get("ladder_trim_pa", [0.0, 0.0])
    out["ladder_overdrive_pa"] = settings.get("ladder_overdrive_pa", 0.0)
    cpu, iters = ngspice_effort(records)
    out["ngspice_cpu_s_per_sequence"] = cpu
    out["ngspice_iterations_per_sequence"] = iters
    out["ngspice_sequences_measured"] = sum(1 for r in records if _effort_measured(r))
    out["ngspice_note"] = (
        "seconds_per_sequence is wall time (mostly the machine's other jobs on a shared host); "
        "cpu and Newton iterations (each evaluates every device) are measured on the sequences "
        "run since they were recorded"
    )
    out["ladder_stages_mean"] = float(np.mean([sum(r["ladder_stages"]) for r in records]))
    out["ladder_stages_note"] = (
        "every neuron's ladder spans the golden count's range over its sequence plus ladder_spare "
        "stages each side; a chip sized for the whole test set needs more stages (their idle power "
        "is not in these figures)"
    )
    out["ladder_init"] = settings["ladder_init"]
    out["ladder_init_failures"] = int(sum(not r["init_ok"] for r in records))
    out["worst_level_error_rel_alpha"] = float(max(r["worst_level_error_rel_alpha"] for r in records))
    out["root_errors_note"] = "root errors: steps whose ladder update (+1, 0, -1) differs from the golden one"
    return out


def _summarize(bundle: Bundle, xq, y, records: list[dict], gold, settings: dict) -> dict:
    alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
    analog_classes, golden_classes, as_golden_start = [], [], []
    agree = compared = 0
    energy = []
    roots = [r for rec in records for r in rec["root_errors"]]
    from codesign.analog.behavioural import golden_signs

    ladder = "h_analog" in records[0]
    signs = None if ladder else golden_signs(layer_view(bundle), xq)
    all_agree = all_steps = 0
    for n, rec in enumerate(records):
        if ladder:  # native CMRU ladders: the state is a count of alphas
            h_a = np.asarray(rec["h_analog"], dtype=np.int64)
            states = alpha[None, :] * h_a
            all_agree += int((states == gold.layers[0].states[n]).sum())
            all_steps += h_a.size
        else:
            s_a = np.asarray(rec["s_analog"], dtype=np.int64)
            states = alpha[None, :] * s_a
            all_agree += int((s_a == signs[n]).sum())
            all_steps += s_a.size
        _, cls = analog_readout(bundle, states)
        analog_classes.append(cls)
        # diagnostic: the same states with the golden model's 0 before a neuron's first update (a
        # two-state cell has no such state: it starts at -alpha)
        untouched = gold.layers[0].states[n] == 0
        as_golden_start.append(analog_readout(bundle, np.where(untouched, 0, states))[1])
        golden_classes.append(int(gold.classes[n]))
        agree += rec["agreement"] * rec["compared"] if rec["compared"] else 0
        compared += rec["compared"]
        total_nw = sum(rec["power_nW"].values())
        energy.append(total_nw * 1e-9 * rec["steps"] * rec["t_step_s"] * 1e9)  # nJ
    analog_classes, golden_classes = np.asarray(analog_classes), np.asarray(golden_classes)
    power = {k: float(np.mean([r["power_nW"][k] for r in records])) for k in records[0]["power_nW"]}
    pair = settings["start"] == "pair"
    out = {
        "bundle": bundle.manifest.name,
        "cell": "native CMRU ladder (eps 1)" if ladder else "BMRU (eps 0)",
        "corner": settings["corner"],
        "start": settings["start"],
        "scale": settings.get("scale", "neuron"),
        "reltol": settings.get("reltol", 1e-4),
        "synapses": settings.get("synapses", "ideal"),
        "synapse_ix_fa": settings.get("synapse_ix_fa"),
        "synapse_trim": settings.get("synapse_trim", "none")
        if settings.get("synapses") == "circuit"
        else None,
        "frame_ms": settings["frame_ms"],
        "sequences": len(records),
        "steps_per_sequence": records[0]["steps"],
        "analog_accuracy": float((analog_classes == y).mean()),
        "golden_accuracy": float((golden_classes == y).mean()),
        "class_agreement": float((analog_classes == golden_classes).mean()),
        "analog_accuracy_with_golden_start": float((np.asarray(as_golden_start) == y).mean()),
        "start_note": (
            "every neuron is a ladder reset to n0 stages on (golden state 0): n0 set pulses in the "
            "preamble, the state is (stages on - n0) alpha"
            if ladder
            else "every neuron is a complementary pair of cells reset to a, b = -alpha, +alpha: its state "
            "alpha (q_a + q_b - 1) is 0 until the first update, as in the integer model"
            if pair
            else "a single BMRU cell has two states and starts at -alpha; the golden state is 0 until a "
            "neuron's first update. analog_accuracy_with_golden_start reads those steps as 0 (a diagnostic)"
        ),
        "state_agreement": agree / compared if compared else float("nan"),
        "neuron_steps_compared": compared,
        "state_agreement_all_steps": all_agree / all_steps if all_steps else float("nan"),
        "root_errors": len(roots),
        "root_error_margins_pa": sorted(round(r[2], 4) for r in roots),
        "root_errors_by_neuron": np.bincount([int(r[0]) for r in roots], minlength=len(alpha)).tolist(),
        "energy_per_inference_nj": float(np.mean(energy)),
        "power_nw": power,
        "energy_split_nj": {
            k.removesuffix("_nW"): v * 1e-9 * records[0]["steps"] * records[0]["t_step_s"] * 1e9
            for k, v in power.items()
        },
        "power_note": "supply currents of the cells (core), their bias generators (bias) and the ideal "
        "candidate/threshold DAC sources (input), simulated"
        + (
            "; synapses: the arrays' supply (input DACs into the diodes, every sum line, cascode bias) "
            "from their ngspice DC sweep"
            if settings.get("synapses") == "circuit"
            else "; the synapses are not in these figures (ideal sums; their arrays' computed power: "
            "python -m codesign.analog.synapse BUNDLE)"
        ),
        "synapse_sum_error_max_units": max(
            (r["synapse_sums"]["sum_error_max_units"] for r in records if "synapse_sums" in r), default=None
        ),
        "seconds_per_sequence": float(np.mean([r["wall_s"] for r in records])),
        "time_per_step_s": records[0]["t_step_s"],
        # the largest margin any root error had: the one a near tie explains least
        "worst_root_error_margin_pa": max((float(r[2]) for r in roots), default=None),
        "steps_margin_below_5pa": int(sum(r["steps_margin_below_5pA"] for r in records)),
        "undecided_reads": int(sum(r["undecided_reads"] for r in records)),
        "simulated_s": float(sum(r["wall_s"] for r in records)),
    }
    if ladder:
        out |= _ladder_summary(records, settings)
    return out
