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

One default is about the network rather than its training. A recipe that names a lone CMRU-family
layer with ``eps`` 1 read at its last step (the minimal recipe) would train a network that cannot
read the order of its frames (:mod:`codesign.train.order`); where it writes neither
``model.layers`` nor ``model.cell_options.dcls``, the layer gets the DCLS front end
:data:`codesign.train.order.ORDER_FRONT_END` and the recipe is written out as that one-layer
``model.layers``, so the run's stored recipe says what trained. ``cell_options: {dcls: null}``
keeps the layer alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from codesign.bundle.cells import CELLS
from codesign.train.order import ORDER_FRONT_END, order_blind

__all__ = ["SERIES_DEFAULTS", "SERIES_TASKS", "series_scaled", "with_order_front_end", "with_task_defaults"]

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
        # none at all won on Covid3Month_disc (channel-scaled) and UnitTest. Each series is
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


def series_scaled(task: Mapping[str, Any]) -> bool:
    """Whether a series task's training series each need their own scale
    (:func:`codesign.data.series.resolve_normalize`): their levels differ by orders of magnitude,
    so one scale per channel would leave most of them flat on the input grid (PLAID's currents,
    Covid3Month_disc's counts). The series defaults then write ``normalize: series``, so the run's
    stored recipe says how its inputs were scaled. A file that cannot be read gives ``False``:
    building the task names what is wrong with it."""
    from codesign.data.files import read_labelled_series
    from codesign.data.series import resolve_normalize
    from codesign.data.uea import UEADataset, training_series
    from codesign.errors import CodesignError

    try:
        if task.get("name") == "uea":
            series = training_series(str(task.get("dataset", UEADataset.dataset)))
        else:
            series = read_labelled_series(str(task.get("train", "")), missing=task.get("missing", "refuse"))[
                0
            ]
        return resolve_normalize("auto", series) == "series"
    except (CodesignError, OSError, ValueError):
        return False


def with_task_defaults(data: dict, model_defaults: Mapping[str, Any], *, infer_scaling: bool = True) -> dict:
    """Recipe ``data`` with the series defaults under it when its task is a series task;
    ``model_defaults`` are the schema's defaults of the ``model`` keys (``ModelSpec``'s).
    ``infer_scaling``: write ``task.normalize: series`` where the training series need it
    (:func:`series_scaled`); off for a run's stored recipe, which says how it trained."""
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
    if infer_scaling and "normalize" not in task and series_scaled(task):
        defaults["task"]["normalize"] = "series"
    data = _under(defaults, data)
    model = data.get("model", {})
    if isinstance(model, dict):
        train = data["train"] if isinstance(data.get("train"), dict) else {}
        data["model"] = with_order_front_end(model, train, model_defaults)
    return data


def with_order_front_end(model: dict, train: dict, model_defaults: Mapping[str, Any]) -> dict:
    """``model`` with :data:`ORDER_FRONT_END` in front of its layer when it names one order-blind
    layer (``cell``, no ``layers``, no ``cell_options.dcls``), written out as ``model.layers``;
    any other model unchanged. A stored run's recipe always holds ``layers``, so it never gets a
    front end its run did not train with."""

    def written(key: str) -> Any:
        return model.get(key, model_defaults[key])

    options = written("cell_options")
    if "layers" in model or not isinstance(options, dict) or "dcls" in options:
        return model
    if written("arch") != "hardware" or train.get("eps_schedule") == "anneal":
        return model  # annealed to eps 0, the last event sets the state: it reads the order
    cell = written("cell")
    kind = CELLS.get(cell)
    if kind is None:
        return model  # the schema names the unknown cell
    layer: dict[str, Any] = {"cell": cell, "size": written("hidden_size")}
    if kind.has_eps:
        layer["eps"] = written("eps")
    extra = ("alpha_surr",) if cell == "alphacmru" else ("alpha_surr", "alpha_init")
    layer |= {key: model[key] for key in extra if key in model} | options
    if order_blind([layer], written("pooling")) is None:
        return model
    out = {key: value for key, value in model.items() if key != "cell_options"}
    out["layers"] = [layer | {"dcls": dict(ORDER_FRONT_END)}]
    return out
