"""Artifacts written atomically get the permissions of a plain write, not tempfile's private ones."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codesign.atomic import atomic_dir, write_text


@pytest.fixture
def umask_022():
    """Run with the common umask 022 (files 0644, folders 0755), whatever the caller's."""
    from codesign import atomic

    old = os.umask(0o022)
    saved, atomic._UMASK = atomic._UMASK, 0o022
    yield
    atomic._UMASK = saved
    os.umask(old)


def test_atomic_files_and_folders_are_readable_like_plain_ones(tmp_path: Path, umask_022) -> None:
    """A results JSON written by `codesign analog-eval --json` was 0600 (tempfile.mkstemp's mode)
    and a build folder 0700 (mkdtemp's): unreadable to anyone else sharing the results."""
    target = tmp_path / "results.json"
    write_text(target, "{}\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    write_text(target, "{}\n")  # replacing keeps it so
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    build = tmp_path / "build"
    for _ in range(2):  # created, then replaced
        with atomic_dir(build) as tmp:
            (tmp / "accelerator.v").write_text("module m; endmodule\n")
        assert stat.S_IMODE(build.stat().st_mode) == 0o755
