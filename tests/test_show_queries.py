"""`kbc show` on runs that ask a fact several queries: negated (three probes), coherency (two rounds of two steps)
and evidence (one query per sentence), each a real small run of Freq, the gold KB and a tiny BERT, checked against
its prediction files, its summary.json and evidence.parquet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_kbc, run_kbc_captured
from lm_fixtures import tiny_models  # noqa: F401  (fixture)


def _records(run: Path, corpus: str, predictor: str, stage: str = "") -> dict[str, dict]:
    folder = run / "predictions" / corpus / predictor / stage
    return {r["uid"]: r for path in sorted(folder.glob("*.jsonl"))
            for r in map(json.loads, path.read_text().splitlines())}


def _own(run: Path) -> dict[tuple[str, str, str], float]:
    return {(r["predictor"], r["group"], r["metric"]): r["value"]
            for r in json.loads((run / "summary.json").read_text()) if r["scope"] == "own"}


def _shown(run: Path, capsys, *argv: str) -> dict:
    code, out, err = run_kbc(["show", str(run), *argv, "--json"], capsys)
    assert (code, err) == (0, ""), err
    (fact,) = json.loads(out)["facts"]
    return fact


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ")
    return line


@pytest.fixture(scope="module")
def built(tmp_path_factory, lama_dir, tiny_models):  # noqa: F811
    """Each run made once for the module, on first use: negated, coherency, and an evidence run of a LAMA run."""
    root = tmp_path_factory.mktemp("show_queries")
    model = tiny_models("bert-cased")
    common = ["--data-dir", str(lama_dir), "--quiet", "--predictors", "freq", f"bert={model}"]
    argvs = {
        "negated": ["run", "negated", "--corpus", "negated-google_re", "--relations", "date_of_birth",
                    "place_of_death", "--limit", "3", *common],
        "coherency": ["run", "coherency", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "3",
                      "--store", str(root / "store"), *common, "gold"],
        "lama": ["run", "lama", "--corpus", "trex", "--relations", "P463", "--limit", "4", "--store",
                 str(root / "store"), *common],
    }
    made: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in made:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("KBC_CACHE", str(root / "cache"))
                code, _, err = run_kbc_captured([*argvs[name], "--out", str(root / name)])
                assert code == 0, err
                if name == "lama":
                    code, _, err = run_kbc_captured(["analyze", "evidence", str(root / name), "--relations", "P463",
                                                     "--limit", "4", "--max-evidences", "3", "--store",
                                                     str(root / "store"), "--quiet"])
                    assert code == 0, err
            made[name] = root / name
        return made[name]

    return run


def test_negated_probes_are_the_records_and_the_overlap_is_the_summarys(built, capsys):
    """Every fact, found by the uid of one of its probes: each probe's prompt, ranks and answers are its record's,
    and the per-fact overlap, rho and became-prime average to summary.json's rows of each relation."""
    run = built("negated")
    own = _own(run)
    for name in ("freq", "bert"):
        records = _records(run, "negated-google_re", name)
        facts = [uid for uid, r in records.items() if r["probe"] == "positive"]
        assert len(facts) == 6 and len(records) == 18
        scored: dict[str, dict[str, list]] = {}
        for uid in facts:
            fact = _shown(run, capsys, "--uid", f"{uid}:misprimed")
            assert (fact["uid"], fact["gold"]) == (uid, records[uid]["gold"])
            entry = fact["predictors"][name]
            assert list(entry["probes"]) == ["positive", "negated", "misprimed"]
            for probe, shown in entry["probes"].items():
                record = records[uid if probe == "positive" else f"{uid}:{probe}"]
                assert record["probe"] == probe
                assert {k: shown[k] for k in ("uid", "prompt", "rank_raw", "rank_filtered")} == {
                    k: record[k] for k in ("uid", "prompt", "rank_raw", "rank_filtered")}
                assert shown.get("rank_exact_raw") == record.get("rank_exact_raw")
                assert [[a["label"], a["score"], a["id"]] for a in shown["answers"]] == record["answers"]
            assert entry["probes"]["misprimed"]["prime"] == records[f"{uid}:misprimed"]["prime"]
            tops = [records[u]["answers"][0][0] for u in (uid, f"{uid}:negated", f"{uid}:misprimed")]
            assert entry["overlap"] == (tops[0] == tops[1])
            per = scored.setdefault(records[uid]["relation"], {"overlap": [], "spearman": [], "became-prime": []})
            per["overlap"].append(100.0 * entry["overlap"])
            if entry["spearman"] is not None:
                per["spearman"].append(entry["spearman"])
            per["became-prime"].append(100.0 * entry["became_prime"])
        for rel, per in scored.items():
            for metric, values in per.items():
                assert sum(values) / len(values) == pytest.approx(own[name, rel, metric], abs=1e-12), (name, rel)
    # the tiny BERT's negated probe keeps the positive top answer for some facts, not all: both verdicts are shown
    assert {own["bert", rel, "overlap"] for rel in ("date_of_birth", "place_of_death")} - {0.0, 100.0}


def test_negated_text_and_subject_lookup(built, capsys):
    run = built("negated")
    records = _records(run, "negated-google_re", "bert")
    uid = next(u for u, r in records.items() if r["probe"] == "positive")
    positive, negated, misprimed = (records[u] for u in (uid, f"{uid}:negated", f"{uid}:misprimed"))
    code, out, err = run_kbc(["show", str(run), "--uid", uid], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:4] == [f"negated-google_re / {positive['relation']} / uid {uid}",
                         f"  subject:     {positive['subject']}", f"  gold:        {positive['gold']}",
                         "  other valid: -"]
    start = next(i for i, line in enumerate(lines) if line.startswith("  bert  "))
    same = positive["answers"][0][0] == negated["answers"][0][0]
    assert lines[start].startswith(f"  bert  negated top-1 the same as the positive's: {'yes' if same else 'no'} "
                                   "(Spearman ")
    pad = " " * 19

    def ranks(r: dict) -> str:
        return (f"{pad}gold not among the answers; exact raw {r['rank_exact_raw']}, filtered "
                f"{r['rank_exact_filtered']} (score: log-prob)") if r["rank_raw"] is None else \
            f"{pad}gold rank raw {r['rank_raw']}, filtered {r['rank_filtered']}; exact raw {r['rank_exact_raw']}, " \
            f"filtered {r['rank_exact_filtered']} (score: log-prob)"

    assert lines[start + 1:start + 4] == [f"        positive:  {positive['prompt']}", ranks(positive),
                                          f"{pad}1. {positive['answers'][0][0]}  {positive['answers'][0][1]:.4g}"]
    assert lines[start + 9:start + 12] == [f"        negated:   {negated['prompt']}", ranks(negated),
                                           f"{pad}1. {negated['answers'][0][0]}  {negated['answers'][0][1]:.4g}"]
    assert lines[start + 17] == f"        misprimed: {misprimed['prompt']}  (prime: {misprimed['prime']})"
    by_subject = run_kbc(["show", str(run), "--subject", positive["subject"], "--relation", positive["relation"]],
                         capsys)
    assert by_subject == (0, out, "")
    line = _one_error(*run_kbc(["show", str(run), "--uid", "nobody:negated"], capsys))
    assert line.startswith("error: no fact with uid 'nobody:negated' in ")
    line = _one_error(*run_kbc(["show", str(run), "--subject", "x", "--relation", "date_of_brith"], capsys))
    assert line == (f"error: {run} has no relation 'date_of_brith'; did you mean 'date_of_birth'? (known: "
                    "date_of_birth, place_of_death)")


def test_coherency_rounds_are_the_records_and_coherent_is_the_summarys(built, capsys):
    """Both rounds of every fact, found by a step's uid: prompts, answers and the answer asked back from are the
    records', c1, c2 and coherent the recorded verdicts, which average to summary.json's rows; a fact the instance
    rule leaves out says so for every predictor, one the tiny BERT cannot take is dropped for it alone."""
    run = built("coherency")
    own = _own(run)
    seen = set()
    for name in ("freq", "gold", "bert"):
        first, second = (_records(run, "trex", name, stage) for stage in ("first", "second"))
        answered = sorted({r["fact_uid"] for r in first.values() if "dropped" not in r})
        per: dict[str, dict[str, list[float]]] = {}
        for fact_uid in answered:
            fact = _shown(run, capsys, "--uid", f"{fact_uid}:coherency:r2s2")
            assert fact["uid"] == fact_uid
            entry = fact["predictors"][name]
            assert [r["round"] for r in entry["rounds"]] == [1, 2]
            for r in entry["rounds"]:
                n = r["round"]
                one, two = first[f"{fact_uid}:coherency:r{n}s1"], second.get(f"{fact_uid}:coherency:r{n}s2")
                assert (r["first"]["prompt"], r["first"]["truth"], r[f"c{n}"]) == (one["prompt"], one["truth"],
                                                                                   one["correct"])
                assert [[a["label"], a["score"], a["id"]] for a in r["first"]["answers"]] == one["answers"]
                if two is None:
                    assert (r["second"], r["coherent"]) == (None, False)
                    continue
                assert r["second"]["asked_back_from"] == two["first_answer"] == one["answers"][0][0]
                assert {k: r["second"][k] for k in ("prompt", "answer", "correct", "excluded")} == {
                    "prompt": two["prompt"], "answer": two["second_answer"], "correct": two["second_correct"],
                    "excluded": two["excluded"]}
                assert r["coherent"] == two["coherent"]
                rel = per.setdefault(one["relation"], {"coherency": [], "c1": [], "c2": []})
                rel["coherency"].append(100.0 * r["coherent"])
                rel[f"c{n}"].append(100.0 * r[f"c{n}"])
            seen.add(name)
        for rel, values in per.items():
            for metric, scores in values.items():
                assert sum(scores) / len(scores) == pytest.approx(own[name, rel, metric], abs=1e-12), (name, rel)
    assert seen == {"freq", "gold", "bert"}
    gold = _records(run, "trex", "gold", "first")
    left = next(r for r in gold.values() if "dropped" in r)
    fact_uid = left["uid"].split(":coherency:")[0]
    shown = _shown(run, capsys, "--uid", f"{fact_uid}:r2")
    assert shown["predictors"] == {name: {"status": "left out", "reason": left["dropped"]}
                                   for name in ("freq", "bert", "gold")}
    bert = _records(run, "trex", "bert", "first")
    dropped = next(r for r in bert.values() if "dropped" in r and r["uid"] in gold and "dropped" not in gold[r["uid"]])
    shown = _shown(run, capsys, "--subject", dropped["subject_id"], "--relation", dropped["relation"])
    assert shown["predictors"]["bert"] == {"status": "dropped", "reason": dropped["dropped"]}
    assert shown["predictors"]["gold"]["status"] == "answered"


def test_coherency_text(built, capsys):
    run = built("coherency")
    first, second = (_records(run, "trex", "gold", stage) for stage in ("first", "second"))
    one = next(r for r in first.values() if "dropped" not in r and r["round"] == 1)
    two = second[one["uid"].replace("r1s1", "r1s2")]
    code, out, err = run_kbc(["show", str(run), "--uid", one["fact_uid"]], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:3] == [f"trex / {one['relation']} / uid {one['fact_uid']}",
                         f"  subject:     {one['subject']} ({one['subject_id']})",
                         f"  gold:        {one['gold']} ({one['gold_id']})"]
    start = lines.index(f"  gold  round 1: c1 {'yes' if one['correct'] else 'no'}, coherent "
                        f"{'yes' if two['coherent'] else 'no'}; round 2: c2 yes, coherent yes")
    pad = " " * 17
    excluded = f"; {len(two['excluded'])} excluded as true of {two['first_answer']}" if two["excluded"] else ""
    answers = 1 + min(len(one["answers"]), 5) + (len(one["answers"]) > 5)
    assert lines[start + 1:start + 3] == [f"        round 1  asks the object: {one['prompt']}",
                                          f"{pad}truth {one['truth']}, right: yes"]
    assert lines[start + 2 + answers:start + 4 + answers] == [
        f"{pad}asks back the subject from {two['first_answer']}: {two['prompt']}",
        f"{pad}answer {two['second_answer']} (truth {two['second_truth']}, right: yes; the first answer again: no"
        f"{excluded})"]


def test_evidence_sentences_are_the_records_and_the_ranks_evidence_parquets(built, capsys):
    """Every fact of the evidence run, found by one sentence's uid: each sentence's prompt and ranks are its record's,
    and the rank shown per sentence is the one evidence.parquet holds."""
    import pandas as pd

    run = built("lama")
    evidence = run / "analysis" / "evidence-run"
    frame = pd.read_parquet(run / "analysis" / "evidence.parquet")
    ranks = {(r.predictor, r.uid, r.evidence): None if pd.isna(r.rank) else int(r.rank) for r in frame.itertuples()}
    assert ranks
    for name in ("freq", "bert"):
        records = _records(evidence, "trex", name)
        for fact_uid in sorted({r["fact_uid"] for r in records.values()}):
            fact = _shown(evidence, capsys, "--uid", f"{fact_uid}:e1")
            entry = fact["predictors"][name]
            asked = [r for r in records.values() if r["fact_uid"] == fact_uid]
            assert [s["uid"] for s in entry["sentences"]] == [f"{fact_uid}:e{i}" for i in range(len(asked))]
            assert fact["n_evidences"] == len(asked) == asked[0]["n_evidences"]
            for sentence in entry["sentences"]:
                record = records[sentence["uid"]]
                assert (sentence["prompt"], sentence["rank_raw"], sentence.get("rank_exact_raw")) == (
                    record["prompt"], record["rank_raw"], record.get("rank_exact_raw"))
                assert sentence["rank"] == ranks[name, fact_uid, sentence["evidence"]]
    fact_uid = next(iter(records.values()))["fact_uid"]
    code, out, err = run_kbc(["show", str(evidence), "--uid", fact_uid], capsys)
    assert (code, err) == (0, "")
    per = ", ".join(f"e{i} {ranks['bert', fact_uid, i]}" for i in range(records[f"{fact_uid}:e0"]["n_evidences"]))
    assert f"  bert  gold rank per sentence: {per}" in out.splitlines()
    assert f"        e0   {records[fact_uid + ':e0']['prompt']}" in out.splitlines()
