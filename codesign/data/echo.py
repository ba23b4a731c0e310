"""Delayed echo (HSRU paper, sanity check): output the input signal ``delay`` steps back.

Regression at every step: the target of step ``t`` is ``x_{t - delay}`` (``0`` for ``t < delay``),
``(batch, length, channels)``. The signal is i.i.d. per step: ``uniform`` in ``[-1, 1]``,
standard ``gaussian``, or ``binary`` in ``{0, 1}``. The HSRU paper uses ``delay = 1`` and reports
the mean squared error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from codesign.data._util import check, split_generator


@dataclass(frozen=True)
class DelayedEcho:
    kind = "regression"
    target = "every_step"

    length: int = 100
    delay: int = 1
    channels: int = 1
    signal: Literal["uniform", "gaussian", "binary"] = "uniform"
    val_size: int = 1000
    test_size: int = 1000

    def __post_init__(self) -> None:
        n = "delayed_echo"
        check(self.length >= 1, n, f"length must be >= 1, got {self.length}")
        check(0 <= self.delay < self.length, n, f"delay must be in [0, length), got {self.delay}")
        check(self.channels >= 1, n, f"channels must be >= 1, got {self.channels}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")

    @property
    def input_size(self) -> int:
        return self.channels

    @property
    def output_size(self) -> int:
        return self.channels

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (n, self.length, self.channels)
        if self.signal == "uniform":
            x = torch.rand(shape, generator=generator) * 2 - 1
        elif self.signal == "gaussian":
            x = torch.randn(shape, generator=generator)
        else:
            x = torch.randint(0, 2, shape, generator=generator).to(torch.float32)
        y = torch.zeros_like(x)
        y[:, self.delay :] = x[:, : self.length - self.delay]
        return x, y

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        sizes = {"val": self.val_size, "test": self.test_size}
        return self.sample(sizes[name], split_generator(name, seed))
