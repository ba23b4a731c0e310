"""Human-readable view of a bundle (``codesign inspect``)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from codesign.bundle.cells import CELLS
from codesign.bundle.io import Bundle
from codesign.bundle.spec import accumulator_bits, array_table, logit_bits


def memory_bits(bundle: Bundle) -> dict[str, int]:
    """Bits each array occupies at its declared width (what on-chip memories must hold)."""
    return {
        name: int(bundle.weights[name].size) * bits
        for name, (_, bits) in array_table(bundle.manifest).items()
    }


def render(bundle: Bundle) -> Group:
    m = bundle.manifest
    head = Table(title=f"bundle {m.name} (format version {m.format_version})", show_header=False)
    head.add_row(
        "input",
        f"{m.input.size} features, {m.input.bits} bits, {m.input.frac} fractional, "
        f"overflow {m.input.overflow}"
        + (f", stride {m.input.stride} (frames per step of layer 0)" if m.input.stride > 1 else ""),
    )
    for i, layer in enumerate(m.layers):
        extra = f" eps={layer.eps}" if CELLS[layer.cell].rule == "cmru" else ""
        dcls = f", DCLS {layer.dcls.taps} taps below {layer.dcls.span}" if layer.dcls else ""
        if layer.selective is not None:
            rate = float(bundle.weights[f"layers.{i}.su_gate"].mean())
            dcls += f", selective update (period {layer.selective.period}, {rate:.1%} of neuron-steps open)"
        head.add_row(
            f"layer {i}",
            f"{layer.cell} d={layer.size}{extra}{dcls}; state {layer.state_bits} bits "
            f"(h = h_int 2^-{layer.state_frac}); accumulators {accumulator_bits(m, i)} bits",
        )
    r = m.readout
    pooling = "per step" if r.per_step else f"{r.pooling} pooling"
    head.add_row("readout", f"{r.classes} classes, {pooling}, logits {logit_bits(m)} bits")
    arrays = Table(title="weights")
    for col in ("array", "shape", "bits", "min", "max", "memory bits"):
        arrays.add_column(col)
    mem = memory_bits(bundle)
    for name, (shape, bits) in array_table(m).items():
        a = bundle.weights[name]
        arrays.add_row(name, str(shape), str(bits), str(a.min()), str(a.max()), str(mem[name]))
    arrays.add_row("total", "", "", "", "", str(sum(mem.values())))
    prov = Table(title="provenance", show_header=False)
    for k, v in m.provenance.items():
        prov.add_row(k, str(v))
    return Group(head, arrays, prov)
