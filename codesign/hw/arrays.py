"""Memories whose words are arrays of signed elements (lane-packed weights, states, ...).

Stored as plain unsigned words (initial values packed here with integer arithmetic, which is far
faster to elaborate than one ``data.Const`` per element for large weight memories) and seen
through :class:`~amaranth.lib.data.ArrayLayout` views, so engines index ``port.data[element]``.
Write ports have one enable per element (element granularity), as the configuration port needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory

from codesign.hw.plan import MemoryPlan

__all__ = ["ArrayMemory", "pack_words"]


def pack_words(words: list[list[int]], elem_bits: int) -> list[int]:
    """``[[e0, e1, ...], ...]`` (signed elements) -> unsigned words, element 0 in the low bits."""
    mask = (1 << elem_bits) - 1
    out = []
    for word in words:
        value = 0
        for i, element in enumerate(word):
            value |= (int(element) & mask) << (i * elem_bits)
        out.append(value)
    return out


@dataclass
class _Port:
    """A memory port with its data seen as an array of signed elements."""

    raw: object
    data: data.View
    shared_addr: Signal | None = None  # a single-port memory's port: its own address and enable,
    shared_en: Signal | None = None  # which :meth:`ArrayMemory.shared_ports` routes to the memory

    @property
    def addr(self):
        return self.raw.addr if self.shared_addr is None else self.shared_addr

    @property
    def en(self):
        return self.raw.en if self.shared_en is None else self.shared_en


class ArrayMemory:
    """A :class:`~amaranth.lib.memory.Memory` of ``depth`` words of ``elements`` signed elements."""

    def __init__(self, m: Module, name: str, plan: MemoryPlan, init: list[list[int]] | None = None) -> None:
        self.plan = plan
        self.layout = data.ArrayLayout(signed(plan.elem_bits), plan.elements)
        width = plan.elem_bits * plan.elements
        self.memory = Memory(
            shape=unsigned(width),
            depth=plan.depth,
            init=pack_words(init, plan.elem_bits) if init else [],
            attrs=plan.attrs,
        )
        m.submodules[name] = self.memory

    def read_port(self, **kwargs) -> _Port:
        port = self.memory.read_port(**kwargs)
        return _Port(port, data.View(self.layout, port.data))

    def registered_address_port(self, m: Module) -> _Port:
        """A read port that behaves as a synchronous one (the data of the address presented with
        ``en``, from the next cycle on, held while ``en`` is low) but registers the address and
        reads the words combinationally: for a ROM in LUTs, a few address flip-flops instead of
        one per data bit (the UP5K's bias ROMs: 3 instead of 64). Drive ``addr``/``en`` as of a
        synchronous port."""
        port = self.memory.read_port(domain="comb")
        name = self.plan.name
        addr = Signal.like(port.addr, name=f"{name}_raddr")
        en = Signal(name=f"{name}_ren")
        held = Signal.like(port.addr, name=f"{name}_raddr_r")
        with m.If(en):
            m.d.sync += held.eq(addr)
        m.d.comb += port.addr.eq(held)
        return _Port(port, data.View(self.layout, port.data), shared_addr=addr, shared_en=en)

    def write_port(self, *, granular: bool = False) -> _Port:
        port = self.memory.write_port(granularity=self.plan.elem_bits if granular else None)
        return _Port(port, data.View(self.layout, port.data))

    def shared_ports(self, m: Module) -> tuple[_Port, _Port]:
        """A read port and an element-granular write port on one address, as a single-port RAM
        (the UP5K's SPRAM, which yosys infers only from ports sharing their address) has them:
        a write takes the address and the read is off for its cycle. Drive ``addr``/``en`` of
        each as of separate ports."""
        rd, wr = self.memory.read_port(), self.memory.write_port(granularity=self.plan.elem_bits)
        name = self.plan.name
        raddr, waddr = Signal.like(rd.addr, name=f"{name}_raddr"), Signal.like(wr.addr, name=f"{name}_waddr")
        ren = Signal(name=f"{name}_ren")
        addr = Signal.like(rd.addr, name=f"{name}_addr")
        writing = wr.en.any()
        m.d.comb += [
            addr.eq(Mux(writing, waddr, raddr)),
            rd.addr.eq(addr),
            wr.addr.eq(addr),
            rd.en.eq(ren & ~writing),
        ]
        read = _Port(rd, data.View(self.layout, rd.data), shared_addr=raddr, shared_en=ren)
        write = _Port(wr, data.View(self.layout, wr.data), shared_addr=waddr)
        return read, write
