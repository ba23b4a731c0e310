"""What makes a run repeat: seeds, thread count, deterministic kernels, and a record of them.

A run repeats bit for bit for the same recipe, seed, thread count, torch version and CPU kernel
level (``torch.backends.cpu.get_cpu_capability()``: AVX512, AVX2, or the plain ``DEFAULT``
kernels). The last two are properties of the machine, not of the recipe: vectorised kernels sum
in a different order, so the weights differ in their last bits between kernel levels, and a
spiking cell (HSRU) can turn such a difference into a different spike and a different run. A
run therefore records where it was trained (:data:`ENVIRONMENT`), and resuming or evaluating
it with another thread count warns.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from codesign import __version__
from codesign.atomic import write_text

ENVIRONMENT = "environment.json"
"""In the run directory: the thread count, seed and software/hardware a run was trained with."""

COMPARED = ("threads", "torch", "cpu_capability")
"""Keys whose change can change the trained weights (a resume with another one warns)."""


class RepeatabilityWarning(UserWarning):
    """A run is resumed or evaluated where it may not repeat (another thread count, torch or CPU)."""


def thread_count(requested: int | None) -> int:
    """The recipe's ``train.threads``, else 2 (1 on a one-core machine): small models gain nothing from more.

    Taken from the machine, not from ``torch.get_num_threads()``: that is whatever an earlier run
    in the same process set, and a run must not depend on what ran before it.
    """
    return requested or min(2, os.cpu_count() or 1)


def seed_everything(seed: int, threads: int) -> None:
    """Seed torch, numpy and ``random`` and fix the thread count."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """Deterministic kernels while training, the process's own setting restored after.

    ``warn_only``: a kernel without a deterministic version warns instead of failing, so every
    recipe still trains (the CPU kernels the trainer uses are deterministic).
    """
    before, warn_only = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def environment(seed: int, threads: int) -> dict:
    """What a run's weights depend on besides the recipe."""
    return {
        "seed": seed,
        "threads": threads,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "codesign": __version__,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
    }


def read_environment(run_dir: Path) -> dict | None:
    """The recorded environment of a run, or None (a run from before it was recorded, or unreadable)."""
    path = Path(run_dir) / ENVIRONMENT
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def differences(recorded: dict, current: dict, keys: tuple[str, ...] = COMPARED) -> list[str]:
    """``key: recorded -> current`` for each of ``keys`` that differs."""
    return [
        f"{key}: {recorded.get(key)!r} -> {current.get(key)!r}"
        for key in keys
        if key in recorded and recorded.get(key) != current.get(key)
    ]


def record(run_dir: Path, env: dict, resuming: bool) -> None:
    """Write ``environment.json`` for a new run; on resume, warn where the environment changed.

    A resumed run keeps its first record (its first iterations were trained there) and adds the
    environments it was resumed in under ``resumed``.
    """
    recorded = read_environment(run_dir) if resuming else None
    if recorded is not None:
        changed = differences(recorded, env)
        if changed:
            warnings.warn(
                f"{run_dir}: resumed with {', '.join(changed)}; the run will not repeat a straight run "
                "bit for bit (set train.threads in the recipe to pin the thread count)",
                RepeatabilityWarning,
                stacklevel=3,
            )
        env = recorded | {"resumed": [*recorded.get("resumed", []), env]}
    write_text(Path(run_dir) / ENVIRONMENT, json.dumps(env, indent=2) + "\n")


def warn_if_threads_differ(run_dir: Path, what: str = "evaluated") -> None:
    """Warn when this process computes with another thread count than the run was trained with."""
    recorded = read_environment(run_dir)
    if recorded is None or "threads" not in recorded:
        return
    now = torch.get_num_threads()
    if recorded["threads"] != now:
        warnings.warn(
            f"{run_dir}: {what} with {now} threads, trained with {recorded['threads']}: float results "
            "can differ in their last bits",
            RepeatabilityWarning,
            stacklevel=3,
        )


@contextlib.contextmanager
def run_threads(run_dir: Path) -> Iterator[int]:
    """Compute with the thread count the run was trained with (the current one when unrecorded)."""
    before = torch.get_num_threads()
    recorded = read_environment(run_dir) or {}
    threads = int(recorded.get("threads") or before)
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
