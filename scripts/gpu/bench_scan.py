"""``codesign bench scan --device cuda`` without the command line's dependencies (typer, rich).

``python scripts/gpu/bench_scan.py OUT.json``: runs :func:`codesign.nn.bench_gpu.bench_gpu` on the
first CUDA device and rewrites ``OUT.json`` after every section, so a run cut short keeps what it
measured. :mod:`codesign.nn` needs only torch (and triton for the kernels).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: bench_scan.py OUT.json", file=sys.stderr)
        return 2
    import torch

    from codesign.nn.bench_gpu import bench_gpu

    if not torch.cuda.is_available():
        print("no CUDA device is available (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    target = argv[0]

    def write(report: dict) -> None:
        tmp = target + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, target)
        print(
            "sections done:",
            ", ".join([*report["scan"], *(k for k in ("agreement", "tiles", "cells") if k in report)]),
            flush=True,
        )

    report = bench_gpu(device="cuda", progress=write)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
