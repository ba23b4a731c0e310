"""Payload fields of the accelerator's ports, from the offsets ``build.json`` lists.

Packs the words a host (or a testbench driver) sends and unpacks what comes back; a sampled
simulator value with X or Z bits unpacks field by field (a field holding any reads as ``None``).
The host driver (:mod:`codesign.board.protocol`) and the cocotb testbench (``verification/``)
share it.
"""

from __future__ import annotations

__all__ = ["Fields", "resolve"]


def resolve(value) -> int | None:
    """A sampled value as an int, or None when it holds X or Z bits."""
    try:
        return int(value)
    except ValueError:
        return None


class Fields:
    """Pack and unpack a struct payload from ``build.json`` field offsets (``{name: offset, width, signed}``)."""

    def __init__(self, spec: dict[str, dict[str, int]]) -> None:
        self.spec = spec
        self._items = [
            (n, f["offset"], (1 << f["width"]) - 1, f["width"], f["signed"]) for n, f in spec.items()
        ]

    def unpack(self, value: int) -> dict[str, int]:
        out = {}
        for name, off, mask, width, signed in self._items:
            v = (value >> off) & mask
            if signed and v >> (width - 1):
                v -= 1 << width
            out[name] = v
        return out

    def unpack_value(self, value) -> dict[str, int | None]:
        """Unpack a sampled value; a field holding X or Z bits reads as None."""
        word = resolve(value)
        if word is not None:
            return self.unpack(word)
        bits = str(value)[::-1]  # bits[i] is bit i
        out: dict[str, int | None] = {}
        for name, off, _, width, signed in self._items:
            chunk = bits[off : off + width][::-1]
            if set(chunk) <= {"0", "1"}:
                v = int(chunk, 2)
                out[name] = v - (1 << width) if signed and v >> (width - 1) else v
            else:
                out[name] = None
        return out

    def pack(self, values: dict[str, int]) -> int:
        word = 0
        for name, off, mask, _, _ in self._items:
            word |= (int(values.get(name, 0)) & mask) << off
        return word

    def array(self, values: dict[str, int], name: str, count: int) -> list[int]:
        return [values[f"{name}[{i}]"] for i in range(count)]
