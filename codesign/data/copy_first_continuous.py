"""Copy-first-input, continuous (CMRU paper App. G.2.2 clean, G.2.3 noisy).

At the first step the model sees a scalar ``x0 ~ U(-1, 1)``; every later step is ``0`` (clean) or
fresh uniform noise ``U(-1, 1)`` (noisy). The target is ``x0``, read at the last step (regression,
``(batch, 1)``). Training batches are drawn on the fly; validation and test sets are fixed by
their own seeds. The paper's evaluation metric is the mean absolute error.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.data._util import check, split_generator


@dataclass(frozen=True)
class CopyFirstContinuous:
    """Clean variant (G.2.2): ``x0`` then zeros."""

    kind = "regression"
    target = "last"
    noisy = False

    length: int = 100
    val_size: int = 2000
    test_size: int = 2000

    def __post_init__(self) -> None:
        name = "copy_first_noisy" if self.noisy else "copy_first_continuous"
        check(self.length >= 1, name, f"length must be >= 1, got {self.length}")
        check(self.val_size >= 1 and self.test_size >= 1, name, "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return 1

    @property
    def output_size(self) -> int:
        return 1

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sequences ``(n, length, 1)`` and their targets ``(n, 1)``."""
        first = torch.rand(n, generator=generator) * 2 - 1
        if self.noisy:
            x = torch.rand(n, self.length, 1, generator=generator) * 2 - 1
        else:
            x = torch.zeros(n, self.length, 1)
        x[:, 0, 0] = first
        return x, first[:, None].clone()

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        sizes = {"val": self.val_size, "test": self.test_size}
        g = split_generator(name, seed)
        return self.sample(sizes[name], g)


@dataclass(frozen=True)
class CopyFirstNoisy(CopyFirstContinuous):
    """Noisy variant (G.2.3, and G.2.4 at L = 5000): ``x0`` then ``U(-1, 1)`` distractors."""

    noisy = True
