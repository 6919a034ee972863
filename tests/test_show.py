"""`kbc show`: one fact of the hand-made run (see test_compare) across every predictor."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from records_support import seal_records
from test_compare import make_run

from eval.lama import READING


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path)


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_show_by_uid(run_dir, capsys):
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p19-7"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[:5] == [
        "trex / P19 / uid p19-7",
        "  subject:     subject p19-7 (Q97)",
        "  prompt:      subject p19-7 relates to [MASK] .",
        "  gold:        gold-p19-7 (Q7)",
        "  other valid: wrong-p19-7-0",
    ]
    assert "  alpha  gold rank raw 2, filtered 1" in lines
    assert "  beta   gold not among the answers" in lines
    assert "  gamma  not run" in lines
    alpha = lines.index("  alpha  gold rank raw 2, filtered 1")
    assert [line.split()[1] for line in lines[alpha + 1:alpha + 6]] == [
        "wrong-p19-7-0", "gold-p19-7", "wrong-p19-7-1", "wrong-p19-7-2", "wrong-p19-7-3"]
    assert lines[alpha + 2].endswith("<- gold")


def test_show_dropped_and_json(run_dir, capsys):
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p36-8", "--corpus", "trex", "--json"], capsys)
    assert code == 0
    (fact,) = json.loads(out)["facts"]
    assert (fact["corpus"], fact["relation"], fact["gold"], fact["prompt"]) == (
        "trex", "P36", "gold-p36-8", "subject p36-8 relates to [MASK] .")
    assert fact["predictors"]["alpha"] == {"status": "dropped", "reason": "object not in vocabulary"}
    assert fact["predictors"]["gamma"] == {"status": "not run"}
    beta = fact["predictors"]["beta"]
    assert (beta["status"], beta["rank_raw"], beta["rank_filtered"]) == ("answered", 1, 1)
    assert beta["answers"][0] == {"label": "gold-p36-8", "score": -0.5, "id": "Q8"} and len(beta["answers"]) == 10
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p36-8"], capsys)
    assert "  alpha  dropped: object not in vocabulary" in out.splitlines()


def test_show_by_subject_label_or_id(run_dir, capsys):
    code, by_label, _ = run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace", "--relation", "P19"], capsys)
    assert code == 0 and by_label.startswith("trex / P19 / uid p19-1\n")
    assert "  alpha  gold rank raw 1, filtered 1; exact raw 1, filtered 1" in by_label.splitlines()
    code, by_id, _ = run_kbc(["show", str(run_dir), "--subject", "Q7259", "--relation", "P19"], capsys)
    assert code == 0 and by_id == by_label


def test_show_errors(run_dir, capsys):
    line = _one_error(*run_kbc(["show", str(run_dir), "--uid", "p19-99"], capsys))
    assert "no fact with uid 'p19-99'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Nobody", "--relation", "P19"], capsys))
    assert "no fact with subject 'Nobody'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace", "--relation", "P91"], capsys))
    assert "did you mean 'P19'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace"], capsys))
    assert "--relation" in line
    line = _one_error(*run_kbc(["show", str(run_dir)], capsys))
    assert "--uid" in line
    _one_error(*run_kbc(["show", str(run_dir / "nope"), "--uid", "p19-7"], capsys))


def test_show_refuses_a_run_of_an_experiment_it_does_not_know(run_dir, capsys):
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "experiment": "bogus"}))
    line = _one_error(*run_kbc(["show", str(run_dir), "--uid", "p19-7"], capsys))
    assert line == (f"error: {run_dir} is a `kbc run bogus` run: kbc show prints LAMA facts (prompt, gold, gold "
                    "rank), FewRel sentences, LM-KBC pairs, KMIR questions, and the queries of negated, coherency and "
                    "evidence runs; each bogus record is one line of predictions/<corpus>/<predictor>/<relation>.jsonl "
                    "and of instances.parquet")


def test_a_prompt_of_several_lines_stays_under_its_field(tmp_path, capsys):
    """A fact every predictor answered by generation shows the prompt it was sent, each line under the first."""
    run = tmp_path / "run"
    folder = run / "predictions" / "trex" / "gen"
    folder.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"corpora": ["trex"], "predictors": ["gen"],
                                                 "data_reading": READING}))
    record = {"uid": "p19-1", "relation": "P19", "subject": "Ada Lovelace", "subject_id": "Q7259", "gold": "London",
              "gold_id": "Q84", "other_valid": [], "prompt": "Q: Where was Ada Lovelace born?\nA:",
              "generation": " London\nQ: Where", "parsed": ["London"], "answers": [["London", 1.0, "Q84"]],
              "unlinked": [], "abstained": False, "em_raw": True, "em_filtered": True, "rank_raw": 1,
              "rank_filtered": 1}
    (folder / "P19.jsonl").write_text(json.dumps(record) + "\n")
    seal_records(run)
    code, out, err = run_kbc(["show", str(run), "--uid", "p19-1"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "trex / P19 / uid p19-1",
        "  subject:     Ada Lovelace (Q7259)",
        "  prompt:      Q: Where was Ada Lovelace born?",
        "               A:",
        "  gold:        London (Q84)",
        "  other valid: -",
        "  gen  exact match raw yes, filtered yes (answered by generation)",
        "       prompt:     Q: Where was Ada Lovelace born?",
        "                   A:",
        "       generation:  London",
        "                   Q: Where",
        "       1. London (Q84)  <- gold",
    ]


def _kmir_records(out, predictor: str) -> dict[str, dict]:
    return {r["uid"]: r for path in sorted((out / "predictions" / "trex" / predictor).glob("*.jsonl"))
            for r in map(json.loads, path.read_text().splitlines())}


def _kmir_run(lama_dir, tmp_path, capsys, predictors: list[str], relations: list[str], *extra: str):
    out = tmp_path / "kmir"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", *relations, "--limit", "6",
                            "--questions-per-relation", "4", "--predictors", *predictors, *extra,
                            "--data-dir", str(lama_dir), "--out", str(out), "--store", str(tmp_path / "store"),
                            "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    return out


def test_show_prints_a_kmir_question_across_every_predictor(lama_dir, tmp_path, capsys, monkeypatch):
    """A reasoning question asks a derived relation (P1376) and lies in the file of its fact's (P36): every
    predictor's answer to it is found there."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = _kmir_run(lama_dir, tmp_path, capsys, ["freq", "kb", "random"], ["P36"])
    kb, rnd = _kmir_records(out, "kb"), _kmir_records(out, "random")
    uid = next(u for u, r in kb.items() if r["relation"] == "P1376")
    asked, mine = kb[uid], rnd[uid]
    assert _kmir_records(out, "freq")[uid]["dropped"] == "ranks none of the choices"
    code, shown, err = run_kbc(["show", str(out), "--uid", uid], capsys)
    assert (code, err) == (0, "")

    def scored(r: dict) -> str:
        answer = "no answer" if r["answer"] is None else f"answer {r['answer']}"
        return f"{answer} (F1 {100 * r['f1']:.1f}%, EM {100 * r['em']:.1f}%)"

    assert shown.splitlines() == [
        f"trex / P1376 / uid {uid}",
        f"  question: {asked['question']}",
        f"  kind:     predicate_reasoning (reasoning), axiom {asked['axiom']}",
        f"  gold:     {asked['gold']}",
        f"  choices:  {', '.join(asked['choices'])}",
        "  freq    dropped: ranks none of the choices",
        f"  kb      {scored(asked)}",
        *([f"            1. {asked['answer']}  1  <- gold"] if asked["answers"] else ["            (no answers)"]),
        f"  random  {scored(mine)}",
        # the score and rank random gave each choice, in choice order: the answer is the best of them
        "            choices: " + ", ".join(f"{label} {1 - rank:.4f} (rank {rank})" for label, _, rank in
                                            mine["choice_scores"])
        + " (score: minus the position in a seeded random order)",
        *[f"            {i}. {label}  {-i + 1}" + ("  <- gold" if label == asked["gold"] else "")
          for i, (label, _, _) in enumerate(mine["answers"], 1)]]
    assert [label for label, _, _ in mine["choice_scores"]] == asked["choices"]
    assert {label: rank for label, _, rank in mine["choice_scores"]} == {
        label: i for i, (label, _, _) in enumerate(mine["answers"], 1)}
    assert sorted(label for label, _, _ in mine["answers"]) == sorted(asked["choices"])
    code, printed, _ = run_kbc(["show", str(out), "--uid", uid, "--json"], capsys)
    fact = json.loads(printed)["facts"][0]
    assert {k: fact[k] for k in ("relation", "kind", "knowledge_type", "gold", "choices", "chance")} == {
        "relation": "P1376", "kind": "predicate_reasoning", "knowledge_type": "reasoning", "gold": asked["gold"],
        "choices": asked["choices"], "chance": 0.25}
    assert fact["predictors"]["random"] == {
        "status": "answered", "answer": mine["answer"], "f1": mine["f1"], "em": mine["em"],
        "answers": [{"label": label, "score": score, "id": None} for label, score, _ in mine["answers"]],
        "choice_scores": mine["choice_scores"], "choice_scoring": "minus the position in a seeded random order"}
    assert fact["predictors"]["freq"] == {"status": "dropped", "reason": "ranks none of the choices"}
    line = _one_error(*run_kbc(["show", str(out), "--subject", "Darwin", "--relation", "P36"], capsys))
    assert line == (f"error: {out} is a `kbc run kmir` run: show a question by --uid (the `uid` of its records or "
                    "of instances.parquet, e.g. tc:<fact uid>)")


def test_show_prints_the_prompt_generation_and_parsed_answer_of_a_kmir_question(lama_dir, tmp_path, capsys,
                                                                                 monkeypatch):
    from served_support import Scripted
    from test_generation_questions import KMIR_OBJECTS, kmir_script

    from eval.corpora import load_corpus
    from eval.kmir import question_prompt

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    for f in load_corpus("trex", lama_dir, ["P36"]).facts:
        KMIR_OBJECTS.setdefault((f.relation, f.subject.label), f.object.label)
    server = Scripted(kmir_script)
    try:
        out = _kmir_run(lama_dir, tmp_path, capsys, ["kb", f"llm={server.url}"], ["P36"], "--set",
                        "llm.model=tiny")
    finally:
        server.close()
    llm, kb = _kmir_records(out, "llm"), _kmir_records(out, "kb")
    triple = next(u for u in llm if u.startswith("tc:"))
    outlier = next(u for u in llm if u.startswith("ed:"))
    shown = {}
    for uid in (triple, outlier):
        code, printed, err = run_kbc(["show", str(out), "--uid", uid], capsys)
        assert (code, err) == (0, ""), uid
        lines = printed.splitlines()
        shown[uid] = lines[next(i for i, line in enumerate(lines) if line.startswith("  llm ")):]
    r = llm[triple]
    gold, linked = r["gold"], r["answers"][0][2]
    assert (r["generation"], r["answer"], r["parsed"], r["unlinked"], kb[triple]["answer"]) == (
        gold, gold, [gold], [], gold)
    assert shown[triple] == [
        f"  llm  answer {gold} (F1 100.0%, EM 100.0%; answered by generation)",
        f"         prompt:     [user] {question_prompt(r['question'])}",
        f"         generation: {gold}",
        f"         parsed:     {gold}",
        f"         1. {gold} ({linked})  <- gold"]
    r = llm[outlier]
    assert (r["generation"], r["parsed"], r["unlinked"], r["f1"], r["em"]) == (
        "Atlantis", ["Atlantis"], ["Atlantis"], 0.0, 0.0)
    assert shown[outlier] == [
        "  llm  answer Atlantis (F1 0.0%, EM 0.0%; answered by generation)",
        f"         prompt:     [user] {question_prompt(r['question'])}",
        "         generation: Atlantis",
        "         parsed:     Atlantis",
        "         1. Atlantis",
        "         unlinked:   Atlantis"]
    code, printed, _ = run_kbc(["show", str(out), "--uid", outlier, "--json"], capsys)
    entry = json.loads(printed)["facts"][0]["predictors"]["llm"]
    assert entry == {"status": "answered", "answer": "Atlantis", "f1": 0.0, "em": 0.0, "prompt": r["prompt"],
                     "generation": "Atlantis", "parsed": ["Atlantis"], "unlinked": ["Atlantis"], "abstained": False,
                     "answers": [{"label": "Atlantis", "score": r["answers"][0][1], "id": None}]}
