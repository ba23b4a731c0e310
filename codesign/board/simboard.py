"""A simulated board on a pseudo-terminal: ``fpga_top`` (UART, bridge, the accelerator itself) in
Amaranth's Python simulator, its serial lines bridged to a pty that the host driver opens like a
device.

The simulator runs in a thread. A testbench reads bytes from the pty's controlling side and
shifts them onto ``uart_rx`` (8N1, ``divisor`` cycles a bit); a process samples ``uart_tx`` in the
middle of each bit and writes the bytes it frames back. When the line has nothing to carry for a
while the thread sleeps a millisecond between byte times, so an idle board costs little.

Speed: a few thousand cycles a second, so with ``divisor = 4`` a byte takes 40 cycles and the link
carries some hundred bytes a second: enough for short sequences in the tests, not for a data set.
"""

from __future__ import annotations

__all__ = ["SimulatedBoard"]

import json
import os
import threading
import time
import tty
from pathlib import Path

from amaranth import Signal
from amaranth.sim import Simulator

from codesign.board.protocol import plan_options
from codesign.fpga.ports import build_identity, port_map
from codesign.fpga.wrapper import POR_CYCLES, FpgaTop

_PERIOD_S = 1e-6
_POR_S = (POR_CYCLES + 2) * _PERIOD_S


def _accelerator(build: Path, info: dict):
    from codesign.bundle import load_bundle
    from codesign.hw.accelerator import Accelerator

    options = {k: v for k, v in plan_options(info).items() if k not in ("frozen", "spram")}
    return Accelerator(
        load_bundle(build), lanes=int(info.get("lanes", 1)), weights=info["weights"], **options
    )


class SimulatedBoard:
    """``fpga_top`` of ``build`` in simulation behind a pty (``with SimulatedBoard(b) as sim: sim.port``).

    Parameters
    ----------
    build : path
        A build directory (``codesign rtl``): ``build.json`` and the bundle it was made from.
    divisor : int
        Cycles per UART bit.
    timeout : int
        The bridge's message timeout in cycles.
    identity : int, optional
        The identity word the design answers with (default: the build's own).
    counters : bool
        The wrapper serialises the counters (``codesign synth --counters``).
    """

    def __init__(
        self,
        build: str | Path,
        *,
        divisor: int = 4,
        timeout: int = 1500,
        identity: int | None = None,
        counters: bool = True,
    ) -> None:
        build = Path(build)
        info = json.loads((build / "build.json").read_text())
        self.ports = port_map(info, counters=counters)
        self.identity = build_identity(info, counters=counters) if identity is None else identity
        self.divisor = divisor
        self.top = FpgaTop(
            self.ports,
            divisor,
            identity=self.identity,
            timeout=timeout,
            accelerator=_accelerator(build, info),
        )
        self.cycles = 0
        self._quit = Signal(name="quit")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def __enter__(self) -> SimulatedBoard:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> str:
        """Start the simulation thread; returns the pty path for the host (also ``self.port``)."""
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.port = os.ttyname(self._slave)
        sim = Simulator(self.top)
        sim.add_clock(_PERIOD_S)
        sim.add_testbench(self._host_to_board)
        sim.add_testbench(self._board_to_host)
        self._thread = threading.Thread(target=self._run, args=(sim,), daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def _run(self, sim) -> None:
        try:
            sim.run()
        except BaseException as err:  # reported by the test through self.error
            self.error = err

    async def _host_to_board(self, ctx) -> None:
        rx, div = self.top.uart_rx, self.divisor
        ctx.set(rx, 1)
        await ctx.delay(_POR_S)  # tick() raises DomainReset while the power-on reset holds
        idle = 0
        while not self._stop.is_set():
            try:
                data = os.read(self._master, 64)
            except (BlockingIOError, OSError):
                data = b""
            if not data:
                idle += 1
                if idle > 64:
                    time.sleep(0.001)
                await ctx.tick().repeat(10 * div)
                self.cycles += 10 * div
                continue
            idle = 0
            for byte in data:
                for bit in [0, *((byte >> k) & 1 for k in range(8)), 1]:
                    ctx.set(rx, bit)
                    await ctx.tick().repeat(div)
                self.cycles += 10 * div
        ctx.set(self._quit, 1)  # the receiver returns too, so the simulation ends with no coroutine left
        await ctx.tick().repeat(2)

    async def _board_to_host(self, ctx) -> None:
        tx, div = self.top.uart_tx, self.divisor
        await ctx.delay(_POR_S)
        while True:
            await ctx.tick().until(~tx | self._quit)  # the start bit
            if ctx.get(self._quit):
                return
            await ctx.tick().repeat(div // 2)
            byte = 0
            for k in range(8):
                await ctx.tick().repeat(div)
                byte |= ctx.get(tx) << k
            await ctx.tick().repeat(div)  # the stop bit
            try:
                os.write(self._master, bytes([byte]))
            except OSError:
                return
