"""The typed simulation spec -> deck path: the deck text a SimSpec assembles."""

from __future__ import annotations

from codesign.analog import cells
from codesign.analog.ngspice import control_block
from codesign.analog.spec import Analysis, SimSpec


def _spec(**kw) -> SimSpec:
    vecs = ["v(xc.x)", "i(vm)"]
    return SimSpec(
        "BMRU hysteresis (tt)",
        "Xc in out vdd bmru_cell\nIin vsrc in DC 0\n",
        (
            Analysis.dc("Iin", 0.075e-9, 0.49e-9, 2e-12, "up", vecs),
            Analysis.dc("Iin", 0.49e-9, 0.075e-9, 2e-12, "dn", vecs),
        ),
        **kw,
    )


def test_dc_sweeps_step_in_the_direction_they_run():
    spec = _spec()
    assert spec.analyses[0].command == "dc Iin 75p 490p 2p"
    assert spec.analyses[1].command == "dc Iin 490p 75p -2p"
    assert spec.outputs == ["up", "dn"]
    assert Analysis.tran("1m", 0.1234567, "tran", ["i(vm)"]).command == "tran 1m 0.123457"


def test_deck_is_header_library_supplies_circuit_then_the_analyses():
    spec = _spec(corner="ff", mc_seed=3, reltol=1e-3, library="* extra subckts\n")
    deck = spec.deck()
    header = cells.deck_header(spec.title, corner="ff", mc_seed=3, reltol=1e-3)
    assert deck.startswith(header + cells.cell_library() + "* extra subckts\n" + cells.supplies())
    assert deck.endswith(
        spec.circuit
        + control_block([(a.command, a.name, list(a.vectors)) for a in spec.analyses], stats=False)
    )
    assert deck.index("wrdata up.dat v(xc.x) i(vm)") < deck.index("wrdata dn.dat v(xc.x) i(vm)")
    assert "rusage all" not in deck and "rusage all" in _spec(stats=True).deck()


def test_equal_specs_have_equal_keys():
    assert _spec().key() == _spec().key()
    assert _spec().key() != _spec(corner="ss").key()
    assert _spec().key() != _spec(mc_seed=1).key()


def test_the_measurements_build_their_decks_from_specs(monkeypatch, tmp_path):
    """measure_hysteresis runs the deck its spec assembles (captured before ngspice)."""
    from codesign.analog import measure_cells, sim

    seen = {}

    class Stop(Exception):
        pass

    def capture(deck, *, outputs, name, **_k):
        seen.update(deck=deck, outputs=outputs, name=name)
        raise Stop

    monkeypatch.setattr(sim, "run_deck", capture)
    try:
        measure_cells.measure_hysteresis(measure_cells.PAPER, sim.Ctx(corner="ss"), step=2e-12)
    except Stop:
        pass
    assert seen["outputs"] == ["up", "dn"] and seen["name"] == "hysteresis"
    lo, top = 0.5 * measure_cells.PAPER.i_down, 1.4 * measure_cells.PAPER.i_up
    vecs = [measure_cells.X_NODE, "i(vm)", "i(vdd)", "i(vddb)"]
    expected = SimSpec(
        "BMRU hysteresis (ss)",
        measure_cells._cell_body(measure_cells.PAPER, "DC 0"),
        (Analysis.dc("Iin", lo, top, 2e-12, "up", vecs), Analysis.dc("Iin", top, lo, 2e-12, "dn", vecs)),
        corner="ss",
    )
    assert seen["deck"] == expected.deck()
    assert "dc Iin 75p 490p 2p" in seen["deck"] and "nfet_01v8__ss" in seen["deck"]
