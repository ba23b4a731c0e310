"""The wrapped design's ports, read from ``BUILD/build.json``, and the byte protocol over them.

``build.json``'s ``"ports"`` lists every top-level port of module ``accelerator`` with its
``direction`` (``in`` / ``out``) and ``width``: ``clk``, ``rst``, then the members of its streams
flattened as ``<name>__payload``, ``<name>__valid`` and ``<name>__ready``, and any other port
(counters, traces, probes). Nothing here knows which streams a given accelerator has:

* an **input stream** is a ``<name>__valid`` input with a ``<name>__ready`` output (and, unless its
  payload is empty, a ``<name>__payload`` input);
* an **output stream** is the same with the directions swapped.

Input streams are numbered 0, 1, ... in the order ``build.json`` lists them, and so are output
streams (two separate numberings). The host sends ``[channel][payload bytes]`` to feed input
stream ``channel``; the wrapper sends back ``[channel][payload bytes]`` for every transfer on an
output stream. Payloads travel little-endian (bit 0 of the payload is bit 0 of the first byte),
padded with zeros to whole bytes. Other inputs are tied to zero; other outputs are left
unconnected, so synthesis removes the logic only they need -- except a ``counters`` output, which
a wrapper made with ``counters`` (``codesign synth --counters``) latches and sends on the
snapshot command.

Two byte values are commands, never channels: :data:`IDENTIFY` (``0xFF``) is answered with
``[0xFF][identity, 4 bytes]`` (:func:`build_identity`: a hash of the build's plan, ports and
Verilog, so a host refuses a bitstream of another build), :data:`SNAPSHOT` (``0xFE``) with
``[0xFE][counters, little-endian]``.
"""

from __future__ import annotations

__all__ = [
    "IDENTIFY",
    "MAX_STREAMS",
    "SNAPSHOT",
    "Port",
    "PortMap",
    "Stream",
    "build_identity",
    "decode_messages",
    "encode_message",
    "load_port_map",
    "port_map",
]

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from codesign.errors import CodesignError

_MEMBERS = ("payload", "valid", "ready")
#: Command byte: the design answers ``[IDENTIFY][identity word, 4 bytes little-endian]``.
IDENTIFY = 0xFF
#: Command byte: the design answers ``[SNAPSHOT][its counters output, little-endian]``.
SNAPSHOT = 0xFE
#: Streams per direction: channel bytes 0 .. 253 (the two command bytes are taken).
MAX_STREAMS = 254
#: The other output the snapshot command reads.
SNAPSHOT_PORT = "counters"


def build_identity(info: dict, *, counters: bool = False) -> int:
    """The 32-bit identity word of a ``build.json`` dictionary: the first 4 bytes of the SHA-256 of
    its plan, ports and Verilog digest (canonical JSON), and of whether the bitstream serialises
    the ``counters`` output (``codesign synth --counters``), read little-endian.

    Two builds whose bitstreams a host could confuse differ in one of them: another network or
    plan changes ``plan``/``ports``, other frozen weights change the Verilog. A build with
    run-time weights keeps its identity for every bundle of its shape, which it serves."""
    key = {k: info.get(k) for k in ("plan", "ports", "verilog_sha256")} | {"counters": counters}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "in" or "out"
    width: int


@dataclass(frozen=True)
class Stream:
    """A valid/ready stream of the wrapped design, seen from the design (``direction`` of its payload)."""

    name: str
    direction: str  # "in": the host sends it; "out": the design produces it
    width: int  # payload bits (0: no payload)
    channel: int

    @property
    def payload_bytes(self) -> int:
        return (self.width + 7) // 8

    @property
    def payload(self) -> str | None:
        return f"{self.name}__payload" if self.width else None

    @property
    def valid(self) -> str:
        return f"{self.name}__valid"

    @property
    def ready(self) -> str:
        return f"{self.name}__ready"


@dataclass(frozen=True)
class PortMap:
    """The wrapped design's ports sorted into clock, reset, streams and the rest."""

    top: str
    clock: str
    reset: str
    inputs: tuple[Stream, ...]
    outputs: tuple[Stream, ...]
    other_inputs: tuple[Port, ...] = ()
    other_outputs: tuple[Port, ...] = ()
    ports: dict[str, Port] = field(default_factory=dict)
    counters: bool = False  # the wrapper serialises the counters output (the snapshot command)

    @property
    def snapshot_port(self) -> Port | None:
        """The ``counters`` output the snapshot command reads, if the design has one and the
        wrapper serialises it (``counters``)."""
        if not self.counters:
            return None
        for p in self.other_outputs:
            if p.name == SNAPSHOT_PORT:
                return p
        return None

    def stream(self, name: str) -> Stream:
        for s in self.inputs + self.outputs:
            if s.name == name:
                return s
        raise KeyError(name)

    def protocol(self) -> dict:
        """A JSON-able description of the byte protocol (written next to the bitstream)."""

        def rows(streams: tuple[Stream, ...]) -> list[dict]:
            return [
                {
                    "channel": s.channel,
                    "stream": s.name,
                    "payload_bits": s.width,
                    "payload_bytes": s.payload_bytes,
                }
                for s in streams
            ]

        snap = self.snapshot_port
        return {
            "framing": "[channel byte][payload bytes, little-endian, zero-padded to whole bytes]",
            "host_to_device": rows(self.inputs),
            "device_to_host": rows(self.outputs),
            "commands": {
                "identify": {"byte": IDENTIFY, "answer": "[0xFF][identity, 4 bytes little-endian]"},
                "snapshot": {
                    "byte": SNAPSHOT,
                    "answer": f"[0xFE][{SNAPSHOT_PORT}, {(snap.width + 7) // 8} bytes little-endian]"
                    if snap
                    else "none (no counters serialised: codesign synth --counters)",
                },
            },
            "tied_to_zero": [p.name for p in self.other_inputs],
            "not_serialized": [p.name for p in self.other_outputs if p is not snap],
        }


def _where(path: Path | None, key: str) -> str:
    return f"{path}: {key}" if path is not None else key


def port_map(info: dict, *, path: Path | None = None, counters: bool = False) -> PortMap:
    """Sort the ``"ports"`` of a ``build.json`` dictionary; ``path`` only names the file in errors;
    ``counters``: the wrapper serialises the ``counters`` output."""
    top = info.get("top", "accelerator")
    if info.get("bus", "stream") != "stream":
        raise CodesignError(
            f"{_where(path, 'bus')} is {info['bus']!r}: the UART wrapper drives the stream face; "
            "rebuild with `codesign rtl --bus stream`"
        )
    raw = info.get("ports")
    if not isinstance(raw, dict) or not raw:
        raise CodesignError(f"{_where(path, 'ports')} is missing or empty; rebuild with `codesign rtl`")
    ports: dict[str, Port] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise CodesignError(f"{_where(path, f'ports.{name}')} must be an object with direction and width")
        direction, width = spec.get("direction"), spec.get("width")
        if direction not in ("in", "out"):
            raise CodesignError(
                f"{_where(path, f'ports.{name}.direction')} is {direction!r}; allowed: in, out"
            )
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise CodesignError(
                f"{_where(path, f'ports.{name}.width')} is {width!r}; must be an integer >= 1"
            )
        ports[name] = Port(name, direction, width)
    for name in ("clk", "rst"):
        port = ports.get(name)
        if port is None or port.direction != "in" or port.width != 1:
            raise CodesignError(
                f"{_where(path, f'ports.{name}')} must be a 1-bit input (the design's clock and synchronous reset)"
            )

    # Group <prefix>__payload/valid/ready members by prefix, in first-seen order.
    groups: dict[str, dict[str, Port]] = {}
    for name, port in ports.items():
        prefix, sep, member = name.rpartition("__")
        if sep and prefix and member in _MEMBERS:
            groups.setdefault(prefix, {})[member] = port
    inputs: list[Stream] = []
    outputs: list[Stream] = []
    claimed = {"clk", "rst"}
    for prefix, members in groups.items():
        valid, ready, payload = members.get("valid"), members.get("ready"), members.get("payload")
        if valid is None or ready is None:
            continue  # not a stream: its members stay "other" ports
        if valid.width != 1 or ready.width != 1 or valid.direction == ready.direction:
            raise CodesignError(
                f"{_where(path, f'ports.{prefix}__valid/ready')}: a stream needs a 1-bit valid and a 1-bit "
                "ready of opposite directions"
            )
        if payload is not None and payload.direction != valid.direction:
            raise CodesignError(
                f"{_where(path, f'ports.{prefix}__payload')} is an {payload.direction}put but "
                f"{prefix}__valid is an {valid.direction}put; a payload travels with its valid"
            )
        bucket = inputs if valid.direction == "in" else outputs
        bucket.append(Stream(prefix, valid.direction, payload.width if payload else 0, len(bucket)))
        claimed |= {m.name for m in members.values()}
    for bucket, what in ((inputs, "input"), (outputs, "output")):
        if len(bucket) > MAX_STREAMS:
            raise CodesignError(
                f"{_where(path, 'ports')}: {len(bucket)} {what} streams; the protocol allows {MAX_STREAMS}"
            )
    if not inputs and not outputs:
        raise CodesignError(f"{_where(path, 'ports')} holds no valid/ready stream; nothing to wrap")
    others = [p for n, p in ports.items() if n not in claimed]
    return PortMap(
        top=top,
        clock="clk",
        reset="rst",
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        other_inputs=tuple(p for p in others if p.direction == "in"),
        other_outputs=tuple(p for p in others if p.direction == "out"),
        ports=ports,
        counters=counters,
    )


def load_port_map(build: Path, *, counters: bool = False) -> PortMap:
    """:func:`port_map` of ``BUILD/build.json``."""
    path = Path(build) / "build.json"
    if not path.is_file():
        raise CodesignError("build.json not found; make the build directory with `codesign rtl`", path=path)
    try:
        info = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CodesignError(f"not readable JSON ({err})", path=path) from None
    return port_map(info, path=path, counters=counters)


def encode_message(stream: Stream, value: int) -> bytes:
    """The bytes the host sends to deliver ``value`` on input ``stream``."""
    if stream.direction != "in":
        raise ValueError(f"stream {stream.name!r} is an output of the design")
    if not 0 <= value < (1 << stream.width if stream.width else 1):
        raise ValueError(f"value {value} does not fit the {stream.width}-bit payload of {stream.name!r}")
    return bytes([stream.channel]) + value.to_bytes(stream.payload_bytes, "little")


def decode_messages(ports: PortMap, data: bytes) -> tuple[list[tuple[str, int]], bytes]:
    """Split bytes received from the device into ``(stream name, payload)`` pairs.

    Returns the messages and the trailing bytes of an incomplete one. The answers to the commands
    come as ``("identify", word)`` and ``("snapshot", word)``. An unknown channel byte raises
    ``ValueError``.
    """
    lengths = {s.channel: (s.name, s.payload_bytes) for s in ports.outputs}
    lengths[IDENTIFY] = ("identify", 4)
    snap = ports.snapshot_port
    lengths[SNAPSHOT] = ("snapshot", (snap.width + 7) // 8 if snap else 0)
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(data):
        known = lengths.get(data[i])
        if known is None:
            raise ValueError(f"byte {i}: {data[i]} is not an output channel (known: {sorted(lengths)})")
        name, size = known
        end = i + 1 + size
        if end > len(data):
            break
        out.append((name, int.from_bytes(data[i + 1 : end], "little")))
        i = end
    return out, data[i:]
