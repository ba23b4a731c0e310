"""Labelled series (a training and a test file) into the train / val / test tensors of a task.

Shared by every task made of files (``uea``: the sets aeon ships; ``files``: a user's own):

* Test split: the test file. Validation: a stratified carve-out of the training file chosen by
  ``split_seed``; the rest is the training set. Its size is ``val_fraction`` of the file but at
  least ``min_val`` series, never more than :data:`MAX_VAL_FRACTION` of the file, and at least one
  series of every class that has two.
* Inputs ``(batch, time, channels)``, standardised as ``normalize`` says (:data:`NORMALIZE_MODES`):
  ``channel`` (or ``true``, the default) scales each channel with the training set's mean and
  standard deviation; ``series`` scales each series' channel with its own, so recordings whose
  levels differ by orders of magnitude all reach the input grid; ``none`` (or ``false``) keeps
  the values; ``auto`` picks ``series`` when the training series' spreads differ that much
  (:func:`resolve_normalize`) and ``channel`` otherwise. Missing values (NaN) become 0 after that.
  A scaled value beyond :data:`MAX_MAGNITUDE` is refused, naming the series.
* Unequal lengths are padded to the longest series of both files with zeros (the training mean
  after standardisation) in front (``padding="front"``: every series ends on its real last frame,
  which last pooling reads) or at the back.
* Labels: the class names sorted (numerically when all are numbers), indexed from 0.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import torch

from codesign.errors import CodesignError

__all__ = [
    "MAX_MAGNITUDE",
    "MAX_VAL_FRACTION",
    "NORMALIZE_MODES",
    "SERIES_SPREAD_RATIO",
    "LabelledSplits",
    "build_splits",
    "check_normalize",
    "fold_mask",
    "resolve_normalize",
    "sort_key",
    "standardise",
    "variance_kept",
]

MAX_MAGNITUDE = 1e30
"""The largest magnitude of a value, as read and after scaling. The inputs reach the network as
float32, whose largest value is 3.4e38: a bound of 1e30 leaves eight orders of magnitude for the
products and sums of the first layer under ``normalize: none``, and the float64 moments of the
scaling (squares up to 1e60) stay far from float64's 1.8e308. Real recordings sit many orders
of magnitude inside it; a value beyond it is a broken cell or a sentinel."""

MAX_VAL_FRACTION = 0.25
"""The validation carve-out never takes more than this fraction of the training file."""

NORMALIZE_MODES = ("channel", "series", "none", "auto")
"""What a series task's ``normalize`` may say (``true`` means ``channel``, ``false`` ``none``)."""

SERIES_SPREAD_RATIO = 0.1
"""``normalize: auto`` scales each series on its own when the median training series' standard
deviation is under this fraction of its channel's: channel standardisation would then leave
most series flatter than a tenth of the input range, and on an 8-bit input grid of +-4 (32 steps
per standard deviation) many of them flat. PLAID's currents (median 0.003) and
Covid3Month_disc's counts (0.009) are such sets; the UCR shape sets, already standardised per
series, sit at 1, and BasicMotions' and PigCVP's channels at 0.6."""


def check_normalize(value: object, task: str) -> str:
    """``value`` as one of :data:`NORMALIZE_MODES` (``true``/``false`` accepted), or an error
    naming the task key and what is allowed."""
    if value is True or value is False:
        return "channel" if value else "none"
    if isinstance(value, str) and value in NORMALIZE_MODES:
        return value
    raise CodesignError(
        f"task {task}: normalize must be one of {', '.join(NORMALIZE_MODES)} (or true/false), got {value!r}"
    )


def resolve_normalize(mode: str, fit: list[np.ndarray]) -> str:
    """``mode`` with ``auto`` decided from the training series ``fit`` (each ``(channels, time)``):
    ``series`` when their median standard deviation, per channel, is under
    :data:`SERIES_SPREAD_RATIO` of the channel's over all of them, else ``channel``."""
    if mode != "auto":
        return mode
    whole = np.nanstd(np.concatenate(fit, axis=1), axis=1)
    own = np.stack([_own_moments(s)[1][:, 0] for s in fit])  # (series, channels)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a channel missing from every series
        ratio = np.nanmedian(own, axis=0) / whole
    return "series" if bool(np.any(ratio[whole > 0] < SERIES_SPREAD_RATIO)) else "channel"


def variance_kept(series: list[np.ndarray], strides: tuple[int, ...] = (2, 4, 8, 16)) -> dict[int, float]:
    """``{S: fraction}``: how much of the series' variance (about each series' own mean, pooled
    over series and channels) the means of ``S`` consecutive frames keep. Near 1 for smooth series,
    near ``1/S`` for frame-to-frame noise: what an input stride of ``S`` would keep of the data
    (:func:`codesign.nn.stride.auto_stride`). Frames with a missing value are dropped."""
    out = {}
    for stride in strides:
        kept = total = 0.0
        for s in series:
            s = s[:, np.isfinite(s).all(axis=0)]
            s = s - s.mean(axis=1, keepdims=True) if s.size else s
            usable = s.shape[1] // stride * stride
            if usable == 0:
                continue
            windows = s[:, :usable].reshape(s.shape[0], -1, stride).mean(axis=2)
            kept += float((windows**2).sum()) * stride
            total += float((s[:, :usable] ** 2).sum())
        out[stride] = kept / total if total > 0 else 1.0
    return out


def _own_moments(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation ``(channels, 1)`` of one series over its frames (NaN where a
    channel has no value)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN channel: NaN, handled by callers
        return np.nanmean(s, axis=1, keepdims=True), np.nanstd(s, axis=1, keepdims=True)


def _scale(s: np.ndarray, mean: np.ndarray, std: np.ndarray, mode: str) -> np.ndarray:
    """One series ``(channels, time)`` standardised as ``mode`` says."""
    if mode == "none":
        return s
    if mode == "series":
        mean, std = _own_moments(s)
        mean = np.where(np.isfinite(mean), mean, 0.0)
        std = np.where(np.isfinite(std) & (std > 0), std, 1.0)
    return (s - mean) / std


def standardise(
    x: np.ndarray, mode: str, mean: np.ndarray | None = None, std: np.ndarray | None = None
) -> np.ndarray:
    """Recordings ``(N, T, M)`` scaled as :func:`build_splits` scales them: ``mode`` one of
    ``channel`` (with the per-channel ``mean`` and ``std``), ``series`` or ``none``; missing values
    (NaN) become 0 after scaling. Returns float64."""
    x = np.asarray(x, dtype=np.float64)
    m = None if mean is None else np.asarray(mean, dtype=np.float64)[:, None]
    s = None if std is None else np.asarray(std, dtype=np.float64)[:, None]
    out = np.stack([_scale(series.T, m, s, mode).T for series in x]) if len(x) else x.copy()
    return np.nan_to_num(out, nan=0.0)


def sort_key(label: str):
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def build_splits(
    train: tuple[list[np.ndarray], np.ndarray],
    test: tuple[list[np.ndarray], np.ndarray],
    *,
    val_fraction: float,
    min_val: int,
    split_seed: int | None,
    normalize: bool | str,
    padding: Literal["front", "back"],
    names: tuple[list[str], list[str]] | None = None,
) -> dict:
    """``{"classes", "sets": {split: (x, lengths, y)}, "channels", "width", "normalize"}`` from
    series ``(channels, time)`` and their string labels; ``normalize`` in the result is the mode
    used (``auto`` decided). ``names``: how an error names each training and test series (by
    default ``training series i`` and ``test series i``); a scaled value beyond
    :data:`MAX_MAGNITUDE` is refused."""
    tr_x, tr_y = train
    te_x, te_y = test
    if names is None:
        names = (
            [f"training series {i}" for i in range(len(tr_x))],
            [f"test series {i}" for i in range(len(te_x))],
        )
    classes = sorted(set(tr_y) | set(te_y), key=sort_key)
    index = {c: i for i, c in enumerate(classes)}
    ytr = np.array([index[c] for c in tr_y])
    yte = np.array([index[c] for c in te_y])
    val_mask = _carve_validation(ytr, len(classes), val_fraction, min_val, split_seed)
    fit = [s for s, v in zip(tr_x, val_mask, strict=True) if not v]
    cat = np.concatenate(fit, axis=1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a channel without any value: NaN, then 0
        mean = np.nanmean(cat, axis=1, keepdims=True)
        std = np.nanstd(cat, axis=1, keepdims=True)
    std[~(std > 0)] = 1.0
    mode = resolve_normalize(check_normalize(normalize, "series"), fit)
    width = max(s.shape[1] for s in tr_x + te_x)
    channels = tr_x[0].shape[0]

    def pack(
        picked: list[int], series: list[np.ndarray], named: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out = np.zeros((len(picked), width, channels), dtype=np.float32)
        lengths = np.array([series[i].shape[1] for i in picked])
        for j, i in enumerate(picked):
            z = _scaled(series[i], mean, std, mode, named[i])
            if padding == "front":
                out[j, width - len(z) :] = z
            else:
                out[j, : len(z)] = z
        return torch.from_numpy(out), torch.from_numpy(lengths)

    sets = {
        "train": (*pack(list(np.flatnonzero(~val_mask)), tr_x, names[0]), torch.from_numpy(ytr[~val_mask])),
        "val": (*pack(list(np.flatnonzero(val_mask)), tr_x, names[0]), torch.from_numpy(ytr[val_mask])),
        "test": (*pack(list(range(len(te_x))), te_x, names[1]), torch.from_numpy(yte)),
    }
    moments = {"mean": mean.ravel().tolist(), "std": std.ravel().tolist()}
    return {
        "classes": classes,
        "sets": sets,
        "channels": channels,
        "width": width,
        "normalize": mode,
        "moments": moments,
    }


def _scaled(s: np.ndarray, mean: np.ndarray, std: np.ndarray, mode: str, name: str) -> np.ndarray:
    """Series ``s`` ``(channels, time)`` scaled as ``mode`` says, missing values 0, as ``(time,
    channels)``; a value beyond :data:`MAX_MAGNITUDE` after scaling is refused, naming ``name``."""
    with np.errstate(all="ignore"):
        z = np.nan_to_num(_scale(s, mean, std, mode), nan=0.0, posinf=np.inf, neginf=-np.inf)
    wrong = ~(np.abs(z) <= MAX_MAGNITUDE)
    if wrong.any():
        channel, frame = (int(i[0]) for i in np.nonzero(wrong))
        spread = f" (the training series' standard deviation there is {std[channel, 0]:.3g})"
        raise CodesignError(
            f"{name} frame {frame} channel {channel}: {s[channel, frame]:g} is {z[channel, frame]:.3g} "
            f"after scaling (normalize: {mode}){spread if mode == 'channel' else ''}, beyond "
            f"{MAX_MAGNITUDE:g}: rescale the files or set task.normalize: series"
        )
    return z.T


def _carve_validation(
    ytr: np.ndarray, n_classes: int, val_fraction: float, min_val: int, split_seed: int | None
) -> np.ndarray:
    """Stratified validation mask over the training file."""
    rng = np.random.default_rng(0 if split_seed is None else split_seed)
    if val_fraction == 0:  # no carve-out: the whole file trains (selection that needs no validation)
        return np.zeros(len(ytr), dtype=bool)
    fraction = max(val_fraction, min(min_val / len(ytr), MAX_VAL_FRACTION))
    val_mask = np.zeros(len(ytr), dtype=bool)
    for c in range(n_classes):
        idx = np.flatnonzero(ytr == c)
        k = int(fraction * len(idx) + 0.5)  # half up (not to even)
        if len(idx) > 1:
            k = min(max(k, 1), len(idx) - 1)
        val_mask[rng.permutation(idx)[:k]] = True
    return val_mask


def fold_mask(labels: np.ndarray, folds: int, fold: int, seed: int) -> np.ndarray:
    """The held-out series of fold ``fold`` of ``folds`` (a boolean mask over ``labels``).

    Stratified: each class's series, shuffled by ``seed``, are dealt round the folds in turn,
    continuing where the previous class stopped, so every fold holds ``n_c / folds`` (rounded) of
    each class and the folds differ in size by at most one series. The folds of one seed are
    disjoint and cover every series once. A class with fewer series than folds is refused (the
    caller names the file).
    """
    if folds < 2 or not 0 <= fold < folds:
        raise ValueError(f"fold {fold} of {folds}: need folds >= 2 and 0 <= fold < folds")
    rng = np.random.default_rng(seed)
    owner = np.empty(len(labels), dtype=np.int64)
    dealt = 0
    for c in sorted(set(labels.tolist()), key=lambda v: sort_key(str(v))):
        idx = rng.permutation(np.flatnonzero(labels == c))
        owner[idx] = (dealt + np.arange(len(idx))) % folds
        dealt += len(idx)
    return owner == fold


class LabelledSplits:
    """The task properties of a set made by :func:`build_splits`; a subclass provides ``_data()``."""

    def _data(self) -> dict:
        raise NotImplementedError  # each task says where its files are

    @property
    def classes(self) -> list[str]:
        return list(self._data()["classes"])

    @property
    def input_size(self) -> int:
        return int(self._data()["channels"])

    @property
    def output_size(self) -> int:
        return len(self._data()["classes"])

    @property
    def length(self) -> int:
        return int(self._data()["width"])

    @property
    def normalization(self) -> str:
        """How the inputs were standardised: ``channel``, ``series`` or ``none`` (``auto`` decided)."""
        return str(self._data()["normalize"])

    @property
    def input_scaling(self) -> dict:
        """What a host applies to a raw recording to reproduce these inputs, in the form of the
        bundle's ``provenance.input_scaling`` (``codesign/bundle/host.py``): the training
        channels' mean and standard deviation, each series on its own, or nothing."""
        data = self._data()
        mode = str(data["normalize"])
        if mode == "channel":
            return {"mode": "channel", **data["moments"]}
        return {"mode": mode}

    def _split_arrays(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        x, _, y = self._data()["sets"][name]
        return x, y

    def lengths(self, name: str) -> torch.Tensor:
        """True (unpadded) length of each series of a split."""
        return self._data()["sets"][name][1].clone()
