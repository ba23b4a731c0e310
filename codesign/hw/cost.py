"""Predicted FPGA resources of an accelerator plan: logic cells, block RAMs, SPRAMs, DSPs.

The plan (:func:`codesign.hw.plan.plan_accelerator`) already decides where every memory and every
multiply goes, so block RAMs, single-port RAMs and hard multipliers are *counted*, not estimated:

* block RAMs: every physical memory of style ``block`` takes ``banks x`` the blocks of its best
  configuration (:meth:`Target.blocks_for`), plus the UART wrapper's RX FIFO (one block);
* SPRAMs: every memory of style ``huge`` (``--weights spram``);
* DSPs: the hard weight products of each engine (``multiplier`` ``hard`` or ``mixed``), the
  update units on hard multipliers and the DCLS taps on them, each
  :meth:`Target.multiplies_needed` multipliers (the same rule :func:`codesign.hw.plan._allocate`
  hands them out by), and one for a selective-update engine's ``group x inputs`` product (yosys
  maps a multiply by a constant that is not a power of two to a DSP).

Logic cells (iCE40 ``ICESTORM_LC``, ECP5 LUT4) come from a linear model over a few per-component
features (:func:`features`) whose coefficients (:data:`COEFFICIENTS`) are fitted by least squares
to the builds measured in ``docs/mapping_measured.json`` (``python -m codesign.hw.cost --fit``
prints a refit; ``--check`` the predicted-versus-measured table of docs/mapping.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from codesign.bundle.cells import CELLS
from codesign.errors import CodesignError
from codesign.hw.plan import AcceleratorPlan, EnginePlan, MemoryPlan
from codesign.hw.targets import Target, get_target

__all__ = [
    "COEFFICIENTS",
    "DEVICES",
    "Device",
    "Resources",
    "count_blocks",
    "count_dsps",
    "count_sprams",
    "features",
    "get_device",
    "build_plan",
    "parse_options",
    "predict",
]

MEASURED = Path(__file__).resolve().parents[2] / "docs" / "mapping_measured.json"


@dataclass(frozen=True)
class Device:
    """A chip ``codesign rtl --device`` maps onto: its budgets and the plan target it builds for."""

    name: str
    family: str  # "ice40", "ecp5" or "asic": which logic-cell coefficients apply
    target: str  # the ``--target`` of the build (codesign.hw.targets)
    logic_cells: int  # iCE40: ICESTORM_LC; ECP5: LUT4 (TRELLIS_COMB); 0: no limit
    block_rams: int  # EBR / DP16KD, the wrapper's FIFO included
    dsps: int  # SB_MAC16 / MULT18X18D
    sprams: int = 0  # SB_SPRAM256KA
    clock_mhz: float = 0.0  # default clock the mapper checks the step rate at
    cell_name: str = "logic cells"
    block_shapes: tuple[tuple[int, int], ...] = ()  # block RAM shapes (a generic build: all memories)
    wrapper_blocks: int = 1  # the UART wrapper's RX FIFO

    @property
    def limited(self) -> bool:
        return self.logic_cells > 0


_ICE40_BLOCKS = ((256, 16), (512, 8), (1024, 4), (2048, 2))

DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("up5k", "ice40", "up5k", 5280, 30, 8, 4, 30.0, "logic cells", _ICE40_BLOCKS),
        # no hard multipliers, no SPRAM: a generic build, every memory in EBR (codesign synth --ram block)
        Device("hx8k", "ice40", "generic", 7680, 32, 0, 0, 30.0, "logic cells", _ICE40_BLOCKS),
        Device("ecp5-25k", "ecp5", "ecp5", 24288, 56, 28, 0, 80.0, "LUT4"),
        Device("ecp5-85k", "ecp5", "ecp5", 83640, 208, 156, 0, 80.0, "LUT4"),
        Device("asic", "asic", "asic", 0, 0, 0, 0, 100.0, "cells", wrapper_blocks=0),
    )
}
"""The devices of ``codesign rtl --device`` (the ECP5-85k builds for the ``ecp5`` target: its plan
keeps to the 25k's block RAMs and multipliers, which the 85k has more of)."""


def get_device(name: str) -> Device:
    try:
        return DEVICES[name]
    except KeyError:
        raise CodesignError(f"--device {name!r} is not one of {', '.join(DEVICES)}") from None


@dataclass(frozen=True)
class Resources:
    """Predicted (or measured) resources of one build on one device."""

    logic_cells: int
    block_rams: int
    sprams: int
    dsps: int

    def misses(self, device: Device) -> list[str]:
        """What does not fit ``device``, one phrase per resource (empty: it fits)."""
        if not device.limited:
            return []
        out = []
        for what, used, avail in (
            (device.cell_name, self.logic_cells, device.logic_cells),
            ("block RAMs", self.block_rams, device.block_rams),
            ("SPRAMs", self.sprams, device.sprams),
            ("DSPs", self.dsps, device.dsps),
        ):
            if used > avail:
                out.append(f"needs {used:,} of {avail:,} {what}")
        return out

    def as_dict(self) -> dict[str, int]:
        return {
            "logic_cells": self.logic_cells,
            "block_rams": self.block_rams,
            "sprams": self.sprams,
            "dsps": self.dsps,
        }


def _physical(plan: AcceleratorPlan) -> list[tuple[str, int, int, int, str]]:
    """``(name, depth, width, banks, style)`` of every physical memory (merged words as one)."""
    merged = plan.physical_memories()
    out = [
        (name, parts[0].depth, sum(p.width for p in parts), 1, parts[0].style)
        for name, parts in merged.items()
    ]
    out += [(m.name, m.depth, m.width, m.banks, m.rtl_style) for m in plan.memories if m.shared is None]
    return out


def count_blocks(plan: AcceleratorPlan, device: Device) -> int:
    """Block RAMs of the build on ``device``: the plan's ``block`` memories (a generic build: all
    but registers, as ``codesign synth --ram block`` maps them), plus the wrapper's FIFO."""
    target = get_target(plan.target)
    shapes = target.block_shapes or device.block_shapes
    if not shapes:
        return 0
    chip = Target("count", "", block_shapes=shapes)
    blocks = device.wrapper_blocks
    for _name, depth, width, banks, style in _physical(plan):
        if depth <= 1 or depth * width <= 2:  # yosys makes these flip-flops (once-per-sequence queues)
            continue
        if style == "block" or (style == "auto" and not target.maps):
            blocks += banks * chip.blocks_for(depth, -(-width // banks))
    return blocks


def count_sprams(plan: AcceleratorPlan) -> int:
    """Single-port RAMs (``--weights spram``) the plan's ``huge`` memories take."""
    target = get_target(plan.target)
    return sum(target.huge_for(m.depth, m.width) for m in plan.memories if m.style == "huge")


def count_dsps(plan: AcceleratorPlan) -> int:
    """Hard multipliers of the plan: weight products, update units and DCLS taps on them (a
    product under the chip's :attr:`Target.min_product_bits` stays in LUTs)."""
    target = get_target(plan.target)
    if not target.multipliers:
        return 0

    def dsps(a_bits: int, b_bits: int) -> int:
        return target.multiplies_needed(a_bits, b_bits) if a_bits + b_bits >= target.min_product_bits else 0

    total = 0
    for e in plan.engines:
        if e.multiplier == "hard":
            total += e.lanes * e.products * dsps(e.weight_bits, e.item_bits)
        elif e.multiplier == "mixed":
            total += e.hard_products * dsps(e.weight_bits, e.item_bits)
        update_products = CELLS[e.kind].update_products if e.kind in CELLS else 0
        if update_products and e.update_multiplier == "hard":
            units = 1 if e.shared_update else e.lanes
            total += units * update_products * dsps(e.gate_bits + 2, e.state_bits + 1)
        if e.period and e.inputs & (e.inputs - 1):
            total += 1  # a selective update's first input of a group (group x inputs) takes one
        if e.dcls is not None and e.dcls.hard_taps:
            total += e.dcls.hard_taps * dsps(e.dcls.weight_bits, e.dcls.item_bits)
    return total


FEATURES = (
    "base",
    "engines",
    "datapath",
    "lut_products",
    "serial",
    "updates",
    "memory_logic",
    "bypass",
    "config",
    "counters",
    "dcls",
    "queues",
)
"""The logic-cell model's features (:func:`features`), in :data:`COEFFICIENTS` order."""


def _memory_cells(mem: MemoryPlan, target: Target, width: int) -> float:
    """Logic a memory outside block RAM takes by the target's own estimate (0 in block RAM). A
    memory the plan left to the tool (``auto``) is block RAM on an FPGA (``codesign synth --ram
    block``) and flip-flops (a ROM: logic) on an ASIC."""
    style = mem.rtl_style
    if style in ("block", "huge", "registers"):
        return 0.0
    if style == "auto" and target.name != "asic":
        return 0.0
    if style == "distributed":
        d, w = target.lut_ram or (16, 4)
        return math.ceil(mem.depth / d) * math.ceil(width / w) * target.lut_ram_cells + width
    if mem.rom:
        return target.rom_cells(mem.depth, width)
    return target.logic_cells(mem.depth, width)


def _bypass_bits(mem: MemoryPlan, target: Target, width: int) -> float:
    """Bits yosys delays and bypasses to make a block RAM's read return the old word where the
    chip leaves a read of a word written in the same cycle undefined (:attr:`Target.undefined_collisions`)."""
    if (
        not target.undefined_collisions
        or mem.style != "block"
        or mem.rom
        or mem.no_collisions
        or mem.depth <= 2
    ):
        return 0.0
    return width + 2 * max(1, (mem.depth - 1).bit_length())


def _lut_products(e: EnginePlan) -> float:
    """Bits of the shift-and-add weight products in LUTs (``weight x item`` bits each)."""
    products = e.lanes * e.products
    if e.multiplier == "hard":
        return 0.0
    lut = products - (e.hard_products if e.multiplier == "mixed" else 0)
    return lut * e.weight_bits * e.item_bits / e.digit_passes


def _stride_bits(e: EnginePlan) -> float:
    """Logic bits of layer 0's input stride (``codesign/hw/stride.py``): the adder and the shifted
    sum (``sum`` bits each), the pending item (value, channel, valid), the channel and frame
    counters and the state machine. Its ``m`` sums are a memory of the plan (``stride_sums``),
    counted with the others. Priced per bit like a DCLS tap's adder and registers: on the UP5K
    (GunPoint CMRU d = 8, one input, S = 4, P = 2, frozen) this predicts 89 logic cells, where
    synthesis measured 94 (1,787 against 1,693 ICESTORM_LC for the same weights at S = 1)."""
    if e.stride <= 1:
        return 0.0
    sums = e.memories["stride_sums"]
    channels = max(1, (sums.depth - 1).bit_length())
    value = sums.elem_bits - e.stride_shift
    return float(2 * sums.elem_bits + (value + channels + 1) + channels + e.stride_shift + 3)


def features(plan: AcceleratorPlan) -> dict[str, float]:
    """The per-component quantities the logic-cell model weighs (:data:`FEATURES`).

    ``datapath``: accumulator and pipeline bits of the lane arrays (lanes x products x acc bits);
    ``lut_products``: bits of the weight products in LUTs; ``serial``: lanes x products x (weight
    + accumulator bits) of digit-serial products (``--share-multipliers X:K``); ``updates``: update units x their state
    and accumulator bits (a minGRU's LUT multiplier counted by its operand bits); ``memory_logic``:
    the target's own estimate of the memories it keeps in logic, LUT RAM or LUT ROMs;
    ``bypass``: bits of the block RAMs whose reads yosys bypasses (:func:`_bypass_bits`);
    ``config``: element and address bits of the memories the config stream writes; ``counters``:
    counter bits; ``dcls``: the input front ends, the delay front ends' taps x delay bits and the
    input stride's adder, channel and frame counter bits (:func:`_stride_bits`); ``queues``:
    bits of the queues between engines."""
    target = get_target(plan.target)
    f = dict.fromkeys(FEATURES, 0.0)
    f["base"] = 1.0
    merged = plan.physical_memories()
    for e in plan.engines:
        f["engines"] += 1
        f["datapath"] += e.lanes * e.products * e.acc_bits
        f["lut_products"] += _lut_products(e)
        if e.digit_passes > 1:  # digit-serial products: the digit select and the partial-sum register
            f["serial"] += e.lanes * e.products * (e.weight_bits + e.acc_bits)
        if e.kind in CELLS:
            units = 1 if e.shared_update else e.lanes
            bits = e.state_bits + e.acc_bits
            products = CELLS[e.kind].update_products
            bits += products * (e.gate_bits + e.state_bits + 3)  # operand and product registers
            if products and e.update_multiplier == "lut":
                bits += products * (e.gate_bits + 2) * (e.state_bits + 1) // 4
            f["updates"] += units * bits
        if e.dcls is not None:
            f["dcls"] += e.dcls.taps * (e.dcls.delay_bits + e.dcls.z_bits + e.dcls.weight_bits)
        f["dcls"] += _stride_bits(e)
        for key, mem in e.memories.items():
            if key == "queue" or mem.kind == "queue":
                f["queues"] += mem.width
            if mem.shared is not None:
                continue
            f["memory_logic"] += _memory_cells(mem, target, mem.width)
            f["bypass"] += _bypass_bits(mem, target, mem.width)
            if mem.config_id is not None and not mem.rom:  # written through the config stream
                f["config"] += mem.elem_bits + max(1, (mem.depth * mem.elements - 1).bit_length())
    for parts in merged.values():
        width = sum(p.width for p in parts)
        first = parts[0]
        f["memory_logic"] += _memory_cells(first, target, width)
        f["bypass"] += _bypass_bits(
            replace(first, no_collisions=all(p.no_collisions for p in parts)), target, width
        )
    f["counters"] = len(plan.counters) * plan.counter_bits
    return f


COEFFICIENTS: dict[str, dict[str, float]] = {
    "ice40": {
        "base": 43.6345,
        "engines": 379.316,
        "datapath": 0.8781,
        "lut_products": 2.9763,
        "serial": 4.6873,
        "updates": 4.0599,
        "memory_logic": 0.6501,
        "bypass": 0.0,
        "config": 3.2949,
        "counters": 0.0,
        "dcls": 2.474,
        "queues": 10.1833,
    },
    "ecp5": {
        "base": 0.0,
        "engines": 123.4981,
        "datapath": 0.9048,
        "lut_products": 1.322,
        "serial": 5.1542,
        "updates": 0.0,
        "memory_logic": 0.4793,
        "bypass": 0.0,
        "config": 6.0551,
        "counters": 0.0,
        "dcls": 1.6127,
        "queues": 4.04,
    },
}
"""Logic cells per unit of each feature, per FPGA family (``python -m codesign.hw.cost --fit``)."""
COEFFICIENTS["asic"] = COEFFICIENTS["ice40"]


def predict_cells(plan: AcceleratorPlan, device: Device) -> int:
    """Logic cells (iCE40) or LUT4 (ECP5) of the build on ``device`` by the fitted linear model."""
    coef = COEFFICIENTS[device.family]
    f = features(plan)
    return max(0, round(sum(coef.get(k, 0.0) * f[k] for k in FEATURES)))


def predict(plan: AcceleratorPlan, device: Device) -> Resources:
    """Logic cells, block RAMs, SPRAMs and DSPs of the build of ``plan`` on ``device``."""
    return Resources(
        logic_cells=predict_cells(plan, device),
        block_rams=count_blocks(plan, device),
        sprams=count_sprams(plan),
        dsps=count_dsps(plan),
    )


_OPTION_KEYS = {
    "--target": "target",
    "--counters": "counters",
    "--weights": "weights",
    "--share-multipliers": "share",
    "--narrow": "narrow",
    "--share-updates": "share_updates",
    "--merge": "merge",
}


def parse_options(text: str) -> dict[str, str]:
    """``"--target up5k --weights frozen"`` -> the keyword arguments of :func:`build_plan`."""
    words = text.split()
    if len(words) % 2:
        raise CodesignError(f"options {text!r}: every option takes one value")
    out = {}
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag not in _OPTION_KEYS:
            raise CodesignError(f"options {text!r}: {flag} is not one of {', '.join(_OPTION_KEYS)}")
        out[_OPTION_KEYS[flag]] = value
    return out


def build_plan(bundle, lanes: int, **options: str) -> AcceleratorPlan:
    """The plan ``codesign rtl`` would build for ``bundle`` (a :class:`Bundle`) with ``options``."""
    from codesign.hw.plan import frozen_shift_ranges, plan_accelerator

    weights = options.pop("weights", "baked")
    frozen = weights in ("frozen", "spram")
    manifest = bundle.manifest
    shifts = (
        frozen_shift_ranges(manifest, {i: bundle.layer_weights(i) for i in range(len(manifest.layers))})
        if frozen
        else None
    )
    return plan_accelerator(
        manifest, lanes, frozen=frozen, spram=weights == "spram", shift_ranges=shifts, **options
    )


def load_measured(path: Path = MEASURED) -> list[dict]:
    """The measured builds (``docs/mapping_measured.json``)."""
    try:
        return json.loads(Path(path).read_text())["builds"]
    except (OSError, ValueError, KeyError) as err:
        raise CodesignError(f"cannot read the measured builds: {err}", path=path) from None


def _rows(builds: list[dict], root: Path) -> list[dict]:
    """Each measured build with its plan's features and the prediction for its device."""
    from codesign.bundle import load_bundle

    bundles: dict[str, object] = {}
    out = []
    for b in builds:
        path = root / b["bundle"]
        if b["bundle"] not in bundles:
            bundles[b["bundle"]] = load_bundle(path)
        plan = build_plan(bundles[b["bundle"]], b["lanes"], **parse_options(b["options"]))
        device = get_device(b["device"])
        out.append({**b, "features": features(plan), "predicted": predict(plan, device)})
    return out


PRIOR_WEIGHT = 0.1
"""Pull of the prior (the ECP5 coefficients x :data:`ICE40_PER_LUT4`) in the iCE40 fit: its builds
are fewer and their features move together with the lanes, so each coefficient alone is loosely
determined."""
ICE40_PER_LUT4 = 1.6
"""iCE40 logic cells per ECP5 LUT4 of the same design (a cell holds one LUT4 and one flip-flop)."""


def fit(rows: list[dict], family: str, prior: dict[str, float] | None = None) -> dict[str, float]:
    """Non-negative least-squares coefficients of one family, relative errors weighted equally;
    with ``prior``, each coefficient is also pulled towards its prior value (relatively)."""
    import numpy as np
    from scipy.optimize import nnls

    chosen = [r for r in rows if get_device(r["device"]).family == family]
    a = [[r["features"][k] / r["logic_cells"] for k in FEATURES] for r in chosen]
    b = [1.0] * len(chosen)
    for i, k in enumerate(FEATURES):
        if prior and prior.get(k, 0) > 0:
            a.append([PRIOR_WEIGHT / prior[k] if j == i else 0.0 for j in range(len(FEATURES))])
            b.append(PRIOR_WEIGHT)
    coef, _ = nnls(np.array(a), np.array(b))
    return {k: round(float(c), 4) for k, c in zip(FEATURES, coef, strict=True)}


def fit_all(rows: list[dict]) -> dict[str, dict[str, float]]:
    """The ECP5 coefficients, then the iCE40 ones with the ECP5's x :data:`ICE40_PER_LUT4` as prior."""
    ecp5 = fit(rows, "ecp5")
    prior = {k: v * ICE40_PER_LUT4 for k, v in ecp5.items()}
    return {"ice40": fit(rows, "ice40", prior), "ecp5": ecp5}


def check_table(rows: list[dict]) -> str:
    """The predicted-versus-measured markdown table of docs/mapping.md."""
    lines = [
        "| bundle | P | device | options | cells measured / predicted (error) | BRAM m / p | SPRAM m / p | DSP m / p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p: Resources = r["predicted"]
        err = 100 * (p.logic_cells - r["logic_cells"]) / r["logic_cells"]
        lines.append(
            f"| {Path(r['bundle']).name} | {r['lanes']} | {r['device']} | `{r['options']}` | "
            f"{r['logic_cells']} / {p.logic_cells} ({err:+.1f} %) | {r['block_rams']} / {p.block_rams} | "
            f"{r['sprams']} / {p.sprams} | {r['dsps']} / {p.dsps} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m codesign.hw.cost --check`` prints docs/mapping.md's table; ``--fit`` refits."""
    parser = argparse.ArgumentParser(prog="python -m codesign.hw.cost", description=main.__doc__)
    parser.add_argument("--measured", type=Path, default=MEASURED, help="measured builds (JSON)")
    parser.add_argument(
        "--root", type=Path, default=MEASURED.parents[1], help="where the bundles' paths start"
    )
    parser.add_argument("--check", action="store_true", help="print the predicted-versus-measured table")
    parser.add_argument("--fit", action="store_true", help="print refitted coefficients")
    args = parser.parse_args(argv)
    rows = _rows(load_measured(args.measured), args.root)
    if args.fit:
        for family, coef in fit_all(rows).items():
            print(family, json.dumps(coef))
    if args.check or not args.fit:
        print(check_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
