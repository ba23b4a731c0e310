"""The committed reference bundles (models/bundles): each loads (schema + checksum), and on its
whole test set the quantized torch model and the golden integer model agree on every layer's
state at every step and on every logit -- 0 mismatches -- with the accuracy its provenance states."""

from pathlib import Path

import numpy as np
import pytest

from codesign.bundle.io import load_bundle
from codesign.golden.model import quantize_inputs, run_golden
from codesign.quant.stack import deployed_from_bundle
from codesign.train.recipe import build_task

BUNDLES = Path(__file__).resolve().parents[1] / "models" / "bundles"
NAMES = sorted(p.name for p in BUNDLES.iterdir() if (p / "manifest.yaml").is_file())


def test_every_reference_bundle_the_issue_asks_for_is_committed() -> None:
    cells = {name: [layer.cell for layer in load_bundle(BUNDLES / name).manifest.layers] for name in NAMES}
    assert cells["spoken_digits_cmru"] == ["cmru"]
    assert cells["japanese_vowels_cmru"] == ["cmru"]
    assert cells["japanese_vowels_bmru_anneal"] in (["bmru"], ["cmru"])
    assert cells["flip_flop_bgmingru_dcls"] == ["bgmingru"]
    assert cells["parity_hsru"] == ["hsru"]
    assert cells["japanese_vowels_cmru2"] == ["cmru", "cmru"]
    assert load_bundle(BUNDLES / "flip_flop_bgmingru_dcls").manifest.layers[0].dcls is not None


@pytest.mark.parametrize("name", NAMES)
def test_reference_bundle_is_bit_exact_on_its_whole_test_set(name: str) -> None:
    bundle = load_bundle(BUNDLES / name)
    prov = bundle.manifest.provenance
    options = dict(prov["task"])
    task = build_task(options.pop("name"), options)
    x, y = task.split("test", prov["seed"])
    assert len(x) == prov["test_sequences"]
    gold = run_golden(bundle, quantize_inputs(bundle, x.numpy()))
    deployed = deployed_from_bundle(bundle)
    outs, _ = deployed.trace(x)
    for out, layer, trace in zip(outs, bundle.manifest.layers, gold.layers, strict=True):
        frac = 0 if layer.cell == "hsru" else layer.state_frac
        assert np.array_equal((out * 2.0**frac).numpy(), trace.states.astype(np.float64)), name
    assert np.array_equal(deployed.integer_logits(x), gold.logits), name
    labels = y.numpy()
    mask = labels != -100
    accuracy = float((gold.classes[mask] == labels[mask]).mean())
    assert accuracy == pytest.approx(prov["quantized_test_accuracy"], abs=1e-12)
