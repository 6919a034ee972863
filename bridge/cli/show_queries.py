"""`kbc show` for runs that ask each fact several queries: negated and misprimed LAMA (three probes), coherency (two
rounds of two steps) and the evidence sentences (one query per sentence).

A fact is found by its uid or that of any of its queries, or by subject and relation; each predictor's queries of it
are shown together, with the verdicts its experiment scores it by, worked out by the experiment's own code
(`instances`, `outcomes`, `misprime_scores`) as its summaries are, or read from the records that hold them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bridge.cli.fact_lines import (
    answer_dicts,
    fact_head,
    gold_ranks_text,
    indented,
    not_answered,
    prompt_text,
    ranked_entry,
    ranked_lines,
)
from bridge.run.directory import RunDir
from eval.answer_text import GENERATED, generation_fields
from eval.report import prompt_order

YES = {True: "yes", False: "no"}
NAMED = ("subject", "subject_id", "gold", "gold_id", "other_valid")


@dataclass(frozen=True)
class Asked:
    """How one experiment's fact is found and shown: the fact uid of a query uid, its `--json` object, its text."""

    fact_of: Callable[[str], str]
    as_json: Callable[[RunDir, dict], dict]
    as_text: Callable[[dict], list[str]]


def asked_view(experiment: str) -> Asked | None:
    """The view of a run of `experiment` that asks each fact several queries; None for one asked once."""
    from bridge.experiments import coherency, evidence, negated

    return {"negated": Asked(negated.fact_uid, negated_json, negated_text),
            "coherency": Asked(coherency.fact_uid, coherency_json, coherency_text),
            "evidence": Asked(evidence.fact_uid, evidence_json, evidence_text)}.get(experiment)


def _head(fact: dict) -> dict:
    """The fact's corpus, relation, uid, subject, gold and other valid objects, read from the first of its records
    that names them (an answered one first: a dropped record names no other valid object)."""
    records = [r for stages in fact["records"].values() for stage in stages.values() for r in stage.values()
               if "subject" in r]
    named = next((r for r in records if "dropped" not in r), records[0])
    out = {"corpus": fact["corpus"], "relation": named["relation"], "uid": fact["uid"]}
    return out | {key: named.get(key) for key in NAMED}


def _query(run: RunDir, corpus: str, name: str, record: dict) -> dict:
    """One ranked query of a predictor: its uid and prompt as recorded, its gold ranks and answers."""
    return {"uid": record["uid"], "prompt": record.get("prompt"),
            **(not_answered(record) or ranked_entry(run, corpus, name, record))}


def _query_lines(entry: dict, gold: str, pad: str) -> list[str]:
    """A ranked query's gold ranks and top answers, or why it was not answered."""
    if entry["status"] != "answered":
        return [f"{pad}{entry['status']}" + (f": {entry['reason']}" if "reason" in entry else "")]
    return [f"{pad}{gold_ranks_text(entry)}", *ranked_lines(entry["answers"], {gold}, pad)]


def _width(fact: dict) -> int:
    return max(len(name) for name in fact["predictors"])


def _not_answered(name: str, entry: dict, width: int) -> list[str]:
    return [f"  {name.ljust(width)}  {entry['status']}" + (f": {entry['reason']}" if "reason" in entry else "")]


# negated and misprimed LAMA

PROBES = ("positive", "negated", "misprimed")


def negated_json(run: RunDir, fact: dict) -> dict:
    """A fact's three probes per predictor (prompt, gold ranks, answers) and what the experiment scores on them:
    whether the negated probe's top answer is the positive one's (`overlap`) and their Spearman rho, whether the
    misprimed probe's top answer is the prime (`became_prime`) and, for a fact the positive probe gets right,
    whether the prime made it wrong (`p1_drop`); null where the fact has no such probe (or no rho)."""
    from bridge.experiments.negated import NegatedExperiment
    from eval.negated import misprime_scores

    experiment = NegatedExperiment()
    out = _head(fact) | {"predictors": {}}
    for name in run.predictors:
        records = fact["records"].get(name, {}).get("", {})
        unanswered = not_answered(records.get(fact["uid"]))
        if unanswered is not None:
            out["predictors"][name] = unanswered
            continue
        unit = experiment.instances({"": records})[fact["uid"]]
        negated, primed, lowered = experiment.outcomes([unit])
        _, overlap, rho = negated[0] if negated else (None, None, math.nan)
        scores = misprime_scores(primed, lowered)
        became = [v for values in scores["became-prime"].values() for v in values]
        drop = [v for values in scores["p@1-drop"].values() for v in values]
        probes = {}
        for probe in PROBES:
            record = records.get(fact["uid"] if probe == "positive" else f"{fact['uid']}:{probe}")
            if record is not None:  # a fact whose negation is its positive sentence has no negated probe
                probes[probe] = _query(run, fact["corpus"], name, record)
                if "prime" in record:
                    probes[probe]["prime"] = record["prime"]
        out["predictors"][name] = {"status": "answered", "overlap": overlap,
                                   "spearman": None if math.isnan(rho) else rho,
                                   "became_prime": bool(became[0]) if became else None,
                                   "p1_drop": bool(drop[0]) if drop else None, "probes": probes}
    return out


def _negated_verdict(entry: dict) -> str:
    said = ["no negated probe" if entry["overlap"] is None else
            f"negated top-1 the same as the positive's: {YES[entry['overlap']]}"
            + ("" if entry["spearman"] is None else f" (Spearman {entry['spearman']:.3f})")]
    said.append("no misprimed probe" if entry["became_prime"] is None else
                f"misprimed top-1 the prime: {YES[entry['became_prime']]}")
    if entry["p1_drop"] is not None:
        said.append(f"the prime made the right answer wrong: {YES[entry['p1_drop']]}")
    return "; ".join(said)


def negated_text(fact: dict) -> list[str]:
    lines = fact_head(fact)
    width = _width(fact)
    pad = " " * (width + 4)
    for name, entry in fact["predictors"].items():
        if entry["status"] != "answered":
            lines += _not_answered(name, entry, width)
            continue
        lines.append(f"  {name.ljust(width)}  {_negated_verdict(entry)}")
        for probe, query in entry["probes"].items():
            prime = f"  (prime: {query['prime']})" if "prime" in query else ""
            lines += indented(f"{pad}{probe + ':':<11}", f"{query['prompt'] or '-'}{prime}")
            lines += _query_lines(query, fact["gold"], pad + " " * 11)
    return lines


# coherency

def coherency_json(run: RunDir, fact: dict) -> dict:
    """Both rounds of a fact per predictor: the first step (the prompt, its truth and answers) and the second,
    asked back from the first's top answer (its prompt and answers, the answer picked past the excluded ones, its
    truth), with the verdicts the experiment scores (`c1`, `c2`, `coherent`: `CoherencyExperiment.instances` of
    the records); a fact the instance rule leaves out is `left out`, one a predictor cannot take `dropped`."""
    from bridge.experiments.coherency import CoherencyExperiment

    out = _head(fact) | {"predictors": {}}
    del out["other_valid"]  # no filtered setting: the second step excludes every other true answer itself
    for name in run.predictors:
        stages = fact["records"].get(name)
        if not stages:
            out["predictors"][name] = {"status": "not run"}
            continue
        units = CoherencyExperiment().instances(stages)
        whole = units.get(fact["uid"])  # a dropped fact is one unit, named by the fact
        if whole is not None:
            ruled = CoherencyExperiment.left_out_record(whole) == whole["dropped"]
            out["predictors"][name] = {"status": "left out" if ruled else "dropped", "reason": whole["dropped"]}
            continue
        rounds = []
        # a unit's steps are named by its first step's `unit` (under a prompt set, one unit per round and prompt)
        steps = {r["unit"]: r for r in stages.get("first", {}).values() if "unit" in r}
        in_order = sorted(units.items(), key=lambda u: (prompt_order(u[1].get("prompt_id") or ""), u[1]["round"]))
        for key, unit in in_order:
            n = unit["round"]
            first = steps[key]
            second = stages.get("second", {}).get(first["uid"].replace(f":coherency:r{n}s1", f":coherency:r{n}s2", 1))
            rounds.append({"round": n, "unit": unit["uid"], **({"prompt_id": unit["prompt_id"]} if "prompt_id" in unit
                                                               else {}), f"c{n}": unit["first_correct"],
                           "coherent": unit["coherent"], "first": _first_step(first),
                           "second": None if second is None else _second_step(second)})
        out["predictors"][name] = {"status": "answered", "rounds": rounds}
    return out


def _first_step(record: dict) -> dict:
    return {"uid": record["uid"], "slot": record["slot"], "prompt": record["prompt"], "truth": record["truth"],
            "correct": record["correct"], **generation_fields(record), "answers": answer_dicts(record)}


def _second_step(record: dict) -> dict:
    if "dropped" in record:
        return {"uid": record["uid"], "status": "dropped", "reason": record["dropped"]}
    return {"uid": record["uid"], "slot": record["second_slot"], "prompt": record["prompt"],
            "asked_back_from": record["first_answer"], "truth": record["second_truth"],
            "answer": record["second_answer"], "correct": record["second_correct"],
            "same_as_first": record["same_as_first"], "excluded": record["excluded"], **generation_fields(record),
            "answers": answer_dicts(record)}


def _generated(step: dict, pad: str) -> list[str]:
    """A step answered by generation: the raw generation its one answer was parsed from."""
    return indented(f"{pad}generation: ", str(step[GENERATED])) if GENERATED in step else []


def _prompt_named(unit: dict) -> str:
    """` @<prompt>` for a round asked with one prompt of a set, nothing otherwise."""
    return f" @{unit['prompt_id']}" if "prompt_id" in unit else ""


def _verdict_lines(rounds: list[dict]) -> list[str]:
    """A predictor's c1/c2 and coherent verdicts: one line for a fact asked with one prompt; under a prompt set one
    line per prompt (its id padded to the longest), so that a set of dozens of prompts reads down the screen."""
    def said(r: dict) -> str:
        n = r["round"]
        return f"c{n} {YES[r[f'c{n}']]}, coherent {YES[r['coherent']]}"

    if not any("prompt_id" in r for r in rounds):
        return ["; ".join(f"round {r['round']}: {said(r)}" for r in rounds)]
    by_prompt: dict[str, list[dict]] = {}
    for r in rounds:  # in the order shown below (prompt number, then round)
        by_prompt.setdefault(r.get("prompt_id", ""), []).append(r)
    width = max(len(pid) for pid in by_prompt) + 1
    return [f"{'@' + pid:<{width}}  " + "; ".join(f"round {r['round']}: {said(r)}" for r in asked)
            for pid, asked in by_prompt.items()]


def coherency_text(fact: dict) -> list[str]:
    lines = fact_head(fact)
    width = _width(fact)
    pad = " " * (width + 4)
    deeper = pad + " " * 9
    for name, entry in fact["predictors"].items():
        if entry["status"] != "answered":
            lines += _not_answered(name, entry, width)
            continue
        lines += [f"  {(name if i == 0 else '').ljust(width)}  {line}"
                  for i, line in enumerate(_verdict_lines(entry["rounds"]))]
        for r in entry["rounds"]:
            first, second = r["first"], r["second"]
            label = f"round {r['round']}{_prompt_named(r)}"
            lines += indented(f"{pad}{label:<{max(9, len(label) + 1)}}",
                               f"asks the {first['slot']}: {prompt_text(first['prompt'])}")
            lines += _generated(first, deeper)
            lines.append(f"{deeper}truth {first['truth']}, right: {YES[first['correct']]}")
            lines += ranked_lines(first["answers"], {first["truth"]}, deeper)
            if second is None:  # a finished run asks back from every first answer
                lines.append(f"{deeper}nothing asked back: " + ("no second step recorded" if first["answers"] else
                                                                "the first step gave no answer to ask back from"))
                continue
            if "status" in second:
                lines.append(f"{deeper}asked back: dropped: {second['reason']}")
                continue
            lines += indented(deeper, f"asks back the {second['slot']} from {second['asked_back_from']}: "
                                       f"{prompt_text(second['prompt'])}")
            lines += _generated(second, deeper)
            excluded = (f"; {len(second['excluded'])} excluded as true of {second['asked_back_from']}"
                        if second["excluded"] else "")
            answer = "no answer" if second["answer"] is None else f"answer {second['answer']}"
            lines.append(f"{deeper}{answer} (truth {second['truth']}, right: {YES[second['correct']]}; the first "
                         f"answer again: {YES[second['same_as_first']]}{excluded})")
            lines += ranked_lines(second["answers"], {second["truth"]}, deeper)
    return lines


# evidence sentences

def evidence_json(run: RunDir, fact: dict) -> dict:
    """Each evidence sentence a predictor was asked the fact with, in order: the sentence, the gold's ranks (`rank`:
    the one `evidence.parquet` holds, exact where the predictor reports one) and the answers."""
    from bridge.analysis.evidence import sentence_rank
    from bridge.experiments.evidence import fact_uid, split_uid

    def sentence(uid: str) -> int:  # `X:e2` is sentence 2; a uid naming none comes first
        return split_uid(uid)[1] if fact_uid(uid) != uid else -1

    out = _head(fact) | {"predictors": {}}
    for name in run.predictors:
        records = fact["records"].get(name, {}).get("", {})
        if not records:
            out["predictors"][name] = {"status": "not run"}
            continue
        sentences = []
        for record in sorted(records.values(), key=lambda r: sentence(r["uid"])):
            query = _query(run, fact["corpus"], name, record)
            sentences.append({"evidence": sentence(record["uid"]), **query,
                              **({"rank": sentence_rank(record)} if query["status"] == "answered" else {})})
        answered = any(s["status"] == "answered" for s in sentences)
        out["predictors"][name] = {"status": "answered" if answered else "dropped", "sentences": sentences}
    n = {r.get("n_evidences") for stages in fact["records"].values() for r in stages.get("", {}).values()} - {None}
    out["n_evidences"] = max(n) if n else None
    return out


def evidence_text(fact: dict) -> list[str]:
    lines = fact_head(fact)
    if fact["n_evidences"] is not None:
        lines.append(f"  {'sentences:':<13}{fact['n_evidences']}")
    width = _width(fact)
    pad = " " * (width + 4)
    for name, entry in fact["predictors"].items():
        if entry["status"] == "not run":
            lines += _not_answered(name, entry, width)
            continue
        ranks = ", ".join(f"e{s['evidence']} {'-' if s.get('rank') is None else s['rank']}"
                          for s in entry["sentences"] if s["status"] == "answered")
        lines.append(f"  {name.ljust(width)}  gold rank per sentence: {ranks or '-'}")
        for sentence in entry["sentences"]:
            lines += indented(f"{pad}{'e' + str(sentence['evidence']):<5}", sentence["prompt"] or "-")
            lines += _query_lines(sentence, fact["gold"], pad + " " * 5)
    return lines

