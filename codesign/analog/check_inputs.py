"""The bundles and inputs :func:`codesign.analog.checks.analog_check` compares with the golden model:
a given bundle and its test split, the random default bundles, the one-neuron reference bundle,
and the reference netlists written beside the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import DpiParams, fmt
from codesign.analog.mapping import AnyBundle, spine
from codesign.bundle import Formats, SpineBundle
from codesign.errors import CodesignError


# ------------------------------------------------------------------------------------------ reference neuron
def reference_bundle(b_fixed: int = 8, seed: int = 0) -> tuple[SpineBundle, np.ndarray]:
    """A one-neuron BMRU bundle with a fixed threshold mapping exactly onto the paper's cell, and a trace.

    ``c = x`` and ``|b| = b_fixed``: the mapping gives thresholds 0.15 / 0.35 nA around 0.25 nA,
    alpha 0.5 nA, one accumulator unit = 0.1 nA / (b_fixed - 1/2). The trace walks the candidate
    over ``[-2 b_fixed, 2 b_fixed]``, with runs inside the window (retain) and edge values.
    """
    from codesign.bundle.random import random_manifest

    manifest = random_manifest(
        d=1,
        inputs=1,
        classes=2,
        cell="bmru",
        eps=0,
        seed=seed,
        formats=Formats.model_validate({"input": {"bits": 8, "frac": 0}}),
    )
    manifest = manifest.model_copy(update={"name": f"reference_bmru_b{b_fixed}"})
    w = {
        "w_cand": np.array([[1]]),
        "b_cand": np.array([0]),
        "w_thr": np.array([[0]]),
        "b_thr": np.array([b_fixed]),
        "alpha": np.array([1]),
        "w_out": np.array([[1], [-1]]),
        "b_out": np.array([0, 0]),
    }
    rng = np.random.default_rng(seed)
    lim = 2 * b_fixed - 1
    x = rng.integers(-lim, lim + 1, size=40)
    x[::5] = rng.choice([-b_fixed, b_fixed, -(b_fixed - 1), b_fixed - 1], size=len(x[::5]))
    return SpineBundle(manifest, {k: np.asarray(v, dtype=np.int64) for k, v in w.items()}), x.reshape(
        1, -1, 1
    )


def write_reference_netlists(out: Path, *, stages: int = 4) -> list[Path]:
    """The reference cells (paper settings), a native CMRU and a random bundle's netlists, into ``out``."""
    from codesign.analog.netlist import generate_netlists

    out.mkdir(parents=True, exist_ok=True)
    files = {
        "cells.spice": cells.cell_library(),
        f"cmru_native_{stages}.spice": cells.cmru_ladder(stages),
        "bmru_paper.spice": (
            "* BMRU cell at the settings of CMRU Fig. 4C: thresholds 0.35 / 0.15 nA, alpha 0.5 nA.\n"
            "* Needs cells.spice. Ports: in (input current in), out (0.5 nA while high), supplies.\n"
            ".subckt bmru_paper in out vdd vddb\n"
            f"Xbias vddb vbb vcn bias_shared I_B2={fmt(cells.I_B2)} I_CAS={fmt(cells.I_CAS)}\n"
            "Xc in out vdd vddb vbb vcn bmru_cell I_DOWN=0.15n I_UP=0.35n I_ALPHA=0.5n\n"
            ".ends bmru_paper\n"
        ),
        "dpi_10ms.spice": (
            "* DPI low-pass, tau = 10 ms, gain 1 at 0.5 nA (calibrated, tt). Needs cells.spice.\n"
            ".subckt dpi_10ms in out1 out2 vdd vddb\n"
            f"Xd in out1 out2 vdd vddb dpi_cell C={fmt(DpiParams().c)} I_TAU={fmt(DpiParams().i_tau)} "
            f"I_TH={fmt(DpiParams().i_th)}\n.ends dpi_10ms\n"
        ),
    }
    written = []
    for name, text in files.items():
        (out / name).write_text(text)
        written.append(out / name)
    bundle = default_agreement_bundle()
    from codesign.bundle.random import random_integer_inputs

    cal = np.stack(random_integer_inputs(bundle, sequences=4, steps=25, seed=1, density=0.6))
    written += generate_netlists(bundle, out / bundle.manifest.name, calibration=cal, models=False)
    return written


def load_check_bundle(bundle_dir: Path | None) -> SpineBundle | None:
    """The bundle given to ``analog-check`` (None without one); eps -1 is refused."""
    from codesign.bundle import load_bundle

    if bundle_dir is None:
        return None
    bundle = spine(load_bundle(bundle_dir))
    if bundle.net.eps == -1:
        raise CodesignError(
            "eps -1 has no analog primitive: analog-check compares bmru (eps 0) or cmru eps 1 bundles",
            path=bundle_dir,
        )
    return bundle


def sequence_inputs(
    bundle: AnyBundle, inputs: Path | None, n_seq: int, n_steps: int
) -> tuple[np.ndarray, str]:
    """Integer test inputs ``(n_seq, n_steps, M)``: ``inputs`` (.npy), else the bundle's task, else random."""
    from codesign.bundle.random import random_integer_inputs
    from codesign.golden import quantize_inputs

    if inputs is not None:
        if not Path(inputs).is_file():
            raise CodesignError("inputs file not found", path=inputs)
        try:
            x = np.load(inputs, allow_pickle=False)
            xq = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_inputs(bundle, x)
        except (ValueError, OSError) as err:
            raise CodesignError(f"not a readable .npy array without pickles ({err})", path=inputs) from None
        except CodesignError as err:
            raise CodesignError(str(err), path=inputs) from None
        if xq.ndim != 3 or xq.shape[-1] != bundle.net.input_size:
            raise CodesignError(
                f"inputs must have shape (N, T, {bundle.net.input_size}); got {xq.shape}", path=inputs
            )
        return xq[:n_seq, :n_steps], Path(inputs).name
    task_x = _bundle_test_inputs(bundle)
    if task_x is not None:
        return task_x[:n_seq, :n_steps], "bundle test split"
    xs = random_integer_inputs(bundle, sequences=n_seq, steps=n_steps, seed=1, density=0.6)
    return np.stack(xs), "random integer inputs"


def default_agreement_bundle(seed: int = 1) -> SpineBundle:
    """A random bmru bundle (d=4, M=3, 4-bit inputs and weights) whose gates open about half the time.

    Random weights; the candidate and threshold biases are drawn in [-10, 10] instead of over the
    whole 8-bit bias format (extreme biases leave a gate always open or always shut); neuron 0 has
    a fixed threshold (``w_thr = 0``, ``b_thr = 12``), the published chip's mode.
    """
    from codesign.bundle.random import random_manifest, random_weights

    fm = Formats.model_validate(
        {
            "input": {"bits": 4, "frac": 0},
            "weight": {"bits": 4},
            "bias": {"bits": 8},
            "alpha": {"bits": 8},
            "state": {"bits": 8},
        }
    )
    man = random_manifest(d=4, inputs=3, classes=2, cell="bmru", eps=0, formats=fm, seed=seed)
    w = random_weights(man, seed)
    rng = np.random.default_rng(seed)
    w["b_cand"] = rng.integers(-10, 11, size=4)
    w["b_thr"] = rng.integers(-10, 11, size=4)
    w["w_thr"][0] = 0
    w["b_thr"][0] = 12
    return SpineBundle(man.model_copy(update={"name": f"random_bmru_d4_m3_s{seed}_fixed0"}), w)


def default_ladder_bundle(seed: int = 1) -> SpineBundle:
    """:func:`default_agreement_bundle` as a cmru eps 1 bundle (native CMRU ladders), first ``d`` = 2 neurons."""
    b = default_agreement_bundle(seed)
    man = b.manifest
    net = man.network.model_copy(update={"cell": "cmru", "eps": 1, "hidden_size": 2})
    w = {
        k: (v[:2] if k in ("w_cand", "b_cand", "w_thr", "b_thr", "alpha") else v)
        for k, v in b.weights.items()
    }
    w["w_out"] = b.weights["w_out"][:, :2]
    man = man.model_copy(update={"network": net, "name": f"random_cmru_eps1_d2_m3_s{seed}_fixed0"})
    return SpineBundle(man, w)


def _bundle_test_inputs(bundle: AnyBundle) -> np.ndarray | None:
    """The test split of the task named in a trained bundle's provenance, quantized (None if unavailable)."""
    prov = bundle.manifest.provenance
    task = prov.get("task")
    if not isinstance(task, dict) or "name" not in task or "seed" not in prov:
        return None
    try:
        from codesign.golden import quantize_inputs
        from codesign.train.recipe import build_task

        options = {k: v for k, v in task.items() if k != "name"}
        t = build_task(task["name"], options)
        x, _ = t.split("test", int(prov["seed"]))
        return quantize_inputs(bundle, np.asarray(x))
    except Exception:  # noqa: BLE001 - a task we cannot rebuild falls back to random inputs
        return None
