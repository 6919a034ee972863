"""A subject the corpus lacks gets close labels, also where only a word is shared (the explorer's "did you mean",
`kbcompare.ask`'s `suggestions`); the docs' `kbcompare.ask` example asks a subject the corpus holds."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import kbcompare
from bridge.serve.sides import Ask, check, subject_label, suggest
from eval.errors import ConfigError


def _explorer(*labels: str) -> SimpleNamespace:
    return SimpleNamespace(subjects={label: [] for label in labels})


def test_close_spellings_come_first_then_labels_sharing_the_rarer_words():
    explorer = _explorer("Dante Rivera", "John Smith", "John Dante Doe", "Mary of Teck", "Dantes", "Dante Alighier")
    assert subject_label(explorer, "Dante Alighieri") == ("Dante Alighieri", ["Dante Alighier", "Dante Rivera",
                                                                              "John Dante Doe"])
    # "john" is in two labels, "doe" in one: the label holding both, then the one sharing the rarer word
    assert subject_label(explorer, "Jane Doe") == ("Jane Doe", ["John Dante Doe"])
    assert subject_label(explorer, "John Doe")[1] == ["John Dante Doe", "John Smith"]
    assert subject_label(explorer, "Queen Elizabeth") == ("Queen Elizabeth", [])
    assert subject_label(explorer, "dante rivera") == ("Dante Rivera", [])


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


def test_a_subject_the_corpus_lacks_is_answered_with_close_labels(lama_dir, cache):
    answers = kbcompare.ask("Dante Alighieri", "P19", predictors=["freq"], data_dir=str(lama_dir))
    assert answers.gold == [] and answers.side("gold KB")["answers"] == []
    assert {k: answers.body["subject"][k] for k in ("in_corpus", "suggestions")} == {
        "in_corpus": False, "suggestions": ["Dante Rivera"]}


def test_the_docs_example_asks_a_subject_of_the_corpus(lama_dir, cache):
    text = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    subject, relation = re.search(r'kbcompare\.ask\("([^"]+)", "(P\d+)"', text).groups()
    answers = kbcompare.ask(subject, relation, predictors=["freq"], data_dir=str(lama_dir))
    assert answers.body["subject"]["in_corpus"] is True and answers.gold == ["Rome"]


def test_a_subject_typed_in_another_unicode_spelling_is_the_corpus_label():
    """"José" pasted with a combining accent (NFD, as macOS copies it) was another subject: no gold, no answers."""
    explorer = _explorer("Jos\u00e9 Saramago", "Josh Groban")
    assert subject_label(explorer, "Jose\u0301 Saramago\u200b") == ("Jos\u00e9 Saramago", [])
    assert subject_label(explorer, "jose\u0301 saramago") == ("Jos\u00e9 Saramago", [])


def test_a_prefix_typed_with_a_combining_accent_suggests_the_label():
    explorer = SimpleNamespace(subjects={"Jos\u00e9 Saramago": [], "Josh Groban": []}, set_valued=True,
                               cloze_facts=False)
    assert suggest(explorer, "jose\u0301") == ["Jos\u00e9 Saramago"]


@pytest.mark.parametrize("subject", ["\x1b[31mBob", "Bo\x00b", "\u202eboB"])
def test_a_subject_holding_a_control_character_is_refused(subject):
    """An escape sequence or NUL typed into the explorer went into every model's prompt and the server's logs."""
    with pytest.raises(ConfigError, match=r"the subject holds the control character U\+"):
        check(Ask(subject=subject, relation="P19"), SimpleNamespace(relations={"P19": None}, cloze_facts=()))


def test_greek_and_turkish_capitals_find_the_subject():
    """Greek capitals drop accents and Turkish has a dotless ı: ΚΥΠΡΟΥ (Κύπρου) and IĞDIR (Iğdır) found nothing,
    `casefold` keeping them apart, and `istanbul` typed without the Turkish dot only a suggestion."""
    explorer = _explorer("Κύπρου", "Iğdır", "İstanbul", "ｲｷﾞﾘｽ", "کره\u200cی جنوبی")
    assert [subject_label(explorer, typed)[0] for typed in ("ΚΥΠΡΟΥ", "IĞDIR", "istanbul", "ISTANBUL", "イギリス")] == [
        "Κύπρου", "Iğdır", "İstanbul", "İstanbul", "ｲｷﾞﾘｽ"]
    # a zero-width non-joiner is spelling: the word without it is another word, suggested, not taken for it
    assert subject_label(explorer, "کرهی جنوبی") == ("کرهی جنوبی", ["کره\u200cی جنوبی"])


def test_prefixes_in_greek_and_turkish_capitals_suggest_the_store_labels(tmp_path):
    """The store's LCASE kept "ΚΥ" from Κύπρου and "ı" from Iğdır: no suggestion while typing."""
    import json

    from bridge.serve.explorer import Explorer, ExplorerConfig

    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(json.dumps({"relation": "X1", "template": "[X] in [Y] ."}) + "\n")
    rows = [("Κύπρου", "Λευκωσία"), ("Iğdır", "Doğu Anadolu"), ("İstanbul", "Marmara"), ("Island", "x")]
    (data / "TREx" / "X1.jsonl").write_text("".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n"
                                                    for s, o in rows), encoding="utf-8")
    explorer = Explorer.start(ExplorerConfig(data_dir=str(data), predictors=["freq"], cache_dir=tmp_path / "cache"))
    try:
        assert suggest(explorer, "ΚΥ") == ["Κύπρου"] and suggest(explorer, "ığ") == ["Iğdır"]
        assert suggest(explorer, "is") == ["Island", "İstanbul"]
    finally:
        explorer.close()
