"""Where training and scoring run: ``--device auto|cpu|cuda|cuda:N`` and the recipe key ``train.device``.

Only the float model's training and evaluation move to a device. Export, the quantized torch
model, the golden integer model and everything after them run on the CPU, where they agree to the
bit. ``auto`` picks the GPU only when torch sees one, so on a CPU-only machine every default
trains on the CPU.

Commands that train indirectly (``repro``, ``sweep``, ``quantize``) set the device once with
:func:`use_device`; :func:`codesign.train.train` reads it through :func:`device_override`, so it
need not be threaded through every function in between. Dask workers run in other processes and
get the device as an argument of their stage instead (:mod:`codesign.explore.trial`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

import torch

from codesign.errors import CodesignError

__all__ = [
    "CUDA_INSTALL",
    "DEVICES",
    "DEVICE_HELP",
    "device_override",
    "parse_device",
    "resolve_device",
    "use_device",
]

DEVICES = "auto, cpu, cuda or cuda:N"
"""The spellings a device option takes, as error messages list them."""

CUDA_INSTALL = (
    "install a CUDA build of torch from https://download.pytorch.org/whl/cu128 and the package's gpu "
    "extra (docs/gpu.md), or use --device cpu"
)
"""What to do when ``cuda`` is asked for where torch sees no GPU."""

DEVICE_HELP = (
    "where training and evaluation run: auto (a GPU when torch sees one, else the CPU), cpu, cuda or "
    "cuda:N; default: the recipe's train.device (auto); export and the golden model stay on the CPU"
)
"""The help text of every command's ``--device`` option."""

_PATTERN = re.compile(r"auto|cpu|cuda(?::[0-9]+)?")
_override: ContextVar[str | None] = ContextVar("codesign_device", default=None)


def parse_device(spec: str | None, option: str = "--device") -> str:
    """The normalized spelling of ``spec`` (``None``: ``auto``), or one error naming ``option``.

    Checks the spelling only: a ``cuda`` spec passes here even without a GPU, so a driver can
    hand it to remote workers that have one.
    """
    text = "auto" if spec is None else str(spec).strip().lower()
    if not _PATTERN.fullmatch(text):
        raise CodesignError(f"{option} {spec!r} is not a device; use {DEVICES}")
    return text


def resolve_device(spec: str | None, option: str = "--device") -> torch.device:
    """The torch device ``spec`` names: ``auto`` (or ``None``) is ``cuda`` when torch sees a GPU,
    else ``cpu``. ``cuda`` without a usable GPU is one error that says how to get one."""
    text = parse_device(spec, option)
    if text == "cpu":
        return torch.device("cpu")
    available = torch.cuda.is_available()
    if text == "auto":
        return torch.device("cuda" if available else "cpu")
    if not available:
        build = "a CPU build" if torch.version.cuda is None else f"a CUDA {torch.version.cuda} build"
        raise CodesignError(
            f"{option} {spec!r}: torch {torch.__version__} ({build}) sees no GPU; {CUDA_INSTALL}"
        )
    index = int(text.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise CodesignError(
            f"{option} {spec!r}: torch sees {torch.cuda.device_count()} GPU(s), numbered from 0; "
            f"use {DEVICES} with N below that"
        )
    return torch.device(text)


def device_override() -> str | None:
    """The device a surrounding :func:`use_device` set, or ``None`` (then the recipe decides)."""
    return _override.get()


@contextlib.contextmanager
def use_device(spec: str | None, option: str = "--device") -> Iterator[None]:
    """Within the block, every training and evaluation runs on ``spec`` (``None``: no override).

    The spelling is checked on entry, so a bad value fails before any work starts.
    """
    token = _override.set(None if spec is None else parse_device(spec, option))
    try:
        yield
    finally:
        _override.reset(token)
