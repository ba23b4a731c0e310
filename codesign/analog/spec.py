"""Typed simulation specs: what one ngspice deck simulates, how it is driven, what it measures.

The analog path is one-way: circuits (:mod:`~codesign.analog.cells`, :mod:`~codesign.analog.netlist`,
:mod:`~codesign.analog.synapse`) give subcircuit text; a :class:`SimSpec` names the circuit under
test with its stimuli (the netlist body: instances, current sources, PWL drives), the extra
subcircuits it needs, the corner / mismatch draw / solver options, and the analyses with the
vectors each one writes back (:class:`Analysis`); :meth:`SimSpec.deck` is the only place a
characterisation deck's text is assembled. :class:`~codesign.analog.sim.Ctx` runs a spec
(:mod:`~codesign.analog.ngspice`, one subprocess with a timeout) and the measurement modules turn
the vectors into typed figures.

A spec is a frozen dataclass of strings and numbers, so it is also what a cache key hashes
(:meth:`SimSpec.key`): two equal specs are the same simulation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from codesign.analog import cells
from codesign.analog.cells import fmt
from codesign.analog.ngspice import control_block

__all__ = ["Analysis", "SimSpec"]


@dataclass(frozen=True)
class Analysis:
    """One analysis of a deck: the ngspice command, the name of its output table, its vectors."""

    command: str
    name: str
    vectors: tuple[str, ...]

    @classmethod
    def dc(cls, source: str, start: float, stop: float, step: float, name: str, vectors) -> Analysis:
        """A DC sweep of ``source`` from ``start`` to ``stop`` (``step`` signed as the sweep runs)."""
        sign = "-" if stop < start else ""
        return cls(f"dc {source} {fmt(start)} {fmt(stop)} {sign}{fmt(abs(step))}", name, tuple(vectors))

    @classmethod
    def tran(cls, step: str, stop: float, name: str, vectors) -> Analysis:
        """A transient to ``stop`` seconds with print step (or ngspice's largest step) ``step``."""
        return cls(f"tran {step} {stop:.6g}", name, tuple(vectors))


@dataclass(frozen=True)
class SimSpec:
    """A characterisation deck: title, circuit under test with its stimuli, analyses, solver settings.

    ``circuit``: the netlist body (instances, their bias and input sources, ``.nodeset`` lines);
    ``library``: subcircuits beyond the shared cell library (ladders, a bundle's neurons);
    ``options``: extra ``.option`` settings (:mod:`~codesign.analog.ladder_deck`); ``stats``: end
    the run with ngspice's counters (:attr:`~codesign.analog.ngspice.SimResult.stats`).
    ``shared_cells``: include the cell library and the three supplies (the synapse arrays'
    decks bring their own); ``end``: close the deck with ``.end``.
    """

    title: str
    circuit: str
    analyses: tuple[Analysis, ...]
    corner: str = "tt"
    library: str = ""
    mc_seed: int | None = None
    reltol: float | None = None
    options: dict[str, str] | None = field(default=None, hash=False)
    stats: bool = False
    shared_cells: bool = True
    end: bool = False

    @property
    def outputs(self) -> list[str]:
        """The output tables the run must produce, one per analysis."""
        return [a.name for a in self.analyses]

    def deck(self) -> str:
        """The deck text: header (models, corner, options), cell library, extra subcircuits,
        supplies, the circuit, and a ``.control`` block running the analyses in order."""
        header = cells.deck_header(
            self.title, corner=self.corner, mc_seed=self.mc_seed, reltol=self.reltol, options=self.options
        )
        if self.shared_cells:
            body = header + cells.cell_library() + self.library + cells.supplies() + self.circuit
        else:
            body = header + self.library + self.circuit
        control = control_block(
            [(a.command, a.name, list(a.vectors)) for a in self.analyses], stats=self.stats
        )
        return body + control + (".end\n" if self.end else "")

    def key(self) -> str:
        """SHA-256 of the spec: equal specs simulate the same deck."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
