"""codesign report-cells re-exports a cached bundle when the quantization code changed (not only its settings)."""

from __future__ import annotations

import json

import codesign.explore.trial as trial_mod
import codesign.quant.export as export_mod
from codesign.study import cells
from codesign.study.cells import CellsSettings, plan_variants, resolve_task, train_and_export


def test_bundle_cache_keys_on_the_quantization_code(tmp_path, monkeypatch) -> None:
    settings = CellsSettings(task="japanese_vowels", size=4, cells=("cmru",), seeds=(0,), wide_alpha=False)
    base_path, base = resolve_task(settings.task)
    (variant,) = plan_variants(settings, base, base_path, tmp_path)

    def fake_train(recipe, root):  # no training: the cache of the bundle stage is under test
        return {"run_dir": str(tmp_path / "runs" / "r"), "float_accuracy": 0.5, "train_s": 0.0}

    exports = []

    def fake_export(run_dir, out, quant):
        exports.append(out)
        report = {
            "quantized_test_accuracy": 0.25 * len(exports),
            "float_test_accuracy": 0.5,
            "test_sequences": 3,
            "torch_vs_golden_mismatches": 0,
        }
        return None, report

    monkeypatch.setattr(trial_mod, "train_stage", fake_train)
    monkeypatch.setattr(export_mod, "export_run", fake_export)
    said: list[str] = []

    (first,) = train_and_export(variant, tmp_path, said.append)
    assert len(exports) == 1 and first["reused"]["bundle"] is False
    record = json.loads((tmp_path / "bundles" / f"{first['bundle_dir'].split('/')[-1]}.json").read_text())
    assert record["quant_code"] == cells.quant_code()

    (second,) = train_and_export(variant, tmp_path, said.append)  # same code: the cached bundle
    assert len(exports) == 1 and second["reused"]["bundle"] is True
    assert second["quantized_accuracy"] == first["quantized_accuracy"]

    monkeypatch.setattr(cells, "quant_code", lambda: "0123456789abcdef")  # as after an edit of codesign/quant
    (third,) = train_and_export(variant, tmp_path, said.append)
    assert len(exports) == 2 and third["reused"]["bundle"] is False
    assert third["quantized_accuracy"] == 0.5  # the new export's, not the cached one
    assert any("quantization code changed" in s for s in said)


def test_quant_code_is_a_digest_of_the_quantization_sources() -> None:
    code = cells.quant_code()
    assert len(code) == 16 and int(code, 16) >= 0
    assert cells.quant_code() == code
