"""RTL regression (``make sim``): random bundles over a grid of sizes, under Icarus and Verilator.

Every grid point is a random bundle (``codesign.bundle.random``) elaborated with
``codesign.hw.build_rtl`` and simulated with ``codesign.verify.run_sim`` against the golden model.
The grid covers d from 1 to 64, 1 to 16 inputs, lanes from 1 to d (including partial last
groups), eps -1/0/+1, BMRU and CMRU, and state widths small enough to saturate. Prints a table,
writes ``<out>/summary.json`` and exits 1 on any mismatch or error.

Usage::

    .venv/bin/python verification/regress.py [--sims icarus verilator] [--vectors 20] [--jobs 2]
                                             [--only NAME ...] [--out build/regress] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable without installing the package
    sys.path.insert(0, str(REPO))

from codesign.bundle import Formats  # noqa: E402
from codesign.bundle.random import make_random_bundle  # noqa: E402
from codesign.errors import CodesignError  # noqa: E402
from codesign.hw import build_rtl  # noqa: E402
from codesign.verify import SIMULATORS, run_sim  # noqa: E402
from codesign.verify.runner import kill_running  # noqa: E402


@dataclass(frozen=True)
class Point:
    """One grid point: a random bundle and a lane count."""

    name: str
    d: int
    m: int
    c: int
    lanes: int
    cell: str = "cmru"
    eps: int = 1
    formats: dict = field(default_factory=dict)
    vectors: int | None = None  # overrides --vectors (keeps the slow points short)

    @property
    def state_bits(self) -> int:
        return Formats.model_validate(self.formats).state.bits


WIDE = {
    "input": {"bits": 16, "frac": 8},
    "weight": {"bits": 16},
    "bias": {"bits": 24},
    "alpha": {"bits": 24},
    "state": {"bits": 24},
    "readout_weight": {"bits": 16},
    "readout_bias": {"bits": 24},
}
NARROW = {
    "input": {"bits": 2, "frac": 0},
    "weight": {"bits": 2},
    "bias": {"bits": 2},
    "alpha": {"bits": 2},
    "state": {"bits": 2},
    "readout_weight": {"bits": 2},
    "readout_bias": {"bits": 2},
}

GRID = [
    Point("tiny", 1, 1, 1, 1, formats={"state": {"bits": 2}}),
    Point("d3_eps-1_sat", 3, 2, 2, 2, eps=-1, formats={"state": {"bits": 3}}),
    Point("bmru_d8", 8, 4, 3, 3, cell="bmru", eps=0, formats={"state": {"bits": 4}}),
    Point("cmru_eps0_d8", 8, 16, 5, 8, eps=0, formats={"state": {"bits": 6}}),
    Point("d16_m15_p1", 16, 15, 4, 1),
    Point("d16_m15_p4", 16, 15, 4, 4),
    Point("d16_m15_p16", 16, 15, 4, 16),
    Point("d32_eps-1_p5", 32, 8, 7, 5, eps=-1, formats={"state": {"bits": 5}}),
    Point("d64_m16_p8", 64, 16, 10, 8, formats={"state": {"bits": 8}}, vectors=12),
    Point("d64_eps-1_p64", 64, 16, 10, 64, eps=-1, formats={"state": {"bits": 4}}),
    Point("wide_d12", 12, 16, 6, 4, eps=1, formats=WIDE),
    Point("narrow_d10", 10, 3, 2, 10, eps=-1, formats=NARROW),
]


@dataclass
class Row:
    point: Point
    sim: str
    ok: bool = False
    sequences: int = 0
    steps: int = 0
    mismatches: int = 0
    cycles_per_step: float | None = None
    floor: float | None = None
    wall_s: float = 0.0
    message: str = ""


def build_point(point: Point, out: Path, seed: int) -> Path:
    root = out / point.name
    bundle = make_random_bundle(
        str(root / "bundle"),
        seed=seed + point.d * 100 + point.lanes,
        d=point.d,
        inputs=point.m,
        classes=point.c,
        cell=point.cell,
        eps=point.eps,
        formats=Formats.model_validate(point.formats),
    )
    build_rtl(bundle.path, root / "rtl", lanes=point.lanes)
    return root / "rtl"


def run_point(point: Point, rtl: Path, sim: str, vectors: int, seed: int) -> Row:
    row = Row(point, sim)
    t0 = time.perf_counter()
    try:
        rep = run_sim(rtl, sim=sim, vectors=point.vectors or vectors, seed=seed)
    except CodesignError as err:
        row.message = str(err).splitlines()[0]
    else:
        row.ok = rep.ok
        row.sequences, row.steps, row.mismatches = rep.sequences, rep.steps, rep.mismatches
        row.cycles_per_step, row.floor = rep.cycles_per_step, rep.cycle_floor_per_step
        row.message = rep.summary_line()
    row.wall_s = time.perf_counter() - t0
    return row


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_table(rows: list[Row]) -> None:
    head = (
        f"{'point':<15} {'d':>3} {'M':>3} {'C':>3} {'P':>3} {'cell':<4} {'eps':>3} {'sb':>3} {'sim':<9} "
        f"{'seqs':>4} {'steps':>5} {'mism':>4} {'cyc/step':>8} {'floor':>7} {'wall s':>6}  result"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        p = r.point
        print(
            f"{p.name:<15} {p.d:>3} {p.m:>3} {p.c:>3} {p.lanes:>3} {p.cell:<4} {p.eps:>3} {p.state_bits:>3} "
            f"{r.sim:<9} {r.sequences:>4} {r.steps:>5} {r.mismatches:>4} {_fmt(r.cycles_per_step):>8} "
            f"{_fmt(r.floor):>7} {r.wall_s:>6.1f}  {'PASS' if r.ok else 'FAIL'} {r.message}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", nargs="+", default=list(SIMULATORS), choices=SIMULATORS)
    ap.add_argument("--vectors", type=int, default=20, help="sequences per grid point (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="simulations in parallel (default 2)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these grid points")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "regress")
    args = ap.parse_args(argv)

    def stop(signum, frame):  # simulators run in their own process groups: take them down too
        kill_running()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    grid = [p for p in GRID if not args.only or p.name in args.only]
    if not grid:
        ap.error(f"--only matched no grid point; known: {', '.join(p.name for p in GRID)}")
    t0 = time.perf_counter()
    rtl = {}
    for p in grid:
        try:
            rtl[p.name] = build_point(p, args.out, args.seed)
        except CodesignError as err:
            print(f"{p.name}: build failed: {err}", file=sys.stderr)
            return 1
    jobs = [(p, sim) for sim in args.sims for p in grid]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(
            pool.map(lambda job: run_point(job[0], rtl[job[0].name], job[1], args.vectors, args.seed), jobs)
        )
    wall = time.perf_counter() - t0
    print_table(rows)
    failed = [r for r in rows if not r.ok]
    print(f"\n{len(rows) - len(failed)}/{len(rows)} runs bit-exact, wall time {wall:.1f} s")
    summary = {
        "wall_s": wall,
        "runs": [
            {
                "point": r.point.name,
                "d": r.point.d,
                "inputs": r.point.m,
                "classes": r.point.c,
                "lanes": r.point.lanes,
                "cell": r.point.cell,
                "eps": r.point.eps,
                "state_bits": r.point.state_bits,
                "sim": r.sim,
                "ok": r.ok,
                "sequences": r.sequences,
                "steps": r.steps,
                "mismatches": r.mismatches,
                "cycles_per_step": r.cycles_per_step,
                "cycle_floor_per_step": r.floor,
                "wall_s": r.wall_s,
                "result": r.message,
            }
            for r in rows
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
