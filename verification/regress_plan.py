"""The regression's plan: which designs are built, with which bundles, tests and inputs.

A :class:`Design` is one RTL build and the bundles it runs. :func:`plan_designs` lists a run's
designs (random shapes, build-option variants, reference bundles with their real test inputs, a
long sequence) and writes their bundles; :func:`plan_mutants` picks, for every fault of
``codesign.hw.faults``, the first random design that exposes it. Nothing here builds or simulates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from regress_shapes import (
    QUICK_SHAPES,
    SHARED_SHAPE,
    describe,
    make_shape_bundle,
    random_shape,
    selective_shape,
)

from codesign.bundle.io import load_bundle
from codesign.hw.faults import FAULTS
from codesign.verify.job import REGRESSION_TESTS

__all__ = [
    "REFERENCES",
    "REPO",
    "Design",
    "axi_designs",
    "netlist_designs",
    "plan_designs",
    "plan_mutants",
    "reference_inputs",
]

REPO = Path(__file__).resolve().parents[1]
MAIN_TESTS = REGRESSION_TESTS
REFERENCES = REPO / "models" / "bundles"


@dataclass
class Design:
    """One build (and the bundles it runs)."""

    name: str
    kind: str  # random | reference | long | mutant | netlist
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
    counters: str = "all"  # codesign rtl --counters
    icarus_bundles: int | None = None  # Icarus runs the first N bundles only (Verilator runs them all)
    netlist: str | None = None  # the chip the build is mapped for (codesign sim --netlist)
    pins: bool = False  # the whole chip, fpga_top, driven at its UART pins (codesign sim --pins)
    bus: str = "stream"  # codesign rtl --bus (axi: verification/tb_axi.py, codesign.verify.axi)

    @property
    def sim_build(self) -> Path:
        """What the simulator runs: the build, its netlist, or the netlist of its ``fpga_top``."""
        if self.netlist is None:
            return self.build
        return self.build / ("pins" if self.pins else "netlist") / self.netlist


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
    """Every design of a run, in order: the random shapes, the multiplier and memory variants, the
    reference bundles, the long sequence (``--quick``: the quick shapes, and the long one unless
    ``--no-long``)."""
    designs = _random_designs(args, out)
    if not args.quick:
        designs += _variant_designs(args, out)
    if not args.quick and not args.no_references:
        refs = sorted(p.name for p in REFERENCES.iterdir() if (p / "manifest.yaml").is_file())
        designs += [_reference_design(args, out, ref, i) for i, ref in enumerate(refs)]
    if not args.quick and not args.no_references:
        designs += axi_designs(args, out, designs)
    if not args.quick and not args.no_netlists:
        designs += netlist_designs(out)
    if not args.no_long:
        designs.append(_long_design(args, out))
    return designs


def _random_designs(args, out: Path) -> list[Design]:
    """One runtime-weights build per random (or quick) shape, with its bundles."""
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
                icarus_bundles=args.icarus_bundles,
                icarus_tests=None
                if (i + 1) % (2 if args.quick else args.icarus_corners_every) == 0
                else ("random_sequences", "reset_mid_sequence"),
            )
        )
    return designs


def _variant_designs(args, out: Path) -> list[Design]:
    """The build options' designs: shared multipliers (serial, narrow, update), SPRAM weights, merged words."""
    designs = [
        shared_design(args, out),
        shared_design(args, out, name="serial", share="on:2"),
        shared_design(args, out, name="narrow", share="on:2", narrow="auto"),
        shared_design(args, out, name="update", share="on", narrow="auto", share_updates="on", target="up5k"),
        spram_design(out),
        merge_design(args, out),
    ]
    # the four shared designs have one shape and the same corner bundles: Icarus runs the corners
    # on the first (Verilator, some 50 times faster at them, on all four)
    for d in designs[1:4]:
        d.icarus_tests = ("random_sequences", "reset_mid_sequence")
    return designs


def _reference_design(args, out: Path, ref: str, index: int = 0) -> Design:
    """Reference bundle ``ref`` at up to 4 lanes, with its real test inputs where they load.
    Icarus runs the directed corners on every ``--icarus-corners-every``-th reference (Verilator
    on all), as on the random shapes: there they take Icarus 10 to 50 s a bundle, Verilator 1 to 2."""
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
        icarus_tests=None if (index + 1) % args.icarus_corners_every == 0 else ("random_sequences",),
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
    return d


def axi_designs(args, out: Path, planned: list[Design]) -> list[Design]:
    """The AXI face (``--filter axi``): every reference bundle at P = 1 with its own weights, and
    the first two random shapes' first bundles with run-time weights loaded through the AXI4-Lite
    registers (``--quick``: copy_first_cmru and the first quick shape; ``make sim`` plans them
    outside ``--quick``, whose pytest tier is ``tests/test_hw_faces.py``)."""
    refs = sorted(p.name for p in REFERENCES.iterdir() if (p / "manifest.yaml").is_file())
    if args.quick:
        refs = ["copy_first_cmru"]
    designs = [
        Design(
            f"axi_{ref}",
            "axi",
            out / "designs" / f"axi_{ref}" / "rtl",
            REFERENCES / ref,
            1,
            weights="baked",
            bus="axi",
            vectors=args.vectors,
            max_steps=args.max_steps,
            description=f"reference bundle {ref}, P1, AXI face",
        )
        for ref in refs
    ]
    shapes = [d for d in planned if d.kind == "random"][: 1 if args.quick else 2]
    designs += [
        Design(
            f"axi_{d.name}",
            "axi",
            out / "designs" / f"axi_{d.name}" / "rtl",
            d.bundle,
            d.lanes,
            bus="axi",
            vectors=args.vectors,
            max_steps=args.max_steps,
            description=f"{d.description}, AXI face, weights through AXI4-Lite",
        )
        for d in shapes
    ]
    return designs


def netlist_designs(out: Path) -> list[Design]:
    """The chip's own netlists (``--filter netlist``): copy_first_cmru at P = 2 mapped for the UP5K
    (block RAM, DSP, LUT primitives and their cell models) at the accelerator's ports, and at P = 1
    as the whole chip, ``fpga_top`` (UART, bridge, accelerator), driven at its UART pins with the
    host's bytes (UART divisor 4). A few sequences each: gate-level simulation is slow, and
    ``make sim-netlist`` covers the mapping options."""
    ref = "copy_first_cmru"
    common = dict(bundle=REFERENCES / ref, tests=("random_sequences",), vectors=3, max_steps=6)
    # no counters: they double a gate-level design's cells (and Icarus' time), the pins leave them out
    common |= dict(weights="frozen", target="up5k", share="auto", counters="none", netlist="up5k")
    return [
        Design(
            "netlist_up5k",
            "netlist",
            out / "designs" / "netlist_up5k" / "rtl",
            lanes=2,
            description=f"reference bundle {ref}, P2, the UP5K netlist at the accelerator's ports",
            **common,
        ),
        Design(
            "netlist_pins_up5k",
            "netlist",
            out / "designs" / "netlist_pins_up5k" / "rtl",
            lanes=1,
            pins=True,
            description=f"reference bundle {ref}, P1, the UP5K netlist of fpga_top at its UART pins",
            **common,
        ),
    ]


def _long_design(args, out: Path) -> Design:
    """One small CMRU design run on a single sequence of ``--long-steps`` steps."""
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
    return Design(
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
