"""The FPGA top level: any accelerator behind a UART (``fpga_top``: ``clk``, ``uart_rx``, ``uart_tx``).

::

    uart_rx ─▶ FFSynchronizer ─▶ UartRx ─▶ AcceleratorBridge ─▶ accelerator (Instance)
    uart_tx ◀──────────────────  UartTx ◀─┘                 ◀─┘

The accelerator is instantiated by name (module ``accelerator`` of ``BUILD/accelerator.v``), its
ports taken from ``BUILD/build.json`` (:mod:`codesign.fpga.ports`), so the wrapper follows the
design without knowing it. A power-on reset holds the accelerator and the bridge in reset for
the first 16 cycles after configuration (the accelerator's ``rst`` is synchronous, active high).
Inputs that are not part of a stream are tied to zero; outputs that are not part of one are
left unconnected and synthesis removes the logic only they need.
"""

from __future__ import annotations

__all__ = ["FpgaTop", "TOP_NAME", "top_verilog"]

from amaranth import ClockDomain, ClockSignal, Const, Instance, Module, ResetSignal, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from codesign.fpga.bridge import AcceleratorBridge
from codesign.fpga.ports import PortMap
from codesign.fpga.uart import UartRx, UartTx

TOP_NAME = "fpga_top"
POR_CYCLES = 16
#: Cycles without a byte after which the bridge drops a half-received message: 2^20 (about 35 ms at 30 MHz).
MESSAGE_TIMEOUT = (1 << 20) - 1


class FpgaTop(wiring.Component):
    """``fpga_top``: the accelerator named by ``ports.top`` behind an 8N1 UART.

    Parameters
    ----------
    ports : PortMap
        The accelerator's ports.
    divisor : int
        Clock cycles per UART bit (:func:`codesign.fpga.uart.baud_divisor`).

    Interface attributes
    --------------------
    clk : Signal, in
        The board clock; everything runs in its domain.
    uart_rx, uart_tx : Signal
        The serial lines (idle high).
    """

    def __init__(self, ports: PortMap, divisor: int) -> None:
        self.ports = ports
        self.divisor = divisor
        super().__init__({"clk": In(1), "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        m.domains.por = cd_por = ClockDomain(reset_less=True, local=True)
        m.domains.sync = cd_sync = ClockDomain(local=True)
        por = Signal(range(POR_CYCLES), name="por_count")
        m.d.comb += [cd_por.clk.eq(self.clk), cd_sync.clk.eq(self.clk), cd_sync.rst.eq(por != POR_CYCLES - 1)]
        with m.If(por != POR_CYCLES - 1):
            m.d.por += por.eq(por + 1)

        m.submodules.uart_rx = rx = UartRx(self.divisor)
        m.submodules.uart_tx = tx = UartTx(self.divisor)
        m.submodules.bridge = bridge = AcceleratorBridge(self.ports, timeout=MESSAGE_TIMEOUT)
        m.submodules.rx_sync = FFSynchronizer(self.uart_rx, rx.rx, init=1)
        wiring.connect(m, rx.bytes, bridge.rx)
        wiring.connect(m, bridge.tx, tx.bytes)
        m.d.comb += self.uart_tx.eq(tx.tx)

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


def top_verilog(ports: PortMap, divisor: int) -> str:
    """Verilog of ``fpga_top`` (the accelerator module itself comes from ``BUILD/accelerator.v``)."""
    return verilog.convert(FpgaTop(ports, divisor), name=TOP_NAME, emit_src=False)
