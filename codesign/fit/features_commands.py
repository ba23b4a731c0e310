"""``codesign features fit`` and ``codesign features eval``: random-feature networks by hand.

``codesign fit`` weighs random-feature banks beside trained networks; these two commands fit one
bank of a chosen size on a user's files and score a feature bundle on a data file with the golden
integer model, with no cross-validation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def register(app: typer.Typer, user_errors) -> None:
    features = typer.Typer(
        no_args_is_help=True, help="Random-feature networks: fit one bank, score it, cost it."
    )
    app.add_typer(features, name="features")
    _register_fit(features, user_errors)
    _register_eval(features, user_errors)
    _register_report(features, user_errors)


def _register_fit(features: typer.Typer, user_errors) -> None:
    @features.command("fit")
    @user_errors
    def fit_bank(
        data_train: Annotated[
            Path, typer.Argument(metavar="DATA_TRAIN", help="training file (.ts, .tsv, .arff, .npz)")
        ],
        data_test: Annotated[Path, typer.Argument(metavar="DATA_TEST", help="test file, same format family")],
        out: Annotated[Path, typer.Option("--out", help="the feature bundle's directory")] = Path(
            "runs/features"
        ),
        units: Annotated[
            int,
            typer.Option(
                min=84,
                max=20000,
                help="counting units asked for (whole kernel groups); 1680, the size of models/results/random_features.md closest to MiniRocket on most sets",
            ),
        ] = 1680,
        seed: Annotated[int, typer.Option(help="draws the channel subsets and the thresholds' series")] = 0,
        json_out: Annotated[Path | None, typer.Option("--json", help="also write the result here")] = None,
    ) -> None:
        """Fit one random-feature bank in closed form on the training file; score the test file."""
        from codesign.atomic import write_text
        from codesign.errors import CodesignError
        from codesign.fit.features import refit_features

        for what, path in (("training", data_train), ("test", data_test)):
            if not path.is_file():
                raise CodesignError(f"{what} file not found", path=path)
        task = {"train": str(data_train.resolve()), "test": str(data_test.resolve())}
        result = refit_features(units, seed, task, out.name, out.parent, bundle_name=out.name)
        Console().print(
            f"bundle {result['bundle']}: {result['units']} units, golden test accuracy "
            f"{100 * result['test_accuracy']:.1f}% on {result['test_sequences']} series "
            f"(float ridge {100 * result['float_test_accuracy']:.1f}%)",
            highlight=False,
            soft_wrap=True,
        )
        if json_out is not None:
            write_text(json_out, json.dumps(result, indent=1, sort_keys=True) + "\n")


def _register_eval(features: typer.Typer, user_errors) -> None:
    @features.command("eval")
    @user_errors
    def eval_bundle(
        bundle: Annotated[
            Path, typer.Argument(help="a feature bundle (codesign fit or codesign features fit)")
        ],
        data: Annotated[
            Path, typer.Argument(metavar="DATA", help="a labelled data file (.ts, .tsv, .arff, .npz)")
        ],
        json_out: Annotated[Path | None, typer.Option("--json", help="also write the result here")] = None,
    ) -> None:
        """Score a feature bundle on a labelled file with the golden integer model."""
        from codesign.atomic import write_text
        from codesign.fit.features import evaluate_file

        result = evaluate_file(bundle, data)
        Console().print(
            f"{data}: golden accuracy {100 * result['accuracy']:.1f}% on {result['sequences']} series",
            highlight=False,
            soft_wrap=True,
        )
        if json_out is not None:
            write_text(json_out, json.dumps(result, indent=1, sort_keys=True) + "\n")


def _register_report(features: typer.Typer, user_errors) -> None:
    @features.command("report")
    @user_errors
    def report_bank(
        bundle: Annotated[Path, typer.Argument(help="a feature bundle")],
        chip: Annotated[
            str, typer.Option("--chip", help="the chip whose memory and clock it is checked against")
        ] = "up5k",
        step_rate: Annotated[float, typer.Option("--step-rate", help="frames per second (HZ)")] = 100.0,
        clock: Annotated[
            float | None, typer.Option("--clock", help="clock in MHz (default: the chip's)")
        ] = None,
        steps: Annotated[int, typer.Option(min=1, help="frames per inference the energy is given for")] = 100,
        json_out: Annotated[Path | None, typer.Option("--json", help="also write the figures here")] = None,
    ) -> None:
        """Memory, cycles and the 45 nm proxy energy of a feature bundle, against a chip and step rate."""
        from rich.table import Table

        from codesign.atomic import write_text
        from codesign.fit.features import bank_report

        result = bank_report(bundle, chip, step_rate, clock, steps)
        table = Table(
            title=(
                f"{bundle}: {result['units']} units, {result['classes']} classes on the {result['chip']} at "
                f"{result['clock_mhz']:g} MHz, {result['step_rate_hz']:g} frames/s"
            ),
            title_justify="left",
        )
        table.add_column("figure")
        table.add_column("value", justify="right")
        for key, label in BANK_ROWS.items():
            table.add_row(
                label, f"{result[key]:,.6g}" if isinstance(result[key], float) else f"{result[key]:,}"
            )
        table.add_row("fits", "yes" if result["fits"] else f"no: {result['miss']}")
        Console().print(table)
        if json_out is not None:
            write_text(json_out, json.dumps(result, indent=1, sort_keys=True) + "\n")


BANK_ROWS = {
    "memory_bits": "memory bits (arrays, counters, delay line, readout)",
    "cycles_per_frame": "cycles per frame (codesign.hw.features cycle model)",
    "readout_cycles": "readout cycles, once per sequence",
    "busy_fraction": "busy fraction of the clock at the step rate",
    "energy_per_frame_nj": "energy per frame, nJ (45 nm per-op proxy, dynamic only: no clock tree, no leakage, nothing between frames)",
    "energy_per_inference_nj": "energy per inference, nJ (45 nm per-op proxy, dynamic only, as above)",
}
