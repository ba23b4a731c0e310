"""The cell-kind registry (codesign/bundle/cells.py) against every stage that has its own view."""

from __future__ import annotations

import pytest

from codesign.bundle.cells import CELL_NAMES, CELLS, cells_with_rule
from codesign.bundle.random import random_network_manifest
from codesign.bundle.spec import CELL_KINDS, array_table
from codesign.golden.model import MATRICES as GOLDEN_MATRICES
from codesign.hw.faults import FAULTS, FaultSet, faults_exposed_by
from codesign.hw.plan import plan_accelerator
from codesign.hw.update import UNITS


def test_golden_table_matches_registry() -> None:
    # the golden model keeps its own table (the reference shares no code with the generator)
    assert set(GOLDEN_MATRICES) == set(CELLS)
    for name, kind in CELLS.items():
        assert GOLDEN_MATRICES[name] == len(kind.matrices), name


def test_every_rule_has_an_update_unit() -> None:
    assert {kind.rule for kind in CELLS.values()} == set(UNITS)
    assert cells_with_rule("cmru") == ("cmru", "bmru", "alphacmru")


@pytest.mark.parametrize("cell", CELL_NAMES)
def test_schema_plan_and_arrays_follow_registry(cell: str) -> None:
    kind = CELLS[cell]
    layer = {"cell": cell, "size": 3, "eps": kind.eps[0]}
    manifest = random_network_manifest(inputs=2, layers=[layer], classes=2, seed=0)
    table = array_table(manifest)
    for mat in kind.matrices:
        assert table[f"layers.0.w_{mat}"][0] == (3, 2)
        assert table[f"layers.0.b_{mat}"][0] == (3,)
    for param in kind.params:
        assert table[f"layers.0.{param}"][0] == (3,)
    engine = plan_accelerator(manifest, 1).layers[0]
    assert engine.matrices == kind.matrices
    assert tuple(engine.params) == tuple(kind.params)
    assert engine.state_fields == kind.state_fields
    assert CELL_KINDS == CELL_NAMES


def test_eps_follows_registry() -> None:
    with pytest.raises(ValueError, match="requires eps 0"):
        random_network_manifest(inputs=2, layers=[{"cell": "bmru", "size": 2, "eps": 1}], classes=2, seed=0)
    with pytest.raises(ValueError, match="requires eps 0"):
        random_network_manifest(
            inputs=2, layers=[{"cell": "mingru", "size": 2, "eps": -1}], classes=2, seed=0
        )


def test_fault_registry() -> None:
    manifest = random_network_manifest(
        inputs=2, layers=[{"cell": "hsru", "size": 2}], classes=2, seed=0, pooling="sum"
    )
    exposed = set(faults_exposed_by(manifest))
    assert "sum_wraps" in exposed and "sat_off_by_one" not in exposed and "event_dropped" not in exposed
    faults = FaultSet({"stalled_beat_lost", "readout_bias_ignored"})
    assert faults.active("stalled_beat_lost", 0) and not faults.active("stalled_beat_lost", 1)
    assert faults.active("readout_bias_ignored", -1) and not faults.active("readout_bias_ignored", 0)
    assert not faults.active("sum_wraps", 0)
    with pytest.raises(KeyError):
        faults.active("sum_wrap", 0)  # a typo in the datapath must not disable a mutant silently
    assert set(FAULTS) >= {"sat_off_by_one", "stalled_beat_lost"}
