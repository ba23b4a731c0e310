"""RTL verification: cocotb simulations of generated accelerators against the golden model."""

from codesign.verify.runner import SIMULATORS, SimReport, run_sim

__all__ = ["SIMULATORS", "SimReport", "run_sim"]
