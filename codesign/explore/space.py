"""Space files (``flows/explore/*.yaml``): which networks, widths and lanes to explore.

A space starts from a recipe (``base``, a path relative to the space file), overrides its
``train`` section for every trial, and spans the ``axes`` below as a grid or a random sample of
the grid. Seeds and lanes are crossed with every sampled point (seeds give the [min; max] bands,
lanes only change the hardware figures of one bundle)::

    name: jv_cells_widths
    base: ../../models/japanese_vowels_cmru_hw.yaml
    train: {iterations: 300}
    axes:
      cell: [cmru, bmru]            # hardware cells (codesign.nn.hardware.HW_CELLS)
      eps: [1.0, anneal]            # -1, 0, 1 or anneal (CMRU family; ignored by cells without eps)
      d: [8, 16]                    # neurons per layer
      layers: [1]                   # stacked layers of the cell
      dcls: [null, {taps: 2, span: 4}]   # DCLS front end of the first layer
      pooling: [sum]                # last or sum
      task: [{name: uea}]           # replaces the recipe's task section
      weight_bits: [8, 4, 3, 2]
      state_bits: [16]
      quantization: [ptq, qat, scratch]  # post-training, QAT fine-tuning, QAT from scratch
    seeds: [0, 1]
    sample: grid                    # or {random: 20, seed: 0}
    qat: {iterations: 150, lr: 2.0e-4}
    hardware: {lanes: [1, 4]}       # adds memory, operation counts, cycles and energy proxies
    budgets:                        # the summary names the best design under each
      - {max_energy_pj: 5000}
      - {max_memory_bits: 4000, max_cycles_per_step: 40}
      - {min_accuracy: 0.9, objective: energy}   # the cheapest design that reaches 90 %

Validated with pydantic (unknown keys are errors naming the key) and read with
``yaml.safe_load``; every trial's recipe is validated before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from codesign.bundle.cells import CELLS
from codesign.bundle.io import validation_message
from codesign.errors import CodesignError
from codesign.quant.sweep import QAT_LR
from codesign.train.recipe import Recipe, load_recipe, parse_recipe

__all__ = [
    "AXES",
    "Space",
    "bundle_key",
    "load_space",
    "parse_space",
    "recipe_identity",
    "run_key",
    "trial_hash",
]

AXES = ("task", "cell", "eps", "d", "layers", "dcls", "pooling", "weight_bits", "state_bits", "quantization")
"""Axes of a space, in the order a table lists them."""

QUANTIZATION = ("ptq", "qat", "scratch")
EPS_CELLS = tuple(name for name, kind in CELLS.items() if kind.has_eps)
"""Cells whose layer takes ``eps`` (the BMRU is the eps = 0 member and takes none)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _distinct(values: list) -> list:
    if not values:
        raise ValueError("list at least one value")
    seen = [json.dumps(v, sort_keys=True) for v in values]
    if len(set(seen)) != len(seen):
        raise ValueError(f"values repeat: {values}")
    return values


class Dcls(_Strict):
    taps: int = Field(ge=1, le=16)
    span: int = Field(ge=1, le=1024)


class Axes(_Strict):
    """Lists of values; an axis left out keeps the base recipe's value."""

    task: list[dict[str, Any]] | None = None
    cell: list[str] | None = None
    eps: list[float | Literal["anneal"]] | None = None
    d: list[int] | None = None
    layers: list[int] | None = None
    dcls: list[Dcls | None] | None = None
    pooling: list[Literal["last", "sum"]] | None = None
    weight_bits: list[int] = [8]
    state_bits: list[int] | None = None
    quantization: list[Literal["ptq", "qat", "scratch"]] = ["ptq"]

    @field_validator("*", mode="after")
    @classmethod
    def _lists(cls, v):
        return None if v is None else _distinct(v)

    @model_validator(mode="after")
    def _ranges(self) -> Axes:
        from codesign.nn.hardware import HW_CELLS

        checks = {
            "cell": (self.cell, lambda c: c in HW_CELLS, f"one of {sorted(HW_CELLS)}"),
            "eps": (self.eps, lambda e: e in (-1, 0, 1, "anneal"), "-1, 0, 1 or 'anneal'"),
            "d": (self.d, lambda d: 1 <= d <= 4096, "1..4096"),
            "layers": (self.layers, lambda n: 1 <= n <= 8, "1..8"),
            "weight_bits": (self.weight_bits, lambda b: 2 <= b <= 16, "2..16"),
            "state_bits": (self.state_bits, lambda b: 2 <= b <= 24, "2..24"),
        }
        for key, (values, ok, allowed) in checks.items():
            for v in values or []:
                if not ok(v):
                    raise ValueError(f"axes.{key}: {v!r} is not allowed; use {allowed}")
        for t in self.task or []:
            if "name" not in t:
                raise ValueError(f"axes.task: {t} needs a name (a task of codesign/data)")
        return self


class RandomSample(_Strict):
    random: int = Field(ge=1, description="points drawn from the grid (without replacement)")
    seed: int = 0


class Qat(_Strict):
    iterations: int = Field(default=150, ge=1)
    lr: float = Field(default=QAT_LR, gt=0)


class Hardware(_Strict):
    lanes: list[int] = Field(min_length=1)

    @field_validator("lanes")
    @classmethod
    def _lanes(cls, v: list[int]) -> list[int]:
        for p in _distinct(v):
            if not 1 <= p <= 4096:
                raise ValueError(f"lanes {p} is not allowed; use 1..4096")
        return v


class Budget(_Strict):
    """Upper bounds a design must meet; the summary names the most accurate one that does."""

    name: str | None = None
    max_energy_pj: float | None = Field(default=None, gt=0)
    max_memory_bits: int | None = Field(default=None, gt=0)
    max_cycles_per_step: float | None = Field(default=None, gt=0)
    min_accuracy: float | None = Field(default=None, ge=0, le=1)
    objective: Literal["accuracy", "energy", "memory", "cycles"] = Field(
        default="accuracy", description="what the best design maximizes (accuracy) or minimizes"
    )

    def label(self) -> str:
        if self.name:
            return self.name
        parts = [
            f"{k} {v:g}" for k, v in self.model_dump(exclude={"name", "objective"}).items() if v is not None
        ]
        text = ", ".join(parts) or "no budget"
        return text if self.objective == "accuracy" else f"{text}; least {self.objective}"


class Space(_Strict):
    name: str = Field(min_length=1)
    base: str = Field(description="recipe every trial starts from, relative to the space file")
    train: dict[str, Any] = Field(default_factory=dict, description="overrides of the recipe's train section")
    axes: Axes = Axes()
    seeds: list[int] = [0]
    sample: Literal["grid"] | RandomSample = "grid"
    qat: Qat = Qat()
    hardware: Hardware | None = None
    budgets: list[Budget] = Field(default_factory=list)

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return _distinct(v)

    @field_validator("train")
    @classmethod
    def _train_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        from codesign.train.recipe import TrainSpec

        for key in v:
            if key not in TrainSpec.model_fields or key in ("init_from", "qat_bits"):
                allowed = sorted(set(TrainSpec.model_fields) - {"init_from", "qat_bits"})
                raise ValueError(f"train.{key} is not a training option; use one of {allowed}")
        return v


def load_space(path: str | Path) -> tuple[Space, Recipe]:
    """Read and validate a space file and its base recipe."""
    path = Path(path)
    if not path.is_file():
        raise CodesignError("space file not found", path=path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=path) from None
    space = parse_space(data, path)
    base = (path.parent / space.base).resolve()
    if not base.is_file():
        raise CodesignError(f"base: recipe {space.base!r} not found (looked at {base})", path=path)
    recipe = load_recipe(base)
    if recipe.model.arch != "hardware":
        raise CodesignError(f"base: {space.base!r} is not a hardware-profile recipe (model.arch)", path=path)
    return space, recipe


def parse_space(data: object, path: Path | None = None) -> Space:
    if not isinstance(data, dict):
        raise CodesignError(
            "a space must be a YAML mapping with keys name, base, train, axes, seeds, sample, qat, "
            "hardware, budgets",
            path=path,
        )
    try:
        return Space.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def trial_hash(obj: Any) -> str:
    """16 hex digits of the SHA-256 of a configuration's canonical JSON."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]


def recipe_identity(recipe: dict[str, Any]) -> dict[str, Any]:
    """What identifies a float run: the recipe's settings that differ from their defaults, no name.

    Settings left at their defaults are not part of it, so a new recipe option (with a default)
    added to the code later does not orphan the trials an exploration already finished.
    """
    data = parse_recipe(recipe).model_dump(mode="json", exclude_defaults=True)
    data.pop("name", None)
    data.get("train", {}).pop("device", None)  # where a run trains is not what it is
    return data


def run_key(recipe: dict[str, Any]) -> str:
    """Hash of a float run (its directory name under ``DIR/runs``)."""
    return trial_hash(recipe_identity(recipe))


def bundle_key(bundle: dict[str, Any]) -> str:
    """Hash of a quantized model: its float run, formats, quantization and QAT settings."""
    from codesign.train.recipe import QuantSpec

    quant = QuantSpec.model_validate(bundle["quant"]).model_dump(mode="json", exclude_defaults=True)
    return trial_hash(
        {
            "run": recipe_identity(bundle["recipe"]),
            "quant": quant,
            "quantization": bundle["quantization"],
            "weight_bits": bundle["weight_bits"],
            "qat": bundle["qat"],
        }
    )


def _points(space: Space) -> list[dict[str, Any]]:
    """The sampled points of the axes (without seeds and lanes)."""
    axes = {k: v for k, v in space.axes.model_dump(mode="json").items() if v is not None}
    keys = list(axes)
    sizes = [len(axes[k]) for k in keys]
    total = 1
    for s in sizes:
        total *= s
    if space.sample == "grid":
        indices = range(total)
    else:
        indices = sorted(
            random.Random(space.sample.seed).sample(range(total), min(space.sample.random, total))
        )
    points = []
    for index in indices:
        point, rest = {}, index
        for key, size in zip(reversed(keys), reversed(sizes), strict=True):
            rest, i = divmod(rest, size)
            point[key] = axes[key][i]
        points.append({k: point[k] for k in keys})
    return points


def _layers(base: Recipe, point: dict[str, Any]) -> list[dict[str, Any]]:
    template = base.model.hardware_layers()[0]
    template.pop("dcls", None)
    cell = point.get("cell", template["cell"])
    if cell != template["cell"]:
        template = {"cell": cell}
    template["size"] = point.get("d", template.get("size", base.model.hidden_size))
    eps = point.get("eps")
    if cell in EPS_CELLS:
        template["eps"] = (
            1.0 if eps == "anneal" else float(eps if eps is not None else template.get("eps", 1.0))
        )
    else:
        template.pop("eps", None)
    count = point.get("layers", len(base.model.hardware_layers()))
    layers = [dict(template) for _ in range(count)]
    dcls = point.get("dcls", "keep")
    first = base.model.hardware_layers()[0].get("dcls")
    if dcls == "keep":
        dcls = first
    if dcls is not None:
        layers[0]["dcls"] = dict(dcls)
    return layers


def float_recipe(space: Space, base: Recipe, point: dict[str, Any], seed: int) -> dict[str, Any]:
    """The recipe of the float run a point trains (shared by every width and quantization of it)."""
    data = copy.deepcopy(base.model_dump(mode="json"))
    if "task" in point:
        data["task"] = dict(point["task"])
    data["seed"] = seed
    layers = _layers(base, point)
    data["model"]["layers"] = layers
    data["model"]["cell"] = layers[0]["cell"]
    data["model"]["hidden_size"] = layers[0]["size"]
    data["model"]["cell_options"] = {}
    data["model"]["eps"] = layers[0].get("eps", 0.0 if layers[0]["cell"] == "bmru" else data["model"]["eps"])
    if "pooling" in point:
        data["model"]["pooling"] = point["pooling"]
    data["train"] |= space.train
    data["train"] |= {"qat_bits": None, "init_from": None}  # the shared run is float, whatever the base
    if point.get("eps") == "anneal" and layers[0]["cell"] in EPS_CELLS:
        data["train"]["eps_schedule"] = "anneal"
    if data["quant"].get("layers") is not None:  # per-layer formats cannot follow a changed stack
        data["quant"]["layer"] = data["quant"]["layers"][0]
        data["quant"]["layers"] = None
    data["name"] = "explore"
    data["name"] = f"explore_{run_key(data)[:12]}"  # not the space's name: spaces share runs
    return data


def _normalized(point: dict[str, Any], recipe: dict[str, Any]) -> dict[str, Any]:
    """The point as it is actually trained: eps only for cells that have one."""
    point = dict(point)
    if recipe["model"]["cell"] not in EPS_CELLS and "eps" in point:
        point["eps"] = None
    return point


def expand(space: Space, base: Recipe, root: Path) -> list[dict[str, Any]]:
    """Every trial of a space as a plain configuration dict (identical points merged)."""
    trials: dict[str, dict[str, Any]] = {}
    for point in _points(space):
        for seed in space.seeds:
            recipe = float_recipe(space, base, point, seed)
            try:
                parse_recipe(recipe)
            except CodesignError as err:
                raise CodesignError(f"axes {point} make an invalid recipe: {err}") from None
            shown = _normalized(point, recipe)
            bits = shown.get("weight_bits", 8)
            quant = copy.deepcopy(recipe["quant"])
            quant["layer"]["weight_bits"] = bits
            quant["readout"]["weight_bits"] = max(bits, 4)  # as codesign sweep: argmax needs a few bits
            if "state_bits" in shown:
                quant["layer"]["state_bits"] = shown["state_bits"]
            quantization = shown.get("quantization", "ptq")
            bundle = {
                "recipe": recipe,
                "quant": quant,
                "quantization": quantization,
                "weight_bits": bits,
                "qat": space.qat.model_dump() if quantization == "qat" else None,
            }
            for lanes in space.hardware.lanes if space.hardware else [None]:
                # identity: what is trained, quantized and measured (not how the space spelled it)
                h = trial_hash({"bundle": bundle_key(bundle), "lanes": lanes})
                config = {"axes": shown | {"seed": seed, "lanes": lanes}, "bundle": bundle, "lanes": lanes}
                trials.setdefault(h, config | {"hash": h, "root": str(root)})
    return list(trials.values())
