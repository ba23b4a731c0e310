"""FPGA power at the board, as an estimate: static from the data sheet, dynamic from activity.

The report's energy proxy (:mod:`codesign.energy`) prices operations in a 45 nm ASIC; a user with
an iCEBreaker or a ULX3S wants the chip's own figure. This module gives it, labelled as an
estimate, from :file:`codesign/hw/fpga_power.yaml` (each figure with its source):

* **static**: the core's typical standby current x its supply (``static_core_ua x vcc_v``);
* **dynamic**: events x energy per event. The events come either from a simulation of the mapped
  netlist (:mod:`codesign.hw.toggles`: output toggles of LUTs, carries and flip-flops, block-RAM
  and SPRAM reads and writes, DSP products, clock cycles) or, where no netlist simulation was run,
  from the cycle model's counters and the resource counts (:func:`coarse_activity`, the coarser
  estimate);
* **clock**: the clock tree and every flip-flop's clock pin, every cycle, busy or not. The
  accelerator has no clock gate, so between steps it idles with the clock running.

At a step rate ``r`` the average power is ``static + clock + E_step x r``, where ``E_step`` is the
logic's energy per step (toggles and accesses, clock excluded). At 100 steps per second the
accelerator is busy a few thousandths of the time and the static power and the running clock
dominate; the energy of the computation itself is a small part (a gated clock, or a clock
stopped between steps, would leave the static power alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from codesign.errors import CodesignError

__all__ = [
    "ACTIVITY_KEYS",
    "DATA_FILE",
    "ENERGY_KEYS",
    "FpgaPowerData",
    "coarse_activity",
    "estimate",
    "load_power_data",
    "power_devices",
]

DATA_FILE = Path(__file__).with_name("fpga_power.yaml")

ENERGY_KEYS = (
    "lut_toggle_pj",
    "carry_toggle_pj",
    "ff_toggle_pj",
    "ff_clock_pj",
    "clock_tree_pj",
    "bram_read_pj",
    "bram_write_pj",
    "spram_read_pj",
    "spram_write_pj",
    "dsp_op_pj",
)

ACTIVITY_KEYS = (
    "lut_toggles",
    "carry_toggles",
    "ff_toggles",
    "bram_reads",
    "bram_writes",
    "spram_reads",
    "spram_writes",
    "dsp_ops",
)
"""Event counts an activity record carries (with ``cycles``, ``steps`` and ``ffs``)."""

# which energy prices which event
_PRICE = {
    "lut_toggles": "lut_toggle_pj",
    "carry_toggles": "carry_toggle_pj",
    "ff_toggles": "ff_toggle_pj",
    "bram_reads": "bram_read_pj",
    "bram_writes": "bram_write_pj",
    "spram_reads": "spram_read_pj",
    "spram_writes": "spram_write_pj",
    "dsp_ops": "dsp_op_pj",
}

COARSE_TOGGLE_RATE = 0.125
"""Fraction of the LUTs and flip-flops that toggle in a busy cycle, in the coarse estimate (the
default activity of FPGA power calculators when nothing is known of the design)."""


@dataclass(frozen=True)
class FpgaPowerData:
    """One device's entry of :data:`DATA_FILE`."""

    device: str
    part: str
    vcc_v: float
    static_core_ua: float
    static_source: str
    luts: int
    energies: dict[str, float]

    @property
    def static_mw(self) -> float:
        """Core static power in mW: typical standby current x supply."""
        return self.static_core_ua * 1e-3 * self.vcc_v


def _positive(value, key: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or math.isnan(value):
        raise CodesignError(f"{key} must be a number >= 0, not {value!r}", path=path)
    return float(value)


def _entry(name: str, raw, path: Path) -> FpgaPowerData:
    if not isinstance(raw, dict):
        raise CodesignError(f"devices.{name} must be a mapping", path=path)
    missing = [
        k for k in ("part", "vcc_v", "static_core_ua", "static_source", "luts", "energies") if k not in raw
    ]
    if missing:
        raise CodesignError(f"devices.{name} lacks {', '.join(missing)}", path=path)
    energies = raw["energies"]
    if not isinstance(energies, dict) or set(energies) != set(ENERGY_KEYS):
        got = sorted(energies) if isinstance(energies, dict) else energies
        raise CodesignError(
            f"devices.{name}.energies must have exactly the keys {', '.join(ENERGY_KEYS)}; got {got}",
            path=path,
        )
    return FpgaPowerData(
        device=name,
        part=str(raw["part"]),
        vcc_v=_positive(raw["vcc_v"], f"devices.{name}.vcc_v", path),
        static_core_ua=_positive(raw["static_core_ua"], f"devices.{name}.static_core_ua", path),
        static_source=str(raw["static_source"]).strip(),
        luts=int(_positive(raw["luts"], f"devices.{name}.luts", path)),
        energies={k: _positive(v, f"devices.{name}.energies.{k}", path) for k, v in energies.items()},
    )


@cache
def _load(path: Path) -> dict[str, FpgaPowerData]:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise CodesignError(f"cannot read the FPGA power data: {err}", path=path) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("devices"), dict):
        raise CodesignError("the FPGA power data needs a 'devices' mapping", path=path)
    return {name: _entry(name, entry, path) for name, entry in raw["devices"].items()}


def load_power_data(device: str, path: Path | None = None) -> FpgaPowerData:
    """The power data of ``device`` (``up5k``, ``hx8k``, ``ecp5-25k``, ``ecp5-85k``)."""
    table = _load(Path(path or DATA_FILE))
    try:
        return table[device]
    except KeyError:
        raise CodesignError(
            f"no FPGA power data for device {device!r}; known: {', '.join(table)}", path=path or DATA_FILE
        ) from None


def power_devices() -> tuple[str, ...]:
    """The devices :data:`DATA_FILE` has figures for."""
    return tuple(_load(DATA_FILE))


def _check_activity(activity: dict) -> None:
    for key in ("cycles", "steps", "ffs"):
        if not isinstance(activity.get(key), int | float) or activity[key] < 0:
            raise CodesignError(f"activity record: {key} must be a number >= 0, not {activity.get(key)!r}")
    if activity["steps"] <= 0 or activity["cycles"] <= 0:
        raise CodesignError("activity record: steps and cycles must be > 0 (nothing was simulated)")


def estimate(
    data: FpgaPowerData,
    activity: dict,
    *,
    clock_mhz: float,
    step_rate: float,
    steps_per_inference: float,
    cycles_per_step: float | None = None,
) -> dict:
    """Static, dynamic and average power of ``activity`` on the device at ``clock_mhz``.

    ``activity``: event counts (:data:`ACTIVITY_KEYS`) over ``steps`` steps and ``cycles`` clock
    cycles, and ``ffs`` (flip-flops clocked every cycle). ``cycles_per_step`` (default
    ``cycles / steps``) sets how fast the design runs flat out and so its dynamic power at the clock.
    Returns mW, pJ and uJ figures (JSON-able) with the energy by event class.
    """
    _check_activity(activity)
    if clock_mhz <= 0 or step_rate <= 0:
        raise CodesignError(f"clock ({clock_mhz} MHz) and step rate ({step_rate}/s) must be > 0")
    e = data.energies
    steps = activity["steps"]
    by_class = {
        k.removesuffix("s").removesuffix("_op"): activity.get(k, 0) * e[p] / steps for k, p in _PRICE.items()
    }
    logic_pj_per_step = sum(by_class.values())
    clock_pj_per_cycle = e["clock_tree_pj"] + activity["ffs"] * e["ff_clock_pj"]
    clock_mw = clock_pj_per_cycle * clock_mhz * 1e-3  # pJ x MHz = uW
    cps = cycles_per_step or activity["cycles"] / steps
    steps_per_s_flat_out = clock_mhz * 1e6 / cps
    logic_mw_flat_out = logic_pj_per_step * steps_per_s_flat_out * 1e-9
    duty = min(1.0, step_rate / steps_per_s_flat_out)
    logic_mw = logic_pj_per_step * min(step_rate, steps_per_s_flat_out) * 1e-9
    average_mw = data.static_mw + clock_mw + logic_mw
    step_uj = average_mw / step_rate * 1e3  # mW / (1/s) = mJ; x 1e3 = uJ
    return {
        "device": data.device,
        "part": data.part,
        "clock_mhz": clock_mhz,
        "step_rate_hz": step_rate,
        "static_mw": data.static_mw,
        "static_source": f"{data.static_core_ua:g} uA x {data.vcc_v:g} V: {data.static_source}",
        "clock_mw": clock_mw,
        "clock_pj_per_cycle": clock_pj_per_cycle,
        "logic_pj_per_step": logic_pj_per_step,
        "logic_pj_per_step_by_class": by_class,
        "cycles_per_step": cps,
        "duty": duty,
        "dynamic_mw": clock_mw + logic_mw_flat_out,
        "dynamic_mw_at_rate": clock_mw + logic_mw,
        "average_mw": average_mw,
        "energy_uj_per_step": step_uj,
        "energy_uj_per_inference": step_uj * steps_per_inference,
        "static_share": data.static_mw / average_mw if average_mw else None,
        "logic_share": logic_mw / average_mw if average_mw else None,
    }


def _bram_blocks(word_bits: int, family: str) -> int:
    """Block RAMs one access of a ``word_bits`` word touches (16 bits a port on the iCE40, 18 on the ECP5)."""
    return max(1, -(-int(word_bits) // (16 if family == "ice40" else 18)))


def coarse_activity(
    plan: dict, counters: dict[str, int], *, steps: int, cycles: int, luts: int, ffs: int, family: str
) -> dict:
    """Events of a run from the cycle model's counters and the resource counts (no netlist).

    Memory accesses come from the counters (``<memory>_reads`` / ``_writes``) and go to block
    RAM, SPRAM or logic as the plan placed them (``style``: ``block``, ``huge``, else logic); a
    logic memory's access toggles half its word's flip-flops. Products on hard multipliers
    (``multiplier`` ``hard``) are DSP products, the rest LUT toggles (half of ``weight x item``
    bits). Every cycle of the run toggles :data:`COARSE_TOGGLE_RATE` of the LUTs and flip-flops
    (the cycle model runs the sequences back to back: its cycles are busy ones; idle cycles between
    steps cost only the clock, which :func:`estimate` adds).
    """
    out = dict.fromkeys(ACTIVITY_KEYS, 0.0)
    for m in plan["memories"]:
        word = int(m["elements"]) * int(m["elem_bits"])
        reads, writes = counters.get(f"{m['name']}_reads", 0), counters.get(f"{m['name']}_writes", 0)
        style = m.get("style", "block")
        if style == "huge":
            out["spram_reads"] += reads * max(1, -(-word // 16))
            out["spram_writes"] += writes * max(1, -(-word // 16))
        elif style in ("block", "auto"):
            out["bram_reads"] += reads * _bram_blocks(word, family)
            out["bram_writes"] += writes * _bram_blocks(word, family)
        else:
            out["ff_toggles"] += (reads + writes) * word / 2
    w_bits = {m["name"].removesuffix("_weights"): int(m["elem_bits"]) for m in plan["memories"]}
    for e in plan["engines"]:
        macs = counters.get(f"{e['name']}_macs", 0)
        if e.get("multiplier") == "hard":
            out["dsp_ops"] += macs
        else:
            out["lut_toggles"] += macs * w_bits.get(e["name"], 8) * int(e.get("item_bits", 8)) / 2
    out["lut_toggles"] += cycles * luts * COARSE_TOGGLE_RATE
    out["ff_toggles"] += cycles * ffs * COARSE_TOGGLE_RATE
    return {**out, "cycles": int(cycles), "steps": int(steps), "ffs": int(ffs), "basis": "coarse"}
