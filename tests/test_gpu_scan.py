"""The Triton scan kernels (codesign.nn.gpu_scan) against the torch path and a float64 reference.

Without CUDA the kernels run in Triton's interpreter on CPU tensors: ``TRITON_INTERPRET=1`` is set
here, at collection, before anything imports ``codesign.nn.gpu_scan`` (``triton.jit`` reads it when
the kernels are defined), and ``CODESIGN_SCAN_BACKEND=triton`` sends CPU tensors to the kernels.
The interpreter evaluates ``tl.associative_scan`` one element at a time, so this file replaces
that one routine with a row-at-a-time loop (the same combine function, the same order along the
scanned axis) and uses small tiles. With CUDA the same tests run the compiled kernels on the GPU,
and the ``cuda``-marked tests add full-size checks of the automatic dispatch.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest.importorskip("triton", reason="the GPU scan kernels need triton (pip install triton)")

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from codesign.nn import gpu_scan  # noqa: E402
from codesign.nn.cmru import BMRU, CMRU  # noqa: E402
from codesign.nn.lru import LRU  # noqa: E402
from codesign.nn.mingru import MinGRU  # noqa: E402
from codesign.nn.scan import (  # noqa: E402
    BACKEND_ENV,
    _scan_into,
    cumulative_scan,
    last_update_scan,
    linear_scan,
    scan_backend,
    sequential_scan,
    xor_scan,
)

DEVICE = "cuda" if CUDA else "cpu"
ROOT = Path(__file__).resolve().parents[1]
requires_cuda = [pytest.mark.cuda, pytest.mark.skipif(not CUDA, reason="needs a CUDA device")]


def _rowwise_generic_scan(self, inputs):
    """``tl.associative_scan`` in the interpreter, one row of the scanned axis at a time."""
    axis = self.axis
    data = [arg.handle.data for arg in inputs]
    out = [np.empty_like(d) for d in data]
    acc = None
    for i in range(data[0].shape[axis]):
        row = tuple(
            self.to_tensor(np.take(d, [i], axis=axis), arg.dtype) for d, arg in zip(data, inputs, strict=True)
        )
        acc = row if acc is None else self.combine_fn.fn(*acc, *row)
        acc = acc if isinstance(acc, tuple) else (acc,)
        index = tuple(slice(i, i + 1) if k == axis else slice(None) for k in range(data[0].ndim))
        for target, value in zip(out, acc, strict=True):
            target[index] = value.handle.data
    return [self.to_tensor(o, arg.dtype) for o, arg in zip(out, inputs, strict=True)]


if not CUDA:
    from triton.runtime import interpreter

    interpreter.ScanOps.generic_scan = _rowwise_generic_scan


@pytest.fixture(autouse=True)
def triton_path(monkeypatch):
    """Every test scans with the kernels (small tiles under the interpreter)."""
    monkeypatch.setenv(BACKEND_ENV, "triton")
    if CUDA:
        yield
    else:
        with gpu_scan.tile(16, 4, 1):
            yield


def _torch_path(fn, *args, **kwargs):
    """``fn`` evaluated on the torch path, as the reference the kernels must match."""
    before = os.environ.get(BACKEND_ENV)
    os.environ[BACKEND_ENV] = "torch"
    try:
        return fn(*args, **kwargs)
    finally:
        if before is None:
            del os.environ[BACKEND_ENV]
        else:
            os.environ[BACKEND_ENV] = before


def _values_and_grads(fn, inputs: list[torch.Tensor], weight: torch.Tensor) -> list[torch.Tensor]:
    out = fn(*inputs)
    leaves = [x for x in inputs if x is not None and x.requires_grad]
    return [out, *torch.autograd.grad((out * weight).sum(), leaves)]


def _leaves(*tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """Fresh leaf copies on the test device (the kernels' inputs)."""
    return [None if t is None else t.detach().to(DEVICE, copy=True).requires_grad_() for t in tensors]


def _refs(*tensors: torch.Tensor, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """Fresh leaf copies on the CPU in ``dtype`` (the reference's inputs)."""
    return [t.detach().to("cpu", dtype, copy=True).requires_grad_() for t in tensors]


def _close(got: list[torch.Tensor], want: list[torch.Tensor], rtol: float) -> None:
    """Relative error against the reference's scale (a state near zero has no relative precision)."""
    for g, w in zip(got, want, strict=True):
        g, w = g.detach().double().cpu(), w.detach().double().cpu()
        scale = w.abs().amax().clamp(min=1.0)
        assert float((g - w).abs().amax() / scale) <= rtol, (float((g - w).abs().amax()), float(scale))


def _inputs(batch: int, steps: int, width: int, seed: int, low: float = 0.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    a = torch.empty(batch, steps, width, dtype=torch.float64).uniform_(low, 1.0, generator=g)
    b = torch.randn(batch, steps, width, dtype=torch.float64, generator=g)
    h0 = torch.randn(batch, width, dtype=torch.float64, generator=g)
    w = torch.randn(batch, steps, width, dtype=torch.float64, generator=g)
    return a.to(dtype), b.to(dtype), h0.to(dtype), w.to(dtype)


@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_scan_values_and_gradients(with_h0: bool, dtype: torch.dtype) -> None:
    a, b, h0, w = _inputs(3, 45, 5, seed=1, low=-1.0, dtype=dtype)
    inputs = [a, b, h0] if with_h0 else [a, b]
    got = _values_and_grads(linear_scan, _leaves(*inputs), w.to(DEVICE))
    ref = _values_and_grads(sequential_scan, _refs(*inputs), w.double())
    _close(got, ref, 1e-5 if dtype == torch.float32 else 1e-12)


def test_long_sequence_matches_cpu_scan() -> None:
    """A few thousand steps with slow decay: the carries between tiles hold the state."""
    a, b, h0, w = _inputs(1, 3000, 2, seed=2, low=0.995)
    with contextlib.nullcontext() if CUDA else gpu_scan.tile(256, 2, 1):
        got = _values_and_grads(linear_scan, _leaves(a, b, h0), w.to(DEVICE))
    cpu = _torch_path(_values_and_grads, linear_scan, _refs(a, b, h0, dtype=torch.float32), w)
    ref = _torch_path(_values_and_grads, linear_scan, _refs(a, b, h0), w.double())
    _close(got, ref, 1e-5)
    _close(cpu, ref, 1e-5)


def test_reverse_scan_is_the_flipped_forward_scan() -> None:
    a, b, h0, _ = _inputs(2, 37, 3, seed=3, low=-1.0, dtype=torch.float64)
    a, b, h0 = (x.to(DEVICE) for x in (a, b, h0))
    out = torch.empty_like(b)
    _scan_into(a, b, h0, out, reverse=True)
    flipped = sequential_scan(a.flip(1), b.flip(1), h0).flip(1)
    torch.testing.assert_close(out, flipped, rtol=1e-12, atol=1e-12)


def test_signed_and_zero_gates_are_exact() -> None:
    """a in {-1, 0, 1} with integer b (CMRU eps = -1, BMRU resets): bit-equal to the CPU scan."""
    g = torch.Generator().manual_seed(4)
    a = torch.randint(-1, 2, (2, 200, 3), generator=g).float()
    b = torch.randint(-5, 6, (2, 200, 3), generator=g).float()
    h0 = torch.randint(-3, 4, (2, 3), generator=g).float()
    got = linear_scan(a.to(DEVICE), b.to(DEVICE), h0.to(DEVICE)).cpu()
    assert torch.equal(got, _torch_path(linear_scan, a, b, h0))
    signs = torch.where(torch.rand(2, 200, 3, generator=g) < 0.5, -1.0, 1.0)
    got = linear_scan(signs.to(DEVICE), b.to(DEVICE)).cpu()
    assert torch.equal(got, sequential_scan(signs, b))


def test_bfloat16_within_bfloat16_tolerance() -> None:
    a, b, h0, w = _inputs(2, 80, 6, seed=5, low=0.5)
    got = _values_and_grads(
        linear_scan, _leaves(*(x.bfloat16() for x in (a, b, h0))), w.bfloat16().to(DEVICE)
    )
    assert all(t.dtype == torch.bfloat16 for t in got)
    exact = _refs(*(x.bfloat16() for x in (a, b, h0)))
    ref = _values_and_grads(sequential_scan, exact, w.bfloat16().double())
    _close(got, ref, 2e-2)


def test_expanded_gate_and_strided_gradient() -> None:
    """A per-channel constant gate (a stride-0 view, as the LRU passes) and ``sum().backward()``
    (an expanded gradient) read through their strides."""
    lam = torch.rand(4, dtype=torch.float64) * 0.9
    _, b, h0, _ = _inputs(2, 30, 4, seed=6, dtype=torch.float64)
    lam_d, b_d = _leaves(lam, b)
    out = linear_scan(lam_d.expand(2, 30, 4), b_d, h0.to(DEVICE))
    out.sum().backward()
    lam_r, b_r = _refs(lam, b)
    ref = sequential_scan(lam_r.expand(2, 30, 4), b_r, h0)
    ref.sum().backward()
    _close([out, lam_d.grad, b_d.grad], [ref, lam_r.grad, b_r.grad], 1e-12)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_scans_match_the_torch_path(dtype: torch.dtype) -> None:
    """Complex gates (the LRU): values and gradients of a, b and h0; the complex cumulative scan,
    whose backward is a reverse complex scan."""
    g = torch.Generator().manual_seed(11)

    def draw(*shape: int) -> torch.Tensor:
        parts = torch.randn(2, *shape, dtype=torch.float64, generator=g)
        return torch.complex(parts[0], parts[1])

    a, b, h0, w = draw(2, 37, 3) * 0.6, draw(2, 37, 3), draw(2, 3), draw(2, 37, 3)
    for fn, inputs in [(linear_scan, [a, b, h0]), (linear_scan, [a, b]), (cumulative_scan, [b, h0])]:
        out = fn(*(xs := [x.to(DEVICE, dtype).requires_grad_() for x in inputs]))
        got = [out, *torch.autograd.grad((out * w.to(DEVICE, dtype)).real.sum(), xs)]
        refs = _refs(*inputs, dtype=torch.complex128)
        ref = _torch_path(lambda fn=fn, refs=refs: fn(*refs))
        ref = [ref, *torch.autograd.grad((ref * w).real.sum(), refs)]
        for x, y in zip(got, ref, strict=True):
            x, y = x.detach().cpu().to(torch.complex128), y.detach()
            error = (x - y).abs().amax() / y.abs().amax()
            assert float(error) < (1e-5 if dtype == torch.complex64 else 1e-12)


def test_closed_forms_match_cpu_scans() -> None:
    g = torch.Generator().manual_seed(7)
    b = torch.randn(2, 50, 3, dtype=torch.float64, generator=g)
    h0 = torch.randn(2, 3, dtype=torch.float64, generator=g)
    z = (torch.rand(2, 50, 3, generator=g) < 0.3).double()
    w = torch.randn(2, 50, 3, dtype=torch.float64, generator=g)
    cases = [
        (cumulative_scan, [b, h0]),
        (last_update_scan, [z, b, h0]),
        (lambda z, v, h: last_update_scan(z, v, h, method="gather"), [z, b, h0]),
        (xor_scan, [z, (torch.rand(2, 3, generator=g) < 0.5).double()]),
    ]
    for fn, inputs in cases:
        got = _values_and_grads(fn, _leaves(*inputs), w.to(DEVICE))
        ref = _torch_path(_values_and_grads, fn, _refs(*inputs), w)
        _close(got, ref, 1e-12)
    parity = xor_scan(z.to(DEVICE)).cpu()
    assert set(parity.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(parity, _torch_path(xor_scan, z))


LAYERS = {
    "CMRU(eps=1)": lambda n: CMRU(n, n, eps=1.0),
    "CMRU(eps=-1)": lambda n: CMRU(n, n, eps=-1.0),
    "BMRU": lambda n: BMRU(n, n),
    "MinGRU": lambda n: MinGRU(n, n),
    "LRU": lambda n: LRU(n, n),
}


def _layer_run(module: torch.nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Output, input gradient and parameter gradients of ``sum(y^2)``."""
    x = x.detach().clone().requires_grad_()
    y = module(x)[0]
    y.square().sum().backward()
    grads = [p.grad.clone() for p in module.parameters() if p.grad is not None]
    module.zero_grad(set_to_none=True)
    return [y, x.grad, *grads]


def _layers_agree(name: str, shape: tuple[int, int, int]) -> None:
    """The layer on the kernels against the same layer, same device, on the torch path (the gates
    depend on the input only, so both paths scan identical gates)."""
    batch, steps, size = shape
    torch.manual_seed(8)
    cell = LAYERS[name](size).to(DEVICE)
    x = torch.randn(batch, steps, size).to(DEVICE)
    ref = _torch_path(_layer_run, cell, x)
    _close(_layer_run(cell, x), ref, 1e-5)


@pytest.mark.parametrize("name", list(LAYERS))
def test_layers_on_the_kernels_match_the_torch_path(name: str) -> None:
    _layers_agree(name, (2, 40, 4))


@pytest.mark.parametrize("name", list(LAYERS))
def test_cuda_layers_full_size(name: str, monkeypatch) -> None:
    """On a GPU, each layer at a training shape: the automatic dispatch against the torch path."""
    monkeypatch.delenv(BACKEND_ENV)
    _layers_agree(name, (4, 2048, 64))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 2),
    steps=st.integers(1, 40),
    width=st.integers(1, 5),
    with_h0=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_matches_sequential_reference(batch, steps, width, with_h0, seed) -> None:
    a, b, h0, w = _inputs(batch, steps, width, seed=seed, low=-1.0, dtype=torch.float64)
    h0 = h0 if with_h0 else None
    got = _values_and_grads(linear_scan, _leaves(a, b, h0), w.to(DEVICE))
    ref = _values_and_grads(sequential_scan, _refs(a, b, h0) if with_h0 else [*_refs(a, b), None], w)
    _close(got, ref, 1e-12)


def test_dispatch_keeps_cpu_tensors_on_the_torch_path(monkeypatch) -> None:
    monkeypatch.delenv(BACKEND_ENV)
    assert scan_backend(torch.zeros(1)) == "torch"

    def refuse(*args, **kwargs):
        raise AssertionError("a CPU tensor reached the Triton kernels")

    monkeypatch.setattr(gpu_scan, "scan_into", refuse)
    monkeypatch.setattr(gpu_scan, "scan_backward", refuse)
    a = torch.rand(1, 10, 2, requires_grad=True)
    linear_scan(a, torch.randn(1, 10, 2)).sum().backward()


def test_dispatch_choices(monkeypatch) -> None:
    assert scan_backend(torch.zeros(1)) == "triton"
    assert scan_backend(torch.zeros(1, dtype=torch.complex64)) == "triton"
    assert scan_backend(torch.zeros(1, dtype=torch.int64)) == "torch"
    monkeypatch.setenv(BACKEND_ENV, "torch")
    assert scan_backend(torch.zeros(1)) == "torch"
    monkeypatch.setenv(BACKEND_ENV, "gpu")
    with pytest.raises(ValueError, match="CODESIGN_SCAN_BACKEND='gpu' is not one of auto, torch, triton"):
        scan_backend(torch.zeros(1))


def test_default_tiles_cover_wide_and_narrow_scans(monkeypatch) -> None:
    monkeypatch.setattr(gpu_scan, "_TILE_OVERRIDE", None)
    cpu = torch.device("cpu")
    assert gpu_scan.tile_for(16, 256, cpu) == (128, 16, 4)
    assert gpu_scan.tile_for(64, 256, cpu) == (64, 32, 4)
    assert gpu_scan.tile_for(1, 3, cpu) == (512, 4, 4)
    with pytest.raises(ValueError, match="chunk must be a power of two"):
        with gpu_scan.tile(12, 4):
            pass


def test_kernels_compile_for_an_h100_target() -> None:
    """The interpreter accepts code the compiler rejects: compile for sm_90 (no GPU needed)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu" / "compile_kernels.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count('"cubin_bytes"') == 5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "name", ["linear_scan", "cumulative_scan", "last_update_scan", "xor_scan"], ids=lambda n: n
)
def test_cuda_dispatch_full_size(name: str, dtype: torch.dtype, monkeypatch) -> None:
    """On a GPU, the automatic choice runs the kernels and agrees with the CPU float64 scan."""
    monkeypatch.delenv(BACKEND_ENV)
    a, b, h0, w = _inputs(4, 5000, 96, seed=9, low=0.9)
    z = (a < 0.92).to(a.dtype)
    fn = {
        "linear_scan": (linear_scan, [a, b, h0]),
        "cumulative_scan": (cumulative_scan, [b, h0]),
        "last_update_scan": (last_update_scan, [z, b, h0]),
        "xor_scan": (xor_scan, [z]),
    }
    fn, inputs = fn[name]
    assert scan_backend(b.cuda()) == "triton"
    got = _values_and_grads(
        fn, [x.detach().to("cuda", dtype).requires_grad_() for x in inputs], w.to("cuda", dtype)
    )
    exact = _refs(*(x.to(dtype) for x in inputs))
    ref = _torch_path(_values_and_grads, fn, exact, w.to(dtype).double())
    _close(got, ref, 1e-5 if dtype == torch.float32 else 3e-2)


for _mark in requires_cuda:
    test_cuda_dispatch_full_size = _mark(test_cuda_dispatch_full_size)
    test_cuda_layers_full_size = _mark(test_cuda_layers_full_size)


def test_gpu_bench_report_sections(monkeypatch) -> None:
    """The GPU benchmark's sections, ratios and agreement figures, at tiny shapes on the CPU
    (torch path: the kernels themselves are checked above)."""
    from codesign.nn.bench_gpu import GpuBenchConfig, bench_gpu

    monkeypatch.setenv(BACKEND_ENV, "torch")
    seen: list[list[str]] = []
    report = bench_gpu(GpuBenchConfig.quick(), device="cpu", progress=lambda r: seen.append(sorted(r)))
    assert len(seen) == 4 and "cells" in seen[-1] and "agreement" in seen[0]
    row = report["scan"]["T32"]
    assert row["ratio_linear_scan_to_floor"] == round(row["linear_scan_s"] / row["floor_a_mul_b_add_b_s"], 3)
    assert row["linear_scan_torch_path_s"] > 0 and "accelerated_scan" in row
    assert report["agreement"]["max_rel_error_float32"] < 1e-5
    assert report["agreement"]["max_rel_error_float64"] < 1e-12
    assert report["tiles"]["fastest"]["chunk"] == 16
    cells = report["cells"]
    assert set(cells["tokens_per_s"]) == {"CMRU(eps=1)", "BMRU", "torch.nn.GRU"}
    assert set(cells["ratio_to_torch_gru"]) == {"CMRU(eps=1)", "BMRU"}


def test_bench_device_options_refuse_clearly() -> None:
    from typer.testing import CliRunner

    from codesign.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["bench", "scan", "--device", "gpu"])
    assert res.exit_code != 0 and "--device 'gpu': expected auto, cpu or cuda" in res.output
    res = runner.invoke(app, ["bench", "rtl", "--device", "cuda"])
    assert res.exit_code != 0 and "--device applies to `bench scan` only" in res.output
    if not CUDA:
        res = runner.invoke(app, ["bench", "scan", "--device", "cuda"])
        assert res.exit_code != 0 and "no CUDA device is available" in res.output
