"""No function in codesign/ or verification/ runs over 120 lines (the house limit; ~100 is the aim).

A function that long does several stages at once; splitting it along its stages gives each a name
and a docstring. The functions still over the limit are listed in ``KNOWN_LONG``: that list can
only shrink (a listed function that is now short, or gone, fails the test until it is struck off).

``python tests/test_function_length.py`` prints every function over the limit, longest first.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("codesign", "verification")
LIMIT = 120

KNOWN_LONG: set[str] = set()
"""Functions over the limit that are still to be split (path:qualified name)."""


def function_lengths(path: Path, root: Path = ROOT) -> dict[str, int]:
    """``path:qualname`` -> lines (``def`` to last line) of every function and method in ``path``."""
    rel = path.relative_to(root).as_posix()
    found: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                found[f"{rel}:{name}"] = child.end_lineno - child.lineno + 1
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text(), str(path)), "")
    return found


def long_functions(limit: int = LIMIT, root: Path = ROOT) -> dict[str, int]:
    """Every function of the source trees over ``limit`` lines."""
    lengths: dict[str, int] = {}
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            lengths |= function_lengths(path, root)
    return {name: n for name, n in lengths.items() if n > limit}


def test_function_lengths_measures_nested_functions_and_methods(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "def f():\n    def g():\n        pass\n    return g\n\n\nclass C:\n    async def h(self):\n        pass\n"
    )
    assert function_lengths(src, tmp_path) == {"m.py:f": 4, "m.py:f.g": 2, "m.py:C.h": 2}


def test_no_new_function_over_the_limit():
    new = {name: n for name, n in long_functions().items() if name not in KNOWN_LONG}
    assert not new, f"functions over {LIMIT} lines (split them along their stages): {new}"


def test_known_long_list_only_shrinks():
    long = long_functions()
    fixed = sorted(KNOWN_LONG - set(long))
    assert not fixed, f"now at most {LIMIT} lines or gone: strike them off KNOWN_LONG: {fixed}"


if __name__ == "__main__":
    for name, n in sorted(long_functions().items(), key=lambda item: -item[1]):
        print(f"{n:5d}  {name}{'' if name in KNOWN_LONG else '  (new)'}", file=sys.stdout)
