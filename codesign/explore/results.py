"""Trial records -> one table (parquet + CSV), plots and a markdown summary.

Table: one row per trial with its configuration (task, cell, layers, d, eps, dcls, pooling,
weight and state widths, quantization, seed, lanes), golden-model accuracy, hardware figures
(:data:`codesign.explore.hardware.FIGURES`), times and status. A *design* is a row without its
seed: plots and the summary average designs over seeds and show [min; max].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from codesign.atomic import atomic_path, write_text
from codesign.explore.hardware import FIGURES

__all__ = ["CONFIG", "describe", "designs", "pareto_front", "table", "write_results"]

CONFIG = (
    "task",
    "cell",
    "layers",
    "d",
    "eps",
    "dcls",
    "pooling",
    "weight_bits",
    "state_bits",
    "quantization",
    "seed",
    "lanes",
)
"""Configuration columns of the table, in order."""

DESIGN = tuple(c for c in CONFIG if c != "seed")
NETWORK = tuple(c for c in DESIGN if c not in ("weight_bits", "lanes"))


def config_of(record: dict[str, Any]) -> dict[str, Any]:
    """The configuration columns of a trial record, read from what was actually trained."""
    b = record["bundle"]
    recipe = b["recipe"]
    layers = recipe["model"]["layers"]
    task = recipe["task"]
    options = ",".join(f"{k}={v}" for k, v in sorted(task.items()) if k != "name")
    if recipe["train"].get("eps_schedule") == "anneal":
        eps = "anneal"
    elif "eps" in layers[0]:
        eps = f"{layers[0]['eps']:g}"
    else:
        eps = "-"
    dcls = layers[0].get("dcls")
    return {
        "task": task["name"] + (f"({options})" if options else ""),
        "cell": layers[0]["cell"],
        "layers": len(layers),
        "d": layers[0]["size"],
        "eps": eps,
        "dcls": f"{dcls['taps']}/{dcls['span']}" if dcls else "-",
        "pooling": recipe["model"]["pooling"],
        "weight_bits": b["weight_bits"],
        "state_bits": b["quant"]["layer"]["state_bits"],
        "quantization": b["quantization"],
        "seed": recipe["seed"],
        "lanes": record["lanes"] if record["lanes"] is not None else 0,
    }


def describe(record: dict[str, Any]) -> str:
    c = config_of(record)
    text = (
        f"{c['cell']} x{c['layers']} d={c['d']} eps={c['eps']} w{c['weight_bits']}/s{c['state_bits']} "
        f"{c['quantization']} seed {c['seed']}"
    )
    return text + (f" P={c['lanes']}" if c["lanes"] else "")


def table(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for rec in records:
        r, f = rec.get("result", {}), rec.get("figures", {})
        row = {"hash": rec["hash"], **config_of(rec), "status": rec["status"]}
        row |= {
            "float_accuracy": r.get("float_accuracy", np.nan),
            "accuracy": r.get("accuracy", np.nan),
            "torch_vs_golden_mismatches": r.get("torch_vs_golden_mismatches", np.nan),
            "test_sequences": r.get("test_sequences", np.nan),
        }
        row |= {k: f.get(k, np.nan) for k in FIGURES}
        row |= {
            "train_s": r.get("train_s", np.nan),
            "quantize_s": r.get("quantize_s", np.nan),
            "hardware_s": rec.get("hardware_s", np.nan),
            "error": rec.get("error") or "",
        }
        rows.append(row)
    df = pd.DataFrame(rows, columns=["hash", *CONFIG, "status", "float_accuracy", "accuracy",
                                     "torch_vs_golden_mismatches", "test_sequences", *FIGURES,
                                     "train_s", "quantize_s", "hardware_s", "error"])  # fmt: skip
    return df.sort_values(list(CONFIG), kind="stable").reset_index(drop=True)


def designs(df: pd.DataFrame, keys: tuple[str, ...] = DESIGN) -> pd.DataFrame:
    """Successful trials grouped by ``keys`` (over seeds): accuracy mean/min/max, mean figures."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame()
    if "lanes" not in keys:  # one row per seed: lanes change only the cycle estimates
        ok = ok.drop_duplicates([*keys, "seed"]).assign(
            cycles_per_step_est=np.nan, cycles_per_inference_est=np.nan
        )
    agg = {"accuracy": ["mean", "min", "max", "count"]}
    agg |= {k: "mean" for k in FIGURES if k in ok}
    g = ok.groupby(list(keys), dropna=False).agg(agg)
    g.columns = [
        "accuracy" if (a, b) == ("accuracy", "mean") else f"accuracy_{b}" if a == "accuracy" else a
        for a, b in g.columns
    ]
    return g.rename(columns={"accuracy_count": "seeds"}).reset_index()


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats (lower or equal ``x`` and higher ``y``), by ``x``."""
    order = np.lexsort((-y, x))
    front, best = [], -np.inf
    for i in order:
        if y[i] > best:
            front.append(i)
            best = y[i]
    return np.array(front, dtype=int)


def _label(row: pd.Series, varying: list[str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in varying) or "all"


def _varying(df: pd.DataFrame, keys: tuple[str, ...]) -> list[str]:
    return [k for k in keys if df[k].nunique() > 1]


def plot_bits(df: pd.DataFrame, path: Path, title: str) -> None:
    """Accuracy against weight bits, one panel per quantization, one line per network."""
    from codesign.extras import require

    require("matplotlib", "the exploration plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    net = designs(df, tuple(k for k in DESIGN if k != "lanes"))
    panels = sorted(net["quantization"].unique()) if not net.empty else ["ptq"]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.2 * len(panels) + 0.5, 4.2), sharey=True, squeeze=False
    )
    varying = _varying(net, tuple(k for k in NETWORK if k != "quantization")) if not net.empty else []
    for ax, quant in zip(axes[0], panels, strict=True):
        part = net[net["quantization"] == quant] if not net.empty else net
        for i, (_, group) in enumerate(part.groupby(varying or ["cell"], dropna=False)):
            group = group.sort_values("weight_bits")
            color = f"C{i % 10}"
            label = _label(group.iloc[0], varying)
            ax.plot(group["weight_bits"], 100 * group["accuracy"], marker="o", color=color, label=label)
            low, high = 100 * group["accuracy_min"], 100 * group["accuracy_max"]
            ax.fill_between(group["weight_bits"], low, high, color=color, alpha=0.12)
        if not part.empty:
            ax.set_xticks(sorted(part["weight_bits"].unique()))
        ax.set_title(quant, fontsize=10)
        ax.set_xlabel("weight bits")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("golden-model test accuracy (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    rows = -(-len(handles) // 3)
    if handles:
        fig.set_figheight(4.2 + 0.22 * rows)
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.suptitle(f"{title}: mean over seeds, band = [min; max]", fontsize=10)
    fig.tight_layout(rect=(0, 0.22 * rows / fig.get_figheight() + 0.02, 1, 1))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def plot_pareto(d: pd.DataFrame, x: str, xlabel: str, path: Path, title: str) -> pd.DataFrame:
    """Accuracy against ``x`` per design, the front marked; returns the front's rows."""
    from codesign.extras import require

    require("matplotlib", "the exploration plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    front = d.iloc[pareto_front(d[x].to_numpy(float), d["accuracy"].to_numpy(float))]
    markers = dict(zip(sorted(d["quantization"].unique()), "os^", strict=False))
    for (cell, eps, quant), g in d.groupby(["cell", "eps", "quantization"]):
        ax.errorbar(
            g[x],
            100 * g["accuracy"],
            yerr=[100 * (g["accuracy"] - g["accuracy_min"]), 100 * (g["accuracy_max"] - g["accuracy"])],
            fmt=markers.get(quant, "o"),
            alpha=0.55,
            capsize=2,
            label=f"{cell}" + ("" if eps == "-" else f" eps={eps}") + f", {quant}",
        )
    ax.step(front[x], 100 * front["accuracy"], where="post", color="black", lw=1.2, label="Pareto front")
    ax.scatter(front[x], 100 * front["accuracy"], s=90, facecolors="none", edgecolors="black")
    for _, row in front.iterrows():
        ax.annotate(
            f"{row['cell']}"
            + ("" if row["eps"] == "-" else f" eps={row['eps']}")
            + f" d{row['d']} {row['weight_bits']}b {row['quantization']}"
            + (f" P{row['lanes']}" if "P" in xlabel else ""),
            (row[x], 100 * row["accuracy"]),
            fontsize=6,
            xytext=(6, -10),
            textcoords="offset points",
        )
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("golden-model test accuracy (%)")
    ax.set_title(f"{title}: mean over seeds, bars = [min; max]", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return front


def _fmt_design(row: pd.Series, lanes: bool = True) -> str:
    text = (
        f"{row['cell']} x{row['layers']} d={row['d']} eps={row['eps']} dcls={row['dcls']} {row['pooling']}, "
        f"{row['weight_bits']}-bit weights / {row['state_bits']}-bit state, {row['quantization']}"
    )
    return text + (f", P={row['lanes']}" if lanes and row.get("lanes") else "")


def _acc(row: pd.Series) -> str:
    return (
        f"{100 * row['accuracy']:.2f} [{100 * row['accuracy_min']:.2f}; {100 * row['accuracy_max']:.2f}] "
        f"({int(row['seeds'])} seeds)"
    )


def _figs(row: pd.Series) -> str:
    def num(key: str, fmt: str) -> str:
        v = row.get(key)
        return "-" if v is None or pd.isna(v) else format(v, fmt)

    return f"| {num('energy_pj_proxy', '.0f')} | {num('memory_bits', '.0f')} | {num('cycles_per_step_est', '.1f')} |"


def best_under(d: pd.DataFrame, budget) -> pd.Series | None:
    ok = pd.Series(True, index=d.index)
    bounds = {
        "max_energy_pj": ("energy_pj_proxy", np.less_equal),
        "max_memory_bits": ("memory_bits", np.less_equal),
        "max_cycles_per_step": ("cycles_per_step_est", np.less_equal),
        "min_accuracy": ("accuracy", np.greater_equal),
    }
    for key, (col, cmp) in bounds.items():
        v = getattr(budget, key)
        if v is not None:
            if col not in d:
                return None
            ok &= cmp(d[col], v)
    fit = d[ok]
    if fit.empty:
        return None
    # ties: less energy, fewer memory bits, then fewer lanes (the lanes' logic is not in the area proxy)
    order = [("accuracy", False), ("energy_pj_proxy", True), ("memory_bits", True), ("lanes", True)]
    first = {"energy": "energy_pj_proxy", "memory": "memory_bits", "cycles": "cycles_per_step_est"}
    if budget.objective != "accuracy":
        if first[budget.objective] not in fit:
            return None
        order = [(first[budget.objective], True)] + [o for o in order if o[0] != first[budget.objective]]
    order = [(c, up) for c, up in order if c in fit]
    return fit.sort_values([c for c, _ in order], ascending=[up for _, up in order], kind="stable").iloc[0]


def write_results(space, records: list[dict[str, Any]], root: Path, command: str, wall_s: float) -> dict:
    """Write ``results.parquet``, ``results.csv``, the plots and ``summary.md``; return their paths."""
    from codesign.explore.space import Budget

    df = table(records)
    paths = {"parquet": root / "results.parquet", "csv": root / "results.csv", "summary": root / "summary.md"}
    with atomic_path(paths["parquet"]) as tmp:
        df.to_parquet(tmp, index=False)
    with atomic_path(paths["csv"]) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")
    n_ok, n_failed = int((df["status"] == "ok").sum()), int((df["status"] != "ok").sum())
    hw = space.hardware is not None and n_ok > 0
    paths["accuracy_vs_bits"] = root / "accuracy_vs_bits.png"
    plot_bits(df, paths["accuracy_vs_bits"], space.name)
    d = designs(df)
    lines = [
        f"# Design-space exploration: {space.name}",
        "",
        f"Made by: `{command}` ({n_ok} trials ok, {n_failed} failed; this invocation {wall_s:.0f} s).",
        "",
        "Accuracy is the golden integer model's (what the hardware computes) on the task's whole test set, "
        "mean over seeds with [min; max]. "
        + (
            "Hardware figures are **estimates and proxies** (`codesign/explore/hardware.py`): energy = golden-model "
            "operation counts x a 45 nm per-operation energy table (Horowitz, ISSCC 2014), area = memory bits "
            "(weights + state), cycles per step = the event-driven floor sum_l ceil(d_l/P) max(work_l, 1) "
            "(they depend on the lanes P, so only the cycles front and the budgets show them)."
            if hw
            else ""
        ),
        "",
        "![accuracy against weight bits](accuracy_vs_bits.png)",
        "",
    ]
    if hw and not d.empty:
        no_lanes = designs(df, tuple(k for k in DESIGN if k != "lanes"))
        for key, x, xlabel, keys in (
            ("pareto_energy", "energy_pj_proxy", "energy per inference (pJ, proxy)", no_lanes),
            ("pareto_area", "memory_bits", "memory bits (area proxy)", no_lanes),
            ("pareto_cycles", "cycles_per_step_est", "cycles per step at P lanes (estimate)", d),
        ):
            paths[key] = root / f"{key}.png"
            front = plot_pareto(keys, x, xlabel, paths[key], space.name)
            lines += [
                f"## Pareto front: accuracy against {xlabel}",
                "",
                f"![accuracy against {xlabel}]({key}.png)",
                "",
                "| design | accuracy (%) | energy (pJ, proxy) | memory bits | cycles/step (est.) |",
                "|---|---|---|---|---|",
                *[
                    f"| {_fmt_design(r, key == 'pareto_cycles')} | {_acc(r)} {_figs(r)}"
                    for _, r in front.iterrows()
                ],
                "",
            ]
    budgets = list(space.budgets) or [Budget()]
    if not d.empty:
        lines += [
            "## Best design under each budget",
            "",
            "| budget | design | accuracy (%) | energy (pJ, proxy) | memory bits | cycles/step (est.) |",
            "|---|---|---|---|---|---|",
        ]
        for budget in budgets:
            best = best_under(d, budget)
            if best is None:
                lines.append(f"| {budget.label()} | none fits | | | | |")
            else:
                lines.append(f"| {budget.label()} | {_fmt_design(best)} | {_acc(best)} {_figs(best)}")
        lines.append("")
    failed = df[df["status"] != "ok"]
    if not failed.empty:
        lines += ["## Failed trials", "", "| trial | configuration | error |", "|---|---|---|"]
        lines += [
            f"| `{r['hash']}` | {_fmt_design(r)}, seed {r['seed']} | {r['error']} |"
            for _, r in failed.iterrows()
        ]
        lines.append("")
    lines += [
        "Files: `results.parquet` / `results.csv` (one row per trial: configuration, accuracy, figures, "
        "times, status), `trials/<hash>.json` (one record per trial), `space.yaml` (the space).",
        "",
    ]
    write_text(paths["summary"], "\n".join(lines))
    return {k: str(v) for k, v in paths.items()}
