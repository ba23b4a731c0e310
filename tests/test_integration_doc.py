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


def test_wavedrom_and_table_show_fields_only_while_valid() -> None:
    from codesign.hw.waves import wave_table, wavedrom

    signals = [("v", "v", None), ("d", "d", "v")]
    samples = [{"v": 0, "d": 5}, {"v": 1, "d": 5}, {"v": 1, "d": 5}, {"v": 1, "d": 6}, {"v": 0, "d": 6}]
    drawn = wavedrom(samples, signals, 0, 5, "t")
    assert drawn["signal"][0] == {"name": "clk", "wave": "p...."}
    assert drawn["signal"][1]["wave"] == "01..0"
    assert drawn["signal"][2] == {"name": "d", "wave": "x=.=x", "data": ["5", "6"]}
    assert "| `d` | . | 5 | 5 | 6 | . |" in wave_table(samples, signals, 0, 5)
