"""Trained against deployed accuracy, behind the figures of docs/training.md.

``python scripts/deployed_gap.py cells``: every cell kind at 8 and 4 bits on the data of
tests/test_deployed_equals_trained.py (3 classes of noisy ramps, 24 steps, 300 test series).
``python scripts/deployed_gap.py long [--iterations N]``: models/classify_files_hw.yaml on a long
set written as .ts files (4 classes of noisy sinusoids, 3 channels, 160..320 steps, 300 + 300
series). Each line: the test accuracy ``codesign train`` reported, the fake-quantized forward
pass, and the golden (deployed) accuracy. Run under ``ATEN_CPU_CAPABILITY=default`` to see the
CPU kernel level's part.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "models" / "classify_files_hw.yaml"


def ramps(root: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)

    def make(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 3, n)
        t = np.linspace(-1, 1, 24)
        return (y[:, None, None] - 1) * t[None, :, None] + 0.6 * rng.standard_normal((n, 24, 3)), y

    for name, n in (("train", 400), ("test", 300)):
        x, y = make(n)
        np.savez(root / f"{name}.npz", X=x, y=y)
    return root / "train.npz", root / "test.npz"


def sinusoids(root: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    header = "@problemName long\n@timeStamps false\n@missing false\n@univariate false\n@dimensions 3\n"
    header += "@equalLength false\n@classLabel true a b c d\n@data\n"
    paths = []
    for name in ("TRAIN", "TEST"):
        lines = []
        for c in rng.integers(0, 4, 300):
            t = np.arange(int(rng.integers(160, 321)))
            f = 0.02 + 0.012 * c
            s = np.stack(
                [
                    np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3)),
                    np.cos(2 * np.pi * f * t * 1.5),
                    rng.standard_normal(len(t)) * 0.3,
                ]
            )
            s = s + 1.2 * rng.standard_normal(s.shape)
            lines.append(":".join(",".join(f"{v:.4f}" for v in ch) for ch in s) + ":" + "abcd"[c])
        path = root / f"long_{name}.ts"
        path.write_text(header + "\n".join(lines) + "\n")
        paths.append(path)
    return paths[0], paths[1]


def run(recipe: dict, label: str) -> dict:
    from codesign.quant.export import export_run
    from codesign.train import train
    from codesign.train.recipe import parse_recipe

    out = Path(tempfile.mkdtemp())
    result = train(parse_recipe(recipe), out / "run", progress=False)
    _, report = export_run(out / "run", out / "bundle")
    line = {
        "case": label,
        "trained": result.test,
        "qat_forward": report["float_test_accuracy"],
        "deployed": report["quantized_test_accuracy"],
        "mismatches": report["torch_vs_golden_mismatches"],
        "best_iteration": result.best_iteration,
        "train_s": round(result.wall_s, 1),
    }
    print(json.dumps(line), flush=True)
    return line


def main() -> None:
    from codesign.bundle.cells import CELL_NAMES, CELLS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=["cells", "long"])
    ap.add_argument("--iterations", type=int, default=400, help="long: training iterations")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp())
    base = yaml.safe_load(RECIPE.read_text())
    if args.which == "long":
        train_file, test_file = sinusoids(root)
        base["task"] = {"name": "files", "train": str(train_file), "test": str(test_file)}
        base["train"].update(iterations=args.iterations, eval_every=max(1, args.iterations // 10))
        run(base, "long")
        return
    train_file, test_file = ramps(root)
    for cell in CELL_NAMES:
        for bits in (8, 4):
            recipe = yaml.safe_load(yaml.safe_dump(base))
            recipe["task"] = {
                "name": "files",
                "train": str(train_file),
                "test": str(test_file),
                "min_val": 40,
            }
            recipe["model"]["layers"] = [
                {"cell": cell, "size": 8, **({"eps": 1.0} if CELLS[cell].has_eps else {})}
            ]
            recipe["train"].update(iterations=150, eval_every=50, qat_bits=bits)
            recipe["quant"]["layer"]["weight_bits"] = bits
            recipe["quant"]["readout"]["weight_bits"] = bits
            run(recipe, f"{cell}-{bits}")


if __name__ == "__main__":
    main()
