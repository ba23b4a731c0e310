"""Power-of-two fixed point: every scale is ``2**-frac`` so requantization is a shift.

``pow2_frac(max_abs, bits)`` picks the largest number of fractional bits such that ``max_abs``
still fits a signed ``bits``-bit integer; ``quantize`` rounds half-up and saturates.
"""

from __future__ import annotations

import math

import torch

from codesign.intmath import signed_range


def pow2_frac(max_abs: float, bits: int, *, limit: int = 32) -> int:
    """Fractional bits f such that round(max_abs * 2**f) <= 2**(bits-1) - 1, as many as possible."""
    hi = (1 << (bits - 1)) - 1
    if max_abs <= 0 or not math.isfinite(max_abs):
        return limit if max_abs == 0 else 0
    f = math.floor(math.log2(hi / max_abs))
    while f < limit and math.floor(max_abs * 2.0 ** (f + 1) + 0.5) <= hi:
        f += 1  # half-up rounding admits values up to hi + 1/2
    while f > -limit and math.floor(max_abs * 2.0**f + 0.5) > hi:
        f -= 1
    return max(-limit, min(limit, f))


def quantize(x: torch.Tensor, frac: int | torch.Tensor, bits: int) -> torch.Tensor:
    """Integer codes (int64) of ``x`` at scale ``2**-frac``: half-up rounding then saturation."""
    lo, hi = signed_range(bits)
    scale = torch.pow(2.0, torch.as_tensor(frac, dtype=torch.float64))
    return torch.floor(x.double() * scale + 0.5).clamp(lo, hi).to(torch.int64)


def quantize_input(x: torch.Tensor, bits: int, frac: int) -> torch.Tensor:
    """The input quantizer in torch (float64 values on the ``2**-frac`` grid, saturated to ``bits``).

    Same rule as :func:`codesign.golden.model.quantize_inputs`, written independently in torch so
    the deployed model and the golden model check each other.
    """
    return quantize(x, frac, bits).double() * 2.0**-frac
