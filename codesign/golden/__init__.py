"""Pure-numpy integer reference of exactly what the hardware computes (reads only the bundle)."""

from codesign.golden.model import GoldenResult, LayerTrace, quantize_inputs, run_golden, run_golden_ragged

__all__ = ["GoldenResult", "LayerTrace", "quantize_inputs", "run_golden", "run_golden_ragged"]
