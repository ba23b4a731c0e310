"""Every script in examples/ runs at its small size (``SMALL=1``) and checks its own result."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_every_example_is_listed_in_the_readme() -> None:
    readme = (EXAMPLES[0].parent / "README.md").read_text()
    assert EXAMPLES and all(e.name in readme for e in EXAMPLES)


@pytest.mark.sim
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """In this process (torch is imported once for all), Icarus for the simulating one."""
    monkeypatch.setenv("SMALL", "1")
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setenv("CODESIGN_SIM", "icarus")
    runpy.run_path(str(example), run_name="__main__")  # each example asserts its own result
    out = capsys.readouterr().out
    assert out.strip()
    written = {p.name for p in tmp_path.rglob("*")}
    assert written & {"manifest.yaml", "sweep.png"}
