"""Relation extraction: mentions, features, subject-grouped folds, and held-out extraction."""

from __future__ import annotations

import zlib

from eval.types import Entity, Evidence, Fact
from kb.extraction.candidates import (
    Gazetteer,
    candidate_pairs,
    names_entity,
    shape_mentions,
    snippet_sentences,
    split_sentences,
    tokenize,
    trex_sentences,
)
from kb.extraction.extractor import NA, Settings, assign_folds, kfold_extract, precision_recall
from kb.extraction.features import pair_features, shape


def trex_fact(i: int, rel: str, sub: str, obj: str, masked: str, sub_surface: str | None = None,
              obj_surface: str | None = None) -> Fact:
    ev = Evidence(masked.replace("[MASK]", obj_surface or obj), masked, sub_surface or sub, obj_surface or obj)
    return Fact(f"u{i}", "trex", rel, Entity(sub, f"Q{1000 + i}"), Entity(obj, f"Q{zlib.crc32(obj.encode())}"), (ev,))


def test_trex_sentence_mentions_and_gold_pair():
    fact = trex_fact(1, "P19", "Allan Peiper", "Alexandra",
                     "Allan Peiper (born 26 April 1960 in [MASK], Australia) is a cyclist.",
                     obj_surface="Alexandra, Victoria")
    sents, dropped = trex_sentences([fact], Gazetteer(["Australia", "Allan Peiper"]))
    assert dropped == {"no subject surface in the sentence": 0, "no [MASK] in the sentence": 0}
    (s,) = sents
    assert s.text == "Allan Peiper (born 26 April 1960 in Alexandra, Victoria, Australia) is a cyclist."
    assert [(m.text, m.kind) for m in s.mentions] == [
        ("Alexandra, Victoria", "obj"), ("Allan Peiper", "sub"), ("Australia", "gaz")]
    assert s.gold == {(1, 0): {"P19"}}
    assert s.facts == [0]
    assert candidate_pairs(s, window=15) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert candidate_pairs(s, window=3) == [(0, 2), (1, 0), (2, 0)]  # the gold pair is always a candidate


def test_shared_sentence_and_missing_subject_are_counted():
    masked = "[MASK] is the capital of France ."
    a = trex_fact(1, "P1376", "Paris", "France", "Paris is the capital of [MASK] .")
    b = trex_fact(2, "P19", "Nobody Here", "Paris", masked)
    sents, dropped = trex_sentences([a, b], Gazetteer([]))
    assert dropped["no subject surface in the sentence"] == 1
    (s,) = sents  # both facts align to the same sentence text
    assert s.facts == [0, 1]
    assert s.gold == {(1, 0): {"P1376"}}


def test_gazetteer_longest_match_and_common_word_aliases():
    gz = Gazetteer(["New York", "New York City", "York", "in", "lb", "USA", "jazz"])
    toks = tokenize("He moved from New York City to York to play jazz in the USA")[0]
    assert gz.find(toks, set()) == [(3, 6), (7, 8), (10, 11), (13, 14)]
    assert gz.find(toks, {4}) == [(7, 8), (10, 11), (13, 14)]


def test_snippet_mentions_by_label_alias_partial_name_and_year():
    fact = Fact("g1", "google_re", "place_of_birth", Entity("John Stephen", None),
                Entity("Glasgow", "Q4093", ("Glasgow, Scotland",)),
                (Evidence("Born in Glasgow, Stephen became a welder. He moved to London in 1952."),))
    assert split_sentences(fact.evidences[0].text) == ["Born in Glasgow, Stephen became a welder.",
                                                      "He moved to London in 1952."]
    sents, dropped = snippet_sentences([fact], Gazetteer(["Glasgow", "London"]))
    assert dropped == {"snippets with no sentence naming both subject and object": 0}
    first, second = sents
    assert [(m.text, m.kind) for m in first.mentions] == [("Glasgow", "gaz"), ("Stephen", "cap")]
    assert first.gold == {(1, 0): {"place_of_birth"}}
    assert [(m.text, m.kind) for m in second.mentions] == [("London", "gaz"), ("1952", "year")]
    assert second.gold == {}
    assert names_entity("Stephen", fact.subject, partial=True)
    assert not names_entity("Stephen", fact.subject, partial=False)
    assert names_entity("Glasgow, Scotland", fact.object, partial=False)
    assert shape_mentions(tokenize("The Red Sox won in 2004")[0], set()) == [((1, 3), "cap"), ((5, 6), "year")]


def test_pair_features_carry_direction_and_no_mention_kind():
    fact = trex_fact(1, "P19", "Dante", "Florence", "Dante was born in [MASK] .")
    (s,) = trex_sentences([fact], Gazetteer([]))[0]
    fwd = pair_features(s, 1, 0)  # Dante -> Florence
    rev = pair_features(s, 0, 1)
    assert "bp>was born in" in fwd and "bp<was born in" in rev
    assert "m1h:dante" in fwd and "m2h:florence" in fwd
    assert not any("sub" in f or "obj" in f for f in fwd + rev)
    assert shape("Florence") == "Xx/1" and shape("1952") == "year" and shape("New York") == "Xx Xx/2"


PATTERNS = {
    "P19": "{s} was born in [MASK] .",
    "P20": "{s} died in [MASK] .",
    "P27": "{s} is a citizen of [MASK] .",
}
PLACES = ["Rome", "Paris", "Oslo", "Lima", "Cairo", "Quito"]


def synthetic(n: int) -> list[Fact]:
    facts = []
    for i in range(n):
        sub = f"Person{i}"
        for k, (rel, pattern) in enumerate(PATTERNS.items()):
            facts.append(trex_fact(3 * i + k, rel, sub, PLACES[(i + k) % len(PLACES)], pattern.format(s=sub)))
    return [Fact(f.uid, f.corpus, f.relation, Entity(f.subject.label, f"Q{i // 3}"), f.object, f.evidences)
            for i, f in enumerate(facts)]


def test_folds_never_share_a_subject():
    facts = synthetic(30)
    # a sentence aligned to facts of two subjects ties them into one group
    both = Fact("x", "trex", "P19", Entity("Person3", "Q3"), Entity("Rome", "Q1"),
                (Evidence("Person3 met Person4 in Rome .", "Person3 met Person4 in [MASK] .", "Person3", "Rome"),))
    both4 = Fact("y", "trex", "P19", Entity("Person4", "Q4"), Entity("Rome", "Q1"),
                 (Evidence("Person3 met Person4 in Rome .", "Person3 met Person4 in [MASK] .", "Person4", "Rome"),))
    facts += [both, both4]
    sents, _ = trex_sentences(facts, Gazetteer([]))
    folds = assign_folds(sents, facts, 5)
    assert len(set(folds)) > 1
    for fold in set(folds):
        test = {facts[i].subject.key for s, f in zip(sents, folds) if f == fold for i in s.facts}
        train = {facts[i].subject.key for s, f in zip(sents, folds) if f != fold for i in s.facts}
        assert not test & train
    by_subject = {}
    for s, f in zip(sents, folds):
        for i in s.facts:
            by_subject.setdefault(facts[i].subject.key, set()).add(f)
    assert all(len(v) == 1 for v in by_subject.values())
    assert by_subject["Q3"] == by_subject["Q4"]


def test_kfold_extraction_on_held_out_subjects():
    facts = synthetic(40)
    sents, _ = trex_sentences(facts, Gazetteer(PLACES))
    result = kfold_extract(sents, facts, Settings(folds=4, epochs=20), progress=False)
    got = {(sents[t.sentence].mentions[t.m1].text, t.relation, sents[t.sentence].mentions[t.m2].text)
           for t in result.triples}
    expected = {(f.subject.label, f.relation, f.object.label) for f in facts}
    assert got == expected  # every fact extracted with its relation and direction, nothing else
    pr = precision_recall(result.scores)
    assert pr == {"P19": (100.0, 100.0), "P20": (100.0, 100.0), "P27": (100.0, 100.0)}
    assert result.train_rows == 3 * 2 * 120  # k-1 = 3 times per sentence: its gold pair and one NA pair
    assert all(0.0 < t.confidence <= 1.0 for t in result.triples)
    assert NA not in {t.relation for t in result.triples}


def test_folds_on_real_trex_sentences_never_share_a_subject(trex):
    facts = [f for f in trex.facts if f.relation in ("P19", "P20", "P27")]
    sents, _ = trex_sentences(facts, Gazetteer([]))
    folds = assign_folds(sents, facts, 5)
    assert set(folds) == {0, 1, 2, 3, 4}
    seen: dict[str, int] = {}
    for s, fold in zip(sents, folds):
        for i in s.facts:
            assert seen.setdefault(facts[i].subject.key, fold) == fold
