"""Child process of :func:`codesign.verify.runner.run_sim`: build and test with the cocotb runner.

Runs in its own process (and process group) so that the parent can enforce a timeout on the
simulator, which the cocotb runner itself does not do. Usage::

    python -m codesign.verify._simulate '{"sim": "icarus", "verilog": ..., "sim_dir": ..., ...}'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    args = json.loads(argv[0])
    sim, verilog, sim_dir = args["sim"], Path(args["verilog"]), Path(args["sim_dir"])
    sys.path.insert(0, args["tb_dir"])  # the runner passes sys.path on as PYTHONPATH
    from cocotb_tools.runner import get_runner

    waves = bool(args.get("waves"))
    runner = get_runner(sim)
    stamp = sim_dir / "built_from.sha256"
    fresh = stamp.is_file() and stamp.read_text().strip() == args["verilog_sha256"]
    if sim == "verilator":
        if not fresh or not (sim_dir / args["top"]).is_file():
            runner.build(
                sources=[verilog],
                hdl_toplevel=args["top"],
                build_dir=sim_dir,
                always=True,
                build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2"]
                + (["--trace-fst"] if waves else []),
                timescale=("1ns", "1ps"),
                waves=waves,
            )
    else:
        runner.build(
            sources=[verilog],
            hdl_toplevel=args["top"],
            build_dir=sim_dir,
            always=not fresh,
            timescale=("1ns", "1ps"),
            waves=waves,
        )
    stamp.write_text(args["verilog_sha256"] + "\n")
    runner.test(
        test_module=args["test_module"],
        hdl_toplevel=args["top"],
        hdl_toplevel_lang="verilog",
        build_dir=sim_dir,
        test_dir=sim_dir,
        extra_env=args["env"],
        seed=args["seed"],
        results_xml=str(sim_dir / "results.xml"),
        test_filter=args.get("test_filter"),
        waves=waves,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
