"""The board loop end to end without hardware: the host driver (and ``codesign board``) on a
pseudo-terminal, the UART wrapper and the accelerator of a reference bundle in Amaranth's
simulator on the other end, bit-exact against the golden model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from codesign.board.driver import Board
from codesign.board.errors import BoardIdentityError
from codesign.board.simboard import SimulatedBoard
from codesign.bundle import load_bundle
from codesign.golden.model import run_golden

BUNDLE = Path(__file__).parents[1] / "models" / "bundles" / "copy_first_cmru"
SIM_TIMEOUT = 400  # the bridge's message timeout in the simulation, in cycles


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    from codesign.hw.build import build_rtl

    out = tmp_path_factory.mktemp("board") / "copy_first"
    build_rtl(BUNDLE, out, lanes=1)
    return out


def _sequences(n: int, steps: int, seed: int) -> np.ndarray:
    """Sparse sequences in the bundle's 4-bit input format (one or two items a step, some empty)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, steps, 15), dtype=np.int64)
    for s in range(n):
        for t in range(steps):
            for j in rng.choice(15, size=rng.integers(0, 3), replace=False):
                x[s, t, j] = rng.integers(-8, 8)
    return x


def test_driver_through_a_pty_is_bit_exact_and_resyncs_after_a_half_message(build, tmp_path):
    x = _sequences(3, 5, seed=1)
    golden = run_golden(load_bundle(build), x)
    with SimulatedBoard(build, timeout=SIM_TIMEOUT) as sim:
        # an earlier host stopped in the middle of a configuration message (1 + 2 of its 7 bytes)
        fd = os.open(sim.port, os.O_RDWR | os.O_NOCTTY)
        os.write(fd, bytes([1, 0x12, 0x34]))
        os.close(fd)
        with Board.open(build, sim.port, timeout_s=60, drop_s=2.0) as board:
            before = board.counters()
            results = board.run(list(x))
            after = board.counters()
        assert sim.error is None
        for i, r in enumerate(results):
            assert r.logits.tolist() == golden.logits[i].tolist() and int(r.classes) == golden.classes[i]
        assert after["sequences"] - before["sequences"] == 3 and after["results"] - before["results"] == 3

        # the command line on the same board: figures in --json
        np.save(tmp_path / "x.npy", x[:2])
        np.save(tmp_path / "y.npy", golden.classes[:2])
        from codesign.cli import app

        run = CliRunner().invoke(
            app,
            [
                "board",
                str(build),
                "--port",
                sim.port,
                "--inputs",
                str(tmp_path / "x.npy"),
                "--labels",
                str(tmp_path / "y.npy"),
                "--timeout",
                "60",
                "--json",
                str(tmp_path / "f.json"),
            ],
        )
        assert run.exit_code == 0, run.output
        figures = json.loads((tmp_path / "f.json").read_text())
        assert figures["bit_exact"] and figures["sequences"] == 2 and figures["accuracy"] == 1.0
        assert figures["counters"]["sequences"] == 2 and figures["bytes_sent"] > 0
        assert "bit-exact with the golden model" in run.output


def test_a_bitstream_of_another_build_is_refused(build):
    from codesign.fpga.ports import build_identity

    own = build_identity(json.loads((build / "build.json").read_text()))
    with SimulatedBoard(build, identity=own ^ 1, timeout=SIM_TIMEOUT) as sim:
        with pytest.raises(BoardIdentityError, match=f"expects 0x{own:08x}"):
            Board.open(build, sim.port, timeout_s=60, drop_s=0.05)


def test_runtime_weights_load_over_the_link(tmp_path):
    """A --weights runtime build starts with zero memories: the driver loads a bundle through the
    configuration stream, then the results match that bundle's golden model."""
    from codesign.bundle.random import make_random_network_bundle
    from codesign.hw.build import build_rtl

    bundle_dir = tmp_path / "bundle"
    make_random_network_bundle(
        str(bundle_dir),
        seed=4,
        inputs=3,
        layers=[{"cell": "cmru", "size": 3, "eps": 1}],
        classes=2,
        input_bits=4,
    )
    build = tmp_path / "build"
    build_rtl(bundle_dir, build, lanes=1, weights="runtime", counters="none")
    bundle = load_bundle(bundle_dir)
    rng = np.random.default_rng(2)
    x = rng.integers(-8, 8, size=(2, 4, 3)) * (rng.random((2, 4, 3)) < 0.5)
    golden = run_golden(bundle, x)
    with SimulatedBoard(build, timeout=SIM_TIMEOUT, counters=False) as sim:
        with Board.open(build, sim.port, timeout_s=60, drop_s=0.05) as board:
            assert board.load_weights(bundle) > 0
            results = board.run(list(x))
            assert board.counters() == {}
    for i, r in enumerate(results):
        assert r.logits.tolist() == golden.logits[i].tolist() and int(r.classes) == golden.classes[i]
