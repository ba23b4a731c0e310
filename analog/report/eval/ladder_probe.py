"""Probe: JV CMRU sequence N, a few neurons, ladder per-step agreement (normalised or neuron scale)."""
import sys, time, json
import numpy as np
from codesign.bundle import load_bundle, Bundle
from codesign.analog.evaluate import test_set
from codesign.analog.mapping import map_bundle, spine
from codesign.analog.checks import Ctx, run_ladder_trace, ladder_ranges
seq = int(sys.argv[1]); neurons = [int(v) for v in sys.argv[2].split(',')]; norm = sys.argv[3] == 'step'
steps = int(sys.argv[4]) if len(sys.argv) > 4 else None
b = load_bundle('models/bundles/japanese_vowels_cmru')
man = b.manifest
view = Bundle(man.model_copy(update={"readout": man.readout.model_copy(update={"pooling": "last"})}), b.weights, b.path)
xq, y = test_set(b)
maps = map_bundle(view, xq, normalise=norm)
x = xq[seq:seq+1] if steps is None else xq[seq:seq+1, :steps]
rng = ladder_ranges(view, x)
t = time.time()
tr = run_ladder_trace(view, x, Ctx(keep_dir=None, timeout=3000), maps=maps, neurons=neurons, ranges=[rng[i] for i in neurons], reltol=1e-3, init="nodeset")
print('wall', round(time.time()-t,1), 'sim', round(tr.wall_s,1))
for r in tr.rows:
    print({k: r[k] for k in ('neuron','stages','n0','compared','count_agreement','update_agreement','wrong_updates','wrong_update_steps','wrong_update_margins_pA','worst_level_error_rel_alpha')})
print('h_a', tr.h_analog.T.tolist()); print('h_g', tr.h_golden.T.tolist())
print('power', tr.power)
