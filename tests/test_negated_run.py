"""`kbc run negated`: negated and misprimed Google-RE through the runner, checked against the prediction files."""

from __future__ import annotations

import json
import math
import shutil
import zlib

import numpy as np
import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)
from scipy import stats

from bridge.experiments.negated import NegatedExperiment
from eval.negated import shared_top_spearman as negated_rho


def _rows(out, predictor):
    rows = json.loads((out / "summary.json").read_text())
    return {(r["group"], r["metric"]): r["value"] for r in rows if r["predictor"] == predictor and r["scope"] == "own"}


def test_negated_google_re(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    bert = tiny_models("bert-cased")
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-google_re", "--relations", "date_of_birth",
                            "place_of_death", "--predictors", "freq", f"bert={bert}", "--misprimes", "high_ranked",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    freq = _rows(out, "freq")
    # Freq answers every sentence of a relation alike: the negated query keeps its top answer, a right answer
    # stays right; a high-ranked prime is Freq's top answer for 1 of the 25 birth dates
    assert freq["date_of_birth", "p@1"] == 32.0  # 8 of 25
    assert freq["place_of_death", "p@1"] == pytest.approx(1500 / 88, abs=1e-12)  # 15 of 88
    assert (freq["all", "overlap"], freq["all", "p@1-drop"]) == (100.0, 0.0)
    # the negated query gets the very same scores: the two top-10 lists correlate perfectly
    assert (freq["date_of_birth", "spearman"], freq["place_of_death", "spearman"], freq["all", "spearman"]) == (
        1.0, 1.0, 1.0)
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert NegatedExperiment.spread in summary and "carry no standard error" not in summary
    assert "| negated-google_re | freq | 22 | 23 | 0.00 ± 0.00 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |" in (
        summary.split("## Misprimed, P@1 drop (% of facts right unprimed), own facts")[1])

    # every measure of both predictors, recomputed from the prediction files
    for name in ("freq", "bert"):
        records = {}
        for rel in ("date_of_birth", "place_of_death"):
            path = out / "predictions" / "negated-google_re" / name / f"{rel}.jsonl"
            records.update({r["uid"]: r for r in map(json.loads, path.read_text().splitlines())})
        facts = [r for r in records.values() if r["probe"] == "positive"]
        assert len(facts) == 25 + 88 and len(records) == 3 * (25 + 88)
        top = {uid: r["answers"][0][0] for uid, r in records.items()}
        got = _rows(out, name)
        counts = {(r["group"], r["metric"]): r["n_facts"] for r in json.loads((out / "summary.json").read_text())
                  if r["predictor"] == name and r["scope"] == "own"}
        for rel in ("date_of_birth", "place_of_death"):
            mine = [r for r in facts if r["relation"] == rel]
            same = sum(top[r["uid"]] == top[f"{r['uid']}:negated"] for r in mine)
            primed = sum(top[f"{r['uid']}:misprimed"].casefold() == records[f"{r['uid']}:misprimed"]["prime"].casefold()
                         for r in mine)
            assert got[rel, "overlap"] == pytest.approx(100 * same / len(mine), abs=1e-12)
            assert got[rel, "became-prime"] == pytest.approx(100 * primed / len(mine), abs=1e-12)
            rhos = [_shared_rho(r["answers"], records[f"{r['uid']}:negated"]["answers"]) for r in mine]
            rhos = [rho for rho in rhos if rho is not None]
            assert got[rel, "spearman"] == pytest.approx(sum(rhos) / len(rhos), abs=1e-12)
            assert counts[rel, "spearman"] == len(rhos)
        assert got["all", "overlap"] == pytest.approx(
            (got["date_of_birth", "overlap"] + got["place_of_death", "overlap"]) / 2, abs=1e-12)
        _facts_table_recomputes(out, name, got)
        _intervals_recompute(out, name, records)
    rows = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()  # scored again from the records: the very same intervals
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-google_re", "--relations", "date_of_birth",
                            "place_of_death", "--predictors", "freq", f"bert={bert}", "--misprimes", "high_ranked",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text()) == rows
    assert freq["date_of_birth", "became-prime"] == 4.0 and freq["place_of_death", "became-prime"] == 0.0
    assert records["google_re/place_of_death:4:misprimed"]["prompt"].endswith("? Honoré Tournély died in the city of "
                                                                             "[MASK] .")


def _intervals_recompute(out, name, records):
    """Each relation's and the Total's stderr and 95% interval of every measure, own scope, from the prediction
    files: per relation over the facts the measure is taken over (the 0/100 ones by the formula for a share), the
    Total over relations (sqrt of the summed squares / R; resamples within relations, averaged)."""
    cells: dict[str, dict[str, list[float]]] = {m: {} for m in NegatedExperiment.metrics}
    for uid in sorted(u for u, r in records.items() if r["probe"] == "positive"):
        fact, negated, primed = records[uid], records[f"{uid}:negated"], records[f"{uid}:misprimed"]
        rel, top = fact["relation"], fact["answers"][0][0]
        cells["p@1"].setdefault(rel, []).append(100.0 * (top == fact["gold"]))
        cells["overlap"].setdefault(rel, []).append(100.0 * (top == negated["answers"][0][0]))
        rho = _shared_rho(fact["answers"], negated["answers"])
        if rho is not None:
            cells["spearman"].setdefault(rel, []).append(rho)
        cells["became-prime"].setdefault(rel, []).append(
            100.0 * (primed["answers"][0][0].casefold() == primed["prime"].casefold()))
        if top == fact["gold"]:
            cells["p@1-drop"].setdefault(rel, []).append(100.0 * (primed["answers"][0][0] != fact["gold"]))
    got = {(r["group"], r["metric"]): r for r in json.loads((out / "summary.json").read_text())
           if r["predictor"] == name and r["scope"] == "own"}
    for metric, per_rel in cells.items():
        if not per_rel:  # bert gets no fact right: no P@1 drop, nor an interval of one
            assert not any(m == metric for _, m in got), (name, metric)
            continue
        errors, reps = [], []
        for rel, values in per_rel.items():
            n = len(values)
            if metric == "spearman":
                stderr = float(np.std(values, ddof=1)) / math.sqrt(n) if n > 1 else None
            else:
                share = sum(values) / 100.0 / n
                stderr = 100 * math.sqrt(share * (1 - share) / (n - 1)) if n > 1 else None
            errors.append(stderr or 0.0)
            reps.append(_replicates(values, f"negated-google_re/{rel}"))
            row = got[rel, metric]
            assert row["stderr"] == pytest.approx(stderr, abs=1e-12), (name, rel, metric)
            assert (row["ci_low"], row["ci_high"]) == (pytest.approx(_ci(reps[-1]), abs=1e-12) if n > 1
                                                       else (None, None)), (name, rel, metric)
        total = got["all", metric]
        assert total["stderr"] == pytest.approx(math.sqrt(sum(e * e for e in errors)) / len(errors), abs=1e-12)
        assert (total["ci_low"], total["ci_high"]) == pytest.approx(_ci(np.mean(reps, axis=0)), abs=1e-12)
        assert total["ci_low"] <= total["value"] <= total["ci_high"]


def _facts_table_recomputes(out, name, got):
    """`instances.parquet` has a row per fact with typed ranks, its top answer and whether it is right: P@1, overlap
    and p@1-drop per relation are means over its rows."""
    import pandas as pd

    facts = pd.read_parquet(out / "instances.parquet")
    facts = facts[facts.predictor == name]
    assert str(facts.rank_raw.dtype) == "Int64" and str(facts.correct_raw.dtype) == "boolean"
    answered = facts[facts["dropped"].isna()] if "dropped" in facts else facts
    assert len(answered) == 25 + 88
    for rel, rows in answered.groupby("relation"):
        assert got[rel, "p@1"] == pytest.approx(100 * rows.correct_raw.mean(), abs=1e-12)
        negated = rows[rows.top_negated.notna()]
        assert got[rel, "overlap"] == pytest.approx(100 * (negated.top1 == negated.top_negated).mean(), abs=1e-12)
        right = rows[rows.top_misprimed.notna() & (rows.top1 == rows.gold)]
        assert len(right) > 0 or (rel, "p@1-drop") not in got
        if len(right):
            assert got[rel, "p@1-drop"] == pytest.approx(100 * (right.top_misprimed != right.gold).mean(), abs=1e-12)


def _shared_rho(positive, negated):
    """Spearman's rho (scipy) over the labels both top lists hold; None where it is undefined."""
    pos, neg = {}, {}
    for answers, scores in ((positive, pos), (negated, neg)):
        for label, score, *_ in answers:
            scores.setdefault(label, score)
    shared = [k for k in pos if k in neg]
    if len(shared) < 2 or len({pos[k] for k in shared}) == 1 or len({neg[k] for k in shared}) == 1:
        return None
    return float(stats.spearmanr([pos[k] for k in shared], [neg[k] for k in shared]).statistic)


def test_spearman_row_over_the_shared_top_answers():
    """Hand-computed: fact 1 shares a, b, c (ranks 1 2 3 vs 3 1 2: rho = 1 - 6*6/24 = -0.5), fact 2 shares x, y
    in the same order (rho 1), fact 3 shares one answer only (no rho); R1's mean 0.25, R2 has none."""
    exp = NegatedExperiment()
    done = {
        "f1": {"uid": "f1", "relation": "R1", "probe": "positive", "rank_raw": 1, "gold": "a",
               "answers": [["a", -0.1, None], ["b", -0.2, None], ["c", -0.3, None], ["d", -0.4, None]]},
        "f1:negated": {"probe": "negated", "answers": [["b", -0.1, None], ["c", -0.2, None], ["a", -0.3, None],
                                                       ["e", -0.4, None]]},
        "f2": {"uid": "f2", "relation": "R1", "probe": "positive", "rank_raw": 2, "gold": "y",
               "answers": [["x", -1.0, None], ["y", -2.0, None]]},
        "f2:negated": {"probe": "negated", "answers": [["z", -0.5, None], ["x", -1.5, None], ["y", -2.5, None]]},
        "f3": {"uid": "f3", "relation": "R2", "probe": "positive", "rank_raw": 1, "gold": "p",
               "answers": [["p", -1.0, None], ["q", -2.0, None]]},
        "f3:negated": {"probe": "negated", "answers": [["p", -1.0, None], ["s", -2.0, None]]},
    }
    rows, _ = exp.summarize(list(exp.instances({"": done}).values()), {}, None)
    got = {(r["group"], r["metric"]): r["value"] for r in rows}
    n_facts = {(r["group"], r["metric"]): r["n_facts"] for r in rows}
    assert (n_facts["R1", "spearman"], n_facts["all", "spearman"], n_facts["all", "overlap"]) == (2, 2, 3)
    assert got["R1", "spearman"] == pytest.approx(0.25, abs=1e-12) and ("R2", "spearman") not in got
    assert got["all", "spearman"] == pytest.approx(0.25, abs=1e-12)
    assert (got["R1", "overlap"], got["R2", "overlap"], got["all", "overlap"]) == (0.0, 100.0, 50.0)


def _unit(uid, rel, gold, answers, negated, misprimed, prime):
    """A fact as `NegatedExperiment.instances` gives it (`negated` None: no negated query)."""
    unit = {"uid": uid, "relation": rel, "gold": gold, "answers": [[a, -float(i)] for i, a in enumerate(answers)],
            "rank_raw": answers.index(gold) + 1 if gold in answers else None, "top_misprimed": misprimed,
            "prime": prime}
    if negated is not None:
        unit |= {"top_negated": negated[0], "answers_negated": [[a, -float(i)] for i, a in enumerate(negated)]}
    return unit


# R1: P@1 100 0 100 100, overlap 100 0 100 0, rho 0.5 -1 (none) 0.5, became-prime 0 100 0 0, P@1 drop over the
# three right: 0 100 0; R2: P@1 100 0, overlap 100 (b2 has no negated query), rho 1, became-prime 0 100, drop 0
UNITS = [
    _unit("r1:1", "R1", "a", ["a", "b", "c"], ["a", "c", "b"], "a", "Kabul"),
    _unit("r1:2", "R1", "b", ["a", "b"], ["b", "a"], "kabul", "Kabul"),
    _unit("r1:3", "R1", "c", ["c", "d"], ["c", "e"], "x", "Oslo"),
    _unit("r1:4", "R1", "d", ["d", "a", "b"], ["a", "d", "b"], "d", "Paris"),
    _unit("r2:1", "R2", "p", ["p", "q"], ["p", "q"], "p", "Rome"),
    _unit("r2:2", "R2", "q", ["p", "q"], None, "Rome", "Rome"),
]


def _replicates(values, key, seed=0, n_boot=1000):
    """The seeded resamples of one cell's facts (docs/lama.md): its generator `default_rng([seed, crc32(key)])`; a
    cell of two distinct scores draws how many of its facts score the higher one, Binomial(n, share), else n fact
    indices with replacement per resample; a cell of one score is that score in every resample."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    n, low, high = len(values), values.min(), values.max()
    if low == high:
        return np.full(n_boot, low)
    if len(set(values.tolist())) == 2:
        drawn = rng.binomial(n, float((values == high).sum()) / n, size=n_boot)
        return (low * (n - drawn) + high * drawn) / n
    return values[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)


def _ci(replicates):
    low, high = np.percentile(replicates, [2.5, 97.5])
    return float(low), float(high)


def test_intervals_of_every_negated_measure_by_hand():
    """Standard errors of each relation's per-fact mean by formula (a 0/100 mean of n facts, k of them 100:
    100 sqrt(p (1 - p) / (n - 1)), p = k / n), the Total's sqrt(sum of squares) / R (a one-fact cell: a constant,
    no stderr of its own); intervals recomputed with numpy from the same seeded resamples, within relations."""
    exp = NegatedExperiment()
    rows, _ = exp.summarize(UNITS, {}, None)
    found = exp.intervals(UNITS, {}, 1000, 0, "c")
    se = {(g, m): found["raw", m][g].stderr for m in exp.metrics for g in found["raw", m]}
    one = 100 * math.sqrt(0.75 * 0.25 / 3)  # 25.0: 3 of 4
    two = 100 * math.sqrt(0.5 * 0.5 / 1)  # 50.0: 1 of 2
    assert se == pytest.approx({
        ("R1", "p@1"): one, ("R2", "p@1"): two, ("all", "p@1"): math.hypot(one, two) / 2,
        ("R1", "overlap"): 100 * math.sqrt(0.25 / 3), ("R2", "overlap"): None,
        ("all", "overlap"): 100 * math.sqrt(0.25 / 3) / 2,
        ("R1", "spearman"): 0.5, ("R2", "spearman"): None, ("all", "spearman"): 0.25,  # sd(0.5, -1, 0.5) / sqrt 3
        ("R1", "became-prime"): 100 * math.sqrt(0.25 * 0.75 / 3), ("R2", "became-prime"): two,
        ("all", "became-prime"): math.hypot(100 * math.sqrt(0.25 * 0.75 / 3), two) / 2,
        ("R1", "p@1-drop"): 100 / 3, ("R2", "p@1-drop"): None, ("all", "p@1-drop"): 100 / 6,
    }, abs=1e-12)
    cells = {"p@1": {"R1": [100, 0, 100, 100], "R2": [100, 0]}, "overlap": {"R1": [100, 0, 100, 0], "R2": [100]},
             "spearman": {"R1": [0.5, -1.0, 0.5], "R2": [1.0]}, "became-prime": {"R1": [0, 100, 0, 0], "R2": [0, 100]},
             "p@1-drop": {"R1": [0, 100, 0], "R2": [0]}}
    values = {(r["group"], r["metric"]): r["value"] for r in rows}
    for metric, per_rel in cells.items():
        reps = {rel: _replicates(v, f"c/{rel}") for rel, v in per_rel.items()}
        assert (found["raw", metric]["all"].ci_low, found["raw", metric]["all"].ci_high) == pytest.approx(
            _ci(np.mean([reps["R1"], reps["R2"]], axis=0)), abs=1e-12), metric
        for rel, v in per_rel.items():  # a one-fact cell has no interval of its own
            cell = found["raw", metric][rel]
            assert (cell.ci_low, cell.ci_high) == (pytest.approx(_ci(reps[rel]), abs=1e-12) if len(v) > 1
                                                   else (None, None)), (rel, metric)
        for group in ("R1", "all"):
            cell = found["raw", metric][group]
            assert cell.ci_low <= values[group, metric] <= cell.ci_high and cell.ci_low < cell.ci_high, (group, metric)
    # the facts in any order draw the same; no resamples: the same standard errors, no interval; another seed: other
    # resamples (recomputed likewise), the same standard errors
    assert exp.intervals(UNITS[::-1], {}, 1000, 0, "c") == found
    bare = exp.intervals(UNITS, {}, 0, 0, "c")
    assert {(g, m): c.stderr for m in exp.metrics for g, c in bare["raw", m].items()} == se
    assert {c.ci_low for m in exp.metrics for c in bare["raw", m].values()} == {None}
    other = exp.intervals(UNITS, {}, 1000, 1, "c")
    assert other["raw", "p@1"]["all"].stderr == se["all", "p@1"]
    reps = [_replicates(cells["spearman"][rel], f"c/{rel}", seed=1) for rel in ("R1", "R2")]
    assert (other["raw", "spearman"]["all"].ci_low, other["raw", "spearman"]["all"].ci_high) == pytest.approx(
        _ci(np.mean(reps, axis=0)), abs=1e-12)


def test_a_fact_rho_is_worked_out_once(monkeypatch):
    """A rho is a scipy call a fact, most of what scoring costs: the rows, the intervals and the shared scope of a
    predictor's facts read one rho a fact, and give the same rows as rhos worked out afresh."""
    import bridge.experiments.negated as negated

    exp = NegatedExperiment()
    fresh = exp.summarize(UNITS, {}, None), exp.intervals(UNITS, {}, 100, 0, "c")
    calls = []
    monkeypatch.setattr(negated, "shared_top_spearman", lambda *a: calls.append(a) or negated_rho(*a))
    exp = NegatedExperiment()
    assert (exp.summarize(UNITS, {}, None), exp.intervals(UNITS, {}, 100, 0, "c")) == fresh
    assert [u["uid"] for u in UNITS if exp.scored_on(u, "spearman")] == ["r1:1", "r1:2", "r1:4", "r2:1"]
    assert len(calls) == 5  # the five facts with a negated answer, once each


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "lama", "--corpus", "negated-trex", "--predictors", "freq"],
     "error: --corpus negated-trex is negated/misprimed LAMA: run it with `kbc run negated`\n"),
    (["run", "negated", "--corpus", "google_re", "--predictors", "freq"],
     "error: --corpus google_re: `kbc run negated` asks negated-trex, negated-google_re, negated-conceptnet, "
     "negated-squad only\n"),
    # LAMA's P27, which the negated T-REx data lacks: not a typo of P527
    (["run", "negated", "--corpus", "negated-trex", "--relations", "P27", "--predictors", "freq"],
     "error: --relations P27: corpus negated-trex has no data for this LAMA relation: the negated and misprimed "
     "T-REx files hold 40 other relations (`kbc data stats --corpus negated-trex` lists them)\n"),
    # no default corpus: the error names those it takes
    (["run", "negated", "--predictors", "freq"],
     "error: missing --corpus (on the command line or in --config); choose one or more of negated-trex, "
     "negated-google_re, negated-conceptnet, negated-squad\n"),
])
def test_refusals(lama_dir, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc([*argv, "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert (code, err) == (2, message)


def test_the_api_names_the_corpora_too(lama_dir, tmp_path, monkeypatch):
    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    with pytest.raises(kbcompare.ConfigError) as caught:
        kbcompare.run("negated", predictors=["freq"], data_dir=str(lama_dir), out=str(tmp_path / "run"))
    assert str(caught.value) == ("missing --corpus (on the command line or in --config); choose one or more of "
                                 "negated-trex, negated-google_re, negated-conceptnet, negated-squad")


def test_loader_names_the_misprime_variant_and_gold_says_why_it_drops(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P159", "P19",
                            "--predictors", "freq", "gold", "--misprimes", "high_ranked", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert ("  trex/P159 positive facts (from random/P159_random.jsonl, whatever --misprimes says): read 336, kept "
            "336, dropped 0; 336 facts have no negated sentence (it equals the positive one)\n") in err
    folder = lama_dir.parent / "negated_misprimed_lama" / "TREx" / "high_ranked"
    assert err.count(f"negated-trex: negated and misprimed sentences from {folder}/\n") == 1
    dropped = json.loads((out / "dropped.json").read_text())
    reason = ("a negated or misprimed probe is a sentence, not a (subject, relation) lookup: the gold KB answers "
              "no probes")
    assert [(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped] == [
        ("gold", "P159", reason, 336), ("gold", "P19", reason, 210)]


def test_each_kb_predictor_names_itself_in_why_it_drops_every_probe(lama_dir, tmp_path, monkeypatch, capsys):
    """`gold`, `kb` and `kb-inferred` answer no negated or misprimed probe: each drop reason, in the run's log and in
    dropped.json, names the KB that predictor is, never another's."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--limit", "4",
                            "--predictors", "gold", "kb", "kb-inferred", "freq", "--data-dir", str(lama_dir),
                            "--store", str(tmp_path / "store"), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    probe = "a negated or misprimed probe is a sentence, not a (subject, relation) lookup: "
    kbs = {"gold": "the gold KB", "kb": "the KB (its gold graphs)",
           "kb-inferred": "the inferred KB (its gold graphs and the facts its axioms derive from them)"}
    dropped = json.loads((out / "dropped.json").read_text())
    assert [(d["predictor"], d["reason"], d["n"]) for d in dropped] == [
        (name, f"{probe}{kb} answers no probes", 4) for name, kb in kbs.items()]
    for name, kb in kbs.items():
        assert (f"negated-trex / {name}: dropped 4 facts (12 queries) it cannot answer ({probe}{kb} answers no "
                "probes: 4); per relation: P19 4\n") in err


def test_dropped_facts_count_once_not_per_query(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36", "P101",
                            "--predictors", f"bert={tiny_models('bert-uncased')}", "--misprimes", "high_ranked",
                            "--limit", "10", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    config = json.loads((out / "config.json").read_text())
    counts = [(d["relation"], d["n"]) for d in dropped]
    assert counts == [("P19", 3), ("P36", 3)]  # one per fact, though each fact is three dropped queries
    assert "dropped 6 facts (18 queries) it cannot answer (object is not in the candidate vocabulary: 6); per " \
        "relation: P19 3, P36 3" in err
    why = "object is not in the candidate vocabulary"
    assert config["predictor_configs"]["negated-trex"]["bert"]["dropped_facts"] == {"P19": {why: 3}, "P36": {why: 3}}
    assert f"| negated-trex | bert | P19 | {why} | 3 |" in (out / "summary.md").read_text()


def test_a_linked_data_dir_reads_the_negated_data_beside_the_link(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for variant in ("random", "high_ranked"):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / variant, copy / variant)
    lines = (copy / "high_ranked" / "P19.jsonl").read_text().splitlines(keepends=True)
    lines[4] = '{"broken": \n'
    (copy / "high_ranked" / "P19.jsonl").write_text("".join(lines))
    argv = ["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--predictors", "freq", "--misprimes",
            "high_ranked", "--data-dir", str(tmp_path / "lama"), "--limit", "5", "--quiet"]
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "bad")], capsys)
    bad = f"error: {copy}/high_ranked/P19.jsonl:5: malformed JSON (Expecting value at the end of the line)"
    assert (code, err.splitlines()[-1]) == (2, bad)
    shutil.copy(shared_data / "negated_misprimed_lama" / "TREx" / "high_ranked" / "P19.jsonl", copy / "high_ranked")
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "good")], capsys)
    assert code == 0, err
    assert f"negated-trex: negated and misprimed sentences from {copy}/high_ranked/\n" in err


def test_shared_rows_are_over_the_facts_every_predictor_answered_on_that_metric(tiny_models, lama_dir, tmp_path,  # noqa: F811
                                                                                 monkeypatch, capsys):
    """Tiny T5 gives one negated query no answer and a defined rho for 1 fact; GPT-2 has all 5: each shared row of a
    metric is over the facts both have it for (overlap 4, Spearman 1), the same count for both, not each one's own."""
    from lm_fixtures import tiny_t5_dir

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--predictors",
                            f"gpt2={tiny_models('gpt2')}", f"t5={tiny_t5_dir(tmp_path / 'models')}", "--relations",
                            "P19", "--limit", "5", "--data-dir", str(lama_dir), "--out", str(out), "--bootstrap", "50",
                            "--quiet"], capsys)
    assert code == 0, err
    rows = {(r["predictor"], r["scope"], r["metric"]): (r["n_facts"], round(r["value"], 4))
            for r in json.loads((out / "summary.json").read_text()) if r["group"] == "all"
            and r["metric"] in NegatedExperiment.metrics}
    assert rows == {
        ("gpt2", "own", "p@1"): (5, 0.0), ("gpt2", "own", "overlap"): (5, 0.0), ("gpt2", "own", "spearman"): (5, 0.28),
        ("gpt2", "own", "became-prime"): (5, 0.0),
        ("gpt2", "shared", "p@1"): (5, 0.0), ("gpt2", "shared", "overlap"): (4, 0.0),
        ("gpt2", "shared", "spearman"): (1, 0.5), ("gpt2", "shared", "became-prime"): (4, 0.0),
        ("t5", "own", "p@1"): (5, 0.0), ("t5", "own", "overlap"): (4, 75.0), ("t5", "own", "spearman"): (1, 1.0),
        ("t5", "own", "became-prime"): (4, 0.0),
        ("t5", "shared", "p@1"): (5, 0.0), ("t5", "shared", "overlap"): (4, 75.0),
        ("t5", "shared", "spearman"): (1, 1.0), ("t5", "shared", "became-prime"): (4, 0.0)}
    board = run_kbc(["leaderboard", str(out), "--metric", "overlap", "--format", "json"], capsys)
    assert board[0] == 0, board[2]
    # a negated query that keeps the positive one's top answer is a failure: the least overlap ranks first
    assert [(r["rank"], r["predictor"], r["n_facts"], r["value"]) for r in json.loads(board[1])["rows"]] == [
        (1, "gpt2", 4, 0.0), (2, "t5", 4, 75.0)]
    board = run_kbc(["leaderboard", str(out), "--metric", "overlap"], capsys)
    assert board[0] == 0 and "negated-trex, overlap (raw, shared facts; lower is better)" in board[1]
    assert run_kbc(["leaderboard", str(out), "--metric", "answer_space"], capsys)[1:] == (
        "", "error: --metric answer_space counts the candidates it ranks, not how well it answers: nothing to rank "
            "by; rank by --metric overlap\n")


def test_the_sample_is_on_the_total_line_and_a_relation_without_negations_is_said_to_have_none(
        lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--predictors", "freq", "--relations", "P19",
                            "P159", "--limit", "3", "--data-dir", str(lama_dir), "--out", str(out)], capsys)
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == ("negated-trex: 2 relations, read 546, kept 546, dropped 0; asking a sample of 6 (--limit 3, "
                        "seed 0)")
    assert lines[1].endswith("336 facts have no negated sentence (it equals the positive one)")
    assert ("- `-` under P159 for every predictor: no fact of it has an answered negated sentence (the overlap is "
            "taken over those facts; a relation whose data has no negated sentence, as T-REx P159 whose negations "
            "equal the positive sentence, has none).") in (out / "summary.md").read_text().splitlines()
    assert "answered none" not in (out / "summary.md").read_text()


@pytest.mark.parametrize(("variant", "file"), [("high_ranked", "P19.jsonl"), ("random", "P19_random.jsonl")])
def test_an_edited_misprime_file_is_other_data_for_its_relation(shared_data, tmp_path, monkeypatch, capsys, variant,
                                                                 file):
    """The negated and misprimed sentences come from the `--misprimes` folder: an edit there refuses a rerun into
    the directory of the old sentences, as an edited fact does, rather than reusing records asked otherwise."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for folder in dict.fromkeys(("random", variant)):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / folder, copy / folder)
    out = tmp_path / "run"
    argv = ["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36", "--predictors", "freq",
            "--misprimes", variant, "--data-dir", str(tmp_path / "lama"), "--limit", "5", "--out", str(out),
            "--quiet"]
    assert run_kbc(argv, capsys)[0] == 0
    assert run_kbc(argv, capsys)[0] == 0  # unchanged: resumed
    path = copy / variant / file
    text = path.read_text(encoding="utf-8")
    assert text.count("Christina Rossetti was not born in") == 1
    path.write_text(text.replace("Christina Rossetti was not born in", "Christina Rossetti was never born in"),
                    encoding="utf-8")
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds negated-trex results of other data for P19 (the data files changed); use another --out")


def test_facts_without_a_low_ranked_misprime_are_asked_without_one(shared_data, tmp_path, monkeypatch, capsys):
    """Google-RE's `low_ranked` files lack 14 of the 499 facts (1 of date_of_birth's 25): the facts are read from
    `random/`, so those are still asked, positive and negated, and left out of the two measures of the prime only."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-google_re", "--relations", "date_of_birth",
                            "--predictors", "freq", "--misprimes", "low_ranked", "--data-dir",
                            str(shared_data / "lama"), "--out", str(out)], capsys)
    assert code == 0, err
    assert ("negated-google_re: 1 fact(s) have no low_ranked misprime (absent from those files): asked the positive "
            "and negated sentences only, left out of became-prime and p@1-drop\n") in err
    rows = json.loads((out / "summary.json").read_text())
    counts = {r["metric"]: r["n_facts"] for r in rows if r["scope"] == "own" and r["group"] == "date_of_birth"}
    assert (counts["p@1"], counts["overlap"], counts["became-prime"]) == (25, 25, 24)


def test_a_fact_edited_in_the_misprime_files_alone_is_named_by_file_and_line(shared_data, tmp_path, monkeypatch,
                                                                             capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for folder in ("random", "high_ranked"):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / folder, copy / folder)
    path = copy / "high_ranked" / "P19.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[2])
    lines[2] = json.dumps({**row, "obj_label": row["obj_label"] + "x"}) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--predictors",
                            "freq", "--misprimes", "high_ranked", "--data-dir", str(tmp_path / "lama"), "--out",
                            str(tmp_path / "run"), "--quiet"], capsys)
    uid = f"trex/P19:{row['uuid']}"
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {path}:3: fact {uid} differs between the random and the high_ranked files (its subject, object or "
           "sentence): the two are not of one release (`kbc data list` names a changed file)")
