"""Series tasks (uea, files) get the small-data defaults where a recipe is silent, and only there."""

import warnings
from pathlib import Path

import pytest
import yaml

from codesign.train.advice import OrderBlindWarning, warn_if_order_blind
from codesign.train.defaults import SERIES_DEFAULTS
from codesign.train.order import ORDER_FRONT_END
from codesign.train.recipe import parse_recipe
from codesign.train.trainer import holds_recipe, recipe_text

TINY = Path(__file__).parent / "data" / "files"
MINIMAL = {
    "name": "minimal",
    "task": {"name": "uea", "dataset": "GunPoint"},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 16},
}


def test_a_minimal_series_recipe_gets_the_series_defaults() -> None:
    recipe = parse_recipe(MINIMAL)
    expected = SERIES_DEFAULTS["train"]
    assert recipe.train.iterations == expected["iterations"] and recipe.train.lr == expected["lr"]
    assert recipe.train.selection == "average" and recipe.train.qat_bits == 8
    assert recipe.train.augment.active and recipe.train.label_smoothing == expected["label_smoothing"]
    assert recipe.task.options()["val_fraction"] == 0.0 and recipe.quant.input.frac == 5
    assert recipe.model.cell == "cmru" and recipe.model.hidden_size == 16


def test_what_a_recipe_writes_wins_null_and_false_included() -> None:
    data = dict(MINIMAL, train={"qat_bits": None, "augment": False, "lr": 3e-3})
    recipe = parse_recipe(data)
    assert recipe.train.qat_bits is None and not recipe.train.augment.active and recipe.train.lr == 3e-3
    assert recipe.train.iterations == SERIES_DEFAULTS["train"]["iterations"]
    partial = parse_recipe(dict(MINIMAL, train={"augment": {"scaling": 0.5}}))
    assert partial.train.augment.scaling == 0.5
    assert partial.train.augment.time_warp == SERIES_DEFAULTS["train"]["augment"]["time_warp"]


def test_a_selection_that_reads_validation_keeps_the_carve_out() -> None:
    recipe = parse_recipe(dict(MINIMAL, train={"selection": "smoothed"}))
    assert "val_fraction" not in recipe.task.options()  # the task's own default (0.1)


def test_backbone_models_train_in_float_and_other_tasks_keep_the_schema_defaults() -> None:
    assert parse_recipe(dict(MINIMAL, model={"arch": "backbone", "cell": "cmru"})).train.qat_bits is None
    synthetic = parse_recipe({"name": "cf", "task": {"name": "copy_first"}})
    assert synthetic.train.selection == "smoothed" and synthetic.train.lr == 1e-3
    assert not synthetic.train.augment.active and synthetic.train.qat_bits is None


def test_a_stored_run_recipe_means_what_it_meant(tmp_path: Path) -> None:
    """A run directory stores every key: parsing it again fills in nothing."""
    recipe = parse_recipe(dict(MINIMAL, train={"selection": "smoothed", "lr": 1e-3}))
    stored = tmp_path / "recipe.yaml"
    stored.write_text(recipe_text(recipe))
    assert holds_recipe(stored, recipe)
    assert parse_recipe(dict(MINIMAL, train={"selection": "smoothed", "lr": 1e-3})) == recipe


FRONTED = [{"cell": "cmru", "size": 16, "eps": 1.0, "dcls": ORDER_FRONT_END}]


def _model(**model) -> dict:
    return dict(MINIMAL, model={"arch": "hardware", "cell": "cmru", "hidden_size": 16, **model})


def test_a_lone_order_blind_layer_gets_the_dcls_front_end_written_out() -> None:
    recipe = parse_recipe(MINIMAL)
    assert recipe.model.layers == FRONTED and recipe.model.cell_options == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", OrderBlindWarning)
        warn_if_order_blind(recipe)  # the network it trains reads the order
    files = parse_recipe(
        dict(
            MINIMAL,
            task={"name": "files", "train": str(TINY / "tiny_TRAIN.ts"), "test": str(TINY / "tiny_TEST.ts")},
        )
    )
    assert files.model.layers == FRONTED
    alpha = parse_recipe(_model(cell="alphacmru", alpha_surr=2.0, cell_options={"learn_alpha": True}))
    assert alpha.model.layers == [
        {"cell": "alphacmru", "size": 16, "eps": 1.0, "alpha_surr": 2.0, "learn_alpha": True}
        | {"dcls": ORDER_FRONT_END}
    ]


@pytest.mark.parametrize(
    "data",
    [
        _model(cell_options={"dcls": None}),  # the opt-out
        _model(layers=[{"cell": "cmru", "size": 16, "eps": 1.0}]),  # layers written out
        _model(pooling="sum"),
        _model(eps=0.0),
        _model(cell="mingru"),
        _model(arch="backbone"),
        dict(_model(), train={"eps_schedule": "anneal"}),  # deployed at eps 0
        dict(_model(), task={"name": "copy_first"}),  # a synthetic task may want a count
    ],
)
def test_no_front_end_where_the_recipe_says_otherwise_or_the_network_reads_the_order(data: dict) -> None:
    model = parse_recipe(data).model
    assert all(layer.get("dcls") is None for layer in model.hardware_layers())


def test_the_opt_out_trains_the_lone_layer_and_is_told() -> None:
    alone = parse_recipe(_model(cell_options={"dcls": None}))
    assert alone.model.hardware_layers()[0]["dcls"] is None
    with pytest.warns(OrderBlindWarning):
        warn_if_order_blind(alone)


def test_a_stored_run_keeps_the_network_it_trained(tmp_path: Path) -> None:
    """A run stored before the front end was a default (``layers: null``) parses to the lone layer,
    and a run of the minimal recipe now stores the front end it trained with."""
    stored = parse_recipe(_model(cell_options={"dcls": None})).model_dump(mode="json")
    stored["model"]["cell_options"] = {}  # what such a run stored: every key, layers null
    assert stored["model"]["layers"] is None
    assert parse_recipe(stored).model.hardware_layers()[0].get("dcls") is None
    recipe = parse_recipe(MINIMAL)
    path = tmp_path / "recipe.yaml"
    path.write_text(recipe_text(recipe))
    assert holds_recipe(path, recipe) and parse_recipe(yaml.safe_load(path.read_text())) == recipe


@pytest.mark.parametrize("options", [{}, {"dcls": None}])
def test_the_minimal_recipe_deploys_bit_exact_with_and_without_the_front_end(options, tmp_path) -> None:
    from codesign.quant.export import export_run
    from codesign.train import train

    data = _model(cell_options=options) if options else dict(MINIMAL)
    data["task"] = {"name": "files", "train": str(TINY / "tiny_TRAIN.ts"), "test": str(TINY / "tiny_TEST.ts")}
    data["train"] = {"iterations": 20, "eval_every": 10, "threads": 1}
    run = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrderBlindWarning)  # the opt-out is told: tested above
        train(parse_recipe(data), run, progress=False)
    bundle, report = export_run(run, tmp_path / "bundle")
    assert report["torch_vs_golden_mismatches"] == 0
    front = bundle.manifest.layers[0].dcls
    assert (front is not None) == (not options)
    if front is not None:  # span auto: the tiny series are 19 frames long, so delays under 16
        assert front.span == 16 and front.taps == ORDER_FRONT_END["taps"]


def test_codesign_train_says_which_network_it_trains(tmp_path) -> None:
    """The front end is a default the recipe does not write: the command names it before training."""
    from typer.testing import CliRunner

    from codesign.cli import app

    recipe = tmp_path / "mine.yaml"
    files = {"train": str(TINY / "tiny_TRAIN.ts"), "test": str(TINY / "tiny_TEST.ts")}
    data = dict(MINIMAL, task={"name": "files", **files}, train={"iterations": 10, "eval_every": 10})
    recipe.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["train", str(recipe), "--out", str(tmp_path / "run"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "network: DCLS 8xauto > CMRU 16, last pooling, 8-bit weights" in result.output
    assert "inputs: each channel standardised with the training set's mean" in result.output


@pytest.mark.parametrize(
    ("steps", "span"), [(None, 64), (1, 2), (2, 2), (24, 16), (29, 16), (64, 64), (100, 64), (1460, 64)]
)
def test_span_auto_keeps_the_delays_inside_the_series(steps, span) -> None:
    from codesign.nn.dcls import auto_span

    assert auto_span(steps) == span


def test_span_auto_is_resolved_from_the_task_length_and_stride() -> None:
    """The model (and so the bundle) holds a number; the recipe keeps ``auto``."""
    from types import SimpleNamespace

    from codesign.train.models import build_model

    task = SimpleNamespace(kind="classification", target="last", input_size=2, output_size=3, length=24)
    recipe = parse_recipe(MINIMAL)
    assert recipe.model.layers[0]["dcls"]["span"] == "auto"
    assert build_model(recipe, task).fronts[0].kernel_length == 16
    strided = parse_recipe(_model(input_stride=4))  # 24 frames, 4 a step: 6 steps
    assert build_model(strided, task).fronts[0].kernel_length == 4
    explicit = parse_recipe(_model(cell_options={"dcls": {"taps": 2, "span": 64}}))
    assert build_model(explicit, task).fronts[0].kernel_length == 64


@pytest.mark.parametrize(
    ("dcls", "message"),
    [
        ({"taps": 8}, "dcls needs taps and span"),
        ({"taps": 8, "span": "long"}, "dcls.span must be a positive integer or auto"),
        ({"taps": 0, "span": 16}, "dcls.taps must be a positive integer, got 0"),
        ("8x64", "dcls needs taps and span"),
    ],
)
def test_a_bad_front_end_is_named_before_training(dcls, message) -> None:
    from codesign.errors import CodesignError

    with pytest.raises(CodesignError, match=message):
        parse_recipe(_model(cell_options={"dcls": dcls}))


def test_series_scaling_is_decided_on_a_file_with_missing_values_when_they_are_filled(tmp_path: Path) -> None:
    """Levels six orders of magnitude apart pick series scaling; a NaN inside a series must not
    make the check fall back to channel scaling when task.missing fills it."""
    import numpy as np

    from codesign.train.defaults import series_scaled

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 20)) * np.repeat(10.0 ** (2 * np.arange(4)), 2)[:, None]
    x[1, 5] = np.nan
    np.savez(tmp_path / "t.npz", X=x, y=np.array(list("abababab")))
    task = {"name": "files", "train": str(tmp_path / "t.npz")}
    assert not series_scaled(task)  # refused by default: the task names the value when built
    assert series_scaled(dict(task, missing="ffill"))
