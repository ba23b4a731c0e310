"""Tasks and datasets. Everything is generated or shipped in a package: nothing downloads."""

from codesign.data.copy_first import CopyFirstDiscrete
from codesign.data.registry import TASKS, make_task

__all__ = ["TASKS", "CopyFirstDiscrete", "make_task"]
