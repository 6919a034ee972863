"""Local models answering by `generate`: batched left-padded generation, exact prompts in the records, exact match
instead of P@k, and a rerun that asks the model nothing."""

from __future__ import annotations

import json

import pytest
from lm_fixtures import tiny_model_dir, tiny_t5_dir

from eval.answer_text import parse_generation
from lm.generation import GenerationParams, LocalGenerator


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return tiny_model_dir("gpt2", tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    return tiny_t5_dir(tmp_path_factory.mktemp("t5"))


def direct(path, kind: str, prompt: str, max_new_tokens: int) -> str:
    """What the model writes for one prompt alone, unpadded, straight from transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = (AutoModelForCausalLM if kind == "causal" else AutoModelForSeq2SeqLM).from_pretrained(path).eval()
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        out = model.generate(input_ids=ids, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
    new = out[0].tolist() if kind == "seq2seq" else out[0, ids.shape[1]:].tolist()
    return tok.decode(new, skip_special_tokens=True)


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_batched_generation_equals_one_prompt_at_a_time(kind, gpt2_dir, t5_dir):
    from lm.loading import load

    path = gpt2_dir if kind == "causal" else t5_dir
    loaded = load(str(path), kind)
    gen = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name="m",
                         seq2seq=kind == "seq2seq", batch_size=3)
    prompts = ["Dante was born in", "The capital of the Republic of France is the city of", "Rome", "Dante was born in"]
    out = gen.generate(prompts, GenerationParams(max_new_tokens=6))
    assert sorted(out) == sorted(prompts[:3])  # identical prompts once
    for prompt in prompts[:3]:
        assert out[prompt].text == direct(path, kind, prompt, 6)
        assert out[prompt].completion_tokens <= 6 and out[prompt].prompt_tokens > 0
    text = out[prompts[0]].text
    stop = text[2:4]
    cut = gen.generate(prompts[:1], GenerationParams(max_new_tokens=6, stop=(stop,)))[prompts[0]].text
    assert cut == text[:text.find(stop)]


def run_generate(lama_dir, tmp_path, model, out, extra=(), corpus="google_re", relations=("place_of_birth",),
                 limit=4):
    import os

    from bridge.cli import main

    os.environ["KBC_CACHE"] = str(tmp_path / "cache")  # each test's own cache (monkeypatched by `own_cache`)

    argv = ["run", "lama", "--corpus", corpus, "--relations", *relations, "--predictors", f"llm={model}",
            "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=5", *extra, "--limit", str(limit),
            "--data-dir", str(lama_dir), "--out", str(out), "--store", str(tmp_path / "store"), "--quiet",
            "--bootstrap", "50"]
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), exc


def records(out, corpus="google_re", rel="place_of_birth", name="llm"):
    path = out / "predictions" / corpus / name / f"{rel}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_lama_records_hold_the_exact_prompt_the_raw_generation_and_exact_match(gpt2_dir, lama_dir, tmp_path,
                                                                               capsys):
    out = tmp_path / "run"
    run_generate(lama_dir, tmp_path, gpt2_dir, out, ["--set", "llm.prompt=lama"])
    err = capsys.readouterr().err
    recs = records(out)
    assert len(recs) == 4
    for r in recs:
        assert r["prompt"] == f"{r['subject']} was born in"
        assert r["generation"] == direct(gpt2_dir, "causal", r["prompt"], 5)
        assert r["parsed"] == list(parse_generation(r["generation"], many=False).items)
        assert r["rank_raw"] is None and r["rank_filtered"] is None
        assert r["em_raw"] == bool(r["answers"] and (r["answers"][0][2] == r["gold_id"] if r["answers"][0][2]
                                                     else r["answers"][0][0] == r["gold"]))
    assert ("google_re / llm: 4 queries: 4 asked, 0 from the cache, 0 sharing another query's prompt, "
            "0 unanswered; generations 4; tokens used") in err
    rows = json.loads((out / "summary.json").read_text())
    mine = {(r["metric"], r["setting"], r["scope"]) for r in rows if r["predictor"] == "llm" and r["group"] == "all"}
    assert mine == {(m, s, sc) for m in ("em", "abstain", "unlinked") for s in ("raw", "filtered")
                    for sc in ("own", "shared")}  # no P@k, no MRR: there is no ranking
    em = next(r for r in rows if r["metric"] == "em" and r["setting"] == "raw" and r["group"] == "place_of_birth"
              and r["scope"] == "own")
    assert em["value"] == 100.0 * sum(r["em_raw"] for r in recs) / 4 and em["n_facts"] == 4
    unlinked = next(r for r in rows if r["metric"] == "unlinked" and r["setting"] == "raw" and r["group"] == "all"
                    and r["scope"] == "own")
    assert unlinked["value"] == 100.0 * sum(len(r["unlinked"]) / len(r["parsed"]) for r in recs if r["parsed"]) / 4
    assert unlinked["stderr"] is not None or len({bool(r["unlinked"]) for r in recs}) == 1
    md = (out / "summary.md").read_text()
    assert "P@k and MRR are not applicable to llm (answers written by generation, no ranking)" in md
    assert "## Exact match (%), shared facts" in md
    # a rerun into another directory asks the model nothing: every response comes from the cache
    run_generate(lama_dir, tmp_path, gpt2_dir, tmp_path / "again", ["--set", "llm.prompt=lama"])
    assert ("4 queries: 0 asked, 4 from the cache, 0 sharing another query's prompt, 0 unanswered; generations 0; "
            "tokens used 0 prompt + 0 completion") in capsys.readouterr().err
    assert records(tmp_path / "again") == recs
    # kbc compare says how a written answer is judged, since a compared predictor answered by generation
    from cli_support import run_kbc

    code, text, err = run_kbc(["compare", str(out), "llm", "llm", "--b-run", str(tmp_path / "again")], capsys)
    assert code == 0, err
    assert text.splitlines()[0] == (f"A = llm of {out}, B = llm of {tmp_path / 'again'}, setting raw; a fact is right "
                                    "when the gold is ranked 1st (answered by generation: when its answer is the gold)")
    lines = text.splitlines()
    assert [line.split(": Sample: ")[0] for line in lines[1:3]] == [str(out), str(tmp_path / "again")]
    assert lines[4].split()[-6:] == ["EM", "A", "EM", "B", "p", "McNemar"]
    assert lines[7].startswith("EM llm - llm, macro over relations: +0.00 points")
    code, text, err = run_kbc(["compare", str(out), "llm", "llm", "--b-run", str(tmp_path / "again"), "--json"],
                              capsys)
    assert code == 0 and json.loads(text)["metric"] == "EM"  # what its shares right (`p1_a`, `p1_b`) measure
    # a ranking and a generating predictor: no measure scores both, so no difference is printed (as `kbc report`)
    mixed = tmp_path / "mixed"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors",
                            "freq", f"llm={gpt2_dir}", "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=5",
                            "--set", "llm.prompt=lama", "--limit", "4", "--data-dir", str(lama_dir), "--out",
                            str(mixed), "--store", str(tmp_path / "store"), "--quiet", "--bootstrap", "50"], capsys)
    assert code == 0, err
    code, text, err = run_kbc(["compare", str(mixed), "freq", "llm"], capsys)
    assert (code, text) == (2, "")
    assert err == ("error: no comparison of freq and llm in google_re: freq ranks its answers (P@1), llm writes its "
                   "answers by generation (EM); no metric scores both, and a difference of two measures is no delta; "
                   "compare two predictors of one kind\n")


def test_a_damaged_cache_row_is_asked_again_not_served(gpt2_dir, lama_dir, tmp_path, capsys):
    import sqlite3

    run_generate(lama_dir, tmp_path, gpt2_dir, tmp_path / "one", ["--set", "llm.prompt=lama"], limit=2)
    db = sqlite3.connect(tmp_path / "cache" / "lm" / "responses.sqlite")
    db.execute("UPDATE responses SET value = replace(value, '\"text\": \"', '\"text\": \"X') WHERE rowid = 1")
    db.commit()
    db.close()
    capsys.readouterr()
    run_generate(lama_dir, tmp_path, gpt2_dir, tmp_path / "two", ["--set", "llm.prompt=lama"], limit=2)
    err = capsys.readouterr().err
    assert ("2 queries: 1 asked, 1 from the cache, 0 sharing another query's prompt, 0 unanswered; generations 1;"
            ) in err and "1 damaged cache rows asked again" in err
    assert records(tmp_path / "two") == records(tmp_path / "one")


def test_t5_answers_trex_by_generation_with_the_question_style(t5_dir, lama_dir, tmp_path):
    out = tmp_path / "t5"
    run_generate(lama_dir, tmp_path, t5_dir, out, ["--set", "llm.prompt=question"], corpus="trex", relations=["P19"],
                 limit=3)
    recs = records(out, "trex", "P19")
    for r in recs:
        assert r["prompt"] == f"Q: Fill in the blank: {r['subject']} was born in ___.\nA:"
        assert r["generation"] == direct(t5_dir, "seq2seq", r["prompt"], 5)


def test_generation_options_without_answer_generate_are_refused(gpt2_dir, lama_dir, tmp_path, capsys):
    from cli_support import run_kbc

    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--predictors", f"llm={gpt2_dir}", "--set",
                            "llm.shots=2", "--limit", "1", "--data-dir", str(lama_dir), "--out", str(tmp_path / "o"),
                            "--store", str(tmp_path / "s")], capsys)
    assert code == 2
    assert err.endswith("error: --set llm.shots applies to answer=generate only; add --set llm.answer=generate or "
                        "drop it\n")


def test_the_lmkbc2024_baseline_prompt_without_a_chat_template(gpt2_dir, lama_dir, tmp_path, capsys):
    """A model without a chat template gets the baseline's plain prompt: train examples "question answers" of any
    relation, one a line, then the question; the set is what the first line lists. The examples come from every
    relation's train rows whatever --relations asks: a run of more relations asks the same prompts."""
    from cli_support import run_kbc

    from eval.lmkbc import load_lmkbc, resolve_lmkbc_dir
    from eval.question_prompts import QUESTIONS, read_questions

    rel = "personHasCityOfDeath"
    train = {f"train:{f.uid}": f for f in load_lmkbc(lama_dir, "train").facts}
    questions = read_questions(resolve_lmkbc_dir(lama_dir) / QUESTIONS)
    asked: dict[tuple[str, ...], list[dict]] = {}
    said = []
    for relations in ((rel,), (rel, "seriesHasNumberOfEpisodes")):
        out = tmp_path / "-".join(relations)
        code, _, err = run_kbc(["run", "lmkbc", "--relations", *relations, "--predictors", f"llm={gpt2_dir}",
                                "--set", "llm.answer=generate", "--set", "llm.prompt=lmkbc2024", "--set", "llm.shots=2",
                                "--set", "llm.max_new_tokens=6", "--limit", "2", "--data-dir", str(lama_dir), "--out",
                                str(out), "--quiet", "--bootstrap", "0"], capsys)
        assert code == 0, err
        said.append(err)
        asked[relations] = [json.loads(line) for line in
                            (out / "predictions" / "lmkbc2024" / "llm" / f"{rel}.jsonl").read_text().splitlines()]
    recs = asked[(rel,)]
    assert len(recs) == 2
    assert [(r["shots"], r["prompt"]) for r in recs] == [(r["shots"], r["prompt"])
                                                         for r in asked[(rel, "seriesHasNumberOfEpisodes")]]
    assert {train[uid].relation for r in recs for uid in r["shots"]} - {rel}  # examples of other relations too
    for r in recs:
        shown = [train[uid] for uid in r["shots"]]
        assert len(shown) == 2 and all(f.subject.label != r["subject"] for f in shown)
        lines = [f"{questions[f.relation].replace('{subject_entity}', f.subject.label)} "
                 f"{', '.join(f.labels) or 'None'}" for f in shown]
        assert r["prompt"] == "\n".join([*lines, f"In which city did {r['subject']} die?"])
        assert r["generation"] == direct(gpt2_dir, "causal", r["prompt"], 6)
        assert r["parsed"] == list(parse_generation(r["generation"], many=True).items)
    assert "lmkbc2024 / llm: 2 queries: 2 asked, 0 from the cache" in said[0]
    import transformers

    weights = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_pretrained(gpt2_dir).parameters())
    config = json.loads((tmp_path / rel / "config.json").read_text())
    assert config["predictor_configs"]["lmkbc2024"]["llm"]["parameters"] == weights  # the leaderboard's `params`


def test_prompt_lama_says_which_relations_it_asks_as_questions(gpt2_dir, lama_dir, tmp_path, capsys):
    """P27's template ("[X] is [Y] citizen .") does not end in its slot: under prompt=lama it is asked as a question,
    and the run says so, since one run then holds two prompt styles."""
    out = tmp_path / "run"
    run_generate(lama_dir, tmp_path, gpt2_dir, out, ["--set", "llm.prompt=lama"], corpus="trex",
                 relations=("P36", "P27"), limit=2)
    err = capsys.readouterr().err
    assert ("trex: prompt=lama asks P27 as questions (\"Fill in the blank: ...\"): their templates do not end in "
            "the asked slot, so there is no sentence to continue") in err
    prompts = {r["relation"]: r["prompt"] for rel in ("P36", "P27") for r in records(out, "trex", rel)}
    assert prompts["P27"].startswith("Q: Fill in the blank: ") and not prompts["P36"].startswith("Q:")


# -- a prompt and answer longer than the model's context, progress per batch, the counts of a stopped run --

def local_args(model, lama_dir, out, tmp_path, *extra: str, limit: int = 2) -> list[str]:
    return ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", f"llm={model}", "--set",
            "llm.answer=generate", *extra, "--limit", str(limit), "--data-dir", str(lama_dir), "--out", str(out),
            "--store", str(tmp_path / "store"), "--quiet", "--bootstrap", "0"]


def test_a_prompt_and_answer_longer_than_the_context_are_one_error_line_before_any_generation(gpt2_dir):
    """The tiny GPT-2 has 256 positions: prompt tokens plus max_new_tokens may fill them, not one more."""
    from lm.loading import load

    loaded = load(str(gpt2_dir), "causal")
    gen = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name="m", seq2seq=False)
    prompt = "Dante was born in"
    n = len(loaded.tokenizer(prompt)["input_ids"])
    assert (gen.context, n) == (256, 5)
    gen.check_fits([prompt], GenerationParams(max_new_tokens=251))
    calls = []
    loaded.model.generate = lambda *a, **k: calls.append(1)
    with pytest.raises(Exception) as caught:
        gen.generate(["Rome", prompt], GenerationParams(max_new_tokens=252))
    assert str(caught.value) == ("m: a prompt of 5 tokens and max_new_tokens=252 are longer than the model's context "
                                 "of 256 tokens; use fewer shots, a shorter prompt or a smaller max_new_tokens")
    assert calls == []


@pytest.mark.parametrize(("extra", "tokens", "new"), [(("--set", "llm.shots=12", "--set", "llm.max_new_tokens=64"),
                                                       293, 64), (("--set", "llm.max_new_tokens=250"), 21, 250)])
def test_a_run_longer_than_the_context_stops_with_one_error_line(gpt2_dir, lama_dir, tmp_path, capsys, extra,
                                                                  tokens, new):
    from cli_support import run_kbc

    out = tmp_path / "run"
    code, _, err = run_kbc(local_args(gpt2_dir, lama_dir, out, tmp_path, *extra), capsys)
    assert code == 2 and "Traceback" not in err, err
    assert err.splitlines()[-1] == (
        f"error: {gpt2_dir}: a prompt of {tokens} tokens and max_new_tokens={new} are longer than the model's context "
        "of 256 tokens; use fewer shots, a shorter prompt or a smaller max_new_tokens")
    assert ("trex / llm: 2 queries: 0 asked, 0 from the cache, 0 sharing another query's prompt, 0 unanswered, "
            "2 not asked before the stop; generations 0; tokens used 0 prompt + 0 completion") in err, err


def test_the_progress_bar_moves_as_each_batch_is_generated(gpt2_dir, lama_dir, tmp_path, capsys, monkeypatch):
    from cli_support import Bar, run_kbc

    import bridge.run.runner

    monkeypatch.setattr(bridge.run.runner, "tqdm", Bar)
    real = LocalGenerator.generate

    def generate(self, prompts, params, kept=None, handed=None):
        def went(batch):
            Bar.moves.append("batch")
            handed(batch)

        return real(self, prompts, params, kept, went)

    monkeypatch.setattr(LocalGenerator, "generate", generate)
    code, _, err = run_kbc(local_args(gpt2_dir, lama_dir, tmp_path / "run", tmp_path, "--set",
                                      "llm.max_new_tokens=3", "--batch-size", "2", limit=5), capsys)
    assert code == 0, err
    assert Bar.moves == ["batch", 1, 1, "batch", 1, 1, "batch", 1]  # each answer as its batch is done
    assert Bar.shown is None
    # into another directory every answer comes from the cache: the bar says so in words, with no count of nothing
    code, _, err = run_kbc(local_args(gpt2_dir, lama_dir, tmp_path / "again", tmp_path, "--set",
                                      "llm.max_new_tokens=3", "--batch-size", "2", limit=5), capsys)
    assert code == 0, err
    assert Bar.moves == ["5 queries from the cache"] and Bar.shown == "5 queries, all from the cache"


def test_the_counts_of_a_local_run_stopped_in_its_second_batch(gpt2_dir, lama_dir, tmp_path, capsys, monkeypatch):
    """Ctrl-C as the second batch of two goes to the model: the first two are answered, the second two handed over
    with no answer, the fifth never asked; resumed, the two answered come from the cache."""
    from cli_support import run_kbc

    real = LocalGenerator.generate

    def generate(self, prompts, params, kept=None, handed=None):
        batches = []

        def went(batch):
            handed(batch)
            batches.append(batch)
            if len(batches) == 2:
                raise KeyboardInterrupt

        return real(self, prompts, params, kept, went)

    monkeypatch.setattr(LocalGenerator, "generate", generate)
    argv = local_args(gpt2_dir, lama_dir, tmp_path / "run", tmp_path, "--set", "llm.max_new_tokens=3", "--batch-size",
                      "2", limit=5)
    code, _, err = run_kbc(argv, capsys)
    assert code == 130, err
    assert ("trex / llm: 5 queries: 2 asked, 0 from the cache, 0 sharing another query's prompt, 2 unanswered, "
            "1 not asked before the stop; generations 2; tokens used ") in err, err
    monkeypatch.setattr(LocalGenerator, "generate", real)
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert ("trex / llm: 5 queries: 3 asked, 2 from the cache (2 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered; generations 3; tokens used ") in err, err


def test_the_longest_prompt_of_every_relation_is_checked_before_any_is_generated(gpt2_dir, lama_dir, tmp_path,
                                                                                  capsys):
    """P1376's prompts fit 236 new tokens (20 tokens at most), P19's longest (21) does not: nothing is generated."""
    from cli_support import run_kbc

    out = tmp_path / "run"
    argv = local_args(gpt2_dir, lama_dir, out, tmp_path, "--set", "llm.max_new_tokens=236")
    argv[argv.index("P19")] = "P1376"
    argv.insert(argv.index("P1376") + 1, "P19")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2, err
    assert err.splitlines()[-1] == (
        f"error: {gpt2_dir}: a prompt of 21 tokens and max_new_tokens=236 are longer than the model's context of 256 "
        "tokens; use fewer shots, a shorter prompt or a smaller max_new_tokens")
    assert not (out / "predictions").exists()


def test_a_seq2seq_model_with_learned_positions_takes_a_prompt_and_an_answer_each_as_long_as_its_context():
    """A tiny BART holds 32 positions in its encoder and 32 in its decoder: 40 prompt tokens or 33 new ones would
    fail on an index out of range, 32 of each are generated."""
    from lm_fixtures import tokenizer_for
    from transformers import BartConfig, BartForConditionalGeneration

    tok = tokenizer_for("roberta")
    model = BartForConditionalGeneration(BartConfig(
        vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
        pad_token_id=tok.pad_token_id, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)).eval()
    gen = LocalGenerator(model, tok, fingerprint="bart", name="m", seq2seq=True)
    long, short = " ".join(["Rome"] * 37), " ".join(["Rome"] * 29)
    assert (gen.context, len(tok(long)["input_ids"]), len(tok(short)["input_ids"])) == (32, 40, 32)
    for prompt, new, tokens in ((long, 3, 40), (short, 33, 32)):
        with pytest.raises(Exception) as caught:
            gen.generate([prompt], GenerationParams(max_new_tokens=new))
        assert str(caught.value) == (
            f"m: a prompt of {tokens} tokens or max_new_tokens={new} is longer than the model's context of 32 tokens "
            "(its encoder's and its decoder's each); use fewer shots, a shorter prompt or a smaller max_new_tokens")
    assert gen.generate([short], GenerationParams(max_new_tokens=32))[short].completion_tokens <= 32


def test_a_t5_model_names_no_context_limit(t5_dir):
    from lm.loading import load

    loaded = load(str(t5_dir), "seq2seq")
    gen = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name="m", seq2seq=True)
    assert gen.context is None


def test_the_printed_exact_match_table_names_its_setting(gpt2_dir, lama_dir, tmp_path, capsys):
    """Exact match is scored raw and filtered: the printed table says which it shows, as summary.md does."""
    from cli_support import run_kbc

    for setting in ("filtered",):  # not the default: the line cannot hold it by chance
        code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "2",
                                  "--predictors", f"g={gpt2_dir}", "--set", "g.answer=generate", "--set",
                                  "g.max_new_tokens=2", "--setting", setting, "--data-dir", str(lama_dir),
                                  "--out", str(tmp_path / setting), "--bootstrap", "0"], capsys)
        assert code == 0, err
        assert f"Exact match (%), setting {setting}, shared facts" in out.splitlines()


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_a_generation_that_spends_max_new_tokens_without_its_end_token_is_cut(kind, gpt2_dir, t5_dir):
    """Told apart from one that ended (its end-of-text token, or a stop sequence that ends it as a server's would),
    so that the counts line can say how many answers ran out of tokens."""
    from lm.loading import load

    loaded = load(str(gpt2_dir if kind == "causal" else t5_dir), kind)
    gen = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name="m",
                         seq2seq=kind == "seq2seq", batch_size=2)
    prompts = ["Dante was born in", "The capital of the Republic of France is the city of"]
    ran = gen.generate(prompts, GenerationParams(max_new_tokens=4))
    assert [ran[p].completion_tokens for p in prompts] == [4, 4]  # the tiny model writes no end token in 4
    assert [ran[p].cut for p in prompts] == [True, True]
    if kind == "causal":  # the tiny T5 writes no text to stop at
        text = ran[prompts[0]].text
        assert len(text) >= 4
        assert not gen.generate(prompts[:1], GenerationParams(max_new_tokens=4, stop=(text[2:4],)))[prompts[0]].cut
    ids = loaded.tokenizer(prompts[0], return_tensors="pt")["input_ids"]
    written = loaded.model.generate(input_ids=ids, max_new_tokens=1, do_sample=False,
                                    pad_token_id=gen.pad)[0, -1].item()
    loaded.model.generation_config.eos_token_id = written  # the model's config ends it at its first token
    ended = gen.generate(prompts[:1], GenerationParams(max_new_tokens=4))[prompts[0]]
    assert not ended.cut


def test_the_counts_line_of_a_local_model_says_how_many_answers_ran_out_of_tokens(gpt2_dir, lama_dir, tmp_path,
                                                                                 capsys):
    run_generate(lama_dir, tmp_path, gpt2_dir, tmp_path / "one", ["--set", "llm.prompt=lama"], limit=2)
    assert capsys.readouterr().err.count("; 2 answers were cut at max_new_tokens=5 before they ended (scored as "
                                         "written): raise it with --set llm.max_new_tokens=N") == 1
    run_generate(lama_dir, tmp_path, gpt2_dir, tmp_path / "two", ["--set", "llm.prompt=lama"], limit=2)
    err = capsys.readouterr().err
    assert "0 asked, 2 from the cache" in err and "; 2 answers were cut at max_new_tokens=5 before they ended" in err
