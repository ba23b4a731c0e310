"""Random-bundle regression of the random-feature accelerator under Icarus and Verilator.

Each bank ``i`` is a random bundle (seed ``SEED + i``: channels, dilations, kernels, units per
pair, widths small enough to saturate, classes, readout widths, ROM or SPRAM readout weights),
built into ``<out>/bank<i>/`` and simulated by ``verification/tb_features.py`` under every
simulator against the golden model (random sequences, random gaps on odd banks; without gaps
the measured cycles must equal the cycle model). The first ``--netlist`` banks also run as
yosys maps them for the UP5K (EBR, SPRAM, DSP, LUT primitives and their models) under Icarus,
with at most 3 sequences of at most 12 frames. Results are written per bank and simulator
(``<out>/bank<i>/result_<sim>.json``); a rerun skips every bank whose result passed, so an
interrupted run resumes. ``<out>/summary.json`` sums them up; the exit status is 1 on any
mismatch or failed simulation.

Usage::

    .venv/bin/python verification/features_regress.py [--banks 6] [--sims icarus verilator]
        [--seed 0] [--sequences 6] [--max-steps 24] [--netlist 1] [--out build/features_regress]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable without installing the package
    sys.path.insert(0, str(REPO))

from codesign.atomic import atomic_dir, write_text  # noqa: E402
from codesign.bundle.features import KERNEL_COUNT, FeatureManifest, FeatureReadout, FeatureSpec  # noqa: E402
from codesign.bundle.io import save_feature_bundle  # noqa: E402
from codesign.bundle.spec import FORMAT_VERSION, InputSpec  # noqa: E402
from codesign.errors import CodesignError  # noqa: E402
from codesign.fpga.netlist import cell_models  # noqa: E402
from codesign.fpga.tools import run_tool  # noqa: E402
from codesign.hw.features_build import FEATURE_TOP, FEATURE_VERILOG, build_feature_rtl  # noqa: E402
from codesign.intmath import signed_range  # noqa: E402
from codesign.verify.runner import SIMULATORS, run_cocotb  # noqa: E402


def run_features_cocotb(
    build_dir: Path,
    sim: str,
    *,
    sequences: int = 6,
    seed: int = 0,
    max_steps: int = 24,
    gaps: bool = False,
    timeout_s: float = 600,
) -> dict:
    """Run ``tb_features`` on a feature build under ``sim``; the testbench's result JSON.

    Raises :class:`CodesignError` (with the log's path) when the testbench wrote no result."""
    build_dir = Path(build_dir).resolve()
    run_dir = build_dir / f"sim_{sim}"
    result = run_dir / "tb_result.json"
    result.unlink(missing_ok=True)
    job = {
        "build": str(build_dir),
        "sequences": sequences,
        "seed": seed,
        "max_steps": max_steps,
        "gaps": gaps,
    }
    log = run_cocotb(
        sim,
        build_dir / FEATURE_VERILOG,
        FEATURE_TOP,
        "tb_features",
        run_dir,
        {"CODESIGN_FEATURES_JOB": json.dumps(job), "CODESIGN_RESULT": str(result)},
        seed=seed,
        timeout_s=timeout_s,
    )
    if not result.is_file():
        raise CodesignError(f"{sim}: the feature testbench wrote no result (log: {log})", path=build_dir)
    return json.loads(result.read_text())


def feature_netlist(build_dir: Path, out_dir: Path, timeout_s: float = 1200) -> Path:
    """``build_dir``'s accelerator as yosys maps it for the UP5K (``synth_ice40 -dsp -spram``:
    EBR, SPRAM, DSP and LUT primitives), with the primitives' simulation models appended, in a
    build folder ``out_dir`` the testbench runs unchanged (``features.v``, ``build.json``, bundle)."""
    build_dir, out_dir = Path(build_dir), Path(out_dir)
    script = (
        f"read_verilog rtl.v\nsynth_ice40 -top {FEATURE_TOP} -dsp -spram\nwrite_verilog -noattr netlist.v\n"
    )
    with atomic_dir(out_dir) as tmp:
        shutil.copyfile(build_dir / FEATURE_VERILOG, tmp / "rtl.v")
        for name in ("build.json", "manifest.yaml", "weights.npz"):
            shutil.copyfile(build_dir / name, tmp / name)
        (tmp / "synth.ys").write_text(script)
        run_tool(
            "yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"], cwd=tmp, timeout=timeout_s, what="netlist"
        )
        (tmp / FEATURE_VERILOG).write_text((tmp / "netlist.v").read_text() + "\n" + cell_models("up5k"))
        (tmp / "rtl.v").unlink()
        (tmp / "netlist.v").unlink()
    return out_dir


def random_feature_bundle(seed: int) -> tuple[FeatureManifest, dict[str, np.ndarray], str]:
    """A random bank, its arrays and the weights mode (``rom`` or ``spram``) for regression seed ``seed``."""
    rng = np.random.default_rng(seed)
    channels = int(rng.integers(1, 5))
    biases = int(rng.choice([1, 1, 2, 3, 10]))  # 10: more units than taps, the walk waits for them
    spec = FeatureSpec(
        channels=channels,
        dilations=sorted({int(d) for d in rng.choice([1, 2, 3, 4, 6, 8], int(rng.integers(1, 4)))}),
        kernels=int(rng.integers(1, 9)) if rng.random() < 0.9 else KERNEL_COUNT,
        biases=biases,
        alpha_bits=int(rng.integers(1, 9)),
        state_bits=int(rng.choice([4, 6, 10, 16, 24])),
    )
    bits = int(rng.integers(3, 9))
    classes = int(rng.integers(1, 6))
    readout = FeatureReadout(
        classes=classes, weight_bits=int(rng.integers(2, 9)), bias_bits=int(rng.integers(4, 17))
    )
    manifest = FeatureManifest(
        format_version=FORMAT_VERSION,
        kind="features",
        name=f"features_random_{seed}",
        input=InputSpec(size=channels, bits=bits, frac=2),
        features=spec,
        readout=readout,
    )
    conv_lo, conv_hi = signed_range(spec.conv_bits(bits))
    reach = min(conv_hi, 6 * channels << (bits - 1))  # thresholds where the sums fall
    mask = rng.integers(0, 2, (spec.pairs, channels))
    mask[np.arange(spec.pairs), rng.integers(0, channels, spec.pairs)] = 1
    wlo, whi = signed_range(readout.weight_bits)
    blo, bhi = signed_range(readout.bias_bits)
    weights = {
        "features.mask": mask,
        "features.threshold": rng.integers(max(conv_lo, -reach), reach + 1, spec.size),
        "features.alpha": rng.integers(0, 1 << spec.alpha_bits, spec.size),
        "readout.weight": rng.integers(wlo, whi + 1, (classes, spec.size)),
        "readout.bias": rng.integers(blo, bhi + 1, classes),
    }
    return manifest, weights, "spram" if rng.random() < 0.3 else "rom"


def _bank(out: Path, i: int, seed: int, sims: list[str], args) -> list[dict]:
    """Build bank ``i`` (if not built) and simulate it under each simulator without a passed
    result; the first ``args.netlist`` banks also as the UP5K netlist under Icarus."""
    where = out / f"bank{i}"
    manifest, weights, mode = random_feature_bundle(seed)
    runs = [(sim, sim, "build") for sim in sims]
    if i < args.netlist:
        runs.append(("netlist", "icarus", "netlist"))
    rows = []
    for label, sim, folder in runs:
        path = where / f"result_{label}.json"
        if path.is_file():
            row = json.loads(path.read_text())
            if row.get("ok"):
                rows.append(row | {"resumed": True})
                continue
        t0 = time.perf_counter()
        row = {
            "bank": i,
            "seed": seed,
            "sim": label,
            "weights": mode,
            "features": manifest.features.model_dump(),
        }
        try:
            if not (where / "build" / FEATURE_VERILOG).is_file():
                save_feature_bundle(where / "bundle", manifest, weights)
                build_feature_rtl(where / "bundle", where / "build", weights=mode)
            if folder == "netlist" and not (where / "netlist" / FEATURE_VERILOG).is_file():
                feature_netlist(where / "build", where / "netlist", args.timeout)
            res = run_features_cocotb(
                where / folder,
                sim,
                # a gate-level run is slow: fewer, shorter sequences
                sequences=args.sequences if folder == "build" else min(args.sequences, 3),
                seed=seed,
                max_steps=args.max_steps if folder == "build" else min(args.max_steps, 12),
                gaps=bool(i % 2),
                timeout_s=args.timeout,
            )
            row |= {k: res[k] for k in ("sequences", "frames", "mismatches", "first_mismatch")}
            row["ok"] = res["mismatches"] == 0
        except CodesignError as err:
            row |= {"ok": False, "error": str(err)}
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        write_text(path, json.dumps(row, indent=2) + "\n")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banks", type=int, default=6, help="random banks per simulator")
    ap.add_argument("--sims", nargs="+", default=list(SIMULATORS), choices=SIMULATORS)
    ap.add_argument("--seed", type=int, default=0, help="bank i uses seed SEED + i")
    ap.add_argument("--sequences", type=int, default=6, help="random sequences per bank")
    ap.add_argument("--max-steps", type=int, default=24, help="longest random sequence")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per simulator or yosys call")
    ap.add_argument("--netlist", type=int, default=1, help="banks also run as their UP5K netlist (Icarus)")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "features_regress")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(args.banks):
        for row in _bank(args.out, i, args.seed + i, args.sims, args):
            status = "ok" if row["ok"] else f"FAIL {row.get('first_mismatch') or row.get('error')}"
            print(f"bank{i} seed {row['seed']} {row['sim']:9s} {row['weights']:5s} {status}", flush=True)
            rows.append(row)
    failed = [r for r in rows if not r["ok"]]
    summary = {
        "banks": args.banks,
        "sims": args.sims,
        "seed": args.seed,
        "runs": len(rows),
        "sequences": sum(r.get("sequences", 0) for r in rows),
        "mismatches": sum(r.get("mismatches", 0) for r in rows),
        "failed": [f"bank{r['bank']} {r['sim']}" for r in failed],
    }
    write_text(args.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(f"{len(rows) - len(failed)}/{len(rows)} runs bit-exact, {summary['sequences']} sequences")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
