"""The project speaks of itself in the present tense: no work logs in code, docs or recipes.

Text that names the work that produced it (sessions, helpers, git branches, issue numbers, dates,
"yesterday") stops being true the moment it is merged, and a reader cannot tell what holds now from
what held once. History belongs in commit messages and in ``CHANGELOG.md``.

Scanned: every tracked file whose suffix is in ``_SUFFIXES`` (hand-written code, docs, recipes,
constraints, the Makefile and CI script). Not scanned: ``CHANGELOG.md`` (dated by design), this
file (it spells the patterns), generated data (JSON, CSV, Verilog, SPICE decks, logs) and binaries.

Allowed, because the patterns below do not match them:

* ``branch`` as a circuit or code word ("the switched branch", "one branch is diode-connected",
  "a conditional branch"); only the git sense is refused ("branch area8", "merge branch",
  "this branch", "feature branch").
* ``helper`` as a code word ("small helpers shared by the task modules"); only a helper as a person
  or agent is refused ("a helper session", "the helper found").
* ``start_new_session`` and other identifiers (the patterns need word boundaries, and ``_`` is a
  word character).
* Verilog delays (``#5``): only issue references are refused ("issue 18", "issue #18", "(#18)",
  "fixes #18").

A line that must quote such text verbatim (a tool's version banner with its build date, say) ends
with the marker ``words: allow``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".sh", ".pcf", ".lpf"}
_NAMES = {"Makefile", "run", ".gitignore"}  # `run` is .ci/run
_SKIP = {"CHANGELOG.md", "tests/test_words.py"}
_ALLOW_MARKER = "words: allow"

_PATTERNS: dict[str, re.Pattern[str]] = {
    "a work session": re.compile(r"\bsessions?\b", re.I),
    "a helper as an agent": re.compile(
        r"\bhelper(?:'s|s')|\bhelpers?\s+(?:sessions?|agents?|engineers?)\b"
        r"|\b(?:the|a|my|one|another|each|this)\s+helpers?\s+"
        r"(?:found|said|measured|ran|wrote|reported|checked|built|did|started|traced|fixed)\b",
        re.I,
    ),
    "a git branch": re.compile(
        r"\bbranch(?:es)?\s+(?!x\d)[a-z][\w.-]*\d\b"  # branch area8, branch analog8
        r"|\bmerge[ds]?\s+(?:the\s+|this\s+)?branch"
        r"|\b(?:git|feature|main|master|this|my|our|own|another|other|sibling|parallel)\s+branch(?:es)?\b"
        r"|\bbranch(?:es)?\s+(?:merged?|rebased?|checked out)\b",
        re.I,
    ),
    "an issue number": re.compile(
        r"\bissues?\s+#?\d+|\(#\d+\)"
        r"|\b(?:PR|pull request|fix(?:es|ed)?|close[sd]?|resolve[sd]?|see)\s+#\d+\b",
        re.I,
    ),
    "a relative day": re.compile(
        r"\b(?:yesterday|today|tomorrow|tonight|this (?:week|morning|afternoon|evening))\b"
        r"|\b(?:last|next) (?:week|night)\b",
        re.I,
    ),
    "a date": re.compile(r"\b20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"),
}


_UNTRACKED_DIRS = {".git", ".venv", "build", "runs", "sim_build", "node_modules", "__pycache__"}


def _tracked() -> list[str]:
    """``git ls-files``; in a copy without git metadata, every file outside build and cache folders."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
        ).stdout
        return [p for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        return [
            path.relative_to(ROOT).as_posix()
            for path in ROOT.rglob("*")
            if path.is_file()
            and not any(
                part in _UNTRACKED_DIRS or (part.startswith(".") and part != ".ci")
                for part in path.relative_to(ROOT).parts[:-1]
            )
        ]


def _scanned(paths: list[str]) -> list[str]:
    keep = []
    for rel in paths:
        path = Path(rel)
        if rel in _SKIP or not (path.suffix in _SUFFIXES or path.name in _NAMES):
            continue
        if (ROOT / rel).is_file():  # a deleted but not yet staged file is still listed
            keep.append(rel)
    return keep


def _hits(text: str) -> list[tuple[int, str, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if _ALLOW_MARKER in line:
            continue
        for what, pattern in _PATTERNS.items():
            match = pattern.search(line)
            if match:
                found.append((number, what, match.group(0)))
    return found


def test_tracked_text_speaks_in_the_present_tense() -> None:
    problems = []
    for rel in _scanned(_tracked()):
        raw = (ROOT / rel).read_bytes()
        if b"\0" in raw:
            continue
        for number, what, words in _hits(raw.decode("utf-8", errors="replace")):
            problems.append(f"{rel}:{number}: {what} ({words!r})")
    assert not problems, (
        "history-speak in tracked text (say what is, in the present tense; history goes in "
        "CHANGELOG.md and commit messages):\n" + "\n".join(problems)
    )


def test_the_scan_covers_code_docs_recipes_and_makefile() -> None:
    scanned = set(_scanned(_tracked()))
    assert {"README.md", "Makefile", "codesign/cli.py"} <= scanned
    assert any(p.startswith("models/") and p.endswith(".yaml") for p in scanned)
    assert "CHANGELOG.md" not in scanned and "tests/test_words.py" not in scanned


def test_history_speak_is_refused() -> None:
    refused = [
        "measured in the seventh session",
        "the session before",
        "a helper session found the loop",
        "the helper measured 36 MHz",
        "merged from branch area8",
        "Merge branch analog8: 100 sequences",
        "on this branch the flow is faster",
        "targets of issue 18",
        "see #18 for why",
        "fixed (#42)",
        "as measured yesterday",
        "what the generator produces today",
        "re-measured this week",
        "measured on 2026-11-24",
    ]
    for text in refused:
        assert _hits(text), text


def test_legitimate_words_pass() -> None:
    allowed = [
        "the switched branch is a pFET copy of I_UP",
        "one branch is diode-connected on the capacitor node",
        "continuation follows the branch",
        "a conditional branch in the scheduler",
        "Small helpers shared by the task modules",
        "# ---------------------------------------- helpers",
        "proc = subprocess.Popen(cmd, start_new_session=True)",
        "  always #5 clk = ~clk;",
        "initial #1 $display(y);",
        "def test_port_map_today_accelerator_shape():",
        "colour #1f77b4 for the front",
        "Verilator 5.006 2022-12-11 rev  # words: allow",
    ]
    for text in allowed:
        assert not _hits(text), (text, _hits(text))
