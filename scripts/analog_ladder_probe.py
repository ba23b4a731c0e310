"""Per-step ladder agreement of a few native CMRU neurons of the JapaneseVowels CMRU bundle.

Runs the neurons' ladders for one test sequence with the settings of ``codesign analog-eval``
(step mapping, ngspice reltol 1e-3, ladders over the golden count's range plus one spare stage,
reset from the operating point) in one ngspice deck and prints each neuron's counts beside the
golden ones. From the repository root::

    PYTHONPATH=. python scripts/analog_ladder_probe.py SEQUENCE NEURONS step|neuron [STEPS]

e.g. ``0 6,7 step`` (sequence 0, neurons 6 and 7).
"""

import sys
import time

from codesign.analog.checks import Ctx, ladder_ranges, run_ladder_trace
from codesign.analog.layer import layer_view, test_set
from codesign.analog.mapping import map_bundle
from codesign.bundle import load_bundle

seq = int(sys.argv[1])
neurons = [int(v) for v in sys.argv[2].split(",")]
norm = sys.argv[3] == "step"
steps = int(sys.argv[4]) if len(sys.argv) > 4 else None
bundle = load_bundle("models/bundles/japanese_vowels_cmru")
view = layer_view(bundle)
xq, _ = test_set(bundle)
maps = map_bundle(view, xq, normalise=norm)
x = xq[seq : seq + 1] if steps is None else xq[seq : seq + 1, :steps]
ranges = ladder_ranges(view, x)
t0 = time.time()
tr = run_ladder_trace(
    view,
    x,
    Ctx(timeout=3000),
    maps=maps,
    neurons=neurons,
    ranges=[ranges[i] for i in neurons],
    reltol=1e-3,
    init="nodeset",
)
print("wall", round(time.time() - t0, 1), "sim", round(tr.wall_s, 1))
keys = ("neuron", "stages", "n0", "compared", "count_agreement", "update_agreement", "wrong_updates")
for r in tr.rows:
    print(
        {
            k: r[k]
            for k in keys + ("wrong_update_steps", "wrong_update_margins_pA", "worst_level_error_rel_alpha")
        }
    )
print("h_a", tr.h_analog.T.tolist())
print("h_g", tr.h_golden.T.tolist())
print("power", tr.power)
