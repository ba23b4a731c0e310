"""RTL regression (``make sim``): constrained-random bundles over the whole family, every reference
bundle with its real test inputs, directed corners, a mutation check, under Icarus and Verilator.

* **Random designs.** ``--shapes`` random shapes (cells, eps, sizes, widths, lanes, 1-3 layers,
  DCLS taps and spans, last/sum/per-step readouts), each with ``--bundles-per-shape`` random
  bundles of that shape. One build per shape with ``weights="runtime"``; the testbench loads the
  bundles one after another through the ``config`` stream (so one Verilator build serves them
  all). Tests: ``random_sequences``, ``directed_corners`` (corner bundles and inputs),
  ``reset_mid_sequence``.
* **Reference bundles** (``models/bundles``): the first ``--reference-sequences`` sequences of
  their real test sets (quantized), with the RTL's accuracy on them.
* **Long sequence**: one sequence of 10000 steps.
* **Netlists** (``--filter netlist``): a reference bundle mapped by yosys for the UP5K, at the
  accelerator's ports and as the whole chip (``fpga_top``) driven at its UART pins with the host's
  bytes; a few sequences each (``make sim-netlist`` covers the mapping options).
* **Mutation check**: every fault of ``codesign.hw.faults.FAULTS`` built into a design it applies
  to, run until the first mismatch; each must be caught, and the test that caught it is named.

Jobs (a design under one simulator) run in parallel (``--jobs``, default 2); a line is printed
as each ends. Icarus is the slower simulator by far (gate-level and corner tests 10 to 50 times
Verilator's time): where a bundle is covered many times it runs less, Verilator everything --
the first ``--icarus-bundles`` bundles of each random shape, the directed corners on every
``--icarus-corners-every``-th random shape and reference bundle and on one of the four designs
that share a shape. Writes ``<out>/summary.json`` (designs, sequences, mismatches, mutants caught,
coverage) and ``<out>/junit.xml``; exits 1 on any mismatch, error, escaped mutant or (with
``--require-coverage``) coverage bin never hit.

The entry point (this file) reads the options; the work is split by job: ``regress_shapes.py``
(random shapes and their bundles), ``regress_plan.py`` (the designs and mutants of a run),
``regress_run.py`` (builds and simulator jobs) and ``regress_report.py`` (summary, JUnit, console).

Usage::

    .venv/bin/python verification/regress.py [--sims icarus verilator] [--seed 0] [--jobs 2]
        [--filter REGEX] [--quick] [--no-mutants] [--out build/regress]

``SIM``, ``SEED`` and ``TESTCASE`` (a regular expression over job and test names) are read from
the environment as cocotb users expect (``make sim SIM=icarus SEED=3 TESTCASE=shape0``).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for p in (REPO, HERE):
    if str(p) not in sys.path:  # runnable without installing the package
        sys.path.insert(0, str(p))

from regress_plan import plan_designs, plan_mutants, reference_inputs  # noqa: E402
from regress_report import print_summary, summarize  # noqa: E402
from regress_run import run_all  # noqa: E402

from codesign.verify.runner import SIMULATORS, kill_running  # noqa: E402

__all__ = ["main", "parse_args", "reference_inputs", "regress"]


def regress(args) -> dict:
    """Plan, filter (``--filter``), build and run; returns the summary it writes."""
    out = args.out
    t0 = time.perf_counter()
    designs = plan_designs(args, out)
    mutants = plan_mutants(designs, out) if args.mutants else []
    pattern = re.compile(args.filter) if args.filter else None
    if pattern:
        designs = [d for d in designs if pattern.search(d.name) or any(pattern.search(t) for t in d.tests)]
        mutants = [m for m in mutants if pattern.search(m.name)]
    print(
        f"{len(designs)} designs ({sum(len(d.bundles) for d in designs if d.kind == 'random')} random bundles), "
        f"{len(mutants)} mutants, simulators {', '.join(args.sims)}, seed {args.seed}, {args.jobs} jobs",
        flush=True,
    )
    rows = run_all(designs, mutants, args, t0)
    wall = time.perf_counter() - t0
    return summarize(rows, designs, mutants, wall, args)


def parse_args(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env_sims = os.environ.get("SIM", "").split()
    ap.add_argument("--sims", nargs="+", default=env_sims or list(SIMULATORS), choices=SIMULATORS)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "0") or 0))
    ap.add_argument("--jobs", type=int, default=2, help="simulations in parallel (default 2)")
    ap.add_argument(
        "--filter", default=os.environ.get("TESTCASE") or None, help="regex over design and test names"
    )
    ap.add_argument("--shapes", type=int, default=6, help="random shapes (default 6)")
    ap.add_argument(
        "--selective-shapes",
        type=int,
        default=6,
        help="random shapes with selective update, sel<k>, layer 0's cell cycling (default 6)",
    )
    ap.add_argument("--bundles-per-shape", type=int, default=36, help="random bundles per shape (default 36)")
    ap.add_argument(
        "--icarus-bundles",
        type=int,
        default=12,
        help="of each random shape's bundles, Icarus runs the first N (Verilator all; default 12, 0: all)",
    )
    ap.add_argument("--vectors", type=int, default=2, help="random sequences per bundle (default 2)")
    ap.add_argument("--max-steps", type=int, default=6, help="longest random sequence (default 6)")
    ap.add_argument(
        "--reference-sequences",
        type=int,
        nargs=2,
        default=[2, 20],
        metavar=("ICARUS", "VERILATOR"),
        help="real test sequences per reference bundle under each simulator (default 2 20)",
    )
    ap.add_argument("--long-steps", type=int, default=10000)
    ap.add_argument(
        "--icarus-corners-every",
        type=int,
        default=3,
        help="Icarus runs directed_corners on every N-th random shape (Verilator on all; default 3)",
    )
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per simulator call")
    ap.add_argument("--quick", action="store_true", help="the quick tier: 3 fixed shapes x 2 bundles")
    ap.add_argument("--no-references", action="store_true")
    ap.add_argument("--no-long", action="store_true")
    ap.add_argument("--no-netlists", action="store_true", help="leave out the UP5K netlist designs")
    ap.add_argument("--no-mutants", dest="mutants", action="store_false")
    ap.add_argument("--mutant-sim", default="icarus", choices=SIMULATORS)
    ap.add_argument("--require-coverage", action="store_true", help="exit 1 if a coverage bin was never hit")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "regress")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def stop(signum, frame):  # simulators run in their own process groups: take them down too
        kill_running()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    s = regress(args)
    print_summary(s)
    print(f"summary: {args.out / 'summary.json'}, JUnit: {args.out / 'junit.xml'}")
    bad = s["mismatches"] or s["failed_jobs"] or s["mutants"]["caught"] < s["mutants"]["total"]
    if args.require_coverage and s["coverage"]["missed"]:
        bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
