"""Payload fields of the accelerator's ports: :mod:`codesign.board.fields`, shared with the host driver."""

from __future__ import annotations

__all__ = ["Fields", "resolve"]

from codesign.board.fields import Fields, resolve
