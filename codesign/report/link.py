"""The serial link's share of the latency at the board (``codesign board``, docs/board.md).

Every step crosses the UART as messages of the byte protocol (:mod:`codesign.fpga.ports`): one
``inputs`` message per non-zero input (an empty step still sends its step marker), and the
readout's result messages (``[channel][payload]``, one per group of logits) per step for a
per-step readout, per sequence otherwise. A byte is 10 bits on the line (8N1). The UART is full
duplex, so a step costs the longer of its two directions; the design keeps up when the link and
the accelerator each take less than the step period, and the slower one sets the margin.
"""

from __future__ import annotations

__all__ = ["FASTER_BAUDS", "link_latency"]

from collections.abc import Sequence

import numpy as np

#: Rates offered when 115,200 baud is the bottleneck: an FT2232H carries them, and a 12 MHz
#: clock makes 1 Mbaud (divisor 12) and 3 Mbaud (divisor 4) exactly.
FASTER_BAUDS = (1_000_000, 3_000_000)


def _payload_bytes(info: dict, name: str) -> int:
    return (int(info["ports"][f"{name}__payload"]["width"]) + 7) // 8


def link_latency(
    info: dict,
    sequences: Sequence[np.ndarray],
    *,
    baud: int,
    cycles_per_step: float,
    clock_mhz: float,
    step_rate: float,
) -> dict:
    """Bytes per step each way, the link's time per step and the margin counting the link."""
    steps = sum(len(s) for s in sequences)
    items = sum(int(max(1, np.count_nonzero(x))) for s in sequences for x in np.asarray(s))
    lanes = sum(1 for k in info["results_payload"] if k.startswith("logits["))
    groups = -(-int(info["readout"]["classes"]) // max(1, lanes))
    per_step = bool(info["readout"].get("per_step", False))
    results = groups * (steps if per_step else len(sequences))
    in_bytes = items * (1 + _payload_bytes(info, "inputs")) / steps
    out_bytes = results * (1 + _payload_bytes(info, "results")) / steps
    worst = max(in_bytes, out_bytes)
    link_us = worst * 10 / baud * 1e6
    compute_us = cycles_per_step / clock_mhz
    period_us = 1e6 / step_rate
    step_us = max(link_us, compute_us)
    return {
        "baud": baud,
        "bytes_per_step_in": in_bytes,
        "bytes_per_step_out": out_bytes,
        "link_us_per_step": link_us,
        "compute_us_per_step": compute_us,
        "bottleneck": "link" if link_us > compute_us else "accelerator",
        "realtime_margin": period_us / step_us,
        "min_baud_for_rate": worst * 10 * step_rate,
        "margin_at_faster_bauds": {
            str(b): period_us / max(worst * 10 / b * 1e6, compute_us) for b in FASTER_BAUDS
        },
    }
