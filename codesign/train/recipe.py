"""Recipe files (``models/*.yaml``): what to train, how, and how to quantize it.

Validated with pydantic (unknown keys and out-of-range values are errors naming the key), read
with ``yaml.safe_load`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from codesign.bundle.io import validation_message
from codesign.bundle.schema import Formats
from codesign.data.registry import TASKS
from codesign.errors import CodesignError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskSpec(_Strict):
    name: Literal["copy_first"]
    classes: int = Field(default=15, ge=2, le=1024)
    length: int = Field(default=100, ge=1, le=1_000_000)
    val_size: int = Field(default=2000, ge=1)
    test_size: int = Field(default=2000, ge=1)

    def options(self) -> dict:
        return self.model_dump(exclude={"name"})


class ModelSpec(_Strict):
    cell: Literal["cmru", "bmru", "alphacmru"] = "cmru"
    hidden_size: int = Field(default=16, ge=1, le=4096)
    eps: float = Field(default=1.0, ge=-1.0, le=1.0)
    alpha_surr: float = Field(default=1.0, ge=0.0)
    alpha_init: float = 1.0

    @model_validator(mode="after")
    def _bmru_eps(self) -> ModelSpec:
        if self.cell == "bmru" and self.eps != 0.0:
            raise ValueError(f"cell 'bmru' requires eps 0, got {self.eps}")
        return self


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
    max_seconds: float | None = Field(default=None, gt=0, description="wall-clock budget")
    threads: int | None = Field(default=None, ge=1)


class Recipe(_Strict):
    name: str = Field(min_length=1)
    seed: int = 0
    task: TaskSpec
    model: ModelSpec = ModelSpec()
    train: TrainSpec = TrainSpec()
    quant: Formats = Formats()


def load_recipe(path: str | Path) -> Recipe:
    path = Path(path)
    if not path.is_file():
        raise CodesignError("recipe file not found", path=path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=path) from None
    return parse_recipe(data, path)


def parse_recipe(data: object, path: Path | None = None) -> Recipe:
    if not isinstance(data, dict):
        raise CodesignError(
            "a recipe must be a YAML mapping with keys name, task, model, train, quant", path=path
        )
    task = data.get("task")
    if isinstance(task, dict) and task.get("name") not in TASKS:
        raise CodesignError(
            f"task.name: unknown task {task.get('name')!r}; known tasks: {sorted(TASKS)}", path=path
        )
    try:
        return Recipe.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None
