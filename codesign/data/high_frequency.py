"""High-frequency pattern recognition (mGRADE App. B.3, Fig. A3-A4).

There are ``num_features`` fixed feature patterns (classes), each ``feature_length`` steps of
symbols from an alphabet of ``alphabet`` symbols. Inside a pattern every symbol is held for
``r = round(1 / frequency)`` steps before switching to a different random symbol, so the
normalised feature frequency is ``1 / r`` (paper: 0.07, 0.17, 0.33, 1.0 -> r = 14, 6, 3, 1). The
patterns are drawn once from ``template_seed``.

A sequence concatenates ``features_per_seq`` distinct patterns, each followed by a marker step;
at every marker the target is the class of the pattern just seen (``-100`` elsewhere). Inputs are
one-hot over ``alphabet + 1`` symbols (marker last). With the paper's sizes (5 of 16 patterns of
32 steps, alphabet 16) sequences have 165 steps. ``symbol_noise`` replaces each pattern symbol by
a random one with that probability (0 in the paper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from codesign.data._util import check, one_hot, split_generator
from codesign.data.base import IGNORE_INDEX
from codesign.errors import CodesignError


@dataclass(frozen=True)
class HighFrequencyPatterns:
    kind = "classification"
    target = "every_step"

    frequency: float = 0.33
    num_features: int = 16
    features_per_seq: int = 5
    feature_length: int = 32
    alphabet: int = 16
    symbol_noise: float = 0.0
    template_seed: int = 0
    val_size: int = 1000
    test_size: int = 1000

    def __post_init__(self) -> None:
        n = "high_frequency"
        check(0.0 < self.frequency <= 1.0, n, f"frequency must be in (0, 1], got {self.frequency}")
        check(self.num_features >= 2, n, f"num_features must be >= 2, got {self.num_features}")
        check(
            1 <= self.features_per_seq <= self.num_features,
            n,
            f"features_per_seq must be in [1, num_features], got {self.features_per_seq}",
        )
        check(self.feature_length >= 1, n, f"feature_length must be >= 1, got {self.feature_length}")
        check(self.alphabet >= 2, n, f"alphabet must be >= 2, got {self.alphabet}")
        check(0.0 <= self.symbol_noise <= 1.0, n, f"symbol_noise must be in [0, 1], got {self.symbol_noise}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return self.alphabet + 1

    @property
    def output_size(self) -> int:
        return self.num_features

    @property
    def repeat(self) -> int:
        return max(1, round(1.0 / self.frequency))

    @property
    def length(self) -> int:
        return self.features_per_seq * (self.feature_length + 1)

    def templates(self) -> torch.Tensor:
        """The fixed, pairwise distinct patterns ``(num_features, feature_length)`` of symbol indices."""
        g = torch.Generator().manual_seed(self.template_seed)
        slots = math.ceil(self.feature_length / self.repeat)
        rows: list[torch.Tensor] = []
        seen: set[tuple[int, ...]] = set()
        for _ in range(100 * self.num_features):
            first = torch.randint(0, self.alphabet, (1,), generator=g)
            steps = torch.randint(1, self.alphabet, (slots - 1,), generator=g)
            row = (first + torch.cat([torch.zeros(1, dtype=torch.long), steps]).cumsum(0)) % self.alphabet
            row = row.repeat_interleave(self.repeat)[: self.feature_length]
            if tuple(row.tolist()) not in seen:
                seen.add(tuple(row.tolist()))
                rows.append(row)
            if len(rows) == self.num_features:
                return torch.stack(rows)
        raise CodesignError(
            f"task 'high_frequency': cannot draw {self.num_features} distinct patterns of "
            f"{slots} symbol(s) from an alphabet of {self.alphabet}"
        )

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``(n, length, alphabet + 1)`` and targets ``(n, length)``."""
        k, flen = self.features_per_seq, self.feature_length
        classes = torch.rand(n, self.num_features, generator=generator).argsort(dim=1)[:, :k]
        body = self.templates()[classes]  # (n, k, flen)
        if self.symbol_noise > 0:
            flip = torch.rand(body.shape, generator=generator) < self.symbol_noise
            body = torch.where(flip, torch.randint(0, self.alphabet, body.shape, generator=generator), body)
        marker = torch.full((n, k, 1), self.alphabet)
        seq = torch.cat([body, marker], dim=2).reshape(n, k * (flen + 1))
        y = torch.full((n, k, flen + 1), IGNORE_INDEX)
        y[:, :, flen] = classes
        return one_hot(seq, self.input_size), y.reshape(n, -1)

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        sizes = {"val": self.val_size, "test": self.test_size}
        return self.sample(sizes[name], split_generator(name, seed))
