"""The hardware profile: every layer kind the accelerator family runs, trainable as is.

``HardwareStack`` = optional DCLS front end + one hardware cell per layer, a linear readout with
last or sum pooling (or per-step logits) -- each piece has an integer counterpart in
``docs/integer-semantics.md``. The cells themselves (and their :class:`LayerQuant` grid) live in
:mod:`codesign.nn.hardware_cells` and are re-exported here; the selective-update paths
(:mod:`codesign.nn.selective`) sit between the cells and this stack.
"""

from __future__ import annotations

import torch
from torch import nn

from codesign.nn.dcls import DCLS1d
from codesign.nn.hardware_cells import (
    HW_CELLS,
    BinaryGatedMinGRU,
    HardSigmoidMinGRU,
    HardwareHSRU,
    LayerQuant,
    layer_sequential,
)
from codesign.nn.selective import SelectiveSchedule, selective_forward
from codesign.nn.stride import InputStride

__all__ = [
    "HW_CELLS",
    "READOUT_ACTS",
    "BinaryGatedMinGRU",
    "HardSigmoidMinGRU",
    "HardwareHSRU",
    "HardwareStack",
    "LayerQuant",
    "layer_sequential",
]


READOUT_ACTS = {"relu": torch.relu, "hardtanh": nn.functional.hardtanh}
"""Activations of the hidden readout layer (both are a clamp in integers)."""


class HardwareStack(nn.Module):
    """Hardware layers (each optionally behind a DCLS front end) and a linear readout.

    Parameters
    ----------
    input_size, num_classes:
        Task sizes.
    layers:
        One dict per layer: ``cell`` (a key of :data:`HW_CELLS`), ``size``, and the cell's options
        (``eps``, ``leak_shift`` ...); ``dcls: {taps, span}`` adds a delay front end.
    pooling:
        ``last`` or ``sum`` (the readout sees the last state or the sum of states over time).
    per_step:
        Logits at every step ``(batch, time, classes)`` instead of one per sequence.
    readout_hidden, readout_act:
        A hidden readout layer (pooled state -> ``readout_hidden`` units -> ReLU or hard tanh ->
        logits) instead of a linear readout; 0 keeps the linear one. The readout MLP adds a
        nonlinearity after pooling, the cheapest step from the deployable network toward the
        papers' decoder.
    input_stride:
        ``S``: each window of ``S`` input frames is averaged into one step of the first layer
        (:class:`codesign.nn.stride.InputStride`); 1 feeds every frame.
    """

    def __init__(
        self,
        input_size: int,
        num_classes: int,
        layers: list[dict],
        *,
        pooling: str = "last",
        per_step: bool = False,
        readout_hidden: int = 0,
        readout_act: str = "relu",
        input_stride: int = 1,
    ) -> None:
        super().__init__()
        if not layers:
            raise ValueError("a hardware stack needs at least one layer")
        if readout_act not in READOUT_ACTS:
            raise ValueError(f"readout_act {readout_act!r} is not one of {sorted(READOUT_ACTS)}")
        self.layer_specs = [dict(layer) for layer in layers]
        self.pooling, self.per_step = pooling, per_step
        if input_stride > 1 and per_step:
            raise ValueError(
                f"input_stride {input_stride} gives one step per {input_stride} input frames; a per-step "
                "(sequence to sequence) task needs a label at every frame: use input_stride 1"
            )
        self.stride = InputStride(input_stride)
        self.cells = nn.ModuleList()
        self.fronts = nn.ModuleList()
        self.schedules = nn.ModuleDict()  # layer index (str) -> SelectiveSchedule
        width = input_size
        for index, spec in enumerate(self.layer_specs):
            spec = dict(spec)
            kind, size, dcls = spec.pop("cell"), spec.pop("size"), spec.pop("dcls", None)
            selective = spec.pop("selective", None)
            if selective is not None:
                options = dict(selective)
                self.schedules[str(index)] = SelectiveSchedule(size, options.pop("period"), **options)
            if kind not in HW_CELLS:
                raise ValueError(f"unknown hardware cell {kind!r}; choose one of {sorted(HW_CELLS)}")
            self.fronts.append(nn.Identity() if dcls is None else DCLS1d(width, dcls["taps"], dcls["span"]))
            self.cells.append(HW_CELLS[kind](width, size, **spec))
            width = size
        self.readout_hidden, self.readout_act = readout_hidden, readout_act
        if readout_hidden:
            self.hidden = nn.Linear(width, readout_hidden)
            width = readout_hidden
        self.readout = nn.Linear(width, num_classes)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """Logits of pooled states: the (optional) hidden layer, then the linear readout."""
        if self.readout_hidden:
            pooled = READOUT_ACTS[self.readout_act](self.hidden(pooled))
        return self.readout(pooled)

    @property
    def rnn(self) -> nn.Module:
        """The first (for the spine: only) recurrent layer."""
        return self.cells[0]

    def schedule(self, index: int) -> nn.Module | None:
        """Layer ``index``'s selective-update schedule (``None`` without the option)."""
        return self.schedules[str(index)] if str(index) in self.schedules else None

    def states(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stride(x)
        for index, (front, cell) in enumerate(zip(self.fronts, self.cells, strict=True)):
            sched = self.schedule(index)
            if sched is None:
                x, _ = cell(front(x))
            else:
                x = selective_forward(cell, front(x), sched.gates(x.shape[1]))
        return x

    def read(self, h: torch.Tensor) -> torch.Tensor:
        if self.per_step:
            return self.head(h)
        return self.head(h[:, -1] if self.pooling == "last" else h.sum(dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.read(self.states(x))
