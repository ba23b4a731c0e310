"""Training-time augmentation of ``(batch, time, channels)`` series, for small data sets.

A set of 27-40 training series is memorised in a few hundred iterations (training loss near
1e-5) and the model stops learning anything that transfers. The transforms below are the ones
the time-series augmentation surveys find safe for classification (Um et al. 2017; Le Guennec
et al. 2016; Iwana and Uchida 2021): each keeps the class of a series while changing what a
memorising model would latch onto.

* ``scaling``: every channel of a series multiplied by ``1 + scaling * N(0, 1)``.
* ``magnitude_warp``: multiplied by a smooth random curve (``knots`` knots, ``1 + magnitude_warp *
  N(0, 1)`` each, linear between them).
* ``time_warp``: resampled on a smooth random time axis (the local speed ``1 + time_warp *
  N(0, 1)`` per knot, clamped positive, rescaled to span the series).
* ``window_slice``: a random window of ``window_slice`` of the length, stretched to the length.

Each series of a batch is transformed with probability ``probability`` (default 0.5) and trains as
it is otherwise. A model that only ever sees transformed series can learn features the raw series
do not have: on ACSF1 (1,460 frames), every series stretched and resampled, the trained network
scored 75 % on transformed training series and 13 % on the same series as they are.

The jitter of the surveys (additive noise) is ``train.input_noise``. Magnitude transforms touch
only non-silent frames (padding stays zero); time transforms resample the whole padded series,
so they need one label per series and are refused for per-step labels. Every draw comes from the
run's generator: the same recipe and seed give the same batches.
"""

from __future__ import annotations

import torch

from codesign.errors import CodesignError

__all__ = ["augment_batch"]


def _knot_curve(
    batch: int, channels: int, knots: int, length: int, std: float, gen: torch.Generator
) -> torch.Tensor:
    """``(batch, length, channels)`` of ``1 + std * N(0, 1)`` at ``knots`` knots, linear between them."""
    values = 1.0 + std * torch.randn(batch, channels, knots, generator=gen)
    curve = torch.nn.functional.interpolate(values, size=length, mode="linear", align_corners=True)
    return curve.transpose(1, 2)


def _resample(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``x`` read at fractional time ``positions`` ``(batch, time)`` by linear interpolation."""
    length = x.shape[1]
    positions = positions.clamp(0, length - 1)
    lo = positions.floor().long()
    hi = (lo + 1).clamp(max=length - 1)
    frac = (positions - lo).unsqueeze(-1).to(x.dtype)
    index = lambda i: i.unsqueeze(-1).expand(-1, -1, x.shape[2])  # noqa: E731
    return torch.gather(x, 1, index(lo)) * (1 - frac) + torch.gather(x, 1, index(hi)) * frac


def _warped_positions(batch: int, length: int, knots: int, std: float, gen: torch.Generator) -> torch.Tensor:
    """Monotone time axes ``(batch, length)`` from 0 to ``length - 1`` with a random local speed."""
    speed = _knot_curve(batch, 1, knots, length, std, gen)[..., 0].clamp(min=0.1)
    axis = torch.cumsum(speed, dim=1)
    axis = (axis - axis[:, :1]) / (axis[:, -1:] - axis[:, :1]).clamp(min=1e-9)
    return axis * (length - 1)


def _sliced_positions(batch: int, length: int, keep: float, gen: torch.Generator) -> torch.Tensor:
    """A window of ``keep`` of the length at a random start, stretched over the whole length."""
    span = keep * (length - 1)
    start = torch.rand(batch, 1, generator=gen) * (length - 1 - span)
    return start + torch.linspace(0, 1, length).unsqueeze(0) * span


def augment_batch(x: torch.Tensor, y: torch.Tensor, spec, gen: torch.Generator) -> torch.Tensor:
    """``x`` transformed by the augmentation ``spec`` (a :class:`codesign.train.recipe.AugmentSpec`)."""
    if not spec.active:
        return x
    batch, length, channels = x.shape
    # drawn first and only when it matters: probability 1 gives the batches of every series transformed
    chosen = torch.rand(batch, generator=gen) < spec.probability if spec.probability < 1 else None
    silent = ~(x != 0).any(dim=-1, keepdim=True)
    out = x
    if spec.scaling > 0:
        out = out * (1.0 + spec.scaling * torch.randn(batch, 1, channels, generator=gen))
    if spec.magnitude_warp > 0:
        out = out * _knot_curve(batch, channels, spec.knots, length, spec.magnitude_warp, gen)
    out = out.masked_fill(silent, 0.0)
    if spec.time_warp > 0 or spec.window_slice < 1:
        if y.dim() != 1:
            raise CodesignError(
                "train.augment: time_warp and window_slice need one label per series; "
                "this task labels every step (set them to 0 and 1)"
            )
        if spec.time_warp > 0:
            out = _resample(out, _warped_positions(batch, length, spec.knots, spec.time_warp, gen))
        if spec.window_slice < 1:
            out = _resample(out, _sliced_positions(batch, length, spec.window_slice, gen))
    return out if chosen is None else torch.where(chosen[:, None, None], out, x)
