"""First-order linear scans ``h_t = a_t * h_{t-1} + b_t`` over the time axis.

``linear_scan`` works for signed states and any real ``a`` (including 0 and -1, which the BMRU and
the eps = -1 reflection need): it is a Hillis-Steele doubling scan built from elementwise torch
ops, so autograd gives exact gradients and there is no log-space trick that assumes positivity.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def linear_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``h`` of shape ``(batch, time, d)`` with ``h_t = a_t * h_{t-1} + b_t``.

    Parameters
    ----------
    a, b:
        Tensors of shape ``(batch, time, d)``.
    h0:
        Initial state ``(batch, d)``; zeros when omitted.
    """
    if a.shape != b.shape or a.dim() != 3:
        raise ValueError(f"a and b must both be (batch, time, d); got {tuple(a.shape)} and {tuple(b.shape)}")
    if h0 is not None:
        # Fold h0 into the first step: h_1 = a_1 h0 + b_1.
        b = torch.cat([b[:, :1] + a[:, :1] * h0.unsqueeze(1), b[:, 1:]], dim=1)
    steps = a.shape[1]
    offset = 1
    while offset < steps:
        # Compose each element with the one `offset` steps earlier; the first `offset` are final.
        a_prev = F.pad(a[:, :-offset], (0, 0, offset, 0), value=1.0)
        b_prev = F.pad(b[:, :-offset], (0, 0, offset, 0), value=0.0)
        b = a * b_prev + b
        a = a * a_prev
        offset *= 2
    return b


def sequential_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """Step-by-step reference of :func:`linear_scan` (slow; for tests)."""
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1)
