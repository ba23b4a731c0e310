"""The CMRU paper's common backbone (App. F.1-F.6), with any recurrent cell inside.

::

    x_hat --encoder (eq. 27)--> x --[+ sinusoidal PE, Linear] (eq. 26)-->
        r x [ x = v1 * x + CellBlock(Norm(x));  x = v2 * x + GLU-MLP(Norm(x)) ]   (pre-norm, learnable v)
        --> pooling (last | mean | none) --> decoder (eq. 28) --> y_hat

    CellBlock(x) = Norm(Linear(Cell(x))) * sigmoid(Linear(x))                          (eq. 25)

This is the training architecture of the papers' experiments; it is deliberately separate from
the hardware profile (:class:`codesign.nn.hardware.HardwareStack`), which is what exports to a bundle.

``drop`` removes elements for ablations (which of them carry the accuracy at small sizes):
``enc_mlp`` (the encoder's GLU-MLP), ``pe`` (positional encoding), ``norm`` (every LayerNorm),
``gate`` (the cell block's sigmoid output gate), ``mlp`` (the per-step GLU-MLP blocks), ``residual``
(the skip paths: ``x = sub(x)``) and ``dec_mlp`` (the decoder's GLU-MLP).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Literal

import torch
from torch import nn

Pooling = Literal["last", "mean", "none"]

PARTS = ("enc_mlp", "pe", "norm", "gate", "mlp", "residual", "dec_mlp")
"""Backbone elements an ablation may remove (``Backbone(drop=...)``)."""


class GLUMLP(nn.Module):
    """``Linear(Dropout(GLU(Linear(x))))`` with hidden width ``expansion * dim`` (App. F.3)."""

    def __init__(self, dim: int, expansion: int = 4, dropout: float = 0.0) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, 2 * expansion * dim)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(expansion * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(nn.functional.glu(self.inp(x), dim=-1)))


class CellBlock(nn.Module):
    """Eq. 25: gated, normalised projection of the cell's state sequence."""

    def __init__(self, cell: nn.Module, dim: int, *, norm: bool = True, gate: bool = True) -> None:
        super().__init__()
        self.cell = cell
        # cells expose the width of what they return as `output_size` when it is not `hidden_size`
        state_size = getattr(cell, "output_size", None) or cell.hidden_size
        self.proj = nn.Linear(state_size, dim)
        self.norm = nn.LayerNorm(dim) if norm else nn.Identity()
        self.gate = nn.Linear(dim, dim) if gate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.cell(x)
        y = self.norm(self.proj(h))
        return y if self.gate is None else y * torch.sigmoid(self.gate(x))


class Residual(nn.Module):
    """Pre-norm residual with a learnable per-feature scale: ``v * x + sub(Norm(x))``."""

    def __init__(self, sub: nn.Module, dim: int, *, norm: bool = True, skip: bool = True) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim) if norm else nn.Identity()
        self.sub = sub
        self.scale = nn.Parameter(torch.ones(dim)) if skip else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.sub(self.norm(x))
        return y if self.scale is None else self.scale * x + y


def sinusoidal_encoding(steps: int, dim: int, device=None) -> torch.Tensor:
    """``(steps, dim)`` sinusoidal positional encoding (Vaswani et al.)."""
    pos = torch.arange(steps, device=device, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(steps, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return pe


class Backbone(nn.Module):
    """Encoder, ``blocks`` x (cell block + MLP block), pooling, decoder.

    Parameters
    ----------
    input_size, output_size:
        Task input features and outputs (classes or regression targets).
    make_cell:
        ``make_cell(dim)`` returns a recurrent module taking ``(batch, time, dim)`` and returning
        ``(states, last)``.
    dim:
        Model dimension m (App. F.1 uses 256).
    pooling:
        ``last``, ``mean`` or ``none`` (per-step outputs for sequence-to-sequence tasks).
    pe_dim:
        Width of the sinusoidal positional encoding concatenated to the input (0 disables it).
    drop:
        Elements to remove (a subset of :data:`PARTS`), for ablations.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        make_cell: Callable[[int], nn.Module],
        *,
        dim: int = 64,
        blocks: int = 1,
        pooling: Pooling = "last",
        pe_dim: int = 16,
        dropout: float = 0.0,
        drop: Iterable[str] = (),
    ) -> None:
        super().__init__()
        drop = frozenset(drop)
        unknown = sorted(drop - set(PARTS))
        if unknown:
            raise ValueError(
                f"backbone elements {unknown} do not exist; the removable ones are {list(PARTS)}"
            )
        self.pooling = pooling
        self.pe_dim = 0 if "pe" in drop else pe_dim
        norm, skip = "norm" not in drop, "residual" not in drop
        self.enc_in = nn.Linear(input_size, dim)
        self.enc_mlp = None if "enc_mlp" in drop else GLUMLP(dim, dropout=dropout)
        self.pe_proj = nn.Linear(dim + self.pe_dim, dim) if self.pe_dim else nn.Identity()
        layers: list[nn.Module] = []
        for _ in range(blocks):
            block = CellBlock(make_cell(dim), dim, norm=norm, gate="gate" not in drop)
            layers.append(Residual(block, dim, norm=norm, skip=skip))
            if "mlp" not in drop:
                layers.append(Residual(GLUMLP(dim, dropout=dropout), dim, norm=norm, skip=skip))
        self.blocks = nn.Sequential(*layers)
        self.dec_in = nn.Linear(dim, output_size)
        self.dec_mlp = (
            None
            if "dec_mlp" in drop
            else GLUMLP(output_size, expansion=max(1, 4 * dim // max(output_size, 1) // 4), dropout=dropout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.enc_in(x)
        if self.enc_mlp is not None:
            x = x + self.enc_mlp(x)
        if self.pe_dim:
            pe = sinusoidal_encoding(x.shape[1], self.pe_dim, x.device).expand(x.shape[0], -1, -1)
            x = self.pe_proj(torch.cat([x, pe], dim=-1))
        y = self.blocks(x)
        if self.pooling == "last":
            y = y[:, -1]
        elif self.pooling == "mean":
            y = y.mean(dim=1)
        y = self.dec_in(y)
        return y if self.dec_mlp is None else y + self.dec_mlp(y)
