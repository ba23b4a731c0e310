"""A user's own classification data: a training and a test file, read into labelled series.

A recipe's ``task: {name: files, train: PATH, test: PATH}`` (paths relative to the recipe file, or
absolute) reads:

* ``.ts``: the aeon / sktime format: ``@`` header lines, then ``@data`` and one series per line,
  dimensions separated by ``:``, values by ``,``, the class label last; univariate or multivariate,
  equal or unequal length, ``?`` for a missing value;
* ``.tsv`` / ``.txt`` / ``.csv``: the UCR archive's text format: one series per line, the label in the
  first column, values separated by tabs, commas or spaces, every line of one width; ``NaN`` (or
  an empty cell) is a missing value, and the missing values at the end of a shorter series are
  its padding, which is dropped;
* ``.arff``: Weka's format (aeon's reader: numeric attributes, or a relational attribute for
  multivariate sets, the class last);
* ``.npz``: arrays ``X`` of real numbers of shape ``(n, t)`` or ``(n, t, c)`` and ``y`` of shape
  ``(n,)``, read without unpickling (an object array is refused); the frames at the end of a series
  whose every channel is ``NaN`` are its padding, which is dropped.

Values (:func:`read_labelled_series`): every one finite and at most :data:`MAX_MAGNITUDE` in size.
A missing value (``NaN``, ``?``) inside a series is refused unless ``missing`` (``task.missing``)
says how to fill it (:data:`MISSING_MODES`): ``zero`` makes it 0 after scaling (the channel's mean
under the channel scaling), ``ffill`` repeats the last value before it in its channel (the first
one after it at the start of a series).

Cross-validation (``codesign fit``): ``folds: K`` with ``fold: i`` (0 <= i < K) trains on the
training file without its fold ``i`` and scores on fold ``i`` (the test split); the test file is
read and checked but not used. The folds are stratified, disjoint and drawn from ``fold_seed``
(``null``: the run seed, as ``split_seed``; :func:`codesign.data.series.fold_mask`); every class
needs at least K series in the training file.

Labels may be strings or numbers; a training file needs two classes or more and some class with
two series. Each malformed file stops with one line naming the file, the line, array or series,
and what was expected. The splits, standardisation and padding are those of ``task: uea``
(:mod:`codesign.data.series`).
"""

from __future__ import annotations

import functools
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from codesign.data._util import FixedSplits, check
from codesign.data.series import (
    MAX_MAGNITUDE,
    LabelledSplits,
    build_splits,
    check_normalize,
    fold_mask,
)
from codesign.errors import CodesignError

__all__ = ["FORMATS", "MAX_MAGNITUDE", "MISSING_MODES", "FileDataset", "read_labelled_series"]

Series = tuple[list[np.ndarray], np.ndarray]
"""Series ``(channels, time)`` (float64, NaN for missing) and their labels as strings."""

_Read = tuple[list[np.ndarray], np.ndarray, list[int] | None]
"""What a reader gives: series, labels and, for a text format, each series' line number."""

FORMATS = (".ts", ".tsv", ".txt", ".csv", ".arff", ".npz")

MISSING_MODES = ("refuse", "zero", "ffill")
"""What ``task.missing`` may say about a missing value inside a series (``refuse``: the default)."""

_SEPARATOR = re.compile(r" *[\t,] *| +")
"""UCR text: a tab or comma (with spaces around it) or a run of spaces; two tabs or commas in a row
hold an empty cell between them."""


def _bad(path: Path, where: str | None, what: str) -> CodesignError:
    return CodesignError(f"{path}{f' {where}' if where else ''}: {what}")


def _label(value) -> str:
    """A label as text: integral numbers without a fraction (``1.0`` and ``1`` are one class)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value).strip()


def _floats(path: Path, where: str, text: str) -> np.ndarray:
    values = []
    for item in text.split(","):
        item = item.strip()
        if item in ("?", "", "NaN", "nan"):
            values.append(np.nan)
            continue
        try:
            values.append(float(item))
        except ValueError:
            raise _bad(path, where, f"{item!r} is not a number (or ? for a missing value)") from None
    return np.asarray(values, dtype=np.float64)


# --------------------------------------------------------------------------- .ts
def _read_ts(path: Path) -> _Read:
    header: dict[str, str] = {}
    series, labels, lines, dims = [], [], [], None
    in_data = False
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "%")):  # aeon's own files also comment with %
            continue
        if not in_data:
            if not line.startswith("@"):
                raise _bad(path, f"line {number}", "expected a @ header line or @data before the series")
            key, _, value = line[1:].partition(" ")
            if key.lower() == "data":
                in_data = True
                if header.get("timestamps", "false").lower() == "true":
                    raise _bad(path, f"line {number}", "@timeStamps true is not supported (values only)")
                if header.get("classlabel", "true").split()[:1] != ["true"]:
                    raise _bad(path, None, "@classLabel false: a classification file needs labels")
            else:
                header[key.lower()] = value.strip()
            continue
        parts = line.split(":")
        if len(parts) < 2:
            raise _bad(path, f"line {number}", "expected values:...:label (dimensions separated by ':')")
        channels = [_floats(path, f"line {number}", p) for p in parts[:-1]]
        if dims is None:
            dims = len(channels)
            declared = header.get("dimensions") or header.get("dimension")
            if declared and declared.isdigit() and int(declared) != dims:
                raise _bad(path, f"line {number}", f"{dims} dimensions, expected {declared} (@dimensions)")
        elif len(channels) != dims:
            raise _bad(
                path, f"line {number}", f"{len(channels)} dimensions, expected {dims} like the first series"
            )
        lengths = {len(c) for c in channels}
        if len(lengths) != 1:
            raise _bad(
                path,
                f"line {number}",
                f"dimensions of lengths {sorted(lengths)}: one series needs one length",
            )
        series.append(np.stack(channels))
        labels.append(_label(parts[-1]))
        lines.append(number)
    if not in_data:
        raise _bad(path, None, "no @data line: not a .ts file")
    return series, np.asarray(labels), lines


# --------------------------------------------------------------------------- UCR text
def _read_ucr(path: Path) -> _Read:
    series, labels, lines, width = [], [], [], None
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        fields = _SEPARATOR.split(line)
        if len(fields) < 2:
            raise _bad(path, f"line {number}", "expected a label and at least one value")
        if width is None:
            width = (len(fields), number)
        elif len(fields) != width[0]:
            raise _bad(
                path,
                f"line {number}",
                f"{len(fields)} fields, expected {width[0]} like line {width[1]}: every line holds a "
                "label and one series at one width (pad a shorter series with NaN at its end)",
            )
        values = _floats(path, f"line {number}", ",".join(fields[1:]))
        finite = np.flatnonzero(~np.isnan(values))
        if not len(finite):
            raise _bad(path, f"line {number}", "no value (every entry is missing)")
        values = values[: finite[-1] + 1]  # UCR pads shorter series with NaN at the end
        series.append(values[None, :])
        lines.append(number)
        try:
            labels.append(_label(float(fields[0])))
        except ValueError:
            labels.append(_label(fields[0]))
    return series, np.asarray(labels), lines


# --------------------------------------------------------------------------- ARFF
def _read_arff(path: Path) -> _Read:
    from codesign.extras import require

    require("aeon", "reading .arff files")
    from aeon.datasets import load_from_arff_file

    text = path.read_text(encoding="utf-8", errors="replace").lower()
    if "@data" not in text or "@attribute" not in text:
        raise _bad(path, None, "not a readable ARFF classification file (no @attribute or @data section)")
    try:
        X, y = load_from_arff_file(str(path))
    except Exception as err:  # noqa: BLE001 - aeon raises many kinds; the user gets one line
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise _bad(path, None, f"not a readable ARFF classification file ({message})") from None
    series = [np.asarray(s, dtype=np.float64).reshape(-1, np.asarray(s).shape[-1]) for s in X]
    return series, np.asarray([_label(v) for v in y]), None


# --------------------------------------------------------------------------- .npz
def _read_npz(path: Path) -> _Read:
    if not zipfile.is_zipfile(path):
        raise _bad(
            path, None, "not a valid .npz file (not a zip archive of arrays: write it with numpy.savez)"
        )
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files if k in ("X", "y")}
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise _bad(path, None, f"not a valid .npz file ({err})") from None
    except ValueError as err:
        if "allow_pickle" not in str(err):  # a member that is no .npy array
            raise _bad(path, None, f"not a valid .npz file ({str(err).splitlines()[0]})") from None
        raise _bad(
            path, None, "holds object arrays, which would need unpickling: save numbers or strings"
        ) from None
    for key in ("X", "y"):
        if key not in arrays:
            raise _bad(
                path, None, f"no array {key!r} (expected X of shape (n, t) or (n, t, c) and y of shape (n,))"
            )
    X, y = arrays["X"], arrays["y"]
    if X.ndim not in (2, 3) or X.dtype.kind not in "biuf":
        raise _bad(
            path,
            "array 'X'",
            f"has shape {X.shape} and dtype {X.dtype}, expected real numbers of shape (n, t) or (n, t, c)",
        )
    if y.ndim != 1 or len(y) != len(X):
        raise _bad(path, "array 'y'", f"has shape {y.shape}, expected ({len(X)},): one label per series of X")
    X = X.astype(np.float64)
    series = [_unpad(s[None, :] if X.ndim == 2 else s.T) for s in X]  # each (channels, time)
    return series, np.asarray([_label(v) for v in y.tolist()]), None


def _unpad(s: np.ndarray) -> np.ndarray:
    """Series ``s`` ``(channels, time)`` without the frames at its end whose every channel is NaN."""
    kept = np.flatnonzero(~np.isnan(s).all(axis=0))
    return s[:, : kept[-1] + 1] if len(kept) else s[:, :0]


_READERS = {
    ".ts": _read_ts,
    ".tsv": _read_ucr,
    ".txt": _read_ucr,
    ".csv": _read_ucr,
    ".arff": _read_arff,
    ".npz": _read_npz,
}


@functools.cache
def _read_cached(path: Path, mtime_ns: int) -> _Read:
    series, labels, lines = _READERS[path.suffix.lower()](path)
    if not series:
        raise _bad(path, None, "holds no series")
    return series, labels, lines


def _names(path: Path) -> list[str]:
    """How a message names each series of the file ``path`` (read already)."""
    _, labels, lines = _read_cached(path.resolve(), path.stat().st_mtime_ns)
    return [
        f"series {i} (label {y!r}{f', line {lines[i]}' if lines else ''})"
        for i, y in enumerate(labels.tolist())
    ]


def read_labelled_series(path: str | Path, *, missing: str = "refuse") -> Series:
    """Series ``(channels, time)`` and their labels from one file of :data:`FORMATS`, each value
    checked (finite, at most :data:`MAX_MAGNITUDE` in size) and the missing values inside a series
    refused or filled as ``missing`` (one of :data:`MISSING_MODES`) says: ``zero`` keeps them NaN
    (0 after scaling, :func:`codesign.data.series.build_splits`), ``ffill`` fills them here."""
    path = Path(path)
    if missing not in MISSING_MODES:
        raise CodesignError(f"task files: missing must be one of {', '.join(MISSING_MODES)}, got {missing!r}")
    if path.suffix.lower() not in _READERS:
        raise _bad(path, None, f"unknown extension {path.suffix!r}; allowed: {', '.join(FORMATS)}")
    if not path.is_file():
        raise _bad(path, None, "file not found")
    series, labels, _ = _read_cached(path.resolve(), path.stat().st_mtime_ns)
    names = _names(path)
    return [_checked(path, names[i], s, missing) for i, s in enumerate(series)], labels


def _checked(path: Path, where: str, s: np.ndarray, missing: str) -> np.ndarray:
    """Series ``s`` of ``path`` checked value by value, its missing values filled as ``missing`` says."""
    if s.shape[1] == 0:
        raise _bad(
            path, where, "holds no value (no frame, or every one missing): a series needs at least one"
        )
    wrong = np.isinf(s) | (np.abs(np.nan_to_num(s)) > MAX_MAGNITUDE)
    if wrong.any():
        channel, frame = (int(i[0]) for i in np.nonzero(wrong))
        raise _bad(
            path,
            f"{where} frame {frame} channel {channel}",
            f"{s[channel, frame]:g} is refused: values must be finite numbers of magnitude at most "
            f"{MAX_MAGNITUDE:g} (rescale the recording, for example to other units)",
        )
    gaps = np.isnan(s)
    if not gaps.any() or missing == "zero":
        return s
    if missing == "refuse":
        channel, frame = (int(i[0]) for i in np.nonzero(gaps))
        raise _bad(
            path,
            f"{where} frame {frame} channel {channel}",
            "a missing value (NaN or ?) inside the series is refused: fill it in the file, or in a recipe "
            "set task.missing: zero (0 after scaling, the channel's mean) or ffill (the last value before it)",
        )
    return _ffill(s)


def _ffill(s: np.ndarray) -> np.ndarray:
    """``s`` ``(channels, time)`` with each missing value the last one before it in its channel (the
    first one after it at the start); a channel without any value stays NaN (0 after scaling)."""
    out = s.copy()
    frames = np.arange(s.shape[1])
    for c in range(s.shape[0]):
        known = np.flatnonzero(~np.isnan(s[c]))
        if len(known):
            last = known[np.clip(np.searchsorted(known, frames, side="right") - 1, 0, None)]
            out[c] = s[c, last]
    return out


_CACHE: dict[object, dict] = {}


@dataclass(frozen=True)
class FileDataset(LabelledSplits, FixedSplits):
    """``task: {name: files, train: PATH, test: PATH}``: a classification set from two files."""

    kind = "classification"
    target = "last"

    train: str = ""
    test: str = ""
    val_fraction: float = 0.1
    min_val: int = 20
    split_seed: int | None = None
    normalize: bool | str = True  # one of NORMALIZE_MODES; checked in __post_init__
    padding: Literal["front", "back"] = "front"
    folds: int | None = None
    fold: int | None = None
    fold_seed: int | None = None
    missing: Literal["refuse", "zero", "ffill"] = "refuse"  # MISSING_MODES

    def __post_init__(self) -> None:
        check_normalize(self.normalize, "files")
        check(bool(self.train) and bool(self.test), "files", "needs train: PATH and test: PATH")
        check(
            (self.folds is None) == (self.fold is None),
            "files",
            f"folds and fold go together (got folds={self.folds}, fold={self.fold})",
        )
        if self.folds is not None:
            check(
                self.folds >= 2 and 0 <= self.fold < self.folds,
                "files",
                f"fold {self.fold} of folds {self.folds}: need folds >= 2 and 0 <= fold < folds",
            )
        check(
            0.0 <= self.val_fraction < 1.0,
            "files",
            f"val_fraction must be in [0, 1) (0: no validation carve-out), got {self.val_fraction}",
        )
        check(self.min_val >= 0, "files", f"min_val must be >= 0, got {self.min_val}")
        self._data()  # a malformed file fails here, naming the file and the line or array

    def _data(self) -> dict:
        key = (
            self,
            *(Path(p).stat().st_mtime_ns if Path(p).is_file() else 0 for p in (self.train, self.test)),
        )
        if key not in _CACHE:
            train = read_labelled_series(self.train, missing=self.missing)
            test = read_labelled_series(self.test, missing=self.missing)
            self._check_pair(train, test)
            names = [[f"{p} {n}" for n in _names(Path(p))] for p in (self.train, self.test)]
            if self.folds is not None:
                (train, names[0]), (test, names[1]) = self._fold(train, names[0])
            _CACHE[key] = build_splits(
                train,
                test,
                val_fraction=self.val_fraction,
                min_val=self.min_val,
                split_seed=self.split_seed,
                normalize=self.normalize,
                padding=self.padding,
                names=(names[0], names[1]),
            )
        return _CACHE[key]

    def _check_pair(self, train: Series, test: Series) -> None:
        """Refuse a training file that cannot teach a classifier, and a test file unlike it."""
        c_train, c_test = train[0][0].shape[0], test[0][0].shape[0]
        if c_test != c_train:
            raise CodesignError(
                f"{self.test}: series of {c_test} channels, but the training file {self.train} holds "
                f"series of {c_train}: both files need the same channels"
            )
        values, counts = np.unique(train[1], return_counts=True)
        if len(values) < 2:
            raise CodesignError(
                f"{self.train}: one class only ({str(values[0])!r}): a classifier needs two classes or more"
            )
        if len(values) > 2 and counts.max() == 1:
            raise CodesignError(
                f"{self.train}: each of its {len(values)} series has a label of its own, so no class can "
                "be learned: is the label missing? (UCR text holds it in the first column, .ts last)"
            )
        unseen = sorted(str(v) for v in set(test[1]) - set(train[1]))
        if unseen:
            raise CodesignError(
                f"{self.test}: labels {unseen[:5]} do not occur in the training file {self.train}"
            )

    def _fold(
        self, train: Series, names: list[str]
    ) -> tuple[tuple[Series, list[str]], tuple[Series, list[str]]]:
        """(the training file without fold ``fold``, fold ``fold``), each with its series' names: the
        train and test of one CV run."""
        series, labels = train
        values, counts = np.unique(labels, return_counts=True)
        short = [
            f"{v!r} ({n})" for v, n in zip(values.tolist(), counts.tolist(), strict=True) if n < self.folds
        ]
        if short:
            raise CodesignError(
                f"{self.train}: {self.folds} folds need at least {self.folds} series of every class; "
                f"classes {', '.join(short[:5])} have fewer (use fewer folds)"
            )
        held = fold_mask(labels, self.folds, self.fold, 0 if self.fold_seed is None else self.fold_seed)
        keep, out = np.flatnonzero(~held), np.flatnonzero(held)
        return (
            (([series[i] for i in keep], labels[keep]), [names[i] for i in keep]),
            (([series[i] for i in out], labels[out]), [names[i] for i in out]),
        )
