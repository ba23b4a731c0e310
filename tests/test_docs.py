"""The documentation site builds with ``mkdocs build --strict``: a page that links to a missing page,
anchor or repository file, or an API reference (``::: codesign.x``) that griffe cannot resolve,
fails here (and so in ``make test``), not on a reader's screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs(config_dir: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=config_dir,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_docs_site_builds_strict(tmp_path: Path) -> None:
    result = _mkdocs(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ("index.html", "fpga/index.html", "analog/index.html", "api/golden/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    api = (tmp_path / "site" / "api" / "golden" / "index.html").read_text()
    assert "run_golden" in api, "the API page carries no rendered docstrings"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The strict build is a check only if it refuses a broken link; build a copy with one."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("api"))
    (copy / "mkdocs.yml").write_text(_without_api((ROOT / "mkdocs.yml").read_text()))
    (copy / "docs" / "broken.md").write_text(
        "# Broken\n\n[gone](no-such-page.md), [src](../no/such/file.py)\n"
    )
    result = _mkdocs(copy, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr and "no/such/file.py" in result.stderr


def _without_api(config: str) -> str:
    """mkdocs.yml without the mkdocstrings plugin (the copy has no package to document)."""
    head, _, _ = config.partition("  - mkdocstrings:")
    return head
