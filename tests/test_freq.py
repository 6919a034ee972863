"""Freq baseline: tie-breaking on a hand-made corpus, and LAMA Table 2 on the shared data."""

import pytest

from eval.lama import Corpus
from eval.queries import make_queries
from eval.types import Entity, Fact, Relation
from kb.freq import FreqPredictor


def _fact(i, sub, obj, sid=None):
    return Fact(f"f{i}", "toy", "P1", Entity(sub, sid), Entity(obj))


def test_ties_go_to_first_occurrence():
    facts = [_fact(0, "a", "Rome"), _fact(1, "b", "Oslo"), _fact(2, "c", "Oslo"), _fact(3, "d", "Rome"),
             _fact(4, "e", "Bern")]
    corpus = Corpus("toy", {"P1": Relation("P1", "p", "[X] in [Y] .", "N-1")}, facts)
    queries = [q for q, _ in make_queries(corpus)["P1"]]
    preds = FreqPredictor(facts).predict(queries, depth=10)
    assert [a.label for a in preds[0].answers] == ["Rome", "Oslo", "Bern"]
    assert [a.score for a in preds[0].answers] == [2.0, 2.0, 1.0]
    assert len(FreqPredictor(facts).predict(queries, depth=2)[0].answers) == 2


def test_freq_reproduces_lama_table2(tmp_path, lama_dir):
    from bridge.run.runner import RunConfig, run_lama

    rows = run_lama(RunConfig(["trex", "google_re"], ["freq"], tmp_path / "out", str(lama_dir),
                              cache_dir=tmp_path / "cache"), progress=False)
    get = {(r["corpus"], r["setting"], r["group"], r["metric"]): r for r in rows}
    trex = {g: get[("trex", "raw", g, "p@1")] for g in ("all", "1-1", "N-1", "N-M")}
    assert trex["all"]["value"] == pytest.approx(22.03, abs=0.05)
    assert trex["1-1"]["value"] == pytest.approx(1.78, abs=0.05)
    assert trex["N-1"]["value"] == pytest.approx(23.85, abs=0.05)
    assert trex["N-M"]["value"] == pytest.approx(21.95, abs=0.05)
    assert trex["all"]["n_facts"] == 34039
    assert len({r["group"] for r in rows if r["corpus"] == "trex"} - {"all", "1-1", "N-1", "N-M"}) == 41
    g = {rel: round(get[("google_re", "raw", rel, "p@1")]["value"], 1)
         for rel in ("place_of_birth", "date_of_birth", "place_of_death", "all")}
    assert g == {"place_of_birth": 4.6, "date_of_birth": 1.9, "place_of_death": 6.8, "all": 4.4}
    assert get[("google_re", "raw", "all", "p@1")]["n_facts"] == 5527
    # filtered never ranks the gold lower than raw; on T-REx N-M it helps
    assert get[("trex", "filtered", "N-M", "p@1")]["value"] > trex["N-M"]["value"]
    assert get[("trex", "filtered", "1-1", "p@1")]["value"] >= trex["1-1"]["value"]
