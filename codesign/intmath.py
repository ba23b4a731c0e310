"""Integer helpers shared by the golden model, the torch deployed model and the RTL generator.

The rules themselves are documented in ``docs/integer-semantics.md``; this module holds the
arithmetic that sizes datapaths so that every consumer derives widths the same way.
"""

from __future__ import annotations

import numpy as np


def signed_range(bits: int) -> tuple[int, int]:
    """Inclusive range of a two's complement integer of ``bits`` bits."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def bits_for_magnitude(max_abs: int) -> int:
    """Signed width that holds every integer in ``[-max_abs, max_abs]``."""
    return int(max_abs).bit_length() + 1


def accumulator_bits(n_inputs: int, weight_bits: int, input_bits: int, bias_bits: int) -> int:
    """Width of ``sum_j W[i, j] x[j] + b[i]``: large enough that no input can overflow it."""
    max_abs = n_inputs * (1 << (weight_bits - 1)) * (1 << (input_bits - 1)) + (1 << (bias_bits - 1))
    return bits_for_magnitude(max_abs)


def saturate(values: np.ndarray, bits: int) -> np.ndarray:
    lo, hi = signed_range(bits)
    return np.clip(values, lo, hi)
