"""docs/integration.md's generated tables and latency rows are what codesign.hw.integration renders
from the committed reference builds (regenerate with `python -m codesign.hw.integration`)."""

from __future__ import annotations

from codesign.hw.integration import DOC, blocks, fields_table, render


def test_the_integration_page_matches_the_reference_builds() -> None:
    text = DOC.read_text()
    generated = blocks()
    assert all(f"<!-- begin {name} -->" in text for name in generated)
    assert render(text, generated) == text, (
        "docs/integration.md is stale: run python -m codesign.hw.integration"
    )


def test_render_replaces_only_the_named_blocks() -> None:
    text = "a\n<!-- begin x -->\nold\n<!-- end x -->\n<!-- begin y -->\nkeep\n<!-- end y -->\n"
    assert render(text, {"x": "new"}) == text.replace("old", "new")
    assert render(render(text, {"x": ""}), {"x": "back"}).count("back") == 1


def test_fields_table_gives_bit_ranges() -> None:
    table = fields_table(
        {"index": {"offset": 0, "width": 4, "signed": 0}, "value": {"offset": 4, "width": 8, "signed": 1}}
    )
    assert "| `index` | 3:0 | no |" in table and "| `value` | 11:4 | yes |" in table
