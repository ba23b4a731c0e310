"""The backbone ablation ladder of issue 19: one table, accuracy against memory bits per rung.

A ladder file (YAML) names a base recipe, seeds and rungs (a rung may list its own ``seeds``);
each rung is a list of ``--set``
overrides of ``codesign train`` (``model.layers=[...]``, ``model.arch=backbone``,
``model.drop=[gate]`` ...). Every (rung, seed) is trained once into ``OUT/RUNG/sSEED`` (a run
that already finished is reused, so the ladder resumes); rungs with ``deploy: true`` are also
exported (``codesign export``), which scores the golden integer model. The table has, per rung:
parameters, recurrent state words, memory bits (weights at ``weight_bits`` + states at 16 bits)
and the float / golden test accuracy, mean [min; max] over seeds; deployed rungs add the bundle's
own memory bits (every array at its declared width + state registers) and the energy proxy per
inference of :func:`codesign.explore.hardware.hardware_figures` (operation counts of the golden
model x a 45 nm energy table, one lane), both of seed 0.

    python scripts/ladder.py flows/ladder/sd_cmru16.yaml --out runs/ladder/sd_cmru16
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

STATE_BITS = 16
TIMEOUT_S = 900


def _run(cmd: list[str], log: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with log.open("w") as fh:
        done = subprocess.run(
            cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=TIMEOUT_S, env=env, check=False
        )
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {done.returncode}); see {log}")


def _sizes(run: Path) -> tuple[int, int]:
    """Parameters and recurrent state words of a finished run's model."""
    from codesign.nn.backbone import Backbone
    from codesign.train.trainer import load_run

    _, model, _ = load_run(run)
    params = sum(p.numel() for p in model.parameters())
    if isinstance(model, Backbone):
        states = sum(m.cell.hidden_size for m in model.modules() if hasattr(m, "cell"))
    else:
        states = sum(c.hidden_size for c in model.cells)
    return params, states


def _stat(values: list[float]) -> str:
    """Mean [min; max] in percent; a single seed is its value with "(1 seed)"."""
    if not values:
        return ""
    v = [100 * x for x in values]
    if len(v) == 1:
        return f"{v[0]:.1f} (1 seed)"
    return f"{sum(v) / len(v):.1f} [{min(v):.1f}; {max(v):.1f}]"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ladder", type=Path, help="ladder YAML: base, seeds, weight_bits, rungs")
    ap.add_argument("--out", type=Path, required=True, help="directory of the runs (resumed)")
    ap.add_argument("--only", default="", help="comma-separated rung names to run (default: all)")
    ap.add_argument(
        "--no-train", action="store_true", help="table of the finished runs only: train and export nothing"
    )
    args = ap.parse_args(argv)
    spec = yaml.safe_load(args.ladder.read_text())
    for key in ("base", "seeds", "rungs"):
        if key not in spec:
            raise SystemExit(f"{args.ladder}: missing key {key!r} (a ladder has base, seeds, rungs)")
    base = (args.ladder.parent / spec["base"]).resolve()
    wbits = int(spec.get("weight_bits", 4))
    only = {s for s in args.only.split(",") if s}
    codesign = [str(Path(sys.executable).parent / "codesign")]
    rows = []
    for rung in spec["rungs"]:
        name = rung["name"]
        if only and name not in only:
            continue
        floats, goldens, size, figures = [], [], None, None
        for seed in rung.get("seeds", spec["seeds"]):
            run = args.out / name / f"s{seed}"
            if args.no_train and not (run / "summary.json").is_file():
                continue
            if not (run / "summary.json").is_file():
                run.parent.mkdir(parents=True, exist_ok=True)
                sets = [f"seed={seed}", *rung.get("set", [])]
                cmd = [*codesign, "train", str(base), "--out", str(run), "--quiet"]
                for s in sets:
                    cmd += ["--set", s]
                _run(cmd, run.parent / f"s{seed}.train.log")
            floats.append(json.loads((run / "summary.json").read_text())["test"])
            size = size or _sizes(run)
            if rung.get("deploy"):
                bundle = args.out / name / f"s{seed}.bundle"
                if args.no_train and not (bundle / "manifest.yaml").is_file():
                    continue
                if not (bundle / "manifest.yaml").is_file():
                    _run(
                        [*codesign, "export", str(run), "--out", str(bundle)],
                        run.parent / f"s{seed}.export.log",
                    )
                prov = yaml.safe_load((bundle / "manifest.yaml").read_text())["provenance"]
                goldens.append(prov["quantized_test_accuracy"])
                if figures is None:
                    from codesign.explore.hardware import hardware_figures

                    figures = hardware_figures(bundle, lanes=1)
        if size is None:  # --no-train and no finished run
            continue
        params, states = size
        bits = params * wbits + states * STATE_BITS
        deployed = (
            (str(figures["memory_bits"]), f"{figures['energy_pj_proxy'] / 1e3:.1f}")
            if figures
            else ("-", "-")
        )
        rows.append(
            (name, rung.get("what", ""), params, states, bits, *deployed, _stat(floats), _stat(goldens))
        )
        print(f"{name}: float {_stat(floats)} golden {_stat(goldens)} ({params} parameters)", flush=True)
    print()
    print(
        f"| rung | network | parameters | state words | memory bits (w{wbits} + s{STATE_BITS}) "
        "| bundle memory bits | energy proxy (nJ / inference) | float (%) | golden (%) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(v) for v in r[:8]) + f" | {r[8] or '-'} |")


if __name__ == "__main__":
    main()
