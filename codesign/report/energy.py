"""Energy and power proxy: measured operation counts x a documented per-operation table.

The table is Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014,
45 nm, 0.9 V (:data:`codesign.explore.hardware.ENERGY_PJ`): 8-bit add 0.03 pJ, 32-bit add 0.1 pJ,
8-bit multiply 0.2 pJ, 32-bit multiply 3.1 pJ, a 64-bit read of an 8 KB SRAM about 10 pJ.
Scaling (:func:`codesign.explore.hardware.energy_add` / ``energy_mult`` / ``energy_read``):

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
* ``<e>_dcls_cycles``: one multiply and one add per tap cycle of the DCLS front end.

Leakage: ``leak_nw_per_um2`` x the ASIC area proxy of ``codesign area`` (sky130_fd_sc_hd cells,
memories as latches), leaking for the whole step period (no power gating). The default, 0.01 nW
per um^2 (10 uW per mm^2), is an **assumption** of the order of low-power 40-65 nm logic, not a
measured figure. Control, clock tree, I/O and wires between blocks are not in the proxy.
"""

from __future__ import annotations

import math

from codesign.explore.hardware import ENERGY_PJ, energy_add, energy_mult, energy_read

__all__ = ["DEFAULT_LEAK_NW_PER_UM2", "ENERGY_PJ", "access_pj", "dynamic_energy"]

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
            out["dcls"] += counters.get(f"{name}_dcls_cycles", 0) * tap
    for m in plan["memories"]:
        n = counters.get(f"{m['name']}_reads", 0) + counters.get(f"{m['name']}_writes", 0)
        pj = n * access_pj(m["elements"] * m["elem_bits"], m["bits"])
        by_memory[m["name"]] = pj
        out["memory"] += pj
    out["total"] = sum(out.values())
    return {**out, "by_memory": by_memory}
