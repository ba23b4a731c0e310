"""task: files: a user's own data in .ts, UCR text, .arff and .npz, with one-line errors."""

from __future__ import annotations

import warnings
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


# --------------------------------------------------------------------------- bad recordings
def ucr_rows(rng, n: int = 12, length: int = 10) -> list[list]:
    """UCR rows (label first) of two classes, as text cells."""
    return [[("a", "b")[i % 2], *(f"{v:.3f}" for v in rng.standard_normal(length))] for i in range(n)]


def write_rows(path: Path, rows: list[list], sep: str = "\t") -> Path:
    path.write_text("\n".join(sep.join(str(v) for v in row) for row in rows) + "\n")
    return path


def one_line_error(match: str, build) -> str:
    """The message of the CodesignError ``build()`` raises: one line, matching ``match``, and no
    warning on the way (numpy's overflow warnings would reach the terminal)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CodesignError, match=match) as info:
            build()
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    ("cell", "shown"), [("inf", "inf"), ("-Infinity", "-inf"), ("1e300", "1e\\+300"), ("1e39", "1e\\+39")]
)
@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".ts", ".arff", ".npz"])
def test_non_finite_and_huge_values_are_refused_naming_the_series(tmp_path, cell, shown, suffix) -> None:
    rng = np.random.default_rng(10)
    series = make_series(rng, 8, 1, (6, 7))
    labels = ["a", "b"] * 4
    series[5][0, 2] = float(cell)
    if suffix == ".npz":
        path = tmp_path / "x.npz"
        np.savez(path, X=np.stack([s[0] for s in series]), y=np.array(labels))
    else:
        writer = {".ts": write_ts, ".arff": write_arff}.get(suffix, write_ucr)
        path = writer(tmp_path / f"x{suffix}", series, labels)
    good = write_ts(tmp_path / "good.ts", make_series(rng, 8, 1, (6, 7)), labels)
    where = rf"x\{suffix} series 5 \(label 'b'(, line \d+)?\) frame 2 channel 0: {shown} is refused: "
    message = one_line_error(
        where + r"values must be finite numbers of magnitude at most 1e\+30",
        lambda: read_labelled_series(path),
    )
    for train, test in ((path, good), (good, path)):  # as the training and as the test file
        assert one_line_error(
            where, lambda train=train, test=test: FileDataset(train=str(train), test=str(test))
        ).endswith(message[-60:])


def test_a_value_that_overflows_the_scaling_is_refused_naming_the_series(tmp_path) -> None:
    """Values within the bound that the training file's tiny spread would scale beyond it."""
    rng = np.random.default_rng(11)
    flat = [1e-20 * rng.standard_normal((1, 8)) for _ in range(10)]
    train = write_ucr(tmp_path / "tr.tsv", flat, ["a", "b"] * 5)
    test_series = [np.ones((1, 8)) for _ in range(4)]
    test_series[2][0, 3] = 1e12
    test = write_ucr(tmp_path / "te.tsv", test_series, ["a", "b"] * 2)
    one_line_error(
        r"te\.tsv series 2 \(label 'a', line 3\) frame 3 channel 0: 1e\+12 is [0-9.]+e\+3\d after scaling \(normalize: "
        r"channel\) \(the training series' standard deviation there is .*\), beyond 1e\+30: rescale the files "
        r"or set task.normalize: series",
        lambda: FileDataset(train=str(train), test=str(test), val_fraction=0.0),
    )
    ok = FileDataset(train=str(train), test=str(test), val_fraction=0.0, normalize="series")
    assert np.isfinite(ok.split("test", 0)[0].numpy()).all()


def test_missing_values_are_refused_unless_task_missing_says_how_to_fill_them(tmp_path) -> None:
    rng = np.random.default_rng(12)
    rows = ucr_rows(rng)
    rows[3][4] = "NaN"  # series 3, frame 3
    rows[6][1] = ""  # an empty cell: missing too (series 6, frame 0)
    path = write_rows(tmp_path / "gaps.tsv", rows)
    one_line_error(
        r"gaps\.tsv series 3 \(label 'b', line 4\) frame 3 channel 0: a missing value \(NaN or \?\) inside "
        r"the series is refused: fill it in the file, or in a recipe set task.missing: zero .* or ffill",
        lambda: read_labelled_series(path),
    )
    zero, _ = read_labelled_series(path, missing="zero")
    assert np.isnan(zero[3][0, 3]) and np.isnan(zero[6][0, 0]) and zero[3].shape == (1, 10)
    filled, _ = read_labelled_series(path, missing="ffill")
    assert filled[3][0, 3] == float(rows[3][3]) and filled[6][0, 0] == float(rows[6][2])  # the last, or next
    assert np.isfinite(np.concatenate(filled, axis=1)).all()
    task = FileDataset(train=str(path), test=str(path), val_fraction=0.0, missing="zero", normalize="none")
    x = task.split("test", 0)[0].numpy()[..., 0]
    assert x[3, 3] == 0.0 and x[3, 4] == np.float32(float(rows[3][5]))
    with pytest.raises(CodesignError, match=r"task option 'missing'"):
        load_recipe(
            REPO / "models" / "classify_files_hw.yaml",
            [f"task.train={path}", f"task.test={path}", "task.missing=mean"],
        )
    loaded = load_recipe(
        REPO / "models" / "classify_files_hw.yaml",
        [f"task.train={path}", f"task.test={path}", "task.missing=ffill"],
    )
    assert loaded.task.options()["missing"] == "ffill"


@pytest.mark.parametrize("suffix", [".ts", ".tsv", ".txt", ".csv", ".arff", ".npz"])
def test_random_bytes_get_one_line_per_format(tmp_path, suffix) -> None:
    path = tmp_path / f"noise{suffix}"
    path.write_bytes(np.random.default_rng(13).bytes(4000))
    good = write_ts(
        tmp_path / "good.ts", make_series(np.random.default_rng(14), 6, 1, (5, 6)), ["a", "b"] * 3
    )
    for train, test in ((path, good), (good, path)):
        message = one_line_error(
            rf"noise\{suffix}", lambda train=train, test=test: FileDataset(train=str(train), test=str(test))
        )
        assert "unpickling" not in message and "good.ts" not in message
    if suffix == ".npz":
        one_line_error(r"noise\.npz: not a valid \.npz file", lambda: read_labelled_series(path))


def test_npz_that_is_no_archive_of_real_numbers(tmp_path) -> None:
    (tmp_path / "empty.npz").write_bytes(b"")
    one_line_error(
        r"empty\.npz: not a valid \.npz file", lambda: read_labelled_series(tmp_path / "empty.npz")
    )
    np.save(tmp_path / "plain.npy", np.zeros((3, 4)))
    (tmp_path / "plain.npy").rename(tmp_path / "plain.npz")  # one array, no archive
    one_line_error(
        r"plain\.npz: not a valid \.npz file", lambda: read_labelled_series(tmp_path / "plain.npz")
    )
    np.savez(tmp_path / "c.npz", X=np.zeros((4, 5), dtype=complex), y=np.arange(4))
    one_line_error(
        r"c\.npz array 'X': has shape \(4, 5\) and dtype complex128, expected real numbers",
        lambda: read_labelled_series(tmp_path / "c.npz"),
    )


def test_npz_nan_padding_is_dropped_and_an_empty_series_refused(tmp_path) -> None:
    x = np.random.default_rng(15).standard_normal((4, 9, 2))
    x[1, 6:] = np.nan  # series 1: 6 frames, then padding
    np.savez(tmp_path / "pad.npz", X=x, y=np.array(["u", "v"] * 2))
    got, _ = read_labelled_series(tmp_path / "pad.npz")
    assert got[1].shape == (2, 6) and got[0].shape == (2, 9)
    x[2] = np.nan
    np.savez(tmp_path / "gone.npz", X=x, y=np.array(["u", "v"] * 2))
    one_line_error(
        r"gone\.npz series 2 \(label 'u'\): holds no value",
        lambda: read_labelled_series(tmp_path / "gone.npz"),
    )
    np.savez(tmp_path / "zero.npz", X=np.zeros((4, 0)), y=np.array(["u", "v"] * 2))
    one_line_error(
        r"zero\.npz series 0 \(label 'u'\): holds no value",
        lambda: read_labelled_series(tmp_path / "zero.npz"),
    )


def test_a_ragged_text_file_is_named_with_its_line(tmp_path) -> None:
    rng = np.random.default_rng(16)
    rows = ucr_rows(rng)
    rows[6] += ["0.5", "0.25"]
    ragged = write_rows(tmp_path / "ragged.tsv", rows)
    good = write_rows(tmp_path / "good.tsv", ucr_rows(rng))
    multi = write_ts(tmp_path / "multi.ts", make_series(rng, 6, 3, (10, 11)), ["a", "b"] * 3)
    expected = r"ragged\.tsv line 7: 13 fields, expected 11 like line 1: .*pad a shorter series with NaN"
    for train, test in ((ragged, good), (good, ragged), (ragged, multi), (multi, ragged)):
        message = one_line_error(
            expected, lambda train=train, test=test: FileDataset(train=str(train), test=str(test))
        )
        assert "good.tsv" not in message and "multi.ts" not in message


def test_a_training_file_must_hold_classes_to_learn(tmp_path) -> None:
    rng = np.random.default_rng(17)
    one = write_rows(tmp_path / "one.tsv", [["a", *row[1:]] for row in ucr_rows(rng)])
    one_line_error(r"one\.tsv: one class only \('a'\)", lambda: FileDataset(train=str(one), test=str(one)))
    unlabelled = write_rows(
        tmp_path / "nolabel.tsv", [[f"{v:.3f}" for v in rng.standard_normal(8)] for _ in range(12)]
    )
    one_line_error(
        r"nolabel\.tsv: each of its 12 series has a label of its own, so no class can be learned",
        lambda: FileDataset(train=str(unlabelled), test=str(unlabelled)),
    )


def test_codesign_train_prints_one_line_for_a_bad_file(tmp_path) -> None:
    from typer.testing import CliRunner

    from codesign.cli import app

    rows = ucr_rows(np.random.default_rng(18))
    rows[2][3] = "inf"
    bad = write_rows(tmp_path / "bad.tsv", rows)
    good = write_rows(tmp_path / "good.tsv", ucr_rows(np.random.default_rng(19)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = CliRunner().invoke(
            app,
            ["train", str(REPO / "models" / "classify_files_hw.yaml"), "--out", str(tmp_path / "run"),
             "--set", f"task.train={good}", "--set", f"task.test={bad}"],
        )  # fmt: skip
    text = " ".join(result.output.split())
    assert (
        result.exit_code == 2
        and "bad.tsv series 2 (label 'a', line 3) frame 2 channel 0: inf is refused" in text
    )
    assert "Warning" not in result.output


def test_ts_comment_lines_may_start_with_percent(tmp_path):
    """aeon's own .ts files (UnitTest) open with ``%`` comment lines, as ARFF does."""
    path = tmp_path / "pct.ts"
    path.write_text(
        "% a comment\n%# another\n@problemName t\n@timeStamps false\n@univariate true\n"
        "@classLabel true a b\n@data\n1,2,3:a\n3,2,1:b\n"
    )
    series, labels = read_labelled_series(path)
    assert [s.tolist() for s in series] == [[[1.0, 2.0, 3.0]], [[3.0, 2.0, 1.0]]]
    assert list(labels) == ["a", "b"]
