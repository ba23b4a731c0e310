"""How a native CMRU ladder deck is simulated: ngspice's solver options, the drive's edges, the
vectors it keeps and the model bins it parses (``codesign analog-eval --ladder-deck``). None of it
changes the circuit.

Where a ladder deck's time goes (``analog/report/eval/japanese_vowels_cmru_d8_deck_speed.md``):
parsing the sky130 model files (180 nFET and 108 pFET bins; a third of a 7-stage deck's
instructions), then evaluating every transistor once per Newton iteration (98 % of the transient).
The iterations go into three kinds of events:

* every edge of the drive: ngspice restarts at each PWL corner with a step of a tenth of the
  distance to the next corner and doubles it from there (20 us ramps: about 12 points per edge);
* every stage that switches: the output and tap switches dump their nodes' charge from the rail in
  nanoseconds, so the step falls to ~10 ns and climbs back (about 45 points per switching);
* the rests between steps, at the largest step ``t_max``.

``reference`` is the deck every committed ladder figure was made with, with only the model bins
its devices use (byte-identical results, :mod:`codesign.analog.model_prune`). ``fast`` keeps the
circuit, the drive's levels and timing and the tolerances that matter for pA (``gmin``, ``vntol``)
and changes how ngspice integrates: trapezoidal integration with a looser truncation-error factor
(fewer points after an edge or a switching), ``abstol`` 10 fA (it only stops Newton chasing
sub-fA currents of off devices), device bypass (devices whose terminals did not move are not
re-evaluated), 1 ms ramps instead of 20 us (the input mirrors respond in ~0.1-0.3 ms, so the ramp
shape hardly reaches the stages, and ngspice starts after each corner from a 100 us step instead
of 2 us), and only the read vectors saved. It is **not** equal to the reference: on JapaneseVowels
sequences 17-19 it gave the reference's counts on two, and on the third missed a set 1.91 pA past
its threshold and let a clipped candidate add two stages in one pulse (its 1 ms ramp back keeps it
outside the widest window ~0.5 ms longer); with a 20 ms largest step (``--tmax-ms``) it set a
stage 0.27 pA inside its window on another. It is an option for quick looks, off by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["LADDER_DECKS", "LadderDeck"]


@dataclass(frozen=True)
class LadderDeck:
    """One way to simulate a ladder deck (the circuit is the same for all)."""

    name: str
    options: dict[str, str] = field(default_factory=dict)
    """ngspice ``.option`` values that replace or extend :data:`codesign.analog.ngspice.TIGHT_OPTIONS`."""
    t_ramp: float = 20e-6
    """Rise and fall time of every drive edge (s)."""
    save_read_only: bool = False
    """``.save`` only the vectors that are read (output currents and supplies)."""
    prune_models: bool = True
    """Include only the sky130 model bins the deck's devices use (:mod:`codesign.analog.model_prune`:
    byte-identical results, a fraction of the parsing); never for Monte Carlo decks."""


LADDER_DECKS: dict[str, LadderDeck] = {
    "reference": LadderDeck("reference"),
    "fast": LadderDeck(
        "fast",
        options={"method": "trap", "trtol": "20", "abstol": "1e-14", "bypass": "1"},
        t_ramp=1e-3,
        save_read_only=True,
    ),
}
