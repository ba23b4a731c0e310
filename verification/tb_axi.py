"""cocotb test: the AXI face of a build (``codesign rtl --bus axi``) driven by cocotbext-axi.

The design's top is :class:`codesign.hw.faces.AxiFace`: ``aclk``, ``aresetn``, the AXI4-Stream
slave ``s_axis_*`` (inputs), the AXI4-Stream master ``m_axis_*`` (results) and the AXI4-Lite
slave ``s_axil_*`` (registers). cocotbext-axi's ``AxiStreamSource``, ``AxiStreamSink`` and
``AxiLiteMaster`` drive them, each channel with random stalls (a pause generator on TVALID of the
inputs, on TREADY of the results, and on every AXI4-Lite channel: AW, W, B, AR, R).

The test reads the identity and information words, checks byte writes (``WSTRB``), loads the weights through the ``CFG_*``
registers where the build takes them at run time (a ``--weights spram`` build first shows that
it refuses inputs until ``CONTROL.loaded``), sends random sequences (one AXI4-Stream packet per
step), compares every result beat with the golden model bit-exact, and reads the counters of
sequences and results back through AXI4-Lite.

Settings come from ``CODESIGN_AXI_JOB`` (JSON: build folder, sequences, seed, longest sequence);
the result is written to ``CODESIGN_RESULT``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, with_timeout
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)

from codesign.board.fields import Fields
from codesign.board.protocol import plan_options
from codesign.bundle import load_bundle
from codesign.golden import run_golden
from codesign.hw.images import config_beats
from codesign.hw.plan import plan_accelerator
from codesign.hw.pysim import item_beats
from codesign.verify.vectors import random_vectors

PERIOD_NS = 10


def stalls(rng: np.random.Generator, rate: float):
    """A pause generator: True (stall) with probability ``rate`` each cycle."""
    while True:
        yield bool(rng.random() < rate)


class AxiHost:
    """The cocotbext-axi models on the face's three interfaces, with random stalls on each channel."""

    def __init__(self, dut, info: dict, rng: np.random.Generator) -> None:
        axi = info["axi"]
        self.info, self.axi = info, axi
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn, False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn, False)
        self.lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.aclk, dut.aresetn, False)
        self.source.set_pause_generator(stalls(rng, 0.3))
        self.sink.set_pause_generator(stalls(rng, 0.4))
        w, r = self.lite.write_if, self.lite.read_if
        for channel in (w.aw_channel, w.w_channel, w.b_channel, r.ar_channel, r.r_channel):
            channel.set_pause_generator(stalls(rng, 0.3))
        self.in_bytes = axi["s_axis_tdata_bits"] // 8
        self.out_bytes = axi["m_axis_tdata_bits"] // 8
        self.in_fields = Fields(axi["s_axis_tdata"])
        self.out_fields = Fields(axi["m_axis_tdata"])
        self.registers = {reg["name"]: reg["address"] for reg in axi["registers"]}

    async def read(self, name: str) -> int:
        resp = await self.lite.read(self.registers[name], 4)
        assert resp.resp == 0, f"read of {name}: response {resp.resp}"
        return int.from_bytes(resp.data, "little")

    async def write(self, name: str, value: int) -> None:
        resp = await self.lite.write(self.registers[name], (value & 0xFFFFFFFF).to_bytes(4, "little"))
        assert resp.resp == 0, f"write of {name}: response {resp.resp}"

    def step_frames(self, seq: np.ndarray) -> list[AxiStreamFrame]:
        """One packet per step: TLAST on the step's last item, TUSER on the sequence's last item."""
        frames, data, user = [], b"", []
        for beat in item_beats([seq]):
            word = self.in_fields.pack({"index": beat["index"], "value": beat["value"]})
            data += word.to_bytes(self.in_bytes, "little")
            user += [beat["seq_end"]] * self.in_bytes
            if beat["step_end"]:
                frames.append(AxiStreamFrame(data, tuser=user))
                data, user = b"", []
        return frames

    def beats(self, frame: AxiStreamFrame) -> list[dict]:
        """A result packet's beats, decoded, each with the TUSER of its last byte."""
        users = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser] * len(frame.tdata)
        out = []
        for k in range(0, len(frame.tdata), self.out_bytes):
            word = int.from_bytes(bytes(frame.tdata[k : k + self.out_bytes]), "little")
            out.append(self.out_fields.unpack(word) | {"seq_end": int(users[k + self.out_bytes - 1])})
        return out


def expected_results(bundle, plan, seq: np.ndarray) -> list[tuple[list[int], int, int]]:
    """``(logits, class, last of the sequence)`` of every result the golden model gives ``seq``."""
    g = run_golden(bundle, seq[None])
    if plan.per_step:
        steps = len(g.classes[0])
        return [(g.logits[0][t].tolist(), int(g.classes[0][t]), int(t == steps - 1)) for t in range(steps)]
    return [(g.logits[0].tolist(), int(g.classes[0]), 1)]


def compare(host: AxiHost, plan, frame: AxiStreamFrame, want: tuple[list[int], int, int]) -> str | None:
    """None where the result packet equals the golden result, else what differs."""
    ro = plan.readout
    beats = host.beats(frame)
    if len(beats) != ro.groups:
        return f"{len(beats)} beats, expected {ro.groups}"
    logits, cls, last = want
    got = []
    for grp, beat in enumerate(beats):
        if beat["group"] != grp:
            return f"beat {grp} carries group {beat['group']}"
        got += [beat[f"logits[{i}]"] for i in range(min(ro.lanes, ro.size - grp * ro.lanes))]
    if got != logits:
        return f"logits {got} != golden {logits}"
    if beats[-1]["class_index"] != cls:
        return f"class {beats[-1]['class_index']} != golden {cls}"
    if any(b["seq_end"] != last for b in beats):
        return f"TUSER {[b['seq_end'] for b in beats]}, expected {last}"
    return None


async def check_strobes(host: AxiHost, plan) -> None:
    """``WSTRB`` selects bytes: a one-byte write to CFG_ADDR changes that byte only (within the
    register's width), and the register reads back what was written."""
    mask = (1 << plan.config_addr_bits) - 1
    await host.write("CFG_ADDR", 0x5A5A5A5A)
    resp = await host.lite.write(host.registers["CFG_ADDR"] + 1, b"\xc3")  # WSTRB 0b0010
    assert resp.resp == 0, f"a byte write answers {resp.resp}"
    got = await host.read("CFG_ADDR")
    assert got == 0x5A5AC35A & mask, (
        f"CFG_ADDR after a byte write: 0x{got:x}, expected 0x{0x5A5AC35A & mask:x}"
    )
    await host.write("CFG_ADDR", 0)


async def load_weights(dut, host: AxiHost, bundle, plan, record: dict) -> None:
    """A runtime or spram build's parameters through the CFG_* registers; a spram build must
    refuse inputs before ``CONTROL.loaded`` and accept them after."""
    weights = host.info["weights"]
    if weights not in ("runtime", "spram"):
        return
    if weights == "spram":
        assert (await host.read("STATUS")) & 1 == 0, "a spram build reports loaded before its weights"
        probe = AxiStreamFrame(bytes(host.in_bytes), tuser=[0] * host.in_bytes)
        await host.source.send(probe)
        await ClockCycles(dut.aclk, 50)
        assert int(dut.s_axis_tready.value) == 0, "a spram build accepts inputs before its weights"
        host.source.clear()
        record["refused_before_load"] = True
    last = {}
    for t, a, e, v in config_beats(bundle, plan, skip_zeros=weights == "runtime"):
        for name, value in (("CFG_TARGET", t), ("CFG_ADDR", a), ("CFG_ELEM", e)):
            if last.get(name) != value:
                await host.write(name, value)
                last[name] = value
        await host.write("CFG_VALUE", v)
        record["config_writes"] += 1
    await host.write("CONTROL", 1)
    assert (await host.read("STATUS")) & 1 == 1, "STATUS.loaded is 0 after CONTROL.loaded"


async def run_sequences(host: AxiHost, bundle, plan, sequences: list[np.ndarray], record: dict) -> None:
    """Send every sequence's steps, then compare each result packet with the golden model's."""
    wanted = [want for seq in sequences for want in expected_results(bundle, plan, seq)]
    for seq in sequences:
        for frame in host.step_frames(seq):
            await host.source.send(frame)
    limit = 2000 + 400 * sum(len(s) for s in sequences) * max(e.groups for e in plan.engines)
    for i, want in enumerate(wanted):
        frame = await with_timeout(host.sink.recv(), limit * PERIOD_NS, "ns")
        diff = compare(host, plan, frame, want)
        if diff is not None:
            record["mismatches"] += 1
            record["first_mismatch"] = record["first_mismatch"] or f"result {i}: {diff}"
    record["sequences"] += len(sequences)
    record["results"] += len(wanted)
    record["steps"] += sum(len(s) for s in sequences)


@cocotb.test()
async def sequences_over_axi(dut):
    """Identity, weights, random sequences with stalls on every channel, counters: bit-exact."""
    job = json.loads(Path(os.environ["CODESIGN_AXI_JOB"]).read_text())
    build = Path(job["build"])
    info = json.loads((build / "build.json").read_text())
    bundle = load_bundle(build)
    plan = plan_accelerator(bundle.manifest, int(info["lanes"]), **plan_options(info))
    rng = np.random.default_rng(job["seed"])
    record = {"sequences": 0, "steps": 0, "results": 0, "config_writes": 0, "mismatches": 0}
    record["first_mismatch"] = None
    dut.aresetn.value = 0
    Clock(dut.aclk, PERIOD_NS, unit="ns").start()
    host = AxiHost(dut, info, rng)
    try:
        await ClockCycles(dut.aclk, 4)
        dut.aresetn.value = 1
        await ClockCycles(dut.aclk, 2)
        assert await host.read("ID") == info["axi"]["identity"], "ID is not build.json's axi.identity"
        info_reg = next(r for r in info["axi"]["registers"] if r["name"] == "INFO")
        assert await host.read("INFO") == info_reg["reset"], "INFO differs from the register map"
        bad = await host.lite.read(0x0FC, 4)
        assert bad.resp == 0b10, f"an unmapped address answers {bad.resp}, expected SLVERR"
        await check_strobes(host, plan)
        await load_weights(dut, host, bundle, plan, record)
        sequences = random_vectors(
            bundle, vectors=job["vectors"], seed=job["seed"], max_steps=job["max_steps"]
        )
        await run_sequences(host, bundle, plan, sequences, record)
        if "sequences" in plan.counters:
            record["counted"] = {
                "sequences": await host.read("CNT_SEQUENCES"),
                "results": await host.read("CNT_RESULTS"),
            }
            assert record["counted"] == {"sequences": record["sequences"], "results": record["results"]}, (
                f"counters {record['counted']} after {record['sequences']} sequences, {record['results']} results"
            )
    except AssertionError as err:
        record["error"] = str(err)
        record["first_mismatch"] = record["first_mismatch"] or str(err)
    finally:
        record["cycles"] = int(get_sim_time("ns")) // PERIOD_NS
        Path(os.environ["CODESIGN_RESULT"]).write_text(json.dumps(record, indent=1) + "\n")
    assert record["mismatches"] == 0 and "error" not in record, record["first_mismatch"]
