"""Many sequences through the simulated board (the wrapper and accelerator in Amaranth's simulator
behind a pty, codesign.board.simboard), checked against the golden model: the long run that
tests/test_board_sim.py keeps short.

    python scripts/board_sim.py models/bundles/copy_first_cmru --sequences 100 [--steps 100] [--json F]

Builds the bundle's RTL into a temporary directory (or uses ``--build``), takes the first
``--sequences`` of the bundle's own test set (random inputs when it has none), cut to ``--steps``,
and prints the figures of ``codesign board``. A few thousand simulated cycles a second: a
100-step copy_first sequence (about 400 bytes on the line, 40 cycles a byte) takes seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--build", type=Path, help="an existing build directory of the bundle")
    parser.add_argument("--sequences", type=int, default=100)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from codesign.board.driver import Board
    from codesign.board.evaluate import run_on_board
    from codesign.board.simboard import SimulatedBoard
    from codesign.bundle import load_bundle
    from codesign.hw.build import build_rtl
    from codesign.report.measure import load_inputs

    with tempfile.TemporaryDirectory() as tmp:
        build = args.build
        if build is None:
            build = Path(tmp) / "build"
            build_rtl(args.bundle, build, lanes=1)
        bundle = load_bundle(build)
        seqs, source = load_inputs(bundle, sequences=args.sequences, steps=args.steps)
        lengths = {len(s) for s in seqs}
        if len(lengths) != 1:
            sys.exit(f"sequences of different lengths {sorted(lengths)}: give --steps")
        import numpy as np

        xq = np.stack(seqs)
        t0 = time.monotonic()
        with SimulatedBoard(build) as sim, Board.open(build, sim.port, timeout_s=120, drop_s=0.5) as board:
            done = [0]

            def progress(n: int) -> None:
                done[0] = n
                print(f"\r{n}/{len(xq)} sequences, {sim.cycles} cycles", end="", file=sys.stderr, flush=True)

            figures = run_on_board(board, bundle, xq, progress=progress)
            figures["simulated_cycles"] = sim.cycles
        print(file=sys.stderr)
        figures |= {
            "bundle": bundle.manifest.name,
            "inputs": source,
            "wall_seconds": round(time.monotonic() - t0, 1),
        }
        figures.pop("classes")
        print(json.dumps(figures, indent=2))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        sys.exit(0 if figures["bit_exact"] else 1)


if __name__ == "__main__":
    main()
