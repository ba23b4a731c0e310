"""Build the network a recipe asks for: the hardware profile or the papers' backbone."""

from __future__ import annotations

from torch import nn

from codesign.bundle.cells import cells_with_rule
from codesign.errors import CodesignError
from codesign.nn.backbone import Backbone
from codesign.nn.cmru import CMRU
from codesign.nn.dcls import auto_span
from codesign.nn.hardware import HardwareStack
from codesign.nn.registry import CELL_TYPES, build_cell

BASELINES = ("lstm", "gru")
"""torch.nn recurrent baselines usable in the backbone (the papers' LSTM / GRU comparisons)."""

CELL_NAMES: tuple[str, ...] = (*CELL_TYPES, *BASELINES)
CMRU_FAMILY = cells_with_rule("cmru")


def cell_class(name: str):
    """Constructor ``(input_size, hidden_size, **options)`` of a recipe's cell name."""
    if name in BASELINES:
        return lambda input_size, hidden_size, **kw: TorchRNN(name, input_size, hidden_size, **kw)
    return lambda input_size, hidden_size, **kw: build_cell(name, input_size, hidden_size, **kw)


def cell_kwargs(spec, name: str) -> dict:
    kwargs = dict(spec.cell_options)
    if name in CMRU_FAMILY:
        kwargs.setdefault("alpha_surr", spec.alpha_surr)
        kwargs.setdefault("alpha_init", spec.alpha_init)
        if name != "bmru":
            kwargs.setdefault("eps", spec.eps)
    return kwargs


def with_spans(layers: list[dict], length: int | None, stride: int) -> list[dict]:
    """``layers`` with every DCLS front end's ``span: auto`` resolved for series of ``length``
    frames taken ``stride`` at a step (:func:`codesign.nn.dcls.auto_span`): the model, and so the
    bundle, holds the number."""
    steps = None if length is None else -(-length // stride)
    out = []
    for layer in layers:
        dcls = layer.get("dcls")
        if dcls is not None and dcls.get("span") == "auto":
            layer = layer | {"dcls": dcls | {"span": auto_span(steps)}}
        out.append(layer)
    return out


def build_model(recipe, task) -> nn.Module:
    spec = recipe.model
    if spec.arch == "hardware":
        if task.kind != "classification":
            raise ValueError("arch 'hardware' supports classification tasks (the readout ends in argmax)")
        per_step = task.target == "every_step"
        stride = (
            1 if per_step and spec.input_stride == "auto" else spec.stride_for(getattr(task, "length", None))
        )
        if per_step and stride != 1:
            raise CodesignError(
                f"model.input_stride {stride} gives one step per {stride} input "
                f"frames, but task {recipe.task.name!r} labels every frame: use input_stride 1"
            )
        pooling = "last" if per_step else spec.pooling
        if pooling not in ("last", "sum"):
            raise ValueError(f"arch 'hardware' pools with 'last' or 'sum', not {pooling!r}")
        return HardwareStack(
            task.input_size,
            task.output_size,
            with_spans(spec.hardware_layers(), getattr(task, "length", None), stride),
            pooling=pooling,
            per_step=per_step,
            readout_hidden=spec.readout_hidden,
            readout_act=spec.readout_act,
            input_stride=stride,
        )
    names = spec.cells or [spec.cell] * spec.blocks
    it = iter(names)

    def make_cell(dim: int) -> nn.Module:
        name = next(it)
        return cell_class(name)(dim, spec.hidden_size, **cell_kwargs(spec, name))

    pooling = "none" if task.target == "every_step" else spec.pooling
    return Backbone(
        task.input_size,
        task.output_size,
        make_cell,
        dim=spec.dim,
        blocks=spec.blocks,
        pooling=pooling,
        pe_dim=spec.pe_dim,
        dropout=spec.dropout,
        drop=spec.drop,
    )


def set_eps(model: nn.Module, eps: float) -> None:
    """Set eps on every CMRU-family cell (eps annealing); the BMRU stays at 0."""
    for m in model.modules():
        if isinstance(m, CMRU) and type(m).__name__ != "BMRU":
            m.eps = eps


def annealed_eps(it: int, iterations: int) -> float:
    """CMRU App. D: 1 for the first 5%, linear to 0 over the next 70%, then 0 for the last 25%."""
    p = it / max(1, iterations)
    if p < 0.05:
        return 1.0
    if p >= 0.75:
        return 0.0
    return 1.0 - (p - 0.05) / 0.70


class TorchRNN(nn.Module):
    """``torch.nn.LSTM`` / ``torch.nn.GRU`` with the package's cell API: returns ``(states, last)``."""

    def __init__(self, kind: str, input_size: int, hidden_size: int, **options) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[kind](
            input_size, hidden_size, batch_first=True, **options
        )

    def forward(self, x, h0=None):
        out, _ = self.rnn(x)
        return out, out[:, -1]
