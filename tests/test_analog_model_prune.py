"""Only the sky130 bins a deck uses: the same numbers as with the whole model files."""

from __future__ import annotations

import numpy as np
import pytest

from codesign.analog import cells
from codesign.analog.model_prune import device_sizes, prune_deck_models
from codesign.analog.ngspice import control_block, run_deck
from codesign.analog.pdk import model_block


def _deck() -> str:
    """A BMRU cell with fixed thresholds driven by a ramp: nFETs and pFETs of both sizes."""
    body = (
        "Xbias vddb vbb vcn bias_shared\n"
        "Xc in out vdd vddb vbb vcn bmru_cell I_DOWN=0.15n I_UP=0.35n I_ALPHA=0.5n\n"
        "Iin vsrc in PWL(0 0.1n 1m 0.1n 3m 0.45n 5m 0.45n 7m 0.1n)\n"
        f"Vm out 0 {cells.VOUT:g}\n"
    )
    return (
        cells.deck_header("prune check", reltol=1e-3)
        + cells.cell_library()
        + cells.supplies()
        + body
        + control_block([("tran 0.1m 8m", "tran", ["i(vm)", "v(xc.x)", "i(vdd)"])], stats=True)
        + ".end\n"
    )


def test_device_sizes_are_read_from_the_instances() -> None:
    sizes = {
        k: {(round(w * 1e6, 6), round(ln * 1e6, 6)) for w, ln in v} for k, v in device_sizes(_deck()).items()
    }
    # the library's kappa-matched DPI (dpi_n) has the wide 40/1 pair, instantiated or not
    assert sizes == {"nfet": {(4, 8), (1, 0.5), (40, 1)}, "pfet": {(4, 8), (1, 0.5)}}
    assert device_sizes("* no scale\nXM d g s b sky130_fd_pr__nfet_01v8 W=4 L=8\n") is None
    assert device_sizes(".option scale=1.0u\nXM d g s b sky130_fd_pr__nfet_01v8 L=8\n") is None


def test_a_pruned_deck_simulates_exactly_as_the_whole_models() -> None:
    deck = _deck()
    pruned = prune_deck_models(deck)
    assert model_block("tt") in deck and model_block("tt") not in pruned
    assert pruned.count(".model sky130_fd_pr__nfet_01v8__model.") == 8  # 3 sizes, on bin edges
    assert 0 < pruned.count(".model sky130_fd_pr__pfet_01v8__model.") < 10
    full = run_deck(deck, outputs=["tran"], timeout=120, name="full")
    part = run_deck(pruned, outputs=["tran"], timeout=120, name="pruned")
    for key in ("scale", "i(vm)", "v(xc.x)", "i(vdd)"):
        assert np.array_equal(full["tran"][key], part["tran"][key]), key
    assert full["tran"]["i(vm)"].max() == pytest.approx(0.5e-9, rel=0.05)  # the cell did switch
    assert full.stats["iterations"] == part.stats["iterations"]


def test_decks_with_unknown_sizes_or_monte_carlo_keep_the_whole_models() -> None:
    deck = _deck().replace("W=4 L=8", "W=4", 1)
    assert prune_deck_models(deck) == deck
    mc = cells.deck_header("mc", reltol=1e-3, mc_seed=1)
    assert model_block("tt") in mc  # run_ladder_trace prunes only decks without a seed
