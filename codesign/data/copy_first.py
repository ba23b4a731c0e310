"""Copy-first-input, discrete (CMRU paper App. G.2.1).

At the first step the model sees a one-hot vector of one of ``classes`` symbols; every later step
is all zeros; the label is the first symbol, read at the last step (last pooling). Training
batches are drawn on the fly; validation and test sets are fixed by their own seeds so every run
(and the RTL simulation) scores the same sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CopyFirstDiscrete:
    kind = "classification"
    target = "last"

    classes: int = 15
    length: int = 100
    val_size: int = 2000
    test_size: int = 2000

    @property
    def input_size(self) -> int:
        return self.classes

    @property
    def output_size(self) -> int:
        return self.classes

    @property
    def num_classes(self) -> int:
        return self.classes

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sequences ``(n, length, classes)`` and their labels ``(n,)``."""
        labels = torch.randint(0, self.classes, (n,), generator=generator)
        x = torch.zeros(n, self.length, self.classes)
        x[torch.arange(n), 0, labels] = 1.0
        return x, labels

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The fixed ``val`` or ``test`` set (independent of the training seed stream)."""
        sizes = {"val": self.val_size, "test": self.test_size}
        offsets = {"val": 1_000_003, "test": 2_000_003}
        g = torch.Generator().manual_seed(seed + offsets[name])
        return self.sample(sizes[name], g)
