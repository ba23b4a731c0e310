"""Byte-stream bridge between a host and every valid/ready stream of a wrapped design.

The bridge speaks the protocol of :mod:`codesign.fpga.ports` on a pair of byte streams (a UART in
:mod:`codesign.fpga.wrapper`, anything byte-wide in tests):

* **host -> design**: ``[channel][payload bytes]``. The payload bytes are written little-endian
  into one shared buffer as wide as the widest input payload; then the channel's ``valid`` rises
  and stays high (no byte is taken meanwhile) until the design's ``ready`` completes the transfer.
  A byte that is not an input channel number is ignored, and a message the host stops sending
  in the middle is dropped after ``timeout`` cycles without a byte, so a host can always resync.
* **design -> host**: output streams are served lowest channel first. The bridge sends the
  channel byte, then the payload bytes straight from the design's payload port (stream rule:
  a payload stays put while ``valid`` is high and ``ready`` low), and raises ``ready`` for one
  cycle after the last byte is accepted. No output buffer is needed.

The design's stream signals are plain Signals in :attr:`AcceleratorBridge.design`, keyed by
their ``build.json`` port names, for the wrapper to connect to an ``Instance`` (or a test to
connect to a stand-in).
"""

from __future__ import annotations

__all__ = ["AcceleratorBridge"]

from amaranth import Array, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.fpga.ports import PortMap


class AcceleratorBridge(wiring.Component):
    """Serialises a design's streams over a pair of byte streams.

    Parameters
    ----------
    ports : PortMap
        The wrapped design's ports (:func:`codesign.fpga.ports.port_map`).
    timeout : int
        Cycles without a byte after which a half-received message is dropped (0: never).

    Interface attributes
    --------------------
    rx : stream.Signature(8), in
        Bytes from the host.
    tx : stream.Signature(8), out
        Bytes to the host.
    design : dict[str, Signal]
        The wrapped design's stream ports by name (``<stream>__payload/valid/ready``); directions
        as the design sees them.
    """

    def __init__(self, ports: PortMap, *, timeout: int = 0) -> None:
        if timeout < 0:
            raise ValueError(f"timeout {timeout} must be >= 0")
        self.ports = ports
        self.timeout = timeout
        super().__init__({"rx": In(stream.Signature(8)), "tx": Out(stream.Signature(8))})
        self.design: dict[str, Signal] = {}
        for s in ports.inputs + ports.outputs:
            if s.width:
                self.design[s.payload] = Signal(s.width, name=s.payload)
            self.design[s.valid] = Signal(name=s.valid)
            self.design[s.ready] = Signal(name=s.ready)

    def elaborate(self, platform):
        m = Module()
        self._host_to_design(m)
        self._design_to_host(m)
        return m

    def _host_to_design(self, m: Module) -> None:
        inputs = self.ports.inputs
        if not inputs:
            m.d.comb += self.rx.ready.eq(1)  # nothing to feed: swallow every byte
            return
        max_bytes = max(s.payload_bytes for s in inputs)
        buffer = Signal(max(8 * max_bytes, 1), name="in_buffer")
        channel = Signal(range(len(inputs)), name="in_channel")
        index = Signal(range(max_bytes + 1), name="in_index")
        lengths = Array(Const(s.payload_bytes, range(max_bytes + 1)) for s in inputs)
        idle = Signal(range(self.timeout + 1), name="in_idle") if self.timeout else None

        for s in inputs:
            if s.width:
                m.d.comb += self.design[s.payload].eq(buffer[: s.width])

        with m.FSM(name="host_to_design"):
            with m.State("CHANNEL"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid & (self.rx.payload < len(inputs))):
                    m.d.sync += [channel.eq(self.rx.payload), index.eq(0)]
                    if idle is not None:
                        m.d.sync += idle.eq(0)
                    with m.If(lengths[self.rx.payload[: len(channel)]] == 0):
                        m.next = "DELIVER"
                    with m.Else():
                        m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid):
                    for i in range(max_bytes):
                        with m.If(index == i):
                            m.d.sync += buffer[8 * i : 8 * i + 8].eq(self.rx.payload)
                    m.d.sync += index.eq(index + 1)
                    if idle is not None:
                        m.d.sync += idle.eq(0)
                    with m.If(index + 1 == lengths[channel]):
                        m.next = "DELIVER"
                if idle is not None:
                    with m.Elif(idle == self.timeout):
                        m.next = "CHANNEL"
                    with m.Else():
                        m.d.sync += idle.eq(idle + 1)
            with m.State("DELIVER"):
                for s in inputs:
                    with m.If(channel == s.channel):
                        m.d.comb += self.design[s.valid].eq(1)
                        with m.If(self.design[s.ready]):
                            m.next = "CHANNEL"

    def _design_to_host(self, m: Module) -> None:
        outputs = self.ports.outputs
        if not outputs:
            return
        max_bytes = max(s.payload_bytes for s in outputs)
        channel = Signal(range(len(outputs)), name="out_channel")
        index = Signal(range(max_bytes + 1), name="out_index")
        lengths = Array(Const(s.payload_bytes, range(max_bytes + 1)) for s in outputs)

        # The byte `index` of output `channel`'s payload: one mux per byte position over channels.
        byte = Signal(8, name="out_byte")
        for s in outputs:
            with m.If(channel == s.channel):
                for i in range(s.payload_bytes):
                    with m.If(index == i):
                        chunk = self.design[s.payload][8 * i : 8 * i + 8]
                        m.d.comb += byte.eq(chunk)

        with m.FSM(name="design_to_host"):
            with m.State("IDLE"):
                # Lowest channel first: the last matching If wins, so walk from the highest down.
                for s in reversed(outputs):
                    with m.If(self.design[s.valid]):
                        m.d.sync += [channel.eq(s.channel), index.eq(0)]
                        m.next = "CHANNEL"
            with m.State("CHANNEL"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(channel)]
                with m.If(self.tx.ready):
                    with m.If(lengths[channel] == 0):
                        m.next = "ACCEPT"
                    with m.Else():
                        m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(byte)]
                with m.If(self.tx.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index + 1 == lengths[channel]):
                        m.next = "ACCEPT"
            with m.State("ACCEPT"):
                for s in outputs:
                    m.d.comb += self.design[s.ready].eq(channel == s.channel)
                m.next = "IDLE"
