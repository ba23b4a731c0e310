"""Input sequences for RTL verification: from a file or drawn at random from a seed.

The testbench (``verification/tb_accelerator.py``) and the runner use this one function, so both
agree on which sequences a run simulated.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codesign.bundle import Bundle
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs
from codesign.golden.model import check_integer_inputs

__all__ = ["MAX_RANDOM_STEPS", "load_labels", "load_vectors"]

MAX_RANDOM_STEPS = 40
"""Random sequences have 1 to this many steps."""


def load_vectors(
    bundle: Bundle, *, vectors: int, seed: int, inputs: Path | None = None, max_steps: int = MAX_RANDOM_STEPS
) -> list[np.ndarray]:
    """Integer input sequences ``(T, M)`` for a run.

    Parameters
    ----------
    bundle : Bundle
        The bundle the inputs are for (input width, input quantizer).
    vectors : int
        Number of sequences. With ``inputs`` it caps how many of the file's sequences are used
        (the first ``vectors``; 0 takes them all).
    seed : int
        Seed of the random sequences (ignored with ``inputs``).
    inputs : Path, optional
        ``.npy`` of shape ``(N, T, M)``: an integer dtype holds quantized inputs (checked against
        the input format), a float dtype is quantized with :func:`codesign.golden.quantize_inputs`.
    max_steps : int
        Longest random sequence.

    Raises
    ------
    CodesignError
        If the file cannot be read or its shape, dtype or values do not fit the bundle.
    """
    if not isinstance(vectors, int) or vectors < 0:
        raise CodesignError(f"vectors must be a non-negative integer, not {vectors!r}")
    if inputs is None:
        if vectors == 0:
            raise CodesignError("vectors must be at least 1 when no input file is given")
        return random_vectors(bundle, vectors=vectors, seed=seed, max_steps=max_steps)
    inputs = Path(inputs)
    try:
        x = np.load(inputs, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise CodesignError(f"cannot read inputs as a .npy array ({err})", path=inputs) from None
    if vectors:
        x = x[:vectors]
    try:
        if x.dtype.kind in "iu":
            xq = check_integer_inputs(bundle, x)
        elif x.dtype.kind == "f":
            xq = quantize_inputs(bundle, x)
        else:
            raise CodesignError(f"inputs have dtype {x.dtype}; expected integers (quantized) or floats")
    except CodesignError as err:
        raise CodesignError(str(err), path=inputs) from None
    if xq.shape[0] == 0 or xq.shape[1] == 0:
        raise CodesignError(f"inputs hold no sequence steps (shape {tuple(x.shape)})", path=inputs)
    return [xq[n] for n in range(xq.shape[0])]


def random_vectors(
    bundle: Bundle, *, vectors: int, seed: int, max_steps: int = MAX_RANDOM_STEPS
) -> list[np.ndarray]:
    """``vectors`` random integer sequences of 1..``max_steps`` steps (mostly zeros, some extremes)."""
    from codesign.bundle.random import random_integer_inputs

    return random_integer_inputs(bundle, sequences=vectors, steps=(1, max_steps), seed=seed)


def load_labels(labels: Path, count: int) -> np.ndarray:
    """Integer labels ``(N,)`` for the first ``count`` sequences."""
    labels = Path(labels)
    try:
        y = np.load(labels, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise CodesignError(f"cannot read labels as a .npy array ({err})", path=labels) from None
    if y.ndim not in (1, 2) or y.dtype.kind not in "iu":
        raise CodesignError(
            f"labels must be a 1-D (or per-step 2-D) integer array, got shape {y.shape} dtype {y.dtype}",
            path=labels,
        )
    if y.shape[0] < count:
        raise CodesignError(f"labels hold {y.shape[0]} entries for {count} simulated sequences", path=labels)
    return y[:count].astype(np.int64)
