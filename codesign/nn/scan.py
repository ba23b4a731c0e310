"""First-order linear scans ``h_t = a_t * h_{t-1} + b_t`` over the time axis, with exact gradients.

``linear_scan`` is the generic scan: signed states, any real or complex ``a`` (0 and -1 included,
which the BMRU and the eps = -1 reflection need), no log-space trick. It is a
``torch.autograd.Function`` whose backward pass is itself a reverse linear scan::

    G_t      = dL/dh_t + conj(a_{t+1}) G_{t+1}      (total gradient reaching h_t)
    dL/db_t  = G_t
    dL/da_t  = G_t * conj(h_{t-1})                   (h_{-1} = h0)
    dL/dh0   = conj(a_0) G_0

so only ``a``, ``h`` and ``h0`` are kept for backward and peak memory is linear in ``T``.

Both directions run the same evaluator. When a time step holds enough numbers (``batch * d`` at
least :data:`WIDE_STEP`) it walks the time axis step by step, one fused ``addcmul`` per step, which
reads ``a`` and ``b`` and writes ``h`` once each (the memory-bound minimum). Narrower scans (the
small-model, long-sequence regime) are chunked: the time axis is viewed as ``(chunks, C)``; a first
pass computes each chunk's product of ``a`` and its zero-start exit state, the chunk carries are
themselves a (shorter, recursively chunked) linear scan, and a second pass re-runs every chunk
from its exact entering state. ``C`` balances the number of operator calls (~``2C + T / C``) and
keeps each call below torch's parallel grain, so that on a shared 2-core machine no call waits for
a busy second core. Within a chunk the arithmetic is the sequential recurrence itself, so values
that the sequential loop computes exactly (``a`` in {-1, 0, 1} with integer ``b``) stay exact.

Closed forms for the binary gates:

* :func:`cumulative_scan` -- ``a = 1`` (CMRU with eps = 1): a cumulative sum;
* :func:`last_update_scan` -- ``a = 1 - z`` with ``z`` in {0, 1} (BMRU, eps = 0): the state is the
  value written at the last step with ``z = 1`` (closed form: a ``cummax`` of update indices and a
  ``gather``; by default evaluated as the scan, which is faster on CPU);
* :func:`xor_scan` -- ``a = 1 - 2 s`` with ``s`` in {0, 1} (HSRU digital state, parity): a flip
  state, ``d_t = (d_0 + sum_{r <= t} s_r) mod 2``, whose backward pass is a signed cumulative sum.

Their backward passes give the same gradients as :func:`linear_scan` on the equivalent ``(a, b)``.

On a GPU the same public functions run Triton kernels (:mod:`codesign.nn.gpu_scan`): one read of
``a`` and ``b`` and one write of ``h``, in the ``(batch, time, d)`` layout, with the backward's
``dL/da`` fused into its reverse scan. :func:`scan_backend` chooses per call from the tensor's
device, and the environment variable ``CODESIGN_SCAN_BACKEND`` (``auto``, ``torch`` or ``triton``)
overrides it.
"""

from __future__ import annotations

import math
import os
from typing import Literal

import torch
from torch.autograd.function import once_differentiable

__all__ = [
    "BACKEND_ENV",
    "WIDE_STEP",
    "cumulative_scan",
    "last_update_scan",
    "linear_scan",
    "scan_backend",
    "sequential_scan",
    "xor_scan",
]

WIDE_STEP = 4096
"""A step with at least this many numbers (``batch * d``) is scanned step by step, unchunked."""

_MIN_CHUNKED_LENGTH = 64
_GRAIN = 32768  # torch's elementwise parallel grain size
_FLUSH_EVERY = 32

BACKEND_ENV = "CODESIGN_SCAN_BACKEND"
"""Environment variable choosing the scan evaluator: ``auto`` (default), ``torch`` or ``triton``."""
_BACKENDS = ("auto", "torch", "triton")


def scan_backend(t: torch.Tensor) -> Literal["torch", "triton"]:
    """Which evaluator scans ``t``: ``"triton"`` or ``"torch"``.

    ``auto`` (the default) takes the Triton kernels for a floating-point or complex CUDA tensor
    when triton is installed, and the torch path otherwise, so CPU tensors never change path.
    ``triton`` forces the kernels on any device (on CPU tensors they need ``TRITON_INTERPRET=1``
    set before the first scan; this is how the tests check them without a GPU); ``torch`` forces
    the torch path. Dtypes the kernels do not take (integers) always use torch.
    """
    choice = os.environ.get(BACKEND_ENV, "auto")
    if choice not in _BACKENDS:
        raise ValueError(f"{BACKEND_ENV}={choice!r} is not one of {', '.join(_BACKENDS)}")
    if choice == "torch" or (choice == "auto" and not t.is_cuda):
        return "torch"
    from codesign.nn import gpu_scan

    if t.dtype not in gpu_scan.DTYPES:
        return "torch"
    if not gpu_scan.available():
        if choice == "triton":
            raise RuntimeError(f"{BACKEND_ENV}=triton but triton is not installed (pip install triton)")
        return "torch"
    return "triton"


def _gpu():
    from codesign.nn import gpu_scan

    return gpu_scan


def _check(a: torch.Tensor | None, b: torch.Tensor, h0: torch.Tensor | None) -> None:
    if b.dim() != 3 or (a is not None and a.shape != b.shape):
        shape_a = "None" if a is None else tuple(a.shape)
        raise ValueError(f"a and b must both be (batch, time, d); got {shape_a} and {tuple(b.shape)}")
    if b.shape[1] == 0:
        raise ValueError("the time axis is empty")
    if h0 is not None and h0.shape != (b.shape[0], b.shape[2]):
        raise ValueError(f"h0 must be (batch, d) = {(b.shape[0], b.shape[2])}, got {tuple(h0.shape)}")


def _chunk_length(steps: int, width: int) -> int:
    """Chunk length for a scan of ``steps`` steps of ``width`` numbers each (1 = no chunking)."""
    if width >= WIDE_STEP or steps < _MIN_CHUNKED_LENGTH:
        return 1
    # ~2C + steps / C operator calls per level, minimised at C ~ sqrt(steps / 2). Longer chunks keep
    # each call's (steps / C) * width numbers below torch's parallel grain: such calls run on one
    # thread and never wait for a busy second core.
    fewest_calls = math.sqrt(steps / 2)
    single_thread = steps * width / _GRAIN
    shortest = max(4, math.ceil(max(fewest_calls, single_thread)))
    # Among slightly longer chunks, prefer one leaving a short remainder (scanned step by step), and
    # an odd one: a power-of-two stride between chunks maps every row of a step to the same cache sets.
    return min(
        range(shortest, shortest + shortest // 2 + 1),
        key=lambda c: 2 * c + steps % c + steps // c + (0 if c % 2 else shortest),
    )


def _negligible(dtype: torch.dtype) -> float:
    """Magnitude below which a chunk's gate product is flushed to zero (far above subnormals)."""
    return torch.finfo(dtype).tiny * 2.0**20


def _step_loop(
    a: torch.Tensor | None,
    b: torch.Tensor,
    h: torch.Tensor | None,
    out: torch.Tensor,
    reverse: bool,
    dim: int = 1,
) -> None:
    """``out_t = a_t * h + b_t`` along ``dim``, one step at a time, from the entering state ``h``."""
    bs, hs = b.unbind(dim), out.unbind(dim)
    as_ = a.unbind(dim) if a is not None else None
    order = range(len(bs) - 1, -1, -1) if reverse else range(len(bs))
    for t in order:
        if h is None:
            hs[t].copy_(bs[t])
        elif as_ is None:
            torch.add(bs[t], h, out=hs[t])
        else:
            torch.addcmul(bs[t], as_[t], h, out=hs[t])
        h = hs[t]


def _scan_into(
    a: torch.Tensor | None, b: torch.Tensor, h0: torch.Tensor | None, out: torch.Tensor, reverse: bool = False
) -> None:
    """Write the scan of ``(a, b)`` from ``h0`` into ``out`` (no autograd). ``a = None`` means ``a = 1``.

    Forward: ``out_t = a_t out_{t-1} + b_t`` with ``out_{-1} = h0``; reverse:
    ``out_t = a_t out_{t+1} + b_t`` with ``out_T = h0``. ``h0 = None`` is a zero state.
    """
    if scan_backend(b) == "triton":
        _gpu().scan_into(a, b, h0, out, reverse)
        return
    steps = b.shape[1]
    chunk = _chunk_length(steps, b.shape[0] * b.shape[2])
    if chunk == 1:
        _step_loop(a, b, h0, out, reverse)
        return
    count = steps // chunk
    rest = steps - count * chunk
    # Chunks tile [0, count*chunk) going forward, [rest, steps) going backward; the remaining
    # `rest` steps are scanned last, from the exit state of the chunks.
    main = slice(rest, steps) if reverse else slice(0, count * chunk)
    tail = slice(0, rest) if reverse else slice(count * chunk, steps)
    b4 = b[:, main].unflatten(1, (count, chunk))
    a4 = a[:, main].unflatten(1, (count, chunk)) if a is not None else None
    out4 = out[:, main].unflatten(1, (count, chunk))
    first = chunk - 1 if reverse else 0
    # Pass 1: each chunk's zero-start exit state and its product of a.
    bs = b4.unbind(2)
    exit_local = bs[first].clone()
    order = range(chunk - 2, -1, -1) if reverse else range(1, chunk)
    if a4 is None:
        gain = None
        for k in order:
            exit_local.add_(bs[k])
    else:
        as_ = a4.unbind(2)
        gain = as_[first].clone()
        tiny = _negligible(gain.dtype)
        for i, k in enumerate(order):
            torch.addcmul(bs[k], as_[k], exit_local, out=exit_local)
            gain.mul_(as_[k])
            if i % _FLUSH_EVERY == _FLUSH_EVERY - 1:
                # A long product of |a| < 1 heads for the subnormal range, where CPU arithmetic is
                # ~100x slower; values this small cannot matter next to the carried state.
                gain.masked_fill_(gain.abs() < tiny, 0)
    # Chunk carries: exit_c = gain_c * exit_{c-1} + exit_local_c, a linear scan over chunks.
    exits = torch.empty_like(exit_local)
    _scan_into(gain, exit_local, h0, exits, reverse)
    entering = torch.empty_like(exits)
    if reverse:
        entering[:, :-1] = exits[:, 1:]
        entering[:, -1] = 0 if h0 is None else h0
    else:
        entering[:, 1:] = exits[:, :-1]
        entering[:, 0] = 0 if h0 is None else h0
    # Pass 2: re-run every chunk from its exact entering state, writing the output.
    _step_loop(a4, b4, entering, out4, reverse, dim=2)
    if rest:
        exit_state = exits[:, 0] if reverse else exits[:, -1]
        _step_loop(a[:, tail] if a is not None else None, b[:, tail], exit_state, out[:, tail], reverse)


def _reverse_gradient(a: torch.Tensor | None, grad: torch.Tensor) -> torch.Tensor:
    """``G_t = grad_t + conj(a_{t+1}) G_{t+1}``: the total gradient reaching every ``h_t``."""
    total = torch.empty_like(grad)
    total[:, -1] = grad[:, -1]
    if grad.shape[1] > 1:
        shifted = None if a is None else a[:, 1:]
        if shifted is not None and shifted.is_complex():
            shifted = shifted.conj()
        _scan_into(shifted, grad[:, :-1], total[:, -1], total[:, :-1], reverse=True)
    return total


def _gate_gradient(total: torch.Tensor, h: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
    """``dL/da_t = G_t * conj(h_{t-1})`` with ``h_{-1} = h0`` (zero when omitted)."""
    h_prev = h.conj() if h.is_complex() else h
    grad_a = torch.empty_like(total)
    steps, width = total.shape[1], total.shape[0] * total.shape[2]
    # Narrow scans multiply in pieces below torch's parallel grain: a tensor this small gains little
    # from a second thread and, on a loaded machine, waits for it.
    piece = steps if width >= WIDE_STEP else max(1, _GRAIN // width)
    for start in range(1, steps, piece):
        stop = min(steps, start + piece)
        torch.mul(total[:, start:stop], h_prev[:, start - 1 : stop - 1], out=grad_a[:, start:stop])
    if h0 is None:
        grad_a[:, 0] = 0
    else:
        torch.mul(total[:, 0], h0.conj() if h0.is_complex() else h0, out=grad_a[:, 0])
    return grad_a


def _initial_gradient(a0: torch.Tensor | None, total0: torch.Tensor) -> torch.Tensor:
    if a0 is None:
        return total0.clone()
    return total0 * (a0.conj() if a0.is_complex() else a0)


class _LinearScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
        h = torch.empty(b.shape, dtype=b.dtype, device=b.device)
        _scan_into(a, b, h0, h)
        ctx.save_for_backward(a, h, h0)
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        a, h, h0 = ctx.saved_tensors
        if scan_backend(grad) == "triton":
            total, grad_a = _gpu().scan_backward(a, grad.to(h.dtype), h, h0, ctx.needs_input_grad[0])
        else:
            total = _reverse_gradient(a, grad)
            grad_a = _gate_gradient(total, h, h0) if ctx.needs_input_grad[0] else None
        grad_h0 = _initial_gradient(a[:, 0], total[:, 0]) if ctx.needs_input_grad[2] else None
        return grad_a, total, grad_h0


def _promote(*tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    present = [t for t in tensors if t is not None]
    dtype = present[0].dtype
    for t in present[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return [None if t is None else t.to(dtype) for t in tensors]


def linear_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``h`` of shape ``(batch, time, d)`` with ``h_t = a_t * h_{t-1} + b_t``.

    Parameters
    ----------
    a, b:
        Tensors of shape ``(batch, time, d)``, real or complex; ``a`` may be an expanded view
        (e.g. a per-channel constant broadcast over batch and time).
    h0:
        Initial state ``(batch, d)``; zeros when omitted.

    Raises
    ------
    ValueError
        If the shapes are not ``(batch, time, d)`` / ``(batch, d)`` or the time axis is empty.
    """
    _check(a, b, h0)
    a, b, h0 = _promote(a, b, h0)
    return _LinearScan.apply(a, b, h0)


class _CumulativeScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, b: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
        h = torch.empty(b.shape, dtype=b.dtype, device=b.device)
        _scan_into(None, b, h0, h)
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        total = _reverse_gradient(None, grad)
        return total, (total[:, 0].clone() if ctx.needs_input_grad[1] else None)


def cumulative_scan(b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """``h_t = h_{t-1} + b_t`` (``linear_scan`` with ``a = 1``): ``h0 + cumsum(b)`` over time.

    The CMRU with eps = 1. Exact for integer-valued ``b`` (up to the float's integer range).
    """
    _check(None, b, h0)
    b, h0 = _promote(b, h0)
    return _CumulativeScan.apply(b, h0)


class _LastUpdateScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z: torch.Tensor, v: torch.Tensor, h0: torch.Tensor | None, gather: bool) -> torch.Tensor:
        if gather:
            steps = v.shape[1]
            index = torch.arange(steps, device=v.device).view(1, steps, 1)
            last = torch.where(z != 0, index, -1).cummax(dim=1).values
            h = v.gather(1, last.clamp(min=0))
            if h0 is None:
                h.masked_fill_(last < 0, 0)
            else:
                h = torch.where(last < 0, h0.unsqueeze(1), h)
        else:
            h = torch.empty_like(v)
            _scan_into(1 - z, z * v, h0, h)
        ctx.save_for_backward(z, v, h, h0)
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        z, v, h, h0 = ctx.saved_tensors
        a = 1 - z
        if scan_backend(grad) == "triton":
            total, gate = _gpu().scan_backward(a, grad.to(h.dtype), h, h0, ctx.needs_input_grad[0])
        else:
            total = _reverse_gradient(a, grad)
            gate = _gate_gradient(total, h, h0) if ctx.needs_input_grad[0] else None
        grad_z = grad_v = grad_h0 = None
        if ctx.needs_input_grad[0]:
            # h_t = (1 - z_t) h_{t-1} + z_t v_t: dh_t/dz_t = v_t - h_{t-1}
            grad_z = (total * v).sub_(gate)
        if ctx.needs_input_grad[1]:
            grad_v = total * z
        if ctx.needs_input_grad[2]:
            grad_h0 = _initial_gradient(a[:, 0], total[:, 0])
        return grad_z, grad_v, grad_h0, None


def last_update_scan(
    z: torch.Tensor,
    v: torch.Tensor,
    h0: torch.Tensor | None = None,
    *,
    method: Literal["scan", "gather"] = "scan",
) -> torch.Tensor:
    """``h_t = v_t if z_t == 1 else h_{t-1}`` for a binary ``z``: the last written value wins.

    Equal to ``linear_scan(1 - z, z * v, h0)`` and differentiable as that expression in ``z``, ``v``
    and ``h0`` (so surrogate gradients of ``z`` flow as in the sequential reference). The BMRU
    (CMRU with eps = 0). ``method="gather"`` evaluates the closed form -- the index of the last
    update at or before every step (``cummax``), then a ``gather`` -- and ``"scan"`` (default, about
    3x faster on CPU) the scan of ``(1 - z, z * v)``; both are exact.
    """
    _check(z, v, h0)
    if method not in ("scan", "gather"):
        raise ValueError(f"method must be 'scan' or 'gather', got {method!r}")
    z, v, h0 = _promote(z, v, h0)
    return _LastUpdateScan.apply(z, v, h0, method == "gather")


class _XorScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s: torch.Tensor, d0: torch.Tensor | None) -> torch.Tensor:
        count = torch.empty_like(s)
        if scan_backend(s) == "triton":
            _gpu().scan_into(None, s, d0, count, parity=True)
        else:
            _scan_into(None, s, d0, count)
        d = count.remainder_(2)
        ctx.save_for_backward(s, d, d0)
        return d

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        s, d, d0 = ctx.saved_tensors
        # Flip signs: P_t = prod_{r <= t} (1 - 2 s_r) = (1 - 2 d_t)(1 - 2 d0). The product of the
        # a's strictly after t up to u is P_u P_t, so G_t = P_t * sum_{u >= t} P_u grad_u; the
        # common factor (1 - 2 d0) squares to 1 and is dropped.
        sign = torch.mul(d, -2).add_(1)
        total = torch.mul(sign, grad)
        _scan_into(None, total, None, total, reverse=True)  # in place: reverse cumulative sum
        total.mul_(sign)
        grad_s = grad_d0 = None
        if ctx.needs_input_grad[0]:
            # h_t = (1 - 2 s_t) h_{t-1} + s_t: dh_t/ds_t = 1 - 2 h_{t-1}, the previous step's sign.
            grad_s = torch.empty_like(total)
            torch.mul(total[:, 1:], sign[:, :-1], out=grad_s[:, 1:])
            grad_s[:, 0] = total[:, 0] if d0 is None else total[:, 0] * (1 - 2 * d0)
        if ctx.needs_input_grad[1]:
            grad_d0 = total[:, 0] * (1 - 2 * s[:, 0])
        return grad_s, grad_d0


def xor_scan(s: torch.Tensor, d0: torch.Tensor | None = None) -> torch.Tensor:
    """Flip state ``d_t = d_{t-1} XOR s_t`` for binary ``s`` and binary ``d0`` (zeros when omitted).

    Equal to ``linear_scan(1 - 2 s, s, d0)`` -- the differentiable XOR
    ``d_t = d_{t-1} (1 - s_t) + (1 - d_{t-1}) s_t`` -- and differentiable as that expression, but
    computed in closed form as ``(d0 + cumsum(s)) mod 2``, so the state is exactly binary at any
    length; the backward pass is a signed reverse cumulative sum.
    """
    _check(s, s, d0)
    s, d0 = _promote(s, d0)
    return _XorScan.apply(s, d0)


def sequential_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """Step-by-step reference of :func:`linear_scan` (slow; for tests)."""
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1)
