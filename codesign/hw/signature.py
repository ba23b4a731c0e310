"""Stream payloads and the port signature of the accelerator.

The signature is everything the outside world (a host, a testbench, the FPGA wrapper) sees of the
accelerator. Verilog port names follow from the member names, joined with ``__`` by Amaranth
(``inputs__payload``, ``inputs__valid``, ``inputs__ready``, ``results__payload``, ...).
"""

from __future__ import annotations

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.bundle.cells import CELLS
from codesign.hw.plan import AcceleratorPlan, EnginePlan, index_bits

__all__ = [
    "AcceleratorSignature",
    "ConfigLayout",
    "ItemLayout",
    "ResultLayout",
    "TraceLayout",
    "class_index_bits",
    "counters_layout",
]


def class_index_bits(classes: int) -> int:
    """Width of an unsigned class index in ``[0, classes)`` (at least one bit)."""
    return index_bits(classes)


class ItemLayout(data.StructLayout):
    """One item: a non-zero value at ``index`` (a zero value is a bare marker), and step markers.

    Layer 0 receives the non-zero inputs of a step as items, in any order, each index at most once;
    the step's last beat has ``step_end`` set (a step with no non-zero input is one beat with
    value 0 and ``step_end``), the sequence's last step also ``seq_end``.
    """

    def __init__(self, size: int, value_bits: int) -> None:
        super().__init__(
            {
                "index": unsigned(index_bits(size)),
                "value": signed(value_bits),
                "step_end": unsigned(1),
                "seq_end": unsigned(1),
            }
        )


class ConfigLayout(data.StructLayout):
    """One configuration write: element ``elem`` of word ``addr`` of memory ``target``."""

    def __init__(self, plan: AcceleratorPlan) -> None:
        super().__init__(
            {
                "target": unsigned(plan.config_target_bits),
                "addr": unsigned(plan.config_addr_bits),
                "elem": unsigned(plan.config_elem_bits),
                "value": signed(32),
            }
        )


class ResultLayout(data.StructLayout):
    """One result beat: the logits of one class group (``P`` classes), the argmax on the final one.

    A result (one per sequence, or one per step with a per-step readout) is ``ceil(C / P)`` beats,
    class group ``group`` carrying classes ``group*P .. group*P + P - 1``; the beat with ``final``
    set carries ``class_index`` (the argmax, lowest index on ties); ``seq_end`` marks the last
    result of a sequence.
    """

    def __init__(self, readout: EnginePlan) -> None:
        super().__init__(
            {
                "logits": data.ArrayLayout(signed(readout.acc_bits), readout.lanes),
                "group": unsigned(index_bits(readout.groups)),
                "final": unsigned(1),
                "class_index": unsigned(class_index_bits(readout.size)),
                "seq_end": unsigned(1),
            }
        )


class TraceLayout(data.StructLayout):
    """Observation of one layer: valid for one cycle each time a group of neurons is updated."""

    def __init__(self, engine: EnginePlan) -> None:
        fields = {
            "valid": unsigned(1),
            "group": unsigned(index_bits(engine.groups)),
            "step_end": unsigned(1),
            "seq_end": unsigned(1),
            "state": data.ArrayLayout(signed(engine.output_bits), engine.lanes),
            "gate": data.ArrayLayout(unsigned(engine.gate_width), engine.lanes),
        }
        if engine.kind in CELLS and CELLS[engine.kind].potential_field is not None:
            fields["potential"] = data.ArrayLayout(signed(engine.state_bits), engine.lanes)
        super().__init__(fields)


def counters_layout(plan: AcceleratorPlan) -> data.StructLayout:
    return data.StructLayout({name: unsigned(plan.counter_bits) for name in plan.counters})


class AcceleratorSignature(wiring.Signature):
    """Port signature of :class:`codesign.hw.Accelerator` for one plan.

    Members
    -------
    inputs : ``In(stream.Signature(ItemLayout(M, input_bits)))``
        Non-zero quantized inputs as items, with step and sequence markers.
    config : ``In(stream.Signature(ConfigLayout(plan)))``
        Parameter writes (weights, biases, alphas, shifts, thresholds, delays).
    results : ``Out(stream.Signature(ResultLayout(readout)))``
        Logits by class group and the argmax class.
    counters : ``Out(counters_layout(plan))``
        Free-running counters (cycles, MACs, events, memory reads and writes, ...); absent when
        the build carries none.
    trace_<l> : ``Out(TraceLayout(layer l))``
        Every group update of layer ``l`` (state and gate of its lanes).
    """

    def __init__(self, plan: AcceleratorPlan) -> None:
        self.plan = plan
        members = {
            "inputs": In(stream.Signature(ItemLayout(plan.input_size, plan.input_bits))),
            "config": In(stream.Signature(ConfigLayout(plan))),
            "results": Out(stream.Signature(ResultLayout(plan.readout))),
        }
        if plan.counters:  # a build without counters (--counters none) has no counters port
            members["counters"] = Out(counters_layout(plan))
        for e in plan.layers:
            members[f"trace_{e.index}"] = Out(TraceLayout(e))
        super().__init__(members)

    def __repr__(self) -> str:
        return f"AcceleratorSignature({self.plan.manifest.name!r}, lanes={self.plan.lanes})"
