"""Selective update in the accelerator: which lane groups an engine walks at a step.

A layer with ``selective: {period: T}`` (``docs/integer-semantics.md``) applies its rule at step
``t`` only to neurons whose ``su_gate[t mod T]`` bit is 1. The engine keeps two tables, loaded
through the configuration stream like its weights (:func:`selective_images`):

* ``su_open`` (``T x G`` words of ``P`` bits): the open lanes of group ``g`` at phase ``t mod T``;
  the write-back holds the state of a closed lane;
* ``su_walk`` (``T x (G + 1)`` words): at ``phase x (G + 1)`` the number of groups with an open
  lane, then those groups in ascending order. The issue stage walks this list, so a group whose
  lanes are all closed costs no slot (not even the biases-only slot of an empty step).

Some steps visit every group (:func:`walks_all`): a sequence's first step (the state memory still
holds the previous sequence's state; the first step reads it as 0 and must write every group), a
step of an event-driven layer that has input items (its kept accumulators must follow every
event, closed or not: a closed neuron's sums must be right on the step it opens), the last step of
a layer that sends its final vector (every group's entry carries it), and every step of a layer
that folds sum pooling in (a closed neuron's kept state is still added). There a closed group is
*held*: one biases-only slot that writes its state back, not one slot per item (except a closed
group of an event-driven layer with items: it follows them). A step with no open group holds the
last group alone: its entry carries the step's end marker downstream.

This module is the single definition of the walk: the plan sizes the tables from it, the images
fill them, and the testbench and the cycle model (:mod:`codesign.verify.cycles`) predict the trace
beats and the slots from it.
"""

from __future__ import annotations

import numpy as np

from codesign.hw.plan import EnginePlan

__all__ = ["group_open", "selective_images", "walk", "walk_lists", "walked_groups", "walks_all"]


def group_open(table: np.ndarray, lanes: int) -> np.ndarray:
    """``(T, G, P)`` open bits of every lane of every group (lanes past ``d`` are closed)."""
    period, d = table.shape
    groups = -(-d // lanes)
    padded = np.zeros((period, groups * lanes), dtype=np.int64)
    padded[:, :d] = np.asarray(table) != 0
    return padded.reshape(period, groups, lanes)


def walk_lists(table: np.ndarray, lanes: int) -> list[list[int]]:
    """Per phase, the groups with at least one open lane, ascending."""
    opened = group_open(table, lanes).any(axis=2)
    return [np.flatnonzero(row).tolist() for row in opened]


def walks_all(e: EnginePlan, *, seq_first: bool, seq_end: bool, items: int) -> bool:
    """Whether engine ``e`` visits every group at a step, whatever its schedule (module docstring)."""
    return (
        seq_first
        or e.pool_bits is not None
        or (e.mode == "events" and items > 0)
        or (e.emit == "final" and seq_end)
    )


def walk(
    e: EnginePlan, table: np.ndarray | None, step: int, *, seq_end: bool, items: int
) -> list[tuple[int, bool]]:
    """``(group, held)`` for every group engine ``e`` visits at step ``step`` of a sequence.

    ``table`` is the layer's ``su_gate`` (``None``: not selective). A *held* group has no open
    lane and is visited only to write its state back (a sequence's first step, sum pooling, the
    final vector) or to carry the step's marker: it costs one biases-only slot, whatever the
    items, and its lanes' gates are those of the biases alone (the trace does not report them).
    In an event-driven layer a closed group that has items follows them (its kept accumulators
    must), so it is not held."""
    if table is None:
        return [(g, False) for g in range(e.groups)]
    opened = group_open(table, e.lanes)[step % table.shape[0]].any(axis=1)
    follows = e.mode == "events" and items > 0
    if walks_all(e, seq_first=step == 0, seq_end=seq_end, items=items):
        return [(g, not (opened[g] or follows)) for g in range(e.groups)]
    groups = np.flatnonzero(opened).tolist()
    if not groups:  # nothing open: the last group carries the step's end marker
        return [(e.groups - 1, True)]
    return [(g, False) for g in groups]


def walked_groups(
    e: EnginePlan, table: np.ndarray | None, step: int, *, seq_end: bool, items: int
) -> list[int]:
    """The groups engine ``e`` visits at step ``step`` of a sequence (:func:`walk`)."""
    return [g for g, _ in walk(e, table, step, seq_end=seq_end, items=items)]


def selective_images(table: np.ndarray, e: EnginePlan) -> dict[str, np.ndarray]:
    """Images ``{memory key: (depth, elements)}`` of the engine's ``su_open`` and ``su_walk``."""
    period = table.shape[0]
    opened = group_open(table, e.lanes)
    walk = np.zeros((period, e.groups + 1), dtype=np.int64)
    for phase, groups in enumerate(walk_lists(table, e.lanes)):
        walk[phase, 0] = len(groups)
        walk[phase, 1 : 1 + len(groups)] = groups
    return {
        "su_open": opened.reshape(period * e.groups, e.lanes),
        "su_walk": walk.reshape(period * (e.groups + 1), 1),
    }
