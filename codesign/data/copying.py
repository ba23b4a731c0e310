"""Copying tasks: selective copying (Gu & Dao 2024; mGRADE App. B.5) and copying memory
(Le et al. 2015; suRNN paper App. D.0.1). Both give per-step class targets, ``-100`` elsewhere.

Selective copying
    ``num_tokens`` content symbols (from ``vocab``) are scattered at random, order-preserving
    positions among ``length`` steps of blank (distractor) symbols, then ``num_tokens`` marker
    steps follow. At the k-th marker the target is the k-th content symbol. Inputs are one-hot
    over ``vocab + 2`` symbols (content 0..vocab-1, blank = vocab, marker = vocab + 1); sequences
    have ``length + num_tokens`` steps (mGRADE: length 4096, 16 tokens, vocab 16).

Copying memory
    ``prefix`` symbols from ``alphabet`` (classes 1..alphabet), then ``delay - 1`` blanks, a
    delimiter, then ``prefix`` more blanks during which the prefix must be reproduced: sequences
    have ``delay + 2 * prefix`` steps. Inputs are one-hot over ``alphabet + 2`` symbols (blank 0,
    symbols 1..alphabet, delimiter alphabet + 1); classes are ``alphabet + 1`` (blank 0 and the
    symbols). ``supervise="recall"`` (default) labels only the ``prefix`` recall steps;
    ``supervise="all"`` labels every step, blanks included (Arjovsky et al.'s loss).
    ``delay_noise`` fills the delay with random symbols instead of blanks (the suRNN paper's
    robustness check; the delimiter still marks the recall).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from codesign.data._util import check, one_hot, split_generator
from codesign.data.base import IGNORE_INDEX


@dataclass(frozen=True)
class SelectiveCopying:
    kind = "classification"
    target = "every_step"

    length: int = 4096
    num_tokens: int = 16
    vocab: int = 16
    val_size: int = 256
    test_size: int = 256

    def __post_init__(self) -> None:
        n = "selective_copying"
        check(self.num_tokens >= 1, n, f"num_tokens must be >= 1, got {self.num_tokens}")
        check(
            self.length >= self.num_tokens,
            n,
            f"length ({self.length}) must be >= num_tokens ({self.num_tokens})",
        )
        check(self.vocab >= 2, n, f"vocab must be >= 2, got {self.vocab}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return self.vocab + 2

    @property
    def output_size(self) -> int:
        return self.vocab

    @property
    def blank(self) -> int:
        return self.vocab

    @property
    def marker(self) -> int:
        return self.vocab + 1

    def tokens(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Symbol indices ``(n, length + num_tokens)`` and the content symbols ``(n, num_tokens)``."""
        m, steps = self.num_tokens, self.length + self.num_tokens
        content = torch.randint(0, self.vocab, (n, m), generator=generator)
        # m distinct positions among `length`, sorted: the m smallest of random keys.
        keys = torch.rand(n, self.length, generator=generator)
        pos = keys.topk(m, dim=1, largest=False).indices.sort(dim=1).values
        seq = torch.full((n, steps), self.blank)
        seq.scatter_(1, pos, content)
        seq[:, self.length :] = self.marker
        return seq, content

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        seq, content = self.tokens(n, generator)
        y = torch.full_like(seq, IGNORE_INDEX)
        y[:, self.length :] = content
        return one_hot(seq, self.input_size), y

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        sizes = {"val": self.val_size, "test": self.test_size}
        return self.sample(sizes[name], split_generator(name, seed))


@dataclass(frozen=True)
class CopyingMemory:
    kind = "classification"
    target = "every_step"

    delay: int = 100
    prefix: int = 10
    alphabet: int = 8
    supervise: Literal["recall", "all"] = "recall"
    delay_noise: bool = False
    val_size: int = 1000
    test_size: int = 1000

    def __post_init__(self) -> None:
        n = "copying_memory"
        check(self.delay >= 1, n, f"delay must be >= 1, got {self.delay}")
        check(self.prefix >= 1, n, f"prefix must be >= 1, got {self.prefix}")
        check(self.alphabet >= 2, n, f"alphabet must be >= 2, got {self.alphabet}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return self.alphabet + 2

    @property
    def output_size(self) -> int:
        return self.alphabet + 1

    @property
    def length(self) -> int:
        return self.delay + 2 * self.prefix

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``(n, delay + 2 prefix, alphabet + 2)``, targets ``(n, delay + 2 prefix)``."""
        p, steps = self.prefix, self.length
        symbols = torch.randint(1, self.alphabet + 1, (n, p), generator=generator)
        if self.delay_noise:
            seq = torch.randint(1, self.alphabet + 1, (n, steps), generator=generator)
            seq[:, steps - p :] = 0
        else:
            seq = torch.zeros(n, steps, dtype=torch.long)
        seq[:, :p] = symbols
        seq[:, p + self.delay - 1] = self.alphabet + 1  # delimiter
        fill = 0 if self.supervise == "all" else IGNORE_INDEX
        y = torch.full((n, steps), fill, dtype=torch.long)
        y[:, steps - p :] = symbols
        return one_hot(seq, self.input_size), y

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        sizes = {"val": self.val_size, "test": self.test_size}
        return self.sample(sizes[name], split_generator(name, seed))
