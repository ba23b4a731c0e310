"""Whether a hardware network can read the order of its input frames.

One CMRU-family layer with ``eps = 1`` (the cumulative update) adds ``sign(c_t) * alpha`` whenever
``|c_t| >= beta_t``, and ``c_t``, ``beta_t`` (and alphaCMRU's ``alpha_t``) are functions of the
frame ``x_t`` alone. Its state after ``T`` frames is a sum of one function of each frame, so, short
of saturating, it is the same for every order of the frames: last pooling reads a weighted
histogram of the frames' values, never a shape. ``models/results/ablation/order.md`` measures it:
such a network scores the same on shuffled test series as on the real ones. A minGRU layer in
front of it (``models/classify_hw.yaml``) or a DCLS front end (delayed frames) reads the order;
:data:`ORDER_FRONT_END` is the front end the series defaults give a recipe that names one such
layer (``codesign/train/defaults.py``).
"""

from __future__ import annotations

from typing import Any

from codesign.bundle.cells import CELLS

__all__ = ["ORDER_FRONT_END", "order_blind"]

ORDER_FRONT_END: dict[str, int | str] = {"taps": 8, "span": "auto"}
"""The DCLS front end that gives a lone CMRU layer the order: 8 delayed copies of each input
channel, delays under 64 steps or under the series' length when it is shorter
(:func:`codesign.nn.dcls.auto_span`). ``models/results/classify_minimal.md`` measures it."""


def order_blind(layers: list[dict[str, Any]], pooling: str) -> str | None:
    """Why the hardware network of ``layers`` and ``pooling`` cannot read the order of its
    frames, or ``None`` when it can.

    Only a lone layer read at its last step is blind: a second layer reads the first one's running
    state, and sum pooling adds every step's state (an event at frame ``s`` counts ``T - s + 1``
    times), both of which depend on the order. A DCLS front end (delayed frames), a
    selective-update schedule (fixed update times) or an ``eps`` other than 1 (a state that is
    reset or reflected) each give it the order.
    """
    if len(layers) != 1 or pooling != "last":
        return None
    (layer,) = layers
    kind = CELLS.get(layer.get("cell", ""))
    if kind is None or kind.rule != "cmru" or not kind.has_eps or layer.get("eps", 1.0) != 1.0:
        return None
    if layer.get("dcls") is not None or layer.get("selective") is not None:
        return None
    front = ORDER_FRONT_END
    return (
        f"one {layer['cell']} layer with eps 1 read at its last step sums one function of each frame: "
        "it gives the same output for any order of the frames, so it cannot tell shapes apart. "
        "Put a minGRU layer in front of it, as models/classify_hw.yaml does "
        "(model.layers=[{cell: mingru, size: 16}, {cell: cmru, size: 16, eps: 1.0}]), "
        "or give it delayed frames through a DCLS front end "
        f"(model.layers=[{{cell: cmru, size: 16, eps: 1.0, dcls: {{taps: {front['taps']}, span: "
        f"{front['span']}}}}}]), which a series recipe that writes no model.layers and no "
        "model.cell_options.dcls gets by default"
    )
