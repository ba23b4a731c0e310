"""``codesign fit DATA_TRAIN DATA_TEST``: the command, registered on the main app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from codesign.device import DEVICE_HELP

TARGET_HELP = (
    "the chip the network must fit: up5k, hx8k, ecp5-25k, ecp5-85k or asic (the chips of "
    "`codesign rtl --device`; here --device is the torch device, as in every training command, so "
    "the chip is --target, also spelled --chip)"
)


def _seeds(text: str) -> tuple[int, ...]:
    from codesign.errors import CodesignError

    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise CodesignError(f"--seeds {text!r}: expected comma-separated integers, e.g. 0,1,2") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise CodesignError(f"--seeds {text!r}: list one or more distinct integers, e.g. 0,1,2")
    return seeds


def register(app: typer.Typer, user_errors) -> None:
    from codesign.fit.features_commands import register as register_features

    register_features(app, user_errors)

    @app.command()
    @user_errors
    def fit(
        data_train: Annotated[
            Path, typer.Argument(metavar="DATA_TRAIN", help="training file (.ts, .tsv, .arff, .npz)")
        ],
        data_test: Annotated[Path, typer.Argument(metavar="DATA_TEST", help="test file, same format family")],
        out: Annotated[
            Path, typer.Option("--out", help="results directory (re-running continues it)")
        ] = Path("runs/fit"),
        target: Annotated[str, typer.Option("--target", "--chip", help=TARGET_HELP)] = "up5k",
        step_rate: Annotated[
            float | None, typer.Option("--step-rate", help="steps per second the build must sustain (HZ)")
        ] = 100.0,
        clock: Annotated[
            float | None,
            typer.Option("--clock", help="clock in MHz (default: the chip's, 30 on iCE40, 80 on ECP5)"),
        ] = None,
        max_energy: Annotated[
            float | None,
            typer.Option("--max-energy", help="drop candidates above this energy per inference (nJ)"),
        ] = None,
        folds: Annotated[
            int, typer.Option(help="cross-validation folds of the training file (stratified)")
        ] = 3,
        seeds: Annotated[
            str, typer.Option(help="training seeds, comma-separated (each draws its own folds)")
        ] = "0",
        workers: Annotated[
            int | None,
            typer.Option(
                help="local Dask workers, one thread each (default: cores; 0: in this process, no cluster)"
            ),
        ] = None,
        device: Annotated[str | None, typer.Option("--device", help=DEVICE_HELP)] = None,
        json_out: Annotated[Path | None, typer.Option("--json", help="also write the result here")] = None,
        quick: Annotated[
            bool, typer.Option(help="three candidates, 60 iterations, a narrower mapping search: a demo")
        ] = False,
        minirocket: Annotated[
            bool, typer.Option(help="score MiniRocket (aeon) on the same files beside the pick")
        ] = True,
        space: Annotated[
            Path | None, typer.Option(help="a space file instead of the package's (codesign/fit/space.yaml)")
        ] = None,
        family: Annotated[
            str,
            typer.Option(
                help="all candidates, or only the random-feature banks (features: seconds per fold) or the trained networks (recurrent)"
            ),
        ] = "all",
    ) -> None:
        """The most accurate deployable network for your files that fits the chip: cross-validated, no tuning."""
        from codesign.atomic import write_text
        from codesign.fit.run import FitOptions
        from codesign.fit.run import fit as run_fit

        console = Console()
        opts = FitOptions(
            out=out, chip=target, step_rate=step_rate, clock_mhz=clock, max_energy_nj=max_energy, folds=folds,
            seeds=_seeds(seeds), workers=workers, device=device, quick=quick, minirocket=minirocket, space=space,
            family=family,
        )  # fmt: skip
        try:
            result = run_fit(data_train, data_test, opts, console)
        except KeyboardInterrupt:
            console.print("interrupted: run the same command again to continue", highlight=False)
            raise typer.Exit(130) from None
        p = result["pick"]
        text = (
            f"pick: {p['candidate']} ({p['why']}); golden test accuracy {100 * p['test_accuracy']:.1f}% "
            f"on {p['test_sequences']} series"
        )
        mr = result.get("minirocket")
        text += f", MiniRocket {100 * mr['test_accuracy']:.1f}%" if mr else ""
        console.print(f"{text}; bundle {p['bundle']}", highlight=False, soft_wrap=True)
        if json_out is not None:
            import json

            write_text(json_out, json.dumps(result, indent=1, sort_keys=True) + "\n")
