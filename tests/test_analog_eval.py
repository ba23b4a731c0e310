"""codesign analog-eval: a bundle's own test sequences through the layer netlist in ngspice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from codesign.analog.evaluate import analog_eval, analog_readout
from codesign.bundle.io import save_bundle
from codesign.bundle.random import make_random_network_bundle, random_network_manifest, random_network_weights
from codesign.errors import CodesignError
from codesign.golden import run_golden

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "files"


def _bundle(tmp_path: Path, cell: str = "bmru", pooling: str = "sum") -> Path:
    """A random one-layer bundle whose provenance names the tiny file task (3 channels, 2 classes)."""
    manifest = random_network_manifest(
        inputs=3, layers=[{"cell": cell, "size": 2}], classes=2, seed=4, pooling=pooling, input_bits=6
    )
    task = {"name": "files", "train": str(TINY / "tiny_TRAIN.ts"), "test": str(TINY / "tiny_TEST.ts")}
    manifest = manifest.model_copy(update={"provenance": {"task": task, "seed": 0}})
    save_bundle(tmp_path / "b", manifest, random_network_weights(manifest, 4))
    return tmp_path / "b"


def test_digital_readout_is_the_golden_readout(tmp_path) -> None:
    from codesign.bundle import load_bundle

    for pooling in ("sum", "last"):
        bundle = load_bundle(_bundle(tmp_path / pooling, pooling=pooling))
        x = np.random.default_rng(0).integers(-20, 20, size=(3, 7, 3))
        gold = run_golden(bundle, x)
        for n in range(3):
            logits, cls = analog_readout(bundle, gold.layers[0].states[n])
            assert logits.tolist() == gold.logits[n].tolist() and cls == int(gold.classes[n])


@pytest.mark.slow
def test_one_sequence_end_to_end_and_resumed_from_the_cache(tmp_path) -> None:
    if shutil.which("ngspice") is None:
        pytest.fail("ngspice is not installed (make setup installs it)")
    bundle = _bundle(tmp_path)
    cache = tmp_path / "cache"
    seen = []
    summary = analog_eval(bundle, 1, cache=cache, progress=lambda done, total, rec: seen.append(done))
    assert seen == [1] and len(list(cache.glob("*.json"))) == 1
    assert summary["sequences"] == 1 and 0.0 <= summary["state_agreement"] <= 1.0
    assert summary["energy_per_inference_nj"] > 0 and summary["golden_accuracy"] in (0.0, 1.0)
    assert set(summary) >= {
        "analog_accuracy",
        "golden_accuracy",
        "state_agreement",
        "energy_per_inference_nj",
    }
    again = analog_eval(
        bundle, 1, cache=cache, progress=lambda *a: pytest.fail("re-simulated a cached sequence")
    )
    assert json.dumps(again, sort_keys=True) == json.dumps(summary, sort_keys=True)


def _cmru_bundle(tmp_path: Path) -> Path:
    """A cmru eps 1 bundle on the tiny file task whose first test sequence updates neuron 0 twice
    (down, fixed threshold 250) and neuron 1 five times (up, per-step thresholds, one at ``b = 0``):
    ladders of 4 and 7 stages with their spare stages."""
    manifest = random_network_manifest(
        inputs=3,
        layers=[{"cell": "cmru", "size": 2, "eps": 1}],
        classes=2,
        seed=4,
        pooling="sum",
        input_bits=6,
    )
    task = {"name": "files", "train": str(TINY / "tiny_TRAIN.ts"), "test": str(TINY / "tiny_TEST.ts")}
    manifest = manifest.model_copy(update={"provenance": {"task": task, "seed": 0}})
    w = random_network_weights(manifest, 4)
    w["layers.0.w_thr"][0] = 0
    w["layers.0.b_thr"][:] = [250, 0]
    save_bundle(tmp_path / "c", manifest, w)
    return tmp_path / "c"


@pytest.mark.slow
@pytest.mark.parametrize(
    "ladder_dpi, tmax_ms, ladder_deck", [("p", 1.0, "reference"), ("n", 5.0, "reference"), ("p", 5.0, "fast")]
)
def test_native_cmru_ladders_run_a_trained_layer_like_golden(
    tmp_path, ladder_dpi, tmax_ms, ladder_deck
) -> None:
    """eps 1: one ladder per neuron, started at its reset state from the operating point; every
    neuron-step's count of alphas equals the golden state, and the readout is the golden one. Also
    with the kappa-matched dpi_n between the stages and ngspice's time step up to 5 ms (the cheap
    deck the JapaneseVowels d = 8 run uses), and with the fast deck (trapezoidal, bypass, 1 ms
    ramps); the step-level ladder model fitted on the run is the integer model (no update went
    missing). Every deck records ngspice's CPU time and Newton iterations."""
    if shutil.which("ngspice") is None:
        pytest.fail("ngspice is not installed (make setup installs it)")
    from codesign.analog.checks import ladder_ranges
    from codesign.analog.layer import layer_view, test_set
    from codesign.bundle import load_bundle

    path = _cmru_bundle(tmp_path)
    bundle = load_bundle(path)
    xq, _ = test_set(bundle)
    assert ladder_ranges(layer_view(bundle), xq[:1]) == [(3, 4), (1, 7)]
    summary = analog_eval(
        path,
        1,
        cache=tmp_path / "cache",
        reltol=1e-3,
        tmax_ms=tmax_ms,
        ladder_dpi=ladder_dpi,
        ladder_deck=ladder_deck,
    )
    assert summary["ladder_deck"] == ladder_deck and summary["ngspice_iterations_per_sequence"] > 0
    assert summary["cell"] == "native CMRU ladder (eps 1)" and summary["frame_ms"] == 60.0
    assert summary["ladder_dpi"] == ladder_dpi and summary["tmax_ms"] == tmax_ms
    model = summary["ladder_model"]
    assert model["offsets_pa"] == {"delta_up": 0.0, "delta_down": 0.0}
    assert model["in_sample"]["count_agreement_with_spice"] == 1.0
    assert summary["state_agreement"] == 1.0 and summary["root_errors"] == 0
    assert summary["class_agreement"] == 1.0
    assert summary["ladder_stages_mean"] == 11 and summary["worst_level_error_rel_alpha"] < 0.1
    rec = json.loads(next((tmp_path / "cache").glob("*.json")).read_text())
    gold = run_golden(bundle, xq[:1]).layers[0].states[0]
    alpha = bundle.weights["layers.0.alpha"]
    assert (alpha[None, :] * np.asarray(rec["h_analog"])).tolist() == gold.tolist()
    assert rec["init_ok"] is True


def test_bundles_it_cannot_run_are_refused(tmp_path) -> None:
    with pytest.raises(CodesignError, match="analog-eval runs BMRU layers.*'mingru'"):
        analog_eval(_bundle(tmp_path / "m", cell="mingru"), 1)
    two = make_random_network_bundle(
        str(tmp_path / "two"), seed=1, inputs=3, layers=[{"cell": "bmru", "size": 2}] * 2, classes=2
    )
    with pytest.raises(CodesignError, match="one-layer bundles"):
        analog_eval(two.path, 1)
    manifest = random_network_manifest(
        inputs=3, layers=[{"cell": "cmru", "size": 2, "eps": -1}], classes=2, seed=4, input_bits=6
    )
    save_bundle(tmp_path / "neg", manifest, random_network_weights(manifest, 4))
    with pytest.raises(CodesignError, match="analog-eval runs BMRU layers.*eps -1"):
        analog_eval(tmp_path / "neg", 1)
    with pytest.raises(CodesignError, match="--mc runs BMRU layers"):
        analog_eval(_cmru_bundle(tmp_path), 1, mc=2)
    with pytest.raises(
        CodesignError,
        match="--tmax-ms, --ladder-dpi, --ladder-pulse-ms, --ladder-deck, --ladder-trim-pa and --ladder-overdrive-pa apply",
    ):
        analog_eval(_bundle(tmp_path / "t"), 1, tmax_ms=5.0)
    with pytest.raises(CodesignError, match="--ladder-dpi must be p or n, not 'x'"):
        analog_eval(_cmru_bundle(tmp_path / "d"), 1, ladder_dpi="x")
    with pytest.raises(CodesignError, match="--ladder-pulse-ms must be between 1 and 10 ms"):
        analog_eval(_cmru_bundle(tmp_path / "f"), 1, ladder_pulse_ms=12.0)
    with pytest.raises(CodesignError, match="--tmax-ms must be between"):
        analog_eval(_cmru_bundle(tmp_path / "e"), 1, tmax_ms=50.0)
    with pytest.raises(CodesignError, match="provenance names no task"):
        analog_eval(make_random_network_bundle(str(tmp_path / "r"), seed=1, inputs=3, layers=[{"cell": "bmru", "size": 2}], classes=2).path, 1)  # fmt: skip


@pytest.mark.slow
@pytest.mark.long
def test_synapse_circuits_drive_a_small_layer_in_ngspice(tmp_path) -> None:
    """--synapses circuit: the cells are driven by the simulated arrays' sums (within a few units of
    the integers), and the energy has a synapse share from their simulated supply."""
    if shutil.which("ngspice") is None:
        pytest.fail("ngspice is not installed (make setup installs it)")
    bundle = _bundle(tmp_path)
    summary = analog_eval(bundle, 1, cache=tmp_path / "cache", synapses="circuit", reltol=1e-3)
    assert summary["synapses"] == "circuit" and summary["scale"] == "step"
    assert set(summary["energy_split_nj"]) == {"core", "bias", "input", "synapses"}
    assert summary["energy_split_nj"]["synapses"] > 0
    assert 0 < summary["synapse_sum_error_max_units"] < 0.1 * 2**7 * 3 * 2**7
    assert len(list((tmp_path / "cache").glob("synapses_*.npz"))) == 1
    assert 0.0 <= summary["state_agreement"] <= 1.0
    with pytest.raises(CodesignError, match="--synapses must be ideal or circuit"):
        analog_eval(bundle, 1, cache=tmp_path / "cache", synapses="mirror")


def test_spice_monte_carlo_check_compares_states_and_classes(tmp_path) -> None:
    """mismatch_summary's SPICE check: per-seed state agreement and classes against golden, beside
    the behavioural draws' spread on the same sequences (records here: golden states for seed 1,
    one flipped neuron for seed 2)."""
    from codesign.analog.behavioural import golden_signs
    from codesign.analog.layer import layer_view, test_set
    from codesign.analog.mismatch import mismatch_summary
    from codesign.bundle import load_bundle

    bundle = load_bundle(_bundle(tmp_path))
    xq, y = test_set(bundle)
    signs = golden_signs(layer_view(bundle), xq[:2])
    settings = {"corner": "tt", "start": "pair", "frame_ms": 10.0, "scale": "step"}
    tasks, records = [], []
    for seed in (1, 2):
        for n in (0, 1):
            s = signs[n].copy()
            if seed == 2:
                s[:, 0] = -np.where(s[:, 0] == 0, -1, s[:, 0])  # neuron 0 of chip 2 disagrees everywhere
            tasks.append((n, settings | {"mc_seed": seed}))
            records.append({"s_analog": s.tolist()})
    out = mismatch_summary(bundle, xq, y, 3, records, tasks, settings)["spice_check"]
    assert out["sequences"] == [0, 1] and out["spice_seeds"] == [1, 2]
    assert out["spice_state_agreement"][0] == 1.0 and out["spice_state_agreement"][1] == pytest.approx(0.5)
    assert out["spice_class_agreement"][0] == 1.0
    assert len(out["behavioural_state_agreement"]) == 3
    assert 0.0 <= out["behavioural_class_agreement_mean"] <= 1.0
    gold = run_golden(bundle, xq[:2]).classes
    assert out["golden_accuracy"] == float(np.mean(gold == y[:2]))


def test_monte_carlo_calibrates_the_behavioural_model_on_the_spice_draws(tmp_path) -> None:
    """With ngspice draws, ``--mc`` fits the neuron-common sigma to their mean state agreement and
    reports the calibrated model over the whole test set beside the uncalibrated one: ngspice chips
    that agree with golden everywhere fit sigma 0 (agreement 1), chips with a neuron wrong
    everywhere a larger sigma, whose draws agree less."""
    from codesign.analog.behavioural import golden_signs
    from codesign.analog.layer import layer_view, test_set
    from codesign.analog.mismatch import mismatch_summary
    from codesign.bundle import load_bundle

    bundle = load_bundle(_bundle(tmp_path))
    xq, y = test_set(bundle)
    signs = golden_signs(layer_view(bundle), xq[:2])
    settings = {"corner": "tt", "start": "pair", "frame_ms": 10.0, "scale": "step"}
    fitted = {}
    for wrong in (False, True):
        tasks, records = [], []
        for seed in (1, 2):
            for n in (0, 1):
                s = signs[n].copy()
                if wrong:
                    s[:, 0] = -np.where(s[:, 0] == 0, -1, s[:, 0])
                tasks.append((n, settings | {"mc_seed": seed}))
                records.append({"s_analog": s.tolist()})
        out = mismatch_summary(bundle, xq, y, 3, records, tasks, settings)
        cal = out["calibrated"]
        assert cal["fit_target_state_agreement"] == out["spice_check"]["spice_state_agreement_mean"]
        assert (
            len(cal["behavioural"]["accuracy"]) == 3
            and cal["behavioural"]["sigma"]["neuron"] == cal["sigma_neuron"]
        )
        fitted[wrong] = cal
    assert fitted[False]["sigma_neuron"] < fitted[True]["sigma_neuron"]
    assert (
        fitted[True]["spice_sequences_state_agreement_mean"]
        <= fitted[False]["spice_sequences_state_agreement_mean"]
    )


def test_worst_root_error_margin_is_the_largest_over_every_root_error(tmp_path) -> None:
    """The summary's worst root-error margin is the largest margin any root error had (the one a
    near tie explains least). It used to be the largest of each sequence's *smallest* margin, so
    an 18 pA error beside a 0.5 pA one in the same sequence reported 0.5."""
    from codesign.analog.evaluate import _key, test_set
    from codesign.bundle import load_bundle

    bundle_dir = _bundle(tmp_path)
    bundle = load_bundle(bundle_dir)
    xq, _ = test_set(bundle)
    steps, d = xq.shape[1], 2
    settings = {"corner": "tt", "start": "pair", "frame_ms": 10.0, "scale": "step"}
    cache = tmp_path / "cache"
    cache.mkdir()
    golden = run_golden(bundle, xq[:2]).layers[0].states
    for n, roots in enumerate([[[0, 3, 0.5], [1, 5, 18.0]], []]):
        s = np.sign(golden[n]).astype(int).tolist()
        record = {
            "sequence": n,
            "steps": steps,
            "q_analog": [[0] * d] * steps,
            "s_analog": s,
            "root_errors": roots,
            "agreement": 1.0,
            "compared": steps * d,
            "power_nW": {"core_nW": 1.0},
            "min_root_margin_pA": 0.5 if roots else None,  # what the BMRU path records per sequence
            "steps_margin_below_5pA": 0,
            "undecided_reads": 0,
            "t_step_s": 0.01,
            "wall_s": 1.0,
        }
        (cache / f"{_key(bundle, settings, n)}.json").write_text(json.dumps(record))
    summary = analog_eval(bundle_dir, 2, cache=cache, progress=lambda *a: None)
    assert summary["root_errors"] == 2
    assert summary["worst_root_error_margin_pa"] == 18.0


def test_first_shares_out_the_test_set(tmp_path, monkeypatch) -> None:
    """--first N runs the sequences from N on, with the cache keys a run from 0 gives them."""
    from codesign.analog import evaluate

    class Seen(Exception):
        pass

    seen = []

    def gather(bundle_dir, bundle, tasks, cache, *a):
        seen.append([(n, evaluate._key(bundle, st, n)) for n, st in tasks])
        raise Seen

    monkeypatch.setattr(evaluate, "_gather", gather)
    path = _bundle(tmp_path)
    n_test = len(
        evaluate.test_set(__import__("codesign.bundle", fromlist=["load_bundle"]).load_bundle(path))[0]
    )
    for first, count in ((0, 3), (1, 2)):
        with pytest.raises(Seen):
            analog_eval(path, count, cache=tmp_path / "cache", first=first)
    assert [n for n, _ in seen[1]] == [1, 2] and seen[1] == seen[0][1:]
    with pytest.raises(CodesignError, match="--first must be between 0 and"):
        analog_eval(path, 1, first=n_test)
    with pytest.raises(CodesignError, match="--first must be between 0 and"):
        analog_eval(path, 1, first=-1)


def test_ngspice_effort_skips_sequences_whose_decks_did_not_all_measure_it() -> None:
    """A sequence whose decks were partly cached before decks recorded their CPU time summed a NaN
    (the 35-sequence JSON reported ``NaN``) and a partial iteration count; both are left out."""
    from codesign.analog.evaluate import ngspice_effort

    whole = {"cpu_s": 10.0, "ngspice": {"iterations": 1000}}
    records = [
        whole,
        {"cpu_s": 30.0, "ngspice": {"iterations": 3000}},
        {"cpu_s": float("nan"), "ngspice": {"iterations": 50}},  # a cache written before the check
        {"cpu_s": None, "ngspice": {}},  # partly cached decks
        {"wall_s": 5.0},  # a record from before decks measured anything
    ]
    assert ngspice_effort(records) == (20.0, 2000.0)
    assert ngspice_effort(records[2:]) == (None, None)
