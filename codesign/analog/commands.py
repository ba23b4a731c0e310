"""Command-line entry points of the analog path, for ``codesign/cli.py`` to register.

``register(app, wrap)`` adds ``codesign analog BUNDLE --out DIR`` and ``codesign analog-check``;
``wrap`` is the CLI's error wrapper (it turns a :class:`~codesign.errors.CodesignError` into one
line and exit code 2). ``analog-check`` exits 1 when a pass/fail check fails. Importing this
module is cheap: numpy, matplotlib and the simulator are loaded only when a command runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from codesign.errors import CodesignError


def _load_inputs(path: Path, bundle_dir: Path):
    import numpy as np

    from codesign.bundle import load_bundle
    from codesign.golden import quantize_inputs

    if not path.is_file():
        raise CodesignError("calibration inputs file not found", path=path)
    try:
        x = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise CodesignError(f"not a readable .npy array without pickles ({err})", path=path) from None
    bundle = load_bundle(bundle_dir)
    try:
        return x.astype(np.int64) if x.dtype.kind in "iu" else quantize_inputs(bundle, x)
    except CodesignError as err:
        raise CodesignError(str(err), path=path) from None


def analog(
    bundle: Annotated[
        Path, typer.Argument(help="bundle directory (bmru / eps 0, or cmru eps 1 for native ladders)")
    ],
    out: Annotated[Path, typer.Option("--out", help="directory for the netlists (replaced)")],
    calibration: Annotated[
        Path | None,
        typer.Option(
            help=".npy inputs (N, T, M), integer or float, that set the current scale of neurons "
            "whose thresholds change every step (default: the weights' worst case)"
        ),
    ] = None,
    stages: Annotated[int, typer.Option(help="stages of each native CMRU ladder (cmru eps 1 bundles)")] = 4,
) -> None:
    """Write one SPICE netlist per neuron, the layer, a testbench and the current mapping (sky130)."""
    from codesign.analog.netlist import generate_netlists

    if not 1 <= stages <= 16:
        raise CodesignError(f"--stages must be between 1 and 16, got {stages}")
    cal = _load_inputs(calibration, bundle) if calibration is not None else None
    files = generate_netlists(bundle, out, calibration=cal, stages=stages)
    neurons = sum(1 for f in files if f.name.startswith("neuron_"))
    typer.echo(f"analog: {neurons} neuron netlists + layer + testbench -> {out}")


def analog_check_command(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="report directory (CSV, PNG, summary.md); the committed report is analog/report "
            "(`make analog`), so a bare run never overwrites it",
        ),
    ] = Path("build/analog-check"),
    quick: Annotated[
        bool, typer.Option("--quick", help="DC sweeps and short transients only (about 2 min)")
    ] = False,
    bundle: Annotated[
        Path | None,
        typer.Option(help="bmru bundle to compare with the golden model (default: a random d=4 bundle)"),
    ] = None,
    inputs: Annotated[
        Path | None, typer.Option(help=".npy test inputs (N, T, M) for the agreement run")
    ] = None,
    sequences: Annotated[int | None, typer.Option(help="test sequences played (default 4; quick 1)")] = None,
    steps: Annotated[
        int | None, typer.Option(help="steps per sequence (default 25, ladders 20; quick 12 / 6)")
    ] = None,
    neurons: Annotated[
        int | None,
        typer.Option(
            help="compare only the first N neurons (default: all BMRU neurons, 2 native CMRU ladders)"
        ),
    ] = None,
    seeds: Annotated[int, typer.Option(help="Monte Carlo mismatch seeds (quick: at most 2)")] = 20,
    corners: Annotated[
        str, typer.Option(help="process corners besides tt, comma separated ('' for none)")
    ] = "ss,ff,sf,fs",
    stages: Annotated[int | None, typer.Option(help="native CMRU ladder stages (default 4; quick 2)")] = None,
    only: Annotated[
        str | None,
        typer.Option(
            help="comma-separated subset of: hysteresis, retention, dpi, "
            "dpi_corners, cmru_ladder, agreement, ladder_agreement, power, robustness"
        ),
    ] = None,
    netlists: Annotated[
        Path | None, typer.Option(help="also write the reference netlists here (e.g. analog/netlists)")
    ] = None,
    timeout: Annotated[float, typer.Option(help="seconds any one ngspice run may take")] = 600.0,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="finished checks, reused where their inputs and the analog code are unchanged "
            "(default build/analog-check-cache)"
        ),
    ] = Path("build/analog-check-cache"),
    no_cache: Annotated[bool, typer.Option("--no-cache", help="run every check again")] = False,
    workers: Annotated[
        int,
        typer.Option(help="run the checks on a local Dask cluster of this many workers (0: in this process)"),
    ] = 0,
    scheduler: Annotated[
        str | None, typer.Option(help="address of a Dask scheduler to run the checks on")
    ] = None,
) -> None:
    """Characterise the BMRU / DPI / native CMRU netlists in ngspice and compare them with the golden model."""
    from codesign.analog.checks import analog_check

    corner_list = tuple(c.strip() for c in corners.split(",") if c.strip())
    if quick and corners == "ss,ff,sf,fs":
        corner_list = ()
    report = analog_check(
        out,
        quick=quick,
        bundle_dir=bundle,
        inputs=inputs,
        sequences=sequences,
        steps=steps,
        seeds=seeds,
        corners=corner_list,
        stages=stages,
        only=tuple(o.strip() for o in only.split(",")) if only else None,
        netlists_dir=netlists,
        timeout=timeout,
        progress=typer.echo,
        cache=None if no_cache else cache,
        workers=workers,
        scheduler=scheduler,
    )
    typer.echo(
        f"analog-check: {'all checks passed' if report.passed else 'FAILED'} in {report.wall_s:.0f} s "
        f"({report.decks} ngspice runs, {report.sim_wall_s:.0f} s simulating) -> {out / 'summary.md'}"
    )
    if not report.passed:
        raise typer.Exit(1)


# ------------------------------------------------------------------------------------------ analog-eval options
_Bundle = Annotated[
    Path, typer.Argument(help="a trained one-layer BMRU or CMRU eps 1 bundle (codesign export)")
]
_Sequences = Annotated[int, typer.Option(help="test sequences to run (the first N of the test set)")]
_JsonPath = Annotated[Path | None, typer.Option("--json", help="write the figures here (JSON)")]
_Corner = Annotated[str, typer.Option(help="process corner of the sky130 models: tt, ss, ff, sf, fs")]
_Cache = Annotated[
    Path | None, typer.Option(help="per-sequence results (default: BUNDLE_analog_eval beside the bundle)")
]
_Scheduler = Annotated[
    str | None, typer.Option(help="address of a Dask scheduler (default: a local cluster)")
]
_Workers = Annotated[int, typer.Option(help="local Dask workers (one ngspice each)")]
_Start = Annotated[
    str,
    typer.Option(
        help="pair: each neuron a complementary pair of cells reset to the golden 0 state; "
        "single: one cell per neuron (starts at -alpha)"
    ),
]
_FrameMs = Annotated[
    float | None,
    typer.Option(
        help="time per step (ms): a longer frame resolves smaller margins (default 10; native CMRU ladders 60)"
    ),
]
_Mc = Annotated[
    int,
    typer.Option(help="mismatch draws of the behavioural model over the whole test set (0: none)"),
]
_McSpice = Annotated[
    int, typer.Option(help="of those draws, how many also run in ngspice with sky130 mismatch on")
]
_McSequences = Annotated[
    int, typer.Option(help="test sequences each ngspice Monte Carlo draw runs (the first N)")
]
_Scale = Annotated[
    str,
    typer.Option(
        help="candidate scale: step (every step's window normalised to the widest, margins "
        "H ||c|-|b||/|b|) or neuron (one scale per neuron from its largest |b|)"
    ),
]
_Reltol = Annotated[float, typer.Option(help="ngspice relative tolerance")]
_TmaxMs = Annotated[
    float,
    typer.Option(
        help="native CMRU (eps 1): ngspice's largest time step (ms); with --reltol 1e-3, 5 ms runs a "
        "ladder deck about 6x faster with the same counts (analog/report/eval/README.md)"
    ),
]
_Synapses = Annotated[
    str,
    typer.Option(
        help="ideal: the cells get the exact integer sums; circuit: the sums of the bundle's "
        "synapse mirror arrays simulated in ngspice, with their supply power"
    ),
]
_SynapseIxFa = Annotated[
    float, typer.Option(help="synapse arrays: current per input LSB and weight unit (fA)")
]
_SynapseTrim = Annotated[
    str,
    typer.Option(
        help="synapse arrays: offset folds every sum line's zero-input sum into its bias DAC code "
        "(a one-time per-chip calibration); none drives the cells with the untrimmed sums"
    ),
]
_LadderSpare = Annotated[
    int, typer.Option(help="native CMRU (eps 1): stages beyond the golden count's range on each side")
]
_LadderGroup = Annotated[int, typer.Option(help="native CMRU (eps 1): neurons per ngspice deck")]
_LadderInit = Annotated[
    str,
    typer.Option(
        help="native CMRU (eps 1): reset each ladder to n0 stages from the operating point (nodeset) "
        "or with n0 set pulses (pulses)"
    ),
]
_LadderDpi = Annotated[
    str,
    typer.Option(
        help="native CMRU (eps 1): the DPI between the stages, p (the first) or n (the kappa-matched "
        "dpi_n, tau within 6.8 % at every corner)"
    ),
]
_LadderPulseMs = Annotated[
    float,
    typer.Option(
        help="native CMRU (eps 1): each step's candidate pulse (ms); 8 resolves updates a few pA "
        "beyond a threshold that 4 (the default) misses"
    ),
]
_LadderDeck = Annotated[
    str,
    typer.Option(
        help="native CMRU (eps 1): how ngspice simulates the ladders, reference or fast (the same "
        "circuit; trapezoidal integration, device bypass, 1 ms drive ramps: fewer Newton iterations, but "
        "near ties can resolve differently: 1 of 3 JapaneseVowels sequences did)"
    ),
]
_LadderTrimPa = Annotated[
    str,
    typer.Option(
        help="native CMRU (eps 1): UP,DOWN pA by which every step's window narrows during its pulse "
        "(a calibration of the overdrive a stage needs to switch within the pulse)"
    ),
]
_LadderOverdrivePa = Annotated[
    float,
    typer.Option(
        help="native CMRU (eps 1): clip the candidate to at most this many pA past its step's window "
        "(0: its own clip, up to 100 pA; at the full clip the next stage can follow within the pulse)"
    ),
]
_First = Annotated[
    int, typer.Option(help="index of the first test sequence run (runs can share out the test set)")
]


def analog_eval_command(
    bundle: _Bundle,
    sequences: _Sequences = 20,
    json_path: _JsonPath = None,
    corner: _Corner = "tt",
    cache: _Cache = None,
    scheduler: _Scheduler = None,
    workers: _Workers = 1,
    start: _Start = "pair",
    frame_ms: _FrameMs = None,
    mc: _Mc = 0,
    mc_spice: _McSpice = 0,
    mc_sequences: _McSequences = 2,
    scale: _Scale = "step",
    reltol: _Reltol = 1e-4,
    tmax_ms: _TmaxMs = 1.0,
    synapses: _Synapses = "ideal",
    synapse_ix_fa: _SynapseIxFa = 1000.0,
    synapse_trim: _SynapseTrim = "offset",
    ladder_spare: _LadderSpare = 1,
    ladder_group: _LadderGroup = 8,
    ladder_init: _LadderInit = "nodeset",
    ladder_dpi: _LadderDpi = "p",
    ladder_pulse_ms: _LadderPulseMs = 4.0,
    ladder_deck: _LadderDeck = "reference",
    ladder_trim_pa: _LadderTrimPa = "0,0",
    ladder_overdrive_pa: _LadderOverdrivePa = 0.0,
    first: _First = 0,
) -> None:
    """Run a trained bundle's test sequences through the layer netlist in ngspice, readout digital; accuracy, state agreement and energy beside the golden model."""
    from rich.progress import Progress

    from codesign.analog.evaluate import analog_eval
    from codesign.atomic import write_text

    if corner not in ("tt", "ss", "ff", "sf", "fs"):
        raise CodesignError(f"--corner {corner!r} is not one of tt, ss, ff, sf, fs")
    with Progress(transient=True) as bar:
        task = bar.add_task("ngspice", total=sequences)

        def progress(done: int, total: int, record: dict) -> None:
            bar.update(task, completed=done, total=total, description=f"sequence {record['sequence']}")

        summary = analog_eval(
            bundle,
            sequences,
            corner=corner,
            cache=cache,
            scheduler=scheduler,
            workers=workers,
            progress=progress,
            start=start,
            frame_ms=frame_ms,
            mc=mc,
            mc_spice=mc_spice,
            mc_sequences=mc_sequences,
            scale=scale,
            reltol=reltol,
            tmax_ms=tmax_ms,
            synapses=synapses,
            synapse_ix_fa=synapse_ix_fa,
            synapse_trim=synapse_trim,
            ladder_spare=ladder_spare,
            ladder_group=ladder_group,
            ladder_init=ladder_init,
            ladder_dpi=ladder_dpi,
            ladder_pulse_ms=ladder_pulse_ms,
            ladder_deck=ladder_deck,
            first=first,
            ladder_trim_pa=_trim(ladder_trim_pa),
            ladder_overdrive_pa=ladder_overdrive_pa,
        )
    _echo_eval(summary, corner)
    if json_path is not None:
        write_text(json_path, json.dumps(summary, indent=2) + "\n")


def _echo_eval(summary: dict, corner: str) -> None:
    """The figures of an ``analog-eval`` run, a line or a few."""
    typer.echo(
        f"{summary['bundle']} ({summary['sequences']} sequences, {corner}): analog accuracy "
        f"{summary['analog_accuracy']:.4f}, golden {summary['golden_accuracy']:.4f}, classes agree "
        f"{summary['class_agreement']:.4f}, states agree {summary['state_agreement']:.4f} of "
        f"{summary['neuron_steps_compared']} neuron-steps, {summary['energy_per_inference_nj']:.3f} nJ per "
        f"inference ({summary['time_per_step_s'] * 1e3:g} ms per step; "
        + ", ".join(f"{k} {v:.3f}" for k, v in summary["energy_split_nj"].items())
        + f" nJ); {summary['seconds_per_sequence']:.0f} s of ngspice per sequence"
    )
    if "mismatch" in summary:
        beh = summary["mismatch"]["behavioural"]
        typer.echo(
            f"mismatch ({beh['draws']} behavioural draws, whole test set): accuracy mean "
            f"{beh['accuracy_mean']:.4f}, 10th percentile {beh['accuracy_p10']:.4f}, min "
            f"{beh['accuracy_min']:.4f}; golden {summary['mismatch']['golden_accuracy']:.4f}"
        )
        check = summary["mismatch"].get("spice_check")
        if check:
            typer.echo(
                f"ngspice Monte Carlo check ({len(check['spice_seeds'])} seeds x {len(check['sequences'])} "
                f"sequences): states agree {check['spice_state_agreement_mean']:.4f}, behavioural "
                f"{check['behavioural_state_agreement_mean']:.4f} +- {check['behavioural_state_agreement_sd']:.4f}"
            )
        cal = summary["mismatch"].get("calibrated")
        if cal:
            whole = cal["behavioural"]
            typer.echo(
                f"calibrated on ngspice (neuron sigma {cal['sigma_neuron']:.2f}, states agree "
                f"{cal['spice_sequences_state_agreement_mean']:.4f} where ngspice did {cal['fit_target_state_agreement']:.4f}): "
                f"accuracy mean {whole['accuracy_mean']:.4f}, 10th percentile {whole['accuracy_p10']:.4f}, "
                f"min {whole['accuracy_min']:.4f}"
            )


def _trim(text: str) -> tuple[float, float]:
    try:
        up, down = (float(v) for v in text.split(","))
    except ValueError:
        raise CodesignError(f"--ladder-trim-pa must be UP,DOWN in pA (e.g. 2,4), not {text!r}") from None
    return up, down


def register(app: typer.Typer, wrap: Callable = lambda fn: fn) -> None:
    """Add ``analog``, ``analog-check`` and ``analog-eval`` to ``app``; ``wrap`` is applied to each."""
    app.command("analog")(wrap(analog))
    app.command("analog-check")(wrap(analog_check_command))
    app.command("analog-eval")(wrap(analog_eval_command))
