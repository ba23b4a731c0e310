"""``codesign report-cells``: BMRU against CMRU against alphaCMRU at the same size.

The three persistent-memory cells of the family are trained on one task at one size d with the
same recipe, seeds, iterations and quantization widths, exported as bundles and measured with the
figures ``codesign report`` computes. Nothing here trains or quantizes by itself:

* the float runs and the bundles are the stages of ``codesign explore``
  (:func:`codesign.explore.space.expand` makes one trial per cell and seed from the task's base
  recipe, :func:`codesign.explore.trial.train_stage` trains it, ``bundle_stage`` quantizes it
  post-training, exports the bundle and scores it with the golden model on the whole test set);
* the hardware figures are those of ``codesign rtl BUNDLE --out BUILD --lanes 1``,
  ``codesign area BUILD`` and :func:`codesign.report.figures.build_figures` (pysim cycles and
  counters on the first test sequences, energy / power proxy, memory bits by kind), measured on
  the bundle of the first seed (the accuracy columns cover every seed).

The alphaCMRU is also exported a second time with ``alpha_bits = state_bits`` (``--wide-alpha``,
same float runs), to show what a wider alpha buys: the export puts its state grid where the largest
calibration ``|alpha|`` fits ``alpha_bits`` (no finer than the largest calibration state allows,
``codesign.quant.stack``), so a wider alpha is a finer state grid.

Everything is cached under ``--work`` (default ``OUT/work``): ``runs/`` and ``bundles/`` as
``codesign explore`` keeps them (an interrupted training resumes from its last evaluation; a
bundle is re-exported when the code that makes and scores it, :func:`quant_code`, changed) and
``hw/<bundle hash>/`` (the build, its ``area/area.json`` and ``figures.json``), so a re-run only
redoes what is missing. ``OUT`` gets ``report.md``, ``report.json``, ``commands.txt`` and
``accuracy_energy.png``, each written atomically.
"""

from __future__ import annotations

import copy
import json
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from codesign.atomic import atomic_path, write_text
from codesign.errors import CodesignError

__all__ = ["CELLS", "TASKS", "CellsSettings", "render_markdown", "report_cells", "run_cells"]

CELLS = ("cmru", "bmru", "alphacmru")
"""The persistent-memory cells this report compares (eps = 1, eps = 0, input-dependent alpha)."""

REPO = Path(__file__).resolve().parents[2]
TASKS = {"japanese_vowels": REPO / "flows" / "explore" / "jv_base.yaml"}
"""Task name -> base recipe (the recipe of ``flows/explore/jv_cells_widths.yaml``)."""

LABELS = {"cmru": "CMRU", "bmru": "BMRU", "alphacmru": "alphaCMRU"}
HW_VERSION = 1  # bump when the hardware figures change meaning: cached figures are remade
PNG = "accuracy_energy.png"


@dataclass(frozen=True)
class CellsSettings:
    """What a report-cells run trains and measures (all of it is in ``report.json``)."""

    task: str
    size: int = 16
    cells: tuple[str, ...] = CELLS
    seeds: tuple[int, ...] = (0, 1, 2)
    iterations: int = 600
    weight_bits: int = 8
    wide_alpha: bool = True
    sequences: int = 10
    step_rate: float = 100.0
    leak_nw_per_um2: float = 0.01
    area: bool = True

    def check(self) -> None:
        """Refuse bad values before anything runs, naming the option."""
        if not 1 <= self.size <= 4096:
            raise CodesignError(f"--size {self.size}: the layer size d must lie in 1..4096")
        unknown = [c for c in self.cells if c not in CELLS]
        if unknown or not self.cells:
            raise CodesignError(
                f"--cells {','.join(self.cells)!r}: give one or more of {', '.join(CELLS)} "
                "(the persistent-memory cells this report compares)"
            )
        if len(set(self.cells)) != len(self.cells):
            raise CodesignError(f"--cells {','.join(self.cells)!r}: a cell is listed twice")
        if not self.seeds:
            raise CodesignError("--seeds needs at least one seed")
        if len(set(self.seeds)) != len(self.seeds):
            raise CodesignError(f"--seeds {','.join(map(str, self.seeds))!r}: a seed is listed twice")
        if any(s < 0 for s in self.seeds):
            raise CodesignError(f"--seeds {','.join(map(str, self.seeds))!r}: seeds must be >= 0")
        if self.iterations < 1:
            raise CodesignError(f"--iterations {self.iterations}: train at least one iteration")
        if not 2 <= self.weight_bits <= 16:
            raise CodesignError(f"--weight-bits {self.weight_bits}: widths must lie in 2..16")
        if self.sequences < 1:
            raise CodesignError(f"--sequences {self.sequences}: simulate at least one test sequence")
        if not self.step_rate > 0:
            raise CodesignError(f"--step-rate {self.step_rate}: the step rate must be > 0")
        if self.leak_nw_per_um2 < 0:
            raise CodesignError(f"--leak-nw-per-um2 {self.leak_nw_per_um2}: leakage must be >= 0")

    def command(self, out: Path, work: Path) -> str:
        """The command line that makes this report (every option spelled out)."""
        args = [
            "codesign",
            "report-cells",
            "--task",
            self.task,
            "--size",
            str(self.size),
            "--cells",
            ",".join(self.cells),
            "--seeds",
            ",".join(map(str, self.seeds)),
            "--iterations",
            str(self.iterations),
            "--weight-bits",
            str(self.weight_bits),
            "--wide-alpha" if self.wide_alpha else "--no-wide-alpha",
            "--sequences",
            str(self.sequences),
            "--step-rate",
            f"{self.step_rate:g}",
            "--leak-nw-per-um2",
            f"{self.leak_nw_per_um2:g}",
            "--area" if self.area else "--no-area",
            "--out",
            str(out),
            "--work",
            str(work),
        ]
        return shlex.join(args)


def _shown(path: Path) -> str:
    """``path`` relative to the source checkout when inside it (the report names no machine paths)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _say(text: str) -> None:
    print(f"report-cells: {text}", file=sys.stderr, flush=True)


def resolve_task(task: str):
    """The base recipe of ``task``: a name of :data:`TASKS` or a hardware-profile recipe YAML."""
    from codesign.train.recipe import load_recipe

    if task in TASKS:
        path = TASKS[task]
        if not path.is_file():
            raise CodesignError(
                f"--task {task}: its base recipe is not here (codesign is not run from its source checkout)",
                path=path,
            )
    elif task.endswith((".yaml", ".yml")):
        path = Path(task)
        if not path.is_file():
            raise CodesignError(f"--task {task}: recipe file not found", path=path)
    else:
        raise CodesignError(
            f"--task {task!r}: unknown task; use one of {', '.join(sorted(TASKS))} or a hardware-profile "
            "recipe YAML (models/*.yaml) whose task, training and quantization every cell then shares"
        )
    recipe = load_recipe(path)
    if recipe.model.arch != "hardware":
        raise CodesignError(f"--task {task}: not a hardware-profile recipe (model.arch)", path=path)
    return path, recipe


@dataclass
class Variant:
    """One row of the table: a cell, exported with the shared widths or with a wide alpha."""

    key: str
    cell: str
    label: str
    trials: list[dict[str, Any]]  # one bundle configuration per seed (codesign.explore.space.expand)


def plan_variants(settings: CellsSettings, base, base_path: Path, root: Path) -> list[Variant]:
    """The trials of every cell and seed, as ``codesign explore`` would make them."""
    from codesign.explore.space import expand, parse_space

    space = parse_space(
        {
            "name": "report_cells",
            "base": str(base_path),
            "train": {"iterations": settings.iterations},
            "axes": {
                "cell": list(settings.cells),
                "d": [settings.size],
                "weight_bits": [settings.weight_bits],
                "quantization": ["ptq"],
            },
            "seeds": list(settings.seeds),
        }
    )
    if len(base.model.hardware_layers()) != 1:
        raise CodesignError(
            f"--task {settings.task}: the base recipe has {len(base.model.hardware_layers())} layers; "
            "this report compares one-layer networks"
        )
    trials = expand(space, base, root)
    variants = []
    for cell in settings.cells:
        mine = [t for t in trials if t["axes"]["cell"] == cell]
        mine.sort(key=lambda t: settings.seeds.index(t["axes"]["seed"]))
        variants.append(Variant(cell, cell, LABELS[cell], mine))
        if cell == "alphacmru" and settings.wide_alpha:
            wide = []
            for t in mine:
                t = copy.deepcopy(t)
                layer = t["bundle"]["quant"]["layer"]
                layer["alpha_bits"] = layer["state_bits"]
                wide.append(t)
            bits = wide[0]["bundle"]["quant"]["layer"]["alpha_bits"]
            variants.append(Variant("alphacmru_wide_alpha", cell, f"alphaCMRU ({bits}-bit alpha)", wide))
    return variants


def quant_code() -> str:
    """Digest of the sources that make and score a bundle (``codesign/quant``, ``codesign/golden``).

    ``codesign explore`` keys a bundle on its float run and quantization settings only, so a fix
    to the export would otherwise leave the cached bundles (and their accuracies) as they were.
    """
    import hashlib

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted([*(package / "quant").glob("*.py"), *(package / "golden").glob("*.py")]):
        digest.update(f"{path.relative_to(package).as_posix()}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def train_and_export(variant: Variant, root: Path, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Train (or find) the float run and the bundle of every seed of ``variant``."""
    from codesign.explore.space import bundle_key, run_key
    from codesign.explore.trial import bundle_stage, read_json, train_stage, write_json
    from codesign.train.trainer import SUMMARY

    code = quant_code()
    out = []
    for trial in variant.trials:
        seed = trial["axes"]["seed"]
        recipe = trial["bundle"]["recipe"]
        run_dir = root / "runs" / run_key(recipe)
        record_path = root / "bundles" / f"{bundle_key(trial['bundle'])}.json"
        run_cached = (run_dir / SUMMARY).is_file()
        old = read_json(record_path)
        bundle_cached = old is not None and old.get("quant_code") == code
        if old is not None and not bundle_cached:
            say(f"{variant.label} seed {seed}: the quantization code changed, re-exporting its bundle")
            record_path.unlink()
        if not run_cached:
            say(
                f"{variant.label} seed {seed}: training {recipe['train']['iterations']} iterations -> {run_dir}"
            )
        t0 = time.monotonic()
        run = train_stage(recipe, str(root))
        if not run_cached:
            say(
                f"{variant.label} seed {seed}: trained in {time.monotonic() - t0:.0f} s, "
                f"float test accuracy {run['float_accuracy']:.4f}"
            )
        record = bundle_stage(trial["bundle"], str(root), run)
        if not bundle_cached:
            record["quant_code"] = code
            write_json(record_path, record)
        if record["torch_vs_golden_mismatches"]:
            raise CodesignError(
                f"{variant.label} seed {seed}: the quantized torch model and the golden model disagree on "
                f"{record['torch_vs_golden_mismatches']} test sequences",
                path=record["bundle_dir"],
            )
        say(
            f"{variant.label} seed {seed}: bundle {record['bundle_dir']}"
            + (" (cached)" if bundle_cached else "")
            + f", quantized (golden) accuracy {record['accuracy']:.4f}"
        )
        out.append(
            {
                "seed": seed,
                "run_dir": run["run_dir"],
                "bundle_dir": record["bundle_dir"],
                "float_accuracy": record["float_accuracy"],
                "quantized_accuracy": record["accuracy"],
                "test_sequences": record["test_sequences"],
                "torch_vs_golden_mismatches": record["torch_vs_golden_mismatches"],
                "train_s": record["train_s"],
                "reused": {"run": run_cached, "bundle": bundle_cached},
            }
        )
    return out


def _hw_settings(settings: CellsSettings) -> dict[str, Any]:
    return {
        "version": HW_VERSION,
        "lanes": 1,
        "sequences": settings.sequences,
        "step_rate": settings.step_rate,
        "leak_nw_per_um2": settings.leak_nw_per_um2,
        "area": settings.area,
    }


def hardware(
    bundle_dir: Path, hw_dir: Path, settings: CellsSettings, say: Callable[[str], None]
) -> tuple[dict[str, Any], bool]:
    """``codesign rtl --lanes 1``, ``codesign area`` and the report figures of one bundle (cached).

    The Verilog is always regenerated (a second or two) into ``hw_dir/build.new``; the cached
    figures are reused only when it is the Verilog they were measured on (``verilog_sha256`` of
    ``build.json``) and the settings match, so a change of the accelerator remakes them.
    """
    import shutil

    from codesign.explore.trial import read_json
    from codesign.hw.build import build_rtl

    build, fresh = hw_dir / "build", hw_dir / "build.new"
    build_rtl(bundle_dir, fresh, lanes=1)
    digest = json.loads((fresh / "build.json").read_text())["verilog_sha256"]
    old = read_json(build / "build.json")
    if old is not None and old.get("verilog_sha256") == digest:
        shutil.rmtree(fresh)  # the same Verilog: keep the build and its area run
    else:
        say(f"codesign rtl {bundle_dir} --out {build} --lanes 1")
        if build.exists():
            shutil.rmtree(build)
        fresh.rename(build)
    wanted = _hw_settings(settings) | {"verilog_sha256": digest}
    path = hw_dir / "figures.json"
    cached = read_json(path)
    if cached is not None and cached.get("settings") == wanted:
        return cached["figures"], True
    if settings.area and not (build / "area" / "area.json").is_file():
        from codesign.fpga.area import area_report

        say(f"codesign area {build}")
        area_report(build, progress=lambda t: say(f"area: {t}"))
    from codesign.report.figures import build_figures

    figures = build_figures(
        build,
        step_rate=settings.step_rate,
        sequences=settings.sequences,
        lanes=[1],
        leak_nw_per_um2=settings.leak_nw_per_um2,
        progress=say,
    )
    figures.pop("references", None)
    write_text(path, json.dumps({"settings": wanted, "figures": figures}, indent=1) + "\n")
    return figures, False


def code_state() -> dict[str, Any]:
    """The commit of the source checkout and the files of ``codesign/`` that differ from it."""
    import subprocess

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout

    commit = (git("rev-parse", "HEAD") or "").strip() or None
    status = git("status", "--porcelain", "--untracked-files=no", "--", "codesign")
    changed = sorted(line[3:] for line in (status or "").splitlines() if line.strip())
    return {"commit": commit, "changed": changed}


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def _summary(figures: dict[str, Any]) -> dict[str, Any]:
    """The figures of the table, from one ``build_figures`` dict."""
    lat, en, ar, dv = figures["latency"], figures["energy"], figures["area"], figures["dense_vs_event"]
    return {
        "cycles_per_step": lat["cycles_per_step"],
        "clock_mhz": lat["clock_mhz"],
        "events_per_step": dv["events_per_step"],
        "macs_run_per_inference": dv["measured_macs_per_inference"],
        "macs_dense_per_inference": dv["dense_macs_per_inference"],
        "macs_ratio": dv["ratio"],
        "energy_nj_per_inference": en["energy_uj_per_inference"] * 1e3,
        "dynamic_nj_per_inference": en["dynamic_uj_per_inference"] * 1e3,
        "power_uw": en["power_uw"],
        "dynamic_power_uw": en["dynamic_power_uw"],
        "asic_um2": ar["asic"]["total_um2"] if ar["asic"] else None,
        "memory_bits": ar["memory_bits"],
        "memory_bits_by_kind": ar["memory_bits_by_kind"],
        "multipliers": figures["sweep"][0]["multipliers"],
        "steps_per_inference": figures["inputs"]["steps_per_sequence"],
        "inputs": figures["inputs"]["source"],
    }


def _bundle_facts(bundle_dir: str) -> dict[str, Any]:
    from codesign.bundle.inspect import memory_bits
    from codesign.bundle.io import load_bundle

    b = load_bundle(bundle_dir)
    layer = b.manifest.layers[0]
    prov = b.manifest.provenance if isinstance(b.manifest.provenance, dict) else {}
    return {
        "parameters": int(sum(a.size for a in b.weights.values())),
        "parameter_bits": int(sum(memory_bits(b).values())),
        "matrices": 3 if layer.cell == "alphacmru" else 2,
        "eps": int(layer.eps),
        "state_bits": int(layer.state_bits),
        "alpha_bits": int(layer.alpha_bits),
        "inputs": int(b.manifest.input.size),
        "classes": int(b.manifest.readout.classes),
        "pooling": b.manifest.readout.pooling,
        "events_per_step_golden": prov.get("events_per_step"),
    }


def run_cells(
    settings: CellsSettings,
    out: str | Path,
    work: str | Path | None = None,
    *,
    say: Callable[[str], None] = _say,
) -> dict[str, Any]:
    """Train, export and measure every cell; write ``OUT/report.{md,json}``, commands and the PNG."""
    settings.check()
    out = Path(out)
    work = Path(work) if work is not None else out / "work"
    for path, what in ((out, "--out"), (work, "--work")):
        if path.exists() and not path.is_dir():
            raise CodesignError(f"{what} {path} is a file; give a directory", path=path)
    base_path, base = resolve_task(settings.task)
    variants = plan_variants(settings, base, base_path, work)
    t_start = time.monotonic()
    say(
        f"{len(variants)} rows ({', '.join(v.label for v in variants)}) x {len(settings.seeds)} seeds at "
        f"d = {settings.size}, {settings.iterations} iterations, {settings.weight_bits}-bit weights; work {work}"
    )
    rows = []
    for v in variants:
        seeds = train_and_export(v, work, say)
        first = seeds[0]
        facts = _bundle_facts(first["bundle_dir"])
        facts.pop("events_per_step_golden")
        for s in seeds:
            s["events_per_step_golden"] = _bundle_facts(s["bundle_dir"])["events_per_step_golden"]
        golden_events = [s["events_per_step_golden"] for s in seeds]
        hw_dir = work / "hw" / Path(first["bundle_dir"]).name
        figures, hw_cached = hardware(Path(first["bundle_dir"]), hw_dir, settings, say)
        summary = _summary(figures)
        say(
            f"{v.label} seed {first['seed']}: {summary['cycles_per_step']:.1f} cycles/step, "
            f"{summary['events_per_step']:.2f} events/step, {summary['energy_nj_per_inference']:.1f} nJ/inference"
            + (" (cached)" if hw_cached else "")
        )
        rows.append(
            {
                "key": v.key,
                "cell": v.cell,
                "label": v.label,
                **facts,
                "accuracy": {
                    "float": _spread([s["float_accuracy"] for s in seeds]),
                    "quantized": _spread([s["quantized_accuracy"] for s in seeds]),
                },
                "events_per_step_golden_mean": statistics.fmean(golden_events)
                if all(e is not None for e in golden_events)
                else None,
                "seeds": seeds,
                "hardware_seed": first["seed"],
                "hardware": summary,
                "build": str(hw_dir / "build"),
                "figures": figures,
                "reused": {
                    "runs": all(s["reused"]["run"] for s in seeds),
                    "bundles": all(s["reused"]["bundle"] for s in seeds),
                    "hardware": hw_cached,
                },
            }
        )
    first_record = rows[0]["seeds"][0]
    report = {
        "title": "BMRU against CMRU against alphaCMRU at the same size",
        "settings": asdict(settings),
        "base_recipe": _shown(base_path),
        "task": base.task.model_dump(),
        "test_sequences": first_record["test_sequences"],
        "quant": variants[0].trials[0]["bundle"]["quant"],
        "command": settings.command(out, work),
        "work": str(work),
        "code": code_state(),
        "rows": rows,
        "wall_s": time.monotonic() - t_start,
    }
    write_outputs(report, out)
    say(f"report {out / 'report.md'} ({report['wall_s']:.0f} s)")
    return report


def write_outputs(report: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    accuracy_energy_png(report, out / PNG)
    write_text(out / "report.json", json.dumps(report, indent=1) + "\n")
    write_text(out / "report.md", render_markdown(report, PNG))
    write_text(out / "commands.txt", commands_text(report))


def commands_text(report: dict[str, Any]) -> str:
    lines = [
        report["command"],
        "",
        "# what it runs per row, on the bundle of the first seed (equivalent commands):",
    ]
    s = report["settings"]
    for r in report["rows"]:
        build = r["build"]
        lines.append(f"#   {r['label']}")
        lines.append(f"#   codesign rtl {r['seeds'][0]['bundle_dir']} --out {build} --lanes 1")
        if s["area"]:
            lines.append(f"#   codesign area {build}")
        lines.append(
            f"#   codesign report {build} --lanes 1 --sequences {s['sequences']} --step-rate {s['step_rate']:g} "
            f"--leak-nw-per-um2 {s['leak_nw_per_um2']:g}"
        )
    return "\n".join(lines) + "\n"


def _f(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def _acc(a: dict[str, float]) -> str:
    if a["min"] == a["max"]:
        return f"{100 * a['mean']:.1f}"
    return f"{100 * a['mean']:.1f} [{100 * a['min']:.1f}; {100 * a['max']:.1f}]"


def _pct(new: float, old: float) -> str:
    if not old:
        return "-"
    v = 100 * (new / old - 1)
    if abs(v) < 0.05:
        return "+0.0 %"
    return f"{v:+.1f} %" if abs(v) < 10 else f"{v:+.0f} %"


def _close(a: float, b: float, rel: float = 0.02) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def findings(report: dict[str, Any]) -> list[str]:
    """The few sentences under the table, computed from the numbers (what they show and why)."""
    rows = {r["key"]: r for r in report["rows"]}
    q = {k: r["accuracy"]["quantized"]["mean"] for k, r in rows.items()}
    hw = {k: r["hardware"] for k, r in rows.items()}
    out = []
    order = sorted(q, key=lambda k: -q[k])
    out.append(
        "Quantized (golden) test accuracy, mean over seeds: "
        + ", ".join(f"{rows[k]['label']} {100 * q[k]:.1f} %" for k in order)
        + "."
    )
    if "cmru" in rows and "bmru" in rows:
        c, b = hw["cmru"], hw["bmru"]
        same = b["memory_bits"] == c["memory_bits"]
        memories = (
            f"the same memories ({c['memory_bits']} bits"
            if same
            else f"{b['memory_bits']} against {c['memory_bits']} memory bits (BMRU against CMRU"
        )
        sb, sc = rows["bmru"]["state_bits"], rows["cmru"]["state_bits"]
        state = f"{sb} bits in both" if sb == sc else f"{sb} bits in the BMRU and {sc} in the CMRU"
        work = (
            f"{b['cycles_per_step']:.1f} against {c['cycles_per_step']:.1f} cycles per step and "
            f"{b['dynamic_nj_per_inference']:.2f} against {c['dynamic_nj_per_inference']:.2f} nJ of dynamic "
            "energy per inference"
        )
        if _close(b["cycles_per_step"], c["cycles_per_step"]) and _close(
            b["dynamic_nj_per_inference"], c["dynamic_nj_per_inference"]
        ):
            consequence = (
                "fewer events would cut the MACs of a next layer, but with one layer the only consumer is the "
                f"{rows['cmru']['pooling']}-pooled readout, where an event costs one state-width add, so {work} "
                "barely differ"
            )
        else:
            consequence = f"so does the work that follows: {work}"
        out.append(
            "BMRU and CMRU share the datapath (two matrices, candidate and threshold, and one alpha per "
            f"neuron) and {memories}; the state is stored at {state}); they differ only in the update, the "
            "BMRU (eps = 0) "
            "overwriting its state with +-alpha (two levels) where the CMRU (eps = 1) counts up and down in "
            "alpha steps (many levels), which sets how often a state changes: "
            f"{b['events_per_step']:.2f} against {c['events_per_step']:.2f} events per step here; {consequence}."
        )
    if "alphacmru" in rows and "cmru" in rows:
        a, c = hw["alphacmru"], hw["cmru"]
        area = f", {_pct(a['asic_um2'], c['asic_um2'])} ASIC area" if a["asic_um2"] and c["asic_um2"] else ""
        cycles = (
            f"its cycles per step are the CMRU's ({a['cycles_per_step']:.1f})"
            if _close(a["cycles_per_step"], c["cycles_per_step"], 0.005)
            else f"its cycles per step ({a['cycles_per_step']:.1f} against {c['cycles_per_step']:.1f}) hardly move"
        )
        out.append(
            "The alphaCMRU's third matrix (alpha = W_alpha x + b_alpha per neuron and step, in place of "
            "the CMRU's one stored alpha) costs, against the CMRU, "
            f"{_pct(rows['alphacmru']['parameter_bits'], rows['cmru']['parameter_bits'])} parameter bits, "
            f"{_pct(a['memory_bits'], c['memory_bits'])} memory bits, "
            f"{_pct(a['multipliers'], c['multipliers'])} multipliers{area} and "
            f"{_pct(a['dynamic_nj_per_inference'], c['dynamic_nj_per_inference'])} dynamic energy per "
            f"inference, but {cycles} because each lane computes the matrices of a neuron side by side."
        )
    if "alphacmru_wide_alpha" in rows and "alphacmru" in rows:
        n, w = rows["alphacmru"], rows["alphacmru_wide_alpha"]
        nq, wq = n["accuracy"]["quantized"]["mean"], w["accuracy"]["quantized"]["mean"]
        nf = n["accuracy"]["float"]["mean"]
        energy = _pct(w["hardware"]["dynamic_nj_per_inference"], n["hardware"]["dynamic_nj_per_inference"])
        if wq - nq > 0.01:
            out.append(
                f"At the shared {n['alpha_bits']}-bit alpha the alphaCMRU loses {100 * (nf - nq):.1f} points "
                f"to quantization (float {100 * nf:.1f} %, golden {100 * nq:.1f} %); with alpha_bits = "
                f"{w['alpha_bits']} (same float runs) it scores {100 * wq:.1f} %, for {energy} dynamic energy: "
                "the narrow alpha clips or rounds away part of the learned step sizes."
            )
        else:
            out.append(
                f"A {w['alpha_bits']}-bit alpha buys the alphaCMRU nothing over {n['alpha_bits']} bits here "
                f"(golden {100 * wq:.1f} % against {100 * nq:.1f} %, same float runs) and costs {energy} "
                "dynamic energy."
            )
    return out


def leakage_note(report: dict[str, Any]) -> str:
    """How much of the energy per inference is the assumed leakage (it ranks the cells by area)."""
    rows = report["rows"]
    leak = [
        r["hardware"]["energy_nj_per_inference"] - r["hardware"]["dynamic_nj_per_inference"] for r in rows
    ]
    total = [r["hardware"]["energy_nj_per_inference"] for r in rows]
    if all(t > 0 for t in total) and any(x > 0 for x in leak):
        share = min(x / t for x, t in zip(leak, total, strict=True))
        return (
            f"Leakage (assumed per um^2 of ASIC area) is at least {100 * share:.1f} % of the energy per "
            f"inference at {report['settings']['step_rate']:g} steps/s, so the total energy and the power "
            "rank the cells by area; the dynamic figures rank them by work."
        )
    return ""


def render_markdown(report: dict[str, Any], png_name: str | None) -> str:
    s = report["settings"]
    rows = report["rows"]
    r0 = rows[0]
    task = report["task"]
    task_text = ", ".join(f"{k} {v}" for k, v in task.items() if k != "name")
    q = report["quant"]
    hw_seed = r0["hardware_seed"]
    out = [
        f"# {report['title']}",
        "",
        f"Task `{task['name']}` ({task_text}): {r0['inputs']} inputs, {r0['classes']} classes, "
        f"{report['test_sequences']} test sequences ({r0['hardware']['steps_per_inference']:.0f} steps as the "
        f"golden model runs them). Every cell: one layer of d = {s['size']}, {r0['pooling']} pooling, a linear "
        f"readout; the base recipe `{report['base_recipe'].removeprefix(str(REPO) + '/')}` trained "
        f"{s['iterations']} iterations per seed (seeds {', '.join(map(str, s['seeds']))}), the `codesign explore` "
        "train and bundle stages; CMRU and alphaCMRU at eps = 1, BMRU at eps = 0.",
        f"Quantization (post-training, the same for every cell): inputs {q['input']['bits']} bits, weights "
        f"{q['layer']['weight_bits']} bits, biases {q['layer']['bias_bits']} bits, alpha {q['layer']['alpha_bits']} "
        f"bits, state {q['layer']['state_bits']} bits, readout weights {q['readout']['weight_bits']} bits. "
        "Accuracy: float (torch) and quantized (the bit-exact golden model, = the RTL) on the whole test set, "
        "mean [min; max] over seeds.",
        f"Hardware (bundle of seed {hw_seed}): `codesign rtl --lanes 1`, "
        + ("`codesign area` (sky130 um^2), " if s["area"] else "")
        + "and the figures of `codesign report` on the first "
        + (f"{s['sequences']} test sequences" if s["sequences"] > 1 else "test sequence")
        + " (pysim cycles and "
        f"counters), clock {r0['hardware']['clock_mhz']:g} MHz, {s['step_rate']:g} steps/s, leakage "
        f"{s['leak_nw_per_um2']:g} nW/um^2 (an assumption). {_code_line(report.get('code'))}",
        "",
        "| cell | parameters (bits) | memory bits | float accuracy % | quantized accuracy % | cycles/step | "
        "events/step | MACs run / dense per inference | energy/inference (dynamic) | power at "
        f"{s['step_rate']:g} steps/s (dynamic) | ASIC area |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h = r["hardware"]
        area = f"{h['asic_um2']:.0f} um^2" if h["asic_um2"] else "-"
        out.append(
            f"| {r['label']} | {r['parameters']} ({r['parameter_bits']}) | {h['memory_bits']} | "
            f"{_acc(r['accuracy']['float'])} | {_acc(r['accuracy']['quantized'])} | {h['cycles_per_step']:.1f} | "
            f"{h['events_per_step']:.2f} | {h['macs_run_per_inference']:.0f} / {h['macs_dense_per_inference']:.0f} "
            f"({100 * h['macs_ratio']:.0f} %) | {h['energy_nj_per_inference']:.1f} nJ "
            f"({h['dynamic_nj_per_inference']:.2f} nJ) | {h['power_uw']:.3f} uW ({h['dynamic_power_uw']:.4f} uW) | "
            f"{area} |"
        )
    out += ["", "## What the numbers show", "", " ".join(findings(report)), ""]
    if png_name:
        out += [f"![quantized accuracy against energy per inference]({png_name})", ""]
    kinds = sorted({k for r in rows for k in r["hardware"]["memory_bits_by_kind"]})
    out += [
        "## Memory bits by kind (build.json: plan.memories)",
        "",
        "| cell | " + " | ".join(kinds) + " | total | multipliers |",
        "|---|" + "---|" * (len(kinds) + 2),
    ]
    for r in rows:
        h = r["hardware"]
        by = h["memory_bits_by_kind"]
        out.append(
            f"| {r['label']} | "
            + " | ".join(str(by.get(k, 0)) for k in kinds)
            + f" | {h['memory_bits']} | {h['multipliers']} |"
        )
    out += [
        "",
        "## Every seed",
        "",
        "| cell | seed | float accuracy % | quantized accuracy % | events/step (golden, whole test set) | bundle |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        for sd in r["seeds"]:
            ev = _bundle_events(sd)
            out.append(
                f"| {r['label']} | {sd['seed']} | {100 * sd['float_accuracy']:.1f} | "
                f"{100 * sd['quantized_accuracy']:.1f} | {ev} | `{sd['bundle_dir']}` |"
            )
    out += [
        "",
        "## What these figures are",
        "",
        "Cycles per step: all simulated cycles / all steps (fill, drain and readout included). Events per "
        "step: states that changed and were sent on, all layers, in the simulated sequences. MACs run: "
        "event-driven (zero inputs and unchanged states skipped) against dense (T x d x m x matrices + "
        "readout). Energy: the simulated counters x Horowitz ISSCC 2014 45 nm per-operation energies plus "
        "leakage = assumed nW/um^2 x ASIC area over the whole step period (`codesign/energy.py`); "
        "not a power simulation. ASIC area: `codesign area` (yosys generic gates as sky130_fd_sc_hd cells, "
        "memories as latches). Parameters: integer array elements of the bundle (bits at their widths). "
        + leakage_note(report),
        "",
        "Made by:",
        "",
        "```",
        report["command"],
        "```",
    ]
    return "\n".join(out) + "\n"


def _code_line(code: dict[str, Any] | None) -> str:
    if not code or not code.get("commit"):
        return "Source commit: unknown (not a git checkout)."
    text = f"Measured with codesign at commit {code['commit'][:12]}"
    if code["changed"]:
        text += " with local changes in " + ", ".join(f"`{c}`" for c in code["changed"])
    return text + "."


def _bundle_events(seed_row: dict[str, Any]) -> str:
    ev = seed_row.get("events_per_step_golden")
    return "-" if ev is None else f"{ev:.2f}"


def accuracy_energy_png(report: dict[str, Any], path: str | Path) -> None:
    """Quantized accuracy against energy per inference (total and dynamic), one marker per cell."""
    from codesign.extras import require

    require("matplotlib", "the cell study's plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    markers = ["o", "s", "^", "D", "v", "P"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, key, label in (
        (axes[0], "energy_nj_per_inference", "energy per inference, nJ (leakage included)"),
        (axes[1], "dynamic_nj_per_inference", "dynamic energy per inference, nJ"),
    ):
        for i, r in enumerate(report["rows"]):
            a = r["accuracy"]["quantized"]
            x = r["hardware"][key]
            y = 100 * a["mean"]
            ax.errorbar(
                [x],
                [y],
                yerr=[[y - 100 * a["min"]], [100 * a["max"] - y]],
                fmt=markers[i % len(markers)],
                markersize=8,
                capsize=3,
            )
            ax.annotate(r["label"], (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
        ax.set_xlabel(label)
        ax.margins(x=0.45, y=0.12)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("quantized (golden) test accuracy, %")
    s = report["settings"]
    fig.suptitle(
        f"{report['task']['name']} {report['task'].get('dataset', '')}, d = {s['size']}: mean and [min; max] "
        f"over {len(s['seeds'])} seeds, hardware of seed {report['rows'][0]['hardware_seed']}",
        fontsize=10,
    )
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def _split_ints(text: str, option: str) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise CodesignError(f"{option} {text!r} is not a comma-separated list of integers") from None


def report_cells(
    task: Annotated[
        str, typer.Option(help=f"task: {', '.join(sorted(TASKS))}, or a hardware-profile recipe YAML")
    ] = "japanese_vowels",
    size: Annotated[int, typer.Option(help="neurons d of every cell's one layer")] = 16,
    out: Annotated[Path, typer.Option("--out", help="report directory")] = Path(
        "docs/reports/cells_same_size"
    ),
    work: Annotated[
        Path | None, typer.Option(help="cache of runs, bundles and builds (default OUT/work)")
    ] = None,
    cells: Annotated[str, typer.Option(help="comma-separated cells among cmru, bmru, alphacmru")] = ",".join(
        CELLS
    ),
    seeds: Annotated[str, typer.Option(help="comma-separated seeds (accuracy: mean, min, max)")] = "0,1,2",
    iterations: Annotated[int, typer.Option(help="training iterations per cell and seed")] = 600,
    weight_bits: Annotated[int, typer.Option(help="weight width of every cell (readout: at least 4)")] = 8,
    wide_alpha: Annotated[
        bool, typer.Option(help="also export the alphaCMRU with alpha_bits = state_bits (same float runs)")
    ] = True,
    sequences: Annotated[int, typer.Option(help="test sequences simulated for the hardware figures")] = 10,
    step_rate: Annotated[float, typer.Option("--step-rate", help="steps per second (power)")] = 100.0,
    leak: Annotated[
        float, typer.Option("--leak-nw-per-um2", help="assumed leakage per um^2 of ASIC area")
    ] = 0.01,
    area: Annotated[
        bool, typer.Option(help="run codesign area (yosys) for the ASIC area and leakage")
    ] = True,
) -> None:
    """BMRU against CMRU against alphaCMRU at the same size: accuracy, cycles, energy, area."""
    settings = CellsSettings(
        task=task,
        size=size,
        cells=tuple(c.strip() for c in cells.split(",") if c.strip()),
        seeds=_split_ints(seeds, "--seeds"),
        iterations=iterations,
        weight_bits=weight_bits,
        wide_alpha=wide_alpha,
        sequences=sequences,
        step_rate=step_rate,
        leak_nw_per_um2=leak,
        area=area,
    )
    report = run_cells(settings, out, work)
    for r in report["rows"]:
        h = r["hardware"]
        print(
            f"{r['label']}: quantized accuracy {100 * r['accuracy']['quantized']['mean']:.1f} %, "
            f"{h['cycles_per_step']:.1f} cycles/step, {h['energy_nj_per_inference']:.1f} nJ/inference, "
            f"{h['power_uw']:.3f} uW" + (f", {h['asic_um2']:.0f} um^2" if h["asic_um2"] else "")
        )
    print(f"report {Path(out) / 'report.md'}")
