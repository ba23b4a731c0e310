"""mkdocs hook: links from docs/ pages to repository files outside docs/ (source, flows/, models/).

mkdocs only knows the pages under ``docs/``, so ``[spec](../codesign/bundle/schema.py)`` would be a
broken link in the site and a warning (an error under ``--strict``). This hook checks that every
such target exists in the repository (a missing one is a warning, so the strict build still fails
on it) and rewrites the link: to ``repo_url``'s file view when ``mkdocs.yml`` sets one, otherwise
to the link text followed by the repository path in code.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path, PurePosixPath

log = logging.getLogger("mkdocs.hooks.repository_links")

_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def _outside_target(target: str, page_dir: PurePosixPath) -> tuple[str, str] | None:
    """(repository path, anchor) when ``target`` is a relative link that leaves docs/."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
        return None
    path, _, anchor = target.partition("#")
    parts: list[str] = ["docs", *page_dir.parts]
    for part in PurePosixPath(path).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    if parts and parts[0] == "docs":
        return None
    return "/".join(parts), anchor


def on_page_markdown(markdown: str, page, config, files) -> str:
    root = Path(config["docs_dir"]).resolve().parent
    page_dir = PurePosixPath(page.file.src_uri).parent
    repo_url = (config.get("repo_url") or "").rstrip("/")
    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        if fenced or "](" not in line:
            out.append(line)
            continue

        def rewrite(match: re.Match[str]) -> str:
            found = _outside_target(match["target"], page_dir)
            if found is None:
                return match.group(0)
            rel, anchor = found
            if not (root / rel).exists():
                log.warning("%s: link to '%s', which is not in the repository", page.file.src_uri, rel)
                return match.group(0)
            if repo_url:
                return f"[{match['text']}]({repo_url}/blob/main/{rel}{'#' + anchor if anchor else ''})"
            text = match["text"]
            return text if text.strip("`") == rel else f"{text} (`{rel}`)"

        out.append(_LINK.sub(rewrite, line))
    return "\n".join(out)
