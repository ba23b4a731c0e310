"""Deliberate bugs the generator can build in, for the regression's mutation check.

Each fault is declared once here, with the bundle shapes it can show in (``exposed_by``); the
datapath asks a :class:`FaultSet` whether a fault is built into *this* engine, and the regression
(``verification/regress.py``) picks the first design whose manifest exposes each fault. A fault
that no test catches means the testbench misses a class of bugs.

Adding a fault: an entry in :data:`FAULTS`, one ``faults.active(...)`` question where the datapath
builds the faulty variant, and nothing in the regression (``docs/contributing.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from codesign.bundle.cells import CELLS
from codesign.bundle.spec import Manifest
from codesign.errors import CodesignError

__all__ = ["FAULTS", "Fault", "FaultSet", "faults_exposed_by"]


def _cmru_family(m: Manifest) -> bool:
    return any(CELLS[layer.cell].rule == "cmru" for layer in m.layers)


@dataclass(frozen=True)
class Fault:
    name: str
    description: str
    exposed_by: Callable[[Manifest], bool]
    """True for a bundle shape in which the fault changes what the accelerator computes."""
    engines: str = "all"
    """Where it is built: ``all`` engines it applies to, ``first`` layer only, or ``readout``."""


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("sat_off_by_one", "state saturation clips one below the upper bound", _cmru_family),
        Fault("sign0_flipped", "sign(0) = -1 in the CMRU family", _cmru_family),
        Fault(
            "eps_ignored",
            "the CMRU family behaves as if eps were 0",
            lambda m: any(CELLS[x.cell].rule == "cmru" and x.eps != 0 for x in m.layers),
        ),
        Fault(
            "event_dropped",
            "lane 0's change events never leave a layer",
            lambda m: len(m.layers) > 1 or m.readout.per_step,
        ),
        Fault(
            "delay_off_by_one",
            "every DCLS tap reads one step further back",
            lambda m: any(x.dcls is not None and x.dcls.span > 1 for x in m.layers),
        ),
        Fault(
            "sum_wraps",
            "sum pooling wraps instead of saturating",
            lambda m: m.readout.pooling == "sum" and not m.readout.per_step,
        ),
        Fault(
            "readout_bias_ignored",
            "the readout starts from 0 instead of its biases",
            lambda m: True,
            engines="readout",
        ),
        Fault(
            "selective_ignored",
            "selective update ignored: every neuron updates at every step",
            lambda m: any(x.selective is not None for x in m.layers),
        ),
        Fault(
            "stalled_beat_lost",
            "an input beat offered while the issue stage is full is dropped",
            # the inputs must reach layer 0's issue stage directly, not through a DCLS front end
            # or the input stride
            lambda m: m.layers[0].dcls is None and m.input.stride == 1,
            engines="first",
        ),
        Fault(
            "stride_shift_short",
            "the input stride shifts a window's sum right by one bit less than log2 S",
            lambda m: m.input.stride > 1,
            engines="first",
        ),
    )
}
"""Every fault the generator can build in."""


def faults_exposed_by(manifest: Manifest) -> tuple[str, ...]:
    """The faults a bundle of this shape can show."""
    return tuple(name for name, f in FAULTS.items() if f.exposed_by(manifest))


class FaultSet:
    """The faults one build carries; the datapath asks :meth:`active` where a variant differs."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = frozenset(names)
        unknown = sorted(names - set(FAULTS))
        if unknown:
            raise CodesignError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
        self.names = names

    def active(self, name: str, engine_index: int | None = None) -> bool:
        """Whether fault ``name`` is built into the engine of layer ``engine_index`` (-1: readout)."""
        if name not in FAULTS:  # a typo in the datapath must not silently disable a mutant
            raise KeyError(f"unknown fault {name!r}")
        if name not in self.names:
            return False
        where = FAULTS[name].engines
        if where == "first":
            return engine_index == 0
        if where == "readout":
            return engine_index == -1
        return True

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self):
        return iter(sorted(self.names))

    def __len__(self) -> int:
        return len(self.names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FaultSet):
            return self.names == other.names
        if isinstance(other, (set, frozenset)):
            return self.names == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.names)

    def __repr__(self) -> str:
        return f"FaultSet({sorted(self.names)})"
