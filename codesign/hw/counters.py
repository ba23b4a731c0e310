"""Free-running observability counters, kept by each component and gathered by the top level.

A component creates its counters in ``__init__`` (so the top level can wire them to the
``counters`` port before the component is elaborated) and increments them in ``elaborate``.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal

__all__ = ["CounterBank"]


class CounterBank:
    """Named counters of one component (``counter_bits`` wide; they wrap)."""

    def __init__(self, prefix: str, names: list[str], counter_bits: int = 32) -> None:
        self.counter_bits = counter_bits
        self.signals: dict[str, Signal] = {
            n: Signal(counter_bits, name=f"{prefix}_{n}" if prefix else n) for n in names
        }
        self.prefix = prefix

    def add(self, name: str) -> Signal:
        if name not in self.signals:
            self.signals[name] = Signal(
                self.counter_bits, name=f"{self.prefix}_{name}" if self.prefix else name
            )
        return self.signals[name]

    def count(self, m: Module, name: str, amount) -> None:
        """Add ``amount`` (a 1-bit condition or a small unsigned value) every cycle."""
        sig = self.add(name)
        m.d.sync += sig.eq(sig + amount)

    def full_names(self) -> dict[str, Signal]:
        return {(f"{self.prefix}_{n}" if self.prefix else n): s for n, s in self.signals.items()}


def count_memory(m: Module, bank: CounterBank, name: str, read_ports=(), write_ports=()) -> None:
    """Count the reads (read enables) and writes (cycles with any write enable) of one memory."""
    reads = bank.add(f"{name}_reads")
    writes = bank.add(f"{name}_writes")
    if read_ports:
        m.d.sync += reads.eq(reads + sum(p.en for p in read_ports))
    if write_ports:
        m.d.sync += writes.eq(writes + sum(p.en.any() for p in write_ports))
