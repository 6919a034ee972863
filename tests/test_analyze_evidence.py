"""`kbc analyze evidence` (LAMA Fig. 4): each evidence sentence as the prompt, on a tiny BERT with the real
vocabulary; one rank is checked against the predictor asked directly."""

from __future__ import annotations

import json

import pandas as pd
from analyze_support import check_pristine, copy_run, run_kbc, small_run  # noqa: F401


def test_evidence_ranks_per_sentence(small_run, lama_dir, tmp_path, capsys):  # noqa: F811
    from bridge.experiments.evidence import evidence_templates
    from bridge.predictors.lm import make_masked
    from bridge.predictors.registry import PredictorContext
    from eval.corpora import load_corpus
    from eval.types import Query

    run, model = copy_run(small_run, tmp_path), small_run.model  # the command writes RUN/analysis/
    code, out, err = run_kbc(["analyze", "evidence", str(run), "--predictors", "freq", "bert", "--relations", "P463",
                              "--limit", "6", "--max-evidences", "4", "--store", str(small_run.store), "--quiet"],
                             capsys)
    assert code == 0, err
    frame = pd.read_parquet(run / "analysis" / "evidence.parquet")
    assert list(frame.columns) == ["corpus", "predictor", "relation", "uid", "evidence", "rank", "n_evidences"]
    bert = frame[frame["predictor"] == "bert"]
    assert bert["uid"].nunique() >= 2 and (bert.groupby("uid").size() >= 2).all()
    assert (bert["n_evidences"] <= 4).all() and bert["rank"].notna().all()
    freq = frame[frame["predictor"] == "freq"]
    assert (freq.groupby("uid")["rank"].nunique(dropna=False) == 1).all()  # a KB ignores the wording
    summary = json.loads((run / "analysis" / "evidence_summary.json").read_text())
    row = next(r for r in summary if r["predictor"] == "freq")
    assert row["mean_rank_std"] == 0.0 and row["n_facts"] == freq["uid"].nunique()
    assert "median rank" in out

    # one rank, asked directly
    corpus = load_corpus("trex", lama_dir, ["P463"])
    first = bert.iloc[0]
    fact = next(f for f in corpus.facts if f.uid == first["uid"])
    template = evidence_templates(fact, 4)[int(first["evidence"])]
    ctx = PredictorContext(corpus, None, tmp_path / "cache", lama_dir, options={"cache": "off"}, progress=False)
    predictor = make_masked(str(model), ctx)
    query = Query(f"{fact.uid}:e0", fact.uid, "trex", "P463", fact.subject, "object", template,
                  targets=(fact.object.label,))
    pred = predictor.predict([query], 100)[0]
    assert pred.target_ranks[fact.object.label] == first["rank"]


def test_the_shared_run_is_left_as_built(small_run):  # noqa: F811
    """Run after the tests above: none wrote into the run every analysis test shares."""
    check_pristine(small_run)


def test_a_corpus_without_evidence_sentences_says_so(lama_dir, tmp_path, capsys):
    """SQuAD's clozes have no T-REx sentences: an empty table alone would read as a result."""
    run = tmp_path / "squad"
    code, _, err = run_kbc(["run", "lama", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(lama_dir),
                            "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["analyze", "evidence", str(run), "--limit", "5", "--store", str(tmp_path / "store"),
                              "--quiet"], capsys)
    assert code == 0, err
    assert json.loads((run / "analysis" / "evidence_summary.json").read_text()) == []
    assert ("note: squad: no fact asked has 2 or more T-REx evidence sentences with its object masked once, so it has "
            "no rank variation to show (LAMA Fig. 4 is over T-REx)") in err
