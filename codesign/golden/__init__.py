"""Pure-numpy integer reference of exactly what the hardware computes (reads only the bundle)."""

from codesign.golden.model import GoldenResult, quantize_inputs, run_golden

__all__ = ["GoldenResult", "quantize_inputs", "run_golden"]
