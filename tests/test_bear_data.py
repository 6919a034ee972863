"""BEAR / BEAR-big loading: exact counts on the staged data, and one clear DataError per kind of bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.bear import load_bear, resolve_bear_dir
from eval.errors import DataError

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"
needs_bear = pytest.mark.skipif(not (BEAR / "BEAR" / "metadata_relations.json").is_file(),
                                reason=f"BEAR data not staged at {BEAR}")


@needs_bear
def test_bear_counts_and_gold():
    corpus = load_bear("bear", BEAR)
    assert (len(corpus.relations), len(corpus.facts)) == (60, 7731)
    p6 = corpus.relations["P6"]
    assert len(p6.answer_space) == 60 and len(p6.templates) == 3
    assert p6.template == "The head of government of [X] is [Y]."
    assert p6.domains == ("Political", "Biographical", "Historical")
    first = corpus.facts[0]
    assert (first.uid, first.subject.label, first.object.label, first.object.id, first.answer_idx) == (
        "P6:0", "Abu Dhabi", "Khalifa bin Zayed Al Nahyan", "Q1059948", 0)
    for fact in corpus.facts:
        assert corpus.relations[fact.relation].answer_space[fact.answer_idx] == fact.object


@needs_bear
def test_bear_big_counts_and_derived_answer_space():
    corpus = load_bear("bear-big", BEAR)
    assert (len(corpus.relations), len(corpus.facts)) == (78, 40916)
    assert "P414" not in corpus.relations  # named in the metadata, no file: lm-pub-quiz skips it too
    p6 = corpus.relations["P6"]
    # lm-pub-quiz's answer space when the metadata has none: objects by id in order of first appearance
    assert (p6.answer_space[0].label, p6.answer_space[0].id) == ("Patrice Talon", "Q16669148")
    assert corpus.facts[0].answer_idx == 0


@needs_bear
def test_template_choice_and_lama_sibling(monkeypatch):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    monkeypatch.setenv("KBC_DATA", str(BEAR.parent / "lama"))
    assert resolve_bear_dir("bear").resolve() == (BEAR / "BEAR").resolve()  # ../shared may be a link
    corpus = load_bear("bear", None, ["P6"], template=1)
    assert corpus.relations["P6"].template == "[Y] served as the head of government for [X]."
    assert len(corpus.facts) == 60
    with pytest.raises(DataError, match="has 3 templates, no template 3"):
        load_bear("bear", BEAR, ["P6"], template=3)


def _copy(tmp_path: Path, relation: str = "P6") -> Path:
    root = tmp_path / "bear" / "BEAR"
    root.mkdir(parents=True)
    meta = json.loads((BEAR / "BEAR" / "metadata_relations.json").read_text())
    (root / "metadata_relations.json").write_text(json.dumps({relation: meta[relation]}))
    shutil.copy(BEAR / "BEAR" / f"{relation}.jsonl", root / f"{relation}.jsonl")
    return root


def _edit_meta(root: Path, **changes) -> None:
    path = root / "metadata_relations.json"
    meta = json.loads(path.read_text())
    meta["P6"].update(changes)
    path.write_text(json.dumps(meta))


@needs_bear
def test_answer_idx_out_of_range(tmp_path):
    root = _copy(tmp_path)
    lines = (root / "P6.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    row["answer_idx"] = 60
    lines[2] = json.dumps(row)
    (root / "P6.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_bear("bear", tmp_path / "bear")
    assert str(err.value) == (f"{root / 'P6.jsonl'}:3: answer_idx 60 is out of range (the answer space has 60 "
                              "answers, 0 to 59)")


@needs_bear
def test_answer_idx_naming_another_object(tmp_path):
    root = _copy(tmp_path)
    lines = (root / "P6.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["answer_idx"] = 1
    lines[0] = json.dumps(row)
    (root / "P6.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"P6.jsonl:1: answer_idx 1 names 'Kyriakos Mitsotakis' \(Q552751\) but "):
        load_bear("bear", tmp_path / "bear")


@needs_bear
def test_template_without_slot(tmp_path):
    root = _copy(tmp_path)
    _edit_meta(root, templates=["The head of government of [X] is [Y].", "[X] is governed.", "[X] by [Y]."])
    with pytest.raises(DataError) as err:
        load_bear("bear", tmp_path / "bear")
    assert str(err.value) == (f"{root / 'metadata_relations.json'}: relation P6: template 1: template "
                              "'[X] is governed.' lacks [Y]")


@needs_bear
def test_empty_answer_space(tmp_path):
    root = _copy(tmp_path)
    _edit_meta(root, answer_space_labels=[], answer_space_ids=[])
    with pytest.raises(DataError) as err:
        load_bear("bear", tmp_path / "bear")
    assert str(err.value) == (f"{root / 'metadata_relations.json'}: relation P6: the answer space is empty "
                              "(answer_space_labels)")


@needs_bear
def test_duplicate_answer_labels(tmp_path):
    root = _copy(tmp_path)
    meta = json.loads((root / "metadata_relations.json").read_text())["P6"]
    labels = list(meta["answer_space_labels"])
    labels[5] = labels[2]
    _edit_meta(root, answer_space_labels=labels)
    with pytest.raises(DataError) as err:
        load_bear("bear", tmp_path / "bear")
    assert str(err.value) == (f"{root / 'metadata_relations.json'}: relation P6: answer label 'Josip Broz Tito' "
                              "appears twice in the answer space (positions 2 and 5)")


def test_missing_data_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    with pytest.raises(DataError, match="point --data-dir or KBC_BEAR at the folder holding BEAR-big/"):
        load_bear("bear-big", tmp_path)


@needs_bear
def test_a_relation_of_the_metadata_without_a_file_is_named(tmp_path):
    """A copy that lost a relation file (`kbc data list` says `partial`) is asked without it, as lm-pub-quiz reads
    BEAR-big's P414, but the loader names the relation rather than printing one relation fewer without a word;
    a run on other relations has no such note."""
    root = _copy(tmp_path)
    meta = json.loads((BEAR / "BEAR" / "metadata_relations.json").read_text())
    (root / "metadata_relations.json").write_text(json.dumps({"P6": meta["P6"], "P19": meta["P19"]}))
    corpus = load_bear("bear", root.parent)
    assert list(corpus.relations) == ["P6"]
    assert corpus.summary().splitlines() == [
        "bear: 1 relation, read 60, kept 60, dropped 0",
        "  bear metadata_relations.json: 1 relation has no data file, so it is not asked: P19"]
    corpus.keep_relations(["P6"])
    assert "no data file" not in corpus.summary()
    assert "no data file" not in load_bear("bear", root.parent, ["P6"]).summary()
    assert "P414" in load_bear("bear-big", BEAR).summary()
