"""Parity with length generalisation (CMRU paper App. G.5.1, Table 8; HSRU temporal parity).

Inputs are bits ``x_t in {0, 1}`` drawn uniformly (channel 0); the label ``(sum_t x_t) mod 2`` is
read at the last step. Training batches have one length each, drawn uniformly from
``[train_min_length, train_max_length]`` (paper: 50-400). The fixed validation set uses the
training range, the test set ``[test_min_length, test_max_length]`` (paper: 50-1000).

Fixed sets hold sequences of several lengths in one tensor: a sequence of length ``L`` is
*left*-padded with zero bits up to the range's maximum. Leading zeros change neither the parity
nor the last step, so a padded sequence is itself a valid parity instance of the maximal length
whose informative part is the last ``L`` steps. :meth:`Parity.split_at_length` gives a set at
exactly one length (for per-length tables).

``distractors > 0`` adds that many channels of random bits that do not count (the HSRU paper's
"embedded parity" stress test).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.data._util import check, split_generator


@dataclass(frozen=True)
class Parity:
    kind = "classification"
    target = "last"
    _name = "parity"

    train_min_length: int = 50
    train_max_length: int = 400
    test_min_length: int = 50
    test_max_length: int = 1000
    val_size: int = 2000
    test_size: int = 2000
    distractors: int = 0
    p_one: float = 0.5

    def __post_init__(self) -> None:
        n = self._name
        check(
            1 <= self.train_min_length <= self.train_max_length,
            n,
            f"need 1 <= train_min_length <= train_max_length, got {self.train_min_length}, {self.train_max_length}",
        )
        check(
            1 <= self.test_min_length <= self.test_max_length,
            n,
            f"need 1 <= test_min_length <= test_max_length, got {self.test_min_length}, {self.test_max_length}",
        )
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")
        check(self.distractors >= 0, n, f"distractors must be >= 0, got {self.distractors}")
        check(0.0 < self.p_one < 1.0, n, f"p_one must be in (0, 1), got {self.p_one}")

    @property
    def input_size(self) -> int:
        return 1 + self.distractors

    @property
    def output_size(self) -> int:
        return 2

    def _bits(self, n: int, length: int, generator: torch.Generator) -> torch.Tensor:
        return (torch.rand(n, length, self.input_size, generator=generator) < self.p_one).to(torch.float32)

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sequences of one random training length ``(n, L, input_size)``, labels ``(n,)``."""
        length = int(
            torch.randint(self.train_min_length, self.train_max_length + 1, (1,), generator=generator)
        )
        x = self._bits(n, length, generator)
        return x, labels(x)

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fixed set with lengths uniform in the split's range, left-padded with zeros to its max."""
        g = split_generator(name, seed)
        if name == "val":
            size, lo, hi = self.val_size, self.train_min_length, self.train_max_length
        else:
            size, lo, hi = self.test_size, self.test_min_length, self.test_max_length
        x = self._bits(size, hi, g)
        lengths = torch.randint(lo, hi + 1, (size,), generator=g)
        pad = torch.arange(hi)[None, :] < (hi - lengths)[:, None]
        x[..., 0][pad] = 0.0
        return x, labels(x)

    def split_at_length(self, name: str, seed: int, length: int, size: int | None = None):
        """A fixed set of ``size`` sequences of exactly ``length`` steps (per-length evaluation)."""
        g = split_generator(name, seed + 7919 * length)
        size = size or (self.val_size if name == "val" else self.test_size)
        x = self._bits(size, length, g)
        return x, labels(x)


@dataclass(frozen=True)
class TemporalParity(Parity):
    """HSRU paper's temporal parity: short sequences (curriculum 10 -> 60), tested at 60."""

    _name = "temporal_parity"

    train_min_length: int = 10
    train_max_length: int = 60
    test_min_length: int = 60
    test_max_length: int = 60


def labels(x: torch.Tensor) -> torch.Tensor:
    """Parity of channel 0 of ``x (batch, time, channels)``: ``(batch,)`` int64."""
    return x[..., 0].sum(dim=1).long() % 2
