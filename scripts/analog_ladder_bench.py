"""Time one ladder deck of a CMRU bundle under deck variants.

PYTHONPATH=. python scripts/analog_ladder_bench.py BUNDLE SEQ NEURONS STEPS VARIANT...
VARIANT: base, or comma-separated key=value of tmax (s), reltol, frame (s), tc (candidate pulse, s), dpi (p|n), rows.
"""

import json
import sys

from codesign.analog.cells import DPI_N, DpiParams
from codesign.analog.checks import Ctx, ladder_ranges, run_ladder_trace
from codesign.analog.drive import LadderTiming
from codesign.analog.layer import layer_view, test_set
from codesign.analog.mapping import map_bundle
from codesign.bundle import load_bundle

b = load_bundle(sys.argv[1])
view = layer_view(b)
seq = int(sys.argv[2])
neurons = [int(v) for v in sys.argv[3].split(",")]
steps = int(sys.argv[4])
xq, y = test_set(b)
maps = map_bundle(view, xq, normalise=True)
rng = ladder_ranges(view, xq[seq : seq + 1], 1)
x = xq[seq : seq + 1, :steps]
for var in sys.argv[5:]:
    kw = dict(v.split("=") for v in var.split(",")) if var != "base" else {}
    t = LadderTiming(
        t_step=float(kw.get("frame", 60e-3)), t_max=float(kw.get("tmax", 1e-3)), t_c=float(kw.get("tc", 4e-3))
    )
    rel = float(kw.get("reltol", 1e-4))
    tr = run_ladder_trace(
        view,
        x,
        Ctx(timeout=3000),
        maps=maps,
        neurons=neurons,
        ranges=[rng[i] for i in neurons],
        reltol=rel,
        timing=t,
        name="bench",
        init="nodeset",
        dpi=DPI_N if kw.get("dpi") == "n" else DpiParams(),
    )
    out = {
        "variant": var,
        "wall_s": round(tr.wall_s, 1),
        "stages": int(sum(rng[i][1] for i in neurons)),
        "agree": float((tr.h_analog == tr.h_golden).mean()),
        "wrong": sum(r["wrong_updates"] for r in tr.rows),
        "lvl_err": round(max(r["worst_level_error_rel_alpha"] for r in tr.rows), 4),
        "power": {k: round(v, 2) for k, v in tr.power.items()},
    }
    print(json.dumps(out), flush=True)
    if "rows" in kw:
        keys = (
            "neuron",
            "stages",
            "n0",
            "wrong_update_steps",
            "wrong_update_margins_pA",
            "worst_level_error_rel_alpha",
        )
        for r in tr.rows:
            print(" ", {k: r[k] for k in keys})
        print(" a", tr.h_analog.T.tolist())
        print(" g", tr.h_golden.T.tolist())
