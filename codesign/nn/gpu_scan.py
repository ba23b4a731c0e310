"""Triton kernels for the first-order scan ``h_t = a_t h_{t-1} + b_t`` on a GPU.

The tensors stay in the layers' ``(batch, time, features)`` layout: one program owns one batch row
and a block of ``BLOCK_D`` neighbouring features (contiguous in memory, so every time step is one
coalesced row read) and walks the whole time axis in tiles of ``CHUNK`` steps. Inside a tile the
``CHUNK`` steps are combined by ``tl.associative_scan`` with the affine operator
``(a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2)``; the tile's last state is the carry into the next
tile. Every element of ``a`` and ``b`` is read once and every ``h`` written once, which is the
memory-bound floor of the scan (no chunk-summary pass, no transposes, no second read). The loads
of the next tile are issued before the current tile is scanned, so memory latency overlaps the
arithmetic of the sequential walk.

The backward pass is the reverse scan ``G_t = grad_t + a_{t+1} G_{t+1}`` (``a`` shifted by one
step, see :mod:`codesign.nn.scan`), walked from the last tile to the first; the same kernel
multiplies ``G_t`` by ``h_{t-1}`` as it goes, so ``dL/da`` costs one extra read of ``h`` and one
write instead of a separate pass.

Arithmetic is float32 for float16/bfloat16/float32 inputs (results stored in the input dtype) and
float64 for float64. ``a`` in {-1, 0, 1} with integer ``b`` stays exact, as on the CPU: products of
such gates and sums of integers are exact in any order. Complex tensors (the LRU's state) run a
kernel of their own on their real views, the same walk with the complex affine operator; its
backward reads ``conj(a_{t+1})`` and writes ``G conj(h_{t-1})``.

``triton`` is optional: without it :func:`available` is False and nothing here is called. Under
``TRITON_INTERPRET=1`` (set before this module is imported) the kernels run on CPU tensors in
Triton's interpreter, which is how the tests check them on a machine without a GPU.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

try:  # optional dependency: the package imports and runs without it
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None
    tl = None

__all__ = ["DTYPES", "available", "scan_backward", "scan_into", "tile", "tile_for"]

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)
"""Dtypes the kernels take (complex ones as their real views, in float32 / float64)."""

_TILE_OVERRIDE: tuple[int, int, int] | None = None


def available() -> bool:
    """True when triton imports (the kernels can be compiled or interpreted)."""
    return triton is not None


if triton is not None:

    @triton.jit
    def _affine(a1, b1, a2, b2):
        # step 1 then step 2: h -> a2 (a1 h + b1) + b2
        return a1 * a2, a2 * b1 + b2

    @triton.jit
    def _last_row(h, rows, CHUNK: tl.constexpr):
        return tl.sum(tl.where(rows[:, None] == CHUNK - 1, h, 0.0), axis=0)

    @triton.jit
    def _tile(c, T, rows, fmask, CHUNK: tl.constexpr, REVERSE: tl.constexpr):
        # time indices of tile c (walked backwards when REVERSE) and the mask of its valid elements
        step = c * CHUNK + rows
        t = ((T - 1 - step) if REVERSE else step).to(tl.int64)
        return t, (step < T)[:, None] & fmask[None, :]

    @triton.jit
    def _scan_kernel(
        a_ptr, b_ptr, h0_ptr, out_ptr, T, D,
        s_ab, s_at, s_ad, s_bb, s_bt, s_bd, s_hb, s_hd, s_ob, s_ot, s_od,
        HAS_A: tl.constexpr, HAS_H0: tl.constexpr, REVERSE: tl.constexpr, PARITY: tl.constexpr,
        CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, F64: tl.constexpr,
    ):  # fmt: skip
        acc = tl.float64 if F64 else tl.float32
        row = tl.program_id(0).to(tl.int64)
        feats = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
        fmask = feats < D
        rows = tl.arange(0, CHUNK)
        a_row, b_row = a_ptr + row * s_ab + feats[None, :] * s_ad, b_ptr + row * s_bb + feats[None, :] * s_bd
        if HAS_H0:
            carry = tl.load(h0_ptr + row * s_hb + feats * s_hd, mask=fmask, other=0.0).to(acc)
        else:
            carry = tl.zeros([BLOCK_D], dtype=acc)
        # Tile c + 1 is loaded before tile c is scanned, so its loads are in flight during the scan.
        t, mask = _tile(0, T, rows, fmask, CHUNK, REVERSE)
        b_next = tl.load(b_row + t[:, None] * s_bt, mask=mask, other=0.0)
        a_next = b_next
        if HAS_A:
            a_next = tl.load(a_row + t[:, None] * s_at, mask=mask, other=1.0)
        for c in range(tl.cdiv(T, CHUNK)):
            b, a, t_now, mask_now = b_next.to(acc), a_next.to(acc), t, mask
            t, mask = _tile(c + 1, T, rows, fmask, CHUNK, REVERSE)
            b_next = tl.load(b_row + t[:, None] * s_bt, mask=mask, other=0.0)
            if HAS_A:
                a_next = tl.load(a_row + t[:, None] * s_at, mask=mask, other=1.0)
                gain, local = tl.associative_scan((a, b), 0, _affine)
                h = gain * carry[None, :] + local
            else:
                h = tl.cumsum(b, 0) + carry[None, :]
                if PARITY:  # integer counts mod 2: exact at any length, in any dtype
                    h = h - 2.0 * tl.floor(h * 0.5)
            out = out_ptr + row * s_ob + t_now[:, None] * s_ot + feats[None, :] * s_od
            tl.store(out, h.to(out_ptr.dtype.element_ty), mask=mask_now)
            carry = _last_row(h, rows, CHUNK)

    @triton.jit
    def _backward_loads(a_row, g_row, h_row, t, mask, T, s_at, s_gt, s_ht, NEED_GA: tl.constexpr):
        # a_{t+1} (1 past the end), grad_t and h_{t-1} (0 before the start) of one tile
        a = tl.load(a_row + (t[:, None] + 1) * s_at, mask=mask & (t + 1 < T)[:, None], other=1.0)
        g = tl.load(g_row + t[:, None] * s_gt, mask=mask, other=0.0)
        hp = g
        if NEED_GA:
            hp = tl.load(h_row + (t[:, None] - 1) * s_ht, mask=mask & (t >= 1)[:, None], other=0.0)
        return a, g, hp

    @triton.jit
    def _scan_backward_kernel(
        a_ptr, g_ptr, h_ptr, h0_ptr, total_ptr, ga_ptr, T, D,
        s_ab, s_at, s_ad, s_gb, s_gt, s_gd, s_hb, s_ht, s_hd, s_0b, s_0d, s_ob, s_ot, s_od,
        HAS_H0: tl.constexpr, NEED_GA: tl.constexpr,
        CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, F64: tl.constexpr,
    ):  # fmt: skip
        # total_t = g_t + a_{t+1} total_{t+1}; ga_t = total_t * h_{t-1} (h_{-1} = h0 or 0).
        # total and ga share the strides s_o*.
        acc = tl.float64 if F64 else tl.float32
        row = tl.program_id(0).to(tl.int64)
        feats = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
        fmask = feats < D
        rows = tl.arange(0, CHUNK)
        a_row = a_ptr + row * s_ab + feats[None, :] * s_ad
        g_row = g_ptr + row * s_gb + feats[None, :] * s_gd
        h_row = h_ptr + row * s_hb + feats[None, :] * s_hd
        if HAS_H0:
            first = tl.load(h0_ptr + row * s_0b + feats * s_0d, mask=fmask, other=0.0).to(acc)
        else:
            first = tl.zeros([BLOCK_D], dtype=acc)
        carry = tl.zeros([BLOCK_D], dtype=acc)
        t, mask = _tile(0, T, rows, fmask, CHUNK, True)
        a_next, g_next, h_next = _backward_loads(a_row, g_row, h_row, t, mask, T, s_at, s_gt, s_ht, NEED_GA)
        for c in range(tl.cdiv(T, CHUNK)):
            a, g, hp, t_now, mask_now = a_next.to(acc), g_next.to(acc), h_next.to(acc), t, mask
            t, mask = _tile(c + 1, T, rows, fmask, CHUNK, True)
            a_next, g_next, h_next = _backward_loads(
                a_row, g_row, h_row, t, mask, T, s_at, s_gt, s_ht, NEED_GA
            )
            gain, local = tl.associative_scan((a, g), 0, _affine)
            total = gain * carry[None, :] + local
            offs = row * s_ob + t_now[:, None] * s_ot + feats[None, :] * s_od
            tl.store(total_ptr + offs, total.to(total_ptr.dtype.element_ty), mask=mask_now)
            if NEED_GA:
                hp = tl.where((t_now == 0)[:, None], first[None, :], hp)
                tl.store(ga_ptr + offs, (total * hp).to(ga_ptr.dtype.element_ty), mask=mask_now)
            carry = _last_row(total, rows, CHUNK)

    @triton.jit
    def _complex_affine(ar1, ai1, br1, bi1, ar2, ai2, br2, bi2):
        # the affine operator on complex numbers held as (real, imaginary) pairs
        ar = ar1 * ar2 - ai1 * ai2
        ai = ar1 * ai2 + ai1 * ar2
        return ar, ai, ar2 * br1 - ai2 * bi1 + br2, ar2 * bi1 + ai2 * br1 + bi2

    @triton.jit
    def _complex_scan_kernel(
        a_ptr, b_ptr, h0_ptr, out_ptr, g_ptr, ga_ptr, T, D,
        s_ab, s_at, s_ad, s_bb, s_bt, s_bd, s_hb, s_hd, s_ob, s_ot, s_od,
        HAS_H0: tl.constexpr, BACKWARD: tl.constexpr, NEED_GA: tl.constexpr,
        CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, F64: tl.constexpr,
    ):  # fmt: skip
        # Complex tensors as their real views (..., 2): real part at an element's offset, imaginary
        # part one number after it; strides count real numbers.
        # Forward: out_t = a_t out_{t-1} + b_t from h0 (b_ptr = b, h_ptr = h0).
        # Backward: out_t = g_t + conj(a_{t+1}) out_{t+1} (b_ptr = h, the forward's states, read
        # one step behind for ga_t = out_t conj(h_{t-1}), h_{-1} = h0; g, ga share b's strides).
        acc = tl.float64 if F64 else tl.float32
        row = tl.program_id(0).to(tl.int64)
        feats = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
        fmask = feats < D
        rows = tl.arange(0, CHUNK)
        a_row = a_ptr + row * s_ab + feats[None, :] * s_ad
        b_row = b_ptr + row * s_bb + feats[None, :] * s_bd
        h0_row = h0_ptr + row * s_hb + feats * s_hd
        zeros = tl.zeros([BLOCK_D], dtype=acc)
        cr, ci, fr, fi = zeros, zeros, zeros, zeros
        if HAS_H0:
            fr = tl.load(h0_row, mask=fmask, other=0.0).to(acc)
            fi = tl.load(h0_row + 1, mask=fmask, other=0.0).to(acc)
            if not BACKWARD:
                cr, ci = fr, fi
        for c in range(tl.cdiv(T, CHUNK)):
            t, mask = _tile(c, T, rows, fmask, CHUNK, BACKWARD)
            if BACKWARD:
                ahead = mask & (t + 1 < T)[:, None]
                a_at = a_row + (t[:, None] + 1) * s_at
                ar = tl.load(a_at, mask=ahead, other=1.0).to(acc)
                ai = -tl.load(a_at + 1, mask=ahead, other=0.0).to(acc)
                x_at = g_ptr + row * s_bb + t[:, None] * s_bt + feats[None, :] * s_bd
            else:
                a_at = a_row + t[:, None] * s_at
                ar = tl.load(a_at, mask=mask, other=1.0).to(acc)
                ai = tl.load(a_at + 1, mask=mask, other=0.0).to(acc)
                x_at = b_row + t[:, None] * s_bt
            xr = tl.load(x_at, mask=mask, other=0.0).to(acc)
            xi = tl.load(x_at + 1, mask=mask, other=0.0).to(acc)
            gr, gi, lr, li = tl.associative_scan((ar, ai, xr, xi), 0, _complex_affine)
            hr = gr * cr[None, :] - gi * ci[None, :] + lr
            hi = gr * ci[None, :] + gi * cr[None, :] + li
            out = out_ptr + row * s_ob + t[:, None] * s_ot + feats[None, :] * s_od
            tl.store(out, hr.to(out_ptr.dtype.element_ty), mask=mask)
            tl.store(out + 1, hi.to(out_ptr.dtype.element_ty), mask=mask)
            if NEED_GA:
                before = mask & (t >= 1)[:, None]
                p_at = b_row + (t[:, None] - 1) * s_bt
                pr = tl.load(p_at, mask=before, other=0.0).to(acc)
                pi = tl.load(p_at + 1, mask=before, other=0.0).to(acc)
                pr = tl.where((t == 0)[:, None], fr[None, :], pr)
                pi = tl.where((t == 0)[:, None], fi[None, :], pi)
                ga = ga_ptr + row * s_bb + t[:, None] * s_bt + feats[None, :] * s_bd
                tl.store(ga, (hr * pr + hi * pi).to(ga_ptr.dtype.element_ty), mask=mask)
                tl.store(ga + 1, (hi * pr - hr * pi).to(ga_ptr.dtype.element_ty), mask=mask)
            cr = _last_row(hr, rows, CHUNK)
            ci = _last_row(hi, rows, CHUNK)


@contextlib.contextmanager
def tile(chunk: int, block_d: int, warps: int = 4) -> Iterator[None]:
    """Use tiles of ``chunk`` steps by ``block_d`` features, ``warps`` warps per program, inside
    the block (benchmark sweeps, and small tiles for the interpreter)."""
    global _TILE_OVERRIDE
    for name, value in (("chunk", chunk), ("block_d", block_d), ("warps", warps)):
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two, got {value}")
    before, _TILE_OVERRIDE = _TILE_OVERRIDE, (chunk, block_d, warps)
    try:
        yield
    finally:
        _TILE_OVERRIDE = before


def _processors(device: torch.device) -> int:
    if device.type == "cuda":
        return _multiprocessors(torch.cuda.current_device() if device.index is None else device.index)
    return 132  # the interpreter: any plausible count gives a valid tiling


@functools.cache
def _multiprocessors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def tile_for(batch: int, width: int, device: torch.device) -> tuple[int, int, int]:
    """``(CHUNK, BLOCK_D, warps)`` for a scan of ``batch`` rows of ``width`` features.

    A row of 32 float32 features is one 128-byte line; narrower blocks give more programs (the
    walk over time is sequential per program, so the parallelism is ``batch * width / BLOCK_D``),
    down to 16 features when fewer than two programs per multiprocessor would run. A tile of about
    2,048 numbers per tensor keeps enough loads in flight per program.
    """
    if _TILE_OVERRIDE is not None:
        return _TILE_OVERRIDE
    block_d = min(32, triton.next_power_of_2(width))
    while block_d > 16 and batch * triton.cdiv(width, block_d) < 2 * _processors(device):
        block_d //= 2
    return max(16, 2048 // block_d), block_d, 4


def _grid(batch: int, width: int, block_d: int) -> tuple[int, int]:
    return batch, triton.cdiv(width, block_d)


def _device_guard(t: torch.Tensor):
    return torch.cuda.device(t.device) if t.is_cuda else contextlib.nullcontext()


def scan_into(
    a: torch.Tensor | None,
    b: torch.Tensor,
    h0: torch.Tensor | None,
    out: torch.Tensor,
    reverse: bool = False,
    parity: bool = False,
) -> None:
    """Write the scan of ``(a, b)`` from ``h0`` into ``out``, as :func:`codesign.nn.scan._scan_into`.

    ``a = None`` means ``a = 1`` (a cumulative sum). All tensors share ``b``'s device and dtype;
    ``out`` may be ``b`` itself (each program reads a tile before it writes it). ``parity`` (with
    ``a = None`` and integer ``b``, ``h0``) keeps the running sum mod 2 -- the XOR state -- so it
    never leaves the range a float16 or bfloat16 holds exactly.
    """
    if parity and a is not None:
        raise ValueError("parity is a cumulative sum mod 2: it takes no gate a")
    if b.is_complex():
        if reverse:  # the complex kernel walks forward: scan the time-reversed sequence
            flipped = torch.empty(b.shape, dtype=b.dtype, device=b.device)
            _complex(None if a is None else a.flip(1), b.flip(1), h0, flipped, None, None)
            out.copy_(flipped.flip(1))
        else:
            _complex(a, b, h0, out, None, None)
        return
    batch, steps, width = b.shape
    chunk, block_d, warps = tile_for(batch, width, b.device)
    a_ = b if a is None else a
    h0_ = b[:, 0] if h0 is None else h0
    with _device_guard(b):
        _scan_kernel[_grid(batch, width, block_d)](
            a_, b, h0_, out, steps, width,
            *a_.stride(), *b.stride(), *h0_.stride(), *out.stride(),
            HAS_A=a is not None, HAS_H0=h0 is not None, REVERSE=reverse, PARITY=parity,
            CHUNK=chunk, BLOCK_D=block_d, F64=b.dtype == torch.float64, num_warps=warps,
        )  # fmt: skip


def scan_backward(
    a: torch.Tensor | None, grad: torch.Tensor, h: torch.Tensor, h0: torch.Tensor | None, need_grad_a: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(G, dL/da)`` of the scan: ``G_t = grad_t + a_{t+1} G_{t+1}`` and ``G_t h_{t-1}``.

    ``a = None`` means ``a = 1``. ``dL/da`` is None unless ``need_grad_a``.
    """
    batch, steps, width = grad.shape
    total = torch.empty(grad.shape, dtype=grad.dtype, device=grad.device)
    grad_a = torch.empty_like(total) if need_grad_a else total
    if grad.is_complex():
        _complex(a, h, h0, total, grad, grad_a if need_grad_a else None)
        return total, (grad_a if need_grad_a else None)
    chunk, block_d, warps = tile_for(batch, width, grad.device)
    a_ = torch.ones((), dtype=grad.dtype, device=grad.device).expand(grad.shape) if a is None else a
    h0_ = h[:, 0] if h0 is None else h0
    with _device_guard(grad):
        _scan_backward_kernel[_grid(batch, width, block_d)](
            a_, grad, h, h0_, total, grad_a, steps, width,
            *a_.stride(), *grad.stride(), *h.stride(), *h0_.stride(), *total.stride(),
            HAS_H0=h0 is not None, NEED_GA=need_grad_a,
            CHUNK=chunk, BLOCK_D=block_d, F64=grad.dtype == torch.float64, num_warps=warps,
        )  # fmt: skip
    return total, (grad_a if need_grad_a else None)


def _complex(
    a: torch.Tensor | None,
    b: torch.Tensor,
    h0: torch.Tensor | None,
    out: torch.Tensor,
    grad: torch.Tensor | None,
    grad_a: torch.Tensor | None,
) -> None:
    """The complex scan on real views: forward (``grad`` None: ``b`` is the input) or backward
    (``b`` is the forward's ``h``; ``out`` gets ``G`` and ``grad_a``, when given, ``G conj(h_{t-1})``).

    ``grad`` and ``grad_a`` are made to share ``b``'s strides, which the kernel reads them with.
    """
    batch, steps, width = b.shape
    chunk, block_d, warps = tile_for(batch, width, b.device)
    if a is None:
        a = torch.ones((), dtype=b.dtype, device=b.device).expand(b.shape)
    b = b.contiguous()
    backward = grad is not None
    g = grad.contiguous() if backward else b
    ga = grad_a if grad_a is not None else out
    if out.stride() != b.stride() or ga.stride() != b.stride():
        raise ValueError("the complex kernel writes contiguous (batch, time, d) outputs")
    real = [torch.view_as_real(x) for x in (a, b, out, g, ga)]
    h0_ = torch.view_as_real(h0 if h0 is not None else b[:, 0])
    with _device_guard(b):
        _complex_scan_kernel[_grid(batch, width, block_d)](
            real[0], real[1], h0_, real[2], real[3], real[4], steps, width,
            *real[0].stride()[:3], *real[1].stride()[:3], *h0_.stride()[:2], *real[2].stride()[:3],
            HAS_H0=h0 is not None, BACKWARD=backward, NEED_GA=grad_a is not None,
            CHUNK=chunk, BLOCK_D=block_d, F64=b.dtype == torch.complex128, num_warps=warps,
        )  # fmt: skip
