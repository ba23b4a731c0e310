"""Sequences through a board, checked against the golden integer model: the figures of ``codesign board``."""

from __future__ import annotations

__all__ = ["load_inputs", "run_on_board"]

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from codesign.board.driver import Board
from codesign.errors import CodesignError


def _load_npy(path: Path, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CodesignError(f"{what} file not found", path=path) from None
    except (OSError, ValueError) as err:
        raise CodesignError(f"not a readable .npy array without objects ({err})", path=path) from None


def load_inputs(
    bundle, inputs: Path, labels: Path | None, test_set: int | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Integer sequences ``(N, T, M)`` (float inputs are quantized like the golden model's) and labels."""
    from codesign.golden.model import check_integer_inputs, quantize_inputs

    x = _load_npy(inputs, "--inputs")
    if x.ndim == 2:
        x = x[None]
    try:
        xq = check_integer_inputs(bundle, x) if x.dtype.kind in "iu" else quantize_inputs(bundle, x)
    except CodesignError as err:
        raise CodesignError(str(err), path=inputs) from None
    y = None
    if labels is not None:
        y = _load_npy(labels, "--labels").astype(np.int64, copy=False)
        if y.shape[:1] != xq.shape[:1]:
            raise CodesignError(
                f"{y.shape[0] if y.ndim else 0} labels for {xq.shape[0]} sequences", path=labels
            )
    if test_set is not None:
        if test_set < 1:
            raise CodesignError(f"--test-set {test_set}: must be >= 1")
        xq = xq[:test_set]
        y = None if y is None else y[:test_set]
    return xq, y


def run_on_board(
    board: Board,
    bundle,
    xq: np.ndarray,
    labels: np.ndarray | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Run ``xq`` on ``board`` and the golden model; the figures as a JSON-able dict."""
    from codesign.golden.model import run_golden

    golden = run_golden(bundle, xq)
    before = board.counters()
    sent, received = board.bytes_sent, board.bytes_received
    t0 = time.monotonic()
    results = board.run(list(xq), progress=progress)
    seconds = time.monotonic() - t0
    after = board.counters()
    logits = np.stack([r.logits for r in results])
    classes = np.stack([r.classes for r in results])
    mismatch = [
        i
        for i in range(len(results))
        if not (np.array_equal(logits[i], golden.logits[i]) and np.array_equal(classes[i], golden.classes[i]))
    ]
    out = {
        "sequences": len(results),
        "steps": int(xq.shape[1]),
        "golden_mismatches": len(mismatch),
        "first_mismatch": mismatch[0] if mismatch else None,
        "bit_exact": not mismatch,
        "seconds": round(seconds, 3),
        "sequences_per_second": round(len(results) / seconds, 3) if seconds > 0 else None,
        "bytes_sent": board.bytes_sent - sent,
        "bytes_received": board.bytes_received - received,
        "classes": classes.tolist(),
        "counters": {k: (v - before.get(k, 0)) for k, v in after.items()},
    }
    if labels is not None:
        target = labels if classes.ndim == labels.ndim else labels[..., None]
        out["accuracy"] = float(np.mean(classes == target))
        out["golden_accuracy"] = float(np.mean(golden.classes == target))
    return out
