"""Lorenz and Mackey-Glass: the integrators solve their equations, windows line up, MASE."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from codesign.data.base import Task
from codesign.data.dynamics import Lorenz, MackeyGlass, lorenz_trajectories, mackey_glass_series, mase
from codesign.errors import CodesignError

SMALL_LORENZ = {"length": 60, "train_size": 16, "val_size": 6, "test_size": 6, "burn_in": 2.0}
SMALL_MG = {"length": 80, "horizon": 7, "train_series": 3, "val_size": 4, "test_size": 4, "burn_in": 60.0}


def test_mase_definition():
    y = np.array([[0.0, 1.0, 3.0, 2.0]])
    pred = np.array([[0.5, 1.0, 2.0, 2.0]])
    # mean |y - pred| = (0.5 + 0 + 1 + 0) / 4; naive error = (1 + 2 + 1) / 3
    assert mase(pred, y) == pytest.approx((1.5 / 4) / (4 / 3))
    t = torch.tensor(np.stack([y, 2 * y], axis=-1), dtype=torch.float32)  # (1, 4, 2)
    assert mase(t, t) == 0.0
    assert mase(t.roll(1, dims=1), t, reduction="none").shape == (1, 2)
    with pytest.raises(ValueError):
        mase(np.zeros((2, 3)), np.zeros((2, 4)))


def test_lorenz_integrator_solves_the_ode():
    h = 0.003  # fine sampling, so that central differences are accurate
    traj = lorenz_trajectories(4, 300, np.random.default_rng(0), sample_step=h, substeps=1, burn_in=5.0)
    x, y, z = traj[..., 0], traj[..., 1], traj[..., 2]
    deriv = (traj[:, 2:] - traj[:, :-2]) / (2 * h)  # central differences
    rhs = np.stack([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z], axis=-1)[:, 1:-1]
    assert np.abs(deriv - rhs).max() / np.abs(rhs).max() < 2e-3
    assert -25 < x.min() and x.max() < 25 and 0 < z.min() and z.max() < 55  # on the attractor


def test_lorenz_task_windows_noise_and_unobserved_dims():
    task = Lorenz(**SMALL_LORENZ)
    assert isinstance(task, Task)
    x, y = task.sample(5, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 60, 1) and x.dtype == torch.float32
    assert torch.equal(x[:, 1:], y[:, :-1])  # next-step prediction
    x2, _ = task.sample(5, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    xv, yv = task.split("val", 3)
    assert torch.equal(xv, task.split("val", 3)[0]) and not torch.equal(xv, task.split("test", 3)[0])
    assert abs(float(xv.mean())) < 1.5 and 0.3 < float(xv.std()) < 2.0  # standardised
    # the naive forecast scores MASE ~ 1; a noisy observation is not smooth
    assert 0.8 < mase(xv, yv) < 1.2
    # dim=1 on the same test seed: the unobserved coordinate of the same trajectories
    raw = task.trajectories(2, np.random.default_rng(1))
    assert raw.shape == (2, 61, 3)
    t1 = Lorenz(**{**SMALL_LORENZ, "dim": 1, "normalize": False, "noise": 0.0})
    t0 = Lorenz(**{**SMALL_LORENZ, "dim": 0, "normalize": False, "noise": 0.0})
    a, b = t0.split("test", 5)[0][..., 0].double(), t1.split("test", 5)[0][..., 0].double()
    assert not torch.equal(a, b)
    dxdt = (a[:, 2:] - a[:, :-2]) / (2 * 0.015)
    assert torch.allclose(dxdt, 10 * (b - a)[:, 1:-1], rtol=0.02, atol=0.3)  # dx/dt = sigma (y - x)
    with pytest.raises(CodesignError, match="dim"):
        Lorenz(dim=3)


def test_mackey_glass_integrator_solves_the_delay_equation():
    h, tau = 0.25, 17.0
    s = mackey_glass_series(
        2, 400, np.random.default_rng(0), sample_step=h, integration_step=h, burn_in=100.0
    )
    lag = int(tau / h)
    deriv = (s[:, lag + 2 :] - s[:, lag:-2]) / (2 * h)
    now, delayed = s[:, lag + 1 : -1], s[:, 1 : -lag - 1]
    rhs = 0.2 * delayed / (1 + delayed**10) - 0.1 * now
    assert np.abs(deriv - rhs).max() < 2e-3
    assert 0.2 < s.min() and s.max() < 1.5


def test_mackey_glass_task_horizon_and_determinism():
    task = MackeyGlass(**SMALL_MG)
    assert isinstance(task, Task)
    x, y = task.sample(6, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (6, 80, 1)
    assert torch.equal(y[:, :-7], x[:, 7:])  # predict x_{t + horizon}
    assert torch.equal(x, task.sample(6, torch.Generator().manual_seed(0))[0])
    xv, yv = task.split("val", 0)
    assert xv.shape == (4, 80, 1) and torch.equal(yv[:, :-7], xv[:, 7:])
    assert not torch.equal(xv, task.split("test", 0)[0])
    with pytest.raises(CodesignError, match="multiple of integration_step"):
        MackeyGlass(tau=17.1)
