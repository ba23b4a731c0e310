"""One trainer for recipe-defined models.

AdamW (0.9, 0.99, 1e-8), linear warmup then cosine decay to ``min_lr``, gradient-norm clipping,
evaluation every ``eval_every`` iterations on a few validation batches, a wall-clock budget,
metrics to CSV, and resume: ``last.pt`` is written atomically at every evaluation, so an
interrupted run continues from its last evaluation when started again with the same recipe.

Model selection is built for small validation sets (a few tens of series, where one sequence is
several points and a lucky early evaluation reads 100%): by default (``selection: smoothed``)
the kept checkpoint is the centre of the window of ``smooth_evals`` consecutive evaluations with
the best mean validation metric, ties broken by the lower mean validation loss (so among windows
at 100% the later, more confident one wins); an early stop at 100% needs at least
``early_stop_min_val`` validation sequences. ``selection: best`` keeps the single best evaluation.
``selection: average`` trusts no validation set at all: the kept weights are the mean of the
weights at the evaluations of the last ``average_last`` of training (stochastic weight averaging
on the decaying learning rate), so a task with ``val_fraction: 0`` trains on its whole training
file -- on a set of 36 series the carve-out would otherwise take a quarter of them.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import yaml
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from codesign.atomic import atomic_path, write_text
from codesign.data.base import IGNORE_INDEX
from codesign.device import device_override, resolve_device
from codesign.errors import CodesignError
from codesign.nn.surnn import update_rate
from codesign.train.advice import warn_if_order_blind
from codesign.train.augment import augment_batch
from codesign.train.models import annealed_eps, build_model, set_eps
from codesign.train.recipe import Recipe, build_task, parse_recipe
from codesign.train.repeat import (
    deterministic,
    environment,
    record,
    seed_everything,
    thread_count,
    warn_if_threads_differ,
)

RECIPE_FILE = "recipe.yaml"
BEST = "best.pt"
LAST = "last.pt"
METRICS = "metrics.csv"
SUMMARY = "summary.json"


@dataclass
class TrainResult:
    run_dir: str
    iterations: int
    best_iteration: int
    metric: str  # "accuracy" (higher is better) or "mae" (lower is better)
    best_val: float | None  # None: no validation set (selection average on the whole training file)
    test: float
    wall_s: float
    stopped: str
    update_rate: float | None = None  # selective-update models: fraction of open neuron-steps (test length)
    scored: str = "model"  # "deployed": validation and test scored on the quantized (deployed) model
    threads: int | None = None  # the thread count it trained with (environment.json has the rest)
    device: str = "cpu"  # where it trained (its last stretch, for a resumed run)

    # the names the spine used, for classification runs
    @property
    def best_val_accuracy(self) -> float:
        return self.best_val

    @property
    def test_accuracy(self) -> float:
        return self.test


def make_recipe_task(recipe: Recipe):
    """The recipe's task as its run sees it (a null ``split_seed`` is the run seed)."""
    return build_task(recipe.task.name, recipe.task.run_options(recipe.seed))


def metric_name(task) -> str:
    return "accuracy" if task.kind == "classification" else "mae"


def loss_fn(task, output: torch.Tensor, target: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    if task.kind == "classification":
        return torch.nn.functional.cross_entropy(
            output.reshape(-1, output.shape[-1]),
            target.reshape(-1),
            ignore_index=IGNORE_INDEX,
            label_smoothing=label_smoothing,
        )
    return torch.nn.functional.mse_loss(output, target)


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of ``model``'s parameters (the CPU for a model without any)."""
    return next(model.parameters(), torch.empty(0)).device


def run_device(recipe: Recipe) -> torch.device:
    """Where ``recipe`` trains: a surrounding ``use_device`` (``--device``) or ``train.device``."""
    override = device_override()
    if override is not None:
        return resolve_device(override, "--device")
    return resolve_device(recipe.train.device, "train.device")


@torch.no_grad()
def metric_and_loss(
    model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor, batch: int = 256
) -> tuple[float, float]:
    """The metric (accuracy over labelled positions, or mean absolute error for regression) and the
    mean training loss (cross-entropy or MSE), from one forward pass per batch."""
    was_training = model.training
    model.eval()
    total, count, loss = 0.0, 0, 0.0
    device = model_device(model)
    for i in range(0, len(x), batch):
        out, tgt = model(x[i : i + batch].to(device)), y[i : i + batch].to(device)
        loss += loss_fn(task, out, tgt).item() * len(tgt)
        if task.kind == "classification":
            mask = tgt != IGNORE_INDEX
            total += (out.argmax(-1)[mask] == tgt[mask]).sum().item()
            count += int(mask.sum())
        else:
            total += (out - tgt).abs().sum().item()
            count += tgt.numel()
    model.train(was_training)
    return total / max(1, count), loss / max(1, len(x))


def evaluate(model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor, batch: int = 256) -> float:
    """Accuracy (over labelled positions) for classification, mean absolute error for regression."""
    return metric_and_loss(model, task, x, y, batch)[0]


def validation_loss(
    model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor, batch: int = 256
) -> float:
    """Mean training loss (cross-entropy or MSE) over ``x``: the tie-break of model selection."""
    return metric_and_loss(model, task, x, y, batch)[1]


def window_criterion(window: list[dict]) -> tuple[float, float]:
    """(mean score, minus mean loss) of a window of evaluations: larger is better, compared in order."""
    n = len(window)
    return (
        round(sum(w["score"] for w in window) / n, 9),
        -round(sum(w["loss"] for w in window) / n, 9),
    )


def score(task, value: float) -> float:
    """Higher is better."""
    return value if task.kind == "classification" else -value


def lr_factor(it: int, spec) -> float:
    """Multiplier of the base lr at iteration ``it``: warmup from 0, then cosine to min_lr."""
    warm = max(1, int(round(spec.warmup * spec.iterations)))
    if it < warm:
        return (it + 1) / warm
    progress = min(1.0, (it - warm) / max(1, spec.iterations - warm))
    floor = spec.min_lr / spec.lr
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def plain_state(model: torch.nn.Module) -> dict:
    """State dict with fake-quantized weights baked in (loadable into the plain architecture).

    Reads each parametrized tensor through its parametrization instead of removing it from a
    copy: parametrized modules share a generated class, so removal would break the original.
    """
    marker = ".parametrizations."
    state = {}
    for key, value in model.state_dict().items():
        if marker not in key:
            state[key] = value
            continue
        owner, rest = key.split(marker, 1)
        name = rest.split(".", 1)[0]
        if rest.endswith(".original"):
            state[f"{owner}.{name}"] = getattr(model.get_submodule(owner), name).detach().clone()
    return state


def save_checkpoint(path: Path, payload: dict) -> None:
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    """Load a checkpoint without unpickling arbitrary objects (``weights_only=True``).

    Tensors land on ``map_location`` whatever device wrote them, so a run trained on a GPU loads
    on a CPU-only machine."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises many types for corrupt or unsafe files
        raise CodesignError(
            f"cannot load checkpoint ({type(err).__name__}: {str(err).splitlines()[0]})", path=path
        ) from None


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[Recipe, torch.nn.Module, dict]:
    """Recipe, model with the best weights (on ``device``), and summary of a finished run."""
    run_dir = Path(run_dir)
    if not (run_dir / RECIPE_FILE).is_file():
        raise CodesignError(
            f"not a run directory (no {RECIPE_FILE}); create one with `codesign train`", path=run_dir
        )
    recipe = parse_recipe(
        yaml.safe_load((run_dir / RECIPE_FILE).read_text()), run_dir / RECIPE_FILE, stored=True
    )
    if not (run_dir / BEST).is_file():
        raise CodesignError(f"run has no {BEST} yet (training did not reach an evaluation)", path=run_dir)
    model = build_model(recipe, make_recipe_task(recipe))
    state = load_checkpoint(run_dir / BEST)
    try:
        model.load_state_dict(state["model"])
    except (KeyError, RuntimeError) as err:
        raise CodesignError(
            f"checkpoint does not match the recipe's model ({str(err).splitlines()[0]})", path=run_dir / BEST
        ) from None
    for name, tensor in state["model"].items():
        if torch.is_floating_point(tensor) and not torch.isfinite(tensor).all():
            raise CodesignError(f"checkpoint parameter '{name}' holds NaN or Inf", path=run_dir / BEST)
    if recipe.train.eps_schedule == "anneal":
        set_eps(model, 0.0)  # annealed runs keep checkpoints only once eps reached 0
    summary = json.loads((run_dir / SUMMARY).read_text()) if (run_dir / SUMMARY).is_file() else {}
    warn_if_threads_differ(run_dir)
    return recipe, model.to(device), summary


def layer_steps(model: torch.nn.Module, frames: int) -> int:
    """Steps the recurrent layers run for ``frames`` input frames (``model.input_stride`` S: one per
    window of S frames, a partial last window included)."""
    stride = getattr(getattr(model, "stride", None), "stride", 1)
    return -(-frames // stride)


def recipe_text(recipe: Recipe) -> str:
    """The recipe as a run directory stores it (``recipe.yaml``)."""
    return yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False)


def holds_recipe(path: Path, recipe: Recipe) -> bool:
    """True when the stored ``recipe.yaml`` at ``path`` describes ``recipe``.

    Compared after parsing, not as text: a key added to the schema later (with a default that keeps
    the old behaviour) must not make every earlier run directory a "different recipe".
    """
    text = path.read_text()
    if text == recipe_text(recipe):
        return True
    try:
        stored = parse_recipe(yaml.safe_load(text), path, stored=True)
    except CodesignError:
        return False
    # where a run trains is not what it is: a run continues on any device
    same = {"train": {"device"}}
    return stored.model_dump(mode="json", exclude=same) == recipe.model_dump(mode="json", exclude=same)


def _prepare_run_dir(run_dir: Path, recipe: Recipe) -> bool:
    """Create the run dir or check it holds the same recipe. Returns True when resuming."""
    text = recipe_text(recipe)
    existing = run_dir / RECIPE_FILE
    if existing.is_file():
        if not holds_recipe(existing, recipe):
            raise CodesignError("run directory holds a different recipe; choose a new --out", path=run_dir)
        return (run_dir / LAST).is_file()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(existing, text)
    return False


Scorer = Callable[[torch.nn.Module, object, torch.Tensor, torch.Tensor], tuple[float, float, bool]]
"""``(model, task, x, y) -> (metric, loss, deployable)``: how evaluations score a model."""


def model_score(model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float, bool]:
    """The model's own forward pass (float, or fake-quantized under QAT)."""
    return (*metric_and_loss(model, task, x, y), True)


def make_scorer(recipe: Recipe, task) -> Scorer:
    """QAT runs of a deployable hardware model are scored on the model export deploys; others on their own."""
    if (
        recipe.train.qat_bits is not None
        and recipe.model.arch == "hardware"
        and not recipe.model.readout_hidden
    ):
        from codesign.quant.score import DeployedScorer

        return DeployedScorer(recipe, task)
    return model_score


def scorer_name(scorer: Scorer) -> str:
    return getattr(scorer, "name", "model")


@dataclass
class TrainState:
    """Where a run stands: what ``last.pt`` saves besides the model, optimizer and generator."""

    iteration: int = 0
    best: tuple[float, float] = (-math.inf, -math.inf)
    best_it: int = -1
    perfect_streak: int = 0
    elapsed_before: float = 0.0
    window: list[dict] = field(default_factory=list)  # the last deployable evaluations, with weights
    average: dict | None = None  # selection average: the running mean of the weights (float tensors)
    averaged: int = 0  # evaluations in that mean


@dataclass
class Run:
    """Everything one training loop works with (built once by :func:`train`)."""

    recipe: Recipe
    run_dir: Path
    task: object
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    gen: torch.Generator
    x_val: torch.Tensor
    y_val: torch.Tensor
    scorer: Scorer

    @property
    def spec(self):
        return self.recipe.train

    @property
    def metric(self) -> str:
        return metric_name(self.task)

    @property
    def n_eval(self) -> int:
        return min(len(self.x_val), self.spec.eval_batches * self.spec.batch_size)

    @property
    def window_size(self) -> int:
        return self.spec.smooth_evals if self.spec.selection == "smoothed" else 1


def build_training_model(recipe: Recipe, task) -> torch.nn.Module:
    """The model as training runs it: initialised (or from ``init_from``), with QAT's grids when set."""
    spec = recipe.train
    model = build_model(recipe, task)
    if spec.init_from is not None:  # fine-tuning (e.g. quantization-aware) starts from another run
        model.load_state_dict(load_checkpoint(Path(spec.init_from) / BEST)["model"])
    return with_training_grids(recipe, model)


def with_training_grids(recipe: Recipe, model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with the fake quantization a QAT recipe trains with (unchanged without ``qat_bits``).

    Applied to a checkpoint's baked weights it gives the same forward pass as in training (the
    weight grids are idempotent): the model training scored, inputs on the input grid included.
    """
    if recipe.train.qat_bits is None:
        return model
    from codesign.quant.qat import add_fake_quant

    q = recipe.quant
    return add_fake_quant(
        model,
        recipe.train.qat_bits,
        q.layer.alpha_bits,
        q.input.frac,
        q.input.bits,
        q.layer.dcls_weight_bits,
        q.layer.bias_bits,
        q.layer.gate_bits,
        q.layer.state_bits,
    )


def make_optimizer(
    model: torch.nn.Module, spec
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    opt = torch.optim.AdamW(
        model.parameters(), lr=spec.lr, betas=(0.9, 0.99), eps=1e-8, weight_decay=spec.weight_decay
    )
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda it: lr_factor(it, spec))


def restore(run: Run) -> TrainState:
    """Model, optimizer, scheduler and generator from ``last.pt``; the loop's state returned."""
    state = load_checkpoint(run.run_dir / LAST)
    run.model.load_state_dict(state["model"])
    run.opt.load_state_dict(state["optimizer"])
    run.sched.load_state_dict(state["scheduler"])
    run.gen.set_state(state["generator"])
    if "torch_rng" in state:  # checkpoints written before it was saved resume without it
        torch.set_rng_state(state["torch_rng"])
    best = state["best_score"]
    best = tuple(best) if isinstance(best, list | tuple) else (best, -math.inf)  # older runs: a number
    return TrainState(
        state["iteration"],
        best,
        state["best_it"],
        state["perfect_streak"],
        state["elapsed"],
        state.get("window", []),
        state.get("average"),
        state.get("averaged", 0),
    )


def train_step(run: Run) -> float:
    """One optimizer step on a fresh batch; returns the batch loss."""
    spec = run.spec
    x, y = run.task.sample(spec.batch_size, run.gen)
    x = augment_batch(x, y, spec.augment, run.gen)
    if spec.input_noise > 0:  # augmentation; silent (all-zero, e.g. padding) frames stay silent
        noise = torch.randn(x.shape, generator=run.gen) * spec.input_noise
        x = x + noise * (x != 0).any(dim=-1, keepdim=True)
    device = model_device(run.model)
    x, y = x.to(device), y.to(device)  # drawn on the CPU: the same batches on every device
    loss = loss_fn(run.task, run.model(x), y, spec.label_smoothing)
    run.opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), spec.clip)
    run.opt.step()
    run.sched.step()
    return loss.item()


def cpu_copy(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copies (not views) on the CPU: checkpoints load anywhere."""
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


def select(run: Run, state: TrainState, entry: dict) -> None:
    """Add a deployable evaluation to the window; keep the window's centre when the window is the best."""
    weights = cpu_copy(plain_state(run.model))
    state.window = [*state.window, entry | {"state": weights}][-run.window_size :]
    crit = window_criterion(state.window)
    if len(state.window) == run.window_size and crit > state.best:
        centre = state.window[(run.window_size - 1) // 2]
        state.best, state.best_it = crit, centre["it"]
        save_checkpoint(
            run.run_dir / BEST,
            {"model": centre["state"], "iteration": centre["it"], run.metric: centre["value"]},
        )


def averaging(run: Run, iteration: int) -> bool:
    """True when ``selection: average`` takes the weights of an evaluation at ``iteration``."""
    spec = run.spec
    return spec.selection == "average" and iteration >= (1 - spec.average_last) * spec.iterations


def add_to_average(run: Run, state: TrainState) -> None:
    """Fold the current weights into the running mean and keep the mean's deployed weights as best."""
    current = cpu_copy(run.model.state_dict())
    n = state.averaged
    if state.average is None:
        state.average = current
    else:
        state.average = {
            k: (state.average[k] * n + v) / (n + 1) if torch.is_floating_point(v) else v
            for k, v in current.items()
        }
    state.averaged = n + 1
    run.model.load_state_dict(state.average)  # the mean's fake-quantized weights, read through the grids
    baked = cpu_copy(plain_state(run.model))
    run.model.load_state_dict(current)
    state.best_it = state.iteration
    save_checkpoint(
        run.run_dir / BEST, {"model": baked, "iteration": state.iteration, "averaged": state.averaged}
    )


def save_last(run: Run, state: TrainState, elapsed: float) -> None:
    save_checkpoint(
        run.run_dir / LAST,
        {
            "model": run.model.state_dict(),
            "optimizer": run.opt.state_dict(),
            "scheduler": run.sched.state_dict(),
            "generator": run.gen.get_state(),
            "torch_rng": torch.get_rng_state(),  # what draws from the global generator (mismatch-aware gates)
            "iteration": state.iteration,
            "best_score": list(state.best),
            "best_it": state.best_it,
            "window": state.window,
            "average": state.average,
            "averaged": state.averaged,
            "perfect_streak": state.perfect_streak,
            "elapsed": elapsed,
        },
    )


def evaluation(
    run: Run, state: TrainState, eps: float | None, running: float, writer, elapsed: float
) -> tuple[float, str | None]:
    """Score, log, select and checkpoint at an evaluation; the score and the reason to stop, or None."""
    spec, it = run.spec, state.iteration
    if run.n_eval:
        idx = torch.randperm(len(run.x_val), generator=torch.Generator().manual_seed(it))[: run.n_eval]
        value, vloss, quantizable = run.scorer(run.model, run.task, run.x_val[idx], run.y_val[idx])
    else:  # no validation set (selection average): nothing to score
        value, vloss, quantizable = math.nan, math.nan, True
    writer.writerow(
        [
            it,
            f"{running:.6f}",
            f"{value:.6f}",
            "" if eps is None else f"{eps:.4f}",
            f"{run.sched.get_last_lr()[0]:.3e}",
            f"{elapsed:.2f}",
        ]
    )
    # an annealed model is deployable only once eps reached 0: checkpoint only then
    # (and a deployed-scored model only once it quantizes)
    deployable = quantizable and (spec.eps_schedule != "anneal" or eps == 0.0)
    if spec.selection == "average":
        if deployable and averaging(run, it):
            add_to_average(run, state)
    elif deployable:
        select(run, state, {"it": it, "score": score(run.task, value), "loss": vloss, "value": value})
    perfect = (
        run.task.kind == "classification"
        and value >= 1.0
        and deployable
        and run.n_eval >= spec.early_stop_min_val
    )
    state.perfect_streak = state.perfect_streak + 1 if perfect else 0
    save_last(run, state, elapsed)
    if state.perfect_streak >= spec.early_stop_evals:
        return value, "early stop (validation at 100%)"
    if spec.max_seconds is not None and elapsed >= spec.max_seconds:
        return value, f"time budget ({spec.max_seconds:.0f} s)"
    return value, None


def progress_bar(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]train"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} it"),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=True,
    )


def open_metrics(run: Run, resuming: bool):
    """``metrics.csv`` for appending (a resumed run) or new, with its header."""
    path = run.run_dir / METRICS
    new = not path.is_file() or not resuming
    handle = path.open("w" if new else "a", newline="")
    writer = csv.writer(handle)
    if new:
        writer.writerow(["iteration", "train_loss", f"val_{run.metric}", "eps", "lr", "elapsed_s"])
    return handle, writer


def loop(run: Run, state: TrainState, resuming: bool, progress: bool, t0: float) -> str:
    """Train from ``state.iteration`` to the end (or an early stop); returns why it stopped."""
    spec = run.spec
    annealing = spec.eps_schedule == "anneal"
    start_it, eps, running = state.iteration, None, 0.0
    handle, writer = open_metrics(run, resuming)
    with progress_bar(progress) as bar, handle:
        job = bar.add_task("train", total=spec.iterations, completed=start_it, status="")
        while state.iteration < spec.iterations:
            if annealing:
                eps = annealed_eps(state.iteration, spec.iterations)
                set_eps(run.model, eps)
            loss = train_step(run)
            state.iteration += 1
            running = 0.9 * running + 0.1 * loss if state.iteration > start_it + 1 else loss
            bar.advance(job)
            if state.iteration % spec.eval_every == 0 or state.iteration == spec.iterations:
                value, stop = evaluation(run, state, eps, running, writer, time.monotonic() - t0)
                handle.flush()
                bar.update(job, status=f"loss {running:.3f} val {run.metric} {value:.4f}")
                if stop is not None:
                    return stop
    return "iterations"


def keep_fallback_best(run: Run, state: TrainState) -> None:
    """A ``best.pt`` when no full window of deployable evaluations was reached."""
    if state.best_it < 0 and state.window:  # fewer deployable evaluations than one window: the partial one
        state.best = window_criterion(state.window)
        centre = state.window[(len(state.window) - 1) // 2]
        save_checkpoint(run.run_dir / BEST, {"model": centre["state"], "iteration": centre["it"]})
        state.best_it = centre["it"]
    elif state.best_it < 0:  # e.g. the time budget ended an annealed run before eps reached 0
        save_checkpoint(
            run.run_dir / BEST, {"model": cpu_copy(plain_state(run.model)), "iteration": state.iteration}
        )
        state.best_it = state.iteration


def finish(run: Run, state: TrainState, stopped: str, t0: float) -> TrainResult:
    """Score the kept checkpoint on the test split and write ``summary.json``."""
    recipe, task = run.recipe, run.task
    device = model_device(run.model)
    _, best_model, _ = load_run(run.run_dir, device)
    x_test, y_test = task.split("test", recipe.seed)
    scored = with_training_grids(recipe, best_model)
    if recipe.train.selection == "average":  # the mean's validation score (none without validation)
        best_val = run.scorer(scored, task, run.x_val, run.y_val)[0] if len(run.x_val) else None
    else:
        best_val = state.best[0] if task.kind == "classification" else -state.best[0]
    test, _, quantizable = run.scorer(scored, task, x_test, y_test)
    result = TrainResult(
        str(run.run_dir),
        state.iteration,
        state.best_it,
        run.metric,
        best_val,
        test,
        time.monotonic() - t0,
        stopped,
        update_rate(best_model, layer_steps(best_model, x_test.shape[1])),
        scorer_name(run.scorer) if quantizable else "model",
        torch.get_num_threads(),
        str(device),
    )
    write_text(run.run_dir / SUMMARY, json.dumps(asdict(result), indent=2))
    return result


def train(recipe: Recipe, run_dir: str | Path, *, progress: bool = True) -> TrainResult:
    """Train ``recipe`` into ``run_dir`` (resuming it when it holds the same recipe).

    Stages: the run directory and a repeatable process (:mod:`codesign.train.repeat`), the model
    and optimizer, the state to resume from, the loop, then the kept checkpoint's test score.
    """
    with deterministic():
        return _train(recipe, Path(run_dir), progress)


def _train(recipe: Recipe, run_dir: Path, progress: bool) -> TrainResult:
    device = run_device(recipe)  # a device the machine lacks fails before the run directory exists
    warn_if_order_blind(recipe)
    resuming = _prepare_run_dir(run_dir, recipe)
    threads = thread_count(recipe.train.threads)
    seed_everything(recipe.seed, threads)
    record(run_dir, environment(recipe.seed, threads), resuming)
    task = make_recipe_task(recipe)
    model = build_training_model(recipe, task).to(device)  # built on the CPU: the same weights everywhere
    opt, sched = make_optimizer(model, recipe.train)
    x_val, y_val = task.split("val", recipe.seed)
    if not len(x_val) and recipe.train.selection != "average":
        raise CodesignError(
            f"the task has no validation set and train.selection is {recipe.train.selection!r}: "
            "model selection needs one; use selection: average, or a val_fraction above 0"
        )
    gen = torch.Generator().manual_seed(recipe.seed)
    run = Run(recipe, run_dir, task, model, opt, sched, gen, x_val, y_val, make_scorer(recipe, task))
    state = restore(run) if resuming else TrainState()
    t0 = time.monotonic() - state.elapsed_before
    stopped = loop(run, state, resuming, progress, t0)
    keep_fallback_best(run, state)
    return finish(run, state, stopped, t0)
