"""What a host needs besides the weights: the class names and the input scaling of a bundle.

Both live in the manifest's free-form ``provenance`` (absent in bundles that do not carry them):

* ``provenance.labels``: the class names, one string per readout class, in class order;
* ``provenance.input_scaling``: what the host applies to a raw recording ``(time, channels)``
  before the input grid (:class:`InputScaling`): ``channel`` subtracts ``mean`` and divides by
  ``std`` per channel, ``series`` standardises each recording's channels by their own mean and
  standard deviation, ``none`` keeps the values. Missing values become 0 after scaling.

:func:`check_host` validates both keys whenever a manifest is read, so a malformed one is a
one-line error naming the key.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from codesign.bundle.spec import Manifest
from codesign.errors import CodesignError

__all__ = ["LABELS_KEY", "SCALING_KEY", "InputScaling", "check_host", "host_labels", "host_scaling"]

LABELS_KEY = "labels"
SCALING_KEY = "input_scaling"


class InputScaling(BaseModel):
    """The input scaling a host applies to raw recordings (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["channel", "series", "none"]
    mean: list[float] | None = None
    std: list[float] | None = None

    @model_validator(mode="after")
    def _moments_match_mode(self) -> InputScaling:
        if self.mode != "channel":
            if self.mean is not None or self.std is not None:
                raise ValueError(f"mode {self.mode} takes no mean or std (only mode channel does)")
            return self
        if self.mean is None or self.std is None:
            raise ValueError("mode channel needs mean and std, one number per input channel")
        if len(self.mean) != len(self.std):
            raise ValueError(f"mean has {len(self.mean)} channels, std {len(self.std)}")
        if not all(math.isfinite(m) for m in self.mean):
            raise ValueError("mean holds NaN or Inf")
        if not all(math.isfinite(s) and s > 0 for s in self.std):
            raise ValueError("every std must be a finite number > 0")
        return self


def _labels(value: object, classes: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"must be a list of non-empty strings, one per class (got {value!r})")
    if len(value) != classes:
        raise ValueError(f"lists {len(value)} names for a readout of {classes} classes")
    if len(set(value)) != len(value):
        raise ValueError(f"names must differ (got {value!r})")
    return list(value)


def _scaling(value: object, channels: int) -> InputScaling:
    try:
        scaling = InputScaling.model_validate(value)
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join(str(p) for p in e["loc"])
        raise ValueError(f"{where + ': ' if where else ''}{e['msg'].removeprefix('Value error, ')}") from None
    if scaling.mean is not None and len(scaling.mean) != channels:
        raise ValueError(f"mean has {len(scaling.mean)} channels, the input has {channels}")
    return scaling


def check_host(manifest: Manifest, path=None) -> None:
    """Refuse a malformed ``provenance.labels`` or ``provenance.input_scaling`` in one line."""
    prov = manifest.provenance or {}
    try:
        if LABELS_KEY in prov:
            _labels(prov[LABELS_KEY], manifest.readout.classes)
    except ValueError as err:
        raise CodesignError(f"provenance.{LABELS_KEY}: {err}", path=path) from None
    try:
        if SCALING_KEY in prov:
            _scaling(prov[SCALING_KEY], manifest.input.size)
    except ValueError as err:
        raise CodesignError(f"provenance.{SCALING_KEY}: {err}", path=path) from None


def host_labels(manifest: Manifest) -> list[str] | None:
    """The class names the bundle carries, or None."""
    value = (manifest.provenance or {}).get(LABELS_KEY)
    return None if value is None else _labels(value, manifest.readout.classes)


def host_scaling(manifest: Manifest) -> InputScaling | None:
    """The input scaling the bundle carries, or None."""
    value = (manifest.provenance or {}).get(SCALING_KEY)
    return None if value is None else _scaling(value, manifest.input.size)
