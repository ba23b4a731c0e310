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
    vcd = args.get("waves") == "vcd"  # Icarus only: a VCD instead of an FST
    runner = get_runner(sim)
    stamp = sim_dir / "built_from.sha256"
    # the stamp names the Verilog and the build flags' version: a change of either rebuilds
    stamp_text = f"{args['verilog_sha256']} flags-3 waves={int(waves)}"
    fresh = stamp.is_file() and stamp.read_text().strip() == stamp_text
    if sim == "verilator":
        if not fresh or not (sim_dir / args["top"]).is_file():
            # The cocotb runner passes --public-flat-rw, which keeps every internal signal of the
            # design visible to VPI: a several times larger model and most of the build time.
            # The testbench drives and reads only the top level's ports (traces and counters are
            # ports), so only those stay public (the later --no- wins).
            sim_dir.mkdir(parents=True, exist_ok=True)
            public = sim_dir / "public_ports.vlt"
            public.write_text(f'`verilator_config\npublic_flat_rw -module "{args["top"]}" -var "*"\n')
            runner.build(
                sources=[verilog],
                hdl_toplevel=args["top"],
                build_dir=sim_dir,
                always=True,
                build_args=[
                    "-Wno-fatal",
                    "-Wno-lint",
                    "-Wno-style",
                    "-O2",
                    "--no-public-flat-rw",
                    str(public),
                ]
                + (["--trace-fst"] if waves else []),
                timescale=("1ns", "1ps"),
                waves=waves,
            )
    else:
        # cocotb compiles with -g2012, where a variable's declaration initializer makes no event
        # at time 0: the dummy register yosys adds to every ``always @*`` block so that it runs
        # once at start-up then never fires, and a block that reads only registers stays X until
        # one of them changes. -g2005 (the last -g wins) gives the intended time-0 event. The
        # waveform dump is a Verilog-2005 module of ours (cocotb's own needs SystemVerilog).
        sources = [verilog]
        build_args = ["-g2005"]
        if waves:
            dump = sim_dir / "codesign_dump.v"
            dump.write_text(
                "module codesign_dump();\n"
                f'initial begin $dumpfile("{sim_dir / (args["top"] + (".vcd" if vcd else ".fst"))}"); '
                f"$dumpvars(0, {args['top']}); end\nendmodule\n"
            )
            sources.append(dump)
            build_args += ["-s", "codesign_dump"]
        runner.build(
            sources=sources,
            hdl_toplevel=args["top"],
            build_dir=sim_dir,
            always=not fresh,
            timescale=("1ns", "1ps"),
            build_args=build_args,
        )
    stamp.write_text(stamp_text + "\n")
    if vcd:
        # cocotb asks vvp for an FST whenever waves are on: its Icarus runner appends "-fst" after
        # the caller's plusargs (and "-none" without waves), and vvp keeps the last dumper flag,
        # so no public argument (plusargs, test_args, waves) can select a VCD. The one override:
        # the runner's command with "-fst" swapped for "-vcd" (cocotb 2.1, Icarus only).
        fst_command = runner._test_command

        def vcd_command():
            return [[("-vcd" if a == "-fst" else a) for a in cmd] for cmd in fst_command()]

        runner._test_command = vcd_command
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
