"""Stream payloads and the port signature of the accelerator.

The signature is everything the outside world (a host, a testbench, the cocotb scoreboard) sees of
the accelerator. Its Verilog port names follow from the member names below, joined with ``__``
by Amaranth (``steps__payload``, ``steps__valid``, ``steps__ready``, ``results__payload``, ...).
"""

from __future__ import annotations

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["AcceleratorSignature", "ResultLayout", "StepLayout", "class_index_bits"]


def _check_positive(name: str, value: object, *, lowest: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < lowest:
        raise ValueError(f"{name} must be an integer >= {lowest}, not {value!r}")


def class_index_bits(classes: int) -> int:
    """Width of an unsigned class index in ``[0, classes)`` (at least one bit)."""
    return max(1, (classes - 1).bit_length())


class StepLayout(data.StructLayout):
    """Payload of one input beat: one time step of quantized inputs.

    Bits, LSB first: ``x[0] .. x[inputs-1]`` (``input_bits`` each, two's complement), then ``last``.

    Parameters
    ----------
    inputs : int
        Number of input features ``M``.
    input_bits : int
        Width of one quantized input (``formats.input.bits``).

    Raises
    ------
    ValueError
        If a parameter is not a positive integer.
    """

    def __init__(self, inputs: int, input_bits: int) -> None:
        _check_positive("inputs", inputs)
        _check_positive("input_bits", input_bits, lowest=2)
        super().__init__(
            {
                "x": data.ArrayLayout(signed(input_bits), inputs),
                "last": unsigned(1),
            }
        )


class ResultLayout(data.StructLayout):
    """Payload of one output beat: the classification of one sequence.

    Bits, LSB first: ``class_index`` (``class_index_bits(classes)`` bits, unsigned), then
    ``logits[0] .. logits[classes-1]`` (``logit_bits`` each, two's complement).

    Parameters
    ----------
    classes : int
        Number of classes ``C``.
    logit_bits : int
        Width of one logit (``manifest.logit_bits``).

    Raises
    ------
    ValueError
        If a parameter is not a positive integer.
    """

    def __init__(self, classes: int, logit_bits: int) -> None:
        _check_positive("classes", classes)
        _check_positive("logit_bits", logit_bits, lowest=2)
        super().__init__(
            {
                "class_index": unsigned(class_index_bits(classes)),
                "logits": data.ArrayLayout(signed(logit_bits), classes),
            }
        )


class AcceleratorSignature(wiring.Signature):
    """Port signature of :class:`codesign.hw.Accelerator`.

    Parameters
    ----------
    inputs : int
        Input features per step ``M``.
    input_bits : int
        Width of a quantized input.
    hidden : int
        Recurrent neurons ``d``.
    state_bits : int
        Width of a neuron state.
    classes : int
        Readout classes ``C``.
    logit_bits : int
        Width of a logit.
    counter_bits : int
        Width of the free-running observability counters (they wrap).

    Interface attributes
    --------------------
    steps : ``In(stream.Signature(StepLayout))``
        Input stream, one beat per time step; ``payload.last`` ends a sequence.
    results : ``Out(stream.Signature(ResultLayout))``
        Output stream, one beat per sequence (argmax class and all logits).
    state : ``Out(ArrayLayout(signed(state_bits), hidden))``
        Every neuron's state, neuron ``i`` at bits ``[i*state_bits, (i+1)*state_bits)``.
        Valid (the state after the step just finished) while ``step_done`` is high.
    gate : ``Out(hidden)``
        Binary gate of every neuron at the step just finished; valid while ``step_done`` is high.
    step_done : ``Out(1)``
        One-cycle pulse after the last neuron of a step has been updated.
    cycle_count : ``Out(counter_bits)``
        Clock cycles since reset.
    event_count : ``Out(counter_bits)``
        Neuron updates that changed a state since reset (the golden model's events). Sampled
        while ``step_done`` is high it covers every step up to and including that one.
    mac_count : ``Out(counter_bits)``
        Recurrent-layer multiply-accumulates since reset, two per lane-neuron per non-zero input
        (the golden model's ``macs``); aligned with ``step_done`` like ``event_count``.

    Raises
    ------
    ValueError
        If a parameter is not a positive integer (the message names the value).
    """

    def __init__(
        self,
        *,
        inputs: int,
        input_bits: int,
        hidden: int,
        state_bits: int,
        classes: int,
        logit_bits: int,
        counter_bits: int = 32,
    ) -> None:
        self.check_parameters(
            inputs=inputs,
            input_bits=input_bits,
            hidden=hidden,
            state_bits=state_bits,
            classes=classes,
            logit_bits=logit_bits,
            counter_bits=counter_bits,
        )
        self._params = dict(
            inputs=inputs,
            input_bits=input_bits,
            hidden=hidden,
            state_bits=state_bits,
            classes=classes,
            logit_bits=logit_bits,
            counter_bits=counter_bits,
        )
        super().__init__(
            {
                "steps": In(stream.Signature(StepLayout(inputs, input_bits))),
                "results": Out(stream.Signature(ResultLayout(classes, logit_bits))),
                "state": Out(data.ArrayLayout(signed(state_bits), hidden)),
                "gate": Out(hidden),
                "step_done": Out(1),
                "cycle_count": Out(counter_bits),
                "event_count": Out(counter_bits),
                "mac_count": Out(counter_bits),
            }
        )

    @classmethod
    def check_parameters(
        cls,
        *,
        inputs: int,
        input_bits: int,
        hidden: int,
        state_bits: int,
        classes: int,
        logit_bits: int,
        counter_bits: int = 32,
    ) -> None:
        """Validate signature parameters.

        Raises
        ------
        ValueError
            If a parameter is not a positive integer or a width is below 2 bits.
        """
        _check_positive("inputs", inputs)
        _check_positive("input_bits", input_bits, lowest=2)
        _check_positive("hidden", hidden)
        _check_positive("state_bits", state_bits, lowest=2)
        _check_positive("classes", classes)
        _check_positive("logit_bits", logit_bits, lowest=2)
        _check_positive("counter_bits", counter_bits, lowest=8)

    @property
    def params(self) -> dict[str, int]:
        """The parameters this signature was built from."""
        return dict(self._params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AcceleratorSignature) and self._params == other._params

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self._params.items())
        return f"AcceleratorSignature({args})"
