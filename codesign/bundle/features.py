"""Random-feature counting layers: the fixed kernels and the spec of a feature bank.

A feature bank is MiniRocket's transform in integer form, built from pieces the family already
has (a dilated delay line, a threshold, a counter):

- a *pair* ``p`` is one kernel at one dilation over a fixed subset of the input channels
  (``mask[p]``): ``s_p[t] = sum_c mask[p, c] * x[t, c]`` and
  ``y_p[t] = sum_i w_k[i] * s_p[t - i * d]`` (zero before the first step), with the 9-tap kernel
  ``w_k`` of weights ``-1`` and ``2`` taken from its index ``k`` alone: no weight memory;
- each pair feeds ``biases`` counting units: unit ``j = p * biases + b`` adds ``alpha[j]``
  (a small unsigned integer, the feature's scale) at every step where ``y_p[t] > threshold[j]``,
  saturating at ``state_bits``. A count of ``alpha = 1`` is the number of positive values of the
  biased convolution, ``T`` times MiniRocket's PPV.

The readout reads the units' last states. ``docs/integer-semantics.md`` states the same rules.
"""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from codesign.bundle.spec import FORMAT_VERSION, MAX_DATAPATH_BITS, InputSpec
from codesign.intmath import bits_for_magnitude, signed_range

KERNEL_TAPS = 9
"""Taps of every kernel (MiniRocket's length 9)."""
KERNEL_POSITIONS: tuple[tuple[int, int, int], ...] = tuple(itertools.combinations(range(KERNEL_TAPS), 3))
"""Kernel ``k`` weighs taps ``KERNEL_POSITIONS[k]`` by 2 and the other six by -1 (84 kernels)."""
KERNEL_COUNT = len(KERNEL_POSITIONS)
KERNEL_GAIN = 12
"""``sum_i |w_k[i]|``: the largest magnitude of ``y_p`` over that of ``s_p``."""


def kernel_weights(k: int) -> np.ndarray:
    """The 9 weights of kernel ``k`` (tap ``i`` multiplies ``s[t - i * d]``)."""
    w = np.full(KERNEL_TAPS, -1, dtype=np.int64)
    w[list(KERNEL_POSITIONS[k])] = 2
    return w


class FeatureSpec(BaseModel):
    """One bank of random-feature counting units (``manifest.yaml`` key ``features``).

    ``dilations`` lists the dilation of each group of pairs; group ``g`` holds kernels
    ``0 .. kernels - 1``, so pair ``p = g * kernels + k`` runs kernel ``k`` at ``dilations[g]``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: int = Field(ge=1, le=4096)
    dilations: list[int] = Field(min_length=1, max_length=64)
    kernels: int = Field(default=KERNEL_COUNT, ge=1, le=KERNEL_COUNT)
    biases: int = Field(default=1, ge=1, le=64, description="counting units per pair")
    alpha_bits: int = Field(default=8, ge=1, le=16, description="unsigned width of a unit's increment")
    state_bits: int = Field(default=24, ge=2, le=32, description="signed width of a unit's count (saturates)")

    @model_validator(mode="after")
    def _dilations_positive(self) -> FeatureSpec:
        bad = [d for d in self.dilations if not 1 <= d <= 4096]
        if bad:
            raise ValueError(f"dilations must lie in 1 .. 4096, got {bad[0]}")
        return self

    @property
    def pairs(self) -> int:
        return len(self.dilations) * self.kernels

    @property
    def size(self) -> int:
        """Counting units: what the readout reads."""
        return self.pairs * self.biases

    @property
    def span(self) -> int:
        """Frames the delay line must hold: the widest kernel reaches ``8 * d`` steps back."""
        return (KERNEL_TAPS - 1) * max(self.dilations) + 1

    def pair_dilation(self) -> np.ndarray:
        """Dilation of every pair ``(pairs,)``."""
        return np.repeat(np.asarray(self.dilations, dtype=np.int64), self.kernels)

    def pair_kernel(self) -> np.ndarray:
        """Kernel index of every pair ``(pairs,)``."""
        return np.tile(np.arange(self.kernels, dtype=np.int64), len(self.dilations))

    def conv_bits(self, input_bits: int) -> int:
        """Signed width of ``y_p``: every channel at full scale, every tap at its weight."""
        return bits_for_magnitude(KERNEL_GAIN * self.channels * (1 << (input_bits - 1)))

    def array_table(self, input_bits: int) -> dict[str, tuple[tuple[int, ...], int]]:
        """The bank's arrays: name -> (shape, signed width) (the mask is 0/1, alpha unsigned)."""
        return {
            "features.mask": ((self.pairs, self.channels), 2),
            "features.threshold": ((self.size,), self.conv_bits(input_bits)),
            "features.alpha": ((self.size,), self.alpha_bits + 1),
        }


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FeatureReadout(_Strict):
    """The linear readout over the units' last states: ``logits = W @ h + b``."""

    classes: int = Field(ge=1, le=4096)
    weight_bits: int = Field(default=8, ge=2, le=16)
    bias_bits: int = Field(default=32, ge=2, le=40)


class FeatureManifest(_Strict):
    """``manifest.yaml`` of a random-feature network (``kind: features``): input, bank, readout.

    The input format is the recurrent bundles' (:class:`~codesign.bundle.spec.InputSpec`) at
    stride 1: the bank reads every frame.
    """

    format_version: int
    kind: Literal["features"]
    name: str = Field(min_length=1)
    input: InputSpec
    features: FeatureSpec
    readout: FeatureReadout
    checksums: dict[str, str] = Field(default_factory=dict)
    provenance: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> FeatureManifest:
        if self.format_version != FORMAT_VERSION:
            raise ValueError(f"format_version {self.format_version} is not {FORMAT_VERSION}")
        if self.features.channels != self.input.size:
            raise ValueError(
                f"features.channels {self.features.channels} must equal input.size {self.input.size}"
            )
        if self.input.stride != 1:
            raise ValueError(f"input.stride {self.input.stride}: a feature bank reads every frame (stride 1)")
        if self.logit_bits > MAX_DATAPATH_BITS:
            raise ValueError(
                f"these formats need {self.logit_bits}-bit logits; at most {MAX_DATAPATH_BITS} bits are "
                "supported: reduce features.state_bits or readout.weight_bits"
            )
        return self

    @property
    def logit_bits(self) -> int:
        r, f = self.readout, self.features
        return bits_for_magnitude(
            f.size * (1 << (r.weight_bits - 1)) * (1 << (f.state_bits - 1)) + (1 << (r.bias_bits - 1))
        )

    def array_table(self) -> dict[str, tuple[tuple[int, ...], int]]:
        """Every array of ``weights.npz``: name -> (shape, signed width)."""
        r = self.readout
        return self.features.array_table(self.input.bits) | {
            "readout.weight": ((r.classes, self.features.size), r.weight_bits),
            "readout.bias": ((r.classes,), r.bias_bits),
        }


def array_range(manifest: FeatureManifest, name: str, bits: int) -> tuple[int, int]:
    """The allowed integer range of array ``name``."""
    if name == "features.mask":
        return 0, 1
    if name == "features.alpha":
        return 0, (1 << manifest.features.alpha_bits) - 1
    return signed_range(bits)
