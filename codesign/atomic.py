"""Write artifacts atomically: to a temporary sibling, then rename.

A run that is interrupted leaves either the old artifact or the new one, never half a file.
Directories are built in a temporary sibling and renamed into place the same way. Both end with
the permissions a plain ``open`` or ``mkdir`` would give them (``0o666`` / ``0o777`` less the
umask), not the private ``0o600`` / ``0o700`` of :mod:`tempfile`'s files and folders, so results
written for a group stay readable by it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    """The process's umask, read once at import (``os.umask`` can only be read by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def write_bytes(target: str | Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_npy(target: str | Path, array) -> None:
    """``numpy.save`` without pickles, atomically."""
    import numpy as np

    with atomic_path(target) as tmp, tmp.open("wb") as fh:
        np.save(fh, array, allow_pickle=False)


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory; it replaces ``target`` as a whole on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_UMASK)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, old / "x")
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
