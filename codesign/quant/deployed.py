"""The quantized torch model in eval mode.

A :class:`DeployedNet` is the trained :class:`~codesign.nn.net.HardwareNet` architecture in
float64 whose parameters are exactly the bundle's integers times powers of two, fed with
quantized inputs and run step by step with the state saturation of the hardware. Because every
value is an integer times a power of two and stays below 2**53, float64 evaluates it exactly: its
logits equal the golden model's times one power of two, to the bit.
"""

from __future__ import annotations

import torch
from torch import nn

from codesign.bundle import Bundle
from codesign.intmath import signed_range
from codesign.nn.net import HardwareNet


class DeployedNet(nn.Module):
    def __init__(
        self,
        net: HardwareNet,
        input_bits: int,
        input_frac: int,
        state_bits: int,
        state_frac: int,
        logit_frac: int,
    ) -> None:
        super().__init__()
        self.net = net.double().eval()
        self.input_bits, self.input_frac = input_bits, input_frac
        lo, hi = signed_range(state_bits)
        self.state_limits = (lo * 2.0**-state_frac, hi * 2.0**-state_frac)
        self.logit_frac = logit_frac

    def quantize_input(self, x: torch.Tensor) -> torch.Tensor:
        lo, hi = signed_range(self.input_bits)
        q = torch.floor(x.double() * 2.0**self.input_frac + 0.5).clamp(lo, hi)
        return q * 2.0**-self.input_frac

    @torch.no_grad()
    def trace(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """States ``(N, T, d)`` and logits ``(N, C)`` in float64 (model units)."""
        h = self.net.rnn.forward_sequential(self.quantize_input(x), state_limits=self.state_limits)
        return h, self.net.readout(h[:, -1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.trace(x)[1]

    @torch.no_grad()
    def integer_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Logits as the hardware's integers (exact: a multiplication by a power of two)."""
        logits = self.forward(x) * 2.0**self.logit_frac
        if not torch.equal(logits, logits.round()):
            raise AssertionError("deployed logits are not integers: a scale is not a power of two")
        return logits.to(torch.int64)

    @classmethod
    def from_bundle(cls, bundle: Bundle) -> DeployedNet:
        """Build the float64 model from the bundle's integers (per-neuron gate scale 1)."""
        net_spec, fmt, w = bundle.net, bundle.manifest.formats, bundle.weights
        net = HardwareNet(
            net_spec.input_size,
            net_spec.hidden_size,
            net_spec.num_classes,
            cell=net_spec.cell,
            eps=float(net_spec.eps),
        ).double()
        sx, sh = 2.0**-fmt.input.frac, 2.0**-fmt.state_frac

        def t(name: str) -> torch.Tensor:
            return torch.from_numpy(w[name]).double()

        with torch.no_grad():
            net.rnn.candidate.weight.copy_(t("w_cand"))
            net.rnn.candidate.bias.copy_(t("b_cand") * sx)
            net.rnn.threshold.weight.copy_(t("w_thr"))
            net.rnn.threshold.bias.copy_(t("b_thr") * sx)
            net.rnn.alpha.copy_(t("alpha") * sh)
            net.readout.weight.copy_(t("w_out"))
            net.readout.bias.copy_(t("b_out") * sh)
        return cls(
            net, fmt.input.bits, fmt.input.frac, fmt.state.bits, fmt.state_frac, logit_frac=fmt.state_frac
        )
