"""Argument checks shared by the recurrent cells."""

from __future__ import annotations

from typing import Literal

import torch

Mode = Literal["scan", "sequential"]


def check_sizes(**sizes: int) -> None:
    """Raise ``ValueError`` naming every size that is not a positive integer."""
    bad = {name: value for name, value in sizes.items() if not isinstance(value, int) or value < 1}
    if bad:
        raise ValueError(f"sizes must be integers >= 1, got {bad}")


def check_mode(mode: str, allowed: tuple[str, ...] = ("scan", "sequential")) -> str:
    if mode not in allowed:
        raise ValueError(f"mode must be one of {allowed}, got {mode!r}")
    return mode


def check_sequence(x: torch.Tensor, input_size: int) -> None:
    if x.dim() != 3 or x.shape[-1] != input_size:
        raise ValueError(f"expected input (batch, time, {input_size}), got {tuple(x.shape)}")
    if x.shape[1] == 0:
        raise ValueError("the input sequence is empty (time = 0)")


def check_state(h0: torch.Tensor | None, batch: int, size: int, name: str = "h0") -> None:
    if h0 is not None and tuple(h0.shape) != (batch, size):
        raise ValueError(f"{name} must be (batch, {size}) = {(batch, size)}, got {tuple(h0.shape)}")
