"""LAMA loaders on the shared data and on malformed inputs."""

import json

import pytest

from eval.errors import DataError
from eval.lama import load_conceptnet, load_google_re, load_squad, load_trex
from eval.relations import load_relations


def test_trex_counts(trex):
    assert len(trex.facts) == 34039
    assert len(trex.relations) == 41
    counts = {r: len(f) for r, f in trex.by_relation().items()}
    assert counts["P19"] == 944 and counts["P1376"] == 234 and counts["P17"] == 930
    types = [rel.type for rel in trex.relations.values()]
    assert (types.count("1-1"), types.count("N-1"), types.count("N-M")) == (2, 23, 16)
    # same labels, different ids: distinct facts are kept
    bmw = [f for f in trex.facts if f.subject.label == "BMW 3 Series"]
    assert sorted(f.subject.id for f in bmw) == ["Q1146966", "Q466066", "Q608824", "Q838837"]
    assert "5 relations have no data file" in trex.summary()


def test_trex_evidence_restores_the_object(trex):
    fact = next(f for f in trex.facts if f.relation == "P19" and f.subject.label == "Allan Peiper")
    assert fact.subject.id == "Q1886736" and fact.object.label == "Alexandra"
    assert fact.evidences[0].text.startswith("Allan Peiper (born 26 April 1960 in Alexandra, Victoria, Australia)")


def test_google_re_counts_and_the_765(google_re):
    counts = {r: len(f) for r, f in google_re.by_relation().items()}
    assert counts == {"place_of_birth": 2937, "date_of_birth": 1825, "place_of_death": 765}
    flavel = [f for f in google_re.facts if f.subject.label == "John Flavel"]
    assert len(flavel) == 1 and flavel[0].subject.id == "Q1765615"
    report = {r.source: r for r in google_re.reports}["google_re/place_of_death"]
    assert (report.read, report.kept, report.n_dropped) == (766, 765, 1)
    assert google_re.relations["place_of_birth"].template == "[X] was born in [Y] ."


def test_squad(lama_dir):
    squad = load_squad(lama_dir)
    assert len(squad.facts) == 305
    assert all("[Y]" in f.cloze for f in squad.facts)


def _lama_copy(tmp_path, relations_rows, trex_rows=None, rel="P19"):
    root = tmp_path / "lama"
    (root / "TREx").mkdir(parents=True)
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in relations_rows))
    if trex_rows is not None:
        (root / "TREx" / f"{rel}.jsonl").write_text(trex_rows)
    return root


REL = {"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth", "type": "N-1"}
ROW = {"sub_label": "A", "obj_label": "B", "sub_uri": "Q1", "obj_uri": "Q2", "predicate_id": "P19"}


def test_malformed_jsonl_names_file_and_line(tmp_path):
    root = _lama_copy(tmp_path, [REL], json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(DataError, match=r"P19\.jsonl:2: malformed JSON"):
        load_trex(root)


def test_template_without_slot(tmp_path):
    root = _lama_copy(tmp_path, [{**REL, "template": "[X] was born somewhere ."}], json.dumps(ROW) + "\n")
    with pytest.raises(DataError, match=r"relations\.jsonl:1: template .* lacks \[Y\]"):
        load_trex(root)


def test_unknown_relation_id(tmp_path):
    root = _lama_copy(tmp_path, [REL], json.dumps(ROW) + "\n")
    with pytest.raises(DataError, match="unknown relation id.*P190.*did you mean P19"):
        load_trex(root, ["P190"])


def test_empty_file(tmp_path):
    root = _lama_copy(tmp_path, [REL], "")
    with pytest.raises(DataError, match=r"P19\.jsonl: file is empty"):
        load_trex(root)


def test_missing_data_dir(tmp_path):
    with pytest.raises(DataError, match="does not exist; run `kbc data download lama` "):
        load_trex(tmp_path / "nowhere")


def test_identical_ids_are_duplicates(tmp_path):
    other = {**ROW, "sub_uri": "Q9"}  # same labels, different id: a distinct fact
    rows = "".join(json.dumps(r) + "\n" for r in (ROW, ROW, other))
    corpus = load_trex(_lama_copy(tmp_path, [REL], rows))
    assert len(corpus.facts) == 2
    assert corpus.reports[0].dropped == {"duplicate rows (same ids)": 1}


def test_rows_without_ids_repeating_labels_are_named_as_such(tmp_path):
    """A repeated row without ids was counted as "duplicate rows (same ids)": it holds no id to be the same."""
    bare = {k: v for k, v in ROW.items() if k not in ("sub_uri", "obj_uri")}
    rows = "".join(json.dumps(r) + "\n" for r in (ROW, ROW, bare))
    corpus = load_trex(_lama_copy(tmp_path, [REL], rows))
    assert corpus.reports[0].dropped == {"duplicate rows (same ids)": 1, "duplicate rows (same labels)": 1}


def test_relations_type_checked(tmp_path):
    path = tmp_path / "relations.jsonl"
    path.write_text(json.dumps({**REL, "type": "1-N-1"}) + "\n")
    with pytest.raises(DataError, match="relations.jsonl:1: unknown relation type"):
        load_relations(path)


def test_conceptnet_format(shared_data):
    path = shared_data / "negated_misprimed_lama" / "ConceptNet" / "random" / "ConceptNet.jsonl"
    corpus = load_conceptnet(path=path)
    assert len(corpus.facts) == 146
    assert corpus.facts[0].cloze == "Contemplating requires [Y]."
    assert corpus.facts[0].object.label == "concentration"


def test_conceptnet_missing_says_how(tmp_path):
    root = _lama_copy(tmp_path, [REL], json.dumps(ROW) + "\n")
    with pytest.raises(DataError, match="ConceptNet file not found.*kbc data download"):
        load_conceptnet(root)


def test_google_re_majority_no_dropped(tmp_path):
    root = _lama_copy(tmp_path, [REL], json.dumps(ROW) + "\n")
    (root / "Google_RE").mkdir()
    base = {"sub_label": "A", "obj_label": "B", "sub_w": "Q1", "obj_w": "Q2"}
    rows = [
        {**base, "judgments": [{"judgment": "no"}, {"judgment": "no"}, {"judgment": "yes"}]},
        {**base, "sub_label": "C", "sub_w": "Q3", "judgments": [{"judgment": "yes"}, {"judgment": "no"}]},
    ]
    for name in ("place_of_birth", "date_of_birth", "place_of_death"):
        (root / "Google_RE" / f"{name}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = load_google_re(root, ["place_of_birth"])
    assert [f.subject.label for f in corpus.facts] == ["C"]
    assert corpus.reports[0].dropped == {"judged wrong by most raters": 1}


def test_trex_evidence_fields_empty_missing_or_of_another_type(tmp_path):
    """Empty strings read as absent; a field of another type is one error naming the line and the evidence, unless
    the evidence has no masked sentence (it is skipped unread)."""
    from eval.types import Evidence

    evidences = [{"masked_sentence": "A went to [MASK] .", "obj_surface": "", "sub_surface": ""},
                 {"masked_sentence": "", "obj_surface": 5},
                 {"obj_surface": "Bee", "sub_surface": "Ay"},
                 {"masked_sentence": "[MASK] and [MASK] .", "obj_surface": "Bee", "sub_surface": "Ay"},
                 {"masked_sentence": "B of [MASK] .", "obj_surface": None}]
    corpus = load_trex(_lama_copy(tmp_path, [REL], json.dumps({**ROW, "evidences": evidences}) + "\n"))
    assert corpus.facts[0].evidences == (
        Evidence("A went to B .", "A went to [MASK] ."), Evidence("Bee and Bee .", "[MASK] and [MASK] .", "Ay", "Bee"),
        Evidence("B of B .", "B of [MASK] ."))
    for bad, message in (({"masked_sentence": 7}, "evidence 2: field 'masked_sentence' must be a string, got a number"),
                         ({"masked_sentence": "[MASK]", "obj_surface": ["x"], "sub_surface": 3},
                          "evidence 2: field 'obj_surface' must be a string, got an array"),
                         ({"masked_sentence": "[MASK]", "obj_surface": "x", "sub_surface": True},
                          "evidence 2: field 'sub_surface' must be a string, got a boolean")):
        (tmp_path / "lama" / "TREx" / "P19.jsonl").write_text(json.dumps({**ROW, "evidences": [{}, bad]}) + "\n")
        with pytest.raises(DataError) as caught:
            load_trex(tmp_path / "lama")
        assert str(caught.value) == f"{tmp_path / 'lama' / 'TREx' / 'P19.jsonl'}:1: {message}"


def test_a_relation_in_both_trex_folders_names_the_file_left_unread(lama_dir, tmp_path, monkeypatch):
    """T-REx/ comes first; its twin in TREx_reconstructed/ is named in the load report, through the snapshot too."""
    import shutil

    from eval.corpora import load_corpus

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    for folder in ("TREx", "TREx_reconstructed"):
        (data / folder).mkdir(parents=True)
        shutil.copy(lama_dir / "TREx_reconstructed" / "P47.jsonl", data / folder / "P47.jsonl")
    shutil.copy(lama_dir / "relations.jsonl", data / "relations.jsonl")
    note = "TREx_reconstructed/P47.jsonl is not read: TREx/P47.jsonl comes first (keep one of them)"
    for _ in range(2):  # parsed, then as cached
        corpus = load_corpus("trex", data, ["P47"])
        assert note in corpus.summary()
    (data / "TREx_reconstructed" / "P47.jsonl").unlink()
    assert "is not read" not in load_corpus("trex", data, ["P47"]).summary()


def test_one_relation_without_a_data_file_is_counted_in_the_singular(lama_dir, tmp_path):
    import shutil

    data = tmp_path / "data"
    (data / "TREx").mkdir(parents=True)
    listed = [line for line in (lama_dir / "relations.jsonl").read_text(encoding="utf-8").splitlines()
              if json.loads(line)["relation"] in ("P47", "P19")]
    (data / "relations.jsonl").write_text("\n".join(listed) + "\n", encoding="utf-8")
    shutil.copy(lama_dir / "TREx_reconstructed" / "P47.jsonl", data / "TREx" / "P47.jsonl")
    assert "1 relation has no data file: P19" in load_trex(data).summary()


def test_relation_labels_are_cleaned_as_entity_labels_are(tmp_path):
    """Directional marks and spaces at a relation label's ends head its column invisibly; NFD is NFC; a label of
    spaces alone is no label: the id heads the column."""
    path = tmp_path / "relations.jsonl"
    rows = [{"relation": "a", "template": "[X] likes [Y] .", "label": "\u200flikes\u200e "},
            {"relation": "b", "template": "[X] hates [Y] .", "label": "caf" + "e\u0301"},
            {"relation": "c", "template": "[X] sees [Y] .", "label": "  "}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    relations = load_relations(path)
    assert [relations[r].label for r in "abc"] == ["likes", "caf\u00e9", "c"]
