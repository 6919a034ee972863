"""`kbc run lmkbc`: the staged LM-KBC 2024 val split through the runner, set rules as predictor options, the
challenge's submission files; the figures are the ones the challenge's evaluate.py prints for those files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)


def _all_rows(out, predictor):
    rows = json.loads((out / "summary.json").read_text())
    return {r["metric"]: r["value"] for r in rows
            if r["predictor"] == predictor and r["scope"] == "own" and r["group"] == "all"}


def _records(out, predictor: str) -> dict[str, dict]:
    return {r["uid"]: r for path in sorted((out / "predictions" / "lmkbc2024" / predictor).glob("*.jsonl"))
            for r in map(json.loads, path.read_text().splitlines())}


def test_gold_and_freq_scores(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, stdout, err = run_kbc(["run", "lmkbc", "--predictors", "gold", "freq", "tuned=freq", "every=freq", "--set",
                                 "freq.set=top:1", "--set", "tuned.set=threshold-tuned", "--data-dir", str(lama_dir),
                                 "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert "lmkbc2024: 5 relations, read 378, kept 378, dropped 0" in err
    gold = _all_rows(out, "gold")
    assert gold["macro-f1"] == 1.0 and gold["micro-f1"] == 1.0 and gold["empty-preds"] == 97.0
    # Freq's most frequent train object of each relation, for every val subject
    freq = _all_rows(out, "freq")
    assert freq["macro-f1"] == pytest.approx(0.06402116402116403, abs=1e-15)
    assert freq["micro-p"] == pytest.approx(28 / 378, abs=1e-15)
    assert freq["avg-preds"] == 1.0
    # thresholds tuned on train: every val personHasCityOfDeath answer is empty (0.45 of them are)
    tuned = _all_rows(out, "tuned")
    assert tuned["macro-f1"] == pytest.approx(0.2708901146614042, abs=1e-15)
    assert tuned["macro-p"] == pytest.approx(0.7208994708994709, abs=1e-15)
    assert (tuned["avg-preds"], tuned["empty-preds"]) == (pytest.approx(280 / 378, abs=1e-15), 268.0)
    # the per-pair table holds each pair's P, R and F1: their means are the summary's macro scores
    import pandas as pd

    facts = pd.read_parquet(out / "instances.parquet")
    mine = facts[facts.predictor == "tuned"]
    assert len(mine) == 378 and mine.f1.notna().all()
    assert (mine.p.mean(), mine.r.mean(), mine.f1.mean()) == pytest.approx(
        (tuned["macro-p"], tuned["macro-r"], tuned["macro-f1"]), abs=1e-12)
    per_relation = {(r["group"], r["metric"]): r["value"] for r in json.loads((out / "summary.json").read_text())
                    if r["predictor"] == "tuned" and r["scope"] == "own"}
    for rel, rows in mine.groupby("relation"):
        assert rows.f1.mean() == pytest.approx(per_relation[rel, "macro-f1"], abs=1e-12)
    records = [json.loads(line) for line in
               (out / "predictions" / "lmkbc2024" / "tuned" / "personHasCityOfDeath.jsonl").read_text().splitlines()]
    assert {r["threshold"] for r in records} == {0.03} and all(r["predicted"] == [] for r in records)
    # a predictor asked after it, with no rule, records no threshold of its (nor does the report say one)
    every = [json.loads(line) for line in
             (out / "predictions" / "lmkbc2024" / "every" / "personHasCityOfDeath.jsonl").read_text().splitlines()]
    assert {r["set_rule"] for r in every} == {"all answers"} and not any("threshold" in r for r in every)
    # answer space: the mean of the relations' train objects Freq ranks, (114 + 45 + 60 + 689 + 26) / 5
    # printed in the challenge's terms: pairs counted, three decimals (the Total is summary.md's `all (over pairs)`)
    assert stdout.splitlines()[:2] == [
        "LM-KBC 2024 macro F1 (Total: over all pairs, as evaluate.py), setting raw, shared pairs",
        "| corpus | predictor | answer space (mean) | #pairs | awardWonBy (n=10) | "
        "companyTradesAtStockExchange (n=100) | countryLandBordersCountry (n=68) | personHasCityOfDeath (n=100) | "
        "seriesHasNumberOfEpisodes (n=100) | Total | Total 95% CI |"]
    assert "| lmkbc2024 | freq | 186.8 | 378 | 0.000 ± 0.000 | 0.166 ± 0.036 | 0.039 ± 0.018 | 0.010 ± 0.010 | " \
           "0.040 ± 0.020 | 0.064 ± 0.012 | [0.042, 0.088] |" in stdout
    assert "| lmkbc2024 | tuned | 186.8 | 378 | 0.006 ± 0.005 | 0.350 ± 0.048 | 0.250 ± 0.053 | 0.450 ± 0.050 | " \
           "0.053 ± 0.018 | 0.271 ± 0.023 | [0.225, 0.311] |" in stdout
    # the macro over pairs is a mean of pair scores: its stderr is theirs, recomputed here from the records
    from eval.set_metrics import pair_from_record

    pairs = [pair_from_record(json.loads(line)) for path in sorted((out / "predictions" / "lmkbc2024" / "tuned").glob(
        "*.jsonl")) for line in path.read_text().splitlines()]
    row = next(r for r in json.loads((out / "summary.json").read_text()) if r["predictor"] == "tuned"
               and r["scope"] == "own" and r["group"] == "all" and r["metric"] == "macro-f1")
    f1 = np.array([p.f1 for p in pairs])
    assert len(f1) == 378 and row["stderr"] == pytest.approx(f1.std(ddof=1) / np.sqrt(len(f1)), rel=1e-9)
    assert row["ci_low"] < row["value"] < row["ci_high"]

    # the challenge's submission format, one line per val pair
    lines = [json.loads(x) for x in (out / "submission" / "freq.jsonl").read_text().splitlines()]
    assert len(lines) == 378
    assert lines[0] == {"SubjectEntityID": "Q115", "SubjectEntity": "Ethiopia", "Relation": "countryLandBordersCountry",
                        "ObjectEntitiesID": ["Q148"]}

    # a rerun asks nothing and scores the same
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "gold", "freq", "tuned=freq", "--set", "freq.set=top:1",
                            "--set", "tuned.set=threshold-tuned", "--data-dir", str(lama_dir), "--out", str(out)],
                           capsys)
    assert code == 0 and _all_rows(out, "tuned") == tuned
    # only threshold tuning asks the train split: no line for a stage that asks a predictor nothing
    assert [line for line in err.splitlines() if "queries done" in line] == [
        "lmkbc2024 / gold: all 378 queries done, skipped", "lmkbc2024 / freq: all 378 queries done, skipped",
        "lmkbc2024 / tuned / train: all 377 queries done, skipped", "lmkbc2024 / tuned: all 378 queries done, skipped"]

    # commands that read LAMA-style records refuse a set run instead of showing ranks it has not
    # kbc show prints one pair: its gold set, each predictor's set with the challenge's scores, rule and ranking
    code, shown, err = run_kbc(["show", str(out), "--subject", "Ethiopia", "--relation", "countryLandBordersCountry"],
                               capsys)
    assert code == 0, err
    assert shown.splitlines()[:5] == [
        "lmkbc2024 / countryLandBordersCountry / uid countryLandBordersCountry:Q115", "  subject:     Ethiopia (Q115)",
        "  prompt:      Ethiopia shares a land border with [MASK].",
        "  gold:        Djibouti (Q977), Eritrea (Q986), Kenya (Q114), Somalia (Q1045), South Sudan (Q958), "
        "Sudan (Q1049)",
        "  gold labels: Djibouti, Eritrea, Kenya, Somalia, South Sudan, Sudan"]
    assert "  gold   P 1.000  R 1.000  F1 1.000; set rule all answers" in shown
    assert "  freq   P 0.000  R 0.000  F1 0.000; set rule top:1" in shown
    # each id with the label the data ties to it, as the gold and the explorer show them
    assert "predicted: People's Republic of China (Q148)\n" in shown
    assert "1. People's Republic of China (Q148)  0.1045\n" in shown and "5. Germany (Q183)  0.0597\n" in shown
    assert "Djibouti (Q977) <- gold" in shown  # the gold KB's own set
    code, shown, err = run_kbc(["show", str(out), "--uid", "countryLandBordersCountry:Q115", "--json"], capsys)
    fact = json.loads(shown)["facts"][0]
    entry = fact["predictors"]["tuned"]
    assert code == 0 and entry["predicted"] == [] and (entry["p"], entry["r"], entry["f1"]) == (1.0, 0.0, 0.0)
    assert fact["labels"]["Q148"] == "People's Republic of China" and fact["labels"]["Q977"] == "Djibouti"
    assert "Q40" not in fact["labels"]  # Austria: the data ties no label to it, so it is shown as its id
    assert fact["predictors"]["freq"]["ranked"][0] == ["Q148", 7 / 67]  # records keep ids
    # compare pairs the two predictors' F1 pair by pair: means as the summaries', the sign test as scipy's
    from scipy.stats import binomtest

    code, shown, err = run_kbc(["compare", str(out), "tuned", "freq", "--json", "--bootstrap", "500"], capsys)
    assert code == 0, err
    found = json.loads(shown)["corpora"]["lmkbc2024"]
    summary = {(r["predictor"], r["group"]): r["value"] for r in json.loads((out / "summary.json").read_text())
               if r["scope"] == "own" and r["metric"] == "macro-f1"}
    assert found["test"] == "sign" and found["total"] == "pooled" and json.loads(shown)["metric"] == "F1"
    overall = found["overall"]
    assert overall["n"] == overall["queries"] == 378
    assert sum(overall[k] for k in ("both", "only_a", "only_b", "neither")) == 378
    # F1 as a fraction, as the summaries and the leaderboard print it
    assert found["scale"] == "fraction"
    assert overall["p1_a"] == pytest.approx(tuned["macro-f1"], abs=1e-9)
    assert overall["p1_b"] == pytest.approx(freq["macro-f1"], abs=1e-9)
    assert found["difference"] == pytest.approx(tuned["macro-f1"] - freq["macro-f1"], abs=1e-9)
    assert overall["p_value"] == binomtest(overall["only_a"], overall["only_a"] + overall["only_b"]).pvalue
    assert found["ci"][0] < found["difference"] < found["ci"][1]
    for rel, counts in found["relations"].items():
        assert counts["p1_a"] == pytest.approx(summary[("tuned", rel)], abs=1e-9), rel
        assert counts["p1_b"] == pytest.approx(summary[("freq", rel)], abs=1e-9), rel
    freq_records = _records(out, "freq")
    only_b = {uid for uid, r in _records(out, "tuned").items()
              if pair_from_record(r).f1 < pair_from_record(freq_records[uid]).f1}
    assert len(only_b) == overall["only_b"]
    code, listed, err = run_kbc(["compare", str(out), "tuned", "freq", "--list", "only-b"], capsys)
    assert code == 0, err
    assert listed.splitlines()[0] == "corpus\trelation\tuid\tsubject\tgold\ttuned answers\tfreq answers"
    rows = [line.split("\t") for line in listed.splitlines()[1:]]
    assert {row[2] for row in rows} == only_b
    # ids as `label (id)` where the data ties a label to the id, as `kbc show` prints them
    from eval.lmkbc import known_labels

    labels = known_labels(str(lama_dir))

    def named(ids):
        return ", ".join(f"{labels[x]} ({x})" if labels.get(x) else x for x in ids)

    assert all(row[4] == named(freq_records[row[2]]["gold"]) and row[6] == named(freq_records[row[2]]["predicted"])
               for row in rows)
    assert any("(Q" in row[4] for row in rows) and any("(Q" in row[6] for row in rows)
    code, table, err = run_kbc(["compare", str(out), "tuned", "freq"], capsys)
    assert code == 0 and "p sign" in table and "exact sign test of those leads" in table

    # kbc report, which compare points to, shows the set metrics per relation and over all pairs
    code, _, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert "Skipped" not in md and "## LM-KBC set answers (shared pairs)" in md
    assert "| lmkbc2024 | tuned | all | 0.721 | 0.278 | 0.271 | 0.043 | 0.006 | 0.011 | 0.741 | 268 |" in md
    assert md.count("| lmkbc2024 | freq | ") == 6  # five relations and all
    # --delta draws one predictor's macro F1 minus another's per relation, over the pairs both answered
    code, _, err = run_kbc(["report", str(out), "--delta", "freq", "tuned", "--out", str(tmp_path / "delta")], capsys)
    assert code == 0, err
    md = (tmp_path / "delta" / "report.md").read_text(encoding="utf-8")
    f1 = {(r["predictor"], r["group"]): r for r in json.loads((out / "summary.json").read_text())
          if (r["metric"], r["scope"], r["setting"]) == ("macro-f1", "shared", "raw")}
    from test_report import md_table

    table = md_table(md, "macro-f1 deltas against freq")
    assert table[0] == ["corpus", "relation", "#pairs", "freq", "tuned − freq"]
    assert sorted(table[1:]) == sorted(
        ["lmkbc2024", rel, str(f1[("freq", rel)]["n_facts"]), f"{f1[('freq', rel)]['value']:.2f}",
         f"{f1[('tuned', rel)]['value'] - f1[('freq', rel)]['value']:+.2f}"]
        for (name, rel) in f1 if name == "freq" and rel != "all")

    # beside a run of two relations, whose freq cuts by another rule: each run's rules and what its Total is over
    other = tmp_path / "two"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:2", "--relations",
                            "awardWonBy", "countryLandBordersCountry", "--data-dir", str(lama_dir), "--out",
                            str(other), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out), "--compare", str(other), "--out", str(tmp_path / "both")], capsys)
    assert code == 0, err
    md = (tmp_path / "both" / "report.md").read_text(encoding="utf-8")
    assert "`run:freq`: set rule `top:1`." in md and "`two:freq`: set rule `top:2`." in md, md
    assert ("lmkbc2024: the runs hold different relations, so each run's Total is over its own: run over awardWonBy, "
            "companyTradesAtStockExchange, countryLandBordersCountry, personHasCityOfDeath, seriesHasNumberOfEpisodes; "
            "two over awardWonBy, countryLandBordersCountry") in md
    # the leaderboard prints fractions to three decimals, as the challenge's table: two would tie 0.261 and 0.260
    code, board, err = run_kbc(["leaderboard", str(out)], capsys)
    assert code == 0 and f"| {tuned['macro-f1']:.3f} ± " in board, board

    # summary.md describes no uncertainty its rows lack, and says what its Total averages over
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# LM-KBC 2024 (set-valued answers; Total: over every (subject, relation) pair, not a "
                              "mean over relations)\n")
    assert "Cells: value ± standard error" in summary and "| 0.271 ± 0.023 | [0.225, 0.311] |" in summary
    # it opens with the challenge's own table: evaluate.py's columns per relation and over all pairs
    first = summary.split("\n## ")[1]
    assert first.startswith("LM-KBC evaluation table, shared pairs\n")
    assert ("| corpus | predictor | relation | #pairs | macro-p | macro-r | macro-f1 | micro-p | micro-r | micro-f1 | "
            "avg. #preds | #empty preds |") in first
    assert ("| lmkbc2024 | tuned | all (over pairs) | 378 | 0.721 | 0.278 | 0.271 | 0.043 | 0.006 | 0.011 | 0.741 | "
            "268 |") in first
    assert ("| lmkbc2024 | freq | companyTradesAtStockExchange | 100 | 0.180 | 0.511 | 0.166 | 0.180 | 0.228 | 0.201 | "
            "1.000 | 0 |") in first
    assert first.count("| lmkbc2024 | gold | ") == 6 and "| gold | all (over pairs) | 378 | 1.000 |" in first


def test_masked_lm_set_rules(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    """A random tiny BERT never names a city of death: top:2 answers two objects per subject and gets none right;
    the threshold tuned on train predicts nothing, right exactly for the 45 val subjects with no city."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = tiny_models("bert-cased")
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "personHasCityOfDeath", "--predictors", f"top={bert}",
                            f"tuned={bert}", f"every={bert}", "--set", "top.set=top:2", "--set",
                            "tuned.set=threshold-tuned", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    warned = [line for line in err.splitlines() if "no set rule" in line]
    assert len(warned) == 1 and "every: no set rule (--set every.set=threshold:X" in warned[0], err
    assert _all_rows(out, "every")["avg-preds"] > 2.0
    top = _all_rows(out, "top")
    assert (top["avg-preds"], top["empty-preds"], top["micro-p"], top["macro-p"]) == (2.0, 0.0, 0.0, 0.0)
    assert top["macro-r"] == 0.45  # an empty gold has recall 1 whatever is predicted
    tuned = _all_rows(out, "tuned")
    assert (tuned["macro-f1"], tuned["empty-preds"], tuned["macro-p"]) == (0.45, 100.0, 1.0)
    train = out / "predictions" / "lmkbc2024" / "tuned" / "train" / "personHasCityOfDeath.jsonl"
    assert len(train.read_text().splitlines()) == 100
    assert not (out / "predictions" / "lmkbc2024" / "top" / "train").exists()


def test_predictor_without_set_answers_is_refused(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "re-naive", "retrieval", "--data-dir",
                            str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert (code, err) == (2, "error: predictor retrieval (retrieval) gives no set answers; `kbc run lmkbc` takes "
                              "gold, freq, re-naive, re-oracle and language models (here: freq, re-naive)\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "lama", "--corpus", "lmkbc2024", "--predictors", "freq"],
     "error: --corpus lmkbc2024 has set-valued answers (zero, one or many objects): run it with `kbc run lmkbc`\n"),
    (["run", "lmkbc", "--corpus", "trex", "--predictors", "freq"],
     "error: --corpus trex: `kbc run lmkbc` asks lmkbc2024 only\n"),
    (["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:0"],
     "error: --set freq.set=top:0: expected one of threshold:X, top:K, threshold-tuned (X a probability in [0, 1], "
     "K a whole number >= 1)\n"),
    (["run", "lama", "--corpus", "google_re", "--predictors", "freq", "--set", "set=top:1"],
     "error: --set freq.set: a set rule applies to set-valued answers (`kbc run lmkbc`, `kbc run lama --answers set`) "
     "only\n"),
    (["run", "lmkbc", "--predictors", "freq", "--prompts", "pararel"],
     "error: --prompts does not apply to `kbc run lmkbc`: each relation is asked with the challenge's own template\n"),
])
def test_refusals(lama_dir, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc([*argv, "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert (code, err) == (2, message)
    assert not (tmp_path / "run" / "summary.json").exists()


def test_split_without_objects_writes_a_complete_submission_and_scores_nothing(lama_dir, tmp_path, monkeypatch,
                                                                                capsys):
    """The challenge's test file has no objects: every pair is answered and submitted, nothing is scored; the
    answers are those the same predictor gives on val, whose file it was made from. `--limit` writes its part
    under `.partial.jsonl`, never under the submission name."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    val = (lama_dir.parent / "lmkbc2024" / "val.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in val if line.strip()]
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({k: r[k] for k in ("SubjectEntityID", "SubjectEntity", "Relation")}) + "\n"
                            for r in rows))
    base = ["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:1", "--data-dir", str(lama_dir), "--quiet"]
    code, stdout, err = run_kbc([*base, "--split", str(test), "--out", str(tmp_path / "test")], capsys)
    assert code == 0, err
    assert stdout.strip() == ("nothing scored: the split asked has no gold objects; the answers are in "
                              f"{tmp_path / 'test'}")
    assert json.loads((tmp_path / "test" / "summary.json").read_text()) == []
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "val")], capsys)
    assert code == 0, err
    submitted = (tmp_path / "test" / "submission" / "freq.jsonl").read_text().splitlines()
    assert len(submitted) == len(rows) == 378
    assert submitted == (tmp_path / "val" / "submission" / "freq.jsonl").read_text().splitlines()
    code, _, err = run_kbc([*base, "--limit", "3", "--out", str(tmp_path / "part")], capsys)
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "part" / "submission").iterdir()) == ["freq.partial.jsonl"]
    assert len((tmp_path / "part" / "submission" / "freq.partial.jsonl").read_text().splitlines()) == 15
    code, _, err = run_kbc([*base, "--split", "train", "--out", str(tmp_path / "val")], capsys)
    last = err.splitlines()[-1]  # a rerun into the val directory with another split is refused
    assert code == 2 and last.startswith(f"error: {tmp_path / 'val'} holds results made with") and \
        last.endswith('other settings: split not recorded, now train; use another --out or the same settings')
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(test.read_text().splitlines()[0] + "\n" + val[1] + "\n")
    code, _, err = run_kbc([*base, "--split", str(mixed), "--out", str(tmp_path / "mixed")], capsys)
    assert (code, err) == (2, f"error: {mixed}:2: ObjectEntitiesID here, but the file's first line has no objects; "
                              "a split is either with objects on every line or without them on every line\n")


def test_the_load_line_counts_the_facts_of_other_relations(lama_dir, tmp_path, monkeypatch, capsys):
    """The split file holds every relation: those `--relations` leaves out are read, and said, so the line adds up."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "countryLandBordersCountry", "personHasCityOfDeath",
                            "--predictors", "gold", "--data-dir", str(lama_dir), "--out", str(tmp_path / "run"),
                            "--quiet"], capsys)
    assert code == 0, err
    assert err.splitlines()[0] == "lmkbc2024: 2 relations, read 378, 210 of other relations, kept 168, dropped 0"


def test_without_a_rule_every_answer_counts_whatever_the_depth(lama_dir, tmp_path, monkeypatch, capsys):
    """Freq's set without a rule is every object of the relation's train pairs, at any --depth; --depth bounds
    only the `ranked` list a record keeps."""
    from eval.lmkbc import load_lmkbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    relations = ["awardWonBy", "countryLandBordersCountry"]
    train = load_lmkbc(lama_dir, "train", relations).facts
    objects = {rel: {o.id or o.label for f in train if f.relation == rel for o in f.objects} for rel in relations}
    assert {rel: len(v) for rel, v in objects.items()} == {"awardWonBy": 689, "countryLandBordersCountry": 114}
    summaries = {}
    for depth in (100, 1000):
        out = tmp_path / f"d{depth}"
        code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--relations", *relations, "--limit", "3",
                                "--depth", str(depth), "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                               capsys)
        assert code == 0, err
        for rel in relations:
            records = [json.loads(line) for line in
                       (out / "predictions" / "lmkbc2024" / "freq" / f"{rel}.jsonl").read_text().splitlines()]
            assert len(records) == 3
            for record in records:
                assert record["set_rule"] == "all answers"
                assert len(record["predicted"]) == len(objects[rel]) and set(record["predicted"]) == objects[rel]
                assert len(record["ranked"]) == min(depth, len(objects[rel]))
        summaries[depth] = [{k: v for k, v in r.items() if k not in ("ci_low", "ci_high")}
                            for r in json.loads((out / "summary.json").read_text())]
    assert summaries[100] == summaries[1000]
    f1 = next(r["value"] for r in summaries[100] if r["group"] == "all" and r["metric"] == "macro-f1"
              and r["scope"] == "own")
    from eval.set_metrics import pair_from_record

    pairs = [pair_from_record(json.loads(line)) for path in (tmp_path / "d100" / "predictions" / "lmkbc2024" /
                                                              "freq").glob("*.jsonl")
             for line in path.read_text().splitlines()]
    assert f1 == pytest.approx(sum(p.f1 for p in pairs) / 6, abs=1e-15)

    # a directory whose sets were cut at the depth (config.json without the mark) is refused, never mixed
    config_path = tmp_path / "d100" / "config.json"
    config = json.loads(config_path.read_text())
    del config["predictor_specs"]["freq"]["sets"]
    config_path.write_text(json.dumps(config))
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--relations", *relations, "--limit", "3",
                            "--data-dir", str(lama_dir), "--out", str(tmp_path / "d100")], capsys)
    refused = (
        f"error: {tmp_path / 'd100'}: predictor 'freq' has sets there from an earlier kbc version, which cut a set "
        "without a rule at the top 100 answers; every answer it has now counts, whatever --depth: use another --out "
        "to score it so")
    assert code == 2 and err.strip().splitlines()[-1] == refused
    # older still, from before Freq dropped SQuAD (it holds no SQuAD answers): refused for its sets all the same
    config["predictor_specs"]["freq"].pop("unasked")
    config_path.write_text(json.dumps(config))
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--relations", *relations, "--limit", "3",
                            "--data-dir", str(lama_dir), "--out", str(tmp_path / "d100")], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == refused


def test_the_leaderboard_tells_set_rules_of_one_spec_apart(lama_dir, tmp_path, monkeypatch, capsys):
    """Freq cut by top:1, by a threshold tuned on train, and not cut: three rows of spec `freq`, told apart by
    the rule after it."""
    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "countryLandBordersCountry", "--predictors", "freq",
                            "tuned=freq", "every=freq", "--set", "freq.set=top:1", "--set",
                            "tuned.set=threshold-tuned", "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
                            "--bootstrap", "0"], capsys)
    assert code == 0, err
    board = kbcompare.leaderboard(kbcompare.load_run(out)).set_index("predictor")
    assert board["spec"].to_dict() == {"freq": "freq (set=top:1)", "tuned": "freq (set=threshold-tuned)",
                                       "every": "freq (all answers)"}


def test_show_without_the_data_shows_ids_and_says_why(lama_dir, tmp_path, monkeypatch, capsys):
    """`kbc show` reads labels from the run's data folder; where it is gone, objects are shown by id, with a note."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "lmkbc2024").symlink_to((lama_dir.parent / "lmkbc2024").resolve(), target_is_directory=True)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:1", "--relations",
                            "countryLandBordersCountry", "--data-dir", str(data), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    argv = ["show", str(out), "--subject", "Ethiopia", "--relation", "countryLandBordersCountry"]
    code, shown, err = run_kbc(argv, capsys)
    assert code == 0 and "predicted: People's Republic of China (Q148)\n" in shown, err
    (data / "lmkbc2024").unlink()
    monkeypatch.setenv("KBC_DATA", str(data))
    code, shown, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "predicted: Q148\n" in shown and "1. Q148  0.1045\n" in shown
    assert "  gold:        Q977, Q986, Q114, Q1045, Q958, Q1049\n" in shown
    assert err.startswith("note: LM-KBC objects are shown by id only: ")
