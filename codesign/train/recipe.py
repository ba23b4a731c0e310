"""Recipe files (``models/*.yaml``): what to train, how, and how to quantize it.

Validated with pydantic (unknown keys and out-of-range values are errors naming the key), read
with ``yaml.safe_load`` only. The ``task`` section is ``name`` plus the options of that task's
dataclass (``codesign/data``), checked against its fields.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from codesign.bundle.cells import CELLS
from codesign.bundle.io import validation_message
from codesign.data.registry import TASKS
from codesign.errors import CodesignError
from codesign.train.defaults import with_task_defaults


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


SEED_OPTIONS = ("split_seed", "fold_seed")
"""Task options that, left at null, take the run seed (:meth:`TaskSpec.run_options`)."""


class TaskSpec(BaseModel):
    """``name`` and the task's own options (validated against the task dataclass)."""

    model_config = ConfigDict(extra="allow")
    name: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def run_options(self, seed: int) -> dict[str, Any]:
        """The options a run with ``seed`` uses: a ``split_seed`` left at null becomes ``seed``.

        A task whose train/validation carve-out has ``split_seed: None`` (UEA) then draws a new
        split for every run seed: several seeds are repeated random splits. ``fold_seed`` (the
        cross-validation folds of ``task: files``) follows the run seed likewise.
        """
        options = self.options()
        fields = {f.name: f for f in dataclasses.fields(TASKS[self.name])}
        for key in SEED_OPTIONS:
            if key in fields and fields[key].default is None and options.get(key) is None:
                options[key] = seed
        return options

    @model_validator(mode="after")
    def _known_task_and_options(self) -> TaskSpec:
        if self.name not in TASKS:
            raise ValueError(f"unknown task {self.name!r}; known tasks: {sorted(TASKS)}")
        try:
            build_task(self.name, self.options())
        except CodesignError as err:  # becomes a validation error that names the recipe file
            raise ValueError(str(err)) from None
        return self


def build_task(name: str, options: dict[str, Any]):
    """Instantiate a task, refusing unknown options and wrong types with the key's name.

    ``name`` is the recipe's key for the task itself, so no task may have an option of that name
    (it could never be set from a recipe: the UEA set is chosen with ``dataset``).
    """
    cls = TASKS[name]
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    if "name" in fields:  # a programming error in codesign/data, not in the recipe
        raise TypeError(f"task {name!r} has an option called 'name', which the task's own name shadows")
    for key in options:
        if key not in fields:
            raise CodesignError(f"unknown option {key!r} for task {name!r}; options: {sorted(fields)}")
    try:
        return TypeAdapter(cls).validate_python(options)
    except ValidationError as err:
        errors = err.errors()
        e = errors[0]
        if len(errors) > 1 and len({x["loc"][0] for x in errors}) == 1 and len(e["loc"]) > 1:
            # an option of several types (``normalize: bool | str``): pydantic reports each type's
            # refusal; the user needs the option and the types it takes
            kinds = ", ".join(str(x["loc"][1]) for x in errors)
            raise CodesignError(
                f"task option {e['loc'][0]!r}: got {e.get('input')!r}, which is none of {kinds}"
            ) from None
        where = ".".join(str(p) for p in e["loc"])
        raise CodesignError(f"task option {where!r}: {e['msg']} (got {e.get('input')!r})") from None


class ModelSpec(_Strict):
    arch: Literal["hardware", "backbone"] = "hardware"
    cell: str = "cmru"
    hidden_size: int = Field(default=16, ge=1, le=4096)
    eps: float = Field(default=1.0, ge=-1.0, le=1.0)
    alpha_surr: float = Field(default=1.0, ge=0.0)
    alpha_init: float = 1.0
    cell_options: dict[str, Any] = Field(
        default_factory=dict, description="extra keyword arguments of the cell"
    )
    # hardware only: the layer stack (default: one layer of `cell` with `hidden_size`)
    layers: list[dict[str, Any]] | None = Field(
        default=None, description="hardware layers: {cell, size, eps?, dcls?: {taps, span}, ...}"
    )
    # backbone only
    dim: int = Field(default=64, ge=1, description="model dimension m (backbone)")
    blocks: int = Field(default=1, ge=1, description="number of blocks r (backbone)")
    cells: list[str] | None = Field(default=None, description="one cell per block: a hybrid stack (backbone)")
    pooling: Literal["last", "mean", "sum", "none"] = Field(
        default="last", description="backbone: last, mean or none; hardware: last or sum"
    )
    pe_dim: int = Field(default=16, ge=0)
    drop: list[str] = Field(
        default_factory=list,
        description="backbone: elements removed for an ablation (enc_mlp, pe, norm, gate, mlp, residual, dec_mlp)",
    )
    readout_hidden: int = Field(
        default=0,
        ge=0,
        le=4096,
        description="hardware: width of a hidden readout layer (0: a linear readout)",
    )
    readout_act: Literal["relu", "hardtanh"] = Field(
        default="relu", description="hardware: activation of the hidden readout layer"
    )
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    input_stride: int | Literal["auto"] = Field(
        default=1,
        description="hardware: input frames averaged into one step of the first layer (a power of two "
        "1..256), or auto: from the task's series length (at least 64 steps, at most 16 frames a step)",
    )

    def stride_for(self, length: int | None) -> int:
        """The input stride of a task whose series are ``length`` frames long (``auto`` resolved)."""
        from codesign.nn.stride import auto_stride

        if self.input_stride == "auto":
            return auto_stride(length) if length else 1
        return self.input_stride

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        from codesign.train.models import CELL_NAMES

        for name in [self.cell, *(self.cells or [])]:
            if name not in CELL_NAMES:
                raise ValueError(f"unknown cell {name!r}; known cells: {sorted(CELL_NAMES)}")
        if self.cell == "bmru" and self.eps != 0.0:
            raise ValueError(f"cell 'bmru' requires eps 0, got {self.eps}")
        if self.arch == "hardware":
            from codesign.nn.hardware import HW_CELLS

            for layer in self.hardware_layers():
                if layer.get("cell") not in HW_CELLS:
                    raise ValueError(
                        f"arch 'hardware' takes cells {sorted(HW_CELLS)}, got {layer.get('cell')!r}"
                    )
                if "size" not in layer:
                    raise ValueError(f"hardware layer {layer} needs a size")
                _check_front_end(layer)
            self._single_layer_keys_unused()
        allowed = ("last", "sum") if self.arch == "hardware" else ("last", "mean", "none")
        if self.pooling not in allowed:
            raise ValueError(
                f"pooling {self.pooling!r} is not available for arch {self.arch!r}; use one of {allowed}"
            )
        if self.drop:
            from codesign.nn.backbone import PARTS

            if self.arch != "backbone":
                raise ValueError(f"model.drop {self.drop} removes backbone elements; arch is {self.arch!r}")
            unknown = [p for p in self.drop if p not in PARTS]
            if unknown:
                raise ValueError(
                    f"model.drop: {unknown} are not backbone elements; use some of {list(PARTS)}"
                )
        stride = self.input_stride
        if stride != "auto" and (not 1 <= stride <= 256 or stride & (stride - 1)):
            raise ValueError(
                f"model.input_stride must be auto or a power of two (1, 2, 4, ... 256), got {stride}"
            )
        if self.input_stride != 1 and self.arch != "hardware":
            raise ValueError(f"model.input_stride {self.input_stride} is a hardware-profile option")
        if self.readout_hidden and self.arch != "hardware":
            raise ValueError(f"model.readout_hidden {self.readout_hidden} is a hardware-profile option")
        if self.cells is not None and len(self.cells) != self.blocks:
            raise ValueError(f"cells lists {len(self.cells)} cells for {self.blocks} blocks")
        return self

    def _single_layer_keys_unused(self) -> None:
        """``cell``, ``hidden_size`` and ``cell_options`` describe the one layer of a recipe without
        ``layers``; with ``layers`` they are ignored, so a value that contradicts the first layer
        (``--set model.hidden_size=32`` on a stack recipe) is an error rather than a silent no-op.
        Values equal to the first layer's (as ``codesign explore`` writes them) or at their defaults
        (as a stored run's recipe holds them) pass."""
        if self.layers is None or not self.layers:
            return
        first = self.layers[0]
        fields = type(self).model_fields
        hint = "set each layer in model.layers instead (e.g. --set 'model.layers=[{cell: mingru, size: 32}]')"
        for key, layer_key in (("cell", "cell"), ("hidden_size", "size")):
            value = getattr(self, key)
            if value != fields[key].default and value != first.get(layer_key):
                raise ValueError(
                    f"model.{key} {value!r} is ignored when model.layers lists the layers (the first "
                    f"layer has {layer_key} {first.get(layer_key)!r}); {hint}"
                )
        if self.cell_options:
            raise ValueError(f"model.cell_options is ignored when model.layers lists the layers; {hint}")

    def hardware_layers(self) -> list[dict[str, Any]]:
        if self.layers is not None:
            return [dict(layer) for layer in self.layers]
        layer: dict[str, Any] = {"cell": self.cell, "size": self.hidden_size}
        kind = CELLS.get(self.cell)
        if kind is not None and kind.has_eps:
            layer["eps"] = self.eps
        if kind is not None and kind.rule == "cmru":
            layer |= {"alpha_surr": self.alpha_surr}
            if self.cell != "alphacmru":
                layer["alpha_init"] = self.alpha_init
        return [layer | dict(self.cell_options)]


def _check_front_end(layer: dict[str, Any]) -> None:
    """A layer's ``dcls`` is null or ``{taps: N, span: N | auto}``, said before any training."""
    dcls = layer.get("dcls")
    if dcls is None:
        return
    example = "e.g. dcls: {taps: 8, span: auto}"
    if not isinstance(dcls, dict) or not {"taps", "span"} <= dcls.keys():
        raise ValueError(f"hardware layer {layer}: dcls needs taps and span ({example}), got {dcls!r}")
    for key in ("taps", "span"):
        value = dcls[key]
        if key == "span" and value == "auto":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            allowed = "a positive integer" + (" or auto" if key == "span" else "")
            raise ValueError(f"hardware layer {layer}: dcls.{key} must be {allowed}, got {value!r}")


class AugmentSpec(_Strict):
    """Training-time augmentation (``codesign.train.augment``); all off by default."""

    scaling: float = Field(default=0.0, ge=0.0, description="std of a per-series, per-channel gain around 1")
    magnitude_warp: float = Field(
        default=0.0, ge=0.0, description="std of a smooth random gain curve around 1"
    )
    time_warp: float = Field(default=0.0, ge=0.0, description="std of a smooth random local speed around 1")
    window_slice: float = Field(
        default=1.0, gt=0.0, le=1.0, description="fraction of the length a random window keeps (1 = off)"
    )
    knots: int = Field(default=4, ge=2, description="knots of the warp curves")
    probability: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="chance that a series of a batch is transformed; the rest train as they are, as the "
        "deployed model sees them (1: every series, which can teach only transformed data)",
    )

    @property
    def active(self) -> bool:
        transforms = (
            self.scaling > 0 or self.magnitude_warp > 0 or self.time_warp > 0 or self.window_slice < 1
        )
        return transforms and self.probability > 0


class TrainSpec(_Strict):
    iterations: int = Field(default=2000, ge=1)
    batch_size: int = Field(default=64, ge=1)
    lr: float = Field(default=1e-3, gt=0)
    min_lr: float = Field(default=1e-5, ge=0)
    weight_decay: float = Field(default=1e-4, ge=0)
    warmup: float = Field(default=0.01, ge=0, le=1, description="fraction of iterations")
    clip: float = Field(default=1.0, gt=0)
    eval_every: int = Field(default=64, ge=1)
    eval_batches: int = Field(default=4, ge=1)
    early_stop_evals: int = Field(default=10, ge=1, description="stop after this many evaluations at 100%")
    early_stop_min_val: int = Field(
        default=100, ge=1, description="stop early only when this many validation sequences say 100%"
    )
    selection: Literal["smoothed", "best", "average"] = Field(
        default="smoothed",
        description="smoothed: the centre of the best window of smooth_evals evaluations (mean validation "
        "metric, ties broken by mean validation loss); best: the single best evaluation; average: the "
        "mean of the weights at the evaluations of the last average_last of training (no validation "
        "needed: with a task's val_fraction 0 the whole training file trains)",
    )
    average_last: float = Field(
        default=0.25, gt=0.0, le=1.0, description="selection average: the fraction of training averaged"
    )
    smooth_evals: int = Field(default=5, ge=1, description="evaluations per selection window")
    label_smoothing: float = Field(default=0.0, ge=0.0, lt=1.0, description="cross-entropy label smoothing")
    input_noise: float = Field(
        default=0.0, ge=0.0, description="std of Gaussian noise added to non-silent training input frames"
    )
    augment: AugmentSpec = Field(
        default=AugmentSpec(), description="training-time augmentation; false (or null) turns it all off"
    )

    @field_validator("augment", mode="before")
    @classmethod
    def _augment_off(cls, value: object) -> object:
        return {} if value is None or value is False else value

    max_seconds: float | None = Field(default=None, gt=0, description="wall-clock budget")
    threads: int | None = Field(default=None, ge=1)
    device: str = Field(
        default="auto",
        description="where training and evaluation run: auto (a GPU when torch sees one), cpu, cuda or "
        "cuda:N; `--device` on the command overrides it; export and the golden model stay on the CPU",
    )
    init_from: str | None = Field(
        default=None, description="run directory whose best checkpoint starts training"
    )
    qat_bits: int | None = Field(default=None, ge=2, le=16, description="fake-quantize weights to this width")
    eps_schedule: Literal["constant", "anneal"] = Field(
        default="constant",
        description="anneal: eps 1 for 5%, linearly to 0 over 70%, 0 for 25% (CMRU App. D)",
    )

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        from codesign.device import parse_device

        try:
            return parse_device(value, "train.device")
        except CodesignError as err:
            raise ValueError(str(err)) from None


class InputQuant(_Strict):
    bits: int = Field(default=8, ge=2, le=16)
    frac: int = Field(default=4, ge=-16, le=16)


class LayerQuantSpec(_Strict):
    weight_bits: int = Field(default=8, ge=2, le=16)
    bias_bits: int = Field(default=16, ge=2, le=24)
    alpha_bits: int = Field(default=8, ge=2, le=24)
    state_bits: int = Field(default=16, ge=2, le=24)
    gate_bits: int = Field(default=6, ge=1, le=16)
    dcls_weight_bits: int = Field(default=8, ge=2, le=16)


class ReadoutQuant(_Strict):
    weight_bits: int = Field(default=8, ge=2, le=16)
    bias_bits: int = Field(default=24, ge=2, le=32)
    sum_bits: int = Field(default=24, ge=2, le=40)


class QuantSpec(_Strict):
    """Integer formats used by ``codesign export`` (hardware profile only)."""

    input: InputQuant = InputQuant()
    layer: LayerQuantSpec = LayerQuantSpec()
    layers: list[LayerQuantSpec] | None = Field(
        default=None, description="per-layer formats (default: layer)"
    )
    readout: ReadoutQuant = ReadoutQuant()
    calibration_sequences: int = Field(
        default=256, ge=1, description="training sequences that set state grids"
    )

    def layer_formats(self, count: int) -> list[dict]:
        if self.layers is not None and len(self.layers) != count:
            raise CodesignError(f"quant.layers lists {len(self.layers)} formats for {count} layers")
        return [f.model_dump() for f in (self.layers or [self.layer] * count)]


class Recipe(_Strict):
    name: str = Field(min_length=1)
    seed: int = 0
    task: TaskSpec
    model: ModelSpec = ModelSpec()
    train: TrainSpec = TrainSpec()
    quant: QuantSpec = QuantSpec()


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> Recipe:
    """Read a recipe file; ``overrides`` are ``KEY=VALUE`` settings with dotted keys
    (``task.train=data/x_TRAIN.ts``, ``train.iterations=500``), values parsed as YAML. File paths
    in the recipe are relative to the recipe file, paths given as overrides to the working directory."""
    path = Path(path)
    if not path.is_file():
        raise CodesignError("recipe file not found", path=path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=path) from None
    if isinstance(data, dict):
        for item in overrides or []:
            data = apply_override(data, item)
            section, _, key = item.partition("=")[0].strip().partition(".")
            value = data.get("task", {}).get(key) if section == "task" else None
            if key in FILE_OPTIONS and isinstance(value, str) and value:
                data["task"][key] = str(Path(value).expanduser().resolve())  # a path typed here: from cwd
    return parse_recipe(data, path)


def apply_override(data: dict, item: str) -> dict:
    """``data`` with one ``KEY=VALUE`` setting applied (dotted key into nested mappings)."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise CodesignError(f"--set {item!r} is not KEY=VALUE (e.g. task.train=data/x_TRAIN.ts)")
    parts = key.strip().split(".")
    if parts[0] not in Recipe.model_fields:
        raise CodesignError(
            f"--set {item!r}: unknown recipe key {parts[0]!r}; keys: {', '.join(Recipe.model_fields)}"
        )
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    out = dict(data)
    node = out
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            raise CodesignError(f"--set {item!r}: {part!r} is not a mapping in the recipe")
        node[part] = dict(child)
        node = node[part]
    node[parts[-1]] = parsed
    return out


FILE_OPTIONS = ("train", "test")
"""Options of ``task: files`` that are paths: relative ones are resolved against the recipe file."""


def resolve_task_paths(data: dict, base: Path) -> dict:
    """A copy of recipe ``data`` whose ``files`` task paths are absolute (relative to ``base``), so
    a run's saved recipe finds the files again from anywhere."""
    task = data.get("task")
    if not isinstance(task, dict) or task.get("name") != "files":
        return data
    task = dict(task)
    for key in FILE_OPTIONS:
        if isinstance(task.get(key), str) and task[key]:
            task[key] = str((base / Path(task[key]).expanduser()).resolve())
    return {**data, "task": task}


def model_defaults() -> dict[str, Any]:
    """The schema's default of every ``model`` key (what a recipe that does not write it gets)."""
    return {
        key: field.get_default(call_default_factory=True) for key, field in ModelSpec.model_fields.items()
    }


def parse_recipe(data: object, path: Path | None = None, *, stored: bool = False) -> Recipe:
    """A recipe from its YAML data, with the series defaults under it.

    ``stored``: ``data`` is the recipe a run directory or bundle stores, written out when it
    trained. No default that reads the data is applied to it (a run stored without
    ``task.normalize`` trained with each channel standardised, whatever its data would now pick)."""
    if not isinstance(data, dict):
        raise CodesignError(
            "a recipe must be a YAML mapping with keys name, task, model, train, quant", path=path
        )
    data = resolve_task_paths(data, path.parent if path is not None else Path.cwd())
    data = with_task_defaults(data, model_defaults(), infer_scaling=not stored)
    try:
        return Recipe.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None
