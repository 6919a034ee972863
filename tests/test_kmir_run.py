"""`kbc run kmir` on the shared runner: KBs with and without derived facts, tiny LMs, resuming, bad axioms."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import lm_fixtures
import pytest
from cli_support import run_kbc

from bridge.experiments.kmir import pick_choice
from bridge.run.summaries import collect
from eval.types import Answer, Prediction

tiny_models = lm_fixtures.tiny_models


def test_kmir_run(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    # P47 is symmetric; P36 is the inverse of P1376: both give predicate-reasoning questions
    argv = ["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
            "--questions-per-relation", "4", "--predictors", "freq", "kb", "kb-inferred", "random",
            f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "| triple_completion |" in stdout and "statement_checking" in stdout
    rows = json.loads((out / "summary.json").read_text())
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r for r in rows}
    # the symbolic side derives the facts the reasoning questions ask; the gold graphs alone do not hold them
    assert get[("kb-inferred", "own", "predicate_reasoning", "f1")]["value"] == 100.0
    assert get[("kb", "own", "predicate_reasoning", "f1")]["value"] == 0.0
    for name in ("kb", "kb-inferred"):
        for kind in ("triple_completion", "statement_checking"):
            assert get[(name, "own", kind, "f1")]["value"] == 100.0
    groups = {"triple_completion", "entity_distinction", "statement_checking", "predicate_reasoning", "all"}
    for name in ("freq", "kb", "kb-inferred", "random", "gpt2"):
        kinds = groups - {"statement_checking"} if name == "freq" else groups
        assert {g for (p, s, g, m) in get if p == name and s == "own" and m == "f1" and not g.startswith("P")} == kinds
        # and per relation: the relation each question asks (P1376 for the reasoning questions over P36)
        assert {g for (p, s, g, m) in get if p == name and s == "own" and m == "f1" and g.startswith("P")} <= {
            "P36", "P47", "P1376"}
        assert {m for (p, s, g, m) in get if p == name and g == "all"} >= {"f1", "em", "answered", "robust_all"}
    bert = [json.loads(line) for p in (out / "predictions/trex/bert").glob("*.jsonl")
            for line in p.read_text().splitlines()]
    assert {r["uid"].split(":")[0] for r in bert} >= {"tc", "sc+", "sc-", "ed", "pr"}
    # a question whose choices are not all tokens of the masked LM is dropped, with its reason, never guessed
    dropped = json.loads((out / "dropped.json").read_text())
    reasons = Counter()
    for d in dropped:
        reasons[(d["predictor"], d["reason"])] += d["n"]
    assert reasons == {("bert", "a choice is not a single token of the model"): 19,
                       ("freq", "ranks none of the choices"): 36}

    code, _, err = run_kbc(argv, capsys)  # a rerun asks nothing again
    assert code == 0, err
    assert err.count("queries done, skipped") == 6

    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix owl: <http://www.w3.org/2002/07/owl#> .\nthis is not turtle\n")
    code, _, err = run_kbc([*argv[:-3], "--out", str(tmp_path / "bad"), "--axioms", str(bad), "--quiet"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "bad.ttl" in lines[0]

    # choice questions are ranked over the whole vocabulary (BERT: "no" is not in LAMA's common vocabulary) or
    # by the sentence of each choice (GPT-2): every statement check is answered, against a 50% chance level
    for name in ("bert", "gpt2", "random"):
        assert get[(name, "own", "statement_checking", "answered")]["value"] == 100.0
    assert get[("gpt2", "own", "all", "answered")]["value"] == 100.0
    assert get[("bert", "own", "all", "answered")]["value"] == pytest.approx(100 * 33 / 52)
    assert get[("bert", "own", "statement_checking", "chance")]["value"] == 50.0
    assert ("bert", "shared", "statement_checking", "chance") not in get  # freq ranks no yes/no choice
    assert get[("gpt2", "own", "entity_distinction", "chance")]["value"] == 25.0
    assert get[("gpt2", "own", "predicate_reasoning", "chance")]["value"] == 25.0
    # random: seeded, so its scores are exact; 8 of the 22 yes/no questions right
    assert get[("random", "own", "statement_checking", "em")]["value"] == pytest.approx(100 * 8 / 22)
    gpt2 = [json.loads(line) for p in (out / "predictions/trex/gpt2").glob("*.jsonl")
            for line in p.read_text().splitlines()]
    no = [r for r in gpt2 if r["uid"].startswith("sc-:")]
    assert len(no) == 11 and all(r["answer"] in ("yes", "no") for r in no)

    # the shared scope is the questions every predictor scored answered (bert's 33 less the 22 yes/no questions freq
    # ranks no choice of), and `answered` agrees with it
    summary = (out / "summary.md").read_text()
    assert ("the questions every predictor scored on that metric answered (trex: 11 answered by all of freq, kb, "
            "kb-inferred, random, bert, gpt2)") in summary
    assert get[("gpt2", "shared", "all", "answered")]["value"] == pytest.approx(100 * 11 / 52)
    assert ("gpt2", "shared", "entity_distinction", "f1") not in get  # bert answered none of them
    for heading in ("## answered, shared facts", "## robust_all, own facts", "## chance, shared facts",
                    "Total: the mean over every question, not over kinds or relations"):
        assert heading in summary

    # kbc compare judges each question as the summaries do (EM), and its total is theirs
    code, stdout, err = run_kbc(["compare", str(out), "kb", "gpt2", "--json"], capsys)
    assert code == 0, err
    trex = json.loads(stdout)["corpora"]["trex"]
    assert trex["total"] == "pooled" and trex["overall"]["n"] == 52
    assert set(trex["relations"]) == {"triple_completion", "entity_distinction", "statement_checking",
                                      "predicate_reasoning"}
    assert trex["macro_p1_a"] == pytest.approx(100 * 44 / 52) == get[("kb", "own", "all", "em")]["value"]
    assert trex["macro_p1_b"] == pytest.approx(get[("gpt2", "own", "all", "em")]["value"])
    assert trex["relations"]["statement_checking"]["p1_a"] == 100.0

    # the report says how its total averages, as summary.md does
    code, stdout, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    report = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert "Token F1 (%) per kind (mean over the questions of each kind; `all`: over every question)" in report
    assert "macro over relations" not in report


def test_default_axioms_over_a_corpus_without_their_relations_is_refused_before_any_file(lama_dir, tmp_path, capsys,
                                                                                            monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "bear", "--predictors", "freq", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert (code, err) == (2, "error: kmir on bear: the default axioms (kb/axioms.ttl, over T-REx's relations) name "
                              "P47, P530, P279, P361, P527, P17, which bear does not hold; pass --axioms FILE with "
                              "axioms over bear's relations, or ask trex\n")
    assert not out.exists()


def test_pick_choice():
    choices = ("Paris", "New York City", "yes")
    # exact ranks of every choice win
    assert pick_choice(Prediction("q", (), target_ranks={"Paris": 3, "New York City": 1, "yes": 9}), choices) \
        == "New York City"
    # otherwise the first ranked answer sharing a token with a choice
    listed = Prediction("q", (Answer("London", 0.0), Answer("York", 0.0), Answer("Paris", 0.0)))
    assert pick_choice(listed, choices) == "New York City"
    assert pick_choice(Prediction("q", (Answer("London", 0.0),)), choices) is None
    # exact ranks that miss a choice: no guess among the others
    partial = Prediction("q", listed.answers, target_ranks={"Paris": 3})
    assert pick_choice(partial, choices) is None


def test_pick_choice_reads_no_entity_as_yes_or_no():
    yes_no = ("yes", "no")
    band = Prediction("q", (Answer("NATO", 9.0, "Q7184"), Answer("Yes", 2.0, "Q184386")))
    assert pick_choice(band, yes_no) == "yes"  # entities read as words: the trap a yes/no question must avoid
    assert pick_choice(band, yes_no, words=True) is None
    # a written span names a yes/no choice only by reading as it exactly
    spans = Prediction("q", (Answer("No Doubt", 0.0), Answer("No.", -1.0)))
    assert pick_choice(spans, yes_no, words=True) == "no"
    assert pick_choice(Prediction("q", (Answer("No Doubt", 0.0),)), yes_no, words=True) is None
    # exact ranks of both words still decide
    assert pick_choice(Prediction("q", band.answers, target_ranks={"yes": 2, "no": 1}), yes_no, words=True) == "no"


def test_freq_answers_no_yes_no_question_whatever_its_objects_are_named(lama_dir, tmp_path, capsys, monkeypatch):
    # P463 (member of) has the object "Yes" (the band, Q184386): Freq ranks it, but it is no answer to a yes/no question
    assert any(json.loads(line)["obj_label"] == "Yes"
               for line in (lama_dir / "TREx" / "P463.jsonl").read_text().splitlines())
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P463", "--questions-per-relation", "5",
                            "--predictors", "freq", "kb", "random", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    records = {name: [json.loads(line) for p in (out / f"predictions/trex/{name}").glob("*.jsonl")
                      for line in p.read_text().splitlines()] for name in ("freq", "kb", "random")}
    given = Counter(r["uid"].split(":")[0] for r in records["kb"])
    # no false statement names an organisation Wikidata holds for the subject (the Czech Republic is in UNESCO)
    assert given == {"tc": 5, "ed": 5, "sc+": 5, "sc-": 2}
    freq_sc = [r for r in records["freq"] if r["uid"].startswith("sc")]
    assert len(freq_sc) == 7 and all(r["dropped"] == "ranks none of the choices" for r in freq_sc)
    assert [(d["predictor"], d["n"]) for d in json.loads((out / "dropped.json").read_text())] == [("freq", 12)]
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r for r in json.loads((out / "summary.json")
                                                                                        .read_text())}
    assert ("freq", "own", "statement_checking", "f1") not in get
    assert get[("freq", "own", "statement_checking", "answered")]["value"] == 0.0
    # the shared questions: the 5 triple completions every predictor answered, no statement check among them
    for name in ("freq", "kb", "random"):
        assert get[(name, "shared", "all", "f1")]["n_facts"] == 5
        assert (name, "shared", "statement_checking", "f1") not in get
    assert get[("kb", "own", "statement_checking", "f1")]["n_facts"] == 7
    assert get[("random", "own", "statement_checking", "f1")]["n_facts"] == 7
    # a folder of an earlier version, whose Freq may have answered "yes" by the band, is refused, never resumed
    config = json.loads((out / "config.json").read_text())

    def refused(settings: dict) -> str:
        """The last error line of a rerun into `out` whose config.json records `settings`."""
        (out / "config.json").write_text(json.dumps({**config, "settings": settings}))
        code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P463", "--questions-per-relation",
                                "5", "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(out)], capsys)
        assert code == 2, err
        return err.splitlines()[-1]

    settings = config["settings"]
    assert (settings["choice_rule"], settings["provenance_rule"]) == (2, 2)
    assert settings["multi_rel"].startswith("sha256:")
    without = {key: {k: v for k, v in settings.items() if k != key}
               for key in ("choice_rule", "multi_rel", "provenance_rule")}
    assert refused(without["choice_rule"]) == (
        f"error: {out} holds results made with other settings: choice_rule not recorded, now 2 (an earlier kbc "
        "version read an answer naming an entity called Yes or No, such as P463's band Yes, as that choice of a "
        "yes/no question: its answers there are not kept); use another --out or the same settings")
    # nor one whose false statements were drawn without X-FACTR's multi-relation list
    assert "(an earlier kbc version could make a false statement or a distractor of an object X-FACTR's " \
        "TREx_multi_rel.txt holds true for the subject: its statement and reasoning questions are not those asked " \
        "now)" in refused(without["multi_rel"])
    # nor one whose reasoning questions were drawn by derivations through facts resting on the fact derived
    assert refused(without["provenance_rule"]) == (
        f"error: {out} holds results made with other settings: provenance_rule not recorded, now 2 (an earlier kbc "
        "version could credit an axiom with a fact it derives only from facts resting on that fact: its reasoning "
        "questions and their Q-sets are not those asked now); use another --out or the same settings")


def test_choice_question_freq_ranks_no_choice_of_is_dropped(lama_dir, tmp_path, capsys, monkeypatch):
    # Freq ranks a relation's objects (London, Paris, ...): never "yes" or "no". Such questions are dropped
    # with their reason, not scored 0 below the 50% chance floor; the KB still answers every yes/no by lookup.
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--predictors", "freq", "kb", "--relations", "P19",
                            "P47", "--questions-per-relation", "10", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    assert [(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped] == [
        ("freq", "P19", "ranks none of the choices", 59), ("freq", "P47", "ranks none of the choices", 55),
        ("freq", "schema:birthPlace", "ranks none of the choices", 10)]
    assert {d["unit"] for d in dropped} == {"questions"}  # one record per question, several per fact
    # records hold the relation's id where an axioms file names it by IRI, as tables show it
    files = sorted((out / "predictions/trex").glob("*/*.jsonl"))
    held = Counter(json.loads(line)["relation"] for p in files for line in p.read_text().splitlines())
    assert held == {"P19": 158, "P47": 180, "schema:birthPlace": 20}
    # records that hold the full IRI (as an earlier version wrote them, without record digests: read unchecked)
    # are scored and tallied alike
    scored = {name: (out / name).read_text() for name in ("summary.json", "dropped.json", "summary.md")}
    shutil.rmtree(out / ".kbc-records")
    for p in files:
        p.write_text(p.read_text().replace('"relation": "schema:birthPlace"',
                                           '"relation": "http://schema.org/birthPlace"'))
    collect(out)
    assert {name: (out / name).read_text() for name in scored} == scored
    summary = (out / "summary.md").read_text()
    assert "## Questions a predictor could not answer (not scored)" in summary
    assert "| corpus | predictor | relation | reason | questions |" in summary
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["trex"]["freq"]
    assert sum(described["dropped_questions"]["P19"].values()) == 59 and "dropped_facts" not in described
    # tables show a relation an axioms file names by IRI as its prefixed id
    assert "| trex | freq | schema:birthPlace | ranks none of the choices | 10 |" in summary
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r["value"]
           for r in json.loads((out / "summary.json").read_text())}
    assert ("freq", "own", "statement_checking", "f1") not in get
    assert get[("freq", "own", "entity_distinction", "answered")] == 20.0
    assert get[("kb", "own", "statement_checking", "f1")] == 100.0
    assert get[("kb", "own", "statement_checking", "answered")] == 100.0
    assert get[("kb", "own", "predicate_reasoning", "f1")] == 0.0  # closed world: no choice held, scored 0
    records = [json.loads(line) for p in (out / "predictions/trex/freq").glob("*.jsonl")
               for line in p.read_text().splitlines()]
    assert not [r for r in records if r["uid"].startswith("sc") and "dropped" not in r]


def test_a_kind_dropped_whole_is_answered_0_and_the_printed_table_counts_questions(tiny_models, lama_dir, tmp_path,
                                                                                   capsys, monkeypatch):
    """`answered` is the share of the questions of a kind a predictor was given that the scope holds: bert
    drops all 20 entity-distinction questions (no choice set of single tokens), freq every yes/no one, so
    theirs are 0, not `-`. The printed table counts questions, as summary.md does."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, stdout, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P19", "P36", "--predictors",
                                 "freq", "kb", f"bert={tiny_models('bert-cased')}", "--limit", "10",
                                 "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert stdout.startswith("F1 (%) of KMIR-style questions per kind, setting raw, shared questions\n"
                             "| corpus | predictor | answer space | #questions |")
    dropped = Counter()
    for d in json.loads((out / "dropped.json").read_text()):
        dropped[(d["predictor"], d["reason"])] += d["n"]
    assert dropped[("bert", "a choice is not a single token of the model")] == 30
    answered = {(r["predictor"], r["scope"], r["group"]): r["value"]
                for r in json.loads((out / "summary.json").read_text()) if r["metric"] == "answered"}
    assert [answered[("bert", "own", kind)] for kind in ("entity_distinction", "predicate_reasoning",
                                                         "statement_checking", "triple_completion", "all")] == [
        0.0, 50.0, 100.0, 100.0, 70.0]
    assert [answered[("freq", "own", kind)] for kind in ("entity_distinction", "predicate_reasoning",
                                                         "statement_checking", "triple_completion", "all")] == [
        5.0, 0.0, 0.0, 100.0, 21.0]
    assert "| trex | bert | - | 70 | 0.00 | 50.00 | 100.00 | 100.00 | 70.00 | - |" in (out / "summary.md").read_text()


def test_a_rerun_drawing_questions_from_other_relations_or_another_limit_is_refused(lama_dir, tmp_path, capsys,
                                                                                    monkeypatch):
    """A fact's questions (choices, reasoning questions) are drawn from every fact asked: a rerun into the same --out
    with other relations or another --limit would keep the old questions beside new ones, so it is refused; one that
    adds a predictor to the same questions is not, whatever the order of the relations."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"

    def run(relations, limit, *predictors):
        return run_kbc(["run", "kmir", "--corpus", "trex", "--relations", *relations, "--limit", limit,
                        "--predictors", *predictors, "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)

    assert run(["P36", "P19"], "10", "kb")[0] == 0
    why = ("a fact's questions (their choices, the reasoning questions around it) depend on the relations and the "
           "--limit sample asked, so those answered there would differ; use another --out, or --relations P19 P36 "
           "--limit 10")
    code, _, err = run(["P36", "P19", "P1376"], "10", "kb")
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds questions of trex drawn from --relations P19 P36 --limit 10, not --relations P1376 "
           f"P19 P36 --limit 10: {why}")
    code, _, err = run(["P36", "P19"], "12", "kb")
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds questions of trex drawn from --relations P19 P36 --limit 10, not --relations P19 P36 "
           f"--limit 12: {why}")
    code, _, err = run(["P19", "P36"], "10", "kb", "freq")
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["question_facts"] == {"trex": {"relations": ["P19", "P36"], "limit": 10}}

    # a directory of an earlier kbc version, which did not record them: its run log says what each run asked
    del config["settings"]["question_facts"]
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run(["P36", "P19"], "12", "kb")
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds questions drawn from --relations P19 P36 --limit 10, not --relations P19 P36 --limit "
           f"12: {why}")
    assert run(["P36", "P19"], "10", "kb")[0] == 0
    assert json.loads((out / "config.json").read_text())["settings"]["question_facts"] == {
        "trex": {"relations": ["P19", "P36"], "limit": 10}}


def test_questions_made_without_the_instance_of_list_say_so(lama_dir, tmp_path, capsys, monkeypatch):
    """A copy of lama/ without xfactr/ beside it gives no false statements: 40 questions, kb Total 75, not 50 and
    80 as with the list; stderr and summary.md name the missing file and what it costs."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "data" / "lama"
    copy.mkdir(parents=True)
    for entry in lama_dir.iterdir():
        (copy / entry.name).symlink_to(entry)
    totals = {}
    for name, data in (("copy", copy), ("real", lama_dir)):
        out = tmp_path / name
        code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P19", "--limit", "5",
                                "--predictors", "kb", "--data-dir", str(data), "--out", str(out), "--quiet"], capsys)
        assert code == 0, err
        rows = json.loads((out / "summary.json").read_text())
        total = next(r for r in rows if r["scope"] == "own" and r["group"] == "all" and r["metric"] == "f1")
        missing = f"kmir: no instance-of list ({copy / 'xfactr/TREx_instanceof.txt'} or " \
                  f"{copy.parent / 'xfactr/TREx_instanceof.txt'}): entity types come from the corpus's P31 facts alone"
        totals[name] = (total["value"], total["n_facts"], missing in err,
                        "No instance-of list was found" in (out / "summary.md").read_text())
    assert totals == {"copy": (75.0, 40, True, True), "real": (80.0, 50, False, False)}


def test_a_choice_answer_is_recorded_with_every_choice_score(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """A masked LM ranks a choice over its whole vocabulary: its saved top answers rarely hold the choices, so the
    record holds each choice's score and rank (and how it was scored), and the answer is the best-scored choice."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
                            "--questions-per-relation", "4", "--predictors", "kb", "random",
                            f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    scoring = {"bert": "log-probability of the choice's token at the answer slot, over the model's whole vocabulary",
               "gpt2": "log-likelihood of the sentence with the choice at the answer slot",
               "random": "minus the position in a seeded random order"}
    checked = Counter()
    for name, how in scoring.items():
        for path in (out / "predictions/trex" / name).glob("*.jsonl"):
            for r in map(json.loads, path.read_text().splitlines()):
                if "dropped" in r or not r.get("choices"):
                    assert "choice_scores" not in r
                    continue
                assert r["choice_scoring"] == how
                assert [c[0] for c in r["choice_scores"]] == r["choices"]
                best = max(score for _, score, _ in r["choice_scores"])
                # the answer is the best-scored choice, ranked first among the choices (ties: choice order)
                assert r["answer"] == next(label for label, score, _ in r["choice_scores"] if score == best)
                assert dict((c[0], c[2]) for c in r["choice_scores"])[r["answer"]] == min(c[2] for c in
                                                                                           r["choice_scores"])
                checked[(name, r["kind"])] += 1
    # bert drops every entity-distinction and reasoning question here (a choice is no single token of it)
    assert checked == {("bert", "statement_checking"): 22, ("gpt2", "statement_checking"): 22,
                       ("gpt2", "entity_distinction"): 11, ("gpt2", "predicate_reasoning"): 8,
                       ("random", "statement_checking"): 22, ("random", "entity_distinction"): 11,
                       ("random", "predicate_reasoning"): 8}
    kb = [json.loads(line) for p in (out / "predictions/trex/kb").glob("*.jsonl")
          for line in p.read_text().splitlines()]
    assert not [r for r in kb if "choice_scores" in r]  # a lookup scores no choice

    uid = next(r["uid"] for p in (out / "predictions/trex/bert").glob("*.jsonl")
               for r in map(json.loads, p.read_text().splitlines()) if r["uid"].startswith("sc+:"))
    bert = next(r for p in (out / "predictions/trex/bert").glob("*.jsonl")
                for r in map(json.loads, p.read_text().splitlines()) if r["uid"] == uid)
    code, stdout, err = run_kbc(["show", str(out), "--uid", uid], capsys)
    assert code == 0, err
    (yes, s_yes, r_yes), (no, s_no, r_no) = bert["choice_scores"]
    assert (f"choices: yes {s_yes:.4f} (rank {r_yes}), no {s_no:.4f} (rank {r_no}) (score: {scoring['bert']})"
            in stdout)
    code, stdout, err = run_kbc(["show", str(out), "--uid", uid, "--json"], capsys)
    assert code == 0, err
    shown = json.loads(stdout)["facts"][0]["predictors"]["bert"]
    assert (shown["choice_scores"], shown["choice_scoring"]) == (bert["choice_scores"], scoring["bert"])
