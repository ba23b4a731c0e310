"""The host driver's protocol and its errors against a scripted device on a pseudo-terminal, the
bridge's identify / snapshot commands, the PLL dividers and the board table (no accelerator)."""

from __future__ import annotations

import json
import os
import threading
import time
import tty
from pathlib import Path

import numpy as np
import pytest
from amaranth import Module
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.board.driver import Board
from codesign.board.errors import BoardGarbageError, BoardIdentityError, BoardSilentError
from codesign.board.protocol import BoardProtocol, Fields
from codesign.errors import CodesignError
from codesign.fpga.bridge import AcceleratorBridge
from codesign.fpga.ports import IDENTIFY, SNAPSHOT, build_identity, decode_messages, port_map

ROOT = Path(__file__).parents[1]


def _ports(**streams) -> dict:
    ports = {"clk": {"direction": "in", "width": 1}, "rst": {"direction": "in", "width": 1}}
    for name, (direction, width) in streams.items():
        if width:
            ports[f"{name}__payload"] = {"direction": direction, "width": width}
        ports[f"{name}__valid"] = {"direction": direction, "width": 1}
        ports[f"{name}__ready"] = {"direction": "out" if direction == "in" else "in", "width": 1}
    return ports


INFO = {
    "top": "accelerator",
    "weights": "baked",
    "plan": {"lanes": 1},
    "verilog_sha256": "ab" * 32,
    "readout": {"classes": 3, "per_step": False},
    "ports": {
        **_ports(inputs=("in", 10), config=("in", 44), results=("out", 38)),
        "counters": {"direction": "out", "width": 64},
    },
    "inputs_payload": {
        "index": {"offset": 0, "width": 4, "signed": 0},
        "value": {"offset": 4, "width": 4, "signed": 1},
        "step_end": {"offset": 8, "width": 1, "signed": 0},
        "seq_end": {"offset": 9, "width": 1, "signed": 0},
    },
    "results_payload": {
        "logits[0]": {"offset": 0, "width": 28, "signed": 1},
        "group": {"offset": 28, "width": 4, "signed": 0},
        "final": {"offset": 32, "width": 1, "signed": 0},
        "class_index": {"offset": 33, "width": 4, "signed": 0},
        "seq_end": {"offset": 37, "width": 1, "signed": 0},
    },
    "counters_fields": {
        "cycles": {"offset": 0, "width": 32, "signed": 0},
        "sequences": {"offset": 32, "width": 32, "signed": 0},
    },
}


# --- the identity word ---------------------------------------------------------------------------


def test_identity_follows_plan_ports_and_verilog_only():
    base = build_identity(INFO)
    assert base == build_identity(json.loads(json.dumps(INFO)) | {"bundle": "another name"})
    assert base != build_identity(INFO | {"verilog_sha256": "cd" * 32})
    assert base != build_identity(INFO | {"plan": {"lanes": 2}})
    assert base != build_identity(INFO, counters=True)  # the wrapper serialises the counters
    assert 0 <= base < 1 << 32


# --- payload fields ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, 15),
    value=st.integers(-8, 7),
    step_end=st.integers(0, 1),
    seq_end=st.integers(0, 1),
)
def test_fields_round_trip(index, value, step_end, seq_end):
    f = Fields(INFO["inputs_payload"])
    beat = {"index": index, "value": value, "step_end": step_end, "seq_end": seq_end}
    word = f.pack(beat)
    assert 0 <= word < 1 << 10 and f.unpack(word) == beat


def test_sequence_bytes_are_the_item_beats():
    proto = BoardProtocol(INFO)
    x = np.zeros((3, 4), dtype=np.int64)
    x[0, 2] = -3
    x[2, 1], x[2, 3] = 5, 1
    steps = proto.step_messages(x)
    assert len(steps) == 3
    # step 0: one item (index 2, value -3), step 1: an empty step marker, step 2: two items
    assert steps[0] == bytes([0]) + (2 | (13 << 4) | 1 << 8).to_bytes(2, "little")
    assert steps[1] == bytes([0]) + (1 << 8).to_bytes(2, "little")
    assert steps[2][3:] == bytes([0]) + (3 | (1 << 4) | 1 << 8 | 1 << 9).to_bytes(2, "little")


def test_decode_knows_the_command_answers():
    ports = port_map(INFO, counters=True)
    data = bytes([IDENTIFY, 1, 2, 3, 4, SNAPSHOT]) + bytes(8) + bytes([0, 9, 0, 0, 0, 0])
    msgs, rest = decode_messages(ports, data)
    assert msgs == [("identify", 0x04030201), ("snapshot", 0), ("results", 9)] and rest == b""


def test_a_build_json_without_payload_fields_is_refused(tmp_path):
    (tmp_path / "build.json").write_text(
        json.dumps({k: v for k, v in INFO.items() if k != "results_payload"})
    )
    with pytest.raises(CodesignError, match="results_payload missing"):
        BoardProtocol.from_build(tmp_path)


# --- the driver against a scripted device on a pty ------------------------------------------------


class ScriptedDevice:
    """Answers every IDENTIFY byte with ``answer(request)`` on a pty (no accelerator)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.port = os.ttyname(slave)
        self._slave = slave
        self.received = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        os.set_blocking(self.master, False)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        os.close(self.master)
        os.close(self._slave)

    def _run(self):
        while not self._stop.is_set():
            try:
                data = os.read(self.master, 64)
            except (BlockingIOError, OSError):
                time.sleep(0.005)
                continue
            self.received += data
            for b in data:
                os.write(self.master, self.answer(b))


@pytest.fixture
def build(tmp_path):
    (tmp_path / "build.json").write_text(json.dumps(INFO))
    return tmp_path


def _identity_bytes(word: int) -> bytes:
    return bytes([IDENTIFY]) + word.to_bytes(4, "little")


def test_driver_identifies_and_reads_results_and_counters(build):
    ident = build_identity(INFO, counters=True)
    results = [
        ((5 & (1 << 28) - 1) | 0 << 28) << 0,
        ((-7 & (1 << 28) - 1) | 1 << 28),
        ((2) | 2 << 28 | 1 << 32 | 0 << 33),
    ]

    def answer(b):
        if b == IDENTIFY:
            return _identity_bytes(ident)
        if b == SNAPSHOT:
            return bytes([SNAPSHOT]) + (1234 | 7 << 32).to_bytes(8, "little")
        if b == 0:
            return b""
        return b""

    with ScriptedDevice(answer) as dev:
        board = Board.open(build, dev.port, timeout_s=1.0, drop_s=0.01)
        assert board.counters() == {"cycles": 1234, "sequences": 7}
        # a sequence's results come back once its last byte is in: script them on the step marker
        dev.answer = lambda b: (
            b"".join(bytes([0]) + w.to_bytes(5, "little") for w in results) if b == 0b11 else answer(b)
        )
        res = board.run_one(np.zeros((1, 15), dtype=np.int64))
        board.close()
    assert res.logits.tolist() == [5, -7, 2] and int(res.classes) == 0


def test_a_bitstream_without_counters_reads_none(build):
    ident = build_identity(INFO)
    with ScriptedDevice(lambda b: _identity_bytes(ident) if b == IDENTIFY else b"") as dev:
        with Board.open(build, dev.port, timeout_s=0.5, drop_s=0.01) as board:
            assert board.counters() == {}
        assert SNAPSHOT not in dev.received


@pytest.mark.parametrize(
    "answer, error, needle",
    [
        (lambda b: b"", BoardSilentError, "no reply within 0.5 s"),
        (lambda b: b"\x55\x55\x55", BoardGarbageError, "garbage on the line"),
        (lambda b: bytes([IDENTIFY, 1, 2]), BoardSilentError, "half a message"),
        (lambda b: _identity_bytes(0xDEADBEEF), BoardIdentityError, "another build .identity 0xdeadbeef"),
    ],
    ids=["silent", "garbage", "half-message", "wrong-build"],
)
def test_driver_fails_with_one_clear_error_within_the_timeout(build, answer, error, needle):
    with ScriptedDevice(answer) as dev:
        t0 = time.monotonic()
        with pytest.raises(error, match=needle) as info:
            Board.open(build, dev.port, timeout_s=0.5, drop_s=0.01)
        assert time.monotonic() - t0 < 3.0
    assert isinstance(info.value, CodesignError) and dev.port in str(info.value)


def test_a_port_that_does_not_exist(build, tmp_path):
    with pytest.raises(CodesignError, match="cannot open"):
        Board.open(build, str(tmp_path / "ttyNOPE"), timeout_s=0.2)


# --- the bridge's commands, in amaranth.sim ------------------------------------------------------


def _bridge_answers(host: bytes, identity: int, counters: int) -> bytes:
    ports = port_map(INFO, counters=True)
    bridge = AcceleratorBridge(ports, timeout=20, identity=identity)
    m = Module()
    m.submodules.bridge = bridge
    m.d.comb += bridge.design["counters"].eq(counters)
    sim = Simulator(m)
    sim.add_clock(1e-6)
    got = bytearray()

    async def tb(ctx):
        for b in host:
            ctx.set(bridge.rx.payload, b)
            ctx.set(bridge.rx.valid, 1)
            await ctx.tick().until(bridge.rx.ready)
            ctx.set(bridge.rx.valid, 0)
            await ctx.tick().repeat(3)
        await ctx.tick().repeat(200)

    async def sink(ctx):
        ctx.set(bridge.tx.ready, 1)
        async for _clk, _rst, valid, payload in ctx.tick().sample(bridge.tx.valid, bridge.tx.payload):
            if valid:
                got.append(payload)

    sim.add_testbench(tb)
    sim.add_testbench(sink, background=True)
    sim.run()
    return bytes(got)


def test_bridge_answers_identify_and_snapshot_between_messages_only():
    ident, counters = 0x89ABCDEF, 0x1122334455667788
    ports = port_map(INFO, counters=True)
    got = _bridge_answers(bytes([IDENTIFY, SNAPSHOT]), ident, counters)
    assert decode_messages(ports, got) == ([("identify", ident), ("snapshot", counters)], b"")
    # 0xFF inside a config message is payload, not a command: no answer
    got = _bridge_answers(bytes([1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0]), ident, counters)
    assert got == b""


# --- PLL dividers and boards ---------------------------------------------------------------------


def test_ice40_pll_matches_icepll():
    from codesign.fpga.pll import ice40_pll

    # icepll -i 12 -o 30 / -o 48 / -o 25
    assert ice40_pll(12, 30).params == {"DIVR": 0, "DIVF": 79, "DIVQ": 5, "FILTER_RANGE": 1}
    assert ice40_pll(12, 48).params == {"DIVR": 0, "DIVF": 63, "DIVQ": 4, "FILTER_RANGE": 1}
    pll = ice40_pll(12, 25)
    assert pll.f_out_mhz == pytest.approx(25.125) and pll.params["DIVF"] == 66


@settings(max_examples=40, deadline=None)
@given(f_in=st.sampled_from([12.0, 16.0, 25.0, 48.0]), f_out=st.floats(20, 200))
def test_ice40_pll_respects_its_ranges(f_in, f_out):
    from codesign.fpga.pll import ice40_pll

    pll = ice40_pll(f_in, f_out)
    p = pll.params
    f_pfd = f_in / (p["DIVR"] + 1)
    f_vco = f_pfd * (p["DIVF"] + 1)
    assert 10 <= f_pfd <= 133 and 533 <= f_vco <= 1066 and 1 <= p["DIVQ"] <= 6
    assert pll.f_out_mhz == pytest.approx(f_vco / 2 ** p["DIVQ"])
    assert pll.error < 0.02


@settings(max_examples=40, deadline=None)
@given(f_in=st.sampled_from([12.0, 25.0, 48.0]), f_out=st.floats(10, 240))
def test_ecp5_pll_respects_its_ranges(f_in, f_out):
    from codesign.fpga.pll import ecp5_pll

    pll = ecp5_pll(f_in, f_out)
    p = pll.params
    assert 3.125 <= f_in / p["CLKI_DIV"] <= 400 and 1 <= p["CLKFB_DIV"] <= 80
    assert 400 <= pll.f_out_mhz * p["CLKOP_DIV"] <= 800
    assert pll.f_out_mhz == pytest.approx(f_in * p["CLKFB_DIV"] / p["CLKI_DIV"])
    # at worst half a step of the finest grid: f_in / CLKI_DIV with the input divider at its largest
    # (below 240 MHz that grid is reachable with CLKFB_DIV <= 80 from 12, 25 and 48 MHz)
    assert abs(pll.f_out_mhz - f_out) <= 0.5 * f_in / int(f_in / 3.125) + 1e-9


def test_ecp5_pll_25_to_80_is_exact():
    from codesign.fpga.pll import ecp5_pll

    pll = ecp5_pll(25, 80)
    assert pll.f_out_mhz == 80 and pll.params["CLKFB_DIV"] * 25 == 80 * pll.params["CLKI_DIV"]


def test_pll_out_of_range_is_a_clear_error():
    from codesign.fpga.pll import ice40_pll

    with pytest.raises(CodesignError, match="16 .. 275 MHz"):
        ice40_pll(12, 5)


def test_boards_resolve_to_pins_and_a_pll():
    from codesign.fpga.boards import BOARDS
    from codesign.fpga.devices import constraints_dir
    from codesign.fpga.synth import SynthOptions, resolve_target

    for name in BOARDS:
        target = resolve_target(None, name, SynthOptions())
        assert (constraints_dir() / target.device.constraints).is_file(), name
        assert target.pll is not None and target.pll.error < 0.01
    ice = resolve_target(None, "icebreaker", SynthOptions())
    assert ice.clock_hz == 30e6 and ice.divisor == 260 and ice.device.nextpnr_args[:1] == ("--up5k",)
    same = resolve_target(None, "icebreaker", SynthOptions(freq_mhz=12))
    assert same.pll is None and same.divisor == 104
    crab = resolve_target(None, "orangecrab-25f", SynthOptions())
    assert "CSFBGA285" in crab.device.nextpnr_args
    with pytest.raises(CodesignError, match="not one of"):
        resolve_target(None, "arty", SynthOptions())
    with pytest.raises(CodesignError, match="not both"):
        resolve_target("up5k", "icebreaker", SynthOptions())


def test_wrapper_with_a_pll_instantiates_it():
    from codesign.fpga.pll import ecp5_pll, ice40_pll
    from codesign.fpga.wrapper import top_verilog

    ports = port_map(INFO)
    v = top_verilog(ports, 260, identity=1, pll=ice40_pll(12, 30))
    assert "SB_PLL40_PAD" in v and ".DIVF(32'd79)" in v and ".PACKAGEPIN(clk)" in v
    v = top_verilog(ports, 694, identity=1, pll=ecp5_pll(25, 80))
    assert "EHXPLLL" in v and ".CLKFB_DIV(32'd16)" in v


# --- flashing ------------------------------------------------------------------------------------


def test_flash_names_both_tools_when_neither_is_on_path(tmp_path, monkeypatch):
    from codesign.board.flash import flash

    run = tmp_path / "synth" / "icebreaker"
    run.mkdir(parents=True)
    (run / "top.bin").write_bytes(b"\0" * 16)
    (run / "summary.json").write_text(
        json.dumps(
            {
                "bitstream": "top.bin",
                "flash": ["openFPGALoader -b ice40_generic {bitstream}", "iceprog {bitstream}"],
            }
        )
    )
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(CodesignError, match="openFPGALoader or iceprog"):
        flash(tmp_path)


def test_flash_runs_the_first_programmer_found(tmp_path, monkeypatch):
    from codesign.board.flash import flash

    run = tmp_path / "synth" / "icebreaker"
    run.mkdir(parents=True)
    (run / "top.bin").write_bytes(b"\0" * 16)
    (run / "summary.json").write_text(
        json.dumps(
            {
                "bitstream": "top.bin",
                "flash": ["openFPGALoader -b ice40_generic {bitstream}", "iceprog {bitstream}"],
            }
        )
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv"
    tool = bin_dir / "iceprog"
    tool.write_text(f'#!/bin/sh\necho "$@" > {log}\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert flash(tmp_path).startswith("iceprog")
    assert log.read_text().strip() == str(run / "top.bin")
    with pytest.raises(CodesignError, match="no bitstream for 'ulx3s-85f'"):
        flash(tmp_path, "ulx3s-85f")


def test_bridge_without_counters_leaves_them_unconnected():
    bridge = AcceleratorBridge(port_map(INFO), identity=1)
    bridge._MustUse__silence = True  # inspected, not elaborated
    assert "counters" not in bridge.design and "counters" in port_map(INFO, counters=True).snapshot_port.name


# --- the link's share of the latency -------------------------------------------------------------


def test_link_latency_counts_items_markers_and_results():
    from codesign.report.link import link_latency

    seqs = [np.zeros((4, 15), dtype=np.int64)]
    seqs[0][0, :3] = 1  # step 0: three items; steps 1-3: a marker each
    link = link_latency(INFO, seqs, baud=100_000, cycles_per_step=120, clock_mhz=12, step_rate=100)
    # 6 messages of 1 + 2 bytes over 4 steps; 3 result groups of 1 + 5 bytes per sequence
    assert link["bytes_per_step_in"] == 6 * 3 / 4 and link["bytes_per_step_out"] == 3 * 6 / 4
    assert link["link_us_per_step"] == pytest.approx(4.5 * 10 / 100_000 * 1e6)
    assert link["compute_us_per_step"] == 10 and link["bottleneck"] == "link"
    assert link["realtime_margin"] == pytest.approx(10_000 / 450)
    assert link["margin_at_faster_bauds"]["3000000"] == pytest.approx(10_000 / 15)
    fast = link_latency(INFO, seqs, baud=100_000, cycles_per_step=12_000, clock_mhz=12, step_rate=100)
    assert fast["bottleneck"] == "accelerator" and fast["realtime_margin"] == 10


# --- the command line ----------------------------------------------------------------------------


def test_board_command_errors_are_one_line_exit_2(build, tmp_path):
    import shutil

    from typer.testing import CliRunner

    from codesign.cli import app

    for name in ("manifest.yaml", "weights.npz"):
        shutil.copyfile(ROOT / "models" / "bundles" / "copy_first_cmru" / name, build / name)
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 15), dtype=np.int64))
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    runner = CliRunner()
    with ScriptedDevice(lambda b: b"") as dev:
        for args, needle in (
            (["--inputs", str(tmp_path / "missing.npy")], "--inputs file not found"),
            (["--inputs", str(tmp_path / "bad.npy")], "not a readable .npy"),
            (["--inputs", str(tmp_path / "x.npy"), "--timeout", "0.3"], "no reply within 0.3 s"),
        ):
            res = runner.invoke(app, ["board", str(build), "--port", dev.port, *args])
            assert res.exit_code == 2, res.output
            assert needle in res.output and res.output.strip().count("\n") <= 1, res.output
