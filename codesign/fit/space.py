"""The candidates ``codesign fit`` weighs: data (``codesign/fit/space.yaml``), not code.

The space file holds a ``base`` recipe (the settings of ``models/classify_files_hw.yaml``, no
task), ``candidates`` (each a name, the reason it is there, ``quick: true`` for the ``--quick``
subset and ``set``, a list of ``KEY=VALUE`` overrides as ``codesign train --set`` takes them),
``quick_train`` (the training overrides of ``--quick``) and ``axes``: recipe keys crossed with
every candidate (``model.input_stride: [1, 4]``). An axis whose key the recipe schema lacks is
skipped, so the file can name a key before the code has it. Without an ``input_stride`` axis the
stride comes from the series length (:func:`auto_stride`) when the schema has the key.

Every candidate's recipe is validated (with the user's files as its task) before anything trains,
so a bad space or a bad file stops at once with the key it is about.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from codesign.bundle.io import validation_message
from codesign.errors import CodesignError
from codesign.nn.stride import auto_stride
from codesign.train.recipe import Recipe, apply_override, parse_recipe

__all__ = ["Candidate", "FitSpace", "auto_stride", "candidates", "is_features", "load_space", "schema_has"]

STRIDE_KEY = "model.input_stride"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CandidateSpec(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    why: str = Field(min_length=1, description="why the candidate is in the space")
    quick: bool = False
    set: list[str] = Field(default_factory=list)


class FeatureCandidateSpec(_Strict):
    """A random-feature network of about ``units`` counting units (:mod:`codesign.fit.features`)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    why: str = Field(min_length=1, description="why the candidate is in the space")
    quick: bool = False
    units: int = Field(ge=84, le=20000)


class FitSpace(_Strict):
    base: dict[str, Any]
    quick_train: dict[str, Any] = Field(default_factory=dict)
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    candidates: list[CandidateSpec] = Field(default_factory=list)
    features: list[FeatureCandidateSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_candidate(self) -> FitSpace:
        if not self.candidates and not self.features:
            raise ValueError("a space needs at least one candidate (candidates or features)")
        return self


@dataclass
class Candidate:
    """One network of the space: its name, why it is there, and its recipe (without a task)."""

    name: str
    why: str
    recipe: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)  # the axis values it took


def default_space() -> Path:
    return Path(str(resources.files("codesign.fit") / "space.yaml"))


def load_space(path: str | Path | None = None) -> FitSpace:
    """Read and validate a space file (default: the package's own)."""
    path = Path(path) if path is not None else default_space()
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise CodesignError("space file not found", path=path) from None
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=path) from None
    try:
        space = FitSpace.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None
    names = [c.name for c in space.candidates] + [c.name for c in space.features]
    if len(set(names)) != len(names):
        raise CodesignError(
            f"candidate names repeat: {sorted({n for n in names if names.count(n) > 1})}", path=path
        )
    return space


def schema_has(key: str) -> bool:
    """Whether the recipe schema has the dotted ``key`` (``model.input_stride``)."""
    section, _, rest = key.partition(".")
    model = Recipe.model_fields.get(section)
    if model is None:
        return False
    annotation = model.annotation
    if not rest:
        return True
    fields = getattr(annotation, "model_fields", {})
    return rest.split(".")[0] in fields


def _with(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``data`` with the dotted ``key`` set to ``value`` (no YAML round trip)."""
    out = copy.deepcopy(data)
    node = out
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def _stride_note(stride: int, length: int, kept: dict[int, float] | None) -> str:
    """Why the fit's input stride is what it is, in one line."""
    note = f"{STRIDE_KEY} = {stride} from the series length {length}"
    if kept and stride < auto_stride(length):
        note += (
            f": {2 * stride}-frame means would keep {kept.get(2 * stride, 0.0):.0%} of the series' variance"
        )
    return note


def candidates(
    space: FitSpace,
    *,
    quick: bool,
    series_length: int,
    notes: list[str] | None = None,
    variance_kept: dict[int, float] | None = None,
) -> list[Candidate]:
    """The candidates to run: the space's (``quick``: the marked ones, shorter training), each
    crossed with the axes the schema has, and the automatic input stride when it applies: from the
    series length and, with ``variance_kept`` (:func:`codesign.data.series.variance_kept` of the
    training file), no stride whose window means lose most of the series' variance."""
    notes = notes if notes is not None else []
    axes = {}
    for key, values in space.axes.items():
        if schema_has(key):
            axes[key] = values
        else:
            notes.append(f"axis {key} skipped: the recipe schema has no such key")
    if STRIDE_KEY not in axes and schema_has(STRIDE_KEY):
        stride = auto_stride(series_length, variance_kept)
        axes[STRIDE_KEY] = [stride]
        notes.append(_stride_note(stride, series_length, variance_kept))
    out = []
    chosen = [c for c in space.candidates if c.quick] if quick else space.candidates
    for spec in chosen:
        data = copy.deepcopy(space.base)
        for item in spec.set:
            data = apply_override(data, item)
        if quick:
            data["train"] = {**data.get("train", {}), **space.quick_train}
        for values in itertools.product(*axes.values()) if axes else [()]:
            settings = dict(zip(axes, values, strict=True))
            recipe = data
            for key, value in settings.items():
                recipe = _with(recipe, key, value)
            suffix = "".join(f"-{k.rsplit('.', 1)[-1]}{v}" for k, v in settings.items() if len(axes[k]) > 1)
            out.append(Candidate(spec.name + suffix, spec.why, recipe, settings))
    for feat in space.features:  # closed-form fits: no training settings, no axes
        if feat.quick or not quick:
            out.append(Candidate(feat.name, feat.why, {"kind": "features", "units": feat.units}))
    return out


def is_features(candidate: Candidate) -> bool:
    """A random-feature candidate (fitted in closed form, :mod:`codesign.fit.features`)."""
    return candidate.recipe.get("kind") == "features"


def check_recipe(candidate: Candidate, task: dict[str, Any]) -> Recipe:
    """The candidate's recipe with ``task``, validated (one error naming the candidate).

    A candidate must train with QAT at its deployed weight width, so that the trainer scores the
    model export deploys (:func:`codesign.train.trainer.make_scorer`): the CV accuracy is then the
    golden accuracy, never a float one."""
    try:
        recipe = parse_recipe({**candidate.recipe, "task": task})
    except CodesignError as err:
        raise CodesignError(f"candidate {candidate.name}: {err}") from None
    bits = recipe.train.qat_bits
    widths = {f["weight_bits"] for f in recipe.quant.layer_formats(len(recipe.model.hardware_layers()))}
    if recipe.model.arch != "hardware" or recipe.model.readout_hidden or bits is None or widths != {bits}:
        raise CodesignError(
            f"candidate {candidate.name}: a candidate is a deployable network trained for its weight width "
            f"(model.arch hardware, no readout_hidden, train.qat_bits equal to quant's layer weight_bits; "
            f"got arch {recipe.model.arch}, qat_bits {bits}, weight_bits {sorted(widths)}), so that its CV "
            "score is the deployed model's"
        )
    return recipe
