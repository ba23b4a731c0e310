"""MNIST-1D (Greydanus 2020), built procedurally with the ``mnist1d`` package's generator.

``mnist1d.data.make_dataset`` draws every example from the package's ten hard-coded digit
templates (padding, translation, scaling, shear, correlated and i.i.d. noise) with its own seed; we
never call ``get_dataset``, the function that may download the reference pickle. With the default
options (5000 samples, seed 42) it rebuilds the standard dataset: 4000 training and 1000 test
sequences of 40 steps, 10 classes.

Sequential task: one scalar per step, ``(batch, 40, 1)``, the label read at the last step. The
official test part is the test split; ``val_fraction`` of the training part (chosen by
``split_seed``) is held out for validation. ``shuffle_seq`` applies the package's fixed
permutation of the 40 positions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import torch

from codesign.data._util import FixedSplits, check
from codesign.errors import CodesignError

_CACHE: dict[object, dict] = {}


@dataclass(frozen=True)
class MNIST1D(FixedSplits):
    kind = "classification"
    target = "last"

    num_samples: int = 5000
    dataset_seed: int = 42
    shuffle_seq: bool = False
    val_fraction: float = 0.1
    split_seed: int = 0

    def __post_init__(self) -> None:
        check(self.num_samples >= 50, "mnist1d", f"num_samples must be >= 50, got {self.num_samples}")
        check(
            0.0 < self.val_fraction < 1.0,
            "mnist1d",
            f"val_fraction must be in (0, 1), got {self.val_fraction}",
        )

    def _data(self) -> dict:
        if self not in _CACHE:
            try:
                from codesign.extras import require

                require("mnist1d", "the MNIST-1D task")
                from mnist1d.data import get_dataset_args, make_dataset
            except ImportError as err:
                raise CodesignError("MNIST-1D needs the 'mnist1d' package: pip install mnist1d") from err
            args = get_dataset_args()
            args.num_samples = self.num_samples
            args.seed = self.dataset_seed
            args.shuffle_seq = self.shuffle_seq
            # make_dataset seeds the global RNGs: keep the caller's streams untouched
            np_state, py_state = np.random.get_state(), random.getstate()
            try:
                d = make_dataset(args)
            finally:
                np.random.set_state(np_state)
                random.setstate(py_state)
            x = torch.from_numpy(np.asarray(d["x"], dtype=np.float32))[..., None]
            y = torch.from_numpy(np.asarray(d["y"], dtype=np.int64))
            perm = torch.from_numpy(np.random.default_rng(self.split_seed).permutation(len(y)))
            k = max(1, int(round(self.val_fraction * len(y))))
            val, train = perm[:k], perm[k:]
            xt = torch.from_numpy(np.asarray(d["x_test"], dtype=np.float32))[..., None]
            yt = torch.from_numpy(np.asarray(d["y_test"], dtype=np.int64))
            _CACHE[self] = {"train": (x[train], y[train]), "val": (x[val], y[val]), "test": (xt, yt)}
        return _CACHE[self]

    @property
    def input_size(self) -> int:
        return 1

    @property
    def output_size(self) -> int:
        return 10

    @property
    def length(self) -> int:
        return 40

    def _split_arrays(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        return self._data()[name]
