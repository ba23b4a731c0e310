"""task: files: a user's own data in .ts, UCR text, .arff and .npz, with one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.data.files import FileDataset, read_labelled_series
from codesign.errors import CodesignError
from codesign.train.recipe import apply_override, load_recipe

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- writers
def write_ts(path: Path, series: list[np.ndarray], labels: list) -> Path:
    lines = ["@problemName t", "@timeStamps false", "@missing true", f"@dimensions {series[0].shape[0]}"]
    lines += [f"@classLabel true {' '.join(sorted({str(v) for v in labels}))}", "@data"]
    for s, y in zip(series, labels, strict=True):
        dims = [",".join("?" if np.isnan(v) else repr(float(v)) for v in d) for d in s]
        lines.append(":".join(dims) + f":{y}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_ucr(path: Path, series: list[np.ndarray], labels: list, sep: str = "\t") -> Path:
    width = max(s.shape[1] for s in series)
    rows = []
    for s, y in zip(series, labels, strict=True):
        values = list(s[0]) + [np.nan] * (width - s.shape[1])  # UCR pads with NaN at the end
        rows.append(sep.join([str(y), *("NaN" if np.isnan(v) else repr(float(v)) for v in values)]))
    path.write_text("\n".join(rows) + "\n")
    return path


def write_arff(path: Path, series: list[np.ndarray], labels: list) -> Path:
    width = series[0].shape[1]
    classes = sorted({str(v) for v in labels})
    lines = ["@relation t"] + [f"@attribute a{i} numeric" for i in range(width)]
    lines += [f"@attribute target {{{','.join(classes)}}}", "@data"]
    lines += [
        ",".join([*(repr(float(v)) for v in s[0]), str(y)]) for s, y in zip(series, labels, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def make_series(rng, n: int, channels: int, lengths: tuple[int, int]) -> list[np.ndarray]:
    return [rng.standard_normal((channels, int(rng.integers(*lengths)))).round(3) for _ in range(n)]


# --------------------------------------------------------------------------- round trips
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 1000),
    channels=st.integers(1, 3),
    unequal=st.booleans(),
    string_labels=st.booleans(),
)
def test_ts_round_trips(tmp_path, seed, channels, unequal, string_labels) -> None:
    rng = np.random.default_rng(seed)
    series = make_series(rng, 6, channels, (3, 9) if unequal else (5, 6))
    series[0][0, 1] = np.nan  # a missing value
    labels = [("cat", "dog")[i % 2] if string_labels else i % 3 for i in range(6)]
    got, got_labels = read_labelled_series(write_ts(tmp_path / f"x{seed}.ts", series, labels), missing="zero")
    assert [str(v) for v in labels] == list(got_labels)
    for a, b in zip(series, got, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("sep", ["\t", ",", " "])
def test_ucr_text_round_trips_and_drops_nan_padding(tmp_path, sep) -> None:
    rng = np.random.default_rng(1)
    series = make_series(rng, 5, 1, (4, 8))
    labels = [1, 2, 1, 2, 1]
    got, got_labels = read_labelled_series(write_ucr(tmp_path / "x.tsv", series, labels, sep))
    assert list(got_labels) == ["1", "2", "1", "2", "1"]
    for a, b in zip(series, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_arff_and_npz_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(2)
    series = make_series(rng, 6, 1, (7, 8))
    labels = ["a", "b", "a", "b", "a", "b"]
    got, got_labels = read_labelled_series(write_arff(tmp_path / "x.arff", series, labels))
    assert list(got_labels) == labels
    np.testing.assert_allclose(np.stack(got), np.stack(series))
    x3 = rng.standard_normal((4, 9, 2))  # (n, t, c)
    np.savez(tmp_path / "m.npz", X=x3, y=np.array(["u", "v", "u", "v"]))
    got, got_labels = read_labelled_series(tmp_path / "m.npz")
    assert got[0].shape == (2, 9) and list(got_labels) == ["u", "v", "u", "v"]
    np.testing.assert_array_equal(got[1], x3[1].T)
    np.savez(tmp_path / "u.npz", X=x3[:, :, 0], y=np.array([0.0, 1.0, 0.0, 1.0]))
    got, got_labels = read_labelled_series(tmp_path / "u.npz")
    assert got[0].shape == (1, 9) and list(got_labels) == ["0", "1", "0", "1"]


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "bad.ts",
            "@data\n1,2:3,4:a\n1,2:a\n",
            r"bad\.ts line 3: 1 dimensions, expected 2 like the first series",
        ),
        ("bad.ts", "1,2:a\n", r"bad\.ts line 1: expected a @ header line"),
        ("bad.ts", "@data\n1,x:a\n", r"bad\.ts line 2: 'x' is not a number"),
        ("bad.ts", "@dimensions 3\n@data\n1,2:3,4:a\n", r"line 3: 2 dimensions, expected 3 \(@dimensions\)"),
        ("bad.ts", "@problemName t\n", r"bad\.ts: no @data line"),
        ("bad.ts", "@data\n1,2:3:a\n", r"line 2: dimensions of lengths \[1, 2\]"),
        ("bad.tsv", "1\t0.5\n2\n", r"bad\.tsv line 2: expected a label and at least one value"),
        ("bad.txt", "1 0.5 zz\n", r"bad\.txt line 1: 'zz' is not a number"),
        ("bad.arff", "not arff\n", r"bad\.arff: not a readable ARFF classification file"),
        ("bad.parquet", "", r"unknown extension '\.parquet'; allowed: \.ts, \.tsv"),
    ],
)
def test_malformed_files_get_one_line(tmp_path, name, text, message) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CodesignError, match=message) as info:
        read_labelled_series(path)
    assert "\n" not in str(info.value)


def test_npz_errors_name_the_array(tmp_path) -> None:
    np.savez(tmp_path / "a.npz", X=np.zeros(10), y=np.zeros(10))
    with pytest.raises(
        CodesignError, match=r"a\.npz array 'X': has shape \(10,\).*expected real numbers of shape"
    ):
        read_labelled_series(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", X=np.zeros((3, 5)))
    with pytest.raises(CodesignError, match=r"b\.npz: no array 'y'"):
        read_labelled_series(tmp_path / "b.npz")
    np.savez(tmp_path / "c.npz", X=np.zeros((3, 5)), y=np.zeros(2))
    with pytest.raises(CodesignError, match=r"c\.npz array 'y': has shape \(2,\), expected \(3,\)"):
        read_labelled_series(tmp_path / "c.npz")
    np.savez(tmp_path / "d.npz", X=np.zeros((2, 5)), y=np.array([{"a": 1}, None], dtype=object))
    with pytest.raises(CodesignError, match=r"d\.npz: holds object arrays"):
        read_labelled_series(tmp_path / "d.npz")
    with pytest.raises(CodesignError, match=r"missing\.ts: file not found"):
        read_labelled_series(tmp_path / "missing.ts")


def test_train_and_test_must_agree(tmp_path) -> None:
    rng = np.random.default_rng(3)
    train = write_ts(tmp_path / "tr.ts", make_series(rng, 6, 2, (5, 6)), ["a", "b"] * 3)
    test = write_ts(tmp_path / "te.ts", make_series(rng, 4, 3, (5, 6)), ["a", "b"] * 2)
    with pytest.raises(
        CodesignError, match=r"te\.ts: series of 3 channels, but the training file .*tr\.ts holds series of 2"
    ):
        FileDataset(train=str(train), test=str(test))
    test = write_ts(tmp_path / "te2.ts", make_series(rng, 4, 2, (5, 6)), ["a", "c", "a", "c"])
    with pytest.raises(CodesignError, match=r"te2\.ts: labels \['c'\] do not occur in the training file"):
        FileDataset(train=str(train), test=str(test))


def test_splits_pad_in_front_and_standardise(tmp_path) -> None:
    rng = np.random.default_rng(4)
    series = make_series(rng, 40, 2, (5, 12))
    train = write_ts(tmp_path / "tr.ts", series, ["a", "b"] * 20)
    test = write_ts(tmp_path / "te.ts", make_series(rng, 10, 2, (5, 12)), ["b", "a"] * 5)
    task = FileDataset(train=str(train), test=str(test), min_val=8)
    x, y = task.split("train", 0)
    xv, _ = task.split("val", 0)
    assert task.input_size == 2 and task.output_size == 2 and task.classes == ["a", "b"]
    assert len(xv) == 8 and len(x) == 32 and x.shape[1] == task.length
    lengths = task.lengths("train")
    assert (x[0, : task.length - int(lengths[0])] == 0).all()  # padding in front


# --------------------------------------------------------------------------- recipes
def test_recipe_paths_are_relative_to_the_recipe_and_overrides_to_cwd(tmp_path, monkeypatch) -> None:
    rng = np.random.default_rng(5)
    data = tmp_path / "data"
    data.mkdir()
    write_ts(data / "x_TRAIN.ts", make_series(rng, 30, 1, (6, 7)), ["a", "b"] * 15)
    write_ts(data / "x_TEST.ts", make_series(rng, 10, 1, (6, 7)), ["a", "b"] * 5)
    recipe = yaml.safe_load((REPO / "models" / "classify_files_hw.yaml").read_text())
    recipe["task"] = {"name": "files", "train": "data/x_TRAIN.ts", "test": "data/x_TEST.ts"}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    monkeypatch.chdir(REPO)  # elsewhere: the recipe's paths still resolve against its folder
    loaded = load_recipe(tmp_path / "r.yaml")
    assert loaded.task.options()["train"] == str((data / "x_TRAIN.ts").resolve())
    monkeypatch.chdir(tmp_path)
    loaded = load_recipe(
        tmp_path / "r.yaml", ["task.test=data/x_TRAIN.ts", "train.iterations=7", "task.min_val=4"]
    )
    assert loaded.task.options()["test"] == str((data / "x_TRAIN.ts").resolve())
    assert loaded.train.iterations == 7 and loaded.task.options()["min_val"] == 4
    with pytest.raises(CodesignError, match="unknown recipe key 'tsk'"):
        apply_override({}, "tsk.train=x")
    with pytest.raises(CodesignError, match="is not KEY=VALUE"):
        apply_override({}, "task.train")


def test_train_and_export_a_file_task(tmp_path) -> None:
    from typer.testing import CliRunner

    from codesign.cli import app

    run, bundle = tmp_path / "run", tmp_path / "bundle"
    result = CliRunner().invoke(
        app,
        ["train", str(REPO / "models" / "classify_files_hw.yaml"), "--out", str(run), "--quiet",
         "--set", "train.iterations=40", "--set", "train.eval_every=20", "--set",
         "model.layers=[{cell: mingru, size: 4}, {cell: cmru, size: 4, eps: 1.0}]"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    assert "mismatches 0/30" in " ".join(result.output.split())  # the console wraps lines
    result = CliRunner().invoke(app, ["train", str(REPO / "models" / "classify_files_hw.yaml"), "--out",
                                      str(tmp_path / "r2"), "--set", "task.train=nowhere.ts"])  # fmt: skip
    assert result.exit_code == 2 and "nowhere.ts: file not found" in "".join(result.output.split("\n"))


# --------------------------------------------------------------------------- scaling
def spread_series(rng, n: int, length: int) -> list[np.ndarray]:
    """Series whose levels differ by orders of magnitude (like PLAID's appliance currents)."""
    return [rng.standard_normal((1, length)) * 10.0 ** rng.integers(-3, 3) + 5.0 for _ in range(n)]


def test_series_normalisation_gives_each_series_its_own_scale(tmp_path) -> None:
    rng = np.random.default_rng(6)
    train = write_ucr(tmp_path / "tr.tsv", spread_series(rng, 20, 30), ["a", "b"] * 10)
    test = write_ucr(tmp_path / "te.tsv", spread_series(rng, 6, 30), ["a", "b"] * 3)
    channel = FileDataset(train=str(train), test=str(test), val_fraction=0.0)
    series = FileDataset(train=str(train), test=str(test), val_fraction=0.0, normalize="series")
    auto = FileDataset(train=str(train), test=str(test), val_fraction=0.0, normalize="auto")
    raw = FileDataset(train=str(train), test=str(test), val_fraction=0.0, normalize=False)
    assert (channel.normalization, series.normalization, auto.normalization) == (
        "channel",
        "series",
        "series",
    )
    x = series.split("test", 0)[0].numpy()[..., 0]
    np.testing.assert_allclose(x.mean(axis=1), 0.0, atol=1e-5)
    np.testing.assert_allclose(x.std(axis=1), 1.0, rtol=1e-4)
    flat = channel.split("test", 0)[0].numpy()[..., 0].std(axis=1)
    assert np.median(flat) < 0.1  # one scale for all leaves most series flat: why auto picks series
    raw_x = raw.split("test", 0)[0].numpy()[..., 0]
    assert raw.normalization == "none" and raw_x.mean() > 4.0


def test_auto_keeps_channel_scaling_for_series_of_one_level(tmp_path) -> None:
    rng = np.random.default_rng(7)
    train = write_ts(tmp_path / "tr.ts", make_series(rng, 20, 2, (8, 12)), ["a", "b"] * 10)
    test = write_ts(tmp_path / "te.ts", make_series(rng, 4, 2, (8, 12)), ["a", "b"] * 2)
    task = FileDataset(train=str(train), test=str(test), val_fraction=0.0, normalize="auto")
    assert task.normalization == "channel"
    with pytest.raises(
        CodesignError, match=r"task files: normalize must be one of channel, series, none, auto"
    ):
        FileDataset(train=str(train), test=str(test), normalize="per-series")


def test_the_series_defaults_scale_spread_series_on_their_own(tmp_path) -> None:
    """A recipe that does not write ``normalize`` gets ``series`` written out where one scale per
    channel would flatten most series, and keeps the channel scaling (no key) elsewhere; what a
    recipe writes wins."""
    rng = np.random.default_rng(8)
    spread = write_ucr(tmp_path / "s.tsv", spread_series(rng, 20, 30), ["a", "b"] * 10)
    level = write_ucr(tmp_path / "l.tsv", make_series(rng, 20, 1, (30, 31)), ["a", "b"] * 10)
    recipe = REPO / "models" / "classify_files_hw.yaml"
    for train, want in ((spread, "series"), (level, None)):
        loaded = load_recipe(recipe, [f"task.train={train}", f"task.test={train}"])
        assert loaded.task.options().get("normalize") == want
    written = load_recipe(recipe, [f"task.train={spread}", f"task.test={spread}", "task.normalize=channel"])
    assert written.task.options()["normalize"] == "channel"
    with pytest.raises(CodesignError, match=r"task option 'normalize': got 3, which is none of bool, str"):
        load_recipe(recipe, [f"task.train={spread}", f"task.test={spread}", "task.normalize=3"])


def test_a_stored_recipe_keeps_the_scaling_it_trained_with(tmp_path) -> None:
    """A run stored before the series defaults chose ``normalize`` holds no such key: it trained
    with each channel standardised, and reading its recipe back must not pick ``series`` from its
    data, nor may a new run of the same settings reuse it."""
    import yaml as _yaml

    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import holds_recipe, make_recipe_task, recipe_text

    rng = np.random.default_rng(9)
    spread = write_ucr(tmp_path / "s.tsv", spread_series(rng, 20, 30), ["a", "b"] * 10)
    data = {"name": "old", "task": {"name": "files", "train": str(spread), "test": str(spread)}}
    new = parse_recipe(data)
    assert new.task.options()["normalize"] == "series"
    stored = _yaml.safe_load(recipe_text(new))
    del stored["task"]["normalize"]  # what a run trained before the choice existed stores
    (tmp_path / "recipe.yaml").write_text(_yaml.safe_dump(stored))
    old = parse_recipe(stored, tmp_path / "recipe.yaml", stored=True)
    assert "normalize" not in old.task.options()
    assert make_recipe_task(old).normalization == "channel"
    assert make_recipe_task(new).normalization == "series"
    assert not holds_recipe(tmp_path / "recipe.yaml", new)
