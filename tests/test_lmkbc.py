"""LM-KBC 2024: loading the train/val files and scoring sets exactly as the challenge's evaluate.py.

The expected values of the tiny fixture are worked out by hand in the comments; they (and the real-data
figures) are also what lm-kbc/dataset2024's evaluate.py prints for the same gold and prediction files.
"""

from __future__ import annotations

import collections
import json

import pytest
from lmkbc_fixtures import PREDICTED, TRAIN, VAL, row, write_lmkbc

from eval.errors import DataError, KbcError
from eval.lmkbc import load_lmkbc, object_labels, read_rows, submission_rows, write_submission
from eval.set_metrics import ALL, pair_from_record, score_facts, score_pair, summarize, tidy_rows
from kb.set_predictors import train_shares


def _table(tmp_path):
    corpus = load_lmkbc(write_lmkbc(tmp_path), "val")
    return summarize(score_facts(corpus.facts, PREDICTED))


def _prf(pred, gold):
    score = score_pair("r", "s", pred, gold)
    return score.p, score.r, score.f1


def test_pair_conventions_for_empty_sets():
    assert _prf([], []) == (1.0, 1.0, 1.0)
    assert _prf([], ["Q1"]) == (1.0, 0.0, 0.0)
    assert _prf(["Q1"], []) == (0.0, 1.0, 0.0)


def test_pair_scores_distinct_objects():
    score = score_pair("r", "s", ["10", "12", "10"], ["10"])
    assert (score.p, score.r, score.tp, score.n_pred, score.n_gold) == (0.5, 1.0, 1, 2, 1)
    assert score.f1 == pytest.approx(2 / 3, abs=1e-15)


def test_unmatched_label_matches_only_an_exact_gold_label():
    assert score_pair("r", "s", ["Big Board"], ["Q6"], ["Big Board"]).tp == 1
    assert score_pair("r", "s", ["big board"], ["Q6"], ["Big Board"]).tp == 0
    # the same object named by id and by label counts once at most per gold object
    assert score_pair("r", "s", ["Q6", "Big Board"], ["Q6"], ["Big Board"]).tp == 1


def test_relation_rows_match_hand_computation(tmp_path):
    table = _table(tmp_path)
    # countryLandBordersCountry: (p, r, f1) per pair .5/.5/.5, 1/1/1, 1/0/0, 0/1/0; tp 1 of 3 predicted, 3 gold
    assert table["countryLandBordersCountry"] == {
        "macro-p": 0.625, "macro-r": 0.625, "macro-f1": 0.375, "micro-p": pytest.approx(1 / 3, abs=1e-15),
        "micro-r": pytest.approx(1 / 3, abs=1e-15), "micro-f1": pytest.approx(1 / 3, abs=1e-15),
        "avg-preds": 0.75, "empty-preds": 2.0}
    # seriesHasNumberOfEpisodes: 1/1/1 and .5/1/(2/3) (a repeated number counts once)
    series = table["seriesHasNumberOfEpisodes"]
    assert (series["macro-p"], series["macro-r"], series["micro-r"], series["avg-preds"]) == (0.75, 1.0, 1.0, 1.5)
    assert series["macro-f1"] == pytest.approx(5 / 6, abs=1e-15)
    assert series["micro-p"] == pytest.approx(2 / 3, abs=1e-15)
    assert series["micro-f1"] == pytest.approx(0.8, abs=1e-15)
    # companyTradesAtStockExchange predicts nothing: micro precision 1, recall 0
    assert table["companyTradesAtStockExchange"] == {
        "macro-p": 1.0, "macro-r": 0.0, "macro-f1": 0.0, "micro-p": 1.0, "micro-r": 0.0, "micro-f1": 0.0,
        "avg-preds": 0.0, "empty-preds": 2.0}


def test_all_relations_row_averages_over_pairs_not_relations(tmp_path):
    overall = _table(tmp_path)[ALL]
    # over the 8 pairs: macro-p 6/8 (a mean over the 3 relations would be 0.7917)
    assert overall["macro-p"] == 0.75
    assert overall["macro-r"] == 0.5625
    assert overall["macro-f1"] == pytest.approx((0.5 + 1 + 1 + 2 / 3) / 8, abs=1e-15)
    # summed: tp 3, predicted 6, gold 8
    assert (overall["micro-p"], overall["micro-r"]) == (0.5, 0.375)
    assert overall["micro-f1"] == pytest.approx(3 / 7, abs=1e-15)
    assert (overall["avg-preds"], overall["empty-preds"]) == (0.75, 4.0)


def test_missing_prediction_is_an_error(tmp_path):
    corpus = load_lmkbc(write_lmkbc(tmp_path), "val")
    partial = {k: v for k, v in PREDICTED.items() if not k.endswith("Q103")}
    with pytest.raises(KbcError, match=r"no prediction for Dland \(Q103\), countryLandBordersCountry"):
        score_facts(corpus.facts, partial)


def test_unlabelled_ids_counted_once_each(tmp_path):
    """An id without a label that several facts hold is one id: the note counts ids and the objects apart."""
    val = [dict(r) for r in VAL]
    twice = next(r for r in val if r["ObjectEntitiesID"] == ["Q7", "Q8"])
    val.append({**twice, "SubjectEntity": "Other", "SubjectEntityID": "Q199"})
    corpus = load_lmkbc(write_lmkbc(tmp_path, val=val), "val")
    assert corpus.reports[0].notes == [
        "2 object ids (4 gold objects) have no label the data ties to them: they match by id only"]


def test_loader_builds_gold_sets_and_labels(tmp_path):
    corpus = load_lmkbc(write_lmkbc(tmp_path), "val")
    first = corpus.facts[0]
    assert first.uid == "countryLandBordersCountry:Q101"
    assert [(o.id, o.label) for o in first.objects] == [("Q1", "Bland"), ("Q2", "Cland")]
    assert corpus.facts[1].objects == ()
    # Q7 and Q8 share the labels "Small Board"/"Mid Board" in both splits: no label is tied to either
    assert [(o.id, o.label) for o in corpus.facts[7].objects] == [("Q7", "Q7"), ("Q8", "Q8")]
    assert corpus.facts[7].labels == ("Small Board", "Mid Board")
    assert corpus.reports[0].notes == [
        "2 object ids (2 gold objects) have no label the data ties to them: they match by id only"]
    assert corpus.relations["seriesHasNumberOfEpisodes"].template == "The series [X] has [Y] episodes."


def test_object_labels_by_elimination():
    labels = object_labels(TRAIN + VAL)
    assert labels["Q1"] == "Bland"
    assert "Q7" not in labels and "Q8" not in labels


def test_submission_format(tmp_path):
    corpus = load_lmkbc(write_lmkbc(tmp_path), "val")
    rows = submission_rows(corpus.facts, PREDICTED)
    assert rows[5] == {"SubjectEntityID": "Q106", "SubjectEntity": "Show Two", "Relation": "seriesHasNumberOfEpisodes",
                       "ObjectEntitiesID": ["10", "12"]}
    write_submission(tmp_path / "out" / "pred.jsonl", corpus.facts, PREDICTED)
    lines = (tmp_path / "out" / "pred.jsonl").read_text().splitlines()
    assert len(lines) == 8 and json.loads(lines[1])["ObjectEntitiesID"] == []


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", r"val\.jsonl:2: malformed JSON"),
    (json.dumps(row("Q9", "X", "countryBordersCountry", [], [])),
     r"val\.jsonl:2: unknown relation 'countryBordersCountry' \(did you mean countryLandBordersCountry\?\)"),
    (json.dumps(row("Q9", "X", "awardWonBy", "Q1", ["A"])),
     r"val\.jsonl:2: field 'ObjectEntitiesID' must be an array of strings \(empty for no object\), got a string"),
    (json.dumps(row("Q9", "X", "awardWonBy", ["Q1", 7], ["A"])), r"val\.jsonl:2: .*got an array holding a non-string"),
    (json.dumps(row("Q9", "X", "awardWonBy", ["Berlin"], ["Berlin"])),
     r"val\.jsonl:2: ObjectEntitiesID holds 'Berlin'; each object of awardWonBy is a Wikidata id"),
    (json.dumps(row("Q9", "X", "seriesHasNumberOfEpisodes", ["12 episodes"], ["12"])),
     r"val\.jsonl:2: .*each object of seriesHasNumberOfEpisodes is a whole number"),
    (json.dumps(row("Q9", "X", "awardWonBy", [], ["A"])), r"val\.jsonl:2: ObjectEntitiesID has 0 objects"),
    (json.dumps(row("9", "X", "awardWonBy", [], [])), r"val\.jsonl:2: SubjectEntityID '9' is not a Wikidata id"),
    (json.dumps(row("Q101", "Aland", "countryLandBordersCountry", [], [])),
     r"val\.jsonl:2: subject Q101 and relation countryLandBordersCountry again \(first at line 1\)"),
    (json.dumps({"SubjectEntityID": "Q9", "Relation": "awardWonBy"}),
     r"val\.jsonl:2: missing field\(s\) SubjectEntity, ObjectEntitiesID, ObjectEntities"),
])
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    root = write_lmkbc(tmp_path, val=VAL[:1])
    with (root / "val.jsonl").open("a") as handle:
        handle.write(line + "\n")
    with pytest.raises(DataError, match=message):
        load_lmkbc(root, "val")


def test_bad_template_line(tmp_path):
    root = write_lmkbc(tmp_path)
    path = root / "prompt_templates" / "masked_prompts.csv"
    text = path.read_text()
    path.write_text(text + "awardWonBy,{subject_entity} was given to {mask_token}.\n")
    with pytest.raises(DataError, match=r"masked_prompts\.csv:7: relation awardWonBy has a second template"):
        load_lmkbc(root, "val")
    path.write_text(text.replace("was won by {mask_token}.", "won."))
    with pytest.raises(DataError, match=r"masked_prompts\.csv:5: template '\[X\] won\.' lacks \[Y\]"):
        load_lmkbc(root, "val")


@pytest.mark.parametrize("extra,message", [
    ("awardWonBy,\"" + "x" * 200_000 + "\"\n", r"masked_prompts\.csv:7: malformed CSV \(field larger than field limit"),
    ("\"a\nb\",x\nawardWonBy,{subject_entity} was given to {mask_token}.\n",
     r"masked_prompts\.csv:9: relation awardWonBy has a second template"),
])
def test_malformed_template_csv_names_its_line(tmp_path, extra, message):
    root = write_lmkbc(tmp_path)
    path = root / "prompt_templates" / "masked_prompts.csv"
    path.write_text(path.read_text() + extra)
    with pytest.raises(DataError, match=message):
        load_lmkbc(root, "val")


def test_template_csv_skips_lines_of_spaces_and_names_a_folder_in_its_place(tmp_path):
    root = write_lmkbc(tmp_path)
    path = root / "prompt_templates" / "masked_prompts.csv"
    path.write_text(path.read_text().replace("\n", "\n   \n", 1))
    assert load_lmkbc(root, "val").facts
    path.unlink()
    path.mkdir()
    with pytest.raises(DataError, match=r"masked_prompts\.csv: the LM-KBC prompt template file is a directory"):
        load_lmkbc(root, "val")


def test_unknown_split(tmp_path):
    with pytest.raises(DataError, match="^--split test: not train, val or a readable split file$"):
        load_lmkbc(write_lmkbc(tmp_path), "test")


@pytest.fixture(scope="module")
def real(shared_data):
    return {split: load_lmkbc(shared_data / "lmkbc2024", split) for split in ("train", "val")}


def test_real_splits(real):
    counts = {s: collections.Counter(f.relation for f in c.facts) for s, c in real.items()}
    assert counts["val"] == {"countryLandBordersCountry": 68, "personHasCityOfDeath": 100,
                             "seriesHasNumberOfEpisodes": 100, "awardWonBy": 10, "companyTradesAtStockExchange": 100}
    assert sum(1 for f in real["val"].facts if not f.objects) == 97
    assert sum(len(f.objects) for f in real["val"].facts) == 1891
    assert len(read_rows(real["train"].files[0])) == 377


def test_real_freq_top1_matches_official_evaluation(real):
    """Freq over the train split (each relation's most frequent train object) on val; the official script
    gives the same all-relations row (macro-F1 0.0640)."""
    counts: dict[str, collections.Counter] = {}
    for fact in real["train"].facts:
        counts.setdefault(fact.relation, collections.Counter()).update(o.id for o in fact.objects)
    predicted = {f.uid: [counts[f.relation].most_common(1)[0][0]] for f in real["val"].facts}
    scores = score_facts(real["val"].facts, predicted)
    assert (sum(s.tp for s in scores), sum(s.n_pred for s in scores), sum(s.n_gold for s in scores)) == (28, 378, 1891)
    overall = summarize(scores)[ALL]
    assert overall["macro-p"] == pytest.approx(28 / 378, abs=1e-15)
    assert overall["macro-r"] == pytest.approx(0.3174288233812043, abs=1e-15)
    assert overall["macro-f1"] == pytest.approx(0.06402116402116403, abs=1e-15)
    assert overall["micro-r"] == pytest.approx(28 / 1891, abs=1e-15)
    assert overall["micro-f1"] == pytest.approx(0.024680475980608196, abs=1e-15)


def test_freq_shares_over_train(tmp_path):
    train = load_lmkbc(write_lmkbc(tmp_path), "train")
    shares = train_shares(train.facts)
    assert [(a.id, a.label, a.score) for a in shares["countryLandBordersCountry"]] == [
        ("Q1", "Bland", 1.0), ("Q101", "Aland", 1.0)]
    assert [(a.id, a.score) for a in shares["companyTradesAtStockExchange"]] == [("Q7", 1.0), ("Q8", 1.0)]


def test_freq_shares_on_real_train(real):
    shares = train_shares(real["train"].facts)
    top = shares["countryLandBordersCountry"][:2]
    # 67 train countries: 7 border China (Q148), 6 France (Q142)
    assert [(a.id, a.label, a.score) for a in top] == [
        ("Q148", "People's Republic of China", 7 / 67), ("Q142", "France", 6 / 67)]
    assert [(a.id, a.score) for a in shares["seriesHasNumberOfEpisodes"][:2]] == [("13", 0.07), ("6", 0.06)]


def test_tidy_rows_from_records(tmp_path):
    corpus = load_lmkbc(write_lmkbc(tmp_path), "val")
    records = [{"relation": f.relation, "subject_id": f.subject.id, "predicted": PREDICTED[f.uid],
                "gold": [o.id for o in f.objects], "gold_labels": list(f.labels)} for f in corpus.facts]
    rows = tidy_rows([pair_from_record(r) for r in records])
    by_key = {(r["group"], r["metric"]): (r["value"], r["n_facts"]) for r in rows}
    assert len(rows) == 4 * 8
    assert by_key["all", "macro-p"] == (0.75, 8)
    assert by_key["countryLandBordersCountry", "empty-preds"] == (2.0, 4)
    assert by_key["seriesHasNumberOfEpisodes", "micro-f1"][1] == 2
    assert {r["setting"] for r in rows} == {"raw"}


def test_records_score_ids_as_evaluate_py_and_label_matches_apart():
    """An answer left a label ("Big Board") matches nothing in the challenge's figures, as evaluate.py compares
    ids; kbc's label-matching rows count it, and say how many answers matched so."""
    from eval.set_metrics import label_rows

    records = [{"relation": "companyTradesAtStockExchange", "subject_id": "Q107", "predicted": ["Big Board"],
                "gold": ["Q6"], "gold_labels": ["Big Board"]},
               {"relation": "companyTradesAtStockExchange", "subject_id": "Q108", "predicted": ["Q7"],
                "gold": ["Q7", "Q8"], "gold_labels": ["Small Board", "Mid Board"]}]
    assert [pair_from_record(r).tp for r in records] == [0, 1]
    assert [pair_from_record(r, by_label=True).tp for r in records] == [1, 1]
    rows = {(r["group"], r["metric"]): (r["value"], r["n_facts"]) for r in label_rows(records)}
    assert rows == {(g, m): v for g in ("companyTradesAtStockExchange", "all") for m, v in (
        ("label-macro-p", (1.0, 2)), ("label-macro-r", (0.75, 2)), ("label-macro-f1", ((1 + 2 / 3) / 2, 2)),
        ("label-hits", (1.0, 2)))}
    by_id = {(r["group"], r["metric"]): r["value"] for r in tidy_rows([pair_from_record(r) for r in records])}
    assert (by_id["all", "macro-p"], by_id["all", "macro-r"]) == (0.5, 0.25)
    assert label_rows(records[1:]) == []  # no answer matched by label only: no rows of kbc's own


def test_macro_scores_do_not_depend_on_the_order_of_the_pairs():
    """A resumed run may hold its pairs in another order than an uninterrupted one (an attempt with another --limit
    asked some of them first): macro P, R and F1 are the same to the last bit."""
    import random

    rng = random.Random(3)
    pairs = []
    for i in range(60):
        golds = [f"Q{rng.randrange(40)}" for _ in range(rng.randint(1, 7))]
        pred = [f"Q{rng.randrange(40)}" for _ in range(rng.randint(1, 9))]
        pairs.append(score_pair(rng.choice(["P1", "P2", "P3"]), f"S{i}", pred, golds))
    first = summarize(pairs)
    for seed in range(5):
        shuffled = pairs[:]
        random.Random(seed).shuffle(shuffled)
        assert summarize(shuffled) == first
