"""Functional coverage of the accelerator testbench (cocotb-coverage).

Every bin is a behaviour the regression must have *checked* at least once: the golden model's
expectations (gates, saturation, ties, sign(0), events per step) are sampled when they are
compared, the stream monitors sample the stall patterns, the tests sample the protocol corners.
:func:`export` turns the cocotb-coverage database into ``{point: {bin: hits}}`` for the result
JSON; ``verification/regress.py`` merges those across runs and reports every bin that was missed.
"""

from __future__ import annotations

from cocotb_coverage.coverage import CoverPoint, coverage_db

__all__ = ["BINS", "export", "sample"]

CELLS = ("cmru", "bmru", "alphacmru", "bgmingru", "mingru", "hsru")
GATE_STATES = {
    "cmru": ("open", "closed"),
    "bmru": ("open", "closed"),
    "alphacmru": ("open", "closed"),
    "bgmingru": ("open", "closed"),
    "mingru": ("z=0", "0<z<1", "z=1"),
    "hsru": ("spike", "no spike"),
}

BINS: dict[str, list[str]] = {
    "cell": list(CELLS),
    "eps": ["-1", "0", "1"],
    "readout": ["last", "sum", "per_step"],
    "layers": ["1", "2", "3"],
    "dcls": ["layer 0", "later layer", "delay 0", "delay span-1"],
    "lanes": ["P=1", "1<P<d", "P=d", "partial last group"],
    "gate": [f"{cell} {state}" for cell in CELLS for state in GATE_STATES[cell]],
    "saturation": ["state upper", "state lower", "pool upper", "pool lower"],
    "sign": ["sign(0) with gate open", "tie |c|=|b|"],
    "events per step": ["none", "one", "some", "every neuron"],
    "stall": ["input valid gap", "input not ready", "result back-pressure", "config gap"],
    "sequence length": ["T=1", "2..40", "41..1000", ">1000"],
    "inputs": ["all-zero sequence", "max magnitude", "empty step", "back-to-back sequences"],
    "protocol": ["reset mid-sequence", "weights reloaded", "argmax tie"],
}
"""Cover points and their bins."""


def _point(name: str):
    return CoverPoint(
        f"accelerator.{name}",
        xf=lambda point, value, _name=name: value if point == _name else None,
        bins=BINS[name],
    )


def _decorate(fn):
    for name in BINS:
        fn = _point(name)(fn)
    return fn


@_decorate
def _sample(point: str, value: str) -> None:
    """Record one hit of ``value`` in cover point ``point``."""


def sample(point: str, value: str) -> None:
    if point not in BINS or value not in BINS[point]:
        raise KeyError(f"no coverage bin {point!r}/{value!r}")
    _sample(point, value)


def export() -> dict[str, dict[str, int]]:
    """``{point: {bin: hits}}`` of every cover point (bins never hit have 0)."""
    out: dict[str, dict[str, int]] = {}
    for name, bins in BINS.items():
        item = coverage_db[f"accelerator.{name}"]
        hits = item.detailed_coverage
        out[name] = {b: int(hits.get(b, 0)) for b in bins}
    return out


def merge(into: dict[str, dict[str, int]], other: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Add ``other``'s hits to ``into`` (in place) and return it."""
    for point, bins in other.items():
        target = into.setdefault(point, {})
        for b, hits in bins.items():
            target[b] = target.get(b, 0) + int(hits)
    return into


def summary(cov: dict[str, dict[str, int]]) -> dict:
    """Bins hit / total and the names of the bins never hit."""
    total = sum(len(BINS[p]) for p in BINS)
    missed = [f"{p}: {b}" for p in BINS for b in BINS[p] if not cov.get(p, {}).get(b)]
    return {"bins": total, "hit": total - len(missed), "missed": missed}
