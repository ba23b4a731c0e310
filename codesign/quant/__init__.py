"""Quantization: power-of-two fixed point, bundle export and the deployed (quantized) torch model."""

from codesign.quant.export import export_run
from codesign.quant.stack import DeployedStack, deployed_from_bundle, quantize_stack

__all__ = ["DeployedStack", "deployed_from_bundle", "export_run", "quantize_stack"]
