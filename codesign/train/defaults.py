"""Defaults for classifying labelled series (``task: uea`` and ``task: files``) where a recipe is silent.

The schema's own defaults are those of the synthetic tasks the cells were first trained on
(copy-first, parity, flip-flop: one learning rate of 1e-3, float training, a generated
validation set). A user's recordings are different: a few dozen series, standardised, read once
each per epoch. What the small-data ablation of ``models/results/classify_ablation.md`` found for
them is filled in here for every key a ``uea`` or ``files`` recipe does not write, so a recipe
that names only its data and a cell (``model: {cell: cmru, hidden_size: 16}``) trains the way the
tuned recipes do. A key the recipe writes always wins, ``null`` included (``train: {qat_bits:
null}`` trains in float). A run directory stores its recipe with every key written out, so a
change of these defaults never changes what an existing run means.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["SERIES_DEFAULTS", "SERIES_TASKS", "with_task_defaults"]

SERIES_TASKS = frozenset({"uea", "files"})
"""Tasks whose data are labelled series brought as files (or shipped by aeon)."""

SERIES_DEFAULTS: dict[str, Any] = {
    "task": {"val_fraction": 0.0},  # the whole training file trains: selection needs no carve-out
    "train": {
        "iterations": 3000,
        "lr": 1.0e-2,
        "weight_decay": 0.05,
        "eval_every": 100,
        "eval_batches": 2,
        "selection": "average",
        "label_smoothing": 0.1,
        # All four transforms: time transforms alone lost on 8 of 10 sets (classify_ablation.md);
        # none at all won on the amplitude-coded Covid3Month_disc and UnitTest. Each series is
        # transformed with the schema's augment.probability, 0.5: with every one transformed, ACSF1
        # fell to chance (11.7 %).
        "augment": {"scaling": 0.1, "magnitude_warp": 0.2, "time_warp": 0.2, "window_slice": 0.9},
    },
    "quant": {"input": {"frac": 5}},  # standardised inputs: +-4 on an 8-bit grid
}
"""The defaults of a series task; ``train.qat_bits`` 8 is added for hardware models."""


def _under(defaults: dict, data: dict) -> dict:
    """``data`` with ``defaults`` filled in where it has no key (mappings merged key by key)."""
    out = copy.deepcopy(defaults)
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _under(out[key], value)
        else:
            out[key] = value
    return out


def with_task_defaults(data: dict) -> dict:
    """Recipe ``data`` with the series defaults under it when its task is a series task."""
    task = data.get("task")
    if not isinstance(task, dict) or task.get("name") not in SERIES_TASKS:
        return data
    defaults = copy.deepcopy(SERIES_DEFAULTS)
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    if model.get("arch", "hardware") == "hardware":
        defaults["train"]["qat_bits"] = 8  # train the grid it deploys on
    train = data.get("train") if isinstance(data.get("train"), dict) else {}
    if train.get("selection", "average") != "average":
        del defaults["task"]["val_fraction"]  # a selection that reads validation keeps its carve-out
    return _under(defaults, data)
