"""`kbc run lama --corpus bear`: statement scoring by default, P@1 as lm-pub-quiz's predictions give it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc
from lm_fixtures import kbc_log, tiny_models  # noqa: F401  (fixtures)

from eval.bear import load_bear

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"


@pytest.fixture
def bear_root():
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    return BEAR


def _p1(out: Path, predictor: str) -> dict[str, float]:
    rows = json.loads((out / "summary.json").read_text())
    return {r["group"]: r["value"] for r in rows if r["predictor"] == predictor and r["metric"] == "p@1"
            and r["scope"] == "own" and r["setting"] == "raw"}


def _lpq_p1(model_dir: Path, kind: str, out: Path, predictor: str) -> dict[str, float]:
    """P@1 per relation and macro over relations, from lm-pub-quiz's scores of the facts the run asked."""
    from lm_pub_quiz import Evaluator
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    loader = AutoModelForCausalLM if kind == "CLM" else AutoModelForMaskedLM
    evaluator = Evaluator.from_model(loader.from_pretrained(model_dir).eval(), model_type=kind,
                                     tokenizer=AutoTokenizer.from_pretrained(model_dir))
    corpus = load_bear("bear", BEAR, ["P30", "P412"])
    facts = {f.uid: f for f in corpus.facts}
    per_rel = {}
    for rel_id, rel in corpus.relations.items():
        lines = (out / "predictions" / "bear" / predictor / f"{rel_id}.jsonl").read_text().splitlines()
        asked = [facts[json.loads(line)["uid"]] for line in lines]
        hits = []
        for fact in asked:
            scores = evaluator.evaluate_instance(template=rel.template, answers=[e.label for e in rel.answer_space],
                                                 subject=fact.subject.label, reduction="sum", batch_size=64)
            hits.append(scores.index(max(scores)) == fact.answer_idx)
        per_rel[rel_id] = 100 * sum(hits) / len(hits)
    per_rel["all"] = sum(per_rel.values()) / len(per_rel)
    return per_rel


def test_bear_run_matches_lm_pub_quiz(tiny_models, bear_root, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert, gpt = tiny_models("bert-cased"), tiny_models("gpt2")
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P30", "P412", "--predictors",
                            f"bert={bert}", f"gpt={gpt}", "--limit", "4", "--data-dir", str(bear_root), "--out",
                            str(out), "--compat", "lm-pub-quiz", "--quiet"], capsys)
    assert code == 0, err
    assert json.loads((out / "dropped.json").read_text()) == []
    config = json.loads((out / "config.json").read_text())
    described = json.dumps(config)
    assert '"scoring": "statement"' in described and '"pll": "within_word_l2r"' in described
    for name, path, kind in (("bert", bert, "MLM"), ("gpt", gpt, "CLM")):
        got = {g: v for g, v in _p1(out, name).items() if not g.startswith("domain:")}
        expected = _lpq_p1(path, kind, out, name)
        assert got == pytest.approx(expected, abs=1e-9), name
    rows = json.loads((out / "summary.json").read_text())
    space = {r["group"]: r["value"] for r in rows if r["predictor"] == "bert" and r["metric"] == "answer_space"}
    assert space.get("P30") == 6 and space.get("P412") == 6
    uid = json.loads((out / "predictions" / "bear" / "bert" / "P30.jsonl").read_text().splitlines()[0])["uid"]
    code, shown, err = run_kbc(["show", str(out), "--uid", uid], capsys)
    assert code == 0, err
    block = shown.split("  bert  ")[1].split("  gpt  ")[0]
    assert [line.split(".")[0].strip() for line in block.splitlines()[1:]] == ["1", "2", "3", "4", "5",
                                                                               "(1 more; --json shows every answer)"]


def test_run_bear_is_run_lama_on_bear(bear_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    tail = ["--relations", "P30", "--predictors", "freq", "random", "--limit", "4", "--data-dir", str(bear_root),
            "--quiet"]
    code, _, err = run_kbc(["run", "bear", *tail, "--out", str(tmp_path / "bear")], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", *tail, "--out", str(tmp_path / "lama")], capsys)
    assert code == 0, err
    summaries = [json.loads((tmp_path / name / "summary.json").read_text()) for name in ("bear", "lama")]
    assert summaries[0] == summaries[1] and {r["corpus"] for r in summaries[0]} == {"bear"}
    assert json.loads((tmp_path / "bear" / "config.json").read_text())["experiment"] == "lama"
    code, _, err = run_kbc(["run", "bear", "--corpus", "trex", *tail, "--out", str(tmp_path / "t")], capsys)
    assert (code, err) == (2, "error: --corpus trex: `kbc run bear` asks bear or bear-big; use `kbc run lama --corpus "
                              "trex` for other corpora\n")


def test_bad_bear_data_is_one_error_line(bear_root, tmp_path, capsys):
    root = tmp_path / "bear" / "BEAR"
    root.mkdir(parents=True)
    meta = json.loads((bear_root / "BEAR" / "metadata_relations.json").read_text())
    (root / "metadata_relations.json").write_text(json.dumps({"P30": meta["P30"]}))
    lines = (bear_root / "BEAR" / "P30.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["answer_idx"] = -1
    (root / "P30.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    shutil.copy(bear_root / "relation_info.json", tmp_path / "bear" / "relation_info.json")
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--predictors", "freq", "--data-dir",
                            str(tmp_path / "bear"), "--out", str(tmp_path / "run")], capsys)
    assert code == 2
    assert err.strip() == (f"error: {root / 'P30.jsonl'}:1: answer_idx -1 is out of range (the answer space has 6 "
                           "answers, 0 to 5)")


def test_domain_groups_and_templates(bear_root, tmp_path, monkeypatch, capsys, tiny_models):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P30", "P6", "P19", "--predictors",
                            "freq", "--limit", "3", "--data-dir", str(bear_root), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    p1 = _p1(out, "freq")
    rows = json.loads((out / "summary.json").read_text())
    n = {r["group"]: r["n_facts"] for r in rows if r["predictor"] == "freq" and r["metric"] == "p@1"}
    # relation_info.json: P30 Geographic; P6 Political, Biographical, Historical; P19 Biographical
    assert p1["domain:Biographical"] == pytest.approx((p1["P6"] + p1["P19"]) / 2)
    assert p1["domain:Geographic"] == p1["P30"] and p1["domain:Political"] == p1["P6"]
    assert (n["domain:Biographical"], n["domain:Geographic"], n["all"]) == (6, 3, 9)
    # BEAR balances its answers: Freq's order is the file's, and the run says so
    assert "bear / freq: in 3 of 3 relations every object is equally frequent (P6, P19, P30)" in err

    bert = tiny_models("bert-cased")
    for template, expected in (("1", {"P30:0": "Nile is a part of [MASK]."}),
                               ("all", {"P30:0@t0": "Nile is located in [MASK].",
                                        "P30:0@t2": "Nile is situated in [MASK]."})):
        run = tmp_path / f"run-{template}"
        code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P30", "--predictors",
                                f"bert={bert}", "--data-dir", str(bear_root), "--out", str(run), "--template",
                                template, "--quiet"], capsys)
        assert code == 0, err
        lines = (run / "predictions" / "bear" / "bert" / "P30.jsonl").read_text().splitlines()
        prompts = {r["uid"]: r["prompt"] for r in map(json.loads, lines)}
        assert len(prompts) == 150 * (3 if template == "all" else 1)
        assert {u: prompts[u] for u in expected} == expected
    groups = {r["metric"] for r in json.loads((tmp_path / "run-all" / "summary.json").read_text())}
    assert "consistency" in groups
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--template", "1",
                            "--data-dir", str(bear_root.parent / "lama"), "--out", str(tmp_path / "x")], capsys)
    assert (code, err.strip()) == (2, "error: --template 1 picks a BEAR template; add --corpus bear or bear-big")


def test_kmir_choices_are_answered_by_statements(tiny_models, bear_root, tmp_path, monkeypatch, capsys):  # noqa: F811
    """A masked LM drops KMIR choices of several tokens under slot scoring; statement scoring answers them."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = tiny_models("bert-cased")
    out = tmp_path / "kmir"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "--predictors", f"slot={bert}",
                            f"stmt={bert}", "--set", "stmt.scoring=statement", "--limit", "3", "--data-dir",
                            str(bear_root.parent / "lama"), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    assert {(d["predictor"], d["relation"], d["n"]) for d in dropped} == {("slot", "P36", 3), ("slot", "P1376", 3)}
    answered = [json.loads(line) for p in (out / "predictions" / "trex" / "stmt").glob("*.jsonl")
                for line in p.read_text().splitlines()]
    assert len(answered) == 15


def _bear_copy(bear_root: Path, dest: Path) -> Path:
    """A BEAR folder of P30 only, to edit."""
    (dest / "BEAR").mkdir(parents=True)
    meta = json.loads((bear_root / "BEAR" / "metadata_relations.json").read_text())
    (dest / "BEAR" / "metadata_relations.json").write_text(json.dumps({"P30": meta["P30"]}))
    shutil.copy(bear_root / "BEAR" / "P30.jsonl", dest / "BEAR" / "P30.jsonl")
    shutil.copy(bear_root / "relation_info.json", dest / "relation_info.json")
    return dest


@pytest.mark.parametrize("change", ["template", "data", "data of a run that recorded no choices"])
def test_a_rerun_of_other_questions_names_what_changed(bear_root, tmp_path, monkeypatch, capsys, change):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data, out = _bear_copy(bear_root, tmp_path / "bear"), tmp_path / "run"
    argv = ["run", "bear", "--relations", "P30", "--predictors", "freq", "--limit", "3", "--data-dir", str(data),
            "--out", str(out), "--quiet", "--bootstrap", "0"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    assert config["version_choices"] == {"bear": {"P30": {"template": "0"}}}
    if change == "template":
        argv += ["--template", "1"]
    else:
        path = data / "BEAR" / "P30.jsonl"
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    if change == "data of a run that recorded no choices":
        del config["version_choices"]
        (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(argv, capsys)
    why = {"template": "of other questions for P30 (the template changed: --template 0 then, --template 1 now)",
           "data": "of other data for P30 (the data files changed)",
           "data of a run that recorded no choices": "of other data for P30 (the data files or the template changed)"}
    assert (code, err.splitlines()[-1]) == (2, f"error: {out} holds bear results {why[change]}; use another --out")


def test_a_leaderboard_of_runs_asked_with_other_templates_names_the_template(bear_root, tmp_path, monkeypatch,
                                                                              capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    a, b = tmp_path / "a", tmp_path / "b"
    for out, template in ((a, "0"), (b, "1")):
        code, _, err = run_kbc(["run", "bear", "--relations", "P30", "--predictors", "freq", "--limit", "3",
                                "--template", template, "--data-dir", str(bear_root), "--out", str(out), "--quiet",
                                "--bootstrap", "0"], capsys)
        assert code == 0, err
    code, _, err = run_kbc(["compare", str(a), "freq", "freq", "--b-run", str(b)], capsys)
    assert (code, err) == (2, f"error: {b} and {a} differ in bear questions (P30: the template differs: --template 0 "
                              f"in {a}, --template 1 in {b}); `kbc compare --b-run` needs runs of the same questions\n")


def test_template_all_counts_facts_not_queries(bear_root, tmp_path, monkeypatch, capsys):
    """Each fact asked with its relation's three templates is one fact in #facts, `(n=…)` and `n_facts`, as a
    LAMA prompt set counts it; `n_queries` and the scope note say how many queries that made."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    corpus = load_bear("bear", bear_root, ["P19", "P36"])
    templates = {rel: len(r.templates) for rel, r in corpus.relations.items()}
    facts = {rel: min(5, sum(f.relation == rel for f in corpus.facts)) for rel in templates}
    assert templates == {"P19": 3, "P36": 3} and facts == {"P19": 5, "P36": 5}
    out = tmp_path / "run"
    code, stdout, err = run_kbc(["run", "bear", "--relations", "P19", "P36", "--limit", "5", "--template", "all",
                                 "--predictors", "freq", "--data-dir", str(bear_root), "--out", str(out), "--quiet"],
                                capsys)
    assert code == 0, err
    total, queries = sum(facts.values()), sum(facts[r] * templates[r] for r in facts)
    assert (total, queries) == (10, 30)
    rows = [r for r in json.loads((out / "summary.json").read_text()) if r["metric"] == "p@1" and not r.get("prompt")]
    for row in rows:
        rels = list(facts) if row["group"] == "all" else [row["group"]] if row["group"] in facts else ["P19"] \
            if row["group"] == "domain:Biographical" else ["P36"]
        assert (row["n_facts"], row["n_queries"]) == (sum(facts[r] for r in rels),
                                                     sum(facts[r] * templates[r] for r in rels)), row
    head = ("| corpus | predictor | answer space (mean) | #facts | P19 place of birth (n=5) | P36 capital (n=5) | "
            "Total | Total 95% CI |")
    assert head in stdout and "| bear | freq | 42.5 | 10 | " in stdout
    md = (out / "summary.md").read_text()
    assert head in md and "(bear: 10 (30 queries) answered by freq)" in md


def test_statement_scoring_says_it_scores_statements_by_pll(bear_root, tmp_path, monkeypatch, capsys, tiny_models,  # noqa: F811
                                                            kbc_log):  # noqa: F811
    """The log names the PLL that scores BEAR's statements, and the masked-LM path only as what scores each copy."""
    import logging

    from lm import masked

    masked._PATHS_SAID.clear()
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = tiny_models("bert-cased")
    code, _, err = run_kbc(["run", "bear", "--relations", "P30", "--limit", "2", "--predictors", f"bert={bert}",
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    said = [m for level, m in kbc_log if level == logging.INFO and "scoring path" in m]
    assert said == [f"{bert}: statements scored by PLL (within_word_l2r), each masked copy's logits by masked-LM "
                    "scoring path last-layer+head-at-mask (float32 on cpu)"]


def test_a_generating_predictor_answers_bears_questions_openly_scored_by_exact_match(bear_root, tmp_path,
                                                                                     monkeypatch, capsys):
    """docs/bear.md: no multiple choice; an open question without the answer space, the answer linked and scored by
    exact match against the gold."""
    from served_support import Scripted, completion

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = Scripted(lambda path, body, n: (200, completion("Canada", "chat")))
    try:
        code, _, err = run_kbc(["run", "bear", "--relations", "P19", "--predictors", f"llm={server.url}", "--set",
                                "llm.model=tiny", "--limit", "5", "--data-dir", str(bear_root), "--out",
                                str(tmp_path / "run"), "--quiet", "--bootstrap", "0"], capsys)
    finally:
        server.close()
    assert code == 0, err
    records = [json.loads(line) for line in
               (tmp_path / "run" / "predictions" / "bear" / "llm" / "P19.jsonl").read_text().splitlines()]
    assert records[0]["prompt"] == [{"role": "user", "content": "Fill in the blank: Wendy McElroy was born in ___."}]
    # no option is shown: the question alone
    assert [(r["gold"] == "Canada", r["em_raw"]) for r in records] == [(r["gold"] == "Canada",) * 2 for r in records]
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    em = {r["group"]: r["value"] for r in rows if r["metric"] == "em" and r["setting"] == "raw"
          and r["scope"] == "own"}
    assert sum(r["gold"] == "Canada" for r in records) == 1 and em["P19"] == 20.0
    assert not [r for r in rows if r["metric"] == "p@1" and r["predictor"] == "llm"]


def test_show_finds_a_subject_whose_label_has_stray_spaces(bear_root, tmp_path, monkeypatch, capsys):
    """P175's subjects " Crazy" and "My Only Wish " are found as typed without the spaces; a near miss is named."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "bear", "--relations", "P175", "--predictors", "freq",
                            "--data-dir", str(bear_root), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    for subject, uid in (("Crazy", "P175:15"), ("my only wish", "P175:17")):
        code, shown, err = run_kbc(["show", str(out), "--subject", subject, "--relation", "P175", "--json"], capsys)
        assert code == 0, err
        assert [f["uid"] for f in json.loads(shown)["facts"]] == [uid]
    code, _, err = run_kbc(["show", str(out), "--subject", "Crazzy", "--relation", "P175"], capsys)
    assert (code, err) == (2, f"error: no fact with subject 'Crazzy' and relation 'P175' in {out} (corpora bear); "
                              "did you mean 'Crazy'?\n")


def test_pll_is_refused_where_it_changes_nothing(tiny_models, bear_root, tmp_path, monkeypatch, capsys):  # noqa: F811
    """A causal LM scores statements left to right: `pll` would be recorded yet change nothing, so it is refused;
    a masked LM beside it takes an unscoped `--set pll=...`."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gpt, bert = tiny_models("gpt2"), tiny_models("bert-cased")
    argv = ["run", "bear", "--relations", "P30", "--limit", "2", "--data-dir", str(bear_root), "--quiet"]
    code, _, err = run_kbc([*argv, "--predictors", f"gpt2={gpt}", "--set", "gpt2.pll=original", "--out",
                            str(tmp_path / "a")], capsys)
    assert (code, err.splitlines()[-1]) == (
        2, f"error: --set gpt2.pll: predictor gpt2 ({gpt}) does not take 'pll'; it takes: answer, beams, cache, chat, "
           "max_new_tokens, prompt, prompt_file, question_file, reduction, scoring, seed, set, shots, shots_seed, "
           "stop, temperature, top_p, vocab_file")
    code, _, err = run_kbc([*argv, "--predictors", f"gpt2={gpt}", "--set", "pll=original", "--out",
                            str(tmp_path / "b")], capsys)
    assert code == 2 and err.splitlines()[-1].startswith("error: --set pll: no predictor of this run takes this "
                                                         "option; ")
    out = tmp_path / "c"
    code, _, err = run_kbc([*argv, "--predictors", f"gpt2={gpt}", f"bert={bert}", "--set", "pll=original",
                            "--set", "reduction=mean", "--out", str(out)], capsys)
    assert code == 0, err
    specs = json.loads((out / "config.json").read_text())["predictor_specs"]
    assert (specs["gpt2"]["options"], specs["bert"]["options"]) == ({"reduction": "mean"},
                                                                  {"pll": "original", "reduction": "mean"})


def test_options_of_another_way_of_answering_are_refused(tiny_models, bear_root, lama_dir, tmp_path,  # noqa: F811
                                                         monkeypatch, capsys):
    """A statement option where every corpus is scored at the slot, a slot option where every corpus is scored by
    statement, and a ranking option on a model that writes its answers would be recorded yet change nothing: each is
    one error line naming the fix. A run over a BEAR corpus and a LAMA corpus takes both kinds."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gpt, bert = tiny_models("gpt2"), tiny_models("bert-cased")
    bear = ["run", "bear", "--relations", "P30", "--limit", "2", "--data-dir", str(bear_root), "--quiet"]
    lama = ["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "2", "--data-dir", str(lama_dir),
            "--quiet"]
    cases = (
        ([*lama, "--predictors", f"b={bert}", "--set", "reduction=mean"],
         "--set b.reduction=mean applies to statement scoring (scoring=statement, the default on BEAR corpora) only; "
         "add --set b.scoring=statement or drop it"),
        ([*bear, "--predictors", f"b={bert}", "--set", "b.scoring=slot", "--set", "b.pll=original"],
         "--set b.pll=original applies to statement scoring (scoring=statement, the default on BEAR corpora) only; "
         "add --set b.scoring=statement or drop it"),
        ([*bear, "--predictors", f"b={bert}", "--set", "b.candidates=full"],
         "--set b.candidates=full applies to slot scoring (scoring=slot, the default except on BEAR corpora) only; "
         "add --set b.scoring=slot or drop it"),
        ([*lama, "--predictors", f"g={gpt}", "--set", "g.answer=generate", "--set", "g.scoring=statement"],
         "--set g.scoring=statement applies to ranking (answer=rank) only; set --set g.answer=rank or drop it"),
    )
    for n, (argv, said) in enumerate(cases):
        code, _, err = run_kbc([*argv, "--out", str(tmp_path / str(n))], capsys)
        assert (code, err.splitlines()[-1]) == (2, f"error: {said}")
        assert not (tmp_path / str(n)).exists()
    out = tmp_path / "mixed"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "trex", "--relations", "P30", "P19", "--limit", "2",
                            "--data-dir", str(lama_dir.parent), "--quiet", "--predictors", f"b={bert}", "--set",
                            "b.reduction=mean", "--set", "b.candidates=full", "--out", str(out)], capsys)
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["predictor_specs"]["b"]["options"] == {
        "candidates": "full", "reduction": "mean"}


def test_every_language_model_factory_refuses_the_options_of_another_way_of_answering_itself():
    """The check is each factory's own `check_options` hook (given the run's corpora), so a language model named any
    way (a hub id, a folder, the registry's `bert` with model=) refuses what it would record yet not use."""
    from bridge.predictors.registry import ENTRIES, resolve
    from bridge.run.options import accepted
    from eval.errors import ConfigError

    factories = {resolve(name) for name in (*ENTRIES, "bert-base-cased", "gpt2", "t5-base")}
    models = sorted((f for f in factories if "scoring" in accepted(f)), key=lambda f: f.__name__)
    assert [f.__name__ for f in models] == ["make_bert", "make_causal", "make_masked", "make_seq2seq"]
    for factory in models:
        with pytest.raises(ConfigError) as slot:
            factory.check_options("m", {"reduction": "mean"}, ["trex"])
        assert str(slot.value) == ("--set m.reduction=mean applies to statement scoring (scoring=statement, the "
                                   "default on BEAR corpora) only; add --set m.scoring=statement or drop it")
        factory.check_options("m", {"reduction": "mean"}, ["bear", "trex"])  # scored by statement on BEAR


def test_scoring_options_are_said_where_results_are_read(tiny_models, bear_root, tmp_path, monkeypatch,  # noqa: F811
                                                          capsys):
    """Two runs of one model apart only in the reduction: summary.md names each predictor's options that are not the
    defaults (and a template other than the first), and the leaderboard tells the two rows apart."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gpt, bert = tiny_models("gpt2"), tiny_models("bert-cased")
    argv = ["run", "bear", "--relations", "P30", "--limit", "5", "--data-dir", str(bear_root), "--bootstrap", "0",
            "--predictors", f"gpt2={gpt}", f"bert={bert}"]
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    printed = {}
    for out, more in ((a, []), (b, ["--set", "reduction=mean", "--set", "bert.pll=original"]),
                      (c, ["--template", "1", "--compat", "lm-pub-quiz"])):
        code, printed[out], err = run_kbc([*argv, *more, "--out", str(out)], capsys)
        assert code == 0, err
    said = {out: [line for line in (out / "summary.md").read_text().splitlines()
                  if "statement scoring" in line or "--template" in line] for out in (a, b, c)}
    assert said == {
        a: ["- `gpt2`: statement scoring with the default options.",
            "- `bert`: statement scoring with the default options."],
        b: ["- `gpt2`: statement scoring with reduction=mean.",
            "- `bert`: statement scoring with pll=original, reduction=mean."],
        c: ["- `gpt2`: statement scoring with compat=lm-pub-quiz.",
            "- `bert`: statement scoring with compat=lm-pub-quiz.", "- bear: asked with `--template 1`."]}
    # the printed tables are followed by the options that are not the defaults
    assert [[line for line in printed[out].splitlines() if "statement scoring" in line or "--template" in line]
            for out in (a, b, c)] == [[], *([line.removeprefix("- ") for line in said[out]] for out in (b, c))]
    code, board, err = run_kbc(["leaderboard", str(a), str(b), "--format", "json"], capsys)
    assert code == 0, err
    assert {(Path(r["run"]).name, r["predictor"]): r["spec"] for r in json.loads(board)["rows"]} == {
        ("a", "gpt2"): f"{gpt} (reduction=sum)", ("b", "gpt2"): f"{gpt} (reduction=mean)",
        ("a", "bert"): f"{bert} (pll=within_word_l2r, reduction=sum)",
        ("b", "bert"): f"{bert} (pll=original, reduction=mean)"}
    code, _, err = run_kbc(["report", str(c), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    report = (tmp_path / "report" / "report.md").read_text()
    assert all(line.removeprefix("- ") in report for line in said[c])


def test_summary_says_the_instance_weighted_accuracy(bear_root, tmp_path, monkeypatch, capsys):
    """P30 (150 facts) and P36 (60): freq's Total is the plain mean 9.17 of 16.67 (25 of 150) and 1.67 (1 of 60);
    lm-pub-quiz's overall accuracy weights relations by their facts, 26 of 210 = 12.38."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "bear", "--relations", "P30", "P36", "--predictors", "freq", "--data-dir",
                            str(bear_root), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    assert _p1(out, "freq")["all"] == pytest.approx((25 / 150 + 1 / 60) / 2 * 100)
    lines = [line for line in (out / "summary.md").read_text().splitlines() if "weighted" in line]
    assert lines == ["- bear: P@1 (%) with each relation weighted by its facts, as lm-pub-quiz's overall accuracy "
                     "(raw, shared facts; the Total is the plain mean over relations): freq 12.38."]


def test_bear_relations_are_named_in_tables(bear_root, tmp_path, monkeypatch, capsys):
    """BEAR's files name no relation: the names come from LAMA's and FewRel's files staged beside it; a relation of
    neither (P6886) is shown by its id once, never as `P6886 P6886`."""
    from bridge.report.data import relation_labels

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    corpus = load_bear("bear", bear_root, ["P30", "P105", "P6886", "P1412"])
    names = {r: rel.label for r, rel in corpus.relations.items()}
    assert names == {"P30": "continent", "P105": "taxon rank", "P6886": "P6886",
                     "P1412": "languages spoken, written or signed"}
    out = tmp_path / "run"
    code, printed, err = run_kbc(["run", "bear", "--relations", "P30", "P6886", "--predictors", "freq", "--data-dir",
                                  str(bear_root), "--out", str(out), "--bootstrap", "0"], capsys)
    assert code == 0, err
    assert printed.splitlines()[1] == ("| corpus | predictor | answer space (mean) | #facts | P30 continent (n=150) | "
                                       "P6886 (n=150) | Total | Total 95% CI |")
    config = json.loads((out / "config.json").read_text())
    assert relation_labels(config) == {"P30": "continent"}
    from bridge.serve.runs import _relation_rows

    rows = json.loads((out / "summary.json").read_text())
    shown = _relation_rows(rows, ["P30", "P6886"], "p@1", "shared", config["relation_labels"], sorted)
    assert [(r["relation"], r["label"]) for r in shown] == [("P30", "continent"), ("P6886", "")]


def test_a_statement_scoring_rerun_says_how_many_results_its_result_cache_gave(tiny_models, bear_root, tmp_path,  # noqa: F811
                                                                               monkeypatch, capsys):
    """Statement scores come from the result cache on a rerun, causal and masked alike: the run says so and how
    many, as typed querying and the masked engine do."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gpt, bert = tiny_models("gpt2"), tiny_models("bert-cased")
    lines = []
    for out in ("first", "second"):
        code, _, err = run_kbc(["run", "bear", "--relations", "P412", "--limit", "2", "--predictors", f"gpt={gpt}",
                                f"bert={bert}", "--data-dir", str(bear_root), "--out", str(tmp_path / out)], capsys)
        assert code == 0, err
        lines.append([line for line in err.splitlines() if "result cache" in line])
    path = tmp_path / "cache" / "lm" / "results.sqlite"
    assert lines[0] == []
    assert lines[1] == [f"bear / gpt: 12 of 12 scored results read from the result cache ({path}), 0 computed",
                        f"bear / bert: 12 of 12 scored results read from the result cache ({path}), 0 computed"]


def _tiny_llama(root: Path) -> Path:
    """A 2-layer Llama (rotary positions) with GPT-2's tokenizer set to pad on the left, as Llama's tokenizers do."""
    import torch
    from lm_fixtures import tokenizer_for
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tokenizer_for("gpt2")
    tokenizer.padding_side = "left"
    torch.manual_seed(3)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                         initializer_range=0.2, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    out = root / "tiny-llama-left"
    LlamaForCausalLM(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_causal_statement_scores_equal_one_plain_pass_per_statement(bear_root, tmp_path, monkeypatch, capsys):
    """Options of several lengths, a rotary model, a tokenizer padding on the left: every score equals the summed
    log p of the statement's tokens after BOS in its own unpadded pass, at any batch size."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    llama = _tiny_llama(tmp_path)
    tokenizer, model = AutoTokenizer.from_pretrained(llama), AutoModelForCausalLM.from_pretrained(llama).eval()

    def plain(text: str) -> float:
        ids = torch.tensor([[tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]])
        with torch.inference_mode():
            logp = torch.log_softmax(model(ids).logits[0, :-1].float(), -1)
        return float(logp.gather(1, ids[0, 1:, None]).sum())

    for batch in ("1", "64"):
        out = tmp_path / f"b{batch}"
        code, _, err = run_kbc(["run", "bear", "--relations", "P30", "--limit", "2", "--predictors", f"llama={llama}",
                                "--batch-size", batch, "--set", "cache=off", "--data-dir", str(bear_root), "--out",
                                str(out), "--quiet"], capsys)
        assert code == 0, err
        for record in map(json.loads, (out / "predictions" / "bear" / "llama" / "P30.jsonl").read_text().splitlines()):
            scored = {label: score for label, score, _ in record["answers"]}
            expected = {label: plain(record["prompt"].replace("[MASK]", label)) for label in scored}
            assert len({len(tokenizer(label)["input_ids"]) for label in scored}) > 1  # options of several lengths
            assert scored == pytest.approx(expected, abs=1e-4)
