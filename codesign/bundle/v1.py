"""Format 1 of ``manifest.yaml``: one CMRU/BMRU layer with flat ``formats`` (the spine's bundle).

Still the shape in which the RTL and analog back ends see a bundle (:mod:`codesign.bundle.spine`);
files in this format are read and upgraded to format 2 by :mod:`codesign.bundle.io`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codesign.intmath import accumulator_bits, bits_for_magnitude

FORMAT_VERSION = 1

MAX_DATAPATH_BITS = 53
"""Widest accumulator or logit: float64 represents every integer below 2**53 exactly."""

CELLS = ("cmru", "bmru")
"""Recurrent cells the version-1 bundle can describe (the hardware datapath of the spine)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntFormat(_Strict):
    bits: int = Field(ge=2, le=32)


class InputFormat(_Strict):
    bits: int = Field(ge=2, le=16)
    frac: int = Field(ge=-16, le=16)
    overflow: Literal["saturate", "error"] = "saturate"


class Formats(_Strict):
    input: InputFormat = InputFormat(bits=8, frac=4)
    weight: IntFormat = IntFormat(bits=8)
    bias: IntFormat = IntFormat(bits=16)
    alpha: IntFormat = IntFormat(bits=8)
    state: IntFormat = IntFormat(bits=16)
    readout_weight: IntFormat = IntFormat(bits=8)
    readout_bias: IntFormat = IntFormat(bits=24)
    state_frac: int = Field(default=0, ge=-32, le=32, description="h_float = h_int * 2**-state_frac")


class NetworkSpec(_Strict):
    input_size: int = Field(ge=1, le=4096)
    hidden_size: int = Field(ge=1, le=4096)
    num_classes: int = Field(ge=1, le=4096)
    cell: Literal["cmru", "bmru"]
    eps: Literal[-1, 0, 1]
    pooling: Literal["last"] = "last"

    @model_validator(mode="after")
    def _bmru_has_eps_zero(self) -> NetworkSpec:
        if self.cell == "bmru" and self.eps != 0:
            raise ValueError(f"cell 'bmru' requires eps 0, got eps {self.eps}")
        return self


class Manifest(_Strict):
    format_version: int
    name: str = Field(min_length=1)
    network: NetworkSpec
    formats: Formats = Formats()
    checksums: dict[str, str] = Field(default_factory=dict)
    provenance: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _version(self) -> Manifest:
        if self.format_version != FORMAT_VERSION:
            raise ValueError(
                f"bundle format version {self.format_version} is not supported; this codesign reads version "
                f"{FORMAT_VERSION}"
            )
        if max(self.accumulator_bits, self.logit_bits) > MAX_DATAPATH_BITS:
            raise ValueError(
                f"formats give {self.accumulator_bits}-bit accumulators and {self.logit_bits}-bit logits; at most "
                f"{MAX_DATAPATH_BITS} bits are supported (float64 evaluation stays exact): reduce weight, input, "
                "state or bias widths"
            )
        return self

    # Derived widths: recorded in docs/integer-semantics.md, used by golden, torch and RTL alike.
    @property
    def accumulator_bits(self) -> int:
        f = self.formats
        return accumulator_bits(self.network.input_size, f.weight.bits, f.input.bits, f.bias.bits)

    @property
    def logit_bits(self) -> int:
        f = self.formats
        max_abs = self.network.hidden_size * (1 << (f.readout_weight.bits - 1)) * (
            1 << (f.state.bits - 1)
        ) + (1 << (f.readout_bias.bits - 1))
        return bits_for_magnitude(max_abs)


WEIGHT_ARRAYS: dict[str, tuple[str, str]] = {
    # name: (shape expression, width key in Formats)
    "w_cand": ("d,M", "weight"),
    "b_cand": ("d", "bias"),
    "w_thr": ("d,M", "weight"),
    "b_thr": ("d", "bias"),
    "alpha": ("d", "alpha"),
    "w_out": ("C,d", "readout_weight"),
    "b_out": ("C", "readout_bias"),
}
"""Arrays of ``weights.npz``: their shapes in terms of the network dims and their width keys."""
