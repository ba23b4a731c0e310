"""Flip-flop language modelling (Liu et al. 2023, as used in mGRADE App. B.4 and Definition 1).

Alphabet ``{w, r, i, 0, 1}`` (one-hot, in that order: input_size 5). A string alternates
instruction and value symbols, ``length / 2`` pairs. The first instruction is ``w``; with
``end_with_read`` the last one is ``r`` (so every string has a read), every other instruction is
``i`` with probability ``p_ignore`` and ``w`` or ``r`` with ``(1 - p_ignore) / 2`` each. Values are
uniform random bits, except that the value after an ``r`` equals the value after the most recent
``w``. Training uses ``p_ignore = 0.8`` (expected ``w``-``r`` distance 10 steps); the test set
uses ``test_p_ignore = 0.98`` (sparse, about 100 steps), as in mGRADE; validation stays
in-distribution.

Targets are per step (``target="every_step"``), ``-100`` where no label applies:

* ``targets="read"`` (default): at every ``r`` position the class is the value that must follow
  (0 or 1): the recall accuracy the mGRADE paper reports (chance 50%).
* ``targets="prediction_set"``: at every position the class of the set of valid next symbols
  (Definition 2): 0 = ``{0, 1}`` (after ``w`` or ``i``), 1 = ``{0}`` and 2 = ``{1}`` (after ``r``),
  3 = ``{w, r, i}`` (after a value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from codesign.data._util import check, one_hot, split_generator
from codesign.data.base import IGNORE_INDEX

W, R, IGN, ZERO, ONE = range(5)
SYMBOLS = ("w", "r", "i", "0", "1")


@dataclass(frozen=True)
class FlipFlop:
    kind = "classification"
    target = "every_step"

    length: int = 512
    p_ignore: float = 0.8
    test_p_ignore: float = 0.98
    end_with_read: bool = True
    targets: Literal["read", "prediction_set"] = "read"
    val_size: int = 1000
    test_size: int = 1000

    def __post_init__(self) -> None:
        check(
            self.length >= 4 and self.length % 2 == 0,
            "flip_flop",
            f"length must be even and >= 4, got {self.length}",
        )
        for key in ("p_ignore", "test_p_ignore"):
            v = getattr(self, key)
            check(0.0 <= v < 1.0, "flip_flop", f"{key} must be in [0, 1), got {v}")
        check(self.val_size >= 1 and self.test_size >= 1, "flip_flop", "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return len(SYMBOLS)

    @property
    def output_size(self) -> int:
        return 2 if self.targets == "read" else 4

    def tokens(self, n: int, generator: torch.Generator, p_ignore: float | None = None) -> torch.Tensor:
        """``n`` flip-flop strings as symbol indices ``(n, length)`` (0..4 = w, r, i, 0, 1)."""
        p_i = self.p_ignore if p_ignore is None else p_ignore
        pairs = self.length // 2
        u = torch.rand(n, pairs, generator=generator)
        p_w = (1.0 - p_i) / 2
        instr = torch.where(u < p_w, W, torch.where(u < 2 * p_w, R, IGN))
        instr[:, 0] = W
        if self.end_with_read:
            instr[:, -1] = R
        bits = torch.randint(0, 2, (n, pairs), generator=generator)
        pos = torch.arange(pairs).expand(n, pairs)
        last_w = torch.where(instr == W, pos, torch.zeros_like(pos)).cummax(dim=1).values
        values = torch.where(instr == R, bits.gather(1, last_w), bits)
        return torch.stack([instr, values + ZERO], dim=2).reshape(n, self.length)

    def encode(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One-hot inputs and per-step targets for symbol strings ``(n, length)``."""
        x = one_hot(tokens, len(SYMBOLS))
        nxt = torch.roll(tokens, -1, dims=1)  # the symbol that follows (last position: unused)
        is_read = tokens == R
        if self.targets == "read":
            y = torch.where(is_read, nxt - ZERO, torch.full_like(tokens, IGNORE_INDEX))
        else:
            is_value = tokens >= ZERO
            y = torch.where(is_value, 3, torch.where(is_read, 1 + nxt - ZERO, 0))
        return x, y

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` strings ``(n, length, 5)`` and per-step targets ``(n, length)``."""
        return self.encode(self.tokens(n, generator))

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = split_generator(name, seed)
        if name == "val":
            return self.encode(self.tokens(self.val_size, g))
        return self.encode(self.tokens(self.test_size, g, self.test_p_ignore))

    def recall_distance_set(self, seed: int, distance: int, size: int = 500):
        """mGRADE App. B.4.3: ``w v``, then ``distance`` ``i`` pairs, then ``r v`` (recall at the end).

        Sequences have ``2 * (distance + 2)`` steps; only the final ``r`` is labelled in ``read``
        mode.
        """
        g = split_generator("test", seed + 104_729 * (distance + 1))
        pairs = distance + 2
        instr = torch.full((size, pairs), IGN)
        instr[:, 0], instr[:, -1] = W, R
        bits = torch.randint(0, 2, (size, pairs), generator=g)
        bits[:, -1] = bits[:, 0]
        tokens = torch.stack([instr, bits + ZERO], dim=2).reshape(size, 2 * pairs)
        return self.encode(tokens)


def read_mask(x: torch.Tensor) -> torch.Tensor:
    """Positions holding an ``r`` in one-hot inputs ``(batch, time, 5)``: where recall is scored."""
    return x[..., R] > 0.5
