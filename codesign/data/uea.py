"""UEA/UCR classification sets shipped inside the ``aeon`` wheel, by name (nothing downloads).

``UEADataset(dataset="JapaneseVowels")`` (a recipe: ``task: {name: uea, dataset: GunPoint}``) reads
``aeon/datasets/data/<dataset>/<dataset>_TRAIN.ts`` and ``_TEST.ts`` with aeon's own ``.ts`` parser
(aeon's ``load_classification`` would try to download a name it does not ship; we never call it).
Any classification set aeon ships works: see :func:`available`; an unknown name is refused with
that list. JapaneseVowels (the default) is speech (12 LPC cepstra per frame, 9 speakers).

* Test split: the official ``_TEST`` file. Validation: a stratified carve-out of the official
  ``_TRAIN`` file chosen by ``split_seed``; the rest is the training set, from which
  :meth:`sample` draws. Its size is ``val_fraction`` of the file but at least ``min_val`` series
  (small sets: a 10% carve-out of 40 series holds 4, too few to select a model on), never more
  than :data:`MAX_VAL_FRACTION` of the file, and at least one series of every class that has two.
  ``val_fraction: 0`` carves out nothing: the whole file trains and the validation split is empty
  (for ``train.selection: average``, which needs no validation set).
  ``split_seed: null`` (the default in recipes) means the run's seed
  (:func:`codesign.train.trainer.make_recipe_task` fills it in), so runs with several seeds are
  repeated random splits; the Python default is 0.
* Inputs ``(batch, time, channels)``: standardised as ``normalize`` says (each channel with the
  training set's mean and standard deviation by default; see :mod:`codesign.data.series`);
  missing values (NaN) become 0 after that.
* Variable-length sets (JapaneseVowels: 7-29 frames) are padded to the longest series of the
  whole set with zeros (the training mean after standardisation) *in front* (``padding="front"``,
  default): a causal recurrent model reads the padding first and every series ends on its real
  last frame, which is what last pooling reads. ``padding="back"`` pads at the end instead.
  ``lengths(split)`` gives the true lengths.
* Labels: the class names sorted (numerically when all are numbers), indexed from 0;
  :attr:`classes` lists the names.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from codesign.data._util import FixedSplits, check
from codesign.data.series import (  # noqa: F401 - MAX_VAL_FRACTION re-exported
    MAX_VAL_FRACTION,
    LabelledSplits,
    build_splits,
    check_normalize,
)
from codesign.errors import CodesignError

_CACHE: dict[object, dict] = {}


def data_dir() -> Path:
    """Where the aeon wheel keeps its datasets (found without importing aeon)."""
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        raise CodesignError("the UEA/UCR datasets need the 'aeon' package: pip install aeon")
    return Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"


def _is_classification(ts_file: Path) -> bool:
    with open(ts_file, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            low = line.strip().lower()
            if low.startswith("@classlabel"):
                return low.split()[1:2] == ["true"]
            if low.startswith("@data"):
                return False
    return False


def available() -> list[str]:
    """Names of the classification sets (with a train and a test file) that aeon ships."""
    root = data_dir()
    names = []
    for train in root.glob("*/*_TRAIN.ts"):
        name = train.name[: -len("_TRAIN.ts")]
        if (train.parent / f"{name}_TEST.ts").exists() and _is_classification(train):
            names.append(name)
    return sorted(names)


def _files(name: str) -> tuple[Path, Path]:
    for train in data_dir().glob(f"*/{name}_TRAIN.ts"):
        test = train.parent / f"{name}_TEST.ts"
        if test.exists() and _is_classification(train):
            return train, test
    names = available()
    raise CodesignError(
        f"aeon does not ship a UEA/UCR classification set named {name!r}; available: {', '.join(names)}"
    )


@functools.cache  # parsed once per process: every split and seed of a set reads the same files
def training_series(dataset: str) -> list[np.ndarray]:
    """The series ``(channels, time)`` of a set's official training file (an unknown name is
    refused with the list of those aeon ships)."""
    return list(_read(_files(dataset)[0])[0])


@functools.lru_cache(maxsize=4)
def _read(path: Path) -> tuple[list[np.ndarray], np.ndarray]:
    from codesign.extras import require

    require("aeon", "reading .ts files")
    from aeon.datasets import load_from_ts_file

    X, y = load_from_ts_file(str(path))
    series = [np.asarray(s, dtype=np.float64) for s in X]  # each (channels, time)
    return series, np.asarray(y).astype(str)


@dataclass(frozen=True)
class UEADataset(LabelledSplits, FixedSplits):
    kind = "classification"
    target = "last"

    dataset: str = "JapaneseVowels"
    val_fraction: float = 0.1
    min_val: int = 20
    split_seed: int | None = None
    normalize: bool | str = True  # one of NORMALIZE_MODES; checked in __post_init__
    padding: Literal["front", "back"] = "front"

    def __post_init__(self) -> None:
        check_normalize(self.normalize, "uea")
        check(
            0.0 <= self.val_fraction < 1.0,
            "uea",
            f"val_fraction must be in [0, 1) (0: no validation carve-out), got {self.val_fraction}",
        )
        check(self.min_val >= 0, "uea", f"min_val must be >= 0, got {self.min_val}")
        _files(self.dataset)  # an unknown name fails here, listing the available ones

    def _data(self) -> dict:
        if self not in _CACHE:
            train_path, test_path = _files(self.dataset)
            _CACHE[self] = build_splits(
                _read(train_path),
                _read(test_path),
                val_fraction=self.val_fraction,
                min_val=self.min_val,
                split_seed=self.split_seed,
                normalize=self.normalize,
                padding=self.padding,
            )
        return _CACHE[self]
