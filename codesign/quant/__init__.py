"""Quantization: power-of-two fixed point, the deployed (fake-quant) torch model, bundle export."""

from codesign.quant.deployed import DeployedNet
from codesign.quant.export import export_run, quantize_model

__all__ = ["DeployedNet", "export_run", "quantize_model"]
