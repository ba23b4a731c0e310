"""Chaotic dynamical systems: Lorenz next-step prediction (mGRADE App. B.1) and Mackey-Glass
forecasting (suRNN paper App. E.1), both integrated here with fixed-step RK4 in numpy, plus the
MASE metric (Hyndman & Koehler 2006, mGRADE App. B.1.2).

Both are regressions at every step: inputs ``(batch, length, 1)``, targets ``(batch, length, 1)``.
Series are standardised (``normalize``) with the training data's per-dimension mean and standard
deviation; MASE does not depend on that affine scaling.

Lorenz
    ``dx/dt = sigma (y - x)``, ``dy/dt = x (rho - z) - y``, ``dz/dt = x y - beta z`` (the
    non-standardised flow, sigma 10, rho 28, beta 8/3), sampled every ``sample_step`` = 0.015 time
    units (about 100 points per period, like dysts' default) with ``substeps`` RK4 steps between
    samples. Initial states are random and burnt in for ``burn_in`` time units, so trajectories
    start on the attractor. Gaussian observation noise of ``noise`` (5%) times each dimension's
    attractor standard deviation is added to every point. The model sees dimension ``dim`` of the
    noisy trajectory and predicts its next (noisy) value. The training set is ``train_size``
    (2000) fixed trajectories drawn from ``data_seed``; ``train_size = 0`` draws fresh ones each
    batch. Validation and test trajectories come from their split seeds and do not depend on
    ``dim``: the same test seed with ``dim = 1`` or ``2`` gives the *unobserved* dimensions of the
    very same trajectories, which is how the paper tests generalisation.

Mackey-Glass
    ``dx/dt = beta x(t - tau) / (1 + x(t - tau)^n) - gamma x(t)`` (tau 17, beta 0.2, gamma 0.1,
    n 10), integrated with step ``integration_step`` (delayed values at half steps linearly
    interpolated) from a random constant history in [0.5, 1.5], burnt in for ``burn_in`` time
    units, sampled every ``sample_step`` = 1 time unit. The model sees ``x_t`` and predicts
    ``x_{t + horizon}`` at every step (paper: horizons 10 to 1000 over 5000 steps). Training
    windows are cut at random offsets from ``train_series`` long series drawn from
    ``data_seed``; validation and test series are independent, drawn from their split seeds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from codesign.data._util import check, numpy_rng, split_generator

_CACHE: dict[object, object] = {}


def mase(pred, target, reduction: str = "mean"):
    """Mean absolute scaled error of next-step predictions (mGRADE App. B.1.2).

    ``pred`` and ``target`` are ``(batch, time)`` or ``(batch, time, channels)`` (torch or numpy).
    For each sequence and channel: ``mean_t |y_t - yhat_t| / mean_{t>=2} |y_t - y_{t-1}|``, i.e.
    the error relative to the naive forecast that repeats the previous value; ``> 1`` means no
    predictive power. ``reduction="mean"`` averages over sequences and channels (a float),
    ``"none"`` returns the ``(batch,)`` or ``(batch, channels)`` array.
    """
    p = np.asarray(pred.detach().cpu() if isinstance(pred, torch.Tensor) else pred, dtype=np.float64)
    y = np.asarray(target.detach().cpu() if isinstance(target, torch.Tensor) else target, dtype=np.float64)
    if p.shape != y.shape or p.ndim not in (2, 3) or p.shape[1] < 2:
        raise ValueError(
            f"mase needs equal (batch, time[, channels]) shapes with time >= 2, got {p.shape}, {y.shape}"
        )
    err = np.abs(y - p).mean(axis=1)
    naive = np.abs(np.diff(y, axis=1)).mean(axis=1)
    per = err / np.maximum(naive, np.finfo(np.float64).tiny)
    if reduction == "none":
        return per
    if reduction != "mean":
        raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
    return float(per.mean())


# ---------------------------------------------------------------- Lorenz


def lorenz_trajectories(
    n: int,
    steps: int,
    rng: np.random.Generator,
    *,
    sigma: float = 10.0,
    rho: float = 28.0,
    beta: float = 8.0 / 3.0,
    sample_step: float = 0.015,
    substeps: int = 3,
    burn_in: float = 10.0,
) -> np.ndarray:
    """``n`` clean Lorenz trajectories ``(n, steps, 3)`` sampled every ``sample_step``."""

    def f(x, y, z):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    def rk4(s, h):
        x, y, z = s
        a = f(x, y, z)
        b = f(x + h / 2 * a[0], y + h / 2 * a[1], z + h / 2 * a[2])
        c = f(x + h / 2 * b[0], y + h / 2 * b[1], z + h / 2 * b[2])
        d = f(x + h * c[0], y + h * c[1], z + h * c[2])
        return tuple(s[i] + h / 6 * (a[i] + 2 * b[i] + 2 * c[i] + d[i]) for i in range(3))

    start = rng.normal(size=(3, n)) * np.array([[8.0], [9.0], [8.6]]) + np.array([[0.0], [0.0], [23.5]])
    s = (start[0], start[1], start[2])
    h = sample_step / substeps
    for _ in range(int(round(burn_in / h))):
        s = rk4(s, h)
    out = np.empty((n, steps, 3))
    for t in range(steps):
        out[:, t] = np.stack(s, axis=1)
        for _ in range(substeps):
            s = rk4(s, h)
    return out


@dataclass(frozen=True)
class Lorenz:
    kind = "regression"
    target = "every_step"

    length: int = 500
    dim: int = 0
    noise: float = 0.05
    train_size: int = 2000
    val_size: int = 200
    test_size: int = 200
    data_seed: int = 0
    normalize: bool = True
    sigma: float = 10.0
    rho: float = 28.0
    beta: float = 8.0 / 3.0
    sample_step: float = 0.015
    substeps: int = 3
    burn_in: float = 10.0

    def __post_init__(self) -> None:
        n = "lorenz"
        check(self.length >= 2, n, f"length must be >= 2, got {self.length}")
        check(self.dim in (0, 1, 2), n, f"dim must be 0, 1 or 2, got {self.dim}")
        check(self.noise >= 0, n, f"noise must be >= 0, got {self.noise}")
        check(self.train_size >= 0, n, f"train_size must be >= 0, got {self.train_size}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")
        check(
            self.sample_step > 0 and self.substeps >= 1 and self.burn_in >= 0,
            n,
            "need sample_step > 0, substeps >= 1, burn_in >= 0",
        )

    @property
    def input_size(self) -> int:
        return 1

    @property
    def output_size(self) -> int:
        return 1

    def _key(self) -> Lorenz:
        return dataclasses.replace(self, dim=0, val_size=1, test_size=1)  # what the data depend on

    def trajectories(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` noisy trajectories ``(n, length + 1, 3)`` (all three dimensions, not normalised)."""
        clean = lorenz_trajectories(
            n,
            self.length + 1,
            rng,
            sigma=self.sigma,
            rho=self.rho,
            beta=self.beta,
            sample_step=self.sample_step,
            substeps=self.substeps,
            burn_in=self.burn_in,
        )
        scale = self._stats()[1] if self.noise > 0 else 0.0
        return clean + rng.normal(size=clean.shape) * self.noise * scale

    def _stats(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-dimension mean and std of the clean attractor (from a reference set of ``data_seed``)."""
        key = ("lorenz-stats", self._key())
        if key not in _CACHE:
            rng = np.random.default_rng([self.data_seed, 7])
            ref = lorenz_trajectories(
                256,
                400,
                rng,
                sigma=self.sigma,
                rho=self.rho,
                beta=self.beta,
                sample_step=self.sample_step,
                substeps=self.substeps,
                burn_in=self.burn_in,
            ).reshape(-1, 3)
            _CACHE[key] = (ref.mean(axis=0), ref.std(axis=0))
        return _CACHE[key]

    def _to_task(self, traj: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        series = traj[..., self.dim]
        if self.normalize:
            mean, std = self._stats()
            series = (series - mean[self.dim]) / std[self.dim]
        t = torch.from_numpy(series.astype(np.float32))[..., None]
        return t[:, :-1].contiguous(), t[:, 1:].contiguous()

    def _train(self) -> np.ndarray:
        key = ("lorenz-train", self._key())
        if key not in _CACHE:
            _CACHE[key] = self.trajectories(self.train_size, np.random.default_rng([self.data_seed, 1]))
        return _CACHE[key]

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        if self.train_size == 0:
            return self._to_task(self.trajectories(n, numpy_rng(generator)))
        idx = torch.randint(0, self.train_size, (n,), generator=generator).numpy()
        return self._to_task(self._train()[idx])

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        size = {"val": self.val_size, "test": self.test_size}[name]
        key = ("lorenz-split", self._key(), name, seed, size)
        if key not in _CACHE:
            _CACHE[key] = self.trajectories(size, numpy_rng(split_generator(name, seed)))
        return self._to_task(_CACHE[key])


# ---------------------------------------------------------------- Mackey-Glass


def mackey_glass_series(
    n: int,
    steps: int,
    rng: np.random.Generator,
    *,
    tau: float = 17.0,
    beta: float = 0.2,
    gamma: float = 0.1,
    exponent: float = 10.0,
    sample_step: float = 1.0,
    integration_step: float = 0.25,
    burn_in: float = 500.0,
) -> np.ndarray:
    """``n`` Mackey-Glass series ``(n, steps)`` sampled every ``sample_step`` (RK4 for the DDE)."""
    h = integration_step
    lag = int(round(tau / h))
    sub = int(round(sample_step / h))
    burn = int(round(burn_in / h))
    total = burn + (steps - 1) * sub
    buf = np.empty((n, lag + 1 + total))
    buf[:, : lag + 1] = rng.uniform(0.5, 1.5, size=(n, 1))

    def f(x, xd):
        return beta * xd / (1.0 + xd**exponent) - gamma * x

    for k in range(lag, lag + total):
        x, d0, d1 = buf[:, k], buf[:, k - lag], buf[:, k - lag + 1]
        dm = 0.5 * (d0 + d1)
        k1 = f(x, d0)
        k2 = f(x + h / 2 * k1, dm)
        k3 = f(x + h / 2 * k2, dm)
        k4 = f(x + h * k3, d1)
        buf[:, k + 1] = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return buf[:, lag + burn :: sub][:, :steps]


@dataclass(frozen=True)
class MackeyGlass:
    kind = "regression"
    target = "every_step"

    length: int = 5000
    horizon: int = 100
    train_series: int = 64
    val_size: int = 64
    test_size: int = 64
    data_seed: int = 0
    normalize: bool = True
    tau: float = 17.0
    beta: float = 0.2
    gamma: float = 0.1
    exponent: float = 10.0
    sample_step: float = 1.0
    integration_step: float = 0.25
    burn_in: float = 500.0

    def __post_init__(self) -> None:
        n = "mackey_glass"
        check(self.length >= 1 and self.horizon >= 1, n, "length and horizon must be >= 1")
        check(self.train_series >= 1, n, f"train_series must be >= 1, got {self.train_series}")
        check(self.val_size >= 1 and self.test_size >= 1, n, "val_size and test_size must be >= 1")
        check(
            self.integration_step > 0 and self.tau > 0 and self.burn_in >= 0,
            n,
            "need integration_step > 0, tau > 0, burn_in >= 0",
        )
        for key in ("tau", "sample_step"):
            ratio = getattr(self, key) / self.integration_step
            check(
                abs(ratio - round(ratio)) < 1e-9 and round(ratio) >= 1,
                n,
                f"{key} ({getattr(self, key)}) must be a positive multiple of integration_step ({self.integration_step})",
            )

    @property
    def input_size(self) -> int:
        return 1

    @property
    def output_size(self) -> int:
        return 1

    def _series(self, n: int, steps: int, rng: np.random.Generator) -> np.ndarray:
        return mackey_glass_series(
            n,
            steps,
            rng,
            tau=self.tau,
            beta=self.beta,
            gamma=self.gamma,
            exponent=self.exponent,
            sample_step=self.sample_step,
            integration_step=self.integration_step,
            burn_in=self.burn_in,
        )

    def _key(self) -> MackeyGlass:
        return dataclasses.replace(self, val_size=1, test_size=1)

    def _train(self) -> tuple[np.ndarray, float, float]:
        """The training pool ``(train_series, 2 (length + horizon))`` and its mean and std."""
        key = ("mg-train", self._key())
        if key not in _CACHE:
            pool = self._series(
                self.train_series,
                2 * (self.length + self.horizon),
                np.random.default_rng([self.data_seed, 1]),
            )
            _CACHE[key] = (pool, float(pool.mean()), float(pool.std()))
        return _CACHE[key]

    def _windows(self, series: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        if self.normalize:
            _, mean, std = self._train()
            series = (series - mean) / std
        t = torch.from_numpy(series.astype(np.float32))[..., None]
        return t[:, : self.length].contiguous(), t[:, self.horizon : self.horizon + self.length].contiguous()

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        pool, _, _ = self._train()
        span = self.length + self.horizon
        rows = torch.randint(0, pool.shape[0], (n,), generator=generator).numpy()
        offsets = torch.randint(0, pool.shape[1] - span + 1, (n,), generator=generator).numpy()
        windows = pool[rows[:, None], offsets[:, None] + np.arange(span)[None, :]]
        return self._windows(windows)

    def split(self, name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        size = {"val": self.val_size, "test": self.test_size}[name]
        key = ("mg-split", self._key(), name, seed, size)
        if key not in _CACHE:
            _CACHE[key] = self._series(
                size, self.length + self.horizon, numpy_rng(split_generator(name, seed))
            )
        return self._windows(_CACHE[key])
