"""scikit-learn's 8x8 handwritten digits (1797 images, shipped in the wheel) as a sequential task.

``steps="rows"``: 8 steps of 8 pixels (input_size 8); ``steps="pixels"``: 64 steps of one pixel
in raster order (input_size 1), optionally permuted by ``permute_seed`` (a fixed permutation, like
pMNIST). Pixels are scaled from 0..16 to 0..1. The label is read at the last step. The images are
split 80/10/10 into train/val/test, stratified by class, by ``split_seed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from codesign.data._util import FixedSplits
from codesign.errors import CodesignError

_CACHE: dict[object, dict] = {}


@dataclass(frozen=True)
class SklearnDigits(FixedSplits):
    kind = "classification"
    target = "last"

    steps: Literal["rows", "pixels"] = "rows"
    permute_seed: int | None = None
    split_seed: int = 0

    def _data(self) -> dict:
        if self not in _CACHE:
            try:
                from codesign.extras import require

                require("sklearn", "the sklearn digits task")
                from sklearn.datasets import load_digits
            except ImportError as err:
                raise CodesignError("the digits task needs scikit-learn: pip install scikit-learn") from err
            d = load_digits()
            images = np.asarray(d.images, dtype=np.float32) / 16.0  # (n, 8, 8)
            labels = np.asarray(d.target, dtype=np.int64)
            if self.steps == "rows":
                x = images
            else:
                x = images.reshape(len(images), 64, 1)
                if self.permute_seed is not None:
                    x = x[:, np.random.default_rng(self.permute_seed).permutation(64)]
            rng = np.random.default_rng(self.split_seed)
            part = np.empty(len(labels), dtype=np.int64)  # 0 train, 1 val, 2 test
            for c in range(10):
                idx = rng.permutation(np.flatnonzero(labels == c))
                k = int(round(0.1 * len(idx)))
                part[idx] = 0
                part[idx[:k]] = 1
                part[idx[k : 2 * k]] = 2
            x_t, y_t = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(labels)
            _CACHE[self] = {
                name: (x_t[part == i], y_t[part == i]) for i, name in enumerate(("train", "val", "test"))
            }
        return _CACHE[self]

    @property
    def input_size(self) -> int:
        return 8 if self.steps == "rows" else 1

    @property
    def output_size(self) -> int:
        return 10

    @property
    def length(self) -> int:
        return 8 if self.steps == "rows" else 64

    def _split_arrays(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        return self._data()[name]
