"""A --weights spram build on the host driver: no sequence runs before its weights are loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import serial

from codesign.board.driver import Board
from codesign.board.errors import BoardError
from codesign.board.protocol import BoardProtocol
from codesign.hw.build import build_rtl

BUNDLE = Path(__file__).parents[1] / "models" / "bundles" / "copy_first_cmru"


def test_a_spram_build_refuses_sequences_until_its_weights_are_loaded(tmp_path: Path) -> None:
    build_rtl(BUNDLE, tmp_path / "b", weights="spram", target="up5k", counters="none")
    link = serial.serial_for_url("loop://", timeout=0.05)
    board = Board(BoardProtocol.from_build(tmp_path / "b"), link, port="loop://")
    with pytest.raises(BoardError, match="hold no values until loaded: load them first"):
        board.run_one(np.zeros((2, 15), dtype=np.int64))
    assert board.bytes_sent == 0 and link.in_waiting == 0  # nothing reached the board
    board.close()
