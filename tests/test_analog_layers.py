"""The analog path's modules import one way (docs/analog-pipeline.md): a module imports only from
its own layer or the layers above it, function-level imports included, and no two import each
other."""

from __future__ import annotations

import ast
from pathlib import Path

import codesign.analog

LAYERS = [
    {"pdk", "ngspice", "model_prune", "layer"},
    {"cells", "mapping", "drive", "ladder_deck", "netlist"},
    {"spec"},
    {"sim"},
    {"measure_cells", "measure_ladder", "trace", "ladder_trace", "synapse"},
    {"check_inputs", "report"},
    {"check_registry", "check_cells", "check_ladder", "check_layer", "check_power", "check_robustness"},
    {"check_list", "checks"},
    {"eval_settings", "evaluate", "ladder_model", "behavioural", "mismatch", "synapse_sim"},
    {"commands"},
]
ROOT = Path(codesign.analog.__file__).parent


def _level(name: str) -> int:
    return next(k for k, layer in enumerate(LAYERS) if name in layer)


def _imports(path: Path) -> set[str]:
    """The codesign.analog modules ``path`` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "codesign.analog":
                out |= {a.name for a in node.names}
            elif node.module.startswith("codesign.analog."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("codesign.analog.")}
    return out


def _graph() -> dict[str, set[str]]:
    return {p.stem: _imports(p) - {p.stem} for p in ROOT.glob("*.py") if p.stem != "__init__"}


def test_every_module_has_a_layer():
    assert set(_graph()) == set().union(*LAYERS)


def test_imports_go_one_way():
    wrong = [
        (mod, dep)
        for mod, deps in sorted(_graph().items())
        for dep in sorted(deps)
        if _level(dep) > _level(mod)
    ]
    assert wrong == []


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*path, node, dep]
            if dep not in state and (cycle := visit(dep, [*path, node])):
                return cycle
        state[node] = 2
        return None

    cycles = [c for m in sorted(graph) if m not in state and (c := visit(m, []))]
    assert cycles == []
