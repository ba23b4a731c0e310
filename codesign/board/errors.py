"""The three ways a board link fails, each one clear :class:`~codesign.errors.CodesignError`."""

from __future__ import annotations

__all__ = ["BoardError", "BoardGarbageError", "BoardIdentityError", "BoardSilentError"]

from codesign.errors import CodesignError


class BoardError(CodesignError):
    """Something went wrong on the serial link to a board."""


class BoardSilentError(BoardError):
    """Nothing (or half a message) came back within the timeout: no board, no bitstream, wrong baud."""


class BoardIdentityError(BoardError):
    """The bitstream answers with the identity word of another build."""


class BoardGarbageError(BoardError):
    """Bytes that are not a message of this build's protocol (wrong baud, another design, noise)."""
