"""Monitors: passive observers of the output and input streams and of the per-layer trace ports.

Both are reset-aware (nothing transfers in reset) and report an X on a handshake or a trace's
``valid`` as a mismatch instead of guessing.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tb_context import Bench
from tb_drivers import Component
from tb_fields import Fields, resolve
from tb_scoreboard import Mismatch

__all__ = ["StreamMonitor", "TraceMonitor"]


class StreamMonitor(Component):
    """Passive: calls ``on_beat(fields)`` for every transfer (valid and ready, not in reset)."""

    def __init__(self, tb: Bench, prefix: str, fields: Fields, on_beat: Callable[[dict], None]) -> None:
        super().__init__(tb)
        self.prefix = prefix
        self.valid = getattr(tb.dut, f"{prefix}__valid")
        self.ready = getattr(tb.dut, f"{prefix}__ready")
        self.payload = getattr(tb.dut, f"{prefix}__payload")
        self.fields = fields
        self.on_beat = on_beat
        self.beats = 0

    def sample(self, in_reset: bool) -> None:
        if in_reset:
            return
        valid = resolve(self.valid.value)
        if valid == 0:
            return
        ready = resolve(self.ready.value)
        if valid is None or ready is None:
            self.tb.scoreboard.report(Mismatch(None, None, self.prefix, None, "valid/ready", "0 or 1", "X"))
            return
        if ready:
            self.beats += 1
            self.tb.progress += 1
            self.on_beat(self.fields.unpack_value(self.payload.value))


class TraceMonitor(Component):
    """Passive: calls ``on_beat(fields)`` for every cycle in which a trace port's ``valid`` is set."""

    def __init__(self, tb: Bench, port: str, fields: Fields, on_beat: Callable[[dict], None]) -> None:
        super().__init__(tb)
        self.port = getattr(tb.dut, port)
        self.fields = fields
        self.valid_bit = fields.spec["valid"]["offset"]
        self.on_beat = on_beat

    def sample(self, in_reset: bool) -> None:
        if in_reset:
            return
        value = self.port.value
        word = resolve(value)
        if word is not None:
            if word >> self.valid_bit & 1:
                self.tb.progress += 1
                self.on_beat(self.fields.unpack(word))
            return
        fields = self.fields.unpack_value(value)  # X in padding lanes is allowed
        if os.environ.get("CODESIGN_DEBUG"):
            self.tb.dut._log.info("X trace %s: %s -> %s", self.port._name, str(value), fields)
        if fields["valid"] is None:
            self.tb.scoreboard.report(Mismatch(None, None, "trace", None, "trace valid", "0 or 1", "X"))
        elif fields["valid"]:
            self.tb.progress += 1
            self.on_beat(fields)
