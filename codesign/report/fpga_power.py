"""The report's "FPGA power (estimate)" section: the chip's power beside the ASIC proxy.

Which activity it prices (:mod:`codesign.hw.power`), best first:

* ``BUILD/power/DEVICE.json``, the toggles and memory events of a simulation of the mapped netlist
  (``codesign sim BUILD --netlist DEVICE --power``): basis ``netlist``;
* otherwise the cycle model's counters of the report's own run with the LUT and flip-flop counts
  of ``codesign synth`` (``BUILD/synth/DEVICE/summary.json``), or, without a synthesis, the
  mapper's predicted logic cells (:func:`codesign.hw.cost.predict_cells`) with half as many
  flip-flops: basis ``coarse``.

The device is the one asked for (``codesign report --fpga-device``), else the one a netlist
activity file names, else the build's target chip, else the first synthesised device, else the
UP5K.
"""

from __future__ import annotations

import json
from pathlib import Path

from codesign.errors import CodesignError
from codesign.hw.power import coarse_activity, estimate, load_power_data, power_devices

__all__ = ["ACTIVITY_DIR", "choose_device", "fpga_power_section"]

ACTIVITY_DIR = "power"  # BUILD/power/<device>.json, written by codesign sim --netlist D --power
_TARGET_DEVICE = {"up5k": "up5k", "ecp5": "ecp5-25k"}


def choose_device(build: Path, info: dict, synth: list[dict], asked: str | None) -> str:
    """The device the estimate is for (see the module docstring)."""
    known = power_devices()
    if asked is not None:
        if asked not in known:
            raise CodesignError(f"--fpga-device {asked!r} is not one of {', '.join(known)}")
        return asked
    for path in sorted((build / ACTIVITY_DIR).glob("*.json")):
        if path.stem in known:
            return path.stem
    target = _TARGET_DEVICE.get(str(info.get("plan", {}).get("target")))
    if target:
        return target
    for s in synth:
        if s["device"] in known:
            return s["device"]
    return "up5k"


def _resources(bundle, info: dict, synth: list[dict], device: str) -> tuple[int, int, str]:
    """``(LUTs, flip-flops, where from)``: the synthesis of ``device``, else the mapper's prediction."""
    for s in synth:
        r = s.get("resources") or {}
        if s["device"] == device and s["status"] == "ok" and r.get("lut") is not None:
            return int(r["lut"]), int(r.get("ff") or 0), f"LUT and FF counts of codesign synth ({s['file']})"
    from codesign.hw.cost import build_plan, get_device, predict_cells

    try:
        plan = build_plan(bundle, int(info["lanes"]), target=info["plan"]["target"], weights=info["weights"])
        luts = predict_cells(plan, get_device(device))
    except (CodesignError, KeyError, ValueError) as err:
        raise CodesignError(f"FPGA power: cannot predict the logic cells of the build ({err})") from None
    return luts, luts // 2, "predicted logic cells (codesign.hw.cost), flip-flops assumed half of them"


def _activity(
    build: Path, device: str, bundle, info: dict, synth: list[dict], main: dict
) -> tuple[dict, str]:
    """The activity record to price and a sentence naming its basis."""
    path = build / ACTIVITY_DIR / f"{device}.json"
    if path.is_file():
        try:
            activity = json.loads(path.read_text())
        except ValueError as err:
            raise CodesignError(f"not JSON: {err}", path=path) from None
        basis = (
            f"netlist simulation: toggles and memory events of the {device} netlist over "
            f"{activity.get('steps')} steps, {activity.get('cycles')} cycles, inputs: "
            f"{activity.get('inputs', 'not recorded')} ({path})"
        )
        return activity, basis
    luts, ffs, where = _resources(bundle, info, synth, device)
    family = "ecp5" if device.startswith("ecp5") else "ice40"
    activity = coarse_activity(
        info["plan"],
        main["counters"],
        steps=main["steps"],
        cycles=main["cycles"],
        luts=luts,
        ffs=ffs,
        family=family,
    )
    basis = (
        f"coarse: cycle-model counters (memory accesses, products) and {luts} LUTs / {ffs} FFs toggling 12.5% "
        f"a cycle ({where}); run `codesign sim BUILD --netlist {device} --power` for the netlist's own toggles"
    )
    return activity, basis


def fpga_power_section(
    build: Path,
    bundle,
    info: dict,
    synth: list[dict],
    main: dict,
    *,
    clock_mhz: float,
    step_rate: float,
    steps_per_inference: float,
    device: str | None = None,
) -> dict:
    """The estimate at the report's clock and step rate, with its device, basis and data sources."""
    name = choose_device(build, info, synth, device)
    data = load_power_data(name)
    activity, basis = _activity(build, name, bundle, info, synth, main)
    est = estimate(
        data,
        activity,
        clock_mhz=clock_mhz,
        step_rate=step_rate,
        steps_per_inference=steps_per_inference,
        # the netlist's own cycles per step go with its own energy per step (its inputs and the
        # testbench's overheads); the coarse activity is the cycle model's run
        cycles_per_step=None if activity.get("basis", "netlist") == "netlist" else main["cycles_per_step"],
    )
    return {
        **est,
        "label": "estimate",
        "basis": activity.get("basis", "netlist"),
        "basis_note": basis,
        "energies_note": "per-event energies are approximate (factor of 2-3): codesign/hw/fpga_power.yaml",
        "activity": {k: v for k, v in activity.items() if isinstance(v, int | float)},
    }
