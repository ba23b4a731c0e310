"""Bus faces: the accelerator behind standard buses, for a system-on-chip to instantiate.

``codesign rtl --bus axi`` wraps :class:`~codesign.hw.accelerator.Accelerator` in
:class:`AxiFace`:

* an AXI4-Stream slave ``s_axis_*`` for the inputs: one beat per non-zero input item (``TDATA``:
  index and value), ``TLAST`` on the last beat of a step, ``TUSER`` on the last beat of a sequence;
* an AXI4-Stream master ``m_axis_*`` for the results: one beat per class group (``TDATA``: logits,
  group, argmax), ``TLAST`` on the last beat of a result, ``TUSER`` on the last result of a
  sequence;
* an AXI4-Lite slave ``s_axil_*`` (32-bit data) with the register file :func:`register_map`:
  identity, information and status words, the configuration writes that load parameters, and one
  read-only register per counter (instead of the stream face's wide ``counters`` port).

The clock is ``aclk``; ``aresetn`` is the AXI reset, active low and synchronous. The layer traces
stay inside. ``build.json`` records the register map and the ``TDATA`` layouts
(``codesign.hw.build``), and ``docs/integration.md`` renders them.
"""

from __future__ import annotations

import hashlib
import json

from amaranth.hdl import Cat, ClockDomain, Const, Module, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from codesign.hw.accelerator import WEIGHT_MODES, Accelerator
from codesign.hw.plan import index_bits
from codesign.hw.signature import class_index_bits

__all__ = ["BUSES", "AxiFace", "Register", "identity_word", "info_word", "register_map"]

BUSES = ("stream", "axi")
"""``stream``: the accelerator's own valid/ready ports; ``axi``: :class:`AxiFace`."""

COUNTER_BASE = 0x100
"""Address of the first counter register; counter ``i`` (``plan.counters`` order) is at ``+ 4 i``."""

OKAY, SLVERR = 0b00, 0b10


class Register(dict):
    """One register of the map: ``address``, ``name``, ``access`` (RO, RW, WO), ``reset``,
    ``bits`` (``"31:0"``) and ``description`` (a plain dict, as ``build.json`` stores it)."""


def _register(
    address: int, name: str, access: str, reset: int | None, bits: str, description: str
) -> Register:
    return Register(
        address=address, name=name, access=access, reset=reset, bits=bits, description=description
    )


def info_word(plan, weights: str) -> int:
    """The ``INFO`` register: lanes, counters and the weights mode (each field saturates)."""
    return min(plan.lanes, 255) | min(len(plan.counters), 255) << 8 | WEIGHT_MODES.index(weights) << 16


def register_map(plan, identity: int, weights: str) -> list[Register]:
    """The AXI4-Lite registers of a build of ``plan`` (byte addresses, 32-bit words)."""
    spram = plan.spram
    regs = [
        _register(
            0x00, "ID", "RO", identity, "31:0", "identity word of the build (build.json: axi.identity)"
        ),
        _register(
            0x04,
            "INFO",
            "RO",
            info_word(plan, weights),
            "31:0",
            "[7:0] lanes P, [15:8] counters, [17:16] weights mode (0 baked, 1 runtime, 2 frozen, 3 spram)",
        ),
        _register(
            0x08,
            "STATUS",
            "RO",
            0 if spram else 1,
            "2:0",
            "[0] loaded: inputs are accepted (0 on a --weights spram build until CONTROL.loaded is written); "
            "[1] a result beat waits (m_axis_tvalid); [2] s_axis_tready",
        ),
        _register(
            0x0C,
            "CONTROL",
            "WO",
            0,
            "0:0",
            "[0] loaded: write 1 once every configuration write of the weights is done"
            + (
                " (required: this build's single-port RAMs hold no values until loaded)"
                if spram
                else " (no effect)"
            ),
        ),
        _register(
            0x10, "CFG_TARGET", "RW", 0, f"{plan.config_target_bits - 1}:0", "memory id of the next write"
        ),
        _register(
            0x14, "CFG_ADDR", "RW", 0, f"{plan.config_addr_bits - 1}:0", "word address of the next write"
        ),
        _register(0x18, "CFG_ELEM", "RW", 0, f"{plan.config_elem_bits - 1}:0", "element of the word"),
        _register(
            0x1C,
            "CFG_VALUE",
            "WO",
            0,
            "31:0",
            "writing it loads the value (signed) into element CFG_ELEM of word CFG_ADDR of memory CFG_TARGET",
        ),
    ]
    for i, name in enumerate(plan.counters):
        regs.append(
            _register(
                COUNTER_BASE + 4 * i,
                f"CNT_{name.upper()}",
                "RO",
                0,
                f"{plan.counter_bits - 1}:0",
                f"counter {name} (free-running from reset, wraps)",
            )
        )
    return regs


def identity_word(plan_json: dict, weights: str, bundle_weights_sha256: str | None, top: str) -> int:
    """The 32-bit identity of an AXI build: the first 4 bytes (little-endian) of the SHA-256 of the
    plan, the top's name and, unless the weights are loaded at run time, the bundle's weights."""
    key = {"plan": plan_json, "top": top, "weights": weights}
    if weights != "runtime":
        key["bundle_weights_sha256"] = bundle_weights_sha256
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _bytes(width: int) -> int:
    return -(-width // 8) * 8


def input_layout(plan) -> data.StructLayout:
    """``s_axis_tdata``: the index and value of one non-zero input (zero-padded to whole bytes)."""
    return data.StructLayout(
        {"index": unsigned(index_bits(plan.input_size)), "value": signed(plan.input_bits)}
    )


def result_layout(plan) -> data.StructLayout:
    """``m_axis_tdata``: the logits of one class group, the group, the argmax (on the last beat)."""
    readout = plan.readout
    return data.StructLayout(
        {
            "logits": data.ArrayLayout(signed(readout.acc_bits), readout.lanes),
            "group": unsigned(index_bits(readout.groups)),
            "class_index": unsigned(class_index_bits(readout.size)),
        }
    )


def address_bits(plan) -> int:
    """Width of ``s_axil_awaddr`` / ``araddr``: the counters' last byte address fits."""
    top = COUNTER_BASE + 4 * max(len(plan.counters), 1)
    return max(9, (top - 1).bit_length())


class AxiFace(wiring.Component):
    """``accelerator`` behind AXI4-Stream (inputs, results) and AXI4-Lite (registers).

    Parameters
    ----------
    accelerator : Accelerator
        The core; its ``config`` stream is driven by the ``CFG_*`` registers, its counters are
        read through the ``CNT_*`` registers.
    identity : int
        The ``ID`` register's value (:func:`identity_word`).
    """

    def __init__(self, accelerator: Accelerator, identity: int) -> None:
        self.core = accelerator
        self.identity = identity
        plan = accelerator.plan
        self.input_layout, self.result_layout = input_layout(plan), result_layout(plan)
        self.registers = register_map(plan, identity, accelerator.weights_mode)
        a = address_bits(plan)
        super().__init__(
            {
                "aclk": In(1),
                "aresetn": In(1),
                "s_axis_tdata": In(_bytes(self.input_layout.size)),
                "s_axis_tvalid": In(1),
                "s_axis_tready": Out(1),
                "s_axis_tlast": In(1),
                "s_axis_tuser": In(1),
                "m_axis_tdata": Out(_bytes(self.result_layout.size)),
                "m_axis_tvalid": Out(1),
                "m_axis_tready": In(1),
                "m_axis_tlast": Out(1),
                "m_axis_tuser": Out(1),
                "s_axil_awaddr": In(a),
                "s_axil_awvalid": In(1),
                "s_axil_awready": Out(1),
                "s_axil_wdata": In(32),
                "s_axil_wstrb": In(4),
                "s_axil_wvalid": In(1),
                "s_axil_wready": Out(1),
                "s_axil_bresp": Out(2),
                "s_axil_bvalid": Out(1),
                "s_axil_bready": In(1),
                "s_axil_araddr": In(a),
                "s_axil_arvalid": In(1),
                "s_axil_arready": Out(1),
                "s_axil_rdata": Out(32),
                "s_axil_rresp": Out(2),
                "s_axil_rvalid": Out(1),
                "s_axil_rready": In(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd = ClockDomain("sync")
        m.d.comb += [cd.clk.eq(self.aclk), cd.rst.eq(~self.aresetn)]
        m.submodules.core = core = self.core
        loaded = Signal(init=0 if core.plan.spram else 1)
        self._streams(m, core, loaded)
        self._lite(m, core, loaded)
        return m

    def _streams(self, m: Module, core: Accelerator, loaded: Signal) -> None:
        item = data.View(self.input_layout, self.s_axis_tdata[: self.input_layout.size])
        m.d.comb += [
            core.inputs.payload.index.eq(item.index),
            core.inputs.payload.value.eq(item.value),
            core.inputs.payload.step_end.eq(self.s_axis_tlast),
            core.inputs.payload.seq_end.eq(self.s_axis_tuser),
            core.inputs.valid.eq(self.s_axis_tvalid & loaded),
            self.s_axis_tready.eq(core.inputs.ready & loaded),
        ]
        result = data.View(self.result_layout, self.m_axis_tdata[: self.result_layout.size])
        r = core.results.payload
        m.d.comb += [
            result.logits.eq(r.logits),
            result.group.eq(r.group),
            result.class_index.eq(r.class_index),
            self.m_axis_tlast.eq(r.final),
            self.m_axis_tuser.eq(r.seq_end),
            self.m_axis_tvalid.eq(core.results.valid),
            core.results.ready.eq(self.m_axis_tready),
        ]

    def _lite(self, m: Module, core: Accelerator, loaded: Signal) -> None:
        """The AXI4-Lite slave: one outstanding write and one outstanding read."""
        plan = core.plan
        aw_have, aw_addr = Signal(), Signal(len(self.s_axil_awaddr))
        w_have, w_data, w_strb = Signal(), Signal(32), Signal(4)
        bvalid, bresp, rvalid, rresp, rdata = Signal(), Signal(2), Signal(), Signal(2), Signal(32)
        m.d.comb += [
            self.s_axil_awready.eq(~aw_have),
            self.s_axil_wready.eq(~w_have),
            self.s_axil_bvalid.eq(bvalid),
            self.s_axil_bresp.eq(bresp),
            self.s_axil_arready.eq(~rvalid),
            self.s_axil_rvalid.eq(rvalid),
            self.s_axil_rresp.eq(rresp),
            self.s_axil_rdata.eq(rdata),
        ]
        with m.If(self.s_axil_awvalid & ~aw_have):
            m.d.sync += [aw_have.eq(1), aw_addr.eq(self.s_axil_awaddr)]
        with m.If(self.s_axil_wvalid & ~w_have):
            m.d.sync += [w_have.eq(1), w_data.eq(self.s_axil_wdata), w_strb.eq(self.s_axil_wstrb)]
        with m.If(bvalid & self.s_axil_bready):
            m.d.sync += bvalid.eq(0)
        cfg = {
            "target": Signal(plan.config_target_bits),
            "addr": Signal(plan.config_addr_bits),
            "elem": Signal(plan.config_elem_bits),
        }
        cfg_valid, cfg_value = Signal(), Signal(32)
        m.d.sync += cfg_valid.eq(0)
        m.d.comb += [
            core.config.valid.eq(cfg_valid),
            core.config.payload.target.eq(cfg["target"]),
            core.config.payload.addr.eq(cfg["addr"]),
            core.config.payload.elem.eq(cfg["elem"]),
            core.config.payload.value.eq(cfg_value),
        ]
        mask = Cat(*(w_strb[i].replicate(8) for i in range(4)))

        def merged(old):
            return ((old & ~mask) | (w_data & mask))[: len(old)]

        with m.If(aw_have & w_have & ~bvalid):
            m.d.sync += [aw_have.eq(0), w_have.eq(0), bvalid.eq(1), bresp.eq(OKAY)]
            with m.Switch(aw_addr[2:]):
                with m.Case(0x0C >> 2):
                    with m.If(w_strb[0] & w_data[0]):
                        m.d.sync += loaded.eq(1)
                for address, key in ((0x10, "target"), (0x14, "addr"), (0x18, "elem")):
                    with m.Case(address >> 2):
                        m.d.sync += cfg[key].eq(merged(cfg[key]))
                with m.Case(0x1C >> 2):
                    m.d.sync += [cfg_value.eq(merged(Const(0, 32))), cfg_valid.eq(1)]
                with m.Default():
                    m.d.sync += bresp.eq(SLVERR)
        self._reads(m, core, loaded, cfg, (rvalid, rresp, rdata))

    def _reads(self, m: Module, core: Accelerator, loaded: Signal, cfg: dict, out) -> None:
        rvalid, rresp, rdata = out
        plan = core.plan
        with m.If(rvalid & self.s_axil_rready):
            m.d.sync += rvalid.eq(0)
        info = Const(info_word(plan, core.weights_mode), 32)
        status = Cat(loaded, core.results.valid, self.s_axis_tready)
        with m.If(self.s_axil_arvalid & ~rvalid):
            m.d.sync += [rvalid.eq(1), rresp.eq(OKAY), rdata.eq(0)]
            with m.Switch(self.s_axil_araddr[2:]):
                for address, value in (
                    (0x00, Const(self.identity, 32)),
                    (0x04, info),
                    (0x08, status),
                    (0x10, cfg["target"]),
                    (0x14, cfg["addr"]),
                    (0x18, cfg["elem"]),
                ):
                    with m.Case(address >> 2):
                        m.d.sync += rdata.eq(value)
                with m.Case(0x0C >> 2, 0x1C >> 2):
                    pass  # write-only: reads 0
                for i, name in enumerate(plan.counters):
                    with m.Case((COUNTER_BASE >> 2) + i):
                        m.d.sync += rdata.eq(core.counters[name])
                with m.Default():
                    m.d.sync += rresp.eq(SLVERR)
