"""Elaborate the accelerator for a bundle into a self-contained build directory.

A build directory holds everything a simulator or an FPGA flow needs and nothing that points back
into the source tree::

    accelerator.v     generated Verilog (top module named by ``--name``, by default the bundle's
                      name as a Verilog identifier; every other module's name starts with the
                      top's and a dot; ports ``clk`` and ``rst`` (synchronous, active high) plus
                      the signature's members: ``inputs``, ``config``, ``results`` streams,
                      ``counters``, ``trace_<l>``)
    manifest.yaml     copy of the bundle it was built from (the testbench's golden model reads it)
    weights.npz
    build.json        top name, lanes, weights mode, the plan (engines, memories with their
                      configuration ids, counters), ports, payload field offsets, bundle name,
                      codesign version, sha256 of accelerator.v and of the bundle's shape
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

import codesign
from codesign.atomic import atomic_dir
from codesign.bundle import load_bundle
from codesign.bundle.cells import CELLS
from codesign.bundle.io import MANIFEST, WEIGHTS
from codesign.errors import CodesignError
from codesign.hw.accelerator import WEIGHT_MODES, Accelerator
from codesign.hw.faces import BUSES, AxiFace, identity_word
from codesign.hw.plan import AcceleratorPlan

__all__ = [
    "BUILD_JSON",
    "TOP",
    "VERILOG",
    "build_rtl",
    "build_top",
    "check_module_name",
    "module_name",
    "payload_fields",
    "plan_summary",
]

TOP = "accelerator"
"""The top module's name in a ``build.json`` that records none (a build made before ``--name``)."""
VERILOG = "accelerator.v"
BUILD_JSON = "build.json"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NAME = 64
"""The longest module name ``--name`` accepts (every submodule's name is this plus its path)."""
# Verilog-2005 and SystemVerilog-2017 keywords a module may not be named after (IEEE 1800 Annex B)
_KEYWORDS = frozenset(
    """accept_on alias always always_comb always_ff always_latch and assert assign assume automatic
    before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle
    checker class clocking cmos config const constraint context continue cover covergroup coverpoint
    cross deassign default defparam design disable dist do edge else end endcase endchecker
    endclass endclocking endconfig endfunction endgenerate endgroup endinterface endmodule
    endpackage endprimitive endprogram endproperty endspecify endsequence endtable endtask enum
    event eventually expect export extends extern final first_match for force foreach forever
    fork forkjoin function generate genvar global highz0 highz1 if iff ifnone ignore_bins
    illegal_bins implements implies import incdir include initial inout input inside instance int
    integer interconnect interface intersect join join_any join_none large let liblist library
    local localparam logic longint macromodule matches medium modport module nand negedge
    nettype new nexttime nmos nor noshowcancelled not notif0 notif1 null or output package packed
    parameter pmos posedge primitive priority program property protected pull0 pull1 pulldown
    pullup pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase randsequence rcmos
    real realtime ref reg reject_on release repeat restrict return rnmos rpmos rtran rtranif0
    rtranif1 s_always s_eventually s_nexttime s_until s_until_with scalared sequence shortint
    shortreal showcancelled signed small soft solve specify specparam static string strong
    strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on table tagged task
    this throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0 tri1 triand trior
    trireg type typedef union unique unique0 unsigned until until_with untyped use uwire var
    vectored virtual void wait wait_order wand weak weak0 weak1 while wildcard wire with within
    wor xnor xor""".split()
)


def check_module_name(name: str) -> str:
    """``name`` if it can name the top module (a plain Verilog identifier of at most
    :data:`MAX_NAME` characters and no keyword); raises :class:`CodesignError` otherwise."""
    allowed = (
        f"a module name is a letter or _ followed by letters, digits or _ (at most {MAX_NAME} "
        "characters) and no Verilog or SystemVerilog keyword"
    )
    if not isinstance(name, str) or _IDENTIFIER.fullmatch(name) is None or len(name) > MAX_NAME:
        raise CodesignError(f"--name {name!r}: {allowed}")
    if name in _KEYWORDS:
        raise CodesignError(f"--name {name!r} is a Verilog keyword: {allowed}")
    return name


def module_name(bundle_name: str) -> str:
    """The default top module name of a bundle's build: ``bundle_name`` with every character
    outside ``[A-Za-z0-9_]`` replaced by ``_``, prefixed with ``m_`` where it starts with a digit
    (or is empty), suffixed with ``_top`` where it is a keyword, cut to :data:`MAX_NAME`."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", bundle_name)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = f"m_{name}"
    name = name[:MAX_NAME]
    if name in _KEYWORDS:
        name = f"{name}_top"
    return check_module_name(name)


def build_top(build: Path) -> str:
    """The top module's name of the build folder ``build`` (its ``build.json``'s ``top``; a
    build without one is named :data:`TOP`)."""
    top = _read_json(Path(build) / BUILD_JSON).get("top", TOP)
    if not isinstance(top, str) or _IDENTIFIER.fullmatch(top) is None:
        raise CodesignError(f"top is {top!r}, not a Verilog identifier", path=Path(build) / BUILD_JSON)
    return top


def payload_fields(layout, prefix: str = "", offset: int = 0) -> dict[str, dict[str, int]]:
    """Flat ``{field: {"offset", "width", "signed"}}`` of a struct layout, arrays as ``name[i]``."""
    out: dict[str, dict[str, int]] = {}
    for name, fld in layout:
        shape = fld.shape
        key = f"{prefix}{name}"
        if hasattr(shape, "elem_shape"):
            elem = shape.elem_shape
            if hasattr(elem, "size") and not hasattr(elem, "width"):
                width = elem.size
                for i in range(shape.length):
                    out |= payload_fields(elem, f"{key}[{i}].", offset + fld.offset + i * width)
                continue
            width = elem.width
            for i in range(shape.length):
                out[f"{key}[{i}]"] = {
                    "offset": offset + fld.offset + i * width,
                    "width": width,
                    "signed": int(elem.signed),
                }
        elif hasattr(shape, "size") and not hasattr(shape, "width"):
            out |= payload_fields(shape, f"{key}.", offset + fld.offset)
        else:
            out[key] = {"offset": offset + fld.offset, "width": fld.width, "signed": int(shape.signed)}
    return out


def _ports(
    component: wiring.Component, clock: tuple[str, ...] = ("clk", "rst")
) -> dict[str, dict[str, object]]:
    """The top's Verilog ports: ``clock`` (the implicit domain's, as Amaranth adds them) and the
    signature's members."""
    ports: dict[str, dict[str, object]] = {name: {"direction": "in", "width": 1} for name in clock}
    for path, member, value in component.signature.flatten(component):
        ports["__".join(map(str, path))] = {
            "direction": "in" if member.flow == wiring.In else "out",
            "width": len(value.as_value() if hasattr(value, "as_value") else value),
        }
    return ports


_HUGE_INIT = re.compile(
    r'(\(\* ram_style = "huge" \*\)\n\s*reg \[\d+:0\] \S+\s+\[\d+:0\];\n)\s*initial begin\n(?:\s*\S+\s*\[\d+\] = [^;\n]*;\n)*\s*end\n'
)


def drop_huge_init(text: str, plan: AcceleratorPlan) -> str:
    """``text`` without the initial values of the memories mapped to single-port RAMs.

    Amaranth gives every memory an initial value (zeros), and yosys maps no memory with one to
    an SB_SPRAM256KA, which has none: the weights of ``--weights spram`` arrive through
    ``config``. Raises if a memory of style ``huge`` was not found (the Verilog changed shape)."""
    huge = sum(1 for mem in plan.memories if mem.style == "huge")
    text, n = _HUGE_INIT.subn(r"\1", text)
    if n != huge:  # pragma: no cover - guards against a change of Amaranth's Verilog output
        raise CodesignError(f"found {n} initialised single-port memories in the Verilog, the plan has {huge}")
    return text


def plan_summary(plan: AcceleratorPlan) -> dict:
    """The plan as plain JSON: engines, memories (with configuration ids) and counters."""
    engines = []
    for e in plan.engines:
        info = {
            "name": e.name,
            "kind": e.kind,
            "size": e.size,
            "inputs": e.inputs,
            "lanes": e.lanes,
            "groups": e.groups,
            "mode": e.mode,
            "emit": e.emit,
            "matrices": list(e.matrices),
            "item_bits": e.item_bits,
            "acc_bits": e.acc_bits,
            "output_bits": e.output_bits,
            "state_bits": e.state_bits,
            "multiplier": e.multiplier,
            "hard_products": e.hard_products if e.multiplier == "mixed" else None,
            "lane_multipliers": e.products,
            "passes": e.passes,
            "update_units": (1 if e.shared_update else e.lanes) if e.kind in CELLS else 0,
            "digit_passes": e.digit_passes,
        }
        if e.kind in CELLS and any(w == "shift" for w in CELLS[e.kind].params.values()):
            info["shifts"] = [e.shift_lo, e.shift_hi]  # the range its update unit's shifters cover
        if e.stride > 1:  # input frames per step (codesign/hw/stride.py); absent: 1
            info["stride"] = e.stride
        if e.dcls is not None:
            info["dcls"] = {
                "channels": e.dcls.channels,
                "taps": e.dcls.taps,
                "span": e.dcls.span,
                "z_bits": e.dcls.z_bits,
            }
        engines.append(info)
    memories = [
        {
            "name": mem.name,
            "kind": mem.kind,
            "depth": mem.depth,
            "elements": mem.elements,
            "elem_bits": mem.elem_bits,
            "bits": mem.bits,
            "config_id": mem.config_id,
            "rom": mem.rom,
            "style": mem.style,
            "banks": mem.banks,
            "fold": mem.fold,
            "shared": mem.shared,  # --merge auto: the physical memory holding it, at bit offset ...
            "offset": mem.offset,
            # the UP5K: no read meets a write of its word in one cycle (yosys' no_rw_check)
            "no_collisions": mem.no_collisions,
        }
        for mem in plan.memories
    ]
    return {
        "target": plan.target,
        "counter_set": plan.counter_set,
        "share": plan.share,
        "spram": plan.spram,  # --weights spram: memories of style "huge" are SPRAMs loaded through config
        "narrow": plan.narrow,
        "share_updates": plan.share_updates,  # --share-updates: one update unit per layer
        "merge": plan.merge,  # --merge: memories read together in one physical word (physical)
        "physical": {
            name: {
                "depth": parts[0].depth,
                "width": sum(p.width for p in parts),
                "style": parts[0].style,
                "parts": [{"name": p.name, "offset": p.offset, "width": p.width} for p in parts],
            }
            for name, parts in plan.physical_memories().items()
        },
        "engines": engines,
        "memories": memories,
        "counters": list(plan.counters),
    }


def build_rtl(
    bundle_dir: Path,
    out_dir: Path,
    lanes: int = 1,
    weights: str = "baked",
    faults: frozenset[str] | set[str] | tuple[str, ...] = frozenset(),
    *,
    target: str = "generic",
    counters: str = "all",
    share: str | int = "off",
    narrow: str | None = None,
    share_updates: str = "off",
    merge: str = "off",
    mapping: dict | None = None,
    name: str | None = None,
    bus: str = "stream",
) -> dict:
    """Generate ``accelerator.v`` for the bundle in ``bundle_dir`` into ``out_dir`` (atomically).

    Parameters
    ----------
    bundle_dir : Path
        Bundle directory (``manifest.yaml`` + ``weights.npz``).
    out_dir : Path
        Build directory to (re)create; simulator caches (``sim_*``) of an identical previous build
        are kept.
    lanes : int
        Lanes ``P`` per engine (each engine uses ``min(P, its size)``).
    weights : ``"baked"``, ``"runtime"``, ``"frozen"`` or ``"spram"``
        Parameters as memory initial values, or zeros loaded at run time through ``config``
        (the Verilog then depends only on the bundle's shape and serves every bundle of it), or
        ROMs (the smallest build: the plan may put them in LUTs; ``config`` cannot change them),
        or ROMs but for the largest weight matrices, in the chip's single-port RAMs (UP5K SPRAM)
        and loaded through ``config`` before the first sequence.
    faults : set of str
        Deliberate bugs (:data:`codesign.hw.faults.FAULTS`) for the regression's mutation check;
        recorded in ``build.json`` (``faults``).
    target : str
        The chip the plan maps onto (:data:`codesign.hw.targets.TARGETS`): block RAM or logic per
        memory, hard or LUT multipliers per engine (``build.json: plan.memories[].style``,
        ``plan.engines[].multiplier``). ``generic`` decides nothing.
    counters : ``"all"``, ``"basic"`` or ``"none"``
        The observability counters the build carries (:data:`codesign.hw.plan.COUNTER_SETS`).
    share : ``"off"``, ``"on"``, ``"auto"`` or a number
        Multipliers per lane shared over the matrices (:data:`codesign.hw.plan.SHARE_MODES`):
        ``build.json`` records the choice (``plan.share``, ``plan.engines[].lane_multipliers``
        and ``passes``, the cycles a slot takes).
    narrow : ``"off"``, ``"auto"`` or ``None``
        Weight words of engines with shared multipliers folded into one slice per pass at
        consecutive addresses (:data:`codesign.hw.plan.NARROW_MODES`; ``plan.memories[].fold``);
        ``None`` takes the target's default (``auto`` on the UP5K, ``plan.narrow``
        records what was used).
    share_updates : ``"off"`` or ``"on"``
        One update unit per layer serving the group's lanes in turn, at ``P - 1`` idle issue
        cycles per group (``plan.share_updates``, ``plan.engines[].update_units``).
    merge : ``"off"`` or ``"auto"``
        The memories an engine reads at one address in one cycle (parameters, state, pooled sums)
        in one physical word (``plan.merge``; ``plan.memories[].shared`` and ``offset``, and
        ``plan.physical``: each physical memory's parts, width and depth).
    mapping : dict or None
        The mapper's record (``codesign rtl --device``: :meth:`codesign.mapper.Mapping.record`),
        kept in ``build.json`` as ``mapping``; None for a build whose options were given by hand.
    name : str or None
        The top module's name (:func:`check_module_name`); every other module is named after it
        (``NAME.layer0``, ``NAME.readout``, ...), so builds with different names share one design.
        ``None``: the bundle's name made an identifier (:func:`module_name`).
    bus : ``"stream"`` or ``"axi"``
        The top's face (:data:`codesign.hw.faces.BUSES`): the accelerator's own valid/ready
        streams, or :class:`codesign.hw.faces.AxiFace` around it (AXI4-Stream inputs and results,
        AXI4-Lite registers; ``build.json``: ``bus`` and ``axi``).

    Returns
    -------
    dict
        The contents of ``build.json``.

    Raises
    ------
    CodesignError
        If the bundle is malformed or exceeds a hardware limit (the message names the field).
    """
    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    if bus not in BUSES:
        raise CodesignError(f"--bus must be one of {', '.join(BUSES)}, not {bus!r}")
    if weights not in WEIGHT_MODES:
        raise CodesignError(f"--weights must be one of {', '.join(WEIGHT_MODES)}, not {weights!r}")
    bundle = load_bundle(bundle_dir)
    top = module_name(bundle.manifest.name) if name is None else check_module_name(name)
    accelerator = Accelerator(
        bundle,
        lanes=lanes,
        weights=weights,
        faults=frozenset(faults),
        target=target,
        counters=counters,
        share=share,
        narrow=narrow,
        share_updates=share_updates,
        merge=merge,
    )
    face = None
    if bus == "axi":
        identity = identity_word(
            plan_summary(accelerator.plan), weights, bundle.manifest.checksums.get(WEIGHTS), top
        )
        face = AxiFace(accelerator, identity)
    text = drop_huge_init(verilog.convert(face or accelerator, name=top, emit_src=False), accelerator.plan)
    info = _build_info(accelerator, bundle, text, top=top, lanes=lanes, weights=weights, faults=faults)
    info["bus"] = bus
    if face is not None:
        info["ports"] = _ports(face, clock=())
        info["clock"], info["reset"] = "aclk", "aresetn (synchronous, active low)"
        info["axi"] = _axi_info(face)
    if mapping is not None:
        info["mapping"] = mapping
    _write_build(bundle_dir, out_dir, text, info)
    return info


def _build_info(
    accelerator: Accelerator, bundle, text: str, *, top: str, lanes: int, weights: str, faults
) -> dict:
    """The contents of ``build.json`` for the generated Verilog ``text``: the plan, ports and
    payload layouts the testbench and the FPGA wrapper read, and the hashes that name the build."""
    plan = accelerator.plan
    manifest = bundle.manifest
    shape_key = hashlib.sha256(json.dumps(plan.shape_key(), sort_keys=True).encode()).hexdigest()
    return {
        "top": top,
        "verilog": VERILOG,
        "verilog_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "clock": "clk",
        "reset": "rst (synchronous, active high)",
        "lanes": lanes,
        "weights": weights,
        "faults": sorted(faults),
        "shape_sha256": shape_key,
        "bundle": manifest.name,
        "bundle_weights_sha256": manifest.checksums.get(WEIGHTS),
        "codesign_version": codesign.__version__,
        "layers": [layer.model_dump(mode="json") for layer in manifest.layers],
        "readout": manifest.readout.model_dump(mode="json"),
        "input": manifest.input.model_dump(mode="json"),
        "logit_bits": plan.logit_bits,
        "plan": plan_summary(plan),
        "ports": _ports(accelerator),
        "inputs_payload": payload_fields(accelerator.inputs.payload.shape()),
        "config_payload": payload_fields(accelerator.config.payload.shape()),
        "results_payload": payload_fields(accelerator.results.payload.shape()),
        "counters_fields": payload_fields(accelerator.counters.shape()) if plan.counters else {},
        "trace_fields": {
            f"trace_{e.index}": payload_fields(getattr(accelerator, f"trace_{e.index}").shape())
            for e in plan.layers
        },
        "cycle_floor_per_step": "sum over layers of ceil(d_l / P) x passes_l x work_l (work_0 = non-zero "
        "inputs or non-zero DCLS outputs, work_l = events of layer l-1; passes_l = cycles per slot with "
        "shared multipliers or digit-serial products, 1 without)",
    }


def _axi_info(face: AxiFace) -> dict:
    """``build.json``'s ``axi``: identity, address width, register map and ``TDATA`` layouts."""
    return {
        "identity": face.identity,
        "address_bits": len(face.s_axil_awaddr),
        "registers": [dict(r) for r in face.registers],
        "s_axis_tdata": payload_fields(face.input_layout),
        "s_axis_tdata_bits": len(face.s_axis_tdata),
        "s_axis_tlast": "last item of a step",
        "s_axis_tuser": "last item of a sequence (with TLAST)",
        "m_axis_tdata": payload_fields(face.result_layout),
        "m_axis_tdata_bits": len(face.m_axis_tdata),
        "m_axis_tlast": "last beat of a result (its class_index is the argmax)",
        "m_axis_tuser": "last result of a sequence (with TLAST)",
    }


def _write_build(bundle_dir: Path, out_dir: Path, text: str, info: dict) -> None:
    """Replace ``out_dir`` atomically with the Verilog, a copy of the bundle and ``build.json``;
    the simulator, synthesis and area caches of an identical previous build move over."""
    previous = _read_json(out_dir / BUILD_JSON)
    with atomic_dir(out_dir) as tmp:
        (tmp / VERILOG).write_text(text)
        shutil.copyfile(bundle_dir / MANIFEST, tmp / MANIFEST)
        shutil.copyfile(bundle_dir / WEIGHTS, tmp / WEIGHTS)
        (tmp / BUILD_JSON).write_text(json.dumps(info, indent=2) + "\n")
        if previous.get("verilog_sha256") == info["verilog_sha256"]:
            # Same RTL: keep the compiled simulators and accelerator.v's timestamp, so the next
            # simulation does not recompile (with runtime weights, even for another bundle), and
            # the syntheses and area runs of this Verilog (a resumed `make fpga` reuses them).
            for cache in (*out_dir.glob("sim_*"), out_dir / "synth", out_dir / "area"):
                if cache.is_dir():
                    os.replace(cache, tmp / cache.name)
            shutil.copystat(out_dir / VERILOG, tmp / VERILOG)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
