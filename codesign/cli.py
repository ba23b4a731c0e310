"""The ``codesign`` command line.

Every subcommand turns a :class:`~codesign.errors.CodesignError` into one line on stderr and exit
code 2; simulation mismatches exit with 1.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console

from codesign.device import DEVICE_HELP, parse_device, resolve_device, use_device
from codesign.errors import CodesignError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="From a recurrent model recipe to a bundle, a golden model, bit-exact RTL and netlists.",
)
console = Console()
err_console = Console(stderr=True)
DeviceOption = Annotated[str | None, typer.Option("--device", help=DEVICE_HELP)]


def user_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CodesignError as err:
            err_console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(err.exit_code) from None

    return wrapper


def _register_analog() -> None:
    from codesign.analog.commands import register

    register(app, user_errors)


_register_analog()


def _register_asic() -> None:
    from codesign.asic.commands import register

    register(app, user_errors)


_register_asic()


def _register_flow() -> None:
    from codesign.flow.commands import register

    register(app, user_errors)


_register_flow()


def _register_fpga() -> None:
    from codesign.fpga.commands import register

    register(app, user_errors)


_register_fpga()


def _register_board() -> None:
    from codesign.board.commands import register

    register(app, user_errors)


_register_board()


def _register_explore() -> None:
    from codesign.explore.cli import register

    register(app, user_errors)


_register_explore()


def _register_fit() -> None:
    from codesign.fit.commands import register

    register(app, user_errors)


_register_fit()


def _register_report() -> None:
    from codesign.report.commands import register

    register(app, user_errors)


_register_report()


def _register_study() -> None:
    from codesign.study.commands import register

    register(app, user_errors)


_register_study()


def _register_formal() -> None:
    from codesign.formal.commands import register

    register(app, user_errors)


_register_formal()


@app.command()
@user_errors
def doctor() -> None:
    """Check every tool the flow uses: version, usable or not, and the command that fixes it."""
    from codesign.doctor import main

    raise typer.Exit(main())


@app.command()
@user_errors
def train(
    recipe: Annotated[Path, typer.Argument(help="recipe YAML, e.g. models/copy_first_cmru.yaml")],
    out: Annotated[Path, typer.Option("--out", help="run directory (resumed if it holds the same recipe)")],
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="recipe override KEY=VALUE with a dotted key, value as YAML (e.g. task.train=data/x_TRAIN.ts, "
            "train.iterations=500); repeatable",
        ),
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Train a recipe; writes RUN/{recipe.yaml, best.pt, last.pt, metrics.csv, summary.json}."""
    from codesign.train import train as run_training
    from codesign.train.recipe import load_recipe

    parsed = load_recipe(recipe, option)
    with use_device(device):  # a bad --device is refused first, in one line
        if parsed.model.arch == "hardware":
            from codesign.train.advice import describe_inputs, describe_network

            console.print(f"network: {describe_network(parsed)}", soft_wrap=True)
            if (inputs := describe_inputs(parsed)) is not None:
                console.print(f"inputs: {inputs}", soft_wrap=True)
        result = run_training(parsed, out, progress=not quiet)
    rate = "" if result.update_rate is None else f", update rate p {result.update_rate:.4f}"
    console.print(
        f"trained {result.iterations} iterations ({result.stopped}) on {result.device} in {result.wall_s:.1f} s: "
        + (
            "no validation set (weights averaged), "
            if result.best_val is None
            else f"best validation {result.metric} {result.best_val:.4f} at iteration {result.best_iteration}, "
        )
        + f"test {result.metric} {result.test:.4f}{rate} -> {out}",
        soft_wrap=True,
    )


@app.command()
@user_errors
def quantize(
    run: Annotated[Path, typer.Argument(help="trained hardware-profile run")],
    bits: Annotated[int, typer.Option(help="weight width to fine-tune for")],
    out: Annotated[Path, typer.Option("--out", help="run directory of the fine-tuned model")],
    iterations: Annotated[int, typer.Option(help="fine-tuning iterations")] = 300,
    lr: Annotated[float, typer.Option(help="fine-tuning learning rate (warmup, cosine)")] = 2e-4,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    device: DeviceOption = None,
) -> None:
    """Quantization-aware fine-tuning: continue a run with fake-quantized weights; export RUN_Q after."""
    from codesign.quant.sweep import quantize_run

    if not lr > 0:
        raise CodesignError(f"--lr {lr}: the learning rate must be > 0")
    with use_device(device):
        result = quantize_run(run, out, bits, iterations, progress=not quiet, lr=lr)
    console.print(
        f"QAT {bits}-bit: {result.iterations} iterations, test {result.metric} {result.test:.4f} -> {out}",
        soft_wrap=True,
    )


@app.command()
@user_errors
def sweep(
    run: Annotated[Path, typer.Argument(help="trained hardware-profile run")],
    bits: Annotated[str, typer.Option(help="comma-separated weight widths")] = "8,6,4,3,2",
    qat_iterations: Annotated[
        int, typer.Option(help="QAT fine-tuning per width (0: post-training only)")
    ] = 0,
    qat_lr: Annotated[float, typer.Option(help="QAT fine-tuning learning rate")] = 2e-4,
    qat_scratch: Annotated[
        bool, typer.Option(help="also train the recipe from scratch with fake-quantized weights per width")
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="markdown table (default models/results/quant_<recipe>.md)")
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Accuracy of the golden (= hardware) model against weight width, for one trained run."""
    from codesign.quant.sweep import sweep as run_sweep
    from codesign.train.trainer import load_run

    parse_device(device)
    widths = parse_seeds(bits)
    if any(not 2 <= b <= 16 for b in widths):
        raise CodesignError(f"--bits {bits!r}: widths must lie in 2..16")
    if not qat_lr > 0:
        raise CodesignError(f"--qat-lr {qat_lr}: the learning rate must be > 0")
    recipe, _, _ = load_run(run)
    target = out or Path("models/results") / f"quant_{recipe.name}.md"
    with use_device(device):  # the QAT runs train there; quantization and the golden model on the CPU
        path = run_sweep(
            run,
            widths,
            qat_iterations=qat_iterations,
            qat_lr=qat_lr,
            qat_scratch=qat_scratch,
            out=target,
            work=Path(run) / "sweep",
            console=console,
        )
    console.print(f"-> {path}")


def parse_lanes(text: str) -> list[int]:
    try:
        lanes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CodesignError(f"--lanes {text!r} is not a comma-separated list of integers") from None
    if not lanes or min(lanes) < 1:
        raise CodesignError(f"--lanes {text!r}: give one or more lane counts >= 1")
    return lanes


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CodesignError(f"--seeds {text!r} is not a comma-separated list of integers") from None
    if not seeds:
        raise CodesignError("--seeds needs at least one seed")
    return seeds


@app.command("eval")
@user_errors
def eval_run(
    run: Annotated[Path, typer.Argument(help="run directory made by `codesign train`")],
    split: Annotated[str, typer.Option(help="val or test")] = "test",
    option: Annotated[
        list[str] | None, typer.Option("--set", help="task option override KEY=VALUE (YAML)")
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Evaluate a run's best checkpoint on its task (optionally with changed task options)."""
    import yaml

    from codesign.nn.surnn import update_rate
    from codesign.train.recipe import build_task
    from codesign.train.trainer import evaluate, load_run, metric_name

    if split not in ("val", "test"):
        raise CodesignError(f"--split {split!r} is not one of val, test")
    parse_device(device)
    recipe, model, _ = load_run(run)
    if device is not None:
        model.to(resolve_device(device))
    else:
        model.to(resolve_device(recipe.train.device, "train.device"))
    options = recipe.task.run_options(recipe.seed)
    for item in option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise CodesignError(f"--set {item!r} is not KEY=VALUE")
        options[key] = yaml.safe_load(value)
    task = build_task(recipe.task.name, options)
    x, y = task.split(split, recipe.seed)
    value = evaluate(model, task, x, y)
    changed = {k: v for k, v in options.items() if recipe.task.run_options(recipe.seed).get(k) != v}
    rate = update_rate(model, x.shape[1])
    console.print(
        f"{run}: {split} {metric_name(task)} {value:.4f} on {len(x)} sequences"
        + ("" if rate is None else f", update rate p {rate:.4f} over {x.shape[1]} steps")
        + (f" (task options {changed})" if changed else ""),
        soft_wrap=True,
    )


@app.command()
@user_errors
def repro(
    claims: Annotated[list[str] | None, typer.Argument(help="claims to reproduce (default: all)")] = None,
    seeds: Annotated[str, typer.Option(help="comma-separated seeds")] = "0,1",
    runs: Annotated[Path, typer.Option(help="where the training runs go (reused when present)")] = Path(
        "runs/repro"
    ),
    out: Annotated[Path, typer.Option(help="where the tables go")] = Path("models/results"),
    list_claims: Annotated[bool, typer.Option("--list", help="list the claims and exit")] = False,
    device: DeviceOption = None,
) -> None:
    """Reproduce the papers' headline results at this machine's budget; writes one table per claim."""
    from codesign.repro import claims as all_claims
    from codesign.repro import run_repro

    if list_claims:
        for name, claim in all_claims().items():
            console.print(f"{name}: {claim.title} ({claim.source})")
        return
    with use_device(device):
        run_repro(claims or [], seeds=parse_seeds(seeds), runs_root=runs, out_dir=out, console=console)


@app.command()
@user_errors
def bench(
    what: Annotated[str, typer.Argument(help="what to benchmark: scan, rtl or surnn")] = "scan",
    bundle: Annotated[
        list[Path] | None, typer.Option(help="rtl: bundle(s) to measure (default: three reference bundles)")
    ] = None,
    lanes: Annotated[str, typer.Option(help="rtl: comma-separated lane counts")] = "1,2,4,8,16",
    sequences: Annotated[int, typer.Option(help="rtl: sequences per point")] = 4,
    steps: Annotated[int, typer.Option(help="rtl: steps per sequence")] = 40,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="scan, rtl, surnn: write the figures here")
    ] = None,
    device: Annotated[
        str,
        typer.Option(
            help="scan: auto, cpu or cuda (auto: cuda when torch.cuda.is_available()); cuda measures the "
            "Triton scans against the floor, torch.cumsum and torch.nn.GRU"
        ),
    ] = "auto",
    rates: Annotated[
        str, typer.Option(help="surnn, rtl (selective bundles): comma-separated update rates p")
    ] = "0.1,0.3,1.0",
    measured: Annotated[
        list[str] | None, typer.Option(help="surnn: LABEL=P, the update rate of a trained run (repeatable)")
    ] = None,
    sizes: Annotated[
        str, typer.Option(help="surnn: comma-separated widths (input = hidden)")
    ] = "64,256,1024",
    batches: Annotated[str, typer.Option(help="surnn: comma-separated batch sizes")] = "1,16",
    repeats: Annotated[int, typer.Option(help="surnn: timed runs per point (median)")] = 5,
    cells: Annotated[
        str, typer.Option(help="surnn: comma-separated cells (suGRU, suMinGRU)")
    ] = "suGRU,suMinGRU",
    markdown: Annotated[Path | None, typer.Option(help="surnn: also write a markdown table here")] = None,
    target: Annotated[
        str, typer.Option(help="rtl: the plan's chip (generic, asic, up5k, ecp5), as `codesign rtl --target`")
    ] = "generic",
    share_multipliers: Annotated[
        str,
        typer.Option(
            "--share-multipliers",
            help="rtl: off, on, auto or N multipliers per lane [:K cycles per LUT product], as `codesign rtl`",
        ),
    ] = "off",
    narrow: Annotated[
        str | None,
        typer.Option(
            help="rtl: off or auto (weight, bias and kept-sum words folded per pass), as `codesign rtl`; "
            "default: auto on up5k, off elsewhere"
        ),
    ] = None,
    share_updates: Annotated[
        str,
        typer.Option(
            "--share-updates",
            help="rtl: off or on (one update unit per layer serving its lanes in turn), as `codesign rtl`",
        ),
    ] = "off",
    merge: Annotated[
        str,
        typer.Option(
            help="rtl: off or auto (memories read together in one physical word), as `codesign rtl`"
        ),
    ] = "off",
) -> None:
    """Benchmarks that print JSON: scan and cell speed (scan), accelerator cycles per step (rtl), or
    mask-aware suRNN streaming inference against the dense path (surnn)."""
    if device not in ("auto", "cpu", "cuda"):
        raise CodesignError(f"--device {device!r}: expected auto, cpu or cuda")
    if device != "auto" and what != "scan":
        raise CodesignError(f"--device applies to `bench scan` only, not `bench {what}`")
    if what == "surnn":
        _bench_surnn(json_path, rates, measured or [], sizes, batches, repeats, markdown, cells)
        return
    if what == "rtl":
        from codesign.verify.bench import DEFAULT_BUNDLES, run_bench

        root = Path(__file__).resolve().parents[1] / "models" / "bundles"
        paths = bundle or [root / name for name in DEFAULT_BUNDLES]
        summary = run_bench(
            paths,
            parse_lanes(lanes),
            sequences=sequences,
            steps=steps,
            json_path=json_path,
            progress=lambda line: console.print(line, highlight=False, soft_wrap=True),
            rates=_parse_rates(rates),
            target=target,
            share=share_multipliers,
            narrow=narrow,
            share_updates=share_updates,
            merge=merge,
        )
        if json_path is None:
            print(json.dumps(summary, indent=2))
        return
    if what != "scan":
        raise CodesignError(f"unknown benchmark {what!r}; available: scan, rtl, surnn")
    _bench_scan(device, json_path)


def _bench_scan(device: str, json_path: Path | None) -> None:
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        from codesign.nn.bench import main

        raise typer.Exit(main(["--out", str(json_path)] if json_path is not None else []) or 0)
    if not torch.cuda.is_available():
        raise CodesignError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    from codesign.atomic import write_text
    from codesign.nn.bench_gpu import bench_gpu

    def progress(report: dict) -> None:
        done = [k for k in ("agreement", "tiles", "cells") if k in report] + list(report["scan"])
        console.print(f"bench scan --device cuda: {', '.join(done)} done", highlight=False)
        if json_path is not None:
            write_text(json_path, json.dumps(report, indent=2) + "\n")

    report = bench_gpu(device="cuda", progress=progress)
    if json_path is None:
        print(json.dumps(report, indent=2))


def _parse_rates(rates: str) -> list[float]:
    try:
        values = [float(r) for r in rates.split(",") if r.strip()]
    except ValueError:
        raise CodesignError(f"--rates {rates!r} is not a comma-separated list of numbers") from None
    bad = [r for r in values if not 0.0 <= r <= 1.0]
    if bad or not values:
        raise CodesignError(f"--rates {rates!r}: update rates must lie in [0, 1]")
    return values


def _bench_surnn(
    json_path: Path | None,
    rates: str,
    measured: list[str],
    sizes: str,
    batches: str,
    repeats: int,
    markdown: Path | None,
    cells: str = "suGRU,suMinGRU",
) -> None:
    from codesign.atomic import write_text
    from codesign.nn.bench_surnn import SurnnBenchConfig, bench_surnn, markdown_table

    def floats(text: str, what: str) -> tuple[float, ...]:
        try:
            return tuple(float(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise CodesignError(f"--{what} {text!r}: expected comma-separated numbers") from None

    pairs = []
    for item in measured:
        label, sep, value = item.rpartition("=")
        if not sep or not label:
            raise CodesignError(f"--measured {item!r} is not LABEL=P")
        pairs.append((label, floats(value, "measured")[0]))
    cfg = SurnnBenchConfig(
        sizes=tuple(int(v) for v in floats(sizes, "sizes")),
        batches=tuple(int(v) for v in floats(batches, "batches")),
        rates=floats(rates, "rates"),
        measured=tuple(pairs),
        repeats=repeats,
        cells=tuple(c.strip() for c in cells.split(",") if c.strip()),
    )
    if not set(cfg.cells) <= {"suGRU", "suMinGRU"}:
        raise CodesignError(f"--cells {cells!r}: the cells are suGRU and suMinGRU")
    if not all(0 < p <= 1 for _, p in pairs) or not all(0 < p <= 1 for p in cfg.rates):
        raise CodesignError("update rates must lie in (0, 1]")
    report = bench_surnn(cfg, progress=lambda line: console.print(line, highlight=False))
    text = json.dumps(report, indent=2) + "\n"
    if json_path is not None:
        write_text(json_path, text)
    else:
        print(text, end="")
    if markdown is not None:
        write_text(markdown, markdown_table(report, [label for label, _ in pairs]))


@app.command("spoken-digits")
@user_errors
def spoken_digits(
    out: Annotated[
        Path | None, typer.Option(help="dataset folder (default: the cache the loader reads)")
    ] = None,
    per_word: Annotated[int, typer.Option(help="clips per word")] = 300,
    seed: Annotated[int, typer.Option(help="random seed (voices, speeds, pitches, noise)")] = 0,
) -> None:
    """Synthesise the spoken digits 'zero'..'nine' with espeak-ng in the Speech Commands layout."""
    from codesign.data.spoken_digits import default_root, generate

    root = out or default_root(per_word, seed)
    generate(root, per_word=per_word, seed=seed)
    console.print(f"spoken digits ({per_word} clips per word, seed {seed}) -> {root}")


@app.command()
@user_errors
def export(
    run: Annotated[Path, typer.Argument(help="run directory made by `codesign train`")],
    out: Annotated[Path, typer.Option("--out", help="bundle directory to write")],
) -> None:
    """Quantize a trained run and write its deployment bundle (manifest.yaml + weights.npz)."""
    from codesign.quant import export_run

    _, report = export_run(run, out)
    console.print(
        f"bundle {out}: float test accuracy {report['float_test_accuracy']:.4f}, quantized (golden) "
        f"{report['quantized_test_accuracy']:.4f}, torch vs golden mismatches "
        f"{report['torch_vs_golden_mismatches']}/{report['test_sequences']}",
        soft_wrap=True,  # one line whatever the path's length: scripts and tests grep it
    )


def load_npy(path: Path, what: str) -> np.ndarray:
    if not path.is_file():
        raise CodesignError(f"{what} file not found", path=path)
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise CodesignError(f"not a readable .npy array without pickles ({err})", path=path) from None


@app.command()
@user_errors
def golden(
    bundle: Annotated[Path, typer.Argument(help="bundle directory")],
    inputs: Annotated[
        Path, typer.Option("--inputs", help=".npy (N, T, M): float (quantized here) or integer")
    ],
    out: Annotated[Path, typer.Option("--out", help=".npy to write")],
    output: Annotated[
        str, typer.Option(help="what to write: classes (N,), logits (N, C) or states (N, T, d)")
    ] = "classes",
) -> None:
    """Run the golden integer model on inputs; write predicted classes, logits or states."""
    from codesign.atomic import write_npy
    from codesign.bundle import load_bundle
    from codesign.golden import quantize_inputs, run_golden

    if output not in ("classes", "logits", "states"):
        raise CodesignError(f"--output {output!r} is not one of classes, logits, states")
    b = load_bundle(bundle)
    x = load_npy(inputs, "inputs")
    try:
        xq = x if x.dtype.kind in "iu" else quantize_inputs(b, x)
        result = run_golden(b, xq)
    except CodesignError as err:
        raise CodesignError(str(err), path=inputs) from None
    write_npy(out, getattr(result, output))
    console.print(f"golden: {len(result.classes)} sequences x {xq.shape[1]} steps -> {out} ({output})")


@app.command("random-bundle")
@user_errors
def random_bundle(
    out: Annotated[Path, typer.Option("--out", help="bundle directory to write")],
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    d: Annotated[int, typer.Option("--d", help="neurons per layer")] = 16,
    inputs: Annotated[int, typer.Option(help="input features M")] = 8,
    classes: Annotated[int, typer.Option(help="output classes C")] = 10,
    cell: Annotated[
        str,
        typer.Option(
            help="cell, or comma-separated cells for a stack: cmru, bmru, alphacmru, bgmingru, mingru, hsru"
        ),
    ] = "cmru",
    layers: Annotated[int, typer.Option(help="layers (when one cell is given)")] = 1,
    eps: Annotated[int, typer.Option(help="-1, 0 or 1 for cmru/alphacmru layers (bmru: 0)")] = 1,
    dcls: Annotated[str | None, typer.Option(help="DCLS front end on every layer: TAPS,SPAN")] = None,
    pooling: Annotated[str, typer.Option(help="last or sum")] = "last",
    per_step: Annotated[bool, typer.Option(help="logits at every step")] = False,
    input_bits: Annotated[int, typer.Option(help="input width")] = 8,
    weight_bits: Annotated[int, typer.Option(help="weight width")] = 8,
    state_bits: Annotated[int, typer.Option(help="state width (small values exercise saturation)")] = 16,
    alpha_bits: Annotated[int, typer.Option(help="alpha width")] = 8,
    selective: Annotated[
        bool, typer.Option(help="selective update on every layer (a time-driven gate table)")
    ] = False,
    period: Annotated[int, typer.Option(help="--selective: the schedule's period (a power of two)")] = 16,
    update_rate: Annotated[
        float | None, typer.Option(help="--selective: open fraction of neuron-steps (default: drawn)")
    ] = None,
    input_stride: Annotated[
        int, typer.Option(help="input frames per step of layer 0 (a power of two, 1..256)")
    ] = 1,
) -> None:
    """Make a bundle with random legal weights for any member of the family, from a seed."""
    from pydantic import ValidationError

    from codesign.bundle.cells import CELLS
    from codesign.bundle.io import validation_message
    from codesign.bundle.random import make_random_network_bundle
    from codesign.bundle.spec import CELL_KINDS

    cells = [c.strip() for c in cell.split(",") if c.strip()]
    unknown = [c for c in cells if c not in CELL_KINDS]
    if unknown or not cells:
        raise CodesignError(f"--cell {cell!r}: cells must be among {', '.join(CELL_KINDS)}")
    if len(cells) == 1:
        cells = cells * layers
    front = None
    if dcls is not None:
        try:
            taps, span = (int(v) for v in dcls.split(","))
        except ValueError:
            raise CodesignError(f"--dcls {dcls!r} is not TAPS,SPAN (two integers)") from None
        front = {"taps": taps, "span": span}
    specs = []
    for kind in cells:
        layer = {
            "cell": kind,
            "size": d,
            "weight_bits": weight_bits,
            "state_bits": state_bits,
            "alpha_bits": alpha_bits,
        }
        if CELLS[kind].has_eps:
            layer["eps"] = eps
        if front is not None:
            layer["dcls"] = front
        if selective:
            layer["selective"] = {"period": period}
        specs.append(layer)
    if update_rate is not None and not 0.0 <= update_rate <= 1.0:
        raise CodesignError(f"--update-rate {update_rate} is outside [0, 1]")
    try:
        b = make_random_network_bundle(
            str(out),
            seed=seed,
            inputs=inputs,
            layers=specs,
            classes=classes,
            input_bits=input_bits,
            pooling=pooling,
            per_step=per_step,
            update_rate=update_rate,
            input_stride=input_stride,
        )
    except ValidationError as err:
        raise CodesignError(validation_message(err)) from None
    console.print(f"random bundle {b.manifest.name} -> {out}")


@app.command()
@user_errors
def inspect(bundle: Annotated[Path, typer.Argument(help="bundle directory")]) -> None:
    """Print a bundle readably: network, integer formats, derived widths, memory bits, provenance."""
    from codesign.bundle import load_bundle
    from codesign.bundle.inspect import render

    console.print(render(load_bundle(bundle)))


_RTL_HELP = {
    "lanes": "parallel lanes P per engine (1..widest layer; default 1, or the mapper's choice with --device)",
    "weights": "baked: parameters as memory initial values; runtime: zeroed memories loaded through "
    "the config stream (one build serves every bundle of the same shape); frozen: weights, "
    "biases and parameters as ROMs (the smallest build; the plan may put them in LUTs); spram: "
    "frozen, but the largest weight matrices in the chip's single-port RAMs (UP5K SPRAM), "
    "loaded through the config stream before the first sequence (default baked)",
    "target": "chip the plan maps onto: generic (the tool decides; the default), asic, up5k or ecp5 (block "
    "RAM or logic per memory, hard or LUT multipliers per engine; build.json records the choice); "
    "--device sets it",
    "counters": "observability counters to build: all (what the testbench checks and the report "
    "prices; the default), basic (cycles, sequences, results, each engine's steps, MACs and events) or none",
    "share": "off (the default): one multiplier per lane and matrix; on: one per lane, shared over the "
    "matrices in successive cycles (a slot takes one cycle per matrix); N: N per lane; auto: the target "
    "shares where its hard multipliers run out; any of them followed by :K (2 or 4, e.g. auto:4): "
    "an engine whose weight products are all in LUTs takes K cycles per product with a "
    "multiplier of 1/K of the weight's Booth digits (build.json records the choices)",
    "narrow": "off: a weight word holds every matrix of every lane; auto: an engine whose lanes "
    "take their matrices in passes (--share-multipliers) keeps one slice per pass at "
    "consecutive addresses, a memory that many times deeper and narrower, at no cycle "
    "(build.json: plan.narrow, plan.memories[].fold); default: auto on the up5k "
    "targets (measured: as many or fewer cells and block RAMs), off elsewhere",
    "share_updates": "off (the default): one update unit per lane; on: one per layer, serving a group's P "
    "lanes in the P cycles after its sums are ready (P - 1 idle issue cycles per group; build.json: "
    "plan.share_updates, plan.engines[].update_units)",
    "merge": "off (the default): a physical memory per logical memory; auto: the memories an engine reads "
    "at one address in one cycle (parameters, state, pooled sums) side by side in one physical "
    "word, at the same cycles (build.json: plan.merge, plan.physical, plan.memories[].shared)",
    "device": "map for a chip: up5k, hx8k, ecp5-25k, ecp5-85k or asic. The mapper searches lanes and "
    "every mapping option not given explicitly, predicts resources and cycles per step, and builds "
    "the best that fits (build.json: mapping)",
    "step_rate": "with --device: steps per second the build must sustain at the clock (default: none)",
    "clock": "with --device: clock in MHz the step rate is checked at (default 30 on iCE40, 80 on ECP5)",
    "objective": "with --device: energy (the default), area or latency (cycles per step)",
    "confirm": "with --device: synthesise the N best candidates and pick on the measured figures",
    "bus": "the top's face: stream (the accelerator's valid/ready ports, the default) or axi (AXI4-Stream "
    "inputs and results, AXI4-Lite registers for identity, status, weights and counters; clock aclk, reset "
    "aresetn; build.json: axi, docs/integration.md)",
    "name": "the top module's name, which every other module's name starts with (a letter or _, then "
    "letters, digits or _, at most 64 characters, no Verilog keyword); default: the bundle's name made "
    "such an identifier. Builds with different names share one design",
    "inputs": "with --device: .npy (N, T, M), float (quantized here) or integer, that the mapper's cycle "
    "model plays (default: the bundle's own test set, else random integers)",
}


def _is_feature_bundle(bundle: Path) -> bool:
    import yaml

    from codesign.bundle.io import MANIFEST, is_feature_manifest

    try:
        return is_feature_manifest(yaml.safe_load((bundle / MANIFEST).read_text()))
    except (OSError, yaml.YAMLError):
        return False  # load_bundle names what is wrong


def _rtl_features(bundle: Path, out: Path, weights: str | None, **recurrent_only) -> None:
    """A random-feature bundle's accelerator (``codesign/hw/features_build.py``): one datapath, no
    mapping options but where its readout weights live (``--weights rom`` or ``spram``)."""
    from codesign.hw.features_build import build_feature_rtl

    given = sorted(f"--{k.replace('_', '-')}" for k, v in recurrent_only.items() if v is not None)
    if given:
        raise CodesignError(
            f"{', '.join(given)}: a random-feature bundle has no such mapping option (it takes --weights rom|spram)",
            path=bundle,
        )
    if weights not in (None, "rom", "spram"):
        raise CodesignError(f"--weights {weights}: a random-feature bundle takes rom or spram", path=bundle)
    from codesign.bundle.features import FeatureSpec

    info = build_feature_rtl(bundle, out, weights or "rom")
    cycles = info["cycles"]
    console.print(
        f"{out}: random-feature accelerator, {FeatureSpec(**info['features']).size} units, "
        f"{cycles['frame']} cycles per frame, {cycles['readout']} for the readout (weights {info['weights']})",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
@user_errors
def rtl(
    bundle: Annotated[Path, typer.Argument(help="bundle directory")],
    out: Annotated[Path, typer.Option("--out", help="build directory to write")],
    lanes: Annotated[int | None, typer.Option(help=_RTL_HELP["lanes"])] = None,
    weights: Annotated[str | None, typer.Option(help=_RTL_HELP["weights"])] = None,
    target: Annotated[str | None, typer.Option(help=_RTL_HELP["target"])] = None,
    counters: Annotated[str | None, typer.Option(help=_RTL_HELP["counters"])] = None,
    share_multipliers: Annotated[
        str | None, typer.Option("--share-multipliers", help=_RTL_HELP["share"])
    ] = None,
    narrow: Annotated[str | None, typer.Option(help=_RTL_HELP["narrow"])] = None,
    share_updates: Annotated[
        str | None, typer.Option("--share-updates", help=_RTL_HELP["share_updates"])
    ] = None,
    merge: Annotated[str | None, typer.Option(help=_RTL_HELP["merge"])] = None,
    device: Annotated[str | None, typer.Option(help=_RTL_HELP["device"])] = None,
    step_rate: Annotated[float | None, typer.Option("--step-rate", help=_RTL_HELP["step_rate"])] = None,
    clock: Annotated[float | None, typer.Option(help=_RTL_HELP["clock"])] = None,
    objective: Annotated[str | None, typer.Option(help=_RTL_HELP["objective"])] = None,
    confirm: Annotated[int, typer.Option(help=_RTL_HELP["confirm"])] = 0,
    inputs: Annotated[Path | None, typer.Option(help=_RTL_HELP["inputs"])] = None,
    name: Annotated[str | None, typer.Option(help=_RTL_HELP["name"])] = None,
    bus: Annotated[str, typer.Option(help=_RTL_HELP["bus"])] = "stream",
) -> None:
    """Generate the accelerator's Verilog for a bundle (plus a copy of the bundle); with --device,
    the mapper picks the build."""
    from codesign.hw.build import check_module_name
    from codesign.hw.faces import BUSES

    if _is_feature_bundle(bundle):
        _rtl_features(
            bundle,
            out,
            weights,
            lanes=lanes,
            device=device,
            counters=counters,
            inputs=inputs,
            name=name,
            bus=None if bus == "stream" else bus,
        )
        return

    if name is not None:
        check_module_name(name)  # before the mapper's search
    if bus not in BUSES:
        raise CodesignError(f"--bus {bus!r}: allowed: {', '.join(BUSES)}")
    given = {
        k: v
        for k, v in {
            "weights": weights,
            "counters": counters,
            "share": share_multipliers,
            "narrow": narrow,
            "share_updates": share_updates,
            "merge": merge,
        }.items()
        if v is not None
    }
    if device is not None:
        seqs = None if inputs is None else _mapper_inputs(bundle, inputs)
        info = _rtl_mapped(
            bundle,
            out,
            device,
            lanes,
            target,
            given,
            objective,
            step_rate,
            clock,
            confirm,
            seqs,
            name=name,
            bus=bus,
        )
    else:
        mapper_only = {
            "--step-rate": step_rate,
            "--clock": clock,
            "--objective": objective,
            "--inputs": inputs,
        }
        info = _rtl_fixed(bundle, out, lanes, target, given, name, bus, mapper_only, confirm)
    _print_build(info, out)


def _rtl_fixed(
    bundle: Path,
    out: Path,
    lanes: int | None,
    target: str | None,
    given: dict,
    name: str | None,
    bus: str,
    mapper_only: dict,
    confirm: int,
) -> dict:
    """``codesign rtl`` without ``--device``: the build the options name (the mapper's options refused)."""
    from codesign.hw.build import build_rtl

    named = [flag for flag, v in mapper_only.items() if v is not None] + (["--confirm"] if confirm else [])
    if named:
        raise CodesignError(f"{', '.join(named)} choose among builds for a chip: give --device too")
    defaults = {"weights": "baked", "counters": "all", "share": "off", "share_updates": "off", "merge": "off"}
    return build_rtl(
        bundle, out, lanes=lanes or 1, target=target or "generic", name=name, bus=bus, **(defaults | given)
    )


def _mapper_inputs(bundle: Path, inputs: Path) -> list[np.ndarray]:
    """``--inputs`` as integer sequences on the bundle's input grid (:meth:`codesign.api.Bundle.integer_inputs`)."""
    from codesign.api import load

    try:
        return list(load(bundle).integer_inputs(load_npy(inputs, "inputs"), "--inputs"))
    except CodesignError as err:
        raise CodesignError(str(err), path=inputs) from None


def _rtl_mapped(
    bundle: Path,
    out: Path,
    device: str,
    lanes: int | None,
    target: str | None,
    given: dict[str, str],
    objective: str | None,
    step_rate: float | None,
    clock: float | None,
    confirm: int,
    inputs: list[np.ndarray] | None = None,
    *,
    name: str | None = None,
    bus: str = "stream",
) -> dict:
    """``codesign rtl --device``: the mapper's choice, its table, and the build with its record."""
    from codesign.hw.build import build_rtl
    from codesign.hw.cost import get_device
    from codesign.mapper import confirm as confirm_mapping
    from codesign.mapper import map_bundle, mapping_table

    chip = get_device(device)
    if target is not None and target != chip.target:
        raise CodesignError(
            f"--target {target} contradicts --device {device}, which builds for --target {chip.target}"
        )
    if confirm < 0:
        raise CodesignError(f"--confirm {confirm}: the number of candidates to synthesise must be >= 0")

    def say(text: str) -> None:
        err_console.print(f"rtl: {text}", highlight=False, soft_wrap=True)

    mapping = map_bundle(
        bundle,
        device,
        objective=objective or "energy",
        step_rate=step_rate,
        clock_mhz=clock,
        fixed=given,
        lanes=lanes,
        progress=say,
        inputs=inputs,
    )
    if confirm:
        work = Path(out).parent / f".{Path(out).name}.confirm"
        mapping = confirm_mapping(mapping, bundle, work, confirm, progress=say)
    wide = console if sys.stdout.isatty() else Console(width=150)
    wide.print(mapping_table(mapping))
    console.print(f"chosen: {mapping.reason}", highlight=False, soft_wrap=True)
    w = mapping.winner
    return build_rtl(
        bundle,
        out,
        lanes=w.lanes,
        target=chip.target,
        mapping=mapping.record(),
        name=name,
        bus=bus,
        **w.options,
    )


def _print_build(info: dict, out: Path) -> None:
    """The one-line summary of a build: engines, memories, target, counters, sharing, folds, merges."""
    plan = info["plan"]
    engines = ", ".join(
        f"{e['name']} {e['kind']} d={e['size']} P={e['lanes']}"
        + (
            f" ({e['lane_multipliers']} multiplier(s) per lane, {e['passes']} cycles per slot)"
            if e["passes"] > 1
            else ""
        )
        for e in plan["engines"]
    )
    bits = sum(m["bits"] for m in plan["memories"])
    console.print(
        f"verilog {Path(out) / 'accelerator.v'} (top {info['top']}, {info['weights']} weights): {engines}; "
        f"{len(plan['memories'])} memories, {bits} bits; target {plan['target']}, {len(plan['counters'])} counters"
        + (
            f"; {info['bus']} face (registers in build.json: axi)"
            if info.get("bus", "stream") != "stream"
            else ""
        )
        + (f", multipliers shared ({plan['share']})" if plan["share"] != "off" else "")
        + (
            ", folded weights: "
            + ", ".join(f"{m['name']} x{m['fold']}" for m in plan["memories"] if m["fold"] > 1)
            if plan.get("narrow", "off") != "off"
            else ""
        )
        + "".join(
            f", merged {name} ({' + '.join(p['name'] for p in phys['parts'])}: {phys['depth']} x {phys['width']})"
            for name, phys in plan.get("physical", {}).items()
        ),
        highlight=False,
        soft_wrap=True,
    )


@app.command()
@user_errors
def sim(
    build: Annotated[Path, typer.Argument(help="build directory made by `codesign rtl`")],
    simulator: Annotated[str, typer.Option("--sim", help="icarus or verilator")] = "icarus",
    vectors: Annotated[
        int | None,
        typer.Option(help="sequences: random ones (default 20), or the first N of --inputs (default all)"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the random sequences")] = 0,
    inputs: Annotated[Path | None, typer.Option(help=".npy inputs (N, T, M), float or integer")] = None,
    labels: Annotated[
        Path | None, typer.Option(help=".npy labels (N,) or, per-step, (N, T) for an accuracy figure")
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            help="write sequences, steps, mismatches, cycles, cycles per step, the cycle floor per step "
            "and every counter as JSON",
        ),
    ] = None,
    test: Annotated[
        list[str] | None,
        typer.Option(
            "--test",
            help="testbench test(s): random_sequences (default), directed_corners, reset_mid_sequence, "
            "long_sequence",
        ),
    ] = None,
    bundle: Annotated[
        list[Path] | None,
        typer.Option(
            "--bundle", help="bundle(s) of the build's shape loaded through config (runtime builds)"
        ),
    ] = None,
    gaps: Annotated[bool, typer.Option(help="random valid gaps and back-pressure on every stream")] = True,
    timeout: Annotated[float, typer.Option(help="seconds before the simulator is killed")] = 1800,
    netlist: Annotated[
        str | None,
        typer.Option(
            help="simulate the accelerator as yosys maps it for this chip (up5k, hx8k, ecp5-25k or ecp5-85k): "
            "block RAM, SPRAM, DSP and LUT primitives with their cell models, in BUILD/netlist/DEVICE/"
        ),
    ] = None,
    power: Annotated[
        bool,
        typer.Option(
            "--power",
            help="with --netlist (Icarus): dump a VCD and count the netlist's toggles, block-RAM, SPRAM and DSP "
            "events into BUILD/power/DEVICE.json, the activity `codesign report` prices as the FPGA power estimate",
        ),
    ] = False,
    pins: Annotated[
        bool,
        typer.Option(
            "--pins",
            help="simulate the whole chip at its UART pins: fpga_top (UART, bridge, accelerator; the "
            "--netlist mapping, else the RTL) with a small UART divisor, driven by a serial model of the "
            "host with the board protocol's bytes, answers against golden (random sequences only)",
        ),
    ] = False,
    test_set: Annotated[
        int | None,
        typer.Option(
            "--test-set",
            help="simulate the first N sequences of the bundle's own test set (its provenance's task and "
            "seed, standardised and quantized as training and the golden model do; 0: all) with their "
            "labels: accuracy and mismatches, no inputs to prepare",
        ),
    ] = None,
) -> None:
    """Simulate the RTL (or the chip's netlist) with cocotb and compare it with the golden model bit by bit."""
    from codesign.atomic import write_text

    if simulator not in ("icarus", "verilator"):
        raise CodesignError(f"--sim {simulator!r} is not one of icarus, verilator")
    if pins:
        _pins_alone(inputs, labels, test_set, test, bundle, power)
        _sim_pins(build, netlist, simulator, vectors, seed, timeout, json_path)
        return
    inputs, labels, vectors = _sim_inputs(build, test_set, inputs, labels, vectors)
    if power and (netlist is None or simulator != "icarus"):
        raise CodesignError("--power needs --netlist DEVICE and --sim icarus (the VCD of the mapped netlist)")
    sim_kwargs = dict(
        vectors=vectors,
        seed=seed,
        inputs=inputs,
        labels=labels,
        timeout_s=timeout,
        gaps=gaps,
        tests=tuple(test or ("random_sequences",)),
        bundles=bundle or None,
    )
    report = _sim_build(build, simulator, netlist, power, _played(test_set, inputs, seed), sim_kwargs)
    if json_path is not None:
        write_text(json_path, json.dumps(report.summary_json(), indent=2) + "\n")
    if report.mismatches:
        raise typer.Exit(1)


def _sim_build(build: Path, simulator: str, netlist: str | None, power: bool, played: str, sim_kwargs: dict):
    """Simulate ``build`` (or its netlist for chip ``netlist``) and print the summary; with
    ``power``, price the netlist's activity (:func:`_netlist_power`). Returns the report."""
    from codesign.verify.runner import run_sim

    source_build = build
    if netlist is not None:
        from codesign.fpga.netlist import netlist_build

        build = netlist_build(build, netlist, progress=lambda line: err_console.print(f"sim: {line}"))
    with _vcd_waves(power):
        report = run_sim(build, simulator, waves="always" if power else "on_failure", **sim_kwargs)
    console.print(report.summary_line(), highlight=False)
    if power:
        _netlist_power(source_build, build, netlist, report, played)
    if report.waveform and report.mismatches:
        console.print(f"waveform of the failing test: {report.waveform}", highlight=False)
    return report


@contextlib.contextmanager
def _vcd_waves(on: bool):
    """Icarus dumps a VCD (not an FST) while ``on``: the toggle counter reads VCD."""
    if not on:
        yield
        return
    old = os.environ.get("CODESIGN_WAVES_FORMAT")
    os.environ["CODESIGN_WAVES_FORMAT"] = "vcd"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CODESIGN_WAVES_FORMAT", None)
        else:
            os.environ["CODESIGN_WAVES_FORMAT"] = old


def _netlist_power(build: Path, netlist_dir: Path, device: str, report, played: str) -> None:
    """Count the netlist simulation's events (codesign.hw.toggles) into ``BUILD/power/DEVICE.json``
    and print the FPGA power estimate at the device's board clock and 100 steps per second."""
    from codesign.atomic import write_text
    from codesign.hw.build import build_top
    from codesign.hw.power import estimate, load_power_data
    from codesign.hw.toggles import netlist_cells, vcd_activity

    if not report.waveform:
        raise CodesignError("the simulation wrote no VCD to count toggles in", path=netlist_dir)
    top = build_top(netlist_dir)
    activity = vcd_activity(Path(report.waveform), netlist_cells(netlist_dir / "accelerator.v", top), top=top)
    activity.update(
        device=device,
        basis="netlist",
        steps=int(report.steps),
        sequences=int(report.sequences),
        gaps=bool(report.gaps),
        inputs=played,
        vcd=str(report.waveform),
        netlist=str(netlist_dir / "accelerator.v"),
    )
    out = Path(build) / "power" / f"{device}.json"
    write_text(out, json.dumps(activity, indent=2) + "\n")
    from codesign.fpga.devices import get_device

    clock_mhz = get_device(device).board_clock_hz / 1e6
    est = estimate(
        load_power_data(device), activity, clock_mhz=clock_mhz, step_rate=100.0, steps_per_inference=1
    )
    console.print(
        f"FPGA power (estimate, {device}, netlist toggles of {activity['steps']} steps, {activity['cycles']} cycles): "
        f"static {est['static_mw']:.3f} mW, dynamic {est['dynamic_mw']:.3f} mW at {clock_mhz:g} MHz "
        f"(clock {est['clock_mw']:.3f} mW + logic {est['logic_pj_per_step'] / 1e3:.2f} nJ a step), "
        f"average {est['average_mw']:.3f} mW at 100 steps/s; activity {out}",
        highlight=False,
    )


def _played(test_set: int | None, inputs: Path | None, seed: int) -> str:
    """What a ``--power`` simulation played, for its activity record."""
    if test_set is not None:
        return f"the bundle's test set (first {test_set or 'all'})"
    return inputs.name if inputs is not None else f"random testbench sequences (seed {seed})"


def _pins_alone(inputs, labels, test_set, test, bundle, power) -> None:
    """``--pins`` plays random sequences only: refuse the options that choose others."""
    if inputs is not None or labels is not None or test_set is not None or test or bundle or power:
        raise CodesignError(
            "--pins runs random sequences only: leave out --inputs, --labels, --test-set, --test, --bundle, --power"
        )


def _sim_pins(
    build: Path,
    netlist: str | None,
    simulator: str,
    vectors: int | None,
    seed: int,
    timeout: float,
    json_path,
) -> None:
    """``codesign sim --pins``: fpga_top at its UART pins against golden (:mod:`codesign.board.pins`)."""
    from codesign.atomic import write_text
    from codesign.board.pins import run_pins
    from codesign.fpga.pins import pins_build

    folder = pins_build(build, netlist, progress=lambda line: err_console.print(f"sim: {line}"))
    report = run_pins(
        folder, simulator, vectors=4 if vectors is None else vectors, seed=seed, timeout_s=timeout
    )
    console.print(report.summary_line(), highlight=False)
    if json_path is not None:
        write_text(json_path, json.dumps(report.summary_json(), indent=2) + "\n")
    if not report.ok:
        raise typer.Exit(1)


def _sim_inputs(
    build: Path, test_set: int | None, inputs: Path | None, labels: Path | None, vectors: int | None
) -> tuple[Path | None, Path | None, int]:
    """What ``codesign sim`` plays: the bundle's own test set (``--test-set``), the user's
    ``--inputs``/``--labels``, or random vectors (20 unless ``--vectors`` says otherwise)."""
    if test_set is not None:
        if inputs is not None or labels is not None:
            raise CodesignError(
                "--test-set brings its own inputs and labels: leave out --inputs and --labels"
            )
        inputs, labels = _test_set_files(build, test_set)
        vectors = 0
    if vectors is None:
        vectors = 0 if inputs is not None else 20
    return inputs, labels, vectors


def _test_set_files(build: Path, count: int) -> tuple[Path, Path]:
    """The first ``count`` (0: all) test sequences of the build's bundle, quantized, and their
    labels, as ``.npy`` files in ``BUILD/test_set/`` (what ``--inputs`` and ``--labels`` read)."""
    from codesign.atomic import write_npy
    from codesign.bundle import load_bundle
    from codesign.golden.model import quantize_inputs

    if count < 0:
        raise CodesignError(f"--test-set {count}: the number of sequences must be >= 0 (0: all)")
    bundle = load_bundle(build)
    prov = bundle.manifest.provenance or {}
    task = prov.get("task") if isinstance(prov, dict) else None
    if not task or "seed" not in prov:
        raise CodesignError(
            "--test-set: the bundle's provenance names no task and seed (a random or hand-made bundle); "
            "give --inputs and --labels instead",
            path=build / "manifest.yaml",
        )
    from codesign.train.recipe import build_task

    options = {k: v for k, v in task.items() if k != "name"}
    x, y = build_task(task["name"], options).split("test", int(prov["seed"]))
    n = len(x) if count == 0 else min(count, len(x))
    q = np.asarray(quantize_inputs(bundle, x.numpy()[:n]), dtype=np.int64)
    out = Path(build) / "test_set"
    write_npy(out / "inputs.npy", q)
    labels = y[:n].numpy()
    if np.issubdtype(labels.dtype, np.floating):  # one-hot targets: the class is the hot index
        labels = labels.argmax(-1)
    write_npy(out / "labels.npy", labels.astype(np.int64))
    return out / "inputs.npy", out / "labels.npy"


if __name__ == "__main__":
    app()


FLOW: dict[str, tuple[str, ...]] = {
    "Start here": ("doctor", "demo", "flow"),
    "Model": ("spoken-digits", "train", "fit", "eval", "quantize", "sweep", "export", "inspect", "repro"),
    "Hardware": ("rtl", "synth", "board", "area", "asic", "asic-cells", "analog"),
    "Verification": (
        "sim",
        "prove",
        "formal",
        "golden",
        "random-bundle",
        "bench",
        "analog-check",
        "analog-eval",
    ),
    "Analysis": ("report", "margin", "report-cells", "explore", "ladder"),
}
"""``codesign --help`` lists the commands in the order of the flow, in these panels."""


def _order_by_flow() -> None:
    order = [name for names in FLOW.values() for name in names]
    panel = {name: title for title, names in FLOW.items() for name in names}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        if name not in panel:  # pragma: no cover - tests/test_cli.py checks every command is placed
            raise RuntimeError(f"command {name!r} has no place in codesign.cli.FLOW")
        info.name = name
        info.rich_help_panel = panel[name]
    app.registered_commands.sort(key=lambda info: order.index(info.name))


_order_by_flow()
