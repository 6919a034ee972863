"""Negated and misprimed LAMA: loading (tiny fixture and the staged data) and the paper's measures."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from eval.errors import DataError, KbcError
from eval.negated import MisprimeOutcome, load_probes, negation_pair, summarize_misprimes, summarize_negation


def _row(sub: str, obj: str, positive: str, negated: str, prime: str, uuid=1) -> dict:
    return {"sub_label": sub, "obj_label": obj, "masked_sentences": [positive], "masked_negations": [negated],
            "masked_misprimed": [f"{prime}? {positive}"], "uuid": uuid}


ROWS = [
    _row("Ann", "Paris", "Ann was born in [MASK] .", "Ann was not born in [MASK] .", "Kabul", 3),
    _row("Bob", "Rome", "Bob was born in [MASK] .", "Bob was born in [MASK] .", "Ibm?", 3),
]


def _write(root, rows, corpus="TREx", variant="random", name="P19_random.jsonl"):
    folder = root / corpus / variant
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows))
    return root


def test_loader_reads_the_three_clozes(tmp_path):
    corpus = load_probes(_write(tmp_path, ROWS), "trex", "random")
    first, second = corpus.facts
    assert first.fact.uid == "trex/P19:3" and first.fact.relation == "P19"
    assert first.fact.cloze == "Ann was born in [Y] ."
    assert first.negated == "Ann was not born in [Y] ."
    assert (first.misprimed, first.prime) == ("Kabul? Ann was born in [Y] .", "Kabul")
    # a negation equal to the positive sentence is no negated query; a stray "?" of the prime is dropped
    assert (second.negated, second.prime) == (None, "Ibm")
    assert second.fact.uid == "trex/P19:line2"  # the uuid repeats: the line tells them apart
    assert corpus.reports[0].notes == ["1 fact has no negated sentence (it equals the positive one)"]


@pytest.mark.parametrize("variant", ["random", "high_ranked"])
def test_an_exact_duplicate_row_is_dropped_and_counted(tmp_path, variant):
    rows = [ROWS[0], ROWS[1], ROWS[0]]  # rows 1 and 2 share a uuid but differ: both kept, as above
    root = _write(_write(tmp_path, rows), rows, variant="high_ranked", name="P19.jsonl")
    corpus = load_probes(root, "trex", variant)
    assert [p.fact.uid for p in corpus.facts] == ["trex/P19:3", "trex/P19:line2"]
    report = corpus.reports[0]
    assert (report.read, report.kept, report.n_dropped) == (3, 2, 1)
    assert "read 3, kept 2, dropped 1 (1 duplicate rows (identical to an earlier one))" in report.summary()


def test_a_duplicate_row_is_counted_on_the_load_line(tmp_path):
    from eval.negated import probe_corpus

    summary = probe_corpus("negated-trex", _write(tmp_path, [ROWS[0], ROWS[0]])).summary()
    assert summary.splitlines()[0] == "negated-trex: 1 relation, read 2, kept 1, dropped 1"


@pytest.mark.parametrize(("row", "message"), [
    ("{oops\n", r"P19_random\.jsonl:2: malformed JSON"),
    (_row("Cy", "Oslo", "Cy was born in Oslo .", "Cy was not born in [MASK] .", "Bergen"),
     r"P19_random\.jsonl:2: masked_sentences sentence holds \[MASK\] 0 times"),
    ({**_row("Cy", "Oslo", "Cy was born in [MASK] .", "x [MASK]", "Bergen"), "masked_misprimed": ["Cy [MASK]"]},
     r"P19_random\.jsonl:2: masked_misprimed 'Cy \[MASK\]' is not '<prime>\? ' followed by the positive sentence"),
    ({**_row("Cy", "Oslo", "Cy was born in [MASK] .", "x [MASK]", "Bergen"), "masked_negations": "x [MASK]"},
     r"P19_random\.jsonl:2: field 'masked_negations' must be a non-empty array of sentences, got a string"),
    ({**_row("Cy", "Oslo", "Cy was born in [MASK] .", "x [MASK]", "Bergen"), "uuid": [1]},
     r"P19_random\.jsonl:2: field 'uuid' must be a string or a number, got an array"),
])
def test_malformed_line_names_file_and_line(tmp_path, row, message):
    with pytest.raises(DataError, match=message):
        load_probes(_write(tmp_path, [ROWS[0], row]), "trex", "random")


def test_unknown_variant_and_relation(tmp_path):
    root = _write(tmp_path, ROWS)
    with pytest.raises(DataError, match=r"TREx/high_ranked: not found; trex has the misprime variants random"):
        load_probes(root, "trex", "high_ranked")
    with pytest.raises(DataError, match=r"unknown relation id\(s\) P20 in negated/misprimed trex; known: P19"):
        load_probes(root, "trex", "random", ["P20"])


def test_a_misprime_file_missing_is_named(tmp_path):
    root = _write(_write(tmp_path, ROWS), ROWS, variant="high_ranked", name="P19.jsonl")
    _write(root, ROWS, name="P20_random.jsonl")
    with pytest.raises(DataError, match=r"TREx/high_ranked: no high_ranked file of relation\(s\) P20, whose facts "
                                        r"random/ holds; put the file back or choose another --misprimes$"):
        load_probes(root, "trex", "high_ranked", ["P19", "P20"])


def test_a_relation_without_a_random_file_is_named(tmp_path):
    root = _write(_write(tmp_path, ROWS), ROWS, variant="high_ranked", name="P19.jsonl")
    _write(root, ROWS, variant="low_ranked", name="P20.jsonl")
    notes = [r.summary() for r in load_probes(root, "trex", "random").reports if not r.read]
    assert notes == ["trex/random: 1 relation has misprime files but no random/ file of facts, so not asked: P20"]


def test_staged_data(shared_data):
    trex = load_probes(shared_data, "trex", "high_ranked")
    per_relation = Counter(p.fact.relation for p in trex.facts)
    assert (len(trex.facts), len(per_relation), per_relation["P19"]) == (10469, 40, 210)
    assert "P27" not in per_relation
    assert sum(1 for p in trex.facts if p.negated is None) == 336 == per_relation["P159"]
    assert next(p.prime for p in trex.facts if p.fact.relation == "P108") == "Ibm"
    assert len(load_probes(shared_data, "google_re", "low_ranked").facts) == 485
    conceptnet = load_probes(shared_data, "conceptnet", "random")
    assert (len(conceptnet.facts), len({p.fact.relation for p in conceptnet.facts})) == (146, 13)


def test_negation_pair_exact():
    # ranks a>b>c>d and a>b>d>c: rho = 1 - 6 * 2 / (4 * 15) = 0.8; both put a first
    same, rho = negation_pair({"a": 0.5, "b": 0.3, "c": 0.2, "d": 0.0}, {"a": 0.4, "b": 0.35, "c": 0.1, "d": 0.15})
    assert same is True and rho == pytest.approx(0.8, abs=1e-12)
    same, rho = negation_pair({"a": 3.0, "b": 2.0, "c": 1.0}, {"a": 1.0, "b": 2.0, "c": 3.0})
    assert same is False and rho == pytest.approx(-1.0, abs=1e-12)
    assert math.isnan(negation_pair({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 2.0})[1])


def test_negation_pair_needs_one_candidate_set():
    with pytest.raises(KbcError, match="same candidates"):
        negation_pair({"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0})


def test_summarize_negation():
    table = summarize_negation([("P1", True, 0.8), ("P1", False, -1.0), ("P2", True, math.nan)])
    assert table["P1"] == {"overlap": 50.0, "spearman": pytest.approx(-0.1, abs=1e-15), "n": 2.0, "n-spearman": 2.0}
    assert table["P2"] == {"overlap": 100.0, "n": 1.0, "n-spearman": 0.0}
    # relations count alike; P2 has no rho to average
    assert table["all"] == {"n": 3.0, "overlap": 75.0, "spearman": pytest.approx(-0.1, abs=1e-15), "n-spearman": 2.0}


def test_summarize_misprimes():
    outcomes = [
        MisprimeOutcome("P1", "Paris", "kabul", "Paris", "Kabul"),  # right, then the prime (any case)
        MisprimeOutcome("P1", "Rome", "Rome", "Rome", "Oslo"),  # right, stays right
        MisprimeOutcome("P1", "Oslo", "Oslo", "Bergen", "Oslo"),  # wrong before, top answer is the prime
        MisprimeOutcome("P2", "X", "X", "Y", "Z"),
    ]
    table = summarize_misprimes(outcomes)
    assert table["P1"] == {"became-prime": pytest.approx(200 / 3, abs=1e-12), "n": 3.0, "n-p@1-drop": 2.0,
                           "p@1-drop": 50.0}
    assert table["P2"] == {"became-prime": 0.0, "n": 1.0, "n-p@1-drop": 0.0}
    # the drop is taken over the 2 facts right without the prime, not the 4 asked
    assert table["all"] == {"n": 4.0, "became-prime": pytest.approx(100 / 3, abs=1e-12), "p@1-drop": 50.0,
                            "n-p@1-drop": 2.0}


def test_the_macro_means_do_not_depend_on_the_order_of_the_relations():
    # a run asked with --relations P1 P2 P3 or P3 P2 P1 writes the same bytes
    rows = [("P1", True, 0.1), ("P2", True, 0.2), ("P3", True, 0.3)]
    assert summarize_negation(rows)["all"] == summarize_negation(rows[::-1])["all"]
    outcomes = [MisprimeOutcome(f"P{i}", "a", "b" if i % 2 else "a", "a", "c") for i in range(1, 8)]
    picked = outcomes[:3] + outcomes[3:4] * 2 + outcomes[4:] * 3  # relations with 1, 2 and 3 facts
    assert summarize_misprimes(picked)["all"] == summarize_misprimes(picked[::-1])["all"]
