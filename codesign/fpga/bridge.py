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
* **commands**: two byte values are never input channels. ``0xFF`` (:data:`IDENTIFY`) asks for
  the design's identity: the bridge answers ``[0xFF][4 bytes]``, the 32-bit ``identity`` baked in
  (:func:`codesign.fpga.ports.build_identity`), so a host can tell which build the bitstream
  holds. ``0xFE`` (:data:`SNAPSHOT`) latches the design's ``counters`` output (when it has one)
  and answers ``[0xFE][counter bytes]``. A command is only seen between messages, like a channel
  byte; the answers queue behind nothing (one pending answer of each kind).

The design's stream signals are plain Signals in :attr:`AcceleratorBridge.design`, keyed by
their ``build.json`` port names, for the wrapper to connect to an ``Instance`` (or a test to
connect to a stand-in).
"""

from __future__ import annotations

__all__ = ["IDENTIFY", "SNAPSHOT", "AcceleratorBridge"]

from amaranth import Array, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.fpga.ports import IDENTIFY, SNAPSHOT, PortMap


class AcceleratorBridge(wiring.Component):
    """Serialises a design's streams over a pair of byte streams.

    Parameters
    ----------
    ports : PortMap
        The wrapped design's ports (:func:`codesign.fpga.ports.port_map`).
    timeout : int
        Cycles without a byte after which a half-received message is dropped (0: never).
    identity : int
        The 32-bit word answered to :data:`IDENTIFY`.

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

    def __init__(self, ports: PortMap, *, timeout: int = 0, identity: int = 0) -> None:
        if timeout < 0:
            raise ValueError(f"timeout {timeout} must be >= 0")
        if not 0 <= identity < 1 << 32:
            raise ValueError(f"identity {identity} is not a 32-bit word")
        self.ports = ports
        self.timeout = timeout
        self.identity = identity
        super().__init__({"rx": In(stream.Signature(8)), "tx": Out(stream.Signature(8))})
        self.design: dict[str, Signal] = {}
        for s in ports.inputs + ports.outputs:
            if s.width:
                self.design[s.payload] = Signal(s.width, name=s.payload)
            self.design[s.valid] = Signal(name=s.valid)
            self.design[s.ready] = Signal(name=s.ready)
        snapshot = ports.snapshot_port
        if snapshot is not None:
            self.design[snapshot.name] = Signal(snapshot.width, name=snapshot.name)
        self._in_message = Signal(name="in_message")  # a channel byte was taken, its message is not done
        self._identify = Signal(name="identify_pending")
        self._snapshot = Signal(name="snapshot_pending")

    def elaborate(self, platform):
        m = Module()
        self._commands(m)
        self._host_to_design(m)
        self._design_to_host(m)
        return m

    def _commands(self, m: Module) -> None:
        """IDENTIFY / SNAPSHOT bytes between messages set a pending answer."""
        between = self.rx.valid & self.rx.ready & ~self._in_message
        with m.If(between & (self.rx.payload == IDENTIFY)):
            m.d.sync += self._identify.eq(1)
        with m.If(between & (self.rx.payload == SNAPSHOT)):
            m.d.sync += self._snapshot.eq(1)

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
                m.d.comb += [self.rx.ready.eq(1), self._in_message.eq(1)]
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
                m.d.comb += self._in_message.eq(1)
                for s in inputs:
                    with m.If(channel == s.channel):
                        m.d.comb += self.design[s.valid].eq(1)
                        with m.If(self.design[s.ready]):
                            m.next = "CHANNEL"

    def _sources(self, m: Module) -> list[tuple[int, object, int, object, object]]:
        """``(channel byte, payload, bytes, valid, ready)`` of everything the bridge sends, in priority order."""
        sources = [
            (
                s.channel,
                self.design[s.payload] if s.width else Const(0, 1),
                s.payload_bytes,
                self.design[s.valid],
                self.design[s.ready],
            )
            for s in self.ports.outputs
        ]
        ack_id, ack_snap = Signal(name="identify_ack"), Signal(name="snapshot_ack")
        with m.If(ack_id):
            m.d.sync += self._identify.eq(0)
        sources.append((IDENTIFY, Const(self.identity, 32), 4, self._identify, ack_id))
        snapshot = self.ports.snapshot_port
        if snapshot is not None:
            latched = Signal(snapshot.width, name="snapshot_word")
            with m.If(~self._snapshot):  # stays put while it is being sent
                m.d.sync += latched.eq(self.design[snapshot.name])
            with m.If(ack_snap):
                m.d.sync += self._snapshot.eq(0)
            sources.append((SNAPSHOT, latched, (snapshot.width + 7) // 8, self._snapshot, ack_snap))
        return sources

    def _design_to_host(self, m: Module) -> None:
        sources = self._sources(m)
        max_bytes = max(n for _, _, n, _, _ in sources)
        source = Signal(range(len(sources)), name="out_source")
        index = Signal(range(max_bytes + 1), name="out_index")
        lengths = Array(Const(n, range(max_bytes + 1)) for _, _, n, _, _ in sources)
        codes = Array(Const(code, 8) for code, _, _, _, _ in sources)

        # The byte `index` of the payload of `source`: one mux per byte position over sources.
        byte = Signal(8, name="out_byte")
        for k, (_, payload, n, _, _) in enumerate(sources):
            with m.If(source == k):
                for i in range(n):
                    with m.If(index == i):
                        m.d.comb += byte.eq(payload[8 * i : 8 * i + 8])

        with m.FSM(name="design_to_host"):
            with m.State("IDLE"):
                # First source first: the last matching If wins, so walk from the last one down.
                for k in reversed(range(len(sources))):
                    with m.If(sources[k][3]):
                        m.d.sync += [source.eq(k), index.eq(0)]
                        m.next = "CHANNEL"
            with m.State("CHANNEL"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(codes[source])]
                with m.If(self.tx.ready):
                    with m.If(lengths[source] == 0):
                        m.next = "ACCEPT"
                    with m.Else():
                        m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(byte)]
                with m.If(self.tx.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index + 1 == lengths[source]):
                        m.next = "ACCEPT"
            with m.State("ACCEPT"):
                for k, (_, _, _, _, ready) in enumerate(sources):
                    m.d.comb += ready.eq(source == k)
                m.next = "IDLE"
