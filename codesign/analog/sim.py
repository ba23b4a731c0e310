"""Runs: a :class:`~codesign.analog.spec.SimSpec` (or a deck's text) through ngspice, and the small
functions every measurement reads its vectors with (crossings, time averages, supply powers).

:class:`Ctx` holds how decks run (corner, timeout, where decks and logs are kept) and counts the
runs and their simulator time, so a check can report what it cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.analog.cells import VDD
from codesign.analog.ngspice import SimResult, run_deck
from codesign.analog.spec import SimSpec

POWER_VECS = ["i(vdd)", "i(vddb)", "i(vsrc)"]
"""The three supplies' currents: core, bias generators, input sources."""


@dataclass
class Ctx:
    """How to run decks: corner, timeouts, where to keep decks and logs."""

    corner: str = "tt"
    timeout: float = 300.0
    keep_dir: Path | None = None
    sim_wall_s: float = 0.0
    decks: int = 0

    def run(
        self,
        deck: str,
        name: str,
        outputs: list[str],
        tran_stop: dict[str, float] | None = None,
        timeout: float | None = None,
    ) -> SimResult:
        res = run_deck(
            deck,
            outputs=outputs,
            name=name,
            timeout=timeout or self.timeout,
            keep_dir=self.keep_dir,
            tran_stop=tran_stop,
        )
        self.sim_wall_s += res.wall_s
        self.decks += 1
        return res

    def simulate(
        self,
        spec: SimSpec,
        name: str,
        tran_stop: dict[str, float] | None = None,
        timeout: float | None = None,
    ) -> SimResult:
        """Run ``spec``'s deck; its analyses' tables come back under their names."""
        return self.run(spec.deck(), name, spec.outputs, tran_stop=tran_stop, timeout=timeout)


def crossing(x: np.ndarray, y: np.ndarray, level: float, *, start: int = 0) -> float:
    """First ``x`` (linear interpolation) at which ``y`` crosses ``level``, NaN if it never does."""
    s = np.sign(y[start:] - level)
    idx = np.nonzero(s[1:] * s[:-1] <= 0)[0]
    idx = [i for i in idx if s[i] != 0 or s[i + 1] != 0]
    if not idx:
        return float("nan")
    i = start + idx[0]
    y0, y1 = y[i], y[i + 1]
    if y1 == y0:
        return float(x[i])
    return float(x[i] + (level - y0) * (x[i + 1] - x[i]) / (y1 - y0))


def time_avg(t: np.ndarray, y: np.ndarray, t0: float, t1: float) -> float:
    """Average of ``y(t)`` over ``[t0, t1]`` (trapezoids on the simulator's time points)."""
    m = (t >= t0) & (t <= t1)
    if m.sum() < 2:
        return float(np.interp((t0 + t1) / 2, t, y))
    return float(np.trapezoid(y[m], t[m]) / (t[m][-1] - t[m][0]))


def powers_nw(tab: dict[str, np.ndarray], t0: float, t1: float) -> dict[str, float]:
    t = tab["scale"]
    return {
        "core_nW": -VDD * time_avg(t, tab["i(vdd)"], t0, t1) / 1e-9,
        "bias_nW": -VDD * time_avg(t, tab["i(vddb)"], t0, t1) / 1e-9,
        "input_nW": -VDD * time_avg(t, tab["i(vsrc)"], t0, t1) / 1e-9,
    }
