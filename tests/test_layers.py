"""The layering of docs/architecture.md, checked: import-linter's contracts (pyproject.toml
``[tool.importlinter]``) over ``codesign``, and no import circle among the testbench's modules.

``verification/`` is a directory of scripts run by cocotb, not a package, so import-linter cannot
see it; its circles are found here from the source (``TYPE_CHECKING`` imports count: a circle that
only type checkers follow is still a circle for a reader).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERIFICATION = ROOT / "verification"


def _lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    exe = str(beside) if beside.is_file() else shutil.which("lint-imports")
    assert exe, "lint-imports (import-linter, the dev extra) is not installed"
    return exe


def test_import_contracts_are_kept():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [_lint_imports(), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def sibling_imports(directory: Path) -> dict[str, set[str]]:
    """Module name -> the names of the other modules of ``directory`` it imports (any depth)."""
    names = {p.stem for p in directory.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in directory.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
        graph[path.stem] = (found & names) - {path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_finds_a_circle_and_only_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_sibling_imports_reads_type_checking_imports(tmp_path):
    (tmp_path / "bench.py").write_text("import parts\n")
    (tmp_path / "parts.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bench import B\n"
    )
    graph = sibling_imports(tmp_path)
    assert graph == {"bench": {"parts"}, "parts": {"bench"}}
    assert find_cycle(graph) == ["bench", "parts", "bench"]


def test_testbench_has_no_import_circle():
    graph = sibling_imports(VERIFICATION)
    assert "tb_bench" in graph and graph["tb_bench"], graph
    assert find_cycle(graph) is None, f"import circle in verification/: {' -> '.join(find_cycle(graph))}"
