"""Turn integer test sequences into piecewise-linear current drives for a layer of BMRU cells.

Every step of the golden model becomes ``t_step`` seconds of three phases (per-step thresholds):

* A (``t_a``): the threshold currents open to the *widest* window (``|b| = B``) while the candidate
  sits at the previous step's value. That never flips a cell: a candidate inside the widest window
  holds, one outside it (``|c| > B >= |b|``) already updated to its own side last step.
* B (``t_b``): the candidate current moves to the new step's value, the window still at its widest
  (it can only cross the widest window when ``|c| > B``, where the golden model updates too).
* C (the rest): the thresholds close to the new step's window; the cell decides at the step's own
  margin ``||c| - |b||`` and the state is read at the end of the step.

A fixed-threshold cell's window never moves: its candidate moves straight to the new value (a
Schmitt trigger crossing its window ends on the right side).

Why not the window centre between steps (the first drive did so): the centre sits half a window
from each threshold, which for a narrow previous window (``|b|`` a few % of ``B``) is a near tie
the integer model never has; cells half switched there and then flipped when the next window
opened (JapaneseVowels: most of the disagreements that were not true near ties).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.analog.mapping import NeuronMap


@dataclass(frozen=True)
class Timing:
    t_step: float = 10e-3  # one golden-model step = one 10 ms frame
    t_a: float = 0.5e-3
    t_b: float = 1.0e-3
    t_ramp: float = 20e-6
    t_pre: float = 2e-3  # preamble: every cell is reset (candidate at its lowest level)

    def step_start(self, k: int) -> float:
        return self.t_pre + k * self.t_step

    @property
    def t_release(self) -> float:
        """End of a complementary pair's reset: inside phase A of the first step, where the candidate
        sits at the window centre (inside every window with ``|b| >= 1``, so both cells hold)."""
        return self.t_pre + self.t_a / 2

    def sample_time(self, k: int) -> float:
        return self.step_start(k + 1) - 0.1e-3

    def stop(self, steps: int) -> float:
        return self.step_start(steps)


@dataclass
class NeuronDrive:
    """PWL breakpoints of one neuron's candidate current and (per-step thresholds) its two threshold currents."""

    t_in: list[float]
    i_in: list[float]
    t_down: list[float] | None = None
    i_down: list[float] | None = None
    t_up: list[float] | None = None
    i_up: list[float] | None = None


class _Pwl:
    def __init__(self, v0: float) -> None:
        self.t = [0.0]
        self.v = [v0]

    def move(self, at: float, value: float, ramp: float) -> None:
        if value == self.v[-1]:
            return
        self.t += [at, at + ramp]
        self.v += [self.v[-1], value]


def neuron_drive(nm: NeuronMap, c: np.ndarray, b: np.ndarray, timing: Timing = Timing()) -> NeuronDrive:
    """Drive of one neuron for accumulators ``c, b`` of shape ``(steps,)``.

    Before the first step (the preamble) the candidate sits at its lowest level (every single cell
    resets low); at the first step's start it moves to the window centre, where a complementary
    pair's reset is released (:attr:`Timing.t_release`), and the thresholds start at the widest window.
    """
    c = np.asarray(c)
    b = np.asarray(b)
    i_in = nm.input_current(c, b)
    lo, hi = nm.threshold_currents(b)
    w_lo, w_hi = (float(v[0]) for v in nm.threshold_currents(np.array([nm.b_max])))
    cand = _Pwl(nm.low_level)
    dyn = not nm.fixed_threshold
    th_d, th_u = (_Pwl(w_lo), _Pwl(w_hi)) if dyn else (None, None)
    cand.move(timing.step_start(0), nm.i_centre, timing.t_ramp)
    for k in range(len(c)):
        t0 = timing.step_start(k)
        if dyn:
            th_d.move(t0, w_lo, timing.t_ramp)
            th_u.move(t0, w_hi, timing.t_ramp)
            cand.move(t0 + timing.t_a, float(i_in[k]), timing.t_ramp)
            th_d.move(t0 + timing.t_a + timing.t_b, float(lo[k]), timing.t_ramp)
            th_u.move(t0 + timing.t_a + timing.t_b, float(hi[k]), timing.t_ramp)
        else:
            cand.move(t0 + timing.t_a, float(i_in[k]), timing.t_ramp)
    if not dyn:
        return NeuronDrive(cand.t, cand.v)
    return NeuronDrive(cand.t, cand.v, th_d.t, th_d.v, th_u.t, th_u.v)


@dataclass(frozen=True)
class LadderTiming:
    """Frames for native CMRU ladders: one alpha per update needs a pulse (< ~10 ms) and a rest (DPI settling)."""

    t_step: float = 60e-3  # the neighbours' DPIs settle to within 0.5 % (5.5 tau) before the next step
    t_b: float = 1e-3  # thresholds move
    t_c: float = 4e-3  # candidate pulse
    t_d: float = 1e-3  # thresholds back to the widest window (candidate still at its value)
    t_ramp: float = 20e-6
    t_init_pulse: float = 5e-3
    t_init_gap: float = 55e-3
    t_max: float = 1e-3
    """ngspice's largest time step (the ``tran`` step): 1 ms resolves every settling the checks
    measured; a longer one lets the solver stride through the rests between steps."""

    def pre(self, n0: int) -> float:
        return 5e-3 + n0 * (self.t_init_pulse + self.t_init_gap)

    def step_start(self, k: int, n0: int) -> float:
        return self.pre(n0) + k * self.t_step

    def sample_time(self, k: int, n0: int) -> float:
        return self.step_start(k + 1, n0) - 0.5e-3

    def stop(self, steps: int, n0: int) -> float:
        return self.step_start(steps, n0)


def ladder_drive(
    nm: NeuronMap,
    c: np.ndarray,
    b: np.ndarray,
    n0: int,
    timing: LadderTiming = LadderTiming(),
    *,
    pre_pulses: int | None = None,
    hold: bool = False,
    trim: tuple[float, float] = (0.0, 0.0),
    overdrive: float | None = None,
) -> NeuronDrive:
    """Drive of one native CMRU neuron: ``n0`` set pulses (the reset state), then one frame per step.

    ``pre_pulses`` (>= ``n0``, default ``n0``): the preamble's length in init frames, so that
    neurons of one layer with different reset states ``n0`` share the step frames (a neuron with
    fewer pulses rests at the window centre for the remaining ones). ``hold``: the candidate starts
    at the window centre instead of the reset level (a ladder started at its reset state from the
    operating point, ``n0 = 0`` pulses).

    Between steps the ladder rests with the candidate at the window centre and the widest window
    (``|b| = B``), where every stage holds. A step with ``|b| >= 1`` moves the thresholds, pulses the
    candidate for ``t_c``, widens the window again and returns the candidate to the centre. With
    ``b = 0`` (a zero-width window, no neutral level) the candidate moves first and the thresholds
    after, so the window closes on the candidate's side. An update pulse never lasts long enough
    for the next stage to follow (~10 ms).

    ``trim``: ``(up, down)`` currents (A) by which each step's window is narrowed during its pulse
    (the up threshold lowered, the down one raised), a per-chip calibration of the overdrive a
    stage needs to switch within the pulse (``C dV / overdrive``): JapaneseVowels d = 8 missed sets
    up to 2.17 pA and resets up to 3.84 pA past their thresholds, and no update ever fired inside
    the window. Windows narrower than ``up + down`` (``b = 0`` among them) are not trimmed.

    ``overdrive``: a current (A) to which the candidate is clipped beyond its step's window (on the
    input axis: at most ``overdrive`` past the threshold it crosses). A stage needs a few pA of
    overdrive to switch within the pulse, but at the full clip (``H`` = 100 pA past the threshold
    with per-step windows) the next stage followed within the pulse and its one-millisecond tail
    (the candidate holds its value while the window widens): JapaneseVowels sequence 61, neuron 0,
    step 16 added two alphas for one update. ``None``: the candidate's own clip.
    """
    c = np.asarray(c)
    b = np.asarray(b)
    i_in = nm.input_current(c, b)
    if overdrive is not None:
        if not overdrive > 0:
            raise ValueError(f"overdrive must be > 0 A, not {overdrive}")
        edge_lo, edge_hi = nm.threshold_targets(b)
        i_in = np.clip(i_in, edge_lo - overdrive, edge_hi + overdrive)
    lo, hi = nm.threshold_currents(b)
    t_up, t_down = trim
    if t_up < 0 or t_down < 0:
        raise ValueError(f"window trims must be >= 0 (they narrow the window), not {trim}")
    wide = (hi - lo) > t_up + t_down
    lo, hi = np.where(wide, lo + t_down, lo), np.where(wide, hi - t_up, hi)
    w_lo, w_hi = (float(v[0]) for v in nm.threshold_currents(np.array([nm.b_max])))
    low_level, high_level = nm.low_level, nm.high_level
    cand, th_d, th_u = _Pwl(nm.i_centre if hold else low_level), _Pwl(w_lo), _Pwl(w_hi)
    now = 5e-3
    for _ in range(n0):
        cand.move(now, high_level, timing.t_ramp)
        cand.move(now + timing.t_init_pulse, nm.i_centre, timing.t_ramp)
        now += timing.t_init_pulse + timing.t_init_gap
    cand.move(now, nm.i_centre, timing.t_ramp)
    pre = n0 if pre_pulses is None else pre_pulses
    if pre < n0:
        raise ValueError(f"pre_pulses {pre} < n0 {n0}")
    for k in range(len(c)):
        t0 = timing.step_start(k, pre)
        t_th, t_c = (t0, t0 + timing.t_b) if b[k] != 0 else (t0 + timing.t_b, t0)
        th_d.move(t_th, float(lo[k]), timing.t_ramp)
        th_u.move(t_th, float(hi[k]), timing.t_ramp)
        cand.move(t_c, float(i_in[k]), timing.t_ramp)
        t_end = t0 + timing.t_b + timing.t_c
        th_d.move(t_end, w_lo, timing.t_ramp)
        th_u.move(t_end, w_hi, timing.t_ramp)
        cand.move(t_end + timing.t_d, nm.i_centre, timing.t_ramp)
    return NeuronDrive(cand.t, cand.v, th_d.t, th_d.v, th_u.t, th_u.v)
