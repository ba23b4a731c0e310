"""Memories whose words are arrays of signed elements (lane-packed weights, states, ...).

Stored as plain unsigned words (initial values packed here with integer arithmetic, which is far
faster to elaborate than one ``data.Const`` per element for large weight memories) and seen
through :class:`~amaranth.lib.data.ArrayLayout` views, so engines index ``port.data[element]``.
Write ports have one enable per element (element granularity), as the configuration port needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory

from codesign.hw.plan import MemoryPlan

__all__ = ["ArrayMemory", "MergedMemory", "pack_words"]


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


class _PartWrite:
    """The write port of one logical memory inside a :class:`MergedMemory`: its own address,
    enable (one bit, or one per element when ``granular``) and data, which the merged memory
    routes onto its one physical write port."""

    def __init__(self, plan: MemoryPlan, granular: bool) -> None:
        self.plan, self.granular = plan, granular
        self.addr = Signal(range(max(2, plan.depth)), name=f"{plan.name}_waddr")
        self.en = Signal(plan.elements if granular else 1, name=f"{plan.name}_wen")
        self._raw = Signal(plan.width, name=f"{plan.name}_wdata")
        self.data = data.View(data.ArrayLayout(signed(plan.elem_bits), plan.elements), self._raw)


class MergedMemory:
    """Logical memories side by side in one physical word (``--merge auto``,
    :func:`codesign.hw.plan._merge_memories`): logical memory ``k`` is bits
    ``[offset_k, offset_k + width_k)`` of every word, at the same addresses.

    One read port serves all of them (they are read at one address in one cycle, or one of them at
    a time); each sees its slice of the read data through its own :class:`_Port`, with its own
    ``addr`` and ``en`` (its reads are counted as its own). The one write port has an enable per
    ``granule`` bits (the greatest common divisor of the element widths), so a part writes only
    its slice (a configuration beat one element of it) and a ROM part (a frozen build's
    parameters, as initial values) is never written. Parts writing in one cycle must write one
    address, which the plan guarantees (``plan.MERGED_KEYS``: the state and pooled sums are
    written together in C4; parameters and biases only by configuration beats, loaded while the
    accelerator is idle): the first writing part's address is taken."""

    def __init__(self, m: Module, name: str, parts: tuple[MemoryPlan, ...], images: dict) -> None:
        self.parts = parts
        self.width = sum(part.width for part in parts)
        depth = parts[0].depth
        self.granule = math.gcd(*(part.elem_bits for part in parts))
        words = [0] * depth
        for part in parts:  # initial values: a frozen build's parameters, a baked build's too
            image = images.get(part.name)
            if image:
                for addr, value in enumerate(pack_words(image, part.elem_bits)):
                    words[addr] |= value << part.offset
        self.memory = Memory(
            shape=unsigned(self.width),
            depth=depth,
            init=words if any(words) else [],
            attrs=parts[0].attrs,
        )
        m.submodules[name] = self.memory
        self._m = m
        self._rd = self.memory.read_port()
        self._writes: list[_PartWrite] = []
        self._reads: list[_Port] = []

    def read_port(self, part: MemoryPlan) -> _Port:
        """``part``'s view of the one read port: its own ``addr`` and ``en`` (so its reads are
        counted as its own), its slice of the read data (:meth:`connect` joins them)."""
        layout = data.ArrayLayout(signed(part.elem_bits), part.elements)
        port = _Port(
            self._rd,
            data.View(layout, self._rd.data[part.offset : part.offset + part.width]),
            shared_addr=Signal.like(self._rd.addr, name=f"{part.name}_raddr"),
            shared_en=Signal(name=f"{part.name}_ren"),
        )
        self._reads.append(port)
        return port

    def write_port(self, part: MemoryPlan, *, granular: bool = False) -> _PartWrite:
        """A write port of ``part`` (call :meth:`connect` once all ports are made)."""
        port = _PartWrite(part, granular)
        self._writes.append(port)
        return port

    def connect(self) -> None:
        """Route the parts' reads and writes onto the physical ports (once all are made): a read
        when any part reads, at the address of the first part reading (parts read together read
        one address: the plan merges only such memories); each part's write data to its slice,
        its enables to its slice's granules, the address of the first part writing."""
        m = self._m
        m.d.comb += self._rd.en.eq(Cat(*(port.en for port in self._reads)).any())
        raddr = self._reads[0].addr
        for port in reversed(self._reads[1:]):
            raddr = Mux(port.en, port.addr, raddr)
        m.d.comb += self._rd.addr.eq(raddr)
        if not self._writes:
            return
        g = self.granule
        wr = self.memory.write_port(granularity=g)
        enables = [Const(0, 1)] * (self.width // g)
        for port in self._writes:
            part = port.plan
            m.d.comb += wr.data[part.offset : part.offset + part.width].eq(port._raw)
            per = part.elem_bits // g
            for i in range(part.width // g):
                bit = port.en[i // per] if port.granular else port.en[0]
                enables[part.offset // g + i] = bit
        m.d.comb += wr.en.eq(Cat(*enables))
        addr = 0
        for port in reversed(self._writes):  # the first writing part's address
            addr = Mux(port.en.any(), port.addr, addr)
        m.d.comb += wr.addr.eq(addr)
