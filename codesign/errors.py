"""User-facing errors.

Every problem caused by what a user handed us (a recipe, a bundle, an input file, a missing tool)
is raised as a :class:`CodesignError` carrying one line that names the file, the key or value and
what is allowed. The CLI prints that line and exits with code 2; nothing else is printed.
"""

from __future__ import annotations

from pathlib import Path


class CodesignError(Exception):
    """An error the user can fix; its message is a single complete line."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        super().__init__(f"{self.path}: {message}" if self.path is not None else message)
