"""The ``power`` check of ``analog-check``: a table of the supply powers the other checks measured
(BMRU cell, DPI, native CMRU, the BMRU layer and the native CMRU layer), core and bias apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codesign.analog import report as rep
from codesign.analog.check_registry import Check, CheckOptions, Figures, Say
from codesign.analog.measure_cells import PAPER_POWER_NW
from codesign.analog.sim import Ctx


def _no_spec(_options: CheckOptions) -> dict:
    return {}  # its figures are the other checks' (their keys enter this one's)


def _cell_rows(rt: dict, dp: dict) -> list[dict]:
    rows = []
    w = rt["windows"]
    low = [x for x in w if x["expected_state"] == 0]
    high = [x for x in w if x["expected_state"] == 1]

    def avg(ws: list[dict], key: str) -> float:
        return float(np.mean([x[key] for x in ws]))

    for mode, ws in (
        ("state low (retain)", low),
        ("state high (retain)", high),
        ("average of both states", w),
    ):
        rows.append(
            {
                "block": "BMRU cell",
                "mode": mode,
                "core_nW": avg(ws, "core_nW"),
                "bias_nW": avg(ws, "bias_nW"),
                "input_nW": avg(ws, "input_nW"),
            }
        )
    for mode, p in (("output high", dp["power_on"]), ("output low", dp["power_off"])):
        rows.append({"block": "DPI", "mode": mode, **p})
    return rows


def _ladder_rows(ld: dict) -> list[dict]:
    if "power" not in ld:
        return []
    block = f"native CMRU ({ld['stages']} stages)"
    rows = [
        {
            "block": block,
            "mode": "average over the Fig. 4C programme",
            **ld["power"],
            "paper_nW": PAPER_POWER_NW,
        }
    ]
    for lvl in ld["levels"]:
        rows.append(
            {
                "block": block,
                "mode": f"hold at level {lvl['expected_level']} ({lvl['event']})",
                "core_nW": lvl["core_nW"],
                "bias_nW": lvl["bias_nW"],
                "input_nW": lvl["input_nW"],
            }
        )
    return rows


def _layer_rows(ag: dict) -> list[dict]:
    d = len(ag["rows"])
    block = f"layer {ag['bundle']} ({d} neurons)"
    power = ag["layer_power"]
    return [
        {"block": block, "mode": "average over the trace", **power},
        {"block": block, "mode": "per neuron", **{k: v / d for k, v in power.items()}},
    ]


def _native_layer_rows(la: dict) -> list[dict]:
    if "power" not in la:
        return []
    nl = len(la["rows"])
    rows = []
    for mode, div in (("average over the trace", 1), ("per neuron", nl)):
        row = {k: v / div for k, v in la["power"].items()}
        rows.append(
            {
                "block": f"native CMRU layer {la['bundle']} ({nl} x {la['stages']} stages)",
                "mode": mode,
                **row,
                "total_nW": row["core_nW"] + row["bias_nW"],
            }
        )
    return rows


def run_power(_options: CheckOptions, _ctx: Ctx, deps: dict, _say: Say) -> tuple[list[dict], int]:
    rows = _cell_rows(deps["retention"], deps["dpi"]) + _ladder_rows(deps.get("cmru_ladder", {}))
    rows += _layer_rows(deps["agreement"])
    for r in rows:
        r["total_nW"] = r["core_nW"] + r["bias_nW"]
    return rows + _native_layer_rows(deps.get("ladder_agreement", {})), len(deps["agreement"]["rows"])


def summarize_power(measured: tuple[list[dict], int], _options: CheckOptions, out: Path) -> Figures:
    rows, layer_neurons = measured
    rep.write_power(out, rows)
    cell = next(r for r in rows if r["block"] == "BMRU cell" and r["mode"] == "average of both states")
    layer = next(r for r in rows if r["block"].startswith("layer") and r["mode"] == "average over the trace")
    native = [r for r in rows if r["block"].startswith("native") and r["mode"].startswith("average")]
    detail = (
        f"BMRU cell {cell['core_nW']:.2f} core + {cell['bias_nW']:.2f} bias nW; layer "
        f"({layer_neurons} neurons) {layer['core_nW']:.2f} + {layer['bias_nW']:.2f} nW"
    )
    if native:
        detail += f"; native CMRU {native[0]['total_nW']:.2f} nW vs paper {PAPER_POWER_NW} nW"
    return Figures(None, {"rows": rows}, detail, results={"power": rows})


POWER = Check(
    "power",
    _no_spec,
    run_power,
    summarize_power,
    needs=("retention", "dpi", "agreement"),
    uses=("cmru_ladder", "ladder_agreement"),
    target="average supply power, core and bias generator separated (reported)",
)
