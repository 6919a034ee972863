"""A user's own data in the layouts the loaders read, made as people make files: a byte-order mark, a [MASK]
written in a template, a folder where a file belongs, a data file its relation list does not name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_support import run_kbc, run_kbc_captured
from lm_fixtures import tiny_models  # noqa: F401  (pytest finds the fixture by name)

from eval.bear import load_bear
from eval.errors import ConfigError, DataError
from eval.lama import load_trex
from eval.lmkbc import load_templates
from eval.prompts import load_prompts
from lm.vocab import read_vocab_file

BOM = "\ufeff"


def _lama(root: Path, template: str = "[X] likes [Y] .") -> Path:
    """A LAMA-layout folder of one new relation, X1, with three facts and no Wikidata ids."""
    (root / "TREx").mkdir(parents=True)
    (root / "relations.jsonl").write_text(json.dumps({"relation": "X1", "template": template}) + "\n")
    rows = [{"sub_uri": None, "sub_label": s, "obj_uri": None, "obj_label": o, "predicate_id": "X1"}
            for s, o in (("Alice", "tea"), ("Bob", "tea"), ("Carol", "coffee"))]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_a_vocabulary_file_with_a_byte_order_mark_keeps_its_first_word(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text(f"{BOM}tea\r\ncoffee\r\n\r\n", encoding="utf-8")
    assert read_vocab_file(path) == ["tea", "coffee"]


def test_bear_metadata_with_a_byte_order_mark(tmp_path):
    folder = tmp_path / "BEAR"
    folder.mkdir()
    meta = {"X1": {"templates": ["[X] likes [Y]."], "answer_space_labels": ["tea", "coffee"],
                   "answer_space_ids": ["Q1", "Q2"]}}
    (folder / "metadata_relations.json").write_text(BOM + json.dumps(meta), encoding="utf-8")
    (folder / "X1.jsonl").write_text(json.dumps({"sub_label": "Alice", "obj_id": "Q2", "obj_label": "coffee",
                                                 "answer_idx": 1}) + "\n")
    corpus = load_bear("bear", tmp_path)
    assert [(f.subject.label, f.object.label) for f in corpus.facts] == [("Alice", "coffee")]


def test_bear_labels_in_two_unicode_spellings_are_one_answer(tmp_path):
    """Without an answer space, "café" in NFC and in NFD were two answers of one look: Freq ranked them apart."""
    folder = tmp_path / "BEAR"
    folder.mkdir()
    (folder / "metadata_relations.json").write_text(json.dumps({"X1": {"templates": ["[X] likes [Y]."]}}))
    rows = [("Alice", "cafe\u0301"), ("Bob", "caf\u00e9"), ("Jose\u0301", "tea")]
    (folder / "X1.jsonl").write_text("".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n" for s, o in rows))
    corpus = load_bear("bear", tmp_path)
    assert [e.label for e in corpus.relations["X1"].answer_space] == ["caf\u00e9", "tea"]
    assert [(f.subject.label, f.answer_idx) for f in corpus.facts] == [("Alice", 0), ("Bob", 0), ("Jos\u00e9", 1)]


def test_a_bear_row_whose_label_differs_by_a_directional_mark_is_read(tmp_path):
    """A row's object typed with a trailing RLM, as Persian editors do, was refused: "answer_idx 1 names 'دمشق' but
    the row's object is 'دمشق\u200f'", though its id and what a reader sees are the answer's."""
    folder = tmp_path / "BEAR"
    folder.mkdir()
    meta = {"X1": {"templates": ["پایتخت [X] [Y] است."], "answer_space_labels": ["تهران", "دمشق"],
                   "answer_space_ids": ["Q1", "Q2"]}}
    (folder / "metadata_relations.json").write_text(json.dumps(meta), encoding="utf-8")
    rows = [("ایران", "تهران", "Q1", 0), ("سوریه", "دمشق\u200f", "Q2", 1)]
    (folder / "X1.jsonl").write_text("".join(json.dumps({"sub_label": s, "obj_label": o, "obj_id": i,
                                                         "answer_idx": x}) + "\n" for s, o, i, x in rows))
    assert [(f.object.label, f.answer_idx) for f in load_bear("bear", tmp_path).facts] == [("تهران", 0), ("دمشق", 1)]
    (folder / "X1.jsonl").write_text(json.dumps({"sub_label": "سوریه", "obj_label": "تهران", "obj_id": "Q2",
                                                 "answer_idx": 1}) + "\n")
    with pytest.raises(DataError, match="answer_idx 1 names"):
        load_bear("bear", tmp_path)


def test_lmkbc_templates_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "masked_prompts.csv"
    path.write_text(f"{BOM}Relation,PromptTemplate\r\npersonHasCityOfDeath,{{subject_entity}} died in "
                    "{mask_token}.\r\n", encoding="utf-8")
    assert load_templates(path)["personHasCityOfDeath"].template == "[X] died in [Y]."


NE_NFD, NE_NFC = "[X] est ne\u0301 a\u0300 [Y] .", "[X] est n\u00e9 \u00e0 [Y] ."


def test_templates_written_in_nfd_are_asked_in_nfc(tmp_path):
    """A template saved on macOS (e and a combining accent) reached the tokenizer so: a BERT read "à" as [UNK] and
    "né" as "ne" and an accent, and scored other sentences than the same template typed elsewhere."""
    root = _lama(tmp_path / "lama", NE_NFD)
    assert load_trex(root).relations["X1"].template == NE_NFC
    prompts = tmp_path / "mine.jsonl"
    prompts.write_text(json.dumps({"relation": "X1", "template": NE_NFD, "id": "ne"}) + "\n")
    assert [p.template for p in load_prompts(str(prompts), root, ["X1"])["X1"]] == [NE_NFC]
    (tmp_path / "BEAR").mkdir()
    (tmp_path / "BEAR" / "metadata_relations.json").write_text(json.dumps({"X1": {"templates": [NE_NFD]}}))
    (tmp_path / "BEAR" / "X1.jsonl").write_text(json.dumps({"sub_label": "Al", "obj_label": "Paris"}) + "\n")
    assert load_bear("bear", tmp_path).relations["X1"].templates == (NE_NFC,)
    csv = tmp_path / "masked_prompts.csv"
    csv.write_text("Relation,PromptTemplate\npersonHasCityOfDeath,{subject_entity} est mort a\u0300 {mask_token}.\n")
    assert load_templates(csv)["personHasCityOfDeath"].template == "[X] est mort \u00e0 [Y]."


@pytest.mark.parametrize("template", ["[X] likes [MASK] .", "[X] likes [MASK] and [Y] ."])
def test_a_template_holding_a_mask_is_refused_with_its_line(tmp_path, template):
    root = _lama(tmp_path, template)
    with pytest.raises(DataError) as err:
        load_trex(root)
    assert str(err.value).startswith(f"{root / 'relations.jsonl'}:1: template {template!r} holds [MASK]; write [Y]")


def test_a_prompt_file_template_holding_a_mask_is_refused(tmp_path):
    root = _lama(tmp_path / "lama")
    prompts = tmp_path / "mine.jsonl"
    prompts.write_text(json.dumps({"relation": "X1", "template": "[X] enjoys [MASK] [Y] ."}) + "\n")
    with pytest.raises(DataError, match=rf"^{prompts}:1: template .* holds \[MASK\]"):
        load_prompts(str(prompts), root, ["X1"])


def test_a_prompt_file_that_is_missing_is_named_as_a_file(tmp_path):
    root = _lama(tmp_path / "lama")
    with pytest.raises(ConfigError) as err:
        load_prompts(str(tmp_path / "mine.jsonl"), root, ["X1"])
    assert str(err.value) == f"prompt file {tmp_path / 'mine.jsonl'} not found (--prompts takes a set's name or a " \
                             "JSONL file)"


def test_a_folder_in_place_of_a_relation_file_is_refused(tmp_path):
    root = _lama(tmp_path)
    (root / "TREx" / "X1.jsonl").unlink()
    (root / "TREx" / "X1.jsonl").mkdir()
    with pytest.raises(DataError) as err:
        load_trex(root)
    assert str(err.value) == (f"{root / 'TREx' / 'X1.jsonl'}: the data file of relation X1 is a directory; put the "
                              "file there or remove it")


def test_a_folder_in_place_of_the_relation_list_is_refused(tmp_path):
    root = _lama(tmp_path)
    (root / "relations.jsonl").unlink()
    (root / "relations.jsonl").mkdir()
    with pytest.raises(DataError, match=r"relations.jsonl: the relation list is a directory"):
        load_trex(root)


def test_a_data_file_the_relation_list_lacks_is_named(tmp_path):
    root = _lama(tmp_path)
    (root / "TREx" / "X2.jsonl").write_text((root / "TREx" / "X1.jsonl").read_text().replace("X1", "X2"))
    corpus = load_trex(root)
    assert list(corpus.relations) == ["X1"] and len(corpus.facts) == 3
    assert "1 data file is not asked, its relation not in relations.jsonl (add a line with the relation id and its " \
           "template): TREx/X2.jsonl" in corpus.summary()
    assert "not asked" not in load_trex(root, ["X1"]).summary()  # a run on chosen relations asks no others


@pytest.mark.parametrize(("second", "message"), [
    ("a_b", "relations 'a:b' .* and 'a_b' would share the prediction file a_b.jsonl"),
    ("a::b", "relations 'a:b' .* and 'a::b' would share the prediction file a_b.jsonl"),
])
def test_relation_ids_sharing_a_prediction_file_are_refused(tmp_path, second, message):
    root = _lama(tmp_path)
    lines = [{"relation": "X1", "template": "[X] likes [Y] ."}, {"relation": "a:b", "template": "[X] a [Y] ."},
             {"relation": second, "template": "[X] b [Y] ."}]
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(DataError, match=message):
        load_trex(root)


@pytest.mark.parametrize("rel_id", ["a b", "a\tb", " a"])
def test_a_relation_id_that_relations_could_not_name_is_refused(tmp_path, rel_id):
    root = _lama(tmp_path)
    (root / "relations.jsonl").write_text(json.dumps({"relation": rel_id, "template": "[X] a [Y] ."}) + "\n")
    with pytest.raises(DataError, match=r"relations.jsonl:1: relation id .* holds a space"):
        load_trex(root)


@pytest.mark.parametrize("rel_id", ["../X1", "a/b", "a\\b", "..", "a\x1b]0;t\x07"])
def test_a_relation_id_that_cannot_name_its_data_file_is_refused(tmp_path, rel_id):
    """"../X1" read DIR/X1.jsonl, outside TREx/, and "a/b" a file in a folder of TREx/ that no listing names."""
    root = _lama(tmp_path)
    (root / "X1.jsonl").write_text((root / "TREx" / "X1.jsonl").read_text())
    (root / "relations.jsonl").write_text(json.dumps({"relation": rel_id, "template": "[X] a [Y] ."}) + "\n")
    with pytest.raises(DataError, match=r"relations.jsonl:1: relation id .* names its data file"):
        load_trex(root)


def test_a_relation_id_too_long_to_name_its_run_files_is_refused_before_the_run(tmp_path, capsys):
    """An id of 248 characters named its data file, but not its digests file (255 bytes at most): the run stopped
    after asking it, with "File name too long"."""
    rel_id = "a" * 248
    root = _lama(tmp_path / "lama")
    (root / "TREx" / "X1.jsonl").rename(root / "TREx" / f"{rel_id}.jsonl")
    (root / "relations.jsonl").write_text(json.dumps({"relation": rel_id, "template": "[X] a [Y] ."}) + "\n")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "relations.jsonl:1: relation id 'aaaa" in err and "is 248 characters long" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("field", "text"), [("sub_label", "Al\x1b[8mice"), ("obj_label", "tea\x00"),
                                             ("obj_label", "co\rffee"), ("sub_label", "Bo\tb"),
                                             ("obj_label", "\u202eaet"), ("sub_label", "Al\u2028ice")])
def test_a_label_holding_a_control_character_is_refused_with_its_line(tmp_path, capsys, field, text):
    """"tea\\x1b[8m" printed as "tea" beside the other "tea" (two answers of one look) and sent its escape sequence
    to the terminal of whoever read `kbc show`; "co\\rffee" printed as "ffee"."""
    root = _lama(tmp_path / "lama")
    rows = [json.loads(line) for line in (root / "TREx" / "X1.jsonl").read_text().splitlines()]
    rows[1][field] = text
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    bad = next(c for c in text if ord(c) < 32 or c in "\u202e\u2028")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {root / 'TREx' / 'X1.jsonl'}:2: field {field!r} holds the control character "
                          f"U+{ord(bad):04X} ")


def test_an_own_vocabulary_file_made_on_windows(tiny_models, tmp_path, capsys):  # noqa: F811
    """A byte-order mark once hid the file's first word, so every fact of that object was dropped as outside the
    vocabulary and the relation scored over the others; words the model cannot rank are named."""
    root = _lama(tmp_path / "lama")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(f"{BOM}tea\r\ncoffee\r\ngreen tea\r\n", encoding="utf-8")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", f"bert={tiny_models('bert-cased')}",
                            "--set", f"bert.vocab_file={vocab}", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    assert f"1 of the 3 words of {vocab} are no single token of the model and are not ranked: 'green tea'" in err
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions" / "trex" / "bert" / "X1.jsonl").open()]
    assert [r.get("dropped") for r in records] == [None, None, None]
    assert all(r["rank_raw"] in (1, 2) for r in records)  # two candidates: each gold ranks first or second


def test_data_stats_of_a_folder_of_own_facts_names_the_corpus_flag(tmp_path, capsys):
    root = _lama(tmp_path / "lama")
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(root)], capsys)
    assert code == 2 and "trex/X1 (TREx/X1.jsonl): read 3, kept 3, dropped 0" in out
    assert err.strip().splitlines()[-1] == (f"error: {root / 'Google_RE' / 'place_of_birth_test.jsonl'}: file not "
                                            "found; --corpus was not given, so trex, google_re, squad are read; name "
                                            "the ones this folder holds (--corpus trex)")
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(root), "--corpus", "trex"], capsys)
    assert code == 0, err


def test_labels_lose_the_spaces_around_them(tmp_path):
    """"tea " and "tea" of one id were two answers: Freq counted them apart and the KB, naming Q100 "tea", missed
    the fact written "tea "."""
    root = _lama(tmp_path)
    rows = [{"sub_label": " Dan", "obj_label": "tea ", "sub_uri": "Q4", "obj_uri": "Q100"},
            {"sub_label": "Eve", "obj_label": "tea", "sub_uri": "Q5", "obj_uri": "Q100"}]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    facts = load_trex(root).facts
    assert [(f.subject.label, f.object.label) for f in facts] == [("Dan", "tea"), ("Eve", "tea")]


def test_one_label_in_two_unicode_spellings_is_one_answer(tmp_path, capsys):
    """"café" typed as one code point (NFC) and as "e" with a combining accent (NFD), or with a zero-width space
    copied from a web page, looks the same to a reader: Freq counted three objects and answered "tea" (P@1 40), and a
    KB or LM answering one spelling missed gold written in the other."""
    root = _lama(tmp_path / "lama")
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    rows = [{"sub_label": s, "obj_label": o} for s, o in
            (("S1", nfd), ("S2", "tea"), ("S3", nfc), ("S4", "tea"), ("S5", "\u200b" + nfc + "\ufeff"))]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert {f.object.label for f in load_trex(root).facts} == {nfc, "tea"}
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    wanted = ("X1", "p@1", "raw", "own")
    p1 = [r["value"] for r in rows if (r["group"], r["metric"], r["setting"], r["scope"]) == wanted]
    assert p1 == [60.0]  # café on 3 of the 5 facts


def test_a_label_typed_with_a_directional_mark_is_one_answer(tmp_path, capsys):
    """Persian and Arabic keyboards type RLM / ALM beside a word: "دمشق" with a trailing RLM and without look the
    same, yet Freq counted two objects (P@1 25 instead of 50) and a KB or LM answer missed gold in the other."""
    root = _lama(tmp_path / "lama")
    rows = [{"sub_label": s, "obj_label": o} for s, o in
            (("سوریه", "دمشق\u200f"), ("ایران", "تهران"), ("\u200fشام", "\u061cدمشق"), ("ری", "تهران"))]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [(f.subject.label, f.object.label) for f in load_trex(root).facts][2] == ("شام", "دمشق")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    wanted = ("X1", "p@1", "raw", "own")
    assert [r["value"] for r in rows if (r["group"], r["metric"], r["setting"], r["scope"]) == wanted] == [50.0]


def test_a_data_file_with_classic_mac_line_ends_is_named_with_the_fix(tmp_path):
    """Lines ending in a carriage return alone are one line to a reader: the error said "Extra data at column 41"."""
    root = _lama(tmp_path)
    path = root / "TREx" / "X1.jsonl"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    with pytest.raises(DataError, match=r"X1.jsonl:1: malformed JSON: lines end in a carriage return alone; save the "
                                        r"file with LF \(or CRLF\) line ends"):
        load_trex(root)


def test_kbc_show_finds_a_subject_typed_with_a_combining_accent(tmp_path, capsys):
    """`--subject` pasted from macOS (NFD) found no fact and suggested the subject as written: "did you mean 'José'"."""
    root = _lama(tmp_path / "lama")
    (root / "TREx" / "X1.jsonl").write_text(json.dumps({"sub_label": "Jos\u00e9", "obj_label": "tea"}) + "\n")
    run = str(tmp_path / "run")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", run, "--quiet"], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["show", run, "--subject", "Jose\u0301", "--relation", "X1"], capsys)
    assert code == 0, err
    assert out.startswith("trex / X1 / uid X1:1")


@pytest.mark.parametrize("where", ["TREx/X1.jsonl", "relations.jsonl"])
def test_a_lone_surrogate_escape_is_refused_with_its_line(tmp_path, capsys, where):
    """`"\\ud800"` parses to a string no UTF-8 file can hold: the run ended in a UnicodeEncodeError traceback."""
    root = _lama(tmp_path / "lama")
    path = root / where
    lines = path.read_text().splitlines()
    field = '"template": "' if where == "relations.jsonl" else '"sub_label": "'
    lines[0] = lines[0].replace(field, field + "\\ud800")
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"error: {path}:1: '\\ud800' escapes half of a UTF-16 surrogate pair, which is no character; write the "
        "character itself (or both halves of its pair)"]


def test_an_emoji_written_as_an_escaped_pair_is_read(tmp_path):
    root = _lama(tmp_path)
    (root / "TREx" / "X1.jsonl").write_text('{"sub_label": "Al", "obj_label": "\\ud83c\\udf75"}\n')
    assert [f.object.label for f in load_trex(root).facts] == ["\U0001F375"]


def test_a_vocabulary_file_in_nfd_gives_the_words_in_nfc(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("cafe\u0301\ntea\u200b\n", encoding="utf-8")
    assert read_vocab_file(path) == ["caf\u00e9", "tea"]


def test_an_object_id_written_with_two_labels_is_named(tmp_path):
    root = _lama(tmp_path)
    rows = [{"sub_label": "Dan", "obj_label": "Tea", "sub_uri": "Q4", "obj_uri": "Q100"},
            {"sub_label": "Eve", "obj_label": "tea", "sub_uri": "Q5", "obj_uri": "Q100"},
            {"sub_label": "Fay", "obj_label": "tea", "sub_uri": "Q6", "obj_uri": None}]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ("trex/X1 (TREx/X1.jsonl): read 3, kept 3, dropped 0; 1 object id is written with several labels "
            "(Q100 'Tea' / 'tea'): answers match by label, so write one label per id") in load_trex(root).summary()


def test_a_data_file_added_unlisted_is_named_after_a_snapshot_was_made(tmp_path):
    """A snapshot of the corpus is current only while the files its load notes name are unchanged too."""
    from eval.corpora import load_corpus

    root = _lama(tmp_path / "lama")
    cache = tmp_path / "cache"
    assert "not asked" not in load_corpus("trex", root, cache_dir=cache).summary()
    (root / "TREx" / "X2.jsonl").write_text((root / "TREx" / "X1.jsonl").read_text().replace("X1", "X2"))
    assert "not asked" in load_corpus("trex", root, cache_dir=cache).summary()
    (root / "TREx" / "X2.jsonl").unlink()
    assert "not asked" not in load_corpus("trex", root, cache_dir=cache).summary()


def test_two_facts_given_one_uuid_stay_two_facts_under_a_prompt_set(tmp_path, capsys):
    """A uuid given twice: the second fact's uid is `<uuid>#2`, so consistency and group accuracy, which group a
    fact's prompts by its uid, count two facts, not one of them twice."""
    root = _lama(tmp_path / "data")
    rows = [{"sub_label": s, "obj_label": o, "uuid": "same"} for s, o in (("Alice", "tea"), ("Bob", "coffee"))]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [f.uid for f in load_trex(root).facts] == ["same", "same#2"]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"relation": "X1", "template": t, "id": i}) + "\n"
                               for t, i in (("[X] likes [Y] .", "likes"), ("[X] enjoys [Y] .", "enjoys"))))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--prompts", str(prompts),
                            "--data-dir", str(root), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    group = [r for r in rows
             if r["metric"] == "group_accuracy" and r["group"] == "X1" and r.get("scope", "own") == "own"]
    assert [(r["value"], r["n_facts"]) for r in group] == [(50.0, 2)]


def test_a_uhn_build_writes_the_facts_its_report_keeps_where_labels_have_spaces(tmp_path):
    """The loader drops the spaces around a label; the filtered files drop the rows of the facts it deleted all
    the same (`tea ` is in `Alice tea` as `tea` is)."""
    from eval.uhn import build_uhn

    root = _lama(tmp_path / "data")
    rows = [{"sub_label": "Alice tea", "obj_label": "tea "}, {"sub_label": "Bob", "obj_label": "coffee"}]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    deletions = build_uhn(root, tmp_path / "uhn", ("string",))
    assert deletions["X1"]["deleted_string"] == 1
    assert [f.subject.label for f in load_trex(tmp_path / "uhn").facts] == ["Bob"]


def test_kbc_show_suggests_the_subject_of_greek_or_turkish_capitals(tmp_path, capsys):
    """`--subject ΚΥΠΡΟΥ` (Κύπρου as Greek capitals write it, without accents) got no "did you mean"."""
    root = _lama(tmp_path / "lama")
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps({"sub_label": s, "obj_label": "tea"}) + "\n"
                                                    for s in ("Κύπρου", "Iğdır")), encoding="utf-8")
    run = str(tmp_path / "run")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(root),
                            "--out", run, "--quiet"], capsys)
    assert code == 0, err
    for typed, label in (("ΚΥΠΡΟΥ", "Κύπρου"), ("IĞDIR", "Iğdır")):
        code, _, err = run_kbc(["show", run, "--subject", typed, "--relation", "X1"], capsys)
        assert code == 2 and err.rstrip().endswith(f"did you mean {label!r}?"), err


def test_kbc_show_marks_the_gold_an_uncased_model_answers_in_lower_case(tmp_path, capsys, tiny_models):  # noqa: F811
    """An uncased BERT answers "paris" for gold "Paris": its rank said 1 while no answer was marked gold."""
    root = _lama(tmp_path / "lama")
    rows = [("France", "Paris"), ("England", "London"), ("Germany", "Berlin")]
    (root / "TREx" / "X1.jsonl").write_text("".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n"
                                                    for s, o in rows))
    run = str(tmp_path / "run")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", f"bu={tiny_models('bert-uncased')}",
                            "--set", "bu.candidates=relation", "--data-dir", str(root), "--out", run, "--quiet"],
                           capsys)
    assert code == 0, err
    code, out, err = run_kbc(["show", run, "--uid", "X1:1"], capsys)
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines() if line.endswith("<- gold")] == ["paris"]
    code, out, err = run_kbc(["show", run, "--uid", "X1:1", "--json"], capsys)
    assert json.loads(out)["facts"][0]["predictors"]["bu"]["gold_as_answered"] == "paris"


def test_the_explorer_fact_page_marks_the_gold_of_an_uncased_model(tmp_path, tiny_models, monkeypatch):  # noqa: F811
    """The run's fact page compared an uncased model's answers ("paris") with the gold as written ("Paris")."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    root = _lama(tmp_path / "lama")
    (root / "TREx" / "X1.jsonl").write_text(json.dumps({"sub_label": "France", "obj_label": "Paris"}) + "\n"
                                            + json.dumps({"sub_label": "England", "obj_label": "London"}) + "\n")
    run = tmp_path / "run"
    code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--predictors",
                                     f"bu={tiny_models('bert-uncased')}", "--set", "bu.candidates=relation",
                                     "--data-dir", str(root), "--out", str(run), "--quiet"])
    assert code == 0, err
    explorer = Explorer.start(ExplorerConfig(data_dir=str(root), predictors=["freq"], cache_dir=tmp_path / "cache"))
    try:
        with TestClient(create_app(explorer, Runs([run]))) as client:
            page = client.get("/runs/run/facts/X1:1").text
    finally:
        explorer.close()
    assert re.findall(r'<li class="gold"><span class="label">([^<]*)', page) == ["paris"]
