"""Analog (ngspice) power of a bundle's recurrent cells, beside the digital proxy of ``codesign report``.

For a bundle the analog path can build (one BMRU/CMRU layer with a last-step readout: eps 0 as
BMRU Schmitt-trigger cells, cmru eps 1 as native CMRU ladders; :mod:`codesign.analog`), this
module

1. writes the bundle's netlists with :func:`codesign.analog.netlist.generate_netlists`, the
   current scale of every neuron calibrated on all of the report's input sequences;
2. plays the first of those sequences (at most ``steps`` steps) into ``neurons`` of the layer's
   ``d`` neurons, picked evenly over the layer, one ngspice transient per neuron (sky130 tt,
   27 C), with the analog path's own drives: :func:`codesign.analog.trace.run_bundle_trace`
   (BMRU, one frame per step) and :func:`codesign.analog.ladder_trace.run_ladder_trace` (native
   ladders, 60 ms frames, ``stages`` stages started half full). The decks instantiate the same
   neuron subcircuits as the netlists;
3. averages each supply current over the played steps (the reset preamble excluded):
   ``P = -VDD * avg i(V)`` for the cells' core supply (``vdd``), their bias generators and
   threshold DACs (``vddb``) and the candidate input currents (``vsrc``, shown apart);
4. scales to the layer: ``d / N`` times the simulated neurons (BMRU: the layer's one shared bias
   block, measured in a deck of its own, is counted once, not ``d / N`` times);
5. turns power into energy at the report's step rate: ``E_step = P / rate``. The cells' power is
   static (bias currents, and the output current of every cell or stage that is on); switching a
   node of a few fF at 1.8 V costs fJ against ~100 pJ of static energy per 10 ms step, so the
   energy per step follows the step period, not the number of updates.

Nothing is a constant: every figure comes from ngspice runs on the bundle's mapped cells, driven by
the report's inputs. Every ngspice run has a timeout. The measurement is cached in
``BUILD/report_analog/<key>/measurement.json`` (written atomically, last), the key a hash of the
bundle's arrays and manifest, the played and calibration inputs, the neurons, steps, stages,
frame, corner, ngspice and sky130 versions and :data:`CACHE_VERSION`; the netlists and the decks
with their logs sit next to it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from codesign.atomic import write_text
from codesign.errors import CodesignError
from codesign.report.references import BMRU_KWS

__all__ = [
    "CACHE_DIR",
    "CACHE_VERSION",
    "DEFAULT_NEURONS",
    "DEFAULT_STAGES",
    "DEFAULT_STEPS",
    "analog_power",
    "availability",
    "not_measured",
    "pick_neurons",
    "side_by_side",
]

CACHE_VERSION = 2
"""Bump when the measurement changes meaning; old cache entries are then ignored."""
CACHE_DIR = "report_analog"
DEFAULT_NEURONS = 8
DEFAULT_STEPS = 200
DEFAULT_STAGES = 4
"""Native CMRU ladder length, as ``codesign analog`` writes it by default."""
DEFAULT_TIMEOUT_S = 600.0
BMRU_MIN_FRAME_S = 10e-3
"""Shortest frame the BMRU drive is played at: switching at 5 pA overdrive takes ~5 ms, plus the
1.5 ms of the neutral and threshold phases (:mod:`codesign.analog.drive`)."""
CORNER = "tt"
SYNAPSE_IX = 1e-12
"""Synapse arrays' current per input LSB and weight unit (:mod:`codesign.analog.synapse_sim`:
at 100 fA the unit mirrors' zero-input current, ~0.1 pA each, is as large as the signal)."""

INCLUDES = (
    "the recurrent cells at transistor level (sky130, 1.8 V, weak inversion): memory cells, their "
    "output current sources, per-neuron bias generators and per-step threshold currents (vddb), "
    "shared biases"
)
INCLUDES_NATIVE = " and the ladders' DPI low-passes"
EXCLUDES = (
    "the synaptic sums that make the candidate and threshold currents (ideal current sources drive "
    "the cells; the synapse arrays' own power is a row of its own) and the stage that scales them, "
    "input encoding, readout, the loads of the output currents (held at 0.5 V); the candidate input "
    "currents delivered at 1.8 V are shown apart"
)


def availability() -> str | None:
    """None when ngspice and the sky130 models are here, else why not (one line, with the fix)."""
    from codesign.analog.ngspice import find_ngspice
    from codesign.analog.pdk import models_dir

    try:
        find_ngspice()
        models_dir(fetch=False, corner=CORNER)
    except CodesignError as err:
        return str(err)
    return None


def not_measured(status: str, reason: str) -> dict:
    """The ``analog`` section of a report without a measurement (``off``, ``unavailable``, ...)."""
    return {"status": status, "reason": reason}


def pick_neurons(d: int, n: int) -> list[int]:
    """``n`` neuron indices spread evenly over ``0 .. d-1`` (all of them when ``n >= d``)."""
    if n >= d:
        return list(range(d))
    if n <= 1:
        return [0]
    return sorted({round(k * (d - 1) / (n - 1)) for k in range(n)})


def _hash(parts: dict, arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode())
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _shared_bias_nw(ctx, name: str = "shared_bias") -> dict[str, float]:
    """Power of one ``bias_shared`` block (the BMRU layer's y-stage and cascode biases), DC."""
    from codesign.analog.cells import VDD
    from codesign.analog.spec import Analysis, SimSpec

    spec = SimSpec(
        "shared bias block of a BMRU layer",
        "Xbias vddb vbb vcn bias_shared\n",
        (Analysis("op", "op", ("i(vdd)", "i(vddb)")),),
        corner=ctx.corner,
    )
    tab = ctx.simulate(spec, name)["op"]
    return {
        "core_nW": -VDD * float(tab["i(vdd)"][0]) / 1e-9,
        "bias_nW": -VDD * float(tab["i(vddb)"][0]) / 1e-9,
        "input_nW": 0.0,
    }


def analog_power(
    bundle,
    sequences: list[np.ndarray],
    *,
    step_rate: float,
    steps_per_inference: float,
    cache_root: Path,
    neurons: int = DEFAULT_NEURONS,
    steps: int | None = DEFAULT_STEPS,
    stages: int = DEFAULT_STAGES,
    timeout: float = DEFAULT_TIMEOUT_S,
    source: str = "",
    progress: Callable[[str], None] | None = None,
) -> dict:
    """The ``analog`` section of a report: measured, or ``not buildable`` / ``failed`` with the reason.

    ``sequences``: the report's integer input sequences (all calibrate the current scale; the first,
    cut to ``steps``, is played). ``cache_root``: where measurements, netlists and decks are cached.
    ``timeout``: seconds one ngspice run may take (long ladder transients get more, as in
    :mod:`codesign.analog.checks`).
    """
    from codesign.analog.mapping import map_bundle, spine
    from codesign.analog.ngspice import SimulationError, find_ngspice, ngspice_version
    from codesign.analog.pdk import SKY130_VERSION

    say = progress or (lambda _t: None)
    if neurons < 1:
        raise CodesignError(f"--analog-neurons must be >= 1, got {neurons}")
    if steps is not None and steps < 1:
        raise CodesignError(f"--analog-steps must be >= 1, got {steps}")
    if not 1 <= stages <= 16:
        raise CodesignError(f"analog ladder stages must be between 1 and 16, got {stages}")
    calibration = np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences])[None]
    try:
        sb = spine(bundle)
        if sb.net.eps not in (0, 1):
            raise CodesignError(
                f"eps {sb.net.eps} has no analog primitive (the analog path maps eps 0 and 1)"
            )
        maps = map_bundle(sb, calibration)
    except CodesignError as err:
        return not_measured("not buildable", str(err))

    native = sb.net.eps == 1
    d = sb.net.hidden_size
    picked = pick_neurons(d, neurons)
    played = np.asarray(sequences[0], dtype=np.int64)[: steps or None][None]
    n_steps = int(played.shape[1])
    period = 1.0 / step_rate
    if native:
        from codesign.analog.drive import LadderTiming

        timing = LadderTiming()
        frame = timing.t_step
        circuit = f"native CMRU ladders of {stages} stages (BMRU stages + DPI low-passes, CMRU App. E)"
    else:
        from codesign.analog.drive import Timing

        frame = max(period, BMRU_MIN_FRAME_S)
        timing = Timing(t_step=frame)
        circuit = "BMRU cells (current-mode Schmitt-trigger memory cells)"
    exe = find_ngspice()
    key_parts = {
        "version": CACHE_VERSION,
        "bundle": sb.manifest.model_dump(mode="json"),
        "neurons": picked,
        "steps": n_steps,
        "stages": stages if native else None,
        "frame_s": frame,
        "corner": CORNER,
        "ngspice": ngspice_version(str(exe)),
        "sky130": SKY130_VERSION,
    }
    arrays = [sb.weights[k] for k in sorted(sb.weights)] + [played, calibration]
    key = _hash(key_parts, arrays)
    where = Path(cache_root) / key
    cached = (where / "measurement.json").is_file()
    if cached:
        say(f"analog: cached ngspice measurement {where / 'measurement.json'}")
        m = json.loads((where / "measurement.json").read_text())
    else:
        setup = {
            "native": native,
            "stages": stages,
            "timing": timing,
            "frame": frame,
            "circuit": circuit,
            "calibration": calibration,
            "ngspice_version": key_parts["ngspice"],
            "key": key,
        }
        try:
            m = _measure(sb, maps, picked, played, setup, timeout, where, say)
        except SimulationError as err:
            return not_measured("failed", f"ngspice: {err}")
        write_text(where / "measurement.json", json.dumps(m, indent=1) + "\n")
    return _section(m, step_rate, steps_per_inference, cached, source)


def _measure(
    sb, maps, picked: list[int], played: np.ndarray, setup: dict, timeout: float, where: Path, say
) -> dict:
    """Every picked neuron alone in ngspice (its netlist, decks and logs under ``where``), its
    power less the layer's shared bias, and the synapse arrays' power: the measurement record."""
    from codesign.analog.ladder_trace import run_ladder_trace
    from codesign.analog.netlist import generate_netlists
    from codesign.analog.sim import Ctx
    from codesign.analog.trace import run_bundle_trace

    native, stages, timing, frame = setup["native"], setup["stages"], setup["timing"], setup["frame"]
    n_steps = int(played.shape[1])
    t0 = time.monotonic()
    ctx = Ctx(corner=CORNER, timeout=timeout, keep_dir=where / "decks")
    generate_netlists(sb, where / "netlists", calibration=setup["calibration"], stages=stages)
    rows = []
    shared = None if native else _shared_bias_nw(ctx)
    for i in picked:
        say(
            f"analog: ngspice, neuron {i} ({len(rows) + 1} of {len(picked)}), {n_steps} steps "
            f"of {frame * 1e3:g} ms"
        )
        if native:
            tr = run_ladder_trace(
                sb, played, ctx, stages=stages, maps=maps, neurons=[i], timing=timing, name=f"neuron_{i}"
            )
            agree = tr.rows[0]["count_agreement"]
        else:
            tr = run_bundle_trace(sb, played, ctx, maps=maps, neurons=[i], timing=timing, name=f"neuron_{i}")
            agree = tr.rows[0]["state_agreement"]
        own = {k: v - (shared[k] if shared else 0.0) for k, v in tr.power.items()}
        rows.append(
            {
                "neuron": i,
                "thresholds": "fixed" if maps[i].fixed_threshold else "per-step",
                **own,
                "total_nW": own["core_nW"] + own["bias_nW"],
                "golden_agreement": None if agree != agree else float(agree),
                "wall_s": tr.wall_s,
            }
        )
    synapses_nw = _synapses_nw(sb, played[0], where / "synapses")
    return {
        "synapses_nW": synapses_nw,
        "synapse_ix_fA": SYNAPSE_IX / 1e-15,
        "native": native,
        "circuit": setup["circuit"],
        "stages": stages if native else None,
        "frame_s": frame,
        "steps": n_steps,
        "neurons": picked,
        "layer_neurons": sb.net.hidden_size,
        "per_neuron": rows,
        "shared_bias": shared,
        "corner": CORNER,
        "ngspice_version": setup["ngspice_version"],
        "decks": ctx.decks,
        "sim_wall_s": ctx.sim_wall_s,
        "wall_s": time.monotonic() - t0,
        "netlists": str(where / "netlists"),
        "decks_dir": str(where / "decks"),
        "key": setup["key"],
    }


def _synapses_nw(sb, x: np.ndarray, cache: Path) -> float:
    """Mean supply power (nW) of the layer's candidate and threshold mirror arrays over the played
    steps ``x`` (T, M), from their ngspice DC sweep (:mod:`codesign.analog.synapse_sim`)."""
    from codesign.analog.synapse import SynapseDesign
    from codesign.analog.synapse_sim import array_sums, array_supply, load_or_measure

    arr = np.concatenate([sb.weights["w_cand"], sb.weights["w_thr"]]).astype(np.int64)
    x_max = 1 << (sb.manifest.formats.input.bits - 1)
    cache.mkdir(parents=True, exist_ok=True)
    table = load_or_measure(arr, x_max, cache, SynapseDesign(i_x=SYNAPSE_IX), corner=CORNER)
    _, lines = array_sums(table, arr, x)
    return float(array_supply(table, x, lines).mean() / 1e-9)


def _assumptions(m: dict, per: np.ndarray, sem: float | None, step_rate: float) -> list[str]:
    """What the scaled figure assumes: how representative the simulated neurons are, static power,
    the models, and how the frames relate to the report's step period."""
    from codesign.analog.cells import DpiParams

    d, n = m["layer_neurons"], len(m["per_neuron"])
    period = 1.0 / step_rate
    frame_ms = m["frame_s"] * 1e3
    if n < d:
        spread = (
            f"the {n} simulated neurons are representative of the layer (per-neuron cell power "
            f"{per.min():.2f} to {per.max():.2f} nW"
            + (f"; standard error of the layer figure +-{d * sem:.1f} nW" if sem is not None else "")
            + ")"
        )
    else:
        spread = f"every neuron of the layer simulated (per-neuron cell power {per.min():.2f} to {per.max():.2f} nW)"
    assumptions = [
        spread,
        "power is static (bias and output currents), so energy per step = power x step period; switching "
        "energy (fF nodes at 1.8 V) is negligible",
        f"sky130 {m['corner']} models, 27 C, no mismatch; ideal current sources drive candidate and threshold currents",
        "the played steps are representative of the inference (the cells' power depends on how many are on)",
    ]
    if m["native"]:
        assumptions.append(
            f"native ladders step every {frame_ms:g} ms (their 10 ms DPIs must settle between updates): "
            + (
                f"at {step_rate:g} steps/s they could not keep up; the figure is the power measured at "
                f"{frame_ms:g} ms frames, charged per {period * 1e3:g} ms step (ladders fast enough for that "
                f"rate need DPIs with a proportionally larger tau current, {DpiParams().i_tau / 1e-12:g} pA "
                "each here: not simulated)"
                if period < m["frame_s"]
                else f"that fits in the report's {period * 1e3:g} ms period (measured at {frame_ms:g} ms frames, "
                f"charged per {period * 1e3:g} ms step)"
            )
            + f"; each ladder has {m['stages']} stages, started half full, and saturates beyond that"
        )
    elif abs(m["frame_s"] - period) > 1e-12:
        assumptions.append(
            f"BMRU cells played at {frame_ms:g} ms frames (their shortest); the report's period is "
            f"{period * 1e3:g} ms"
        )
    return assumptions


def _section(m: dict, step_rate: float, steps_per_inference: float, cached: bool, source: str) -> dict:
    """Scale a measurement to the layer and the report's step rate; say how."""
    rows, d, n = m["per_neuron"], m["layer_neurons"], len(m["per_neuron"])
    shared = m["shared_bias"] or {"core_nW": 0.0, "bias_nW": 0.0, "input_nW": 0.0}
    layer = {k: shared[k] + d / n * sum(r[k] for r in rows) for k in ("core_nW", "bias_nW", "input_nW")}
    cells_nw = layer["core_nW"] + layer["bias_nW"]
    per = np.array([r["total_nW"] for r in rows])
    # standard error of d x (mean of n neurons drawn from d), finite-population corrected (0 when n == d)
    sem = float(per.std(ddof=1) / np.sqrt(n) * np.sqrt((d - n) / (d - 1))) if 1 < n < d else None
    period = 1.0 / step_rate
    e_step_pj = cells_nw * 1e-9 * period * 1e12
    frame_ms = m["frame_s"] * 1e3
    scaling = (
        f"measured on {n} of {d} neurons (indices {', '.join(map(str, m['neurons']))}, spread evenly), one "
        f"ngspice transient each, {m['steps']} steps of the first input sequence at {frame_ms:g} ms per step; "
        f"layer power = {d}/{n} x the simulated neurons"
        + (
            " (each minus the shared bias block, measured in a deck of its own) + the shared bias block once"
            if m["shared_bias"]
            else " (each ladder has its own bias generator)"
        )
        + f"; energy per step = layer power / {step_rate:g} steps/s; per inference = per step x "
        f"{steps_per_inference:g} steps"
    )
    assumptions = _assumptions(m, per, sem, step_rate)
    agree = [r["golden_agreement"] for r in rows if r["golden_agreement"] is not None]
    return {
        "status": "measured",
        "reason": None,
        "circuit": m["circuit"],
        "inputs": f"the first sequence of the report's inputs ({source})" if source else "the first sequence",
        "layer_neurons": d,
        "neurons_simulated": m["neurons"],
        "steps_simulated": m["steps"],
        "frame_ms": frame_ms,
        "stages": m["stages"],
        "step_rate_hz": step_rate,
        "steps_per_inference": steps_per_inference,
        "per_neuron": rows,
        "shared_bias_nw": m["shared_bias"],
        "layer_nw": {**layer, "cells": cells_nw},
        "power_uw": cells_nw * 1e-3,
        "input_power_uw": layer["input_nW"] * 1e-3,
        "energy_pj_per_step": e_step_pj,
        "energy_uj_per_inference": e_step_pj * steps_per_inference * 1e-6,
        "input_pj_per_step": layer["input_nW"] * 1e-9 * period * 1e12,
        "synapses_nw": m["synapses_nW"],
        "synapse_ix_fa": m["synapse_ix_fA"],
        "synapse_pj_per_step": m["synapses_nW"] * 1e-9 * period * 1e12,
        "golden_agreement_mean": float(np.mean(agree)) if agree else None,
        "golden_agreement_note": (
            "share of played steps on which the simulated "
            + ("ladders' stage counts" if m["native"] else "cells' stored signs")
            + " matched the golden model (as in codesign analog-check); information only"
        ),
        "scaling": scaling,
        "layer_sem_nw": d * sem if sem is not None else None,
        "assumptions": assumptions,
        "includes": INCLUDES + (INCLUDES_NATIVE if m["native"] else ""),
        "excludes": EXCLUDES,
        "netlists": m["netlists"],
        "decks": m["decks_dir"],
        "ngspice_runs": m["decks"],
        "ngspice_version": m["ngspice_version"],
        "sim_wall_s": m["sim_wall_s"],
        "cache_key": m["key"],
        "cached": cached,
    }


def side_by_side(figures: dict) -> list[dict]:
    """Rows of the digital-and-analog table (per step, per inference, power at the step rate).

    ``figures``: :func:`codesign.report.figures.build_figures` output with its ``analog`` section.
    """
    en, an = figures["energy"], figures.get("analog") or {}
    rate = figures["latency"]["step_rate_hz"]
    t = figures["inputs"]["steps_per_sequence"]
    kinds = {m["name"]: m["kind"] for m in figures["area"]["memories"]}
    cell_mems = [k for k, kind in kinds.items() if kind in ("state", "params") and k.startswith("layer")]
    cell_pj = en["dynamic_pj"].get("finalize", 0.0) + sum(
        en["dynamic_pj_by_memory"].get(k, 0.0) for k in cell_mems
    )

    def row(path: str, what: str, includes: str, excludes: str, per_step_pj: float) -> dict:
        return {
            "path": path,
            "figure": what,
            "includes": includes,
            "excludes": excludes,
            "pj_per_step": per_step_pj,
            "nj_per_inference": per_step_pj * t * 1e-3,
            "power_uw": per_step_pj * rate * 1e-6,
        }

    rows = [
        row(
            "digital",
            "whole accelerator, dynamic (45 nm proxy)",
            "MACs, memory accesses, gate/update adds, events, DCLS, readout",
            "leakage, control, clock tree, I/O, wires",
            en["dynamic_pj_per_step"],
        ),
        row(
            "digital",
            "whole accelerator, dynamic + assumed leakage",
            "the above + leakage (" + en["leak_note"] + ")",
            "control, clock tree, I/O, wires",
            en["energy_pj_per_step"],
        ),
        row(
            "digital",
            "recurrent-cell part, dynamic",
            "gate/update adds (finalize) and the "
            + ", ".join(cell_mems)
            + " accesses: what the analog cells do",
            "synaptic MACs and their weight/input memories, events, readout, leakage",
            cell_pj / t,
        ),
    ]
    if an.get("status") == "measured":
        n, d = len(an["neurons_simulated"]), an["layer_neurons"]
        rows += [
            row(
                "analog",
                f"{d} recurrent cells, ngspice (core + bias supplies)",
                an["includes"] + f"; measured on {n} of {d} neurons, scaled by {d}/{n}",
                an["excludes"],
                an["energy_pj_per_step"],
            ),
            row(
                "analog",
                "synapse mirror arrays, ngspice DC sweep (all neurons)",
                f"every weight a group of sky130 unit mirrors ({an['synapse_ix_fa']:g} fA per input LSB "
                "and weight unit), the input DAC currents into their diodes, every sum line, the cascode bias",
                "the input DACs' own circuits, the stage that scales the sums into the cells' currents",
                an["synapse_pj_per_step"],
            ),
            row(
                "analog",
                "candidate input currents (vsrc at 1.8 V)",
                "the current each cell's input draws from a 1.8 V source",
                "the DACs or synapses that would make it",
                an["input_pj_per_step"],
            ),
            row(
                "analog",
                "analog layer total, synapses included",
                "the three analog rows above: cells, synapse arrays, candidate input currents",
                "the stage that scales the sums into the cells' currents, the input DACs' own circuits, "
                "input encoding, readout, the loads of the output currents",
                an["energy_pj_per_step"] + an["synapse_pj_per_step"] + an["input_pj_per_step"],
            ),
        ]
    rows.append(
        row(
            "published",
            f"{BMRU_KWS['chip']}: {BMRU_KWS['figure']}",
            f"{BMRU_KWS['source']}; its power as published, charged over this report's "
            f"{t:.0f} steps at {rate:g} steps/s",
            "another chip and task: its network, front end and step rate are not this bundle's",
            BMRU_KWS["power_uw"] * 1e6 / rate,
        )
    )
    return rows
