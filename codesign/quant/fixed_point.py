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


def keep_rest_gates(
    q_cand: torch.Tensor, q_thr: torch.Tensor, b_cand: torch.Tensor, b_thr: torch.Tensor, bits: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bias codes of a first CMRU/BMRU layer whose zero-input gates match the float biases'.

    On a zero input (most steps of an event-driven stream) a first-layer accumulator holds only its
    bias, so the gate is ``|b_cand| >= |b_thr|``. Rounding both to the grid can turn a float
    near-tie into a tie that opens the gate on every silent step; with eps = 1 that neuron then
    drifts by alpha per step and the state is lost (the copy-first demo model at 7-bit weights:
    100% -> 14%). Half-up rounding keeps ``|round(.)|`` monotone except at ties, so one code of
    nudge restores the float decision: when a tie opened the gate, the threshold moves away from
    zero (at the end of its range, the candidate towards zero); when rounding closed an open gate,
    the candidate moves away from zero (else the threshold towards zero). The export and QAT both
    use this, so QAT trains on the codes the export writes.
    """
    lo, hi = signed_range(bits)
    want = b_cand.detach().abs() >= b_thr.detach().abs()
    wrong = (q_cand.abs() >= q_thr.abs()) != want
    sc = torch.where(b_cand.detach() >= 0, 1, -1).to(q_cand.dtype)
    st = torch.where(b_thr.detach() >= 0, 1, -1).to(q_thr.dtype)
    t_out, c_out = q_thr + st, q_cand + sc
    t_ok = (t_out >= lo) & (t_out <= hi)
    c_ok = (c_out >= lo) & (c_out <= hi)
    close, open_ = wrong & ~want, wrong & want
    cand = torch.where(close & ~t_ok, q_cand - sc, torch.where(open_ & c_ok, c_out, q_cand))
    thr = torch.where(close & t_ok, t_out, torch.where(open_ & ~c_ok, q_thr - st, q_thr))
    return cand, thr
