"""Task names a recipe may use, and their constructors."""

from __future__ import annotations

from typing import Any

from codesign.data.copy_first import CopyFirstDiscrete

TASKS: dict[str, type] = {"copy_first": CopyFirstDiscrete}


def make_task(name: str, options: dict[str, Any]):
    return TASKS[name](**options)
