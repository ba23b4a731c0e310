"""Only the sky130 model bins a deck uses: the same simulation, a fraction of the parsing.

The sky130 nfet/pfet_01v8 model files hold 180 / 108 BSIM4 bins (one ``.model`` card each, with a
range of L and W). ngspice parses and expands all of them for every deck, which costs more than
the transient of a small ladder deck (8.1 of 23.2 G instructions for a 7-stage JapaneseVowels
ladder, valgrind). A deck's transistors come in three sizes (W/L 4/8, 1/0.5 and 40/1 um), so
:func:`prune_deck_models` keeps the bins whose closed L and W ranges contain a size the deck uses
(ngspice picks the one bin whose half-open range does, and it is among them, in the same order)
and inlines them instead of the whole files: the wrdata output of that deck was byte-identical and
the parsing fell to 1.4 G instructions. Monte Carlo decks keep the whole files (their draws are
reproducible only as they were made).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from codesign.analog.pdk import model_block, model_includes

__all__ = ["device_sizes", "prune_deck_models", "pruned_model_text"]

_DEVICE = re.compile(r"\bsky130_fd_pr__([np]fet)_01v8\b(.*)$", re.IGNORECASE)
_W = re.compile(r"\bW\s*=\s*([0-9.eE+-]+)(?=\s|$)")
_L = re.compile(r"\bL\s*=\s*([0-9.eE+-]+)(?=\s|$)")
_RANGE = ("lmin", "lmax", "wmin", "wmax")


def device_sizes(deck: str) -> dict[str, frozenset[tuple[float, float]]] | None:
    """``{"nfet": {(W, L), ...}, "pfet": ...}`` in metres of every sky130 instance of ``deck``
    (``.option scale=1.0u``), or ``None`` when an instance has no literal W and L (then the bins it
    needs are unknown)."""
    if ".option scale=1.0u" not in deck:
        return None
    sizes: dict[str, set[tuple[float, float]]] = {"nfet": set(), "pfet": set()}
    for line in deck.splitlines():
        if not line[:1].lower() == "x":
            continue
        m = _DEVICE.search(line)
        if not m:
            continue
        w, ln = _W.search(m.group(2)), _L.search(m.group(2))
        if not (w and ln):
            return None
        sizes[m.group(1).lower()].add((float(w.group(1)) * 1e-6, float(ln.group(1)) * 1e-6))
    return {k: frozenset(v) for k, v in sizes.items()}


def _prune(text: str, sizes: frozenset[tuple[float, float]], path: Path) -> str:
    """``text`` (a ``.pm3.spice`` file) with only the ``.model`` cards whose ranges contain a size."""
    parts = re.split(r"(?m)^(?=\.model )", text)
    head, cards = parts[0], parts[1:]
    tail = ""
    end = re.search(r"(?m)^\.ends", cards[-1]) if cards else None
    if end:
        tail, cards[-1] = cards[-1][end.start() :], cards[-1][: end.start()]
    kept = []
    for card in cards:
        rng = {}
        for key in _RANGE:
            m = re.search(rf"\b{key}\s*=\s*([-+0-9.eE]+)", card)
            if m is None:
                return text  # a card without a range: keep the file whole
            rng[key] = float(m.group(1))
        eps = 1e-9
        if any(
            rng["lmin"] * (1 - eps) <= ln <= rng["lmax"] * (1 + eps)
            and rng["wmin"] * (1 - eps) <= w <= rng["wmax"] * (1 + eps)
            for w, ln in sizes
        ):
            kept.append(card)
    if sizes and not kept:
        raise ValueError(f"no model bin of {path.name} covers the sizes {sorted(sizes)}")
    return head + "".join(kept) + tail


@lru_cache(maxsize=16)
def pruned_model_text(corner: str, nfet: frozenset, pfet: frozenset) -> str:
    """The model block of ``corner`` with the nfet/pfet bins pruned to the sizes given and inlined
    (the other files stay includes, in the same order)."""
    out = [f"* sky130 nfet_01v8 / pfet_01v8 models, corner {corner}: only the bins of this deck's sizes"]
    for path in model_includes(corner):
        name = path.name
        if name.endswith(f"nfet_01v8__{corner}.pm3.spice"):
            out.append(_prune(path.read_text(), nfet, path))
        elif name.endswith(f"pfet_01v8__{corner}.corner.spice"):
            text = path.read_text()
            inc = re.compile(r'(?m)^\.include\s+"(sky130_fd_pr__pfet_01v8__[a-z]+\.pm3\.spice)"\s*$')
            m = inc.search(text)
            if m is None:
                out.append(f'.include "{path}"')
                continue
            pm3 = path.parent / m.group(1)
            out.append(text[: m.start()] + _prune(pm3.read_text(), pfet, pm3) + text[m.end() :])
        else:
            out.append(f'.include "{path}"')
    return "\n".join(out) + "\n"


def prune_deck_models(deck: str, corner: str = "tt") -> str:
    """``deck`` with its whole-file model block (:func:`codesign.analog.pdk.model_block`) replaced by
    the bins its devices use; unchanged if it has no such block or an instance without W and L."""
    block = model_block(corner)
    sizes = device_sizes(deck)
    if sizes is None or block not in deck:
        return deck
    return deck.replace(block, pruned_model_text(corner, sizes["nfet"], sizes["pfet"]), 1)
