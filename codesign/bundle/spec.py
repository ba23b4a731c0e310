"""Schema of ``manifest.yaml``, format version 2: a stack of hardware layers and a readout.

Pydantic models with ``extra="forbid"``: a misspelt key is an error naming the key. Every
integer width of every tensor is declared here or derived from what is declared (accumulators,
logits), by the functions at the bottom, which the golden model, the torch deployed model and the
RTL generator all call.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from codesign.bundle.cells import CELL_NAMES, CELLS
from codesign.intmath import bits_for_magnitude

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_DATAPATH_BITS = 53
"""Widest accumulator, logit or pooled sum: float64 represents every integer below 2**53 exactly."""

CellName = Literal[CELL_NAMES]  # type: ignore[valid-type]  # the registry's kinds (codesign/bundle/cells.py)
CELL_KINDS: tuple[str, ...] = CELL_NAMES


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


MAX_INPUT_STRIDE = 256


class InputSpec(_Strict):
    """The input format, and ``stride``: S consecutive input frames make one step of layer 0.

    With ``stride`` S > 1 the input codes of each window of S frames are summed per channel and
    shifted right by ``log2 S`` (floor); a sequence's trailing partial window is summed over the
    frames present (as if zero frames completed it). A power of two: the hardware's mean is a
    shift. Stride 1 is not written to ``manifest.yaml``, so bundles without it are unchanged.
    """

    size: int = Field(ge=1, le=4096)
    bits: int = Field(default=8, ge=2, le=16)
    frac: int = Field(default=4, ge=-16, le=16)
    overflow: Literal["saturate", "error"] = "saturate"
    stride: int = Field(default=1, ge=1, le=MAX_INPUT_STRIDE, description="input frames per step of layer 0")

    @field_validator("stride")
    @classmethod
    def _stride_power_of_two(cls, stride: int) -> int:
        if stride & (stride - 1):
            raise ValueError(f"stride must be a power of two (1, 2, 4, ... {MAX_INPUT_STRIDE})")
        return stride

    @model_serializer(mode="wrap")
    def _omit_unit_stride(self, handler):
        data = handler(self)
        if self.stride == 1:
            data.pop("stride", None)
        return data

    @property
    def stride_shift(self) -> int:
        """``log2 stride``: the arithmetic right shift of a window's sum."""
        return self.stride.bit_length() - 1


class DCLSSpec(_Strict):
    """Causal delay front end: per input channel, ``taps`` weights at integer delays below ``span``."""

    taps: int = Field(ge=1, le=64)
    span: int = Field(ge=1, le=4096)
    weight_bits: int = Field(default=8, ge=2, le=16)


class SelectiveSpec(_Strict):
    """Selective update (suRNN): neuron ``i`` applies its cell's rule at step ``t`` (0 at a sequence's
    first step) only where ``su_gate[t mod period, i]`` is 1; elsewhere its whole state is kept.

    The rhythmic generator ``H(b_i + sum_k alpha_ik sin(omega_k t + phi_ik))`` with harmonic
    frequencies ``omega_k = 2 pi k / period`` repeats exactly every ``period`` steps, so one table
    of ``period x d`` bits is the deployed schedule (``docs/integer-semantics.md``). The period is
    a power of two: the step counter wraps by dropping its high bits.
    """

    period: int = Field(ge=1, le=4096)

    @model_validator(mode="after")
    def _power_of_two(self) -> SelectiveSpec:
        if self.period & (self.period - 1):
            raise ValueError(f"period must be a power of two (1, 2, 4, ... 4096), got {self.period}")
        return self


class LayerSpec(_Strict):
    cell: CellName
    size: int = Field(ge=1, le=4096)
    eps: Literal[-1, 0, 1] = 0
    weight_bits: int = Field(default=8, ge=2, le=16)
    bias_bits: int = Field(default=16, ge=2, le=24)
    alpha_bits: int = Field(default=8, ge=2, le=24)
    state_bits: int = Field(default=16, ge=2, le=24)
    state_frac: int = Field(default=0, ge=-32, le=32, description="h_float = h_int * 2**-state_frac")
    gate_bits: int = Field(default=6, ge=1, le=16, description="mingru: the gate is z_int / 2**gate_bits")
    leak_shift: int = Field(default=4, ge=1, le=16, description="hsru: V <- V - floor(V / 2**leak_shift) + I")
    dcls: DCLSSpec | None = None
    selective: SelectiveSpec | None = Field(
        default=None, description="selective update: a time-driven binary gate table over a period"
    )

    @model_validator(mode="after")
    def _eps_only_for_cmru(self) -> LayerSpec:
        allowed = CELLS[self.cell].eps
        if self.eps not in allowed:
            if len(allowed) == 1:
                with_eps = ", ".join(n for n, k in CELLS.items() if k.has_eps)
                raise ValueError(
                    f"cell {self.cell!r} requires eps {allowed[0]}, got eps {self.eps} "
                    f"(eps applies to {with_eps} layers)"
                )
            raise ValueError(f"cell {self.cell!r} allows eps {allowed}, got eps {self.eps}")
        return self

    @property
    def output_bits(self) -> int:
        """Width of what the layer passes on (its state; HSRU passes its 0/1 digital state)."""
        return 2 if CELLS[self.cell].binary_output else self.state_bits


class ReadoutSpec(_Strict):
    classes: int = Field(ge=1, le=4096)
    pooling: Literal["last", "sum"] = "last"
    per_step: bool = Field(default=False, description="logits at every step (sequence to sequence)")
    weight_bits: int = Field(default=8, ge=2, le=16)
    bias_bits: int = Field(default=24, ge=2, le=32)
    sum_bits: int = Field(default=24, ge=2, le=40, description="saturating width of the pooled sum")

    @model_validator(mode="after")
    def _per_step_has_no_pooling(self) -> ReadoutSpec:
        if self.per_step and self.pooling != "last":
            raise ValueError("per_step readouts read every step's state: pooling must be 'last'")
        return self


class Manifest(_Strict):
    format_version: int
    name: str = Field(min_length=1)
    input: InputSpec
    layers: list[LayerSpec] = Field(min_length=1, max_length=16)
    readout: ReadoutSpec
    checksums: dict[str, str] = Field(default_factory=dict)
    provenance: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _version_and_widths(self) -> Manifest:
        if self.format_version != FORMAT_VERSION:
            raise ValueError(f"format_version {self.format_version} is not {FORMAT_VERSION}")
        widest = max([*(accumulator_bits(self, i) for i in range(len(self.layers))), logit_bits(self)])
        if self.input.stride > 1 and self.readout.per_step:
            raise ValueError(
                f"input.stride {self.input.stride} gives one step per {self.input.stride} input frames, "
                "but a per_step readout needs a label at every input frame: use stride 1"
            )
        if widest > MAX_DATAPATH_BITS:
            raise ValueError(
                f"these formats need {widest}-bit accumulators or logits; at most {MAX_DATAPATH_BITS} bits are "
                "supported (float64 evaluation stays exact): reduce weight, input, state or bias widths"
            )
        return self


# ---------------------------------------------------------------- derived sizes and widths


def layer_input(manifest: Manifest, index: int) -> tuple[int, int]:
    """``(size, bits)`` of what layer ``index`` reads (before its DCLS front end)."""
    if index == 0:
        return manifest.input.size, manifest.input.bits
    prev = manifest.layers[index - 1]
    return prev.size, prev.output_bits


def front_end_bits(manifest: Manifest, index: int) -> int:
    """Width of the values the layer's matrices multiply (DCLS output or the raw input)."""
    _, bits = layer_input(manifest, index)
    dcls = manifest.layers[index].dcls
    if dcls is None:
        return bits
    return bits_for_magnitude(dcls.taps * (1 << (dcls.weight_bits - 1)) * (1 << (bits - 1)))


def accumulator_bits(manifest: Manifest, index: int) -> int:
    """Width of ``sum_j W[i, j] z[j] + b[i]`` in layer ``index``: no input can overflow it."""
    size, _ = layer_input(manifest, index)
    layer = manifest.layers[index]
    zbits = front_end_bits(manifest, index)
    return bits_for_magnitude(
        size * (1 << (layer.weight_bits - 1)) * (1 << (zbits - 1)) + (1 << (layer.bias_bits - 1))
    )


SHIFT_BITS = 7


def shift_bounds(acc_bits: int) -> tuple[int, int]:
    """Allowed per-neuron shifts of an accumulator ``acc_bits`` wide (docs/integer-semantics.md).

    A negative shift is an exact left shift: it may widen the accumulator at most to
    ``MAX_DATAPATH_BITS`` bits, so every intermediate fits int64 and float64 exactly; a right
    shift is at most 63 (the 7-bit field's maximum).
    """
    return -max(0, MAX_DATAPATH_BITS - acc_bits), (1 << (SHIFT_BITS - 1)) - 1


def readout_input_bits(manifest: Manifest) -> int:
    last = manifest.layers[-1]
    return manifest.readout.sum_bits if manifest.readout.pooling == "sum" else last.output_bits


def logit_bits(manifest: Manifest) -> int:
    r = manifest.readout
    d = manifest.layers[-1].size
    return bits_for_magnitude(
        d * (1 << (r.weight_bits - 1)) * (1 << (readout_input_bits(manifest) - 1)) + (1 << (r.bias_bits - 1))
    )


def array_table(manifest: Manifest) -> dict[str, tuple[tuple[int, ...], int]]:
    """Every array of ``weights.npz``: name -> (shape, signed width)."""
    table: dict[str, tuple[tuple[int, ...], int]] = {}
    for i, layer in enumerate(manifest.layers):
        m, _ = layer_input(manifest, i)
        d, p = layer.size, f"layers.{i}."
        wb, bb = layer.weight_bits, layer.bias_bits
        if layer.dcls is not None:
            table[p + "dcls_weight"] = ((m, layer.dcls.taps), layer.dcls.weight_bits)
            table[p + "dcls_delay"] = ((m, layer.dcls.taps), bits_for_magnitude(layer.dcls.span - 1))
        if layer.selective is not None:
            table[p + "su_gate"] = ((layer.selective.period, d), 2)  # 0/1 (check_weights)
        kind = CELLS[layer.cell]
        for name in kind.matrices:
            table[p + f"w_{name}"] = ((d, m), wb)
            table[p + f"b_{name}"] = ((d,), bb)
        for name, width in kind.params.items():
            table[p + name] = (
                (d,),
                {"alpha_bits": layer.alpha_bits, "state_bits": layer.state_bits}.get(width, SHIFT_BITS),
            )
    r, d_last = manifest.readout, manifest.layers[-1].size
    table |= {
        "readout.weight": ((r.classes, d_last), r.weight_bits),
        "readout.bias": ((r.classes,), r.bias_bits),
    }
    return table
