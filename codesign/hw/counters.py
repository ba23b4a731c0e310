"""Free-running observability counters, declared by the plan and kept by each component.

The plan (:func:`codesign.hw.plan.plan_accelerator`) names every counter and the component that
keeps it (``plan.counter_owners``). A component creates its bank from the plan in ``__init__`` (so
the top level can wire the signals to the ``counters`` port before the component is elaborated)
and increments them in ``elaborate``; incrementing a counter the plan did not give it is an error,
so a counter cannot appear in one place and be missing from the port.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amaranth.hdl import Module, Signal

if TYPE_CHECKING:
    from codesign.hw.plan import AcceleratorPlan

__all__ = ["CounterBank", "count_memory"]


class CounterBank:
    """The counters of one component (``plan.counter_bits`` wide; they wrap)."""

    def __init__(self, plan: AcceleratorPlan, owner: str) -> None:
        self.owner = owner
        self.declared = frozenset(n for n, o in plan.counter_owners.items() if o == owner)
        self.signals: dict[str, Signal] = {
            name: Signal(plan.counter_bits, name=name) for name in plan.counters_of(owner)
        }

    def count(self, m: Module, name: str, amount) -> None:
        """Add ``amount`` (a 1-bit condition or a small unsigned value) every cycle.

        A counter the plan declares for this component but the build leaves out (``--counters``)
        costs nothing; one it does not declare is an error."""
        if name not in self.declared:
            raise KeyError(
                f"counter {name!r} is not declared for {self.owner!r} by the plan "
                f"(codesign/hw/plan.py, _plan_counters); it declares {sorted(self.declared)}"
            )
        if name in self.signals:
            sig = self.signals[name]
            m.d.sync += sig.eq(sig + amount)


def count_memory(m: Module, bank: CounterBank, name: str, read_ports=(), write_ports=()) -> None:
    """Count the reads (read enables) and writes (cycles with any write enable) of one memory."""
    if read_ports:
        bank.count(m, f"{name}_reads", sum(p.en for p in read_ports))
    if write_ports:
        bank.count(m, f"{name}_writes", sum(p.en.any() for p in write_ports))
