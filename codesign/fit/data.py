"""The user's two files, checked once before anything trains: readable, the test file's classes
all in the training file, and enough series of every class for the folds."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from codesign.data.files import read_labelled_series
from codesign.data.series import variance_kept
from codesign.errors import CodesignError

__all__ = ["FitData", "check_files"]


@dataclass(frozen=True)
class FitData:
    """What a fit needs to know of the files: where they are and their shape."""

    train: str  # absolute paths: the run directories' recipes find them from anywhere
    test: str
    classes: int
    train_series: int
    test_series: int
    length: int  # the longest series of the training file
    channels: int
    fingerprint: str  # of both files' bytes: the cached runs belong to these contents
    variance_kept: dict[int, float] = field(default_factory=dict, hash=False)  # {S: share kept}

    def task(self, folds: int | None = None, fold: int | None = None, seed: int | None = None) -> dict:
        """The ``task: files`` section of a run: one fold of the training file, or both files."""
        task = {"name": "files", "train": self.train, "test": self.test}
        if folds is not None:
            task |= {"folds": folds, "fold": fold, "fold_seed": seed}
        return task


def check_files(train: str | Path, test: str | Path, folds: int) -> FitData:
    """Read both files and refuse, with one line each, what no fit can use."""
    if folds < 2:
        raise CodesignError(f"--folds {folds}: cross-validation needs at least 2 folds")
    for what, path in (("training", train), ("test", test)):
        if not Path(path).is_file():
            raise CodesignError(f"{what} file not found", path=path)
    x_train, y_train = read_labelled_series(train)
    x_test, y_test = read_labelled_series(test)
    c_train, c_test = x_train[0].shape[0], x_test[0].shape[0]
    if c_test != c_train:
        raise CodesignError(
            f"series of {c_test} channels, but the training file {train} holds series of {c_train}: "
            "both files need the same channels",
            path=test,
        )
    counts = Counter(str(v) for v in y_train)
    unseen = sorted({str(v) for v in y_test} - set(counts))
    if unseen:
        raise CodesignError(
            f"labels {unseen[:5]} do not occur in the training file {train}: a network cannot learn "
            "classes it never sees",
            path=test,
        )
    short = sorted((n, c) for c, n in counts.items() if n < folds)
    if short:
        listed = ", ".join(f"{c!r} ({n})" for n, c in short[:5])
        raise CodesignError(
            f"--folds {folds} needs at least {folds} series of every class; {listed} "
            f"{'has' if len(short) == 1 else 'have'} fewer: use fewer folds or more data",
            path=train,
        )
    if len(counts) < 2:
        raise CodesignError(f"one class only ({next(iter(counts))!r}): nothing to classify", path=train)
    return FitData(
        train=str(Path(train).resolve()),
        test=str(Path(test).resolve()),
        classes=len(counts),
        train_series=len(y_train),
        test_series=len(y_test),
        length=max(s.shape[1] for s in x_train),
        channels=int(x_train[0].shape[0]),
        fingerprint=_fingerprint(train, test),
        variance_kept=variance_kept(list(x_train)),
    )


def _fingerprint(*paths: str | Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]
