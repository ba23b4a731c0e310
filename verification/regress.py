"""RTL regression (``make sim``): constrained-random bundles over the whole family, every reference
bundle with its real test inputs, directed corners, a mutation check, under Icarus and Verilator.

* **Random designs.** ``--shapes`` random shapes (cells, eps, sizes, widths, lanes, 1-3 layers,
  DCLS taps and spans, last/sum/per-step readouts), each with ``--bundles-per-shape`` random
  bundles of that shape. One build per shape with ``weights="runtime"``; the testbench loads the
  bundles one after another through the ``config`` stream (so one Verilator build serves them
  all). Tests: ``random_sequences``, ``directed_corners`` (corner bundles and inputs),
  ``reset_mid_sequence``.
* **Reference bundles** (``models/bundles``): the first ``--reference-sequences`` sequences of
  their real test sets (quantized), with the RTL's accuracy on them.
* **Long sequence**: one sequence of 10000 steps.
* **Mutation check**: every fault of ``codesign.hw.faults.FAULTS`` built into a design it applies
  to, run until the first mismatch; each must be caught, and the test that caught it is named.

Jobs (a design under one simulator) run in parallel (``--jobs``, default 2); a line is printed
as each ends. Writes ``<out>/summary.json`` (designs, sequences, mismatches, mutants caught,
coverage) and ``<out>/junit.xml``; exits 1 on any mismatch, error, escaped mutant or (with
``--require-coverage``) coverage bin never hit.

Usage::

    .venv/bin/python verification/regress.py [--sims icarus verilator] [--seed 0] [--jobs 2]
        [--filter REGEX] [--quick] [--no-mutants] [--out build/regress]

``SIM``, ``SEED`` and ``TESTCASE`` (a regular expression over job and test names) are read from
the environment as cocotb users expect (``make sim SIM=icarus SEED=3 TESTCASE=shape0``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for p in (REPO, HERE):
    if str(p) not in sys.path:  # runnable without installing the package
        sys.path.insert(0, str(p))

import tb_coverage  # noqa: E402

from codesign.bundle.cells import CELL_NAMES  # noqa: E402
from codesign.bundle.cells import CELLS as CELL_KINDS  # noqa: E402
from codesign.bundle.io import load_bundle, save_bundle  # noqa: E402
from codesign.bundle.random import random_network_manifest, random_network_weights  # noqa: E402
from codesign.bundle.spec import Manifest  # noqa: E402
from codesign.errors import CodesignError  # noqa: E402
from codesign.hw.faults import FAULTS  # noqa: E402
from codesign.verify.job import REGRESSION_TESTS  # noqa: E402
from codesign.verify.runner import SIMULATORS, kill_running, run_sim  # noqa: E402

CELLS = CELL_NAMES
MAIN_TESTS = REGRESSION_TESTS
REFERENCES = REPO / "models" / "bundles"


# --------------------------------------------------------------------------- shapes
def random_layer(rng: np.random.Generator, cell: str, index: int) -> dict:
    layer: dict = {
        "cell": cell,
        "size": int(rng.integers(1, 9)),
        "weight_bits": int(rng.integers(2, 9)),
        "bias_bits": int(rng.integers(4, 17)),
        "state_bits": int(rng.integers(3, 11)),
    }
    if CELL_KINDS[cell].has_eps:
        layer["eps"] = int(rng.choice(list(CELL_KINDS[cell].eps)))
    if cell in ("cmru", "bmru"):
        layer["alpha_bits"] = int(rng.integers(2, 9))
    if cell == "alphacmru":
        layer["alpha_bits"] = int(rng.integers(2, 7))
    if cell == "mingru":
        layer["gate_bits"] = int(rng.integers(1, 7))
    if cell == "hsru":
        layer["leak_shift"] = int(rng.integers(1, 5))
    if rng.random() < 0.35:
        layer["dcls"] = {
            "taps": int(rng.integers(1, 4)),
            "span": int(rng.integers(1, 9)),
            "weight_bits": int(rng.integers(2, 7)),
        }
    return layer


def random_shape(seed: int, index: int) -> dict:
    """Keyword arguments of :func:`make_shape_bundle` for shape ``index`` (layer 0's cell cycles)."""
    rng = np.random.default_rng([seed, index])
    for _ in range(100):
        n_layers = int(rng.choice([1, 2, 3], p=[0.4, 0.4, 0.2]))
        cells = [CELLS[index % len(CELLS)]] + [str(rng.choice(CELLS)) for _ in range(n_layers - 1)]
        layers = [random_layer(rng, c, i) for i, c in enumerate(cells)]
        per_step = bool(rng.random() < 0.3)
        shape = {
            "inputs": int(rng.integers(1, 7)),
            "layers": layers,
            "classes": int(rng.integers(1, 7)),
            "input_bits": int(rng.integers(2, 9)),
            "pooling": "last" if per_step else str(rng.choice(["last", "sum"])),
            "per_step": per_step,
            "sum_bits": int(rng.integers(4, 13)),
        }
        widest = max(layer["size"] for layer in layers)
        shape["lanes"] = int(rng.integers(1, widest + 1))
        try:
            manifest_for(shape, "probe", 0)
        except (ValueError, CodesignError):
            continue
        return shape
    raise RuntimeError(f"no legal shape drawn for index {index}")


def selective_shape(seed: int, index: int) -> dict:
    """A random shape (layer 0's cell cycles backwards) whose layers have selective update (each
    with probability 0.7, at least one; periods 1 to 16). Bundles of the shape draw their
    schedules (windows or independent bits at rates 0 to 1: ``codesign.bundle.random``)."""
    shape = random_shape(seed + 7919, len(CELLS) - 1 - index % len(CELLS))
    rng = np.random.default_rng([seed, index, 20])
    layers = [dict(layer) for layer in shape["layers"]]
    chosen = rng.random(len(layers)) < 0.7
    chosen[int(rng.integers(len(layers)))] = True
    for layer, on in zip(layers, chosen, strict=True):
        if on:
            layer["selective"] = {"period": int(2 ** rng.integers(0, 5))}
    return shape | {"layers": layers}


def manifest_for(shape: dict, name: str, seed: int):
    man = random_network_manifest(
        inputs=shape["inputs"],
        layers=shape["layers"],
        classes=shape["classes"],
        input_bits=shape["input_bits"],
        pooling=shape["pooling"],
        per_step=shape["per_step"],
        name=name,
        seed=seed,
    )
    if shape["pooling"] != "sum":
        return man
    data = man.model_dump(mode="json")
    data["readout"]["sum_bits"] = shape["sum_bits"]
    return Manifest.model_validate(data)


def make_shape_bundle(shape: dict, out: Path, name: str, seed: int) -> Path:
    man = manifest_for(shape, name, seed)
    save_bundle(out, man, random_network_weights(man, seed))
    return out


def describe(shape: dict) -> str:
    parts = []
    for layer in shape["layers"]:
        s = f"{layer['cell']}{layer['size']}"
        if "eps" in layer:
            s += f"e{layer['eps']}"
        if "dcls" in layer:
            s += f"+dcls{layer['dcls']['taps']}x{layer['dcls']['span']}"
        if layer.get("selective"):
            s += f"+su{layer['selective']['period']}"
        parts.append(s)
    ro = "per_step" if shape["per_step"] else shape["pooling"]
    return f"M{shape['inputs']} {'-'.join(parts)} C{shape['classes']} {ro} P{shape['lanes']}"


# --------------------------------------------------------------------------- designs and jobs
@dataclass
class Design:
    """One build (and the bundles it runs)."""

    name: str
    kind: str  # random | reference | long | mutant
    build: Path
    bundle: Path  # the bundle the build is made from
    lanes: int
    bundles: list[Path] = field(default_factory=list)  # loaded through config (runtime builds)
    tests: tuple[str, ...] = MAIN_TESTS
    icarus_tests: tuple[str, ...] | None = None  # Icarus is slow: a lighter set where given
    vectors: int = 3
    max_steps: int = 10
    inputs: dict[str, Path] = field(default_factory=dict)  # per simulator: .npy of test inputs
    labels: Path | None = None
    long_steps: int = 10000
    faults: tuple[str, ...] = ()
    description: str = ""
    info: dict = field(default_factory=dict)
    share: str = "off"  # codesign rtl --share-multipliers
    weights: str = "runtime"  # codesign rtl --weights (spram: its own bundle, loaded through config)
    target: str = "generic"  # codesign rtl --target
    narrow: str = "off"  # codesign rtl --narrow
    share_updates: str = "off"  # codesign rtl --share-updates
    merge: str = "off"  # codesign rtl --merge


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
    )


def _build(args: tuple) -> tuple[str, str | None]:
    bundle, out, lanes, faults, share, weights, target, narrow, share_updates, merge = args
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
        )
    except Exception as err:  # noqa: BLE001 - reported with the design's name
        return str(out), f"{type(err).__name__}: {err}"
    return str(out), None


def reference_inputs(name: str, count: int, out: Path) -> tuple[Path, Path | None] | None:
    """The first ``count`` sequences of a reference bundle's test split, quantized, as .npy."""
    from codesign.golden import quantize_inputs
    from codesign.train.recipe import build_task

    bundle = load_bundle(REFERENCES / name)
    prov = bundle.manifest.provenance
    options = dict(prov.get("task") or {})
    if "name" not in options:
        return None
    task = build_task(options.pop("name"), options)
    x, y = task.split("test", prov["seed"])
    xq = quantize_inputs(bundle, np.asarray(x[:count]))
    out.mkdir(parents=True, exist_ok=True)
    xp, yp = out / f"x{count}.npy", out / f"y{count}.npy"
    np.save(xp, xq.astype(np.int64))
    labels = np.asarray(y[:count]).astype(np.int64)
    np.save(yp, labels)
    return xp, yp


def plan_designs(args, out: Path) -> list[Design]:
    designs: list[Design] = []
    if not args.quick:
        shapes = [random_shape(args.seed, i) for i in range(args.shapes)]
        shapes += [selective_shape(args.seed, i) for i in range(args.selective_shapes)]
        per_shape = args.bundles_per_shape
    else:
        shapes = QUICK_SHAPES
        per_shape = 2
    for i, shape in enumerate(shapes):
        # selective-update shapes are named sel<k> (``--filter sel``)
        selective = any(layer.get("selective") for layer in shape["layers"])
        name = (
            f"sel{i - (0 if args.quick else args.shapes):02d}"
            if selective and not args.quick
            else f"shape{i:02d}"
        )
        root = out / "designs" / name
        bundles = [
            make_shape_bundle(shape, root / f"bundle{k:02d}", f"{name}_b{k}", args.seed * 1000 + i * 50 + k)
            for k in range(per_shape)
        ]
        designs.append(
            Design(
                name,
                "random",
                root / "rtl",
                bundles[0],
                shape["lanes"],
                bundles=bundles,
                vectors=args.vectors,
                max_steps=args.max_steps,
                description=describe(shape),
                info={"shape": shape},
                icarus_tests=None
                if (i + 1) % (2 if args.quick else args.icarus_corners_every) == 0
                else ("random_sequences", "reset_mid_sequence"),
            )
        )
    if not args.quick:
        designs.append(shared_design(args, out))
        designs.append(shared_design(args, out, name="serial", share="on:2"))
        designs.append(shared_design(args, out, name="narrow", share="on:2", narrow="auto"))
        designs.append(
            shared_design(
                args, out, name="update", share="on", narrow="auto", share_updates="on", target="up5k"
            )
        )
        designs.append(spram_design(out))
        designs.append(merge_design(args, out))
    if not args.quick and not args.no_references:
        for ref in sorted(p.name for p in REFERENCES.iterdir() if (p / "manifest.yaml").is_file()):
            bundle = load_bundle(REFERENCES / ref)
            lanes = min(4, max(layer.size for layer in bundle.manifest.layers))
            d = Design(
                f"ref_{ref}",
                "reference",
                out / "designs" / f"ref_{ref}" / "rtl",
                REFERENCES / ref,
                lanes,
                bundles=[REFERENCES / ref],
                tests=("random_sequences", "directed_corners"),
                description=f"reference bundle {ref}, P{lanes}",
            )
            for sim, count in (
                ("icarus", args.reference_sequences[0]),
                ("verilator", args.reference_sequences[1]),
            ):
                try:
                    got = reference_inputs(ref, count, out / "designs" / f"ref_{ref}" / "inputs")
                except Exception as err:  # noqa: BLE001 - fall back to random inputs, say so
                    print(
                        f"{ref}: test inputs unavailable ({type(err).__name__}: {err}); random inputs",
                        flush=True,
                    )
                    got = None
                if got is not None:
                    d.inputs[sim], d.labels = got
            designs.append(d)
    if not args.no_long:
        root = out / "designs" / "long"
        shape = {
            "inputs": 2,
            "layers": [{"cell": "cmru", "size": 2, "eps": 1, "state_bits": 4}],
            "classes": 2,
            "input_bits": 4,
            "pooling": "last",
            "per_step": False,
            "sum_bits": 8,
            "lanes": 2,
        }
        b = make_shape_bundle(shape, root / "bundle", "long_cmru", args.seed)
        designs.append(
            Design(
                "long",
                "long",
                root / "rtl",
                b,
                2,
                bundles=[b],
                tests=("long_sequence",),
                long_steps=args.long_steps,
                description=f"T = {args.long_steps} ({describe(shape)})",
            )
        )
    return designs


SHARED_SHAPE = {
    "inputs": 5,
    "layers": [
        {"cell": "mingru", "size": 6, "state_bits": 6, "gate_bits": 3, "dcls": {"taps": 2, "span": 3}},
        {
            "cell": "alphacmru",
            "size": 5,
            "eps": 1,
            "state_bits": 5,
            "alpha_bits": 4,
            "dcls": {"taps": 2, "span": 2},
        },
    ],
    "classes": 3,
    "input_bits": 4,
    "pooling": "last",
    "per_step": False,
    "sum_bits": 8,
    "lanes": 2,
}
"""The shared-multiplier design (``--filter shared``): one multiplier per lane over minGRU's two
matrices and alphaCMRU's three (2 and 3 cycles per slot), both behind DCLS front ends."""


def shared_design(
    args,
    out: Path,
    name: str = "shared",
    share: str = "on",
    narrow: str = "off",
    share_updates: str = "off",
    target: str = "generic",
) -> Design:
    """``shared``: one multiplier per lane; ``serial`` (``--filter serial``, ``on:2``): also each
    product in two Booth-digit pieces (``--share-multipliers X:K``: 4 and 6 cycles per slot);
    ``narrow`` (``--filter narrow``, ``on:2`` and ``--narrow auto``): also the weight words folded
    into one slice per pass (2 and 3 slices, read once per pass and piece); ``update``
    (``--filter update``, ``on``, ``--narrow auto`` and ``--share-updates on``): also one update
    unit per layer serving the lanes in turn (the DCLS minGRU's three-stage unit, alphaCMRU's),
    built for the UP5K (``target``), where the state is written one lane per turn, the seeds
    and ROMs skip their registers and no slice sits behind an event queue."""
    root = out / "designs" / name
    offset = {"shared": 900, "serial": 950, "update": 990}.get(name, 970)
    bundles = [
        make_shape_bundle(
            SHARED_SHAPE, root / f"bundle{k:02d}", f"{name}_b{k}", args.seed * 1000 + offset + k
        )
        for k in range(2)
    ]
    what = "one per lane" if share == "on" else f"one per lane, products in pieces ({share})"
    if narrow != "off":
        what += ", words folded per pass"
    if share_updates != "off":
        what += ", one update unit per layer"
    if target != "generic":
        what += f", {target}"
    return Design(
        name,
        "random",
        root / "rtl",
        bundles[0],
        SHARED_SHAPE["lanes"],
        bundles=bundles,
        vectors=args.vectors,
        max_steps=args.max_steps,
        description=f"{describe(SHARED_SHAPE)}, multipliers shared ({what})",
        info={"shape": SHARED_SHAPE},
        share=share,
        narrow=narrow,
        share_updates=share_updates,
        target=target,
    )


def spram_design(out: Path) -> Design:
    """``spram`` (``--filter spram``): the two-layer JapaneseVowels bundle at P = 2 built for the
    UP5K with ``--weights spram``: both layers' weight matrices in single-port RAMs (a read and a
    write port on one address, no initial value: X until the testbench loads them through
    ``config``), every other parameter a ROM. Random inputs (its own bundle only)."""
    ref = "japanese_vowels_cmru2"
    return Design(
        "spram",
        "reference",
        out / "designs" / "spram" / "rtl",
        REFERENCES / ref,
        2,
        tests=("random_sequences", "directed_corners"),
        description=f"reference bundle {ref}, P2, up5k, weights in SPRAM loaded through config",
        weights="spram",
        target="up5k",
    )


def merge_design(args, out: Path) -> Design:
    """``merge`` (``--filter merge``): the first quick shape (a DCLS CMRU layer, a BMRU layer with
    sum pooling, P = 2) built for the ECP5 with ``--merge auto``: each layer's parameters and
    state, and the last layer's pooled sums, side by side in one physical word, written per slice
    (the parameters by configuration beats: ``--weights runtime`` loads every bundle through
    ``config``). Two bundles of the shape."""
    shape = QUICK_SHAPES[0]
    root = out / "designs" / "merge"
    bundles = [
        make_shape_bundle(shape, root / f"bundle{k:02d}", f"merge_b{k}", args.seed * 1000 + 930 + k)
        for k in range(2)
    ]
    return Design(
        "merge",
        "random",
        root / "rtl",
        bundles[0],
        shape["lanes"],
        bundles=bundles,
        vectors=args.vectors,
        max_steps=args.max_steps,
        description=f"{describe(shape)}, ecp5, parameters, state and pooled sums merged per layer",
        info={"shape": shape},
        target="ecp5",
        merge="auto",
    )


QUICK_SHAPES = [
    {
        "inputs": 4,
        "layers": [
            {
                "cell": "cmru",
                "size": 6,
                "eps": 1,
                "state_bits": 4,
                "alpha_bits": 4,
                "dcls": {"taps": 2, "span": 4},
            },
            {"cell": "bmru", "size": 5, "state_bits": 3},
        ],
        "classes": 3,
        "input_bits": 4,
        "pooling": "sum",
        "per_step": False,
        "sum_bits": 5,
        "lanes": 2,
    },
    {
        "inputs": 3,
        "layers": [
            {"cell": "mingru", "size": 4, "state_bits": 6, "gate_bits": 3},
            {"cell": "hsru", "size": 5, "state_bits": 6, "leak_shift": 1},
        ],
        "classes": 4,
        "input_bits": 4,
        "pooling": "last",
        "per_step": True,
        "sum_bits": 8,
        "lanes": 3,
    },
    {
        "inputs": 5,
        "layers": [
            {"cell": "alphacmru", "size": 7, "eps": -1, "state_bits": 5, "alpha_bits": 4},
            {"cell": "bgmingru", "size": 3, "state_bits": 5, "dcls": {"taps": 1, "span": 3}},
            {"cell": "cmru", "size": 2, "eps": 0, "state_bits": 4},
        ],
        "classes": 2,
        "input_bits": 3,
        "pooling": "last",
        "per_step": False,
        "sum_bits": 8,
        "lanes": 4,
    },
    {
        "inputs": 4,
        "layers": [
            {"cell": "hsru", "size": 7, "state_bits": 6, "leak_shift": 2, "selective": {"period": 4}},
            {"cell": "mingru", "size": 5, "state_bits": 6, "gate_bits": 2, "selective": {"period": 2}},
        ],
        "classes": 3,
        "input_bits": 4,
        "pooling": "last",
        "per_step": True,
        "sum_bits": 8,
        "lanes": 2,
    },
]
"""The quick tier (``make test``): four shapes that together hold every cell kind, DCLS on a
first and a later layer, sum pooling that saturates, per-step logits, partial lane groups, and
selective update on a first (scratch) and a later (event-driven) layer."""


def mutant_target(designs: list[Design], fault: str) -> Design | None:
    """The first random design whose bundle shape exposes a fault (``codesign.hw.faults``)."""
    exposed = FAULTS[fault].exposed_by
    return next(
        (d for d in designs if d.kind == "random" and exposed(load_bundle(d.bundle).manifest)),
        None,
    )


def plan_mutants(designs: list[Design], out: Path) -> list[Design]:
    mutants = []
    for fault in FAULTS:
        target = mutant_target(designs, fault)
        if target is None:
            continue
        mutants.append(
            Design(
                f"mutant_{fault}",
                "mutant",
                out / "designs" / f"mutant_{fault}" / "rtl",
                target.bundle,
                target.lanes,
                bundles=target.bundles,
                tests=target.tests,
                vectors=target.vectors,
                max_steps=target.max_steps,
                faults=(fault,),
                description=f"{FAULTS[fault].description} in {target.name} ({target.description})",
                info=target.info,
                share=target.share,  # the target's build, with the fault
                weights=target.weights,
                target=target.target,
                narrow=target.narrow,
                share_updates=target.share_updates,
                merge=target.merge,
            )
        )
    return mutants


# --------------------------------------------------------------------------- running
def run_job(design: Design, sim: str, seed: int, timeout_s: float) -> Row:
    row = Row(design, sim)
    t0 = time.perf_counter()
    mutant = design.kind == "mutant"
    try:
        rep = run_sim(
            design.build,
            sim=sim,
            vectors=0 if sim in design.inputs else design.vectors,
            seed=seed,
            inputs=design.inputs.get(sim),
            labels=design.labels if sim in design.inputs else None,
            timeout_s=timeout_s,
            tests=design.icarus_tests if sim == "icarus" and design.icarus_tests else design.tests,
            bundles=design.bundles,
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
    acc = "" if row.accuracy is None else f", RTL accuracy {row.accuracy:.3f}"
    print(
        f"[{k}/{n}] {d.name:<28} {row.sim:<9} {status} {len(d.bundles) or 1} bundles, {row.sequences} sequences, "
        f"{row.steps} steps, {row.mismatches} mismatches{acc} ({row.wall_s:.1f} s) {'' if row.ok else row.message}",
        flush=True,
    )


def write_junit(rows: list[Row], path: Path) -> None:
    suite = ET.Element("testsuite", name="codesign.sim")
    failures = 0
    for row in rows:
        d = row.design
        if d.kind == "mutant":
            case = ET.SubElement(
                suite, "testcase", classname=f"mutants.{row.sim}", name=d.name, time=f"{row.wall_s:.2f}"
            )
            if not row.caught_by:
                failures += 1
                ET.SubElement(case, "failure", message=f"mutant escaped: {row.message}")
            continue
        tests = row.tests or {
            t: None for t in (d.icarus_tests if row.sim == "icarus" and d.icarus_tests else d.tests)
        }
        for test, rec in tests.items():
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{d.name}.{row.sim}",
                name=test,
                time=f"{(rec or {}).get('wall_s', 0.0):.2f}",
            )
            if rec is None or not rec["passed"]:
                failures += 1
                msg = (rec or {}).get("first_mismatch") or {}
                ET.SubElement(case, "failure", message=msg.get("line") if msg else row.message)
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def regress(args) -> dict:
    out = args.out
    t0 = time.perf_counter()
    designs = plan_designs(args, out)
    mutants = plan_mutants(designs, out) if args.mutants else []
    pattern = re.compile(args.filter) if args.filter else None
    if pattern:
        designs = [d for d in designs if pattern.search(d.name) or any(pattern.search(t) for t in d.tests)]
        mutants = [m for m in mutants if pattern.search(m.name)]
    print(
        f"{len(designs)} designs ({sum(len(d.bundles) for d in designs if d.kind == 'random')} random bundles), "
        f"{len(mutants)} mutants, simulators {', '.join(args.sims)}, seed {args.seed}, {args.jobs} jobs",
        flush=True,
    )
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
    order = {"long": 0, "reference": 1, "random": 2, "mutant": 3}
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
    wall = time.perf_counter() - t0
    return summarize(rows, designs, mutants, wall, args)


def summarize(rows: list[Row], designs, mutants, wall: float, args) -> dict:
    main = [r for r in rows if r.design.kind != "mutant"]
    muts = [r for r in rows if r.design.kind == "mutant"]
    coverage: dict = {}
    for r in main:
        tb_coverage.merge(coverage, r.coverage)
    cov_summary = tb_coverage.summary(coverage)
    by_sim = {}
    for sim in args.sims:
        rs = [r for r in main if r.sim == sim]
        by_sim[sim] = {
            "jobs": len(rs),
            "passed": sum(r.ok for r in rs),
            "sequences": sum(r.sequences for r in rs),
            "steps": sum(r.steps for r in rs),
            "mismatches": sum(r.mismatches for r in rs),
            "wall_s": sum(r.wall_s for r in rs),
        }
    random_bundles = sum(len(d.bundles) for d in designs if d.kind == "random")
    summary = {
        "wall_s": wall,
        "seed": args.seed,
        "simulators": list(args.sims),
        "designs": {
            "random_shapes": sum(d.kind == "random" for d in designs),
            "random_bundles": random_bundles,
            "corner_bundles_per_shape": "6 (+2 with DCLS)",
            "reference_bundles": sum(d.kind == "reference" for d in designs),
            "long": sum(d.kind == "long" for d in designs),
        },
        "sequences": sum(r.sequences for r in main),
        "steps": sum(r.steps for r in main),
        "mismatches": sum(r.mismatches for r in main),
        "failed_jobs": [f"{r.design.name}/{r.sim}: {r.message}" for r in main if not r.ok],
        "by_simulator": by_sim,
        "mutants": {
            "total": len(muts),
            "caught": sum(bool(r.caught_by) for r in muts),
            "faults": {
                r.design.faults[0]: {
                    "design": r.design.name,
                    "simulator": r.sim,
                    "caught": bool(r.caught_by),
                    "caught_by": r.caught_by,
                    "first_mismatch": r.message,
                    "description": r.design.description,
                }
                for r in muts
            },
            "not_applicable": [f for f in FAULTS if f not in {r.design.faults[0] for r in muts}],
        },
        "coverage": {**cov_summary, "points": coverage},
        "jobs": [
            {
                "design": r.design.name,
                "kind": r.design.kind,
                "description": r.design.description,
                "sim": r.sim,
                "ok": r.ok,
                "bundles": len(r.design.bundles),
                "sequences": r.sequences,
                "steps": r.steps,
                "mismatches": r.mismatches,
                "accuracy": r.accuracy,
                "cycles_per_step": r.cycles_per_step,
                "cycle_floor_per_step": r.floor,
                "waveform": r.waveform,
                "tests": r.tests,
                "result": r.message,
                "wall_s": r.wall_s,
            }
            for r in sorted(rows, key=lambda r: (r.design.name, r.sim))
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_junit(rows, args.out / "junit.xml")
    return summary


def print_summary(s: dict) -> None:
    print()
    for sim, v in s["by_simulator"].items():
        print(
            f"{sim:<9}: {v['passed']}/{v['jobs']} jobs bit-exact, {v['sequences']} sequences, {v['steps']} steps, "
            f"{v['mismatches']} mismatches"
        )
    m = s["mutants"]
    if m["total"]:
        print(f"mutants  : {m['caught']}/{m['total']} caught")
        for fault, v in m["faults"].items():
            print(
                f"  {fault:<22} {'caught by ' + v['caught_by'] if v['caught'] else 'ESCAPED'} ({v['design']}, {v['simulator']})"
            )
    c = s["coverage"]
    print(
        f"coverage : {c['hit']}/{c['bins']} bins hit"
        + (f"; missed: {', '.join(c['missed'])}" if c["missed"] else "")
    )
    d = s["designs"]
    print(
        f"designs  : {d['random_bundles']} random bundles in {d['random_shapes']} shapes, "
        f"{d['reference_bundles']} reference bundles, {d['long']} long; {s['sequences']} sequences, "
        f"{s['mismatches']} mismatches; wall time {s['wall_s']:.1f} s"
    )


def parse_args(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env_sims = os.environ.get("SIM", "").split()
    ap.add_argument("--sims", nargs="+", default=env_sims or list(SIMULATORS), choices=SIMULATORS)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "0") or 0))
    ap.add_argument("--jobs", type=int, default=2, help="simulations in parallel (default 2)")
    ap.add_argument(
        "--filter", default=os.environ.get("TESTCASE") or None, help="regex over design and test names"
    )
    ap.add_argument("--shapes", type=int, default=6, help="random shapes (default 6)")
    ap.add_argument(
        "--selective-shapes",
        type=int,
        default=6,
        help="random shapes with selective update, sel<k>, layer 0's cell cycling (default 6)",
    )
    ap.add_argument("--bundles-per-shape", type=int, default=36, help="random bundles per shape (default 36)")
    ap.add_argument("--vectors", type=int, default=2, help="random sequences per bundle (default 2)")
    ap.add_argument("--max-steps", type=int, default=6, help="longest random sequence (default 6)")
    ap.add_argument(
        "--reference-sequences",
        type=int,
        nargs=2,
        default=[2, 20],
        metavar=("ICARUS", "VERILATOR"),
        help="real test sequences per reference bundle under each simulator (default 2 20)",
    )
    ap.add_argument("--long-steps", type=int, default=10000)
    ap.add_argument(
        "--icarus-corners-every",
        type=int,
        default=3,
        help="Icarus runs directed_corners on every N-th random shape (Verilator on all; default 3)",
    )
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per simulator call")
    ap.add_argument("--quick", action="store_true", help="the quick tier: 3 fixed shapes x 2 bundles")
    ap.add_argument("--no-references", action="store_true")
    ap.add_argument("--no-long", action="store_true")
    ap.add_argument("--no-mutants", dest="mutants", action="store_false")
    ap.add_argument("--mutant-sim", default="icarus", choices=SIMULATORS)
    ap.add_argument("--require-coverage", action="store_true", help="exit 1 if a coverage bin was never hit")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "regress")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def stop(signum, frame):  # simulators run in their own process groups: take them down too
        kill_running()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    s = regress(args)
    print_summary(s)
    print(f"summary: {args.out / 'summary.json'}, JUnit: {args.out / 'junit.xml'}")
    bad = s["mismatches"] or s["failed_jobs"] or s["mutants"]["caught"] < s["mutants"]["total"]
    if args.require_coverage and s["coverage"]["missed"]:
        bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
