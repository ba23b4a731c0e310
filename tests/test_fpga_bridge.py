"""The byte bridge and the UART of the FPGA wrapper, in amaranth.sim against a stand-in design."""

from __future__ import annotations

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from codesign.errors import CodesignError
from codesign.fpga.bridge import AcceleratorBridge
from codesign.fpga.ports import decode_messages, encode_message, port_map
from codesign.fpga.uart import UartRx, UartTx, baud_divisor


def _ports(**streams: tuple[str, int]) -> dict:
    ports = {"clk": {"direction": "in", "width": 1}, "rst": {"direction": "in", "width": 1}}
    for name, (direction, width) in streams.items():
        back = "out" if direction == "in" else "in"
        if width:
            ports[f"{name}__payload"] = {"direction": direction, "width": width}
        ports[f"{name}__valid"] = {"direction": direction, "width": 1}
        ports[f"{name}__ready"] = {"direction": back, "width": 1}
    return ports


# Shaped like the new accelerator: two input streams, one output, a counter and a trace.
INFO = {
    "top": "accelerator",
    "ports": {
        **_ports(inputs=("in", 13), config=("in", 4), results=("out", 20)),
        "cycle_count": {"direction": "out", "width": 32},
        "probe_select": {"direction": "in", "width": 3},
    },
}


class StandIn:
    """A tiny design with the ports of INFO: results = inputs + config, ready held low a while."""

    def __init__(self, bridge: AcceleratorBridge) -> None:
        self.sig = bridge.design

    def elaborate(self, m: Module) -> None:
        s = self.sig
        config = Signal(4)
        wait = Signal(3)
        m.d.comb += s["config__ready"].eq(1)
        with m.If(s["config__valid"]):
            m.d.sync += config.eq(s["config__payload"])
        # Accept an input only when no result is pending and after a few busy cycles.
        m.d.comb += s["inputs__ready"].eq(~s["results__valid"] & (wait == 0))
        with m.If(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        with m.If(s["inputs__valid"] & s["inputs__ready"]):
            m.d.sync += [
                s["results__payload"].eq(s["inputs__payload"] + config),
                s["results__valid"].eq(1),
                wait.eq(5),
            ]
        with m.If(s["results__valid"] & s["results__ready"]):
            m.d.sync += s["results__valid"].eq(0)


def test_port_map_sorts_streams_and_other_ports():
    ports = port_map(INFO)
    assert [(s.name, s.channel, s.width, s.payload_bytes) for s in ports.inputs] == [
        ("inputs", 0, 13, 2),
        ("config", 1, 4, 1),
    ]
    assert [(s.name, s.channel, s.payload_bytes) for s in ports.outputs] == [("results", 0, 3)]
    assert [p.name for p in ports.other_inputs] == ["probe_select"]
    assert [p.name for p in ports.other_outputs] == ["cycle_count"]
    assert encode_message(ports.stream("inputs"), 0x1234) == bytes([0, 0x34, 0x12])
    msgs, rest = decode_messages(ports, bytes([0, 1, 2, 3, 0, 9]))
    assert msgs == [("results", 0x030201)] and rest == bytes([0, 9])


def test_port_map_today_accelerator_shape():
    info = {
        "ports": {
            **_ports(steps=("in", 61), results=("out", 424)),
            "state": {"direction": "out", "width": 256},
            "step_done": {"direction": "out", "width": 1},
        }
    }
    ports = port_map(info)
    assert [s.name for s in ports.inputs] == ["steps"] and [s.name for s in ports.outputs] == ["results"]
    assert ports.stream("results").payload_bytes == 53
    assert [p.name for p in ports.other_outputs] == ["state", "step_done"]


@pytest.mark.parametrize(
    "ports, needle",
    [
        ({}, "ports"),
        ({"clk": {"direction": "in", "width": 1}}, "ports.rst"),
        ({**_ports(a=("in", 3)), "a__payload": {"direction": "out", "width": 3}}, "a__payload"),
        ({**_ports(a=("in", 3)), "b": {"direction": "sideways", "width": 1}}, "ports.b.direction"),
        ({**_ports(a=("in", 3)), "b": {"direction": "in", "width": 0}}, "ports.b.width"),
        ({"clk": {"direction": "in", "width": 1}, "rst": {"direction": "in", "width": 1}}, "no valid/ready"),
    ],
)
def test_port_map_refuses_malformed_ports(ports, needle):
    with pytest.raises(CodesignError, match=needle.replace(".", r"\.")):
        port_map({"ports": ports})


def _run_bridge(host_bytes: bytes, *, timeout: int = 0, gap_seed: int = 0, pause_after: int = -1) -> bytes:
    """Feed ``host_bytes`` (random gaps; a 200-cycle pause after byte ``pause_after``), return what comes back."""
    ports = port_map(INFO)
    bridge = AcceleratorBridge(ports, timeout=timeout)
    m = Module()
    m.submodules.bridge = bridge
    StandIn(bridge).elaborate(m)
    sim = Simulator(m)
    sim.add_clock(1e-6)
    received = bytearray()
    rng = random.Random(gap_seed)

    async def host(ctx):
        for i, b in enumerate(host_bytes):
            for _ in range(rng.randrange(3)):
                await ctx.tick()
            ctx.set(bridge.rx.payload, b)
            ctx.set(bridge.rx.valid, 1)
            await ctx.tick().until(bridge.rx.ready)
            ctx.set(bridge.rx.valid, 0)
            if i == pause_after:
                await ctx.tick().repeat(200)
        await ctx.tick().repeat(300)  # let the last results drain

    async def sink(ctx):  # the host's receiver: ready 60 % of the cycles
        while True:
            ctx.set(bridge.tx.ready, rng.random() < 0.6)
            await ctx.tick()

    async def monitor(ctx):
        async for _clk, _rst, valid, ready, payload in ctx.tick().sample(
            bridge.tx.valid, bridge.tx.ready, bridge.tx.payload
        ):
            if valid and ready:
                received.append(payload)

    sim.add_testbench(host)
    sim.add_process(sink)
    sim.add_process(monitor)
    sim.run()
    return bytes(received)


def test_bridge_round_trip_with_back_pressure():
    ports = port_map(INFO)
    inputs, config = ports.stream("inputs"), ports.stream("config")
    rng = random.Random(1)
    host = encode_message(config, 3)
    expected = []
    cfg = 3
    for _ in range(6):
        x = rng.randrange(1 << 13)
        host += encode_message(inputs, x)
        expected.append(("results", x + cfg))
        if rng.random() < 0.5:
            cfg = rng.randrange(16)
            host += encode_message(config, cfg)
    for seed in range(3):
        got, rest = decode_messages(ports, _run_bridge(host, gap_seed=seed))
        assert got == expected and rest == b""


def test_bridge_ignores_unknown_channels_and_resyncs_after_a_timeout():
    ports = port_map(INFO)
    inputs = ports.stream("inputs")
    # 7 and 200 are not input channels: ignored. Then half a message (channel 0 and 1 of its
    # 2 bytes) and a pause: dropped after the timeout, so the next whole message goes through.
    host = bytes([7, 200]) + encode_message(inputs, 5)[:2] + encode_message(inputs, 77)
    got = decode_messages(ports, _run_bridge(host, timeout=40, pause_after=3))[0]
    assert got == [("results", 77)]
    # Without the timeout the stalled message swallows the next one's channel byte instead.
    got = decode_messages(ports, _run_bridge(host, timeout=0, pause_after=3))[0]
    assert got != [("results", 77)]


def test_uart_loopback():
    divisor = 8
    tx, rx = UartTx(divisor), UartRx(divisor)
    m = Module()
    m.submodules.tx, m.submodules.rx = tx, rx
    m.d.comb += rx.rx.eq(tx.tx)
    sim = Simulator(m)
    sim.add_clock(1e-6)
    data = bytes([0x00, 0xFF, 0x55, 0xA3, 0x01, 0x80])
    got = bytearray()

    async def send(ctx):
        for b in data:
            ctx.set(tx.bytes.payload, b)
            ctx.set(tx.bytes.valid, 1)
            await ctx.tick().until(tx.bytes.ready)
        ctx.set(tx.bytes.valid, 0)

    async def receive(ctx):
        ctx.set(rx.bytes.ready, 1)
        while len(got) < len(data):
            _, _, valid, payload = await ctx.tick().sample(rx.bytes.valid, rx.bytes.payload)
            if valid:
                got.append(payload)

    sim.add_testbench(send)
    sim.add_testbench(receive)
    sim.run_until(1e-6 * divisor * 10 * (len(data) + 2))
    assert bytes(got) == data


def test_baud_divisor():
    assert baud_divisor(12e6, 115200) == 104
    assert baud_divisor(25e6, 115200) == 217
    with pytest.raises(ValueError, match="too slow"):
        baud_divisor(300e3, 115200)
