"""Statement scores come from the result cache on a rerun, and never from an entry of another model or PLL variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_kbc
from lm_fixtures import build_model, tiny_models, tokenizer_for  # noqa: F401  (fixture)

from lm.cache import ResultCache
from lm.masked import MaskedLMScorer
from lm.statement import MaskedStatementScorer, fill

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"


@pytest.fixture
def passes(monkeypatch) -> list[int]:
    """Masked-LM forward passes, counted (one entry per pass, its batch size)."""
    calls: list[int] = []
    original = MaskedLMScorer._mask_logits

    def counted(self, input_ids, *args, **kwargs):
        calls.append(int(input_ids.shape[0]))
        return original(self, input_ids, *args, **kwargs)

    monkeypatch.setattr(MaskedLMScorer, "_mask_logits", counted)
    return calls


def _records(out: Path) -> dict[str, list[dict]]:
    return {p.name: [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted((out / "predictions" / "bear" / "bert").glob("*.jsonl"))}


def test_rerun_into_new_out_does_no_forward_pass(tiny_models, tmp_path, monkeypatch, capsys, passes):  # noqa: F811
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = tiny_models("bert-cased")
    runs = []
    for out in (tmp_path / "first", tmp_path / "second"):
        passes.clear()
        code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P30", "P412", "--predictors",
                                f"bert={bert}", "--limit", "3", "--data-dir", str(BEAR), "--out", str(out),
                                "--quiet"], capsys)
        assert code == 0, err
        runs.append((len(passes), _records(out)))
    (first_passes, first), (second_passes, second) = runs
    assert first_passes > 0 and second_passes == 0
    assert set(first) == {"P30.jsonl", "P412.jsonl"} and sum(map(len, first.values())) == 6
    assert second == first


def test_no_stale_hits(tmp_path, passes):
    tokenizer = tokenizer_for("bert-cased")
    statements = [fill("[X] is located in [Y].", "Tundzha Glacier", a) for a in ("Africa", "Antarctica", "Europe")]
    cache = ResultCache(tmp_path / "results.sqlite")

    def scores(seed: int, pll: str, reduction: str, with_cache: bool) -> list[float]:
        model = build_model("bert-cased", tokenizer, seed=seed).eval()
        engine = MaskedLMScorer(model, tokenizer, fingerprint=f"tiny-{seed}", cache=cache if with_cache else None)
        passes.clear()
        return MaskedStatementScorer(engine, pll).score(statements, reduction)

    settings = ((0, "within_word_l2r", "sum"), (0, "original", "sum"), (1, "within_word_l2r", "sum"),
                (0, "within_word_l2r", "mean"))
    fresh = {setting: scores(*setting, False) for setting in settings}
    assert len({tuple(v) for v in fresh.values()}) == 4  # each setting gives other numbers
    assert scores(0, "within_word_l2r", "sum", True) == fresh[(0, "within_word_l2r", "sum")] and passes
    assert scores(0, "within_word_l2r", "sum", True) == fresh[(0, "within_word_l2r", "sum")] and not passes
    # one entry holds the token scores, so the other reduction is served from it, reduced anew
    assert scores(0, "within_word_l2r", "mean", True) == fresh[(0, "within_word_l2r", "mean")] and not passes
    for setting in ((0, "original", "sum"), (1, "within_word_l2r", "sum")):
        assert scores(*setting, True) == fresh[setting] and passes, setting  # another variant or model: a miss
    assert len(cache) == 3 * 3


def test_the_answer_span_stays_on_the_answer_when_the_opening_letter_upper_cases_to_two():
    """Armenian "և" upper-cases to "ԵՒ" and "ß" to "SS": the answer's span, taken before, then covered the letter
    before it and lost its last, so answer_l2r+word_l2r scored the wrong characters."""
    armenian = fill("և [X]ը [Y] է։", "Սևան", "ծով")
    assert armenian.text[slice(*armenian.answer)] == "ծով"
    opening = fill("[Y] is [X].", "a", "ßig", compat="lm-pub-quiz")
    assert opening.text[slice(*opening.answer)] == "SSig"
