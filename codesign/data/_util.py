"""Small helpers shared by the task modules (seeding, one-hot encoding, option checks)."""

from __future__ import annotations

import numpy as np
import torch

from codesign.errors import CodesignError

# Validation and test sets are drawn from their own seed streams, far from any training seed.
SPLIT_OFFSETS = {"val": 1_000_003, "test": 2_000_003}


def split_generator(name: str, seed: int) -> torch.Generator:
    """The torch generator of the fixed ``val`` or ``test`` set for this run seed."""
    if name not in SPLIT_OFFSETS:
        raise CodesignError(f"unknown split {name!r}; splits: {sorted(SPLIT_OFFSETS)}")
    return torch.Generator().manual_seed(seed + SPLIT_OFFSETS[name])


def numpy_rng(generator: torch.Generator) -> np.random.Generator:
    """A numpy generator seeded from (and advancing) a torch generator: deterministic per draw."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator).item())
    return np.random.default_rng(seed)


def one_hot(index: torch.Tensor, size: int) -> torch.Tensor:
    """Float32 one-hot encoding of an integer tensor."""
    return torch.nn.functional.one_hot(index.long(), size).to(torch.float32)


def check(condition: bool, task: str, message: str) -> None:
    """Raise a one-line :class:`CodesignError` about a task option unless ``condition`` holds."""
    if not condition:
        raise CodesignError(f"task {task!r}: {message}")


class FixedSplits:
    """``sample`` and ``split`` for datasets with fixed train / val / test arrays.

    A subclass provides ``_split_arrays(name) -> (x, y)``; batches are drawn with replacement from
    the training split, and ``split`` ignores the run seed (the splits are fixed by the options).
    """

    def _split_arrays(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError  # each dataset says where its arrays live

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` training sequences drawn with replacement."""
        x, y = self._split_arrays("train")
        idx = torch.randint(0, len(y), (n,), generator=generator)
        return x[idx], y[idx]

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``train``, ``val`` or ``test`` (fixed by the options: ``seed`` is not used)."""
        if name not in ("train", "val", "test"):
            raise CodesignError(f"unknown split {name!r}; splits: train, val, test")
        x, y = self._split_arrays(name)
        return x.clone(), y.clone()
