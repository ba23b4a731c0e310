"""The configuration port: parameter writes fanned out to the loadable memories.

Every loadable memory (weights, biases, per-neuron parameters, DCLS taps) has one write port with
one enable per element; a configuration beat ``(target, addr, elem, value)`` writes one element of
one word, as a neuromorphic chip loads its synapses over SPI. The port is always ready.
"""

from __future__ import annotations

from amaranth.hdl import Module, signed, unsigned
from amaranth.lib import data

from codesign.hw.plan import AcceleratorPlan, MemoryPlan

__all__ = ["ConfigWriteLayout", "drive_config_write"]


class ConfigWriteLayout(data.StructLayout):
    """A configuration beat as it reaches the engines (``valid`` for one cycle)."""

    def __init__(self, plan: AcceleratorPlan) -> None:
        super().__init__(
            {
                "valid": unsigned(1),
                "target": unsigned(plan.config_target_bits),
                "addr": unsigned(plan.config_addr_bits),
                "elem": unsigned(plan.config_elem_bits),
                "value": signed(32),
            }
        )


def drive_config_write(m: Module, port, cfg, mem: MemoryPlan) -> None:
    """Connect a memory's write port (granularity 1 element) to the configuration beats."""
    hit = cfg.valid & (cfg.target == mem.config_id)
    m.d.comb += [
        port.addr.eq(cfg.addr),
        port.en.eq(hit << cfg.elem),
    ]
    for i in range(mem.elements):
        m.d.comb += port.data[i].eq(cfg.value)
