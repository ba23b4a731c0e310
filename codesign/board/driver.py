"""Host driver: a build's bitstream on a board, spoken to over a serial port.

::

    with Board.open("BUILD", "/dev/ttyUSB1") as board:   # checks the identity word first
        board.load_weights(bundle)                         # runtime builds; spram builds must
        results = board.run(sequences)                     # [Result(logits, classes)]
        counters = board.counters()                        # {name: value}

A ``--weights spram`` build keeps its largest weight matrices in single-port RAMs that hold no
values until the host loads them: :meth:`Board.run_one` refuses such a build (one
:class:`~codesign.board.errors.BoardError` naming the fix) until :meth:`Board.load_weights` ran on
this link.

The port is opened with :func:`serial.serial_for_url`, so ``loop://`` and a pseudo-terminal path
work as well as a device. Every read has a deadline (``timeout_s`` without a byte); the link
fails with one :class:`~codesign.board.errors.BoardError`: silent (nothing, or half a message,
within the timeout), identity (another build's bitstream), garbage (bytes that are not a message).

Before identifying itself the driver waits ``drop_s`` without sending, so a message an earlier
host left half-sent is dropped by the bridge (its timeout, :data:`codesign.fpga.wrapper.MESSAGE_TIMEOUT`
cycles), then flushes what the port holds: a host can always resync.

Flow control: the wrapper buffers :data:`codesign.fpga.wrapper.RX_FIFO_DEPTH` bytes. A sequence is
sent in chunks of whole steps of at most :data:`CHUNK` bytes; with a per-step readout the driver
reads each chunk's results before sending the next, so the design never waits on the UART with
a full FIFO behind it.
"""

from __future__ import annotations

__all__ = ["CHUNK", "Board"]

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from codesign.board.errors import BoardError, BoardGarbageError, BoardIdentityError, BoardSilentError
from codesign.board.protocol import BoardProtocol, Result
from codesign.fpga.ports import decode_messages
from codesign.fpga.wrapper import MESSAGE_TIMEOUT, RX_FIFO_DEPTH

#: Bytes sent ahead of the design at most (below the FIFO's depth).
CHUNK = RX_FIFO_DEPTH - 32


class Board:
    """A serial link to a board running the bitstream of one build."""

    def __init__(
        self,
        protocol: BoardProtocol,
        link,
        *,
        port: str = "",
        timeout_s: float = 2.0,
        drop_s: float = MESSAGE_TIMEOUT / 6e6,
    ) -> None:
        self.protocol = protocol
        self.link = link
        self.port = port
        self.timeout_s = timeout_s
        self.drop_s = drop_s
        self._pending = b""
        self._queue: list[tuple[str, int]] = []
        self.bytes_sent = 0
        self.bytes_received = 0
        self.weights_loaded = False  # load_weights ran on this link

    @classmethod
    def open(
        cls,
        build: str | Path,
        port: str,
        *,
        baud: int = 115200,
        timeout_s: float = 2.0,
        drop_s: float = MESSAGE_TIMEOUT / 6e6,
        identify: bool = True,
    ) -> Board:
        """Open ``port`` for ``build`` and check the identity word (unless ``identify`` is false)."""
        from codesign.extras import require

        require("serial", "the board's UART link")
        import serial

        protocol = BoardProtocol.from_build(build)
        try:
            link = serial.serial_for_url(
                port, baudrate=baud, timeout=min(timeout_s, 0.05), write_timeout=timeout_s
            )
        except (serial.SerialException, ValueError, OSError) as err:
            raise BoardError(f"--port {port}: cannot open ({err})") from None
        board = cls(protocol, link, port=port, timeout_s=timeout_s, drop_s=drop_s)
        if identify:
            try:
                board.check_identity()
            except BaseException:
                board.close()
                raise
        return board

    def close(self) -> None:
        self.link.close()

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # the link
    def _write(self, data: bytes) -> None:
        from codesign.extras import require

        require("serial", "the board's UART link")
        import serial

        try:
            self.link.write(data)
            self.link.flush()
        except (serial.SerialException, OSError) as err:
            raise BoardError(f"{self.port}: write failed ({err})") from None
        self.bytes_sent += len(data)

    def _messages(self, count: int, what: str) -> list[tuple[str, int]]:
        """The next ``count`` messages; a gap of ``timeout_s`` without a byte is an error."""
        deadline = time.monotonic() + self.timeout_s
        from codesign.extras import require

        require("serial", "the board's UART link")
        import serial

        while len(self._queue) < count:
            try:
                chunk = self.link.read(max(1, self.link.in_waiting))
            except (serial.SerialException, OSError) as err:
                raise BoardError(f"{self.port}: read failed while waiting for {what} ({err})") from None
            if chunk:
                self.bytes_received += len(chunk)
                deadline = time.monotonic() + self.timeout_s
                try:
                    msgs, self._pending = decode_messages(self.protocol.ports, self._pending + chunk)
                except ValueError as err:
                    data = (self._pending + chunk)[:16].hex(" ")
                    self._pending = b""
                    raise BoardGarbageError(
                        f"{self.port}: garbage on the line while waiting for {what} ({err}; bytes {data}); "
                        "wrong --baud, or a bitstream of another design?"
                    ) from None
                self._queue += msgs
            elif time.monotonic() > deadline:
                if self._pending or self._queue:
                    raise BoardSilentError(
                        f"{self.port}: half a message and then nothing for {self.timeout_s:g} s while waiting "
                        f"for {what} ({len(self._pending)} bytes of an unfinished message)"
                    )
                raise BoardSilentError(
                    f"{self.port}: no reply within {self.timeout_s:g} s while waiting for {what}; is the "
                    "board connected and programmed (codesign board --flash), and --baud right?"
                )
        out, self._queue = self._queue[:count], self._queue[count:]
        return out

    def resync(self) -> None:
        """Let the bridge drop a half-received message, then forget what the port holds."""
        time.sleep(self.drop_s)
        self.link.reset_input_buffer()
        self._pending = b""
        self._queue = []

    # the commands
    def identity(self) -> int:
        """The identity word the bitstream answers with."""
        self.resync()
        self._write(self.protocol.identify_request())
        ((name, word),) = self._messages(1, "the identity word")
        if name != "identify":
            raise BoardGarbageError(f"{self.port}: a {name!r} message came where the identity word was due")
        return word

    def check_identity(self) -> None:
        word = self.identity()
        if not self.protocol.accept(word):
            raise BoardIdentityError(
                f"{self.port}: the board holds another build (identity 0x{word:08x}; "
                f"{self.protocol.info.get('bundle')} expects 0x{self.protocol.identity:08x}); "
                "program this build's bitstream (codesign board --flash)"
            )

    def counters(self) -> dict[str, int]:
        """The design's counters (an empty dict for a build without them)."""
        request = self.protocol.snapshot_request()
        if not request:
            return {}
        self._write(request)
        ((name, word),) = self._messages(1, "the counters")
        if name != "snapshot":
            raise BoardGarbageError(f"{self.port}: a {name!r} message came where the counters were due")
        return self.protocol.counters.unpack(word)

    def load_weights(self, bundle) -> int:
        """Load every parameter of ``bundle`` (a runtime / spram build); returns the bytes sent."""
        data = self.protocol.config_bytes(bundle)
        self._write(data)
        # the config stream has no answer: identify afterwards, so the load is known complete
        self._write(self.protocol.identify_request())
        ((name, word),) = self._messages(1, "the end of the weight load")
        if name != "identify" or not self.protocol.accept(word):
            raise BoardGarbageError(f"{self.port}: unexpected {name!r} message after the weight load")
        self.weights_loaded = True
        return len(data)

    def run_one(self, sequence: np.ndarray) -> Result:
        """Send one integer sequence ``(T, M)`` and read its result; a ``spram`` build whose
        weights this link has not loaded is refused."""
        if self.protocol.weights == "spram" and not self.weights_loaded:
            raise BoardError(
                f"{self.port}: this build keeps its weights in single-port RAMs, which hold no values "
                "until loaded: load them first (Board.load_weights, codesign board --weights BUNDLE)"
            )
        steps = self.protocol.step_messages(sequence)
        words: list[int] = []
        chunk: list[bytes] = []
        size = 0

        def flush() -> None:
            nonlocal chunk, size
            self._write(b"".join(chunk))
            if self.protocol.per_step:
                words.extend(self._result_words(len(chunk)))
            chunk, size = [], 0

        for step in steps:
            if chunk and size + len(step) > CHUNK:
                flush()
            chunk.append(step)
            size += len(step)
        flush()
        if not self.protocol.per_step:
            words.extend(self._result_words(1))
        return self.protocol.assemble(words, len(steps))

    def _result_words(self, finals: int) -> list[int]:
        words: list[int] = []
        while finals:
            ((name, word),) = self._messages(1, "results")
            if name != "results":
                raise BoardGarbageError(f"{self.port}: a {name!r} message came where results were due")
            words.append(word)
            finals -= self.protocol.is_final(word)
        return words

    def run(
        self, sequences: Sequence[np.ndarray], *, progress: Callable[[int], None] | None = None
    ) -> list[Result]:
        """Every sequence in turn (each ``(T, M)`` integers), their results in order."""
        out = []
        for i, seq in enumerate(sequences):
            out.append(self.run_one(seq))
            if progress is not None:
                progress(i + 1)
        return out
