"""One formal check as a plain dict (a *job*), run into one result row.

A job names a design (a reference bundle, a random member of the family, or a build directory),
the accelerator's options (lanes, weights, target, counters, faults) and one check:

=========== =====================================================================================
check       what runs
=========== =====================================================================================
``stream``  :class:`~codesign.formal.harness.FormalHarness` stream rules (``bmc``, ``prove``) or
            their covers (``cover``)
``live``    the liveness bounds of :mod:`codesign.formal.bounds`
``config``  the two-copy configuration check
``paths``   no combinational path from an input port to an output port (:mod:`.paths`)
``unit``    the CMRU family's update unit of every such layer against its rule (:mod:`.units`)
``equiv``   the iCE40 netlist against the RTL (:mod:`.equiv`), ``device`` ``up5k`` or ``hx8k``
=========== =====================================================================================

Jobs are JSON-able so that the Dask runner can ship them and a results folder can key them.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from codesign.bundle import Bundle, load_bundle
from codesign.errors import CodesignError
from codesign.formal.sby import Proof, run_sby
from codesign.hw.accelerator import Accelerator
from codesign.hw.faults import FaultSet

__all__ = ["CHECK_NAMES", "accelerator_options", "job_key", "load_design", "make_accelerator", "run_job"]

CHECK_NAMES = ("stream", "live", "config", "paths", "unit", "equiv")

_ACCELERATOR_OPTIONS = ("lanes", "weights", "target", "counters", "share", "narrow", "share_updates", "merge")


def job_key(job: dict) -> str:
    """A short stable name of ``job`` (its file name in a results folder)."""
    digest = hashlib.sha256(json.dumps(job, sort_keys=True).encode()).hexdigest()[:10]
    lanes = job.get("lanes", 1)
    return f"{job['design']}-p{lanes}-{job['check']}-{job.get('mode', 'bmc')}{job.get('depth', 1)}-{digest}"


_RANDOM = {"random": {}, "random-su": {"selective": True}, "random-stride": {"stride": True}}


def load_design(source: str) -> Bundle:
    """``bundle:PATH`` (a bundle or build directory), or ``random:SEED`` (a small family member;
    ``random-su:SEED`` with selective update, ``random-stride:SEED`` with an input stride)."""
    kind, _, arg = source.partition(":")
    if kind == "bundle":
        return load_bundle(arg)
    if kind in _RANDOM:
        from codesign.bundle.random import random_family_bundle

        return random_family_bundle(
            int(arg), max_layers=2, max_size=4, max_inputs=3, max_classes=3, **_RANDOM[kind]
        )
    raise CodesignError(f"design source {source!r}: expected bundle:PATH or {':SEED, '.join(_RANDOM)}:SEED")


def accelerator_options(build: Path) -> dict:
    """The options ``codesign rtl`` built ``build`` with, read from its ``build.json``."""
    try:
        info = json.loads((build / "build.json").read_text())
    except (OSError, ValueError) as err:
        raise CodesignError(f"{build}: not a build directory ({err})") from None
    plan = info.get("plan", {})
    options = {"lanes": info.get("lanes", 1), "weights": info.get("weights", "baked")}
    for key, name in (("target", "target"), ("counter_set", "counters"), ("share", "share")):
        if key in plan:
            options[name] = plan[key]
    for key in ("narrow", "share_updates", "merge"):
        if key in plan:
            options[key] = plan[key]
    options["faults"] = sorted(info.get("faults", []))
    return options


def make_accelerator(bundle: Bundle, job: dict) -> Accelerator:
    """The accelerator ``job`` asks for (counters ``none`` unless it says otherwise)."""
    options = {k: job[k] for k in _ACCELERATOR_OPTIONS if k in job}
    options.setdefault("counters", "none")
    return Accelerator(bundle, faults=frozenset(job.get("faults", ())), **options)


def _harness_check(bundle: Bundle, job: dict, timeout: float, keep: Path | None) -> Proof:
    from codesign.formal.harness import FormalHarness

    twin = make_accelerator(bundle, job) if job["check"] == "config" else None
    harness = FormalHarness(make_accelerator(bundle, job), job["check"], twin=twin)
    return run_sby(harness, mode=job.get("mode", "bmc"), depth=job["depth"], timeout=timeout, keep=keep)


def _paths_check(bundle: Bundle, job: dict) -> Proof:
    from codesign.formal.paths import comb_paths

    start = time.monotonic()
    found = comb_paths(make_accelerator(bundle, job))
    failed = [f"{src} -> {', '.join(outs)}" for src, outs in found.items()]
    return Proof("paths", 0, "FAIL" if failed else "PASS", time.monotonic() - start, failed)


def _unit_check(bundle: Bundle, job: dict, timeout: float) -> Proof:
    from codesign.formal.units import UNIT_KINDS, CMRUUnitHarness
    from codesign.hw.plan import plan_accelerator

    plan = plan_accelerator(bundle.manifest, job.get("lanes", 1))
    engines = [e for e in plan.layers if e.kind in UNIT_KINDS]
    if not engines:
        return Proof("bmc", 1, "N/A", 0.0, [f"no {' or '.join(UNIT_KINDS)} layer"])
    faults = FaultSet(job.get("faults", ()))
    total, failed, status = 0.0, [], "PASS"
    for e in engines:
        proof = run_sby(
            CMRUUnitHarness(e, FaultSet(n for n in faults if faults.active(n, e.index))),
            mode="bmc",
            depth=1,
            timeout=timeout,
        )
        total += proof.seconds
        if not proof.ok:
            status = proof.status
            failed += [f"{e.name}: {line}" for line in proof.failed]
    return Proof("bmc", 1, status, total, failed)


def _equiv_check(bundle: Bundle, job: dict, timeout: float, keep: Path | None) -> Proof:
    from codesign.formal.equiv import miter_rtlil

    device = job.get("device", "up5k")
    options = dict(job, target="up5k" if device == "up5k" else "generic")
    start = time.monotonic()
    gate_faults = job.get("gate_faults")  # the netlist of a mutant against the RTL: must fail
    gate = make_accelerator(bundle, dict(options, faults=gate_faults)) if gate_faults else None
    text = miter_rtlil(make_accelerator(bundle, options), device, gate=gate, timeout=timeout)
    proof = run_sby(
        None, mode=job.get("mode", "bmc"), depth=job["depth"], timeout=timeout, keep=keep, rtlil_text=text
    )
    proof.seconds = time.monotonic() - start
    return proof


def run_job(job: dict, *, timeout: float = 900, keep: Path | None = None) -> dict:
    """Run ``job``; return its row: the job's fields, ``status``, ``seconds``, ``failed``, ``step``."""
    check = job["check"]
    if check not in CHECK_NAMES:
        raise CodesignError(f"check {check!r} is not one of {', '.join(CHECK_NAMES)}")
    bundle = load_design(job["source"])
    if check in ("stream", "live", "config"):
        proof = _harness_check(bundle, job, timeout, keep)
    elif check == "paths":
        proof = _paths_check(bundle, job)
    elif check == "unit":
        proof = _unit_check(bundle, job, timeout)
    else:
        proof = _equiv_check(bundle, job, timeout, keep)
    return dict(
        job,
        status=proof.status,
        seconds=round(proof.seconds, 1),
        failed=[_short(line) for line in proof.failed],
        step=proof.step,
        trace=str(proof.trace) if proof.trace else None,
    )


def _message(path: str, line: int) -> str | None:
    """The quoted message of the ``Assert`` or ``Cover`` written at ``path:line``, if it has one."""
    try:
        text = Path(path).read_text().splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    quoted = re.findall(r'"([^"]+)"', text)
    return quoted[-1] if quoted else None


def _short(line: str) -> str:
    """A failure line with every source path cut to its file name and the property's message
    added (``harness.py:116 (final marks the last group)``)."""
    words = []
    for word in line.split():
        hit = re.fullmatch(r"(\S+\.py):(\d+)", word)
        message = _message(hit.group(1), int(hit.group(2))) if hit else None
        word = word.rsplit("/", 1)[-1] if "/" in word else word
        words.append(f"{word} ({message})" if message else word)
    return " ".join(words)
