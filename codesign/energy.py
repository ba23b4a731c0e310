"""The energy model: a documented per-operation table, and the energy of measured operation counts.

``codesign report`` (measured counters of a build) and ``codesign explore`` (the golden model's
counts) both price operations here, so their figures agree on what an operation costs.

The table is Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014,
45 nm, 0.9 V (:data:`ENERGY_PJ`): 8-bit add 0.03 pJ, 32-bit add 0.1 pJ,
8-bit multiply 0.2 pJ, 32-bit multiply 3.1 pJ, a 64-bit read of an 8 KB SRAM about 10 pJ.
Scaling (:func:`energy_add` / :func:`energy_mult` / :func:`energy_read`):

* adders linearly in their width, multipliers linearly in the product of the operand widths;
* a memory access: 10 pJ x (word bits / 64) x ``sqrt(capacity / 64 Kbit)`` (bit- and word-line
  length grows with the square root of the array), at least 1/8 of it for small arrays (decoder
  and sense amplifiers do not shrink further); a write costs what a read costs (assumption).

What each counter pays:

* ``<e>_macs``: one multiply (weight bits x item bits) and one accumulator add (``acc_bits``);
  the weight word read is paid through ``<e>_weights_reads``;
* ``<memory>_reads`` / ``_writes``: one access of the memory's word (``elements x elem_bits``);
* ``<e>_steps`` x neurons: the finalize stage, one ``acc_bits`` add (gate comparison / update);
* ``<e>_events``: one ``state_bits`` add (the delta the serializer sends);
* ``<e>_dcls_cycles``: ``K`` multiplies and adds per busy cycle of the DCLS front end (it takes
  an input's ``K`` taps in one cycle; an upper bound, as its send cycles multiply nothing).

Leakage: ``leak_nw_per_um2`` x the ASIC area proxy of ``codesign area`` (sky130_fd_sc_hd cells,
memories as latches), leaking for the whole step period (no power gating). The default, 0.01 nW
per um^2 (10 uW per mm^2), is an **assumption** of the order of low-power 40-65 nm logic, not a
measured figure. Control, clock tree, I/O and wires between blocks are not in the proxy.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "DEFAULT_LEAK_NW_PER_UM2",
    "ENERGY_PJ",
    "access_pj",
    "dynamic_energy",
    "energy_add",
    "energy_mult",
    "energy_read",
]

ENERGY_PJ = {
    "add8": 0.03,
    "add32": 0.1,
    "mult8": 0.2,
    "mult32": 3.1,
    "sram_read64_8kb": 10.0,
}
"""Horowitz, "Computing's energy problem", ISSCC 2014, 45 nm, 0.9 V (pJ per operation)."""


def _interp(x: float, xs: tuple[float, ...], ys: tuple[float, ...]) -> float:
    """Piecewise-linear through the points, extended with the last segment's slope."""
    if x <= xs[-1]:
        return float(np.interp(x, xs, ys))
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return ys[-1] + slope * (x - xs[-1])


def energy_add(bits: int) -> float:
    """pJ of a ``bits``-wide add (0.03 pJ at 8 bits, 0.1 pJ at 32, linear)."""
    return _interp(bits, (0, 8, 32), (0.0, ENERGY_PJ["add8"], ENERGY_PJ["add32"]))


def energy_mult(a_bits: int, b_bits: int) -> float:
    """pJ of an ``a x b``-bit multiply, linear in ``a * b`` (0.2 pJ at 8 x 8, 3.1 pJ at 32 x 32)."""
    return _interp(a_bits * b_bits, (0, 64, 1024), (0.0, ENERGY_PJ["mult8"], ENERGY_PJ["mult32"]))


def energy_read(bits: int) -> float:
    """pJ of reading ``bits`` from a small SRAM (10 pJ per 64 bits)."""
    return ENERGY_PJ["sram_read64_8kb"] * bits / 64


DEFAULT_LEAK_NW_PER_UM2 = 0.01
REFERENCE_SRAM_BITS = 8 * 1024 * 8
MIN_SIZE_FACTOR = 1 / 8


def access_pj(word_bits: int, capacity_bits: int) -> float:
    """pJ of one read (or write) of ``word_bits`` from a memory of ``capacity_bits``."""
    factor = max(math.sqrt(capacity_bits / REFERENCE_SRAM_BITS), MIN_SIZE_FACTOR)
    return energy_read(word_bits) * factor


def dynamic_energy(plan: dict, counters: dict[str, int]) -> dict[str, float]:
    """pJ by category (``mac``, ``memory``, ``finalize``, ``events``, ``dcls``) and by memory.

    ``plan`` is ``build.json: plan`` (engines, memories); ``counters`` the simulated totals.
    """
    mems = {m["name"]: m for m in plan["memories"]}
    out = {"mac": 0.0, "memory": 0.0, "finalize": 0.0, "events": 0.0, "dcls": 0.0}
    by_memory: dict[str, float] = {}
    for e in plan["engines"]:
        name = e["name"]
        w = mems.get(f"{name}_weights")
        w_bits = w["elem_bits"] if w else 8
        mac = energy_mult(w_bits, e["item_bits"]) + energy_add(e["acc_bits"])
        out["mac"] += counters.get(f"{name}_macs", 0) * mac
        out["finalize"] += counters.get(f"{name}_steps", 0) * e["size"] * energy_add(e["acc_bits"])
        out["events"] += counters.get(f"{name}_events", 0) * energy_add(e["state_bits"])
        if e.get("dcls"):
            tap = energy_mult(w_bits, e["item_bits"]) + energy_add(e["dcls"]["z_bits"])
            taps = e["dcls"].get("taps", 1)
            out["dcls"] += counters.get(f"{name}_dcls_cycles", 0) * taps * tap
    for m in plan["memories"]:
        n = counters.get(f"{m['name']}_reads", 0) + counters.get(f"{m['name']}_writes", 0)
        pj = n * access_pj(m["elements"] * m["elem_bits"], m["bits"])
        by_memory[m["name"]] = pj
        out["memory"] += pj
    out["total"] = sum(out.values())
    return {**out, "by_memory": by_memory}
