"""Compile the scan kernels for a CUDA target without a GPU (Triton's front end, PTX and ptxas).

The interpreter (``TRITON_INTERPRET=1``) accepts code that the compiler rejects (loop-carried
dtype changes, unsupported casts), so this checks every specialisation the package launches
against a real target: ``python scripts/gpu/compile_kernels.py [--arch 90]``. Prints one JSON line
per kernel and exits non-zero on the first failure. Must run without ``TRITON_INTERPRET``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _pointer(dtype: str) -> str:
    return {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float64": "*fp64"}[dtype]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability, e.g. 90 (H100)")
    parser.add_argument("--quick", action="store_true", help="float32 only, the two main specialisations")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("unset TRITON_INTERPRET: the interpreter does not compile", file=sys.stderr)
        return 2
    import triton
    from triton.backends.compiler import GPUTarget

    from codesign.nn import gpu_scan

    target = GPUTarget("cuda", args.arch, 32)
    dtypes = ("float32",) if args.quick else ("bfloat16", "float32", "float64")
    flags = (True,) if args.quick else (False, True)
    for dtype, has_a, has_h0, reverse in itertools.product(dtypes, flags, flags, (False, True)):
        for parity in (False,) if has_a or args.quick else (False, True):
            consts = {"HAS_A": has_a, "HAS_H0": has_h0, "REVERSE": reverse, "PARITY": parity}
            consts.update({"CHUNK": 64, "BLOCK_D": 32, "F64": dtype == "float64"})
            label = ("forward", dtype, has_a, has_h0, reverse, parity)
            _compile(triton, gpu_scan._scan_kernel, dtype, consts, target, label)
    for dtype, has_h0, need in itertools.product(dtypes, flags, flags):
        consts = {"HAS_H0": has_h0, "NEED_GA": need, "CHUNK": 128, "BLOCK_D": 16, "F64": dtype == "float64"}
        _compile(
            triton, gpu_scan._scan_backward_kernel, dtype, consts, target, ("backward", dtype, has_h0, need)
        )
    for dtype, has_h0, backward in itertools.product(
        ("float32",) if args.quick else ("float32", "float64"), flags, (False, True)
    ):
        consts = {"HAS_H0": has_h0, "BACKWARD": backward, "NEED_GA": backward, "CHUNK": 64, "BLOCK_D": 32}
        label = ("complex", dtype, has_h0, backward)
        _compile(
            triton, gpu_scan._complex_scan_kernel, dtype, {**consts, "F64": dtype == "float64"}, target, label
        )
    for warps in () if args.quick else (1, 2):  # the warp counts the benchmark's tile sweep tries
        consts = {
            "HAS_A": True,
            "HAS_H0": True,
            "REVERSE": False,
            "PARITY": False,
            "CHUNK": 32,
            "BLOCK_D": 32,
        }
        label = ("forward", "float32", "warps", warps)
        _compile(triton, gpu_scan._scan_kernel, "float32", {**consts, "F64": False}, target, label, warps)
        consts = {"HAS_H0": True, "NEED_GA": True, "CHUNK": 32, "BLOCK_D": 32, "F64": False}
        label = ("backward", "float32", "warps", warps)
        _compile(triton, gpu_scan._scan_backward_kernel, "float32", consts, target, label, warps)
    return 0


def _compile(triton, kernel, dtype: str, constexprs: dict, target, label: tuple, warps: int = 4) -> None:
    """Compile one specialisation: pointers of ``dtype``, int32 sizes, int64 strides."""
    signature = {}
    missing = [
        n
        for n, p in zip(kernel.arg_names, kernel.params, strict=True)
        if p.is_constexpr and n not in constexprs
    ]
    if missing:
        raise ValueError(f"no value for the constexpr parameters {missing}")
    for name in kernel.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            signature[name] = _pointer(dtype)
        else:
            signature[name] = "i32" if name in ("T", "D") else "i64"
    start = time.perf_counter()
    source = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    compiled = triton.compile(source, target=target, options={"num_warps": warps})
    print(
        json.dumps(
            {
                "kernel": list(label),
                "cubin_bytes": len(compiled.asm["cubin"]),
                "seconds": round(time.perf_counter() - start, 2),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
