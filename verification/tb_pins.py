"""cocotb test: ``fpga_top`` driven at its UART pins, the host's bytes in, the golden model's answers out.

The design is the whole chip (:mod:`codesign.fpga.pins`: the mapped netlist, or the RTL): ``clk``,
``uart_rx``, ``uart_tx``. A serial model of the host's UART (:class:`UartSource`,
:class:`UartSink`: 8N1, ``divisor`` clock cycles a bit, as the wrapper's divisor) carries the
bytes the host driver's encoder makes (:class:`codesign.board.protocol.BoardProtocol`: the
identify command, the weights of a runtime or SPRAM build, each sequence's step messages, sent
in chunks of at most :data:`codesign.board.driver.CHUNK` bytes as the driver sends them) and
decodes the ``uart_tx`` line with the driver's decoder (:func:`codesign.fpga.ports.decode_messages`).
Every sequence's logits and classes are compared with the golden model's.

Settings come from ``CODESIGN_PINS_JOB`` (JSON: build folder, sequences, seed, longest
sequence, the divisor, the result path); the result is written to ``CODESIGN_RESULT``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.queue import Queue
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, FallingEdge, with_timeout

from codesign.board.driver import CHUNK
from codesign.board.protocol import BoardProtocol
from codesign.bundle import load_bundle
from codesign.fpga.ports import decode_messages
from codesign.golden.model import run_golden
from codesign.verify.vectors import random_vectors

PERIOD_NS = 10
#: Clock cycles without a byte from the design before the host gives up (a hung design): far
#: more than a step of the reference bundles takes, a few seconds of a gate-level simulation.
SILENCE_CYCLES = 30_000


class UartSource:
    """The host's transmitter: bytes onto ``line`` (idle high), LSB first, one start and one stop bit."""

    def __init__(self, line, clk, divisor: int) -> None:
        self.line, self.clk, self.divisor = line, clk, divisor
        self.sent = 0
        line.value = 1

    async def write(self, data: bytes) -> None:
        for byte in data:
            for bit in (0, *((byte >> k) & 1 for k in range(8)), 1):
                self.line.value = bit
                await ClockCycles(self.clk, self.divisor)
            self.sent += 1


class UartSink:
    """The host's receiver: samples ``line`` in the middle of each bit after a start bit's falling edge.

    Received bytes go to :attr:`queue`; a low stop bit (a framing error) is recorded in
    :attr:`errors` and the byte dropped, as a UART does."""

    def __init__(self, line, clk, divisor: int) -> None:
        self.line, self.clk, self.divisor = line, clk, divisor
        self.queue: Queue[int] = Queue()
        self.errors: list[str] = []
        self.received = 0

    def _bit(self) -> int:
        value = self.line.value
        return int(value) if value.is_resolvable else -1

    async def run(self) -> None:
        half = self.divisor // 2
        while True:
            await FallingEdge(self.line)
            await ClockCycles(self.clk, half)
            if self._bit() != 0:  # a glitch, not a start bit
                continue
            byte = 0
            for k in range(8):
                await ClockCycles(self.clk, self.divisor)
                bit = self._bit()
                if bit < 0:
                    self.errors.append(f"uart_tx is {self.line.value} in data bit {k}")
                byte |= max(bit, 0) << k
            await ClockCycles(self.clk, self.divisor)
            if self._bit() != 1:
                self.errors.append(f"framing error: stop bit {self.line.value} after byte 0x{byte:02x}")
                continue
            self.received += 1
            self.queue.put_nowait(byte)


class Host:
    """What :class:`codesign.board.driver.Board` does over a serial port, on the UART model."""

    def __init__(self, protocol: BoardProtocol, source: UartSource, sink: UartSink) -> None:
        self.protocol, self.source, self.sink = protocol, source, sink
        self.pending = b""
        self.messages: list[tuple[str, int]] = []

    async def message(self, what: str) -> tuple[str, int]:
        """The next message from the design; a silence of :data:`SILENCE_CYCLES` is an error."""
        while not self.messages:
            try:
                byte = await with_timeout(self.sink.queue.get(), SILENCE_CYCLES * PERIOD_NS, "ns")
            except cocotb.triggers.SimTimeoutError:
                raise AssertionError(
                    f"no byte on uart_tx for {SILENCE_CYCLES} cycles while waiting for {what}"
                    + (f" ({len(self.pending)} bytes of an unfinished message)" if self.pending else "")
                ) from None
            msgs, self.pending = decode_messages(self.protocol.ports, self.pending + bytes([byte]))
            self.messages += msgs
        return self.messages.pop(0)

    async def identify(self) -> int:
        await self.source.write(self.protocol.identify_request())
        name, word = await self.message("the identity word")
        assert name == "identify", f"a {name!r} message came where the identity word was due"
        return word

    async def run_one(self, sequence: np.ndarray):
        steps = self.protocol.step_messages(sequence)
        words: list[int] = []
        chunk: list[bytes] = []

        async def flush() -> None:
            await self.source.write(b"".join(chunk))
            if self.protocol.per_step:
                words.extend(await self.result_words(len(chunk)))
            chunk.clear()

        for step in steps:
            if chunk and sum(map(len, chunk)) + len(step) > CHUNK:
                await flush()
            chunk.append(step)
        await flush()
        if not self.protocol.per_step:
            words.extend(await self.result_words(1))
        return self.protocol.assemble(words, len(steps))

    async def result_words(self, finals: int) -> list[int]:
        words: list[int] = []
        while finals:
            name, word = await self.message("results")
            assert name == "results", f"a {name!r} message came where results were due"
            words.append(word)
            finals -= self.protocol.is_final(word)
        return words


def _compare(i: int, result, golden) -> str | None:
    """The first difference between the design's and the golden model's answer to sequence ``i``."""
    logits, classes = golden.logits[0], golden.classes[0]
    if not np.array_equal(result.logits, logits):
        return f"sequence {i}: logits {np.asarray(result.logits).tolist()} != golden {logits.tolist()}"
    if not np.array_equal(result.classes, classes):
        return f"sequence {i}: class {np.asarray(result.classes).tolist()} != golden {classes.tolist()}"
    return None


@cocotb.test()
async def sequences_at_the_pins(dut):
    """Identify, load the weights (runtime / SPRAM builds), random sequences: every answer at the
    ``uart_tx`` pin equals the golden model's."""
    job = json.loads(Path(os.environ["CODESIGN_PINS_JOB"]).read_text())
    build = Path(job["build"])
    protocol = BoardProtocol.from_build(build)
    bundle = load_bundle(build)
    record = {"sequences": 0, "steps": 0, "mismatches": 0, "first_mismatch": None, "identity": None}
    source = UartSource(dut.uart_rx, dut.clk, job["divisor"])
    sink = UartSink(dut.uart_tx, dut.clk, job["divisor"])
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    cocotb.start_soon(sink.run())
    host = Host(protocol, source, sink)
    try:
        await ClockCycles(dut.clk, 32)  # the power-on reset
        word = await host.identify()
        record["identity"] = f"0x{word:08x}"
        assert protocol.accept(word), f"identity 0x{word:08x}, expected 0x{protocol.identity:08x}"
        if protocol.weights in ("runtime", "spram"):
            await source.write(protocol.config_bytes(bundle))
            assert await host.identify() == word, "the identity changed after the weight load"
        for i, seq in enumerate(
            random_vectors(bundle, vectors=job["vectors"], seed=job["seed"], max_steps=job["max_steps"])
        ):
            result = await host.run_one(seq)
            record["sequences"] += 1
            record["steps"] += len(seq)
            diff = _compare(i, result, run_golden(bundle, seq[None]))
            if diff is not None:
                record["mismatches"] += 1
                record["first_mismatch"] = record["first_mismatch"] or diff
                if job.get("stop_on_mismatch"):
                    break
        assert not sink.errors, sink.errors[0]
    except AssertionError as err:
        record["first_mismatch"] = record["first_mismatch"] or str(err)
        record["error"] = str(err)
    finally:
        record |= {
            "cycles": int(get_sim_time("ns")) // PERIOD_NS,
            "bytes_sent": source.sent,
            "bytes_received": sink.received,
            "uart_errors": sink.errors[:5],
        }
        Path(os.environ["CODESIGN_RESULT"]).write_text(json.dumps(record, indent=1) + "\n")
    assert record["mismatches"] == 0 and "error" not in record, record["first_mismatch"]
