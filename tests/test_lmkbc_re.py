"""`kbc run lmkbc` with the relation-extraction KBs: each LM-KBC relation asked as its Wikidata property of the KB
extracted from a tiny LAMA T-REx beside the LM-KBC folder; relations LAMA has no property for answer empty sets."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from lmkbc_fixtures import TEMPLATES as TEMPLATE_CSV

from eval.disambiguate import LabelIndex
from eval.lmkbc import TEMPLATES, WIKIDATA
from eval.set_answers import set_answer
from eval.set_rules import parse_set_rule
from eval.types import Entity, Query
from kb.extraction.kb_build import write_graph
from kb.extraction.linking import ScoredTriple
from kb.extraction.predictor import ExtractedKBPredictor
from kb.set_predictors import ExtractedSetPredictor
from kb.store import GraphStore, entity_iri

PATTERNS = {"P47": "{s} shares a border with {o} .", "P20": "{s} died in {o} ."}
CITIES = ["Rome", "Paris", "Oslo", "Lima", "Cairo", "Quito"]


def _trex_row(rel: str, uid: str, sub: tuple[str, str], obj: tuple[str, str], surface: str) -> dict:
    sentence = PATTERNS[rel].format(s=surface, o=obj[1])
    return {"uuid": uid, "sub_uri": sub[0], "sub_label": sub[1], "obj_uri": obj[0], "obj_label": obj[1],
            "predicate_id": rel, "evidences": [{"sub_surface": surface, "obj_surface": obj[1],
                                                "masked_sentence": sentence.replace(obj[1], "[MASK]")}]}


def write_lama(root) -> None:
    """Land<c> (Q<500+c>) borders Land<c+1> and Land<c+3> (of 20); Person<i> (Q<i+1>) died in a city (Q90x).
    Every 4th sentence of each relation names its subject "Dr. <i>", a surface no label matches. P414's facts
    have no sentence (as the staged data's reconstructed files): nothing to extract."""
    (root / "TREx").mkdir(parents=True)
    (root / "TREx_reconstructed").mkdir()
    rels = [{"relation": "P47", "template": "[X] shares a border with [Y] .", "type": "N-M"},
            {"relation": "P20", "template": "[X] died in [Y] .", "type": "N-1"},
            {"relation": "P414", "template": "[X] is traded at [Y] .", "type": "N-M"}]
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rels))
    land = [(f"Q{500 + c}", f"Land{c}") for c in range(20)]
    borders = []
    for i in range(40):
        c, step = divmod(i, 2)
        surface = f"Dr. {i}" if i % 4 == 0 else land[c][1]
        borders.append(_trex_row("P47", f"P47-{i}", land[c], land[(c + 1 + 2 * step) % 20], surface))
    deaths = [_trex_row("P20", f"P20-{i}", (f"Q{i + 1}", f"Person{i}"), (f"Q{900 + i % 6}", CITIES[i % 6]),
                        f"Dr. {i}" if i % 4 == 0 else f"Person{i}") for i in range(40)]
    for rel, rows in (("P47", borders), ("P20", deaths)):
        (root / "TREx" / f"{rel}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    traded = [{"uuid": None, "sub_uri": f"Q{700 + i}", "sub_label": f"Company{i}", "obj_uri": "Q13677",
               "obj_label": "NYSE", "predicate_id": "P414"} for i in range(2)]
    (root / "TREx_reconstructed" / "P414.jsonl").write_text("".join(json.dumps(r) + "\n" for r in traded))


def _lmkbc_row(sid: str, label: str, rel: str, objects: list[tuple[str, str]]) -> dict:
    return {"SubjectEntityID": sid, "SubjectEntity": label, "Relation": rel,
            "ObjectEntitiesID": [o for o, _ in objects], "ObjectEntities": [x for _, x in objects]}


def write_lmkbc(root) -> None:
    (root / TEMPLATES).parent.mkdir(parents=True)
    (root / TEMPLATES).write_text(TEMPLATE_CSV)
    val = [
        _lmkbc_row("Q501", "Land1", "countryLandBordersCountry", [("Q502", "Land2"), ("Q504", "Land4")]),
        _lmkbc_row("Q502", "Land2", "countryLandBordersCountry", [("Q503", "Land3"), ("Q599", "Atlantis")]),
        _lmkbc_row("Q3", "Person2", "personHasCityOfDeath", [("Q902", "Oslo")]),
        _lmkbc_row("Q5", "Person4", "personHasCityOfDeath", [("Q904", "Cairo")]),
        _lmkbc_row("Q6", "Person5", "personHasCityOfDeath", []),
        _lmkbc_row("Q77", "Award", "awardWonBy", [("Q1", "Person0")]),
        _lmkbc_row("Q78", "Series", "seriesHasNumberOfEpisodes", [("12", "12")]),
        _lmkbc_row("Q700", "Company0", "companyTradesAtStockExchange", [("Q13677", "NYSE")]),
    ]
    train = [_lmkbc_row("Q507", "Land7", "countryLandBordersCountry", [("Q508", "Land8")]),
             _lmkbc_row("Q8", "Person7", "personHasCityOfDeath", [("Q901", "Paris")])]
    for split, rows in (("val", val), ("train", train)):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def data(tmp_path, monkeypatch):
    write_lama(tmp_path / "data" / "lama")
    write_lmkbc(tmp_path / "data" / "lmkbc2024")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "data" / "lama"


def _records(out, predictor: str, relation: str) -> dict[str, list[str]]:
    path = out / "predictions" / "lmkbc2024" / predictor / f"{relation}.jsonl"
    return {r["subject_id"]: r["predicted"] for r in map(json.loads, path.read_text().splitlines())}


def _scores(out, predictor: str) -> dict[str, tuple[float, float, float]]:
    rows = [r for r in json.loads((out / "summary.json").read_text())
            if r["predictor"] == predictor and r["scope"] == "own"]
    return {g: tuple(next(r["value"] for r in rows if r["group"] == g and r["metric"] == m)
                     for m in ("macro-p", "macro-r", "macro-f1")) for g in {r["group"] for r in rows}}


UNCOVERED = ("lmkbc2024 / {}: the KB extracted from LAMA T-REx holds no P1113, P166, P414: seriesHasNumberOfEpisodes, "
             "awardWonBy, companyTradesAtStockExchange answer empty sets")


NOTE = ("`{}` (lmkbc2024) predicted an empty set for every pair of awardWonBy, companyTradesAtStockExchange, "
        "seriesHasNumberOfEpisodes.")


def test_extracted_kbs_answer_lmkbc_with_sets(data, tmp_path, capsys):
    """RE_n misses the subjects its sentences name "Dr. <i>" (Land2's border with Land3, Person4's death in Cairo);
    RE_o links them. Both answer Person5 (whose val gold is empty) with Quito, and nothing for the award, the
    series and the company: LAMA's T-REx has no P166 nor P1113, and no sentence of its P414 facts."""
    out = tmp_path / "run"
    common = ["--data-dir", str(data), "--store", str(tmp_path / "store")]
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "re-naive", "re-oracle", *common, "--out", str(out)],
                           capsys)
    assert code == 0, err
    lines = err.splitlines()
    for name in ("re-naive", "re-oracle"):
        assert lines.count(UNCOVERED.format(name)) == 1
    country, city = "countryLandBordersCountry", "personHasCityOfDeath"
    assert _records(out, "re-naive", country) == {"Q501": ["Q502", "Q504"], "Q502": ["Q505"]}
    assert _records(out, "re-oracle", country) == {"Q501": ["Q502", "Q504"], "Q502": ["Q503", "Q505"]}
    assert _records(out, "re-naive", city) == {"Q3": ["Q902"], "Q5": [], "Q6": ["Q905"]}
    assert _records(out, "re-oracle", city) == {"Q3": ["Q902"], "Q5": ["Q904"], "Q6": ["Q905"]}
    for name in ("re-naive", "re-oracle"):
        assert _records(out, name, "awardWonBy") == {"Q77": []}
        assert _records(out, name, "seriesHasNumberOfEpisodes") == {"Q78": []}
        assert _records(out, name, "companyTradesAtStockExchange") == {"Q700": []}
    submission = [json.loads(x) for x in (out / "submission" / "re-oracle.jsonl").read_text().splitlines()]
    assert submission[1] == {"SubjectEntityID": "Q502", "SubjectEntity": "Land2", "Relation": country,
                             "ObjectEntitiesID": ["Q503", "Q505"]}
    # per pair (P, R): an empty prediction for a non-empty gold is 1/0, a non-empty one for an empty gold 0/1
    empty_gold = (1.0, 0.0, 0.0)
    assert _scores(out, "re-naive") == {
        country: (0.5, 0.5, 0.5), city: (2 / 3, 2 / 3, 1 / 3), "awardWonBy": empty_gold,
        "seriesHasNumberOfEpisodes": empty_gold, "companyTradesAtStockExchange": empty_gold, "all": (0.75, 0.375, 0.25)}
    assert _scores(out, "re-oracle") == {
        country: (0.75, 0.75, 0.75), city: (2 / 3, 1.0, 2 / 3), "awardWonBy": empty_gold,
        "seriesHasNumberOfEpisodes": empty_gold, "companyTradesAtStockExchange": empty_gold,
        "all": (6.5 / 8, 4.5 / 8, 3.5 / 8)}
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["lmkbc2024"]["re-naive"]
    assert described["properties"]["awardWonBy"] == {"property": "P166", "slot": "subject"}
    assert described["uncovered"] == ["seriesHasNumberOfEpisodes", "awardWonBy", "companyTradesAtStockExchange"]
    # the oracle reads LAMA's sentences here, not the asked facts' own: it bounds nothing, and is not marked so
    assert "Upper bounds" not in (out / "summary.md").read_text() and "Upper bounds" not in err
    # relations a KB answered no pair of are named: their scores are the challenge's conventions alone
    silent = NOTE.format("re-naive")
    assert silent in (out / "summary.md").read_text()
    from bridge.run.leaderboard import upper_bound

    assert not upper_bound(json.loads((out / "config.json").read_text()), "re-oracle")

    # a set rule cuts the confidences; relations LAMA covers alone: no warning
    out = tmp_path / "top"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", country, "--predictors", "re-oracle", "--set",
                            "re-oracle.set=top:1", *common, "--out", str(out)], capsys)
    assert code == 0, err
    assert "holds no" not in err
    assert _records(out, "re-oracle", country) == {"Q501": ["Q502"], "Q502": ["Q503"]}


def test_no_lama_copy_is_refused(tmp_path, monkeypatch, capsys):
    write_lmkbc(tmp_path / "data" / "lmkbc2024")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KBC_DATA", raising=False)
    root = tmp_path / "data"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "re-naive", "--data-dir", str(root / "lmkbc2024"),
                            "--store", str(tmp_path / "store"), "--out", str(tmp_path / "run")], capsys)
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: re-naive on lmkbc2024 asks the KB extracted from LAMA T-REx: no LAMA data in {root}/lmkbc2024, "
        "beside it or in $KBC_DATA; pass --data-dir the LAMA copy (with lmkbc2024/ beside it)"))


LAND1, LAND2, LAND4 = Entity("Land1", "Q501"), Entity("Land2", "Q502"), Entity("Land4", "Q504")
TWINS = (Entity("Springfield", "Q505"), Entity("Springfield", "Q506"))  # two entities, one label
AWARD, WINNERS = Entity("Award", "Q77"), (Entity("Person0", "Q1"), Entity("Person1", "Q2"))


def test_sets_by_id_in_the_mapped_slot_and_set_rules():
    """Every entity held counts (two of one label too); awardWonBy asks who holds P166 = the award; the
    confidences are probabilities, cut by threshold and top rules as an LM's."""
    triples = [ScoredTriple(LAND1, "P47", LAND2, 0.9), ScoredTriple(LAND1, "P47", LAND4, 0.4),
               *(ScoredTriple(LAND1, "P47", twin, 0.6) for twin in TWINS),
               ScoredTriple(WINNERS[0], "P166", AWARD, 0.8), ScoredTriple(WINNERS[1], "P166", AWARD, 0.3)]
    with GraphStore.open(None) as store:
        write_graph(store, "re-naive", triples, progress=False)
        kb = ExtractedKBPredictor("re-naive", store, "re-naive")
        predictor = ExtractedSetPredictor(kb, WIKIDATA, {"P47", "P166", "P20"})
        queries = [Query(f"{rel}:{e.id}", f"{rel}:{e.id}", "lmkbc2024", rel, e, "object", "[X] [Y]")
                   for rel, e in (("countryLandBordersCountry", LAND1), ("awardWonBy", AWARD),
                                  ("personHasCityOfDeath", LAND1), ("companyTradesAtStockExchange", LAND1))]
        preds = predictor.predict(queries, depth=100)
        assert [[(a.id, a.score) for a in p.answers] for p in preds] == [
            [("Q502", 0.9), ("Q505", 0.6), ("Q506", 0.6), ("Q504", 0.4)], [("Q1", 0.8), ("Q2", 0.3)], [], []]
        assert kb.ranking("P47")[str(entity_iri(LAND1))] == preds[0].answers  # the LAMA ranking: one per entity too
    index = LabelIndex({})
    sets = {rule: [set_answer(p, index, parse_set_rule(rule) if rule else None) for p in preds[:2]]
            for rule in ("", "threshold:0.5", "top:2")}
    assert sets == {"": [["Q502", "Q505", "Q506", "Q504"], ["Q1", "Q2"]],
                    "threshold:0.5": [["Q502", "Q505", "Q506"], ["Q1"]], "top:2": [["Q502", "Q505"], ["Q1", "Q2"]]}
    assert predictor.uncovered(WIKIDATA) == ["seriesHasNumberOfEpisodes", "companyTradesAtStockExchange"]
