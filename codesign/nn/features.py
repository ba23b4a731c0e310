"""The random-feature network as a torch module: the deployed integer model, in float64.

The bank (``codesign/bundle/features.py``) is fixed integer arithmetic, so this module holds no
trainable parameters: it is the torch side of the bit-exact chain (torch == golden == RTL), for
users who evaluate in torch. Every value it computes is an integer below 2**53, which float64
holds exactly; ``tests/test_features.py`` checks it against the golden model.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from codesign.bundle.features import KERNEL_TAPS, FeatureSpec, kernel_weights


class FeatureBankModule(torch.nn.Module):
    """``(batch, time, channels)`` integer-valued inputs -> logits ``(batch, classes)``.

    Every sequence of the batch is read over all its ``time`` steps (equal lengths).
    """

    def __init__(self, spec: FeatureSpec, weights: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.spec = spec

        def buf(name: str) -> torch.Tensor:
            return torch.as_tensor(np.asarray(weights[name]), dtype=torch.float64)

        self.register_buffer("mask", buf("features.mask"))  # (P, m)
        self.register_buffer("threshold", buf("features.threshold").reshape(spec.pairs, spec.biases))
        self.register_buffer("alpha", buf("features.alpha").reshape(spec.pairs, spec.biases))
        self.register_buffer("weight", buf("readout.weight"))
        self.register_buffer("bias", buf("readout.bias"))
        # conv1d correlates: tap j of the padded window is the kernel's tap KERNEL_TAPS - 1 - j
        taps = np.stack([kernel_weights(int(k))[::-1] for k in spec.pair_kernel()])
        self.register_buffer("taps", torch.as_tensor(taps.copy(), dtype=torch.float64)[:, None, :])
        self.groups = [(d, np.flatnonzero(spec.pair_dilation() == d)) for d in sorted(set(spec.dilations))]

    def pair_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """``y_p`` ``(batch, pairs, time)``."""
        s = (x.to(torch.float64) @ self.mask.T).transpose(1, 2)  # (N, P, T)
        y = torch.empty_like(s)
        for d, idx in self.groups:
            sel = torch.as_tensor(idx)
            padded = F.pad(s[:, sel], ((KERNEL_TAPS - 1) * d, 0))
            y[:, sel] = F.conv1d(padded, self.taps[sel], dilation=d, groups=len(idx))
        return y

    def counts(self, x: torch.Tensor) -> torch.Tensor:
        """The units' last states ``(batch, size)``."""
        y = self.pair_outputs(x)  # (N, P, T)
        above = (y[:, :, None, :] > self.threshold[None, :, :, None]).sum(dim=-1).to(torch.float64)
        hi = float((1 << (self.spec.state_bits - 1)) - 1)
        return torch.clamp(above * self.alpha[None], max=hi).reshape(x.shape[0], self.spec.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.counts(x) @ self.weight.T + self.bias
