"""8N1 UART receiver and transmitter with byte streams (amaranth.lib.stream).

Both count ``divisor`` clock cycles per bit (``divisor = round(clock_hz / baud)``, at least 4).
The receiver has no flow control: a received byte waits in its output register until taken, and
a byte completed while the previous one is still waiting replaces it (``overrun`` pulses).
"""

from __future__ import annotations

__all__ = ["UartRx", "UartTx", "baud_divisor"]

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


def baud_divisor(clock_hz: float, baud: int) -> int:
    """Clock cycles per bit; raises ``ValueError`` when the clock is too slow or the rate is off by > 2 %."""
    if baud <= 0 or clock_hz <= 0:
        raise ValueError(f"clock {clock_hz} Hz and baud {baud} must be positive")
    divisor = round(clock_hz / baud)
    if divisor < 4:
        raise ValueError(f"a {clock_hz / 1e6:g} MHz clock is too slow for {baud} baud (needs 4 cycles a bit)")
    error = abs(clock_hz / divisor - baud) / baud
    if error > 0.02:
        raise ValueError(f"{baud} baud from {clock_hz / 1e6:g} MHz is off by {error:.1%} (more than 2 %)")
    return divisor


class UartRx(wiring.Component):
    """UART receiver.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit.

    Interface attributes
    --------------------
    rx : Signal, in
        The serial line (idle high), already synchronised to the clock.
    bytes : stream.Signature(8), out
        Received bytes.
    overrun : Signal, out
        Pulses when a byte is lost because the previous one was not taken yet.
    """

    def __init__(self, divisor: int) -> None:
        if divisor < 4:
            raise ValueError(f"divisor {divisor} must be at least 4")
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "bytes": Out(stream.Signature(8)), "overrun": Out(1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor + self.divisor // 2 + 1))
        bits = Signal(range(10))
        shift = Signal(8)
        busy = Signal()

        with m.If(self.bytes.ready):
            m.d.sync += self.bytes.valid.eq(0)

        with m.If(~busy):
            with m.If(~self.rx):  # start bit: sample bit 0 one and a half bit times later
                m.d.sync += [busy.eq(1), timer.eq(self.divisor + self.divisor // 2 - 1), bits.eq(0)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(bits == 8):  # middle of the stop bit
            m.d.sync += busy.eq(0)
            with m.If(self.rx):  # a framing error (stop bit low) drops the byte
                m.d.sync += [self.bytes.payload.eq(shift), self.bytes.valid.eq(1)]
                m.d.comb += self.overrun.eq(self.bytes.valid & ~self.bytes.ready)
        with m.Else():
            m.d.sync += [shift.eq(Cat(shift[1:], self.rx)), bits.eq(bits + 1), timer.eq(self.divisor - 1)]
        return m


class UartTx(wiring.Component):
    """UART transmitter.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit.

    Interface attributes
    --------------------
    bytes : stream.Signature(8), in
        Bytes to send.
    tx : Signal, out
        The serial line (idle high).
    """

    def __init__(self, divisor: int) -> None:
        if divisor < 4:
            raise ValueError(f"divisor {divisor} must be at least 4")
        self.divisor = divisor
        super().__init__({"bytes": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        shift = Signal(10, init=0x3FF)  # stop bit, 8 data bits LSB first, start bit
        left = Signal(range(11))

        m.d.comb += [self.bytes.ready.eq(left == 0), self.tx.eq(shift[0])]
        with m.If(left == 0):
            with m.If(self.bytes.valid):
                m.d.sync += [
                    shift.eq(Cat(0, self.bytes.payload, 1)),
                    left.eq(10),
                    timer.eq(self.divisor - 1),
                ]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shift.eq(Cat(shift[1:], 1)), left.eq(left - 1), timer.eq(self.divisor - 1)]
        return m
