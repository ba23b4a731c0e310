"""--ladder-deck: how ngspice simulates a native CMRU ladder (the circuit stays the same)."""

from __future__ import annotations

import re

import pytest

import codesign.analog.checks as checks
from codesign.analog.cells import deck_header
from codesign.analog.ladder_deck import LADDER_DECKS
from codesign.errors import CodesignError


def test_solver_options_replace_or_extend_the_tight_ones() -> None:
    line = next(
        ln
        for ln in deck_header(
            "t", models="", reltol=1e-3, options={"method": "trap", "bypass": "1"}
        ).splitlines()
        if "gmin" in ln
    )
    assert line == ".option gmin=1e-15 abstol=1e-16 reltol=0.001 vntol=1e-7 method=trap bypass=1"
    plain = deck_header("t", models="", reltol=1e-3)
    assert ".option gmin=1e-15 abstol=1e-16 reltol=0.001 vntol=1e-7 method=gear\n" in plain


class _Captured(Exception):
    pass


def _deck_text(tmp_path, monkeypatch, deck: str) -> str:
    """The ladder deck analog-eval would run on the tiny cmru bundle's first sequence (not run)."""
    from test_analog_eval import _cmru_bundle

    from codesign.analog.checks import ladder_ranges
    from codesign.analog.layer import layer_view, test_set
    from codesign.bundle import load_bundle

    seen = {}

    def capture(text, **kw):
        seen["deck"] = text
        raise _Captured

    monkeypatch.setattr("codesign.analog.sim.run_deck", capture)
    view = layer_view(load_bundle(_cmru_bundle(tmp_path)))
    xq, _ = test_set(view)
    with pytest.raises(_Captured):
        checks.run_ladder_trace(
            view, xq[:1], ranges=ladder_ranges(view, xq[:1]), init="nodeset", deck=LADDER_DECKS[deck]
        )
    return seen["deck"]


def test_the_fast_deck_changes_the_solver_not_the_circuit(tmp_path, monkeypatch) -> None:
    ref = _deck_text(tmp_path / "r", monkeypatch, "reference")
    fast = _deck_text(tmp_path / "f", monkeypatch, "fast")
    assert "method=gear" in ref and ".save" not in ref
    assert "method=trap" in fast and "trtol=20" in fast and "bypass=1" in fast and "abstol=1e-14" in fast
    assert re.search(r"^\.save i\(vo0\) i\(vo1\) i\(vdd\) i\(vddb\) i\(vsrc\)$", fast, re.MULTILINE)
    assert "rusage all" in ref and "rusage all" in fast

    def devices(text: str) -> list[str]:  # every element line but the sources, whose ramps differ
        return sorted(ln for ln in text.splitlines() if ln[:1] in "XxCcVv" and not ln.startswith("I"))

    assert devices(ref) == devices(fast)
    # the same PWL levels; the edges last 20 us in the reference, 1 ms in the fast deck
    pwl = re.compile(r"^Iin0 vsrc in0 PWL\((.*?)\)", re.MULTILINE | re.DOTALL)
    r_vals, f_vals = (pwl.search(t).group(1).replace("\n+", " ").split() for t in (ref, fast))
    assert r_vals[1::2] == f_vals[1::2]
    r_t, f_t = [float(v) for v in r_vals[0::2]], [float(v) for v in f_vals[0::2]]
    assert {round(b - a, 9) for a, b in zip(r_t[1::2], r_t[2::2], strict=False)} >= {2e-5}
    assert {round(b - a, 9) for a, b in zip(f_t[1::2], f_t[2::2], strict=False)} >= {1e-3}


def test_an_unknown_ladder_deck_is_refused(tmp_path) -> None:
    from test_analog_eval import _bundle, _cmru_bundle

    from codesign.analog.evaluate import analog_eval

    with pytest.raises(CodesignError, match="--ladder-deck must be one of reference, fast, not 'quick'"):
        analog_eval(_cmru_bundle(tmp_path / "c"), 1, ladder_deck="quick")
    with pytest.raises(
        CodesignError, match="--ladder-trim-pa and --ladder-overdrive-pa apply to native CMRU"
    ):
        analog_eval(_bundle(tmp_path / "b"), 1, ladder_deck="fast")


def test_only_the_fast_deck_changes_the_cache_key(tmp_path, monkeypatch) -> None:
    """The reference deck keeps the settings (and cache keys) of every earlier run."""
    from test_analog_eval import _cmru_bundle

    from codesign.analog import evaluate
    from codesign.bundle import load_bundle

    seen = {}

    def gather(bundle_dir, bundle, tasks, *a):
        seen[tasks[0][1].get("ladder_deck", "reference")] = evaluate._key(bundle, tasks[0][1], 0)
        raise _Captured

    monkeypatch.setattr(evaluate, "_gather", gather)
    path = _cmru_bundle(tmp_path)
    for deck in ("reference", "fast"):
        with pytest.raises(_Captured):
            evaluate.analog_eval(
                path, 1, cache=tmp_path / "cache", reltol=1e-3, tmax_ms=5.0, ladder_deck=deck
            )
    settings = {
        "corner": "tt",
        "start": "ladder",
        "frame_ms": 60.0,
        "ladder_spare": 1,
        "ladder_group": 8,
        "ladder_init": "nodeset",
        "ladder_circuit": evaluate.LADDER_CIRCUIT,
        "tmax_ms": 5.0,
        "scale": "step",
        "reltol": 1e-3,
    }
    assert seen["reference"] == evaluate._key(load_bundle(path), settings, 0)
    assert seen["fast"] == evaluate._key(load_bundle(path), settings | {"ladder_deck": "fast"}, 0)


def test_a_window_trim_narrows_only_the_pulse_windows_wide_enough() -> None:
    """--ladder-trim-pa UP,DOWN: during each step's pulse the up threshold is lower by UP and the
    down one higher by DOWN; the resting (widest) window and windows narrower than UP + DOWN stay."""
    import numpy as np

    from codesign.analog.drive import ladder_drive
    from codesign.analog.mapping import NeuronMap

    nm = NeuronMap(index=0, fixed_threshold=False, b_max=100, k=1e-12, i_alpha=500e-12, alpha=1)
    c, b = np.array([50, -50, 1]), np.array([40, 40, 2])  # wide, wide, 3 pA wide
    plain = ladder_drive(nm, c, b, 0, hold=True)
    trimmed = ladder_drive(nm, c, b, 0, hold=True, trim=(2e-12, 4e-12))
    assert plain.t_up == trimmed.t_up and plain.i_in == trimmed.i_in
    du = np.round((np.array(trimmed.i_up) - np.array(plain.i_up)) / 1e-12, 6)
    dd = np.round((np.array(trimmed.i_down) - np.array(plain.i_down)) / 1e-12, 6)
    assert sorted(set(du.tolist())) == [-2.0, 0.0] and sorted(set(dd.tolist())) == [0.0, 4.0]
    lo, hi = nm.threshold_currents(b)
    assert hi[2] - lo[2] < 6e-12 and np.isclose(max(trimmed.i_up), plain.i_up[0])  # resting window kept
    with pytest.raises(ValueError, match="window trims must be >= 0"):
        ladder_drive(nm, c, b, 0, trim=(-1e-12, 0.0))


def test_an_overdrive_limit_clips_the_candidate_past_its_own_window_only() -> None:
    """--ladder-overdrive-pa X: a candidate more than X past its step's window is pulled back to X
    past it, on the same side (the update keeps its sign); one within X, and the thresholds, stay.
    At the full clip a stage's neighbour followed within the pulse (sequence 61, neuron 0, step 16
    of the JapaneseVowels CMRU: two alphas for one update)."""
    import numpy as np

    from codesign.analog.drive import ladder_drive
    from codesign.analog.mapping import NeuronMap

    nm = NeuronMap(index=0, fixed_threshold=False, b_max=100, k=1e-12, i_alpha=500e-12, alpha=1)
    c, b = np.array([150, -150, 45, -45, 0]), np.array([40, 40, 40, 40, 40])
    plain = ladder_drive(nm, c, b, 0, hold=True)
    limited = ladder_drive(nm, c, b, 0, hold=True, overdrive=20e-12)
    assert limited.i_up == plain.i_up and limited.i_down == plain.i_down and limited.t_in == plain.t_in
    lo, hi = nm.threshold_targets(b)
    centre = nm.input_current(np.array([0]), np.array([40]))[0]
    pulse = {round((v - centre) / 1e-12, 6) for v in limited.i_in} - {0.0}
    edge = round((hi[0] - centre) / 1e-12, 6)
    # 150 and -150 units (110 pA past the edge) -> 20 pA past; 45 and -45 (5 pA past) unchanged
    assert pulse == {edge + 20, -(edge + 20), 45.0, -45.0}
    assert {round((v - centre) / 1e-12, 6) for v in plain.i_in} - {0.0} == {150.0, -150.0, 45.0, -45.0}
    with pytest.raises(ValueError, match="overdrive must be > 0"):
        ladder_drive(nm, c, b, 0, overdrive=0.0)


def test_an_overdrive_limit_enters_the_cache_key_only_when_set(tmp_path, monkeypatch) -> None:
    """Without --ladder-overdrive-pa the settings (and every cached sequence's key) are those of
    the earlier runs; with it the key changes; out of range, or on a BMRU bundle, it is refused."""
    from test_analog_eval import _bundle, _cmru_bundle

    from codesign.analog import evaluate

    seen = []

    def gather(bundle_dir, bundle, tasks, *a):
        seen.append(tasks[0][1])
        raise _Captured

    monkeypatch.setattr(evaluate, "_gather", gather)
    path = _cmru_bundle(tmp_path)
    for over in (0.0, 20.0):
        with pytest.raises(_Captured):
            evaluate.analog_eval(path, 1, cache=tmp_path / "cache", ladder_overdrive_pa=over)
    assert "ladder_overdrive_pa" not in seen[0] and seen[1] == seen[0] | {"ladder_overdrive_pa": 20.0}
    with pytest.raises(
        CodesignError, match="--ladder-overdrive-pa must be between 0 .off. and 100 pA, not -1"
    ):
        evaluate.analog_eval(path, 1, ladder_overdrive_pa=-1.0)
    with pytest.raises(CodesignError, match="apply to native CMRU ladders"):
        evaluate.analog_eval(_bundle(tmp_path / "b"), 1, ladder_overdrive_pa=20.0)
