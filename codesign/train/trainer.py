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
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import yaml
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from codesign.atomic import atomic_path, write_text
from codesign.data.base import IGNORE_INDEX
from codesign.device import device_override, resolve_device
from codesign.errors import CodesignError
from codesign.nn.surnn import update_rate
from codesign.train.models import annealed_eps, build_model, set_eps
from codesign.train.recipe import Recipe, build_task, parse_recipe

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
    best_val: float
    test: float
    wall_s: float
    stopped: str
    update_rate: float | None = None  # selective-update models: fraction of open neuron-steps (test length)
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
def evaluate(model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor, batch: int = 256) -> float:
    """Accuracy (over labelled positions) for classification, mean absolute error for regression."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    device = model_device(model)
    for i in range(0, len(x), batch):
        out, tgt = model(x[i : i + batch].to(device)), y[i : i + batch].to(device)
        if task.kind == "classification":
            mask = tgt != IGNORE_INDEX
            total += (out.argmax(-1)[mask] == tgt[mask]).sum().item()
            count += int(mask.sum())
        else:
            total += (out - tgt).abs().sum().item()
            count += tgt.numel()
    model.train(was_training)
    return total / max(1, count)


@torch.no_grad()
def validation_loss(
    model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor, batch: int = 256
) -> float:
    """Mean training loss (cross-entropy or MSE) over ``x``: the tie-break of model selection."""
    was_training = model.training
    model.eval()
    total = 0.0
    device = model_device(model)
    for i in range(0, len(x), batch):
        xb, yb = x[i : i + batch].to(device), y[i : i + batch].to(device)
        total += loss_fn(task, model(xb), yb).item() * len(xb)
    model.train(was_training)
    return total / max(1, len(x))


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
    recipe = parse_recipe(yaml.safe_load((run_dir / RECIPE_FILE).read_text()), run_dir / RECIPE_FILE)
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
    return recipe, model.to(device), summary


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
        stored = parse_recipe(yaml.safe_load(text), path)
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


def train(recipe: Recipe, run_dir: str | Path, *, progress: bool = True) -> TrainResult:
    """Train ``recipe`` into ``run_dir`` (resuming it when it holds the same recipe)."""
    run_dir = Path(run_dir)
    spec = recipe.train
    device = run_device(recipe)  # a device the machine lacks fails before the run directory exists
    resuming = _prepare_run_dir(run_dir, recipe)
    torch.set_num_threads(spec.threads or min(2, torch.get_num_threads()))
    torch.manual_seed(recipe.seed)
    task = make_recipe_task(recipe)
    model = build_model(recipe, task)
    if spec.init_from is not None:  # fine-tuning (e.g. quantization-aware) starts from another run
        model.load_state_dict(load_checkpoint(Path(spec.init_from) / BEST)["model"])
    if spec.qat_bits is not None:
        from codesign.quant.qat import add_fake_quant

        q = recipe.quant
        add_fake_quant(
            model,
            spec.qat_bits,
            q.layer.alpha_bits,
            q.input.frac,
            q.input.bits,
            q.layer.dcls_weight_bits,
            q.layer.bias_bits,
            q.layer.gate_bits,
        )
    model.to(device)  # built and initialised on the CPU: the same weights on every device
    metric = metric_name(task)
    opt = torch.optim.AdamW(
        model.parameters(), lr=spec.lr, betas=(0.9, 0.99), eps=1e-8, weight_decay=spec.weight_decay
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: lr_factor(it, spec))
    gen = torch.Generator().manual_seed(recipe.seed)
    x_val, y_val = task.split("val", recipe.seed)
    n_eval = min(len(x_val), spec.eval_batches * spec.batch_size)
    start_it, best, best_it, perfect_streak, elapsed_before = 0, (-math.inf, -math.inf), -1, 0, 0.0
    window: list[dict] = []  # the last smooth_evals deployable evaluations, with their weights
    size = spec.smooth_evals if spec.selection == "smoothed" else 1
    if resuming:
        state = load_checkpoint(run_dir / LAST)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        gen.set_state(state["generator"])
        start_it, best, best_it = state["iteration"], state["best_score"], state["best_it"]
        best = tuple(best) if isinstance(best, list | tuple) else (best, -math.inf)  # older runs: a number
        perfect_streak, elapsed_before = state["perfect_streak"], state["elapsed"]
        window = state.get("window", [])
    metrics_path = run_dir / METRICS
    new_metrics = not metrics_path.is_file() or not resuming
    metrics_file = metrics_path.open("w" if new_metrics else "a", newline="")
    writer = csv.writer(metrics_file)
    if new_metrics:
        writer.writerow(["iteration", "train_loss", f"val_{metric}", "eps", "lr", "elapsed_s"])
    annealing = spec.eps_schedule == "anneal"
    t0 = time.monotonic() - elapsed_before
    stopped = "iterations"
    it = start_it
    eps = None
    bar = Progress(
        TextColumn("[bold]train"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} it"),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        disable=not progress,
        transient=True,
    )
    with bar, metrics_file:
        job = bar.add_task("train", total=spec.iterations, completed=start_it, status="")
        running = 0.0
        while it < spec.iterations:
            if annealing:
                eps = annealed_eps(it, spec.iterations)
                set_eps(model, eps)
            x, y = task.sample(spec.batch_size, gen)
            if spec.input_noise > 0:  # augmentation; silent (all-zero, e.g. padding) frames stay silent
                noise = torch.randn(x.shape, generator=gen) * spec.input_noise
                x = x + noise * (x != 0).any(dim=-1, keepdim=True)
            x, y = x.to(device), y.to(device)  # drawn on the CPU: the same batches on every device
            loss = loss_fn(task, model(x), y, spec.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip)
            opt.step()
            sched.step()
            it += 1
            running = 0.9 * running + 0.1 * loss.item() if it > start_it + 1 else loss.item()
            bar.advance(job)
            if it % spec.eval_every == 0 or it == spec.iterations:
                idx = torch.randperm(len(x_val), generator=torch.Generator().manual_seed(it))[:n_eval]
                value = evaluate(model, task, x_val[idx], y_val[idx])
                vloss = validation_loss(model, task, x_val[idx], y_val[idx])
                elapsed = time.monotonic() - t0
                writer.writerow(
                    [
                        it,
                        f"{running:.6f}",
                        f"{value:.6f}",
                        "" if eps is None else f"{eps:.4f}",
                        f"{sched.get_last_lr()[0]:.3e}",
                        f"{elapsed:.2f}",
                    ]
                )
                metrics_file.flush()
                # an annealed model is deployable only once eps reached 0: checkpoint only then
                deployable = not annealing or eps == 0.0
                if deployable:
                    entry = {"it": it, "score": score(task, value), "loss": vloss, "value": value}
                    # copies (not views), on the CPU: checkpoints load anywhere
                    weights = {k: v.detach().to("cpu", copy=True) for k, v in plain_state(model).items()}
                    window = [*window, entry | {"state": weights}][-size:]
                    crit = window_criterion(window)
                    if len(window) == size and crit > best:
                        centre = window[(size - 1) // 2]
                        best, best_it = crit, centre["it"]
                        save_checkpoint(
                            run_dir / BEST,
                            {"model": centre["state"], "iteration": centre["it"], metric: centre["value"]},
                        )
                perfect = (
                    task.kind == "classification"
                    and value >= 1.0
                    and deployable
                    and n_eval >= spec.early_stop_min_val
                )
                perfect_streak = perfect_streak + 1 if perfect else 0
                save_checkpoint(
                    run_dir / LAST,
                    {
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(),
                        "generator": gen.get_state(),
                        "iteration": it,
                        "best_score": list(best),
                        "best_it": best_it,
                        "window": window,
                        "perfect_streak": perfect_streak,
                        "elapsed": elapsed,
                    },
                )
                bar.update(job, status=f"loss {running:.3f} val {metric} {value:.4f}")
                if perfect_streak >= spec.early_stop_evals:
                    stopped = "early stop (validation at 100%)"
                    break
                if spec.max_seconds is not None and elapsed >= spec.max_seconds:
                    stopped = f"time budget ({spec.max_seconds:.0f} s)"
                    break
    if best_it < 0 and window:  # fewer deployable evaluations than one window: the partial one
        best = window_criterion(window)
        centre = window[(len(window) - 1) // 2]
        save_checkpoint(run_dir / BEST, {"model": centre["state"], "iteration": centre["it"]})
        best_it = centre["it"]
    elif best_it < 0:  # e.g. the time budget ended an annealed run before eps reached 0
        state = {k: v.detach().to("cpu", copy=True) for k, v in plain_state(model).items()}
        save_checkpoint(run_dir / BEST, {"model": state, "iteration": it})
        best_it = it
    _, best_model, _ = load_run(run_dir, device)
    x_test, y_test = task.split("test", recipe.seed)
    best_val = best[0] if task.kind == "classification" else -best[0]
    result = TrainResult(
        str(run_dir),
        it,
        best_it,
        metric,
        best_val,
        evaluate(best_model, task, x_test, y_test),
        time.monotonic() - t0,
        stopped,
        update_rate(best_model, x_test.shape[1]),
        str(device),
    )
    write_text(run_dir / SUMMARY, json.dumps(asdict(result), indent=2))
    return result
