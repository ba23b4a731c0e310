"""The hardware profile: the network the accelerator runs, trainable as is.

``input -> one binary-gated recurrent layer -> linear readout of the last state -> logits``.
Kept deliberately separate from the papers' larger backbones: everything in it has a hardware
counterpart, so a trained ``HardwareNet`` exports to a bundle without approximation beyond
quantization.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU

CELLS: dict[str, type[CMRU]] = {"cmru": CMRU, "bmru": BMRU, "alphacmru": AlphaCMRU}


class HardwareNet(nn.Module):
    """One recurrent layer and a linear readout with last-step pooling.

    ``forward(x)`` takes ``(batch, time, input_size)`` and returns logits ``(batch, num_classes)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_classes: int,
        cell: Literal["cmru", "bmru", "alphacmru"] = "cmru",
        eps: float = 1.0,
        **cell_options,
    ) -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"unknown cell {cell!r}; choose one of {sorted(CELLS)}")
        self.cell_name = cell
        if cell == "bmru":
            self.rnn = BMRU(input_size, hidden_size, **cell_options)
        else:
            self.rnn = CELLS[cell](input_size, hidden_size, eps=eps, **cell_options)
        self.readout = nn.Linear(hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h_last = self.rnn(x)
        return self.readout(h_last)
