"""Drivers: the one clock loop, valid/ready stream drivers with random gaps, random back-pressure.

Timing discipline: drivers write at the falling clock edge; everything that samples waits for the
falling edge and then ``ReadOnly``, so it sees the values that the next rising edge will act on,
whatever the simulator's scheduling order.
"""

from __future__ import annotations

from collections import deque

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly
from tb_context import Bench
from tb_fields import resolve

__all__ = ["ClockLoop", "Component", "ReadyDriver", "StreamDriver"]


class ClockLoop:
    """The one coroutine that runs every cycle: at the falling edge each registered component
    drives (``drive(in_reset)``), then after ``ReadOnly`` each samples (``sample(in_reset)``).

    One loop for all drivers and monitors keeps the per-cycle cost of the testbench to two
    triggers, whatever the number of streams and trace ports.
    """

    def __init__(self, tb: Bench) -> None:
        self.tb = tb
        self.clk, self.rst = tb.dut.clk, tb.dut.rst
        self.components: list[Component] = []
        self.cycle = 0
        self._task = None

    def start(self) -> None:
        if self._task is None:
            self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        try:
            while True:
                await FallingEdge(self.clk)
                self.cycle += 1
                in_reset = resolve(self.rst.value) != 0
                active = [c for c in self.components if c.active]
                for c in active:
                    c.drive(in_reset)
                await ReadOnly()
                for c in active:
                    c.sample(in_reset)
        except Exception as exc:
            self.tb.errors.append(f"{type(exc).__name__}: {exc}")
            raise


class Component:
    """A driver or monitor of the :class:`ClockLoop`, with ``start()`` / ``stop()``."""

    def __init__(self, tb: Bench) -> None:
        self.tb = tb
        self.active = False
        tb.loop.components.append(self)

    def start(self) -> None:
        self.active = True

    def stop(self) -> None:
        self.active = False

    def drive(self, in_reset: bool) -> None:
        """At the falling edge: write the inputs the next rising edge acts on."""

    def sample(self, in_reset: bool) -> None:
        """After ``ReadOnly``: observe what the next rising edge will act on."""


class StreamDriver(Component):
    """Drives a valid/ready stream from a queue of payload words, with random valid gaps.

    ``gap_probability`` is the chance of one more idle cycle before each beat. While reset is
    high ``valid`` stays low (the beat in hand is offered again afterwards unless flushed). A
    beat counts as sent when ``valid`` and ``ready`` are both high before a rising edge.
    """

    def __init__(self, tb, prefix: str, name: str, rng: np.random.Generator, gap_probability: float) -> None:
        super().__init__(tb)
        self.name = name
        self.valid = getattr(tb.dut, f"{prefix}__valid")
        self.ready = getattr(tb.dut, f"{prefix}__ready")
        self.payload = getattr(tb.dut, f"{prefix}__payload")
        self.rng = rng
        self.gap_probability = gap_probability
        self.queue: deque[int] = deque()
        self.current: int | None = None
        self.gap = 0
        self.sent = 0
        self.offering = False
        self._valid = None

    def idle(self) -> bool:
        return self.current is None and not self.queue

    def append(self, words) -> None:
        self.queue.extend(words)

    def flush(self) -> None:
        self.queue.clear()
        self.current = None

    def _draw_gap(self) -> int:
        gap = 0
        while gap < 8 and self.rng.random() < self.gap_probability:
            gap += 1
        return gap

    def _set_valid(self, v: int) -> None:
        if v != self._valid:
            self.valid.value = v
            self._valid = v

    def stop(self) -> None:
        super().stop()
        self._set_valid(0)

    def drive(self, in_reset: bool) -> None:
        self.offering = False
        if in_reset:
            self._set_valid(0)
            return
        if self.current is None:
            if not self.queue:
                self._set_valid(0)
                return
            self.current = self.queue.popleft()
            self.gap = self._draw_gap()
            if self.gap:
                self.tb.sample_stall(f"{self.name} gap")
        if self.gap:
            self.gap -= 1
            self._set_valid(0)
            return
        self.payload.value = self.current
        self._set_valid(1)
        self.offering = True

    def sample(self, in_reset: bool) -> None:
        if not self.offering or in_reset:
            return
        if resolve(self.ready.value) == 1:
            self.current = None
            self.sent += 1
        else:
            self.tb.sample_stall(f"{self.name} not ready")


class ReadyDriver(Component):
    """Random back-pressure: ``ready`` is high with probability ``ready_probability`` each cycle."""

    def __init__(self, tb, prefix: str, rng: np.random.Generator, ready_probability: float) -> None:
        super().__init__(tb)
        self.ready = getattr(tb.dut, f"{prefix}__ready")
        self.valid = getattr(tb.dut, f"{prefix}__valid")
        self.rng = rng
        self.ready_probability = ready_probability
        self.want = None

    def drive(self, in_reset: bool) -> None:
        want = int(self.ready_probability >= 1.0 or self.rng.random() < self.ready_probability)
        if want != self.want:
            self.ready.value = want
            self.want = want

    def sample(self, in_reset: bool) -> None:
        if not self.want and not in_reset and resolve(self.valid.value) == 1:
            self.tb.sample_stall("result back-pressure")
