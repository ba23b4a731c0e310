"""The configuration stream: parameter writes fanned out to the loadable memories.

Every loadable memory (weights, biases, per-neuron parameters, DCLS taps) has one write port with
one enable per element; a configuration beat ``(target, addr, elem, value)`` writes one element of
one word, as a neuromorphic chip loads its synapses over SPI. The stream is always ready (a write
takes one cycle wherever it lands), so inside the accelerator it is an ``always_ready``
:class:`~amaranth.lib.stream.Signature` that ``wiring.connect`` fans out to every engine.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import stream

from codesign.hw.plan import AcceleratorPlan, MemoryPlan
from codesign.hw.signature import ConfigLayout

__all__ = ["ConfigSignature", "drive_config_write"]


def ConfigSignature(plan: AcceleratorPlan) -> stream.Signature:  # noqa: N802 - a signature factory
    """The configuration stream as the engines receive it (no backpressure)."""
    return stream.Signature(ConfigLayout(plan), always_ready=True)


def drive_config_write(m: Module, port, cfg, mem: MemoryPlan) -> None:
    """Connect a memory's write port (granularity 1 element) to the configuration stream ``cfg``."""
    hit = cfg.valid & (cfg.payload.target == mem.config_id)
    m.d.comb += [
        port.addr.eq(cfg.payload.addr),
        port.en.eq(hit << cfg.payload.elem),
    ]
    for i in range(mem.elements):
        m.d.comb += port.data[i].eq(cfg.payload.value)
