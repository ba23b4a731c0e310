"""Human-readable view of a bundle (``codesign inspect``)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from codesign.bundle.io import Bundle
from codesign.bundle.schema import WEIGHT_ARRAYS


def memory_bits(bundle: Bundle) -> dict[str, int]:
    f = bundle.manifest.formats
    return {
        name: int(bundle.weights[name].size) * getattr(f, key).bits
        for name, (_, key) in WEIGHT_ARRAYS.items()
    }


def render(bundle: Bundle) -> Group:
    m = bundle.manifest
    net = m.network
    head = Table(title=f"bundle {m.name} (format version {m.format_version})", show_header=False)
    head.add_row(
        "network",
        f"{net.input_size} inputs -> {net.cell} d={net.hidden_size} eps={net.eps} "
        f"-> readout ({net.pooling} pooling) -> {net.num_classes} classes",
    )
    f = m.formats
    head.add_row("input", f"{f.input.bits} bits, {f.input.frac} fractional, overflow {f.input.overflow}")
    head.add_row("state", f"{f.state.bits} bits (h = h_int * 2^-{f.state_frac}), saturating")
    head.add_row("accumulators / logits", f"{m.accumulator_bits} / {m.logit_bits} bits (derived)")
    arrays = Table(title="weights")
    for col in ("array", "shape", "bits", "min", "max", "memory bits"):
        arrays.add_column(col)
    mem = memory_bits(bundle)
    for name, (_, key) in WEIGHT_ARRAYS.items():
        a = bundle.weights[name]
        arrays.add_row(
            name, str(a.shape), str(getattr(f, key).bits), str(a.min()), str(a.max()), str(mem[name])
        )
    arrays.add_row("total", "", "", "", "", str(sum(mem.values())))
    prov = Table(title="provenance", show_header=False)
    for k, v in m.provenance.items():
        prov.add_row(k, str(v))
    return Group(head, arrays, prov)
