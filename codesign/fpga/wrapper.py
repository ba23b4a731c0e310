"""The FPGA top level: any accelerator behind a UART (``fpga_top``: ``clk``, ``uart_rx``, ``uart_tx``).

::

    uart_rx ─▶ FFSynchronizer ─▶ UartRx ─▶ FIFO (512 bytes) ─▶ AcceleratorBridge ─▶ accelerator (Instance)
    uart_tx ◀──────────────────  UartTx ◀───────────────────────┘                 ◀─┘

The accelerator is instantiated by name (the module ``build.json`` names as ``top``, in
``BUILD/accelerator.v``), its ports taken from ``BUILD/build.json`` (:mod:`codesign.fpga.ports`),
so the wrapper follows the design without knowing it. A power-on reset holds the accelerator and
the bridge in reset for the first 16 cycles after configuration, counted from the PLL's lock where
there is a PLL (the accelerator's ``rst`` is synchronous, active high).
The UART has no flow control, so received bytes wait in a 512-byte FIFO until the bridge takes
them: a host may send up to 511 bytes ahead of what the design has consumed.
Inputs that are not part of a stream are tied to zero; outputs that are not part of one are
left unconnected and synthesis removes the logic only they need (the ``counters`` output goes to
the bridge's snapshot command). The bridge answers the identify command with the build's
identity word (:func:`codesign.fpga.ports.build_identity`).

For simulation (:mod:`codesign.board.simboard`) the wrapper takes the Amaranth accelerator itself
instead of the ``Instance``, a small divisor and a short message timeout.
"""

from __future__ import annotations

__all__ = ["FpgaTop", "TOP_NAME", "top_verilog"]

from amaranth import ClockDomain, ClockSignal, Const, Elaboratable, Instance, Module, ResetSignal, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In

from codesign.fpga.bridge import AcceleratorBridge
from codesign.fpga.ports import PortMap
from codesign.fpga.uart import UartRx, UartTx
from codesign.hw.slice import StreamSlice

TOP_NAME = "fpga_top"
POR_CYCLES = 16
#: Bytes the host may send ahead of what the design has taken (a larger lead overruns the UART).
RX_FIFO_DEPTH = 512
#: Cycles without a byte after which the bridge drops a half-received message: 2^20 (about 35 ms at 30 MHz).
MESSAGE_TIMEOUT = (1 << 20) - 1


class FpgaTop(Elaboratable):
    """``fpga_top``: the accelerator named by ``ports.top`` behind an 8N1 UART.

    Parameters
    ----------
    ports : PortMap
        The accelerator's ports.
    divisor : int
        Clock cycles per UART bit (:func:`codesign.fpga.uart.baud_divisor`).
    identity : int
        The 32-bit word the identify command answers.
    timeout : int
        Cycles without a byte after which the bridge drops a half-received message.
    accelerator : wiring.Component, optional
        The accelerator as an Amaranth component whose flattened ports carry the ``build.json``
        names (simulation); by default an ``Instance`` of ``ports.top``.
    pll : codesign.fpga.pll.Pll, optional
        A PLL from the board oscillator (``clk``) to the design clock; the power-on reset then
        also waits for its lock.

    Attributes
    ----------
    clk : Signal, in
        The board clock: the clock of the ``sync`` domain itself (no copy, so simulators see one
        clock edge, not two a delta apart).
    uart_rx, uart_tx : Signal
        The serial lines (idle high).
    """

    def __init__(
        self,
        ports: PortMap,
        divisor: int,
        *,
        identity: int = 0,
        timeout: int = MESSAGE_TIMEOUT,
        accelerator: wiring.Component | None = None,
        pll=None,
    ) -> None:
        self.ports = ports
        self.divisor = divisor
        self.identity = identity
        self.timeout = timeout
        self.accelerator = accelerator
        self.pll = pll
        self.cd_sync = ClockDomain("sync", local=True)
        self.clk = self.cd_sync.clk if pll is None else Signal(name="clk")
        self.uart_rx = Signal(init=1, name="uart_rx")
        self.uart_tx = Signal(init=1, name="uart_tx")

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.cd_sync
        # Power-on reset: a counter that no reset touches holds the domain in reset for POR_CYCLES.
        por = Signal(range(POR_CYCLES), name="por_count", reset_less=True)
        locked = Signal(init=1, name="pll_locked")
        if self.pll is not None:
            from codesign.fpga.pll import pll_instance

            lock = Signal(name="pll_lock")
            m.submodules.pll = pll_instance(self.pll, self.clk, self.cd_sync.clk, lock)
            m.d.comb += locked.eq(lock)
        m.d.comb += self.cd_sync.rst.eq(por != POR_CYCLES - 1)
        with m.If(~locked):
            m.d.sync += por.eq(0)
        with m.Elif(por != POR_CYCLES - 1):
            m.d.sync += por.eq(por + 1)

        m.submodules.uart_rx = rx = UartRx(self.divisor)
        m.submodules.uart_tx = tx = UartTx(self.divisor)
        m.submodules.bridge = bridge = AcceleratorBridge(
            self.ports, timeout=self.timeout, identity=self.identity
        )
        m.submodules.rx_sync = FFSynchronizer(self.uart_rx, rx.rx, init=1)
        # The UART has no flow control: bytes the bridge cannot take yet (the design is busy, or
        # its results are still being sent) wait here. One iCE40 EBR / ECP5 DP16KD.
        m.submodules.rx_fifo = fifo = SyncFIFOBuffered(width=8, depth=RX_FIFO_DEPTH)
        wiring.connect(m, rx.bytes, fifo.w_stream)
        # a register slice: the FIFO's block RAM output went through the bridge's channel decode
        # in one cycle (the longest path of the ECP5 design at P = 2)
        m.submodules.rx_slice = rx_slice = StreamSlice(8)
        wiring.connect(m, fifo.r_stream, rx_slice.i)
        wiring.connect(m, rx_slice.o, bridge.rx)
        wiring.connect(m, bridge.tx, tx.bytes)
        m.d.comb += self.uart_tx.eq(tx.tx)

        if self.accelerator is not None:
            self._connect_component(m, bridge)
            return m
        connections: dict[str, object] = {
            f"i_{self.ports.clock}": ClockSignal(),
            f"i_{self.ports.reset}": ResetSignal(),
        }
        for name, sig in bridge.design.items():
            direction = self.ports.ports[name].direction
            connections[f"{'i' if direction == 'in' else 'o'}_{name}"] = sig
        for port in self.ports.other_inputs:
            connections[f"i_{port.name}"] = Const(0, port.width)
        m.submodules.accelerator = Instance(self.ports.top, **connections)
        return m

    def _connect_component(self, m: Module, bridge: AcceleratorBridge) -> None:
        """The bridge's signals to the flattened ports of an Amaranth accelerator (same names)."""
        m.submodules.accelerator = acc = self.accelerator
        flat = {
            "__".join(map(str, path)): (member, value) for path, member, value in acc.signature.flatten(acc)
        }
        for name, sig in bridge.design.items():
            member, value = flat[name]
            value = value.as_value() if hasattr(value, "as_value") else value
            if member.flow == In:
                m.d.comb += value.eq(sig)
            else:
                m.d.comb += sig.eq(value)
        for port in self.ports.other_inputs:
            member, value = flat[port.name]
            m.d.comb += (value.as_value() if hasattr(value, "as_value") else value).eq(0)


def top_verilog(ports: PortMap, divisor: int, *, identity: int = 0, pll=None) -> str:
    """Verilog of ``fpga_top`` (the accelerator module itself comes from ``BUILD/accelerator.v``)."""
    top = FpgaTop(ports, divisor, identity=identity, pll=pll)
    return verilog.convert(top, name=TOP_NAME, ports=[top.clk, top.uart_rx, top.uart_tx], emit_src=False)
