"""`kbc run coherency --prompts SET` with several prompts per relation: every prompt asked, per-prompt coherency
and the random-prompt draws of the coherency paper's Table 3."""

from __future__ import annotations

import json
import random
import re
from statistics import fmean

from cli_support import run_kbc

from bridge.predictors import registry
from eval.types import Answer, Prediction
from kb.freq import FreqPredictor

PROMPTS = {"P36": [("a", "The capital of [X] is [Y] ."), ("b", "[X] has its capital in [Y] .")],
           "P47": [("a", "[X] shares a border with [Y] ."), ("b", "[X] borders [Y] ."),
                   ("c", "[Y] is a neighbour of [X] .")]}


class Recall(FreqPredictor):
    """Answers the true counterpart first, except where the template and the known label together make it forget
    (then Freq's ranking): a predictor whose coherency depends on the prompt."""

    name = "recall"

    def __init__(self, facts) -> None:
        facts = list(facts)
        super().__init__(facts)
        self._true: dict[tuple[str, str, str], Answer] = {}
        for f in facts:
            self._true.setdefault((f.relation, "object", f.subject.label), Answer(f.object.label, 0.0, f.object.id))
            self._true.setdefault((f.relation, "subject", f.object.label), Answer(f.subject.label, 0.0, f.subject.id))

    def predict(self, queries, depth):
        out = []
        for q, freq in zip(queries, super().predict(queries, depth)):
            true = self._true.get((q.relation, q.slot, q.known.label))
            if true is None or (len(q.template) + len(q.known.label)) % 3 == 0:
                out.append(freq)
            else:
                out.append(Prediction(q.uid, (true, *(a for a in freq.answers if a.label != true.label))[:depth]))
        return out


def make_recall(name, ctx):
    return Recall(ctx.corpus.facts)


def _prompt_file(path, chosen: dict[str, list[str]]):
    path.write_text("".join(json.dumps({"relation": rel, "template": t, "id": pid}) + "\n"
                            for rel, prompts in PROMPTS.items() for pid, t in prompts if pid in chosen[rel]))
    return path


def _run(tmp_path, capsys, lama_dir, out, prompts, *extra):
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "12",
                            "--predictors", "recall", "--prompts", str(prompts), "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet", *extra], capsys)
    assert code == 0, err
    return json.loads((out / "summary.json").read_text())


def test_every_prompt_is_asked_and_the_draws_are_the_papers(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(registry.ENTRIES, "recall", (f"{__name__}:make_recall", "test"))
    every = _prompt_file(tmp_path / "every.jsonl", {rel: [p for p, _ in ps] for rel, ps in PROMPTS.items()})
    rows = _run(tmp_path, capsys, lama_dir, tmp_path / "multi", every, "--prompt-draws", "7", "--seed", "3")
    own = [r for r in rows if r["scope"] == "own"]
    per_prompt = {(r["group"], r["prompt"], r["metric"]): r for r in own if r.get("prompt")}
    assert {(g, p) for g, p, _ in per_prompt} == {(rel, p) for rel, ps in PROMPTS.items() for p, _ in ps}
    records = [json.loads(line) for line in (tmp_path / "multi/predictions/trex/recall/second/P47.jsonl")
               .read_text().splitlines()]
    assert {r["prompt_id"] for r in records} == {"a", "b", "c"}
    assert all(r["uid"].endswith(f":coherency:r{r['round']}s2@{r['prompt_id']}") for r in records)
    config = json.loads((tmp_path / "multi/config.json").read_text())
    assert config["scoring"] == {"prompt_draws": 7, "prompt_seed": 3}

    # each prompt alone, asked as a prompt file with one prompt per relation, scores what its per-prompt rows say
    for k, pick in enumerate([("a", "a"), ("b", "b"), ("a", "c")]):
        alone = _prompt_file(tmp_path / f"alone{k}.jsonl", {"P36": [pick[0]], "P47": [pick[1]]})
        single = _run(tmp_path, capsys, lama_dir, tmp_path / f"alone{k}", alone, "--seed", "3")  # the same sample
        assert not any(r.get("prompt") for r in single)
        for rel, pid in zip(("P36", "P47"), pick):
            for metric in ("coherency", "coherency_round1", "coherency_round2", "c1", "all_correct"):
                mine = next(r for r in single if (r["scope"], r["group"], r["metric"]) == ("own", rel, metric))
                if metric in ("c1", "all_correct"):  # no per-prompt rows: the pooled row below
                    continue
                assert per_prompt[(rel, pid, metric)]["value"] == mine["value"], (rel, pid, metric)
                assert per_prompt[(rel, pid, metric)]["n_facts"] == mine["n_facts"]
    values = {rel: {p: per_prompt[(rel, p, "coherency")]["value"] for p, _ in ps} for rel, ps in PROMPTS.items()}
    assert len({v for by in values.values() for v in by.values()}) > 1  # the prompts do differ
    # the usual rows pool every prompt's units: with each fact asked under every prompt, the mean over prompts
    for rel in PROMPTS:
        pooled = next(r for r in own if (r["group"], r["metric"]) == (rel, "coherency") and not r.get("prompt"))
        assert abs(pooled["value"] - fmean(values[rel].values())) < 1e-9

    # the draws: one Random(seed), relations in sorted order, a prompt among each relation's sorted ids
    rng = random.Random(3)
    drawn = [fmean(values[rel][rng.choice(sorted(values[rel]))] for rel in sorted(values)) for _ in range(7)]
    got = {r["metric"]: r["value"] for r in own if r["group"] == "all" and "random_prompt" in r["metric"]}
    assert got["coherency_random_prompt_min"] == min(drawn)
    assert got["coherency_random_prompt_max"] == max(drawn)
    assert abs(got["coherency_random_prompt_avg"] - fmean(drawn)) < 1e-9
    # Table 3's reading: each relation's worst and best prompt among those the draws took, macro over relations
    rng = random.Random(3)
    picks = [{rel: rng.choice(sorted(values[rel])) for rel in sorted(values)} for _ in range(7)]
    taken = {rel: [values[rel][pick[rel]] for pick in picks] for rel in values}
    extremes = {r["metric"]: r["value"] for r in own if r["group"] == "all" and "drawn_prompt" in r["metric"]}
    assert extremes["coherency_drawn_prompt_worst"] == fmean(min(v) for v in taken.values())
    assert extremes["coherency_drawn_prompt_best"] == fmean(max(v) for v in taken.values())
    worst, best = extremes["coherency_drawn_prompt_worst"], extremes["coherency_drawn_prompt_best"]
    assert worst <= min(drawn) <= max(drawn) <= best
    assert "worst drawn prompt" in (tmp_path / "multi/summary.md").read_text()
    assert "coherency random prompt min" in (tmp_path / "multi/summary.md").read_text()
    code, shown, err = run_kbc(["show", str(tmp_path / "multi"), "--uid", records[0]["fact_uid"]], capsys)
    assert code == 0, err
    verdicts = r"round 1: c1 (yes|no), coherent (yes|no); round 2: c2 (yes|no), coherent (yes|no)"
    assert all(re.search(rf"^  (recall)? +@{p} +{verdicts}$", shown, re.M) for p in "abc")  # each prompt its line


def test_a_resumed_prompt_set_run_writes_what_one_run_writes(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(registry.ENTRIES, "recall", (f"{__name__}:make_recall", "test"))
    every = _prompt_file(tmp_path / "every.jsonl", {rel: [p for p, _ in ps] for rel, ps in PROMPTS.items()})
    _run(tmp_path, capsys, lama_dir, tmp_path / "whole", every)
    part = tmp_path / "part"
    _run(tmp_path, capsys, lama_dir, part, every)
    for name in ("P47.jsonl",):  # a run cut short after P36: P47's records lost, then resumed
        for stage in ("first", "second"):
            (part / "predictions/trex/recall" / stage / name).unlink()
    _run(tmp_path, capsys, lama_dir, part, every)
    for path in sorted((tmp_path / "whole/predictions").rglob("*.jsonl")):
        assert (part / path.relative_to(tmp_path / "whole")).read_bytes() == path.read_bytes(), path.name
    for name in ("summary.json", "instances.parquet"):
        assert (part / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_the_report_of_a_prompt_set_run_names_the_set_and_shows_the_draws(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(registry.ENTRIES, "recall", (f"{__name__}:make_recall", "test"))
    every = _prompt_file(tmp_path / "every.jsonl", {rel: [p for p, _ in ps] for rel, ps in PROMPTS.items()})
    rows = _run(tmp_path, capsys, lama_dir, tmp_path / "multi", every, "--prompt-draws", "7", "--seed", "3")
    code, _, err = run_kbc(["report", str(tmp_path / "multi"), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    report = (tmp_path / "report/report.md").read_text()
    summary_md = (tmp_path / "multi/summary.md").read_text()
    asked = next(line[2:] for line in summary_md.splitlines() if line.startswith("- Asked with prompt set"))
    assert "every.jsonl" in asked and f"\n{asked}" in report  # the set the scores pool, named as summary.md does
    across = summary_md.split("## Across prompts (raw, shared facts)\n\n", 1)[1].split("\n\n", 1)[0]
    assert across.count("\n") == 2 and across in report  # the header, the rule and recall's row, as summary.md
    shared = {r["metric"]: r["value"] for r in rows if (r["scope"], r["group"]) == ("shared", "all")}
    assert f"| trex | recall | {shared['coherency_random_prompt_min']:.2f} |" in report


def _numbered_run(lama_dir, tmp_path, capsys, monkeypatch) -> dict:
    """A Freq coherency run of P36 under prompts `set:10` and `set:2` (numbered out of text order); its first
    second-step record."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    prompts = tmp_path / "numbered.jsonl"
    prompts.write_text("".join(json.dumps({"relation": "P36", "template": t, "id": pid}) + "\n" for pid, t in
                               [("set:10", "The capital of [X] is [Y] ."), ("set:2", "[X] has its capital in [Y] .")]))
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "--limit", "3",
                            "--predictors", "freq", "--prompts", str(prompts), "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    record = json.loads((tmp_path / "run/predictions/trex/freq/second/P36.jsonl").read_text().splitlines()[0])
    return record


def test_show_lists_a_facts_prompts_in_the_order_of_their_numbers(lama_dir, tmp_path, capsys, monkeypatch):
    """`kbc show` prints round 1 and 2 under `set:2` before those under `set:10`, as the explorer orders prompts."""
    record = _numbered_run(lama_dir, tmp_path, capsys, monkeypatch)
    code, shown, err = run_kbc(["show", str(tmp_path / "run"), "--uid", record["fact_uid"]], capsys)
    assert code == 0, err
    heads = [line.split(" asks")[0].strip() for line in shown.splitlines() if " asks the " in line]
    assert heads == ["round 1 @set:2", "round 2 @set:2", "round 1 @set:10", "round 2 @set:10"]


def test_show_gives_each_prompt_of_a_set_its_own_verdict_line(lama_dir, tmp_path, capsys, monkeypatch):
    """Under a prompt set the c1/c2 and coherent verdicts read one prompt a line, ids lined up, every value kept."""
    record = _numbered_run(lama_dir, tmp_path, capsys, monkeypatch)
    code, shown, err = run_kbc(["show", str(tmp_path / "run"), "--uid", record["fact_uid"], "--json"], capsys)
    assert code == 0, err
    rounds = {(r["prompt_id"], r["round"]): r for r in json.loads(shown)["facts"][0]["predictors"]["freq"]["rounds"]}
    code, shown, err = run_kbc(["show", str(tmp_path / "run"), "--uid", record["fact_uid"]], capsys)
    assert code == 0, err

    def said(pid: str) -> str:
        return "; ".join(f"round {n}: c{n} {'yes' if rounds[pid, n][f'c{n}'] else 'no'}, coherent "
                         f"{'yes' if rounds[pid, n]['coherent'] else 'no'}" for n in (1, 2))

    lines = shown.splitlines()
    start = lines.index(f"  freq  @set:2   {said('set:2')}")
    assert lines[start + 1] == f"        @set:10  {said('set:10')}"
    assert lines[start + 2].strip().startswith("round 1 @set:2 asks the ")
