"""The interface every task implements, so one trainer serves them all.

A task is a frozen dataclass whose fields are its options (validated from the recipe's ``task``
section, unknown keys refused). It produces float32 inputs ``(batch, time, input_size)`` and
targets whose form depends on ``kind`` and ``target``:

* ``kind="classification"``: integer class labels; ``target="last"`` gives ``(batch,)`` read at
  the last step, ``target="every_step"`` gives ``(batch, time)`` with ``-100`` where no label
  applies (ignored by the loss, like ``torch.nn.CrossEntropyLoss(ignore_index=-100)``).
* ``kind="regression"``: float targets ``(batch, output_size)`` (last) or
  ``(batch, time, output_size)`` (every step).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import torch

IGNORE_INDEX = -100


@runtime_checkable
class Task(Protocol):
    kind: Literal["classification", "regression"]
    target: Literal["last", "every_step"]

    @property
    def input_size(self) -> int: ...

    @property
    def output_size(self) -> int:
        """Number of classes (classification) or target dimensions (regression)."""
        ...

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """A training batch of ``n`` sequences (drawn on the fly, or from the training split)."""
        ...

    def split(self, name: Literal["val", "test"], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The fixed validation or test set (the same for every run with this seed)."""
        ...
