"""When did each stage of one neuron's ladder switch around one step?

CACHE=runs/analog_eval/jv_cmru_d8 PYTHONPATH=. python scripts/analog_ladder_switches.py SEQ NEURON STEP [OVERDRIVE]

Runs the reference ladder deck of NEURON for JapaneseVowels test sequence SEQ exactly as
``codesign analog-eval models/bundles/japanese_vowels_cmru_d8 --reltol 1e-3 --tmax-ms 5
--ladder-group 1 --ladder-pulse-ms 8`` builds it, with every stage's storage node saved, and
prints one JSON line per step from STEP - 1 to STEP + 1: the golden update, the step's drive
(candidate and threshold sums as currents), the count read at the step's sample time (in
alphas, unrounded) and every stage crossing VDD / 2 in that step (stage, direction, time after
the step's start in ms). Checks that the count read matches the cached run's. OVERDRIVE (pA):
the candidate current clipped to the widest window's edges plus or minus it.
"""

import glob
import json
import os
import sys

import numpy as np

from codesign.analog import checks
from codesign.analog.cells import VDD
from codesign.analog.checks import ladder_ranges
from codesign.analog.drive import LadderTiming
from codesign.analog.evaluate import _ladder_deck
from codesign.analog.layer import layer_view, test_set
from codesign.analog.mapping import accumulators, map_bundle
from codesign.bundle import load_bundle

CACHE = os.environ.get("CACHE", "runs/analog_eval/jv_cmru_d8")
seq, neuron, step = (int(v) for v in sys.argv[1:4])
keys = {json.load(open(f))["sequence"]: f.split("/")[-1][:-5] for f in glob.glob(CACHE + "/*.json")}
ref = np.asarray(json.load(open(f"{CACHE}/decks/{keys[seq]}_n{neuron:03d}.json"))["h_analog"])[:, 0]

b = load_bundle("models/bundles/japanese_vowels_cmru_d8")
view = layer_view(b)
xq, _ = test_set(b)
maps = map_bundle(view, xq, normalise=True)
x = xq[seq : seq + 1]
ranges = ladder_ranges(view, x, 1)
stages = ranges[neuron][1]
nodes = [f"v(xn{neuron}.xl.x{k})" for k in range(1, stages + 1)]
tables = []
run = checks.Ctx.run


def run_saving_stages(self, deck, name, outputs, tran_stop=None, timeout=None):
    """The deck with every stage's node added to what it writes; the table kept."""
    lines = [
        ln + " " + " ".join(nodes) if ln.startswith("wrdata tran.dat") else ln for ln in deck.split("\n")
    ]
    res = run(self, "\n".join(lines), name, outputs, tran_stop=tran_stop, timeout=timeout)
    tables.append(res["tran"])
    return res


checks.Ctx.run = run_saving_stages
if len(sys.argv) > 4:  # OVERDRIVE (pA): the candidate clipped to the widest window's edges +- it
    from dataclasses import replace

    from codesign.analog import drive

    over = float(sys.argv[4]) * 1e-12
    ladder_drive = drive.ladder_drive

    def clipped_drive(nm, *args, **kwargs):
        d = ladder_drive(nm, *args, **kwargs)
        w_lo, w_hi = (float(v[0]) for v in nm.threshold_targets(np.array([nm.b_max])))
        return replace(d, i_in=list(np.clip(d.i_in, w_lo - over, w_hi + over)))

    drive.ladder_drive = clipped_drive
timing = LadderTiming(t_step=0.06, t_max=5e-3, t_c=8e-3)
settings = {"corner": "tt", "ladder_init": "nodeset", "reltol": 1e-3, "ladder_deck": "reference"}
part = _ladder_deck(view, x, settings, maps, [neuron], ranges, None, timing, "probe")
h = np.asarray(part["h_analog"])[:, 0]
row = part["rows"][0]
print(
    json.dumps(
        {
            "same_counts_as_cache": bool((h == ref).all()),
            "stages": stages,
            "wrong_update_steps": row["wrong_update_steps"],
            "count_agreement": row["count_agreement"],
        }
    ),
    flush=True,
)
(tab,) = tables
c, bsum = accumulators(view, x)
c1, b1 = c[0][:, neuron], bsum[0][:, neuron]
gold = np.asarray(part["h_golden"])[:, 0]
t = tab["scale"]
for k in range(max(step - 1, 0), min(step + 2, len(h))):
    t0, t1 = timing.step_start(k, 0), timing.step_start(k + 1, 0)
    inside = (t >= t0) & (t < t1)
    switches = []
    for s, node in enumerate(nodes, 1):
        v = tab[node][inside] - VDD / 2
        for j in np.nonzero(np.diff(np.sign(v)) != 0)[0]:
            switches.append(
                [s, "on" if v[j + 1] < 0 else "off", round(float(t[inside][j + 1] - t0) * 1e3, 3)]
            )
    read = float(np.interp(timing.sample_time(k, 0), t, tab[f"i(vo{neuron})"]) / maps[neuron].i_alpha)
    line = {
        "step": k,
        "golden_count": int(gold[k]),
        "analog_count": int(h[k]),
        "read_alphas": round(read, 3),
        "candidate_pA": round(float(c1[k] * maps[neuron].k / 1e-12), 2),
        "threshold_pA": round(float(b1[k] * maps[neuron].k / 1e-12), 2),
        "switches": sorted(switches, key=lambda w: w[2]),
    }
    print(json.dumps(line), flush=True)
