"""Accuracy of a trained BMRU bundle under mismatch: behavioural draws over the whole test set,
checked against ngspice Monte Carlo on a subset (``codesign analog-eval --mc``)."""

from __future__ import annotations

import numpy as np

from codesign.analog.behavioural import SKY130_TT, Mismatch, behavioural_states, draw_errors, golden_signs
from codesign.bundle import Bundle

__all__ = ["fit_neuron_sigma", "mismatch_summary", "mismatch_draws"]


def _classes(bundle: Bundle, signs: np.ndarray) -> np.ndarray:
    """The digital readout's class of every sequence of behavioural states ``signs`` (n, T, d)."""
    from codesign.analog.layer import analog_readout

    alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
    return np.array([analog_readout(bundle, alpha[None, :] * s)[1] for s in signs])


def _accuracy(bundle: Bundle, signs: np.ndarray, y: np.ndarray) -> float:
    return float((_classes(bundle, signs) == y).mean())


def mismatch_draws(
    bundle: Bundle,
    xq: np.ndarray,
    y: np.ndarray,
    draws: int,
    mm: Mismatch = SKY130_TT,
    *,
    pair: bool = True,
    scale: str = "step",
    calibration: np.ndarray | None = None,
) -> dict:
    """Accuracy and state agreement of ``draws`` behavioural chips (seeds 1..draws) on ``xq``.

    ``scale``: ``step`` (per-step window normalisation) or ``neuron`` (one scale per neuron, set by
    the largest ``|b|`` of ``calibration``, default ``xq``): see :attr:`NeuronMap.normalised`."""
    from codesign.analog.layer import layer_view
    from codesign.analog.mapping import map_bundle
    from codesign.golden import run_golden

    view = layer_view(bundle)
    maps = map_bundle(view, xq if calibration is None else calibration, normalise=scale == "step")
    golden = golden_signs(view, xq)
    golden_classes = run_golden(bundle, xq).classes
    d = golden.shape[-1]
    acc, agree, cls_agree = [], [], []
    for seed in range(1, draws + 1):
        s = behavioural_states(view, xq, maps, draw_errors(mm, d, seed), pair=pair)
        classes = _classes(bundle, s)
        acc.append(float((classes == y).mean()))
        cls_agree.append(float((classes == golden_classes).mean()))
        agree.append(float((s == golden).mean()))
    nominal = behavioural_states(view, xq, maps, pair=pair)
    return {
        "draws": draws,
        "scale": scale,
        "sigma": {"input": mm.sigma_in, "up": mm.sigma_up, "down": mm.sigma_down, "neuron": mm.sigma_neuron},
        "accuracy": acc,
        "state_agreement": agree,
        "class_agreement": cls_agree,
        "accuracy_mean": float(np.mean(acc)) if acc else float("nan"),
        "accuracy_p10": float(np.percentile(acc, 10)) if acc else float("nan"),
        "accuracy_min": float(np.min(acc)) if acc else float("nan"),
        "state_agreement_mean": float(np.mean(agree)) if agree else float("nan"),
        "accuracy_without_mismatch": _accuracy(bundle, nominal, y),
    }


def fit_neuron_sigma(
    bundle: Bundle,
    xq: np.ndarray,
    y: np.ndarray,
    sequences: list[int],
    target: float,
    draws: int = 20,
    grid: tuple[float, ...] = tuple(i * 0.01 for i in range(16)),
    mm: Mismatch = SKY130_TT,
    *,
    pair: bool = True,
    scale: str = "step",
) -> tuple[float, list[dict]]:
    """The neuron-common threshold sigma (:attr:`Mismatch.sigma_neuron`) whose ``draws`` behavioural
    chips agree with golden on ``target`` of the neuron-steps of ``sequences`` on average (the mean
    of the ngspice Monte Carlo draws there); the mapping is calibrated on the whole ``xq``, as in
    :func:`mismatch_summary`. Returns the grid point nearest the target and every point's mean."""
    rows = []
    for s in grid:
        r = mismatch_draws(
            bundle,
            xq[sequences],
            y[sequences],
            draws,
            mm.with_neuron(s),
            pair=pair,
            scale=scale,
            calibration=xq,
        )
        rows.append({"sigma_neuron": float(s), "state_agreement_mean": r["state_agreement_mean"]})
    best = min(rows, key=lambda r: (abs(r["state_agreement_mean"] - target), r["sigma_neuron"]))
    return best["sigma_neuron"], rows


def mismatch_summary(
    bundle: Bundle,
    xq: np.ndarray,
    y: np.ndarray,
    draws: int,
    spice_records: list[dict],
    spice_tasks: list[tuple[int, dict]],
    settings: dict,
) -> dict:
    """Behavioural draws over the whole test set, and the ngspice Monte Carlo subset beside the
    behavioural model's spread on the same sequences (the check of the model)."""
    from codesign.analog.layer import analog_readout, layer_view
    from codesign.golden import run_golden

    pair = settings["start"] == "pair"
    scale = settings.get("scale", "neuron")
    out = {"behavioural": mismatch_draws(bundle, xq, y, draws, pair=pair, scale=scale)}
    out["golden_accuracy"] = float((run_golden(bundle, xq).classes == y).mean())
    if spice_records:
        seqs = sorted({n for n, _ in spice_tasks})
        golden = golden_signs(layer_view(bundle), xq[seqs])
        gold_cls = run_golden(bundle, xq[seqs]).classes
        alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
        per_seed: dict[int, list[float]] = {}
        per_seed_cls: dict[int, list[int]] = {}
        per_seed_ok: dict[int, list[int]] = {}
        for (n, st), rec in zip(spice_tasks, spice_records, strict=True):
            s = np.asarray(rec["s_analog"])
            j = seqs.index(n)
            per_seed.setdefault(st["mc_seed"], []).append(float((s == golden[j]).mean()))
            cls = analog_readout(bundle, alpha[None, :] * s)[1]
            per_seed_cls.setdefault(st["mc_seed"], []).append(int(cls == gold_cls[j]))
            per_seed_ok.setdefault(st["mc_seed"], []).append(int(cls == y[n]))
        spice = [float(np.mean(v)) for _, v in sorted(per_seed.items())]
        beh_all = mismatch_draws(bundle, xq[seqs], y[seqs], draws, pair=pair, scale=scale, calibration=xq)
        beh = beh_all["state_agreement"]
        beh_cls = beh_all["class_agreement"]  # the draws' classes on the same sequences, against golden
        out["spice_check"] = {
            "sequences": seqs,
            "spice_seeds": sorted(per_seed),
            "spice_state_agreement": spice,
            "spice_state_agreement_mean": float(np.mean(spice)),
            "spice_state_agreement_min": float(np.min(spice)),
            "spice_class_agreement": [float(np.mean(v)) for _, v in sorted(per_seed_cls.items())],
            "spice_class_agreement_mean": float(np.mean([c for v in per_seed_cls.values() for c in v])),
            "spice_accuracy_mean": float(np.mean([c for v in per_seed_ok.values() for c in v])),
            "behavioural_state_agreement": [float(v) for v in beh],
            "behavioural_state_agreement_mean": float(np.mean(beh)),
            "behavioural_state_agreement_sd": float(np.std(beh)),
            "behavioural_state_agreement_min": float(np.min(beh)),
            "behavioural_class_agreement_mean": float(np.mean(beh_cls)),
            "behavioural_accuracy_mean": float(np.mean(beh_all["accuracy"])),
            "golden_accuracy": float(np.mean(gold_cls == y[seqs])),
            "note": "SPICE seed k and behavioural draw k are different chips: the check compares the "
            "spreads (state agreement, classes that agree with golden) on the same sequences",
        }
        out["calibrated"] = _calibrated(bundle, xq, y, draws, seqs, float(np.mean(spice)), pair, scale)
    return out


def _calibrated(
    bundle: Bundle,
    xq: np.ndarray,
    y: np.ndarray,
    draws: int,
    seqs: list[int],
    spice_mean: float,
    pair: bool,
    scale: str,
) -> dict:
    """The behavioural model calibrated on the ngspice draws: the neuron-common threshold sigma
    (:func:`fit_neuron_sigma`) whose draws agree with golden on ``seqs`` as often as the ngspice
    chips did on average, then its draws over the whole test set. The uncalibrated model leaves
    out each neuron's own bias devices, so it was optimistic against ngspice (by 1.7 points of
    state agreement on the plain JapaneseVowels BMRU bundle); this is the accuracy under mismatch
    that the ngspice spread supports."""
    sigma, grid = fit_neuron_sigma(bundle, xq, y, seqs, spice_mean, draws, pair=pair, scale=scale)
    # the fit ran the chosen sigma on the ngspice sequences already: its row is that check
    at_fit = next(row for row in grid if row["sigma_neuron"] == sigma)
    return {
        "sigma_neuron": sigma,
        "fit_target_state_agreement": spice_mean,
        "fit_grid": grid,
        "spice_sequences_state_agreement_mean": at_fit["state_agreement_mean"],
        "behavioural": mismatch_draws(
            bundle, xq, y, draws, SKY130_TT.with_neuron(sigma), pair=pair, scale=scale
        ),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m codesign.analog.mismatch BUNDLE... --draws N --json F``: behavioural Monte Carlo
    over each bundle's whole test set at the sky130 tt sigmas (no ngspice: seconds per bundle)."""
    import argparse
    import json
    from pathlib import Path

    from codesign.analog.layer import test_set
    from codesign.atomic import write_text
    from codesign.bundle import load_bundle
    from codesign.golden import run_golden

    ap = argparse.ArgumentParser(prog="python -m codesign.analog.mismatch", description=main.__doc__)
    ap.add_argument("bundles", nargs="+", type=Path)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the sky130 tt sigmas")
    ap.add_argument(
        "--mapping",
        choices=("step", "neuron"),
        default="step",
        help="candidate scale: per-step window normalisation (step) or one scale per neuron (neuron)",
    )
    ap.add_argument(
        "--sigma-neuron",
        type=float,
        default=0.0,
        help="relative error of each neuron's own threshold DAC, common to both cores (default 0)",
    )
    ap.add_argument(
        "--fit-agreement",
        type=float,
        default=None,
        help="fit --sigma-neuron instead, on the first bundle: the mean state agreement of the ngspice "
        "Monte Carlo draws on --fit-sequences (analog-eval --mc-spice's spice_state_agreement_mean)",
    )
    ap.add_argument(
        "--fit-sequences", type=int, default=1, help="the first N test sequences (with --fit-agreement)"
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    out = {}
    sigma_neuron = args.sigma_neuron
    if args.fit_agreement is not None:
        if not 0.0 < args.fit_agreement <= 1.0 or args.fit_sequences < 1:
            ap.error(f"--fit-agreement {args.fit_agreement} must lie in (0, 1], --fit-sequences >= 1")
        bundle = load_bundle(args.bundles[0])
        xq, y = test_set(bundle)
        seqs = list(range(min(args.fit_sequences, len(xq))))
        sigma_neuron, rows = fit_neuron_sigma(bundle, xq, y, seqs, args.fit_agreement, args.draws)
        for r in rows:
            print(f"sigma_neuron {r['sigma_neuron']:.3f}: states agree {r['state_agreement_mean']:.4f}")
        print(f"fitted sigma_neuron {sigma_neuron:.3f} (target {args.fit_agreement:.4f} on sequences {seqs})")
        out["fit"] = {
            "target": args.fit_agreement,
            "sequences": seqs,
            "sigma_neuron": sigma_neuron,
            "grid": rows,
        }
    mm = SKY130_TT.scaled(args.scale).with_neuron(sigma_neuron)
    for path in args.bundles:
        bundle = load_bundle(path)
        xq, y = test_set(bundle)
        r = mismatch_draws(bundle, xq, y, args.draws, mm, scale=args.mapping)
        r["golden_accuracy"] = float((run_golden(bundle, xq).classes == y).mean())
        r["sequences"] = len(xq)
        out[bundle.manifest.name] = r
        print(
            f"{bundle.manifest.name} ({args.mapping} scale): golden {r['golden_accuracy']:.4f}, behavioural without mismatch "
            f"{r['accuracy_without_mismatch']:.4f}; {args.draws} draws x {len(xq)} sequences: mean "
            f"{r['accuracy_mean']:.4f}, p10 {r['accuracy_p10']:.4f}, min {r['accuracy_min']:.4f}, "
            f"states agree {r['state_agreement_mean']:.4f}",
            flush=True,
        )
    if args.json is not None:
        write_text(args.json, json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
