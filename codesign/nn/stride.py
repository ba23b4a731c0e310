"""The strided-mean input front end: ``S`` consecutive input frames become one step of layer 0.

Long recordings (hundreds to thousands of frames) cost a recurrent layer accuracy and training
time; the accelerator shortens them in its input path for the price of one accumulator per
channel. The rule (``docs/integer-semantics.md``): the input codes of each window of ``S`` frames
are summed per channel and shifted right by ``log2 S``; a trailing partial window sums the frames
present. In float it is the mean of the window (zeros completing a partial one); on the input grid
(QAT, the deployed model) it is exactly the integer rule, with a straight-through gradient.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

MAX_STRIDE = 256


def check_stride(stride: int) -> int:
    """``stride`` if it is a power of two in ``1 .. 256``; a ``ValueError`` naming it otherwise."""
    if not isinstance(stride, int) or isinstance(stride, bool) or not 1 <= stride <= MAX_STRIDE:
        raise ValueError(f"input_stride must be an integer in 1 .. {MAX_STRIDE}, got {stride!r}")
    if stride & (stride - 1):
        raise ValueError(f"input_stride must be a power of two (1, 2, 4, ... {MAX_STRIDE}), got {stride}")
    return stride


AUTO_TARGET_STEPS = 64
"""``input_stride: auto`` keeps a series at least this many layer steps long."""
AUTO_MAX_STRIDE = 16
"""... and averages at most this many frames into one step."""


AUTO_KEEP_VARIANCE = 0.5
"""... and, where the data are known, only while the window means keep at least this fraction of
the series' variance: ACSF1's classes are in frame-to-frame changes (2-frame means keep 29 % of
its variance) and a 16-frame mean took it from 70 % to 37 %, where PigCVP's smooth pressure
curves (73 % kept at 16) gained 12.8 points."""


def auto_stride(length: int, kept: Mapping[int, float] | None = None) -> int:
    """The largest power of two (at most :data:`AUTO_MAX_STRIDE`) that leaves ``length`` frames at
    least :data:`AUTO_TARGET_STEPS` steps: long series are averaged down, short ones kept. With
    ``kept`` (``{stride: fraction of the training series' variance its window means keep}``, from
    :func:`codesign.data.series.variance_kept`) a stride whose means keep less than
    :data:`AUTO_KEEP_VARIANCE` is not taken: high-frequency series stay at full rate."""
    stride = 1
    while stride * 2 <= AUTO_MAX_STRIDE and length // (stride * 2) >= AUTO_TARGET_STEPS:
        if kept is not None and kept.get(stride * 2, 0.0) < AUTO_KEEP_VARIANCE:
            break
        stride *= 2
    return stride


def window_sums(x: torch.Tensor, stride: int) -> torch.Tensor:
    """``(B, T, F)`` -> ``(B, ceil(T / S), F)``: each window's sum (zeros complete the last)."""
    batch, steps, features = x.shape
    windows = -(-steps // stride)
    if windows * stride != steps:
        x = nn.functional.pad(x, (0, 0, 0, windows * stride - steps))
    return x.reshape(batch, windows, stride, features).sum(dim=2)


class InputStride(nn.Module):
    """Mean of every window of ``stride`` frames; with ``frac`` set, floored on the ``2**-frac`` grid.

    ``frac`` is the input format's: the inputs are then codes times ``2**-frac``, and
    ``floor(sum_codes / S) * 2**-frac`` is the hardware's shifted sum. The floor passes the
    gradient straight through (the float mean's). Stride 1 is the identity.
    """

    def __init__(self, stride: int = 1, frac: int | None = None) -> None:
        super().__init__()
        self.stride, self.frac = check_stride(stride), frac

    def extra_repr(self) -> str:
        return f"stride={self.stride}, frac={self.frac}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            return x
        mean = window_sums(x, self.stride) / self.stride
        if self.frac is None:
            return mean
        scale = 2.0**self.frac
        q = torch.floor(mean.detach() * scale) / scale
        return mean + (q - mean).detach()
