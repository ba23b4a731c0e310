"""Time analog-eval's own ladder decks under deck variants against a reference cache.

CACHE=runs/analog_eval/jv_cmru_d8 PYTHONPATH=. python scripts/analog_ladder_speed.py SEQ NEURONS VARIANT...

Runs the ladder deck of each named neuron of JapaneseVowels test sequence SEQ exactly as
``codesign analog-eval models/bundles/japanese_vowels_cmru_d8 --reltol 1e-3 --ladder-group 1
--ladder-pulse-ms 8`` builds it, under each VARIANT, and prints one JSON line per deck: ngspice's
CPU time, Newton iterations, time points and rejected steps, and whether the count read at every
step equals the one cached in CACHE (the reference run's deck JSONs).
VARIANT: ``base`` (the reference deck, model bins pruned), ``noprune`` (the reference deck as the
cached runs had it), or a comma list of ``fast`` (the fast deck), ``opt=key:value`` (an ngspice
option), ``ramp=S``, ``save``, ``tmax=S``, ``noprune``, ``trim=UP:DOWN`` (pA, ``--ladder-trim-pa``).
"""

import glob
import json
import os
import sys
import time

import numpy as np

from codesign.analog.checks import ladder_ranges
from codesign.analog.drive import LadderTiming
from codesign.analog.evaluate import _ladder_deck
from codesign.analog.ladder_deck import LADDER_DECKS, LadderDeck
from codesign.analog.layer import layer_view, test_set
from codesign.analog.mapping import map_bundle
from codesign.bundle import load_bundle

CACHE = os.environ.get("CACHE", "runs/analog_eval/jv_cmru_d8")
keys = {}
for f in glob.glob(CACHE + "/*.json"):
    r = json.load(open(f))
    keys[r["sequence"]] = f.split("/")[-1][:-5]

b = load_bundle("models/bundles/japanese_vowels_cmru_d8")
view = layer_view(b)
xq, y = test_set(b)
maps = map_bundle(view, xq, normalise=True)
seq = int(sys.argv[1])
x = xq[seq : seq + 1]
ranges = ladder_ranges(view, x, 1)
for neuron in [int(v) for v in sys.argv[2].split(",")]:
    ref = np.asarray(json.load(open(f"{CACHE}/decks/{keys[seq]}_n{neuron:03d}.json"))["h_analog"])[:, 0]
    for v in sys.argv[3:]:
        items = [] if v == "base" else v.split(",")
        tmax, opts, ramp, save, prune, trim = 5e-3, {}, 20e-6, False, True, None
        for item in items:
            k, _, val = item.partition("=")
            if k == "fast":
                f = LADDER_DECKS["fast"]
                opts |= f.options
                ramp = f.t_ramp
                save = f.save_read_only
            elif k == "opt":
                a, c = val.split(":")
                opts[a] = c
            elif k == "ramp":
                ramp = float(val)
            elif k == "save":
                save = True
            elif k == "noprune":
                prune = False
            elif k == "trim":
                trim = [float(t) for t in val.split(":")]
            elif k == "tmax":
                tmax = float(val)
        LADDER_DECKS["bench"] = LadderDeck("bench", opts, ramp, save, prune)
        timing = LadderTiming(t_step=0.06, t_max=tmax, t_c=8e-3)
        settings = {"corner": "tt", "ladder_init": "nodeset", "reltol": 1e-3, "ladder_deck": "bench"}
        if trim:
            settings["ladder_trim_pa"] = trim
        t0 = time.monotonic()
        part = _ladder_deck(view, x, settings, maps, [neuron], ranges, None, timing, "bench")
        h = np.asarray(part["h_analog"])[:, 0]
        st = part["ngspice"]
        print(
            json.dumps(
                {
                    "seq": seq,
                    "neuron": neuron,
                    "stages": ranges[neuron][1],
                    "var": v,
                    "cpu_s": round(part["cpu_s"], 2),
                    "iters": st.get("iterations"),
                    "points": st.get("points"),
                    "rejected": st.get("rejected"),
                    "wall_s": round(time.monotonic() - t0, 1),
                    "same_counts": bool((h == ref).all()),
                    "golden_counts": bool((h == np.asarray(part["h_golden"])[:, 0]).all()),
                    "reference_golden_counts": bool((ref == np.asarray(part["h_golden"])[:, 0]).all()),
                    "wrong_update_steps": part["rows"][0]["wrong_update_steps"],
                    "diff_steps": np.nonzero(h != ref)[0].tolist(),
                    "lvl_err": round(part["rows"][0]["worst_level_error_rel_alpha"], 4),
                    "power": {k: round(val, 3) for k, val in part["power_nW"].items()},
                }
            ),
            flush=True,
        )
