"""Factual coherency (Algorithm 1 of the coherency paper) as an experiment of the shared runner.

Stage `first` asks every instance twice: the object given the subject (round 1) and the subject
given the object (round 2). Stage `second` asks back from each first top answer, with every
answer that is correct in the data for it excluded except the ground truth; its record is the
scored round (`eval.coherency.score_instance`). A unit is one (fact, round); a predictor that does
not answer a slot gets no answers there, so it scores 0 on that round instead of disappearing.
A fact a predictor cannot take is dropped whole (both rounds), so dropped facts count as facts; so is,
for every predictor, a fact the instance rule leaves out (`left_out`: labels equal or contained).
A predictor answering by generation answers each step with its one parsed and linked answer (a subject asked
with a blank in its place); its records keep the exact prompt and the raw generation. With no second answer to
fall back to, a second step whose one answer is excluded has no answer (not coherent).
A prompt set with several prompts for a relation asks each fact under every one of them, both rounds, the second
step with its first step's prompt (uids `<step>@<prompt>`, units `<fact>:r1@<prompt>`, records `prompt_id`); the
summaries add per-prompt coherency and the coherency of seeded draws of one prompt per relation (the paper's
Table 3), drawn as LAMA draws its P@1 (`eval.consistency.random_prompt_draws`).
"""

from __future__ import annotations

import dataclasses
import logging
import re

from bridge.experiments.base import Records, StageInput, StageRecords
from bridge.run.results import saved_answers
from eval.answer_text import generation_fields
from eval.coherency import (
    CONTAINED,
    ROUNDS,
    CorrectAnswers,
    correct_answers,
    excluded_answers,
    first_step_correct,
    first_step_query,
    labels_reason,
    pick_position,
    rule_reason,
    score_instance,
    second_step_query,
    summarize_coherency,
    symmetric_relations,
    truth_position,
)
from eval.errors import ConfigError
from eval.types import Answer, Entity, Fact, Prediction, Query, asked_prompt

log = logging.getLogger("kbc")

FACT_FIELDS = ("subject", "subject_id", "gold", "gold_id")  # every instance row names its fact, as dropped rows do


def _fact_fields(fact: Fact) -> dict[str, str | None]:
    return {"subject": fact.subject.label, "subject_id": fact.subject.id, "gold": fact.object.label,
            "gold_id": fact.object.id}


PER_PROMPT = "per prompt"  # settings' `prompt_uids` where each fact is asked under every prompt of a set
DRAWN = ("coherency", "coherency_round1", "coherency_round2")  # the metrics of the random-prompt draws


def _round(uid: str) -> int:
    """The round of a step uid (`X:coherency:r1s2`, under a prompt set `X:coherency:r1s2@<prompt>`)."""
    found = re.search(r":coherency:r([12])s[12](@|$)", uid)
    if found is None:
        raise ValueError(f"not a coherency step uid: {uid}")
    return int(found.group(1))


def fact_uid(uid: str) -> str:
    """The fact a step (`X:coherency:r1s2`) or a unit (`X:r1`) is of, with or without `@<prompt>`; a fact's uid is
    its own."""
    return re.sub(r":(coherency:r[12]s[12]|r[12])(@.*)?$", "", uid, count=1)


def _unit(fact_uid: str, round_: int, prompt: str | None = None) -> str:
    return f"{fact_uid}:r{round_}" + (f"@{prompt}" if prompt is not None else "")


class CoherencyExperiment:
    name = "coherency"
    title = "Factual coherency (Algorithm 1)"
    stages = ("first", "second")
    unit = "(fact, round) units, two per fact,"  # what the summary's scopes count; tables count facts
    instance_slots = ("object", "subject")  # a predictor keeps an instance only if it can take both ends
    metrics = ("coherency", "coherency_round1", "coherency_round2", "c1", "c2", "all_correct")
    space_metric = "coherency"  # the answer-space column sits beside these rows (no P@1 here)
    # Algorithm 1 filters on its own (the second step excludes every other correct answer): no filtered setting
    scored_settings = ("raw",)

    def __init__(self, prompts: str = "lama", context: str = "none", draws: int = 10, seed: int = 0) -> None:
        from bridge.experiments.lama import canonical_context

        context = canonical_context(context)
        self.prompts, self.context, self.draws, self.seed = prompts, context, draws, seed
        self.settings = {"prompts": prompts, "context": context}
        self._correct: CorrectAnswers | None = None
        self._symmetric: set[str] = set()
        self._corpus: str | None = None  # the corpus the two above were computed for
        # second-step uid -> its first step's verdict, which the second record repeats: only the first step saw
        # every tied top answer of a KB that shares ties (`first_step_correct`), the second knows the one asked back
        self._first_correct: dict[str, bool] = {}

    @classmethod
    def from_scoring(cls, scoring: dict) -> CoherencyExperiment:
        """The experiment as a run's summaries score it: with its recorded random-prompt draws and their seed."""
        return cls(draws=int(scoring.get("prompt_draws", 10)), seed=int(scoring.get("prompt_seed", 0)))

    @property
    def per_prompt(self) -> bool:
        """Whether each fact is asked under every prompt of its relation (a set with several for one relation)."""
        return self.settings.get("prompt_uids") == PER_PROMPT

    @staticmethod
    def config_notes(config: dict) -> list[str]:
        """Per corpus, the predictors that do not answer a slot (`slots` in config.json): the run warned on stderr,
        and the summary says which of their cells are 0 for that reason alone (such queries are scored wrong)."""
        by_slot = {"subject": "coherency, both rounds, c2 and all four steps right",
                   "object": "coherency, both rounds, c1 and all four steps right"}
        notes = []
        for corpus, configs in config.get("predictor_configs", {}).items():
            for slot, metrics in by_slot.items():
                names = sorted(n for n, d in configs.items()
                               if isinstance(d, dict) and "slots" in d and slot not in d["slots"])
                if names:
                    notes.append(f"{corpus}: {', '.join(f'`{n}`' for n in names)} "
                                 f"{'does' if len(names) == 1 else 'do'} not answer the {slot} slot: its queries "
                                 f"there get no answer and are scored wrong, so {metrics} are 0 by construction.")
        return notes

    def check(self, corpora: dict, data_dir) -> None:
        """Refuse what Algorithm 1 cannot ask, before any work: cloze corpora (no subject entity to ask
        back for). A prompt set with several prompts for an asked relation asks every prompt (`prompt_uids` in the
        settings, so that a rerun asking it otherwise is refused) and scores random-prompt draws (`scoring`)."""
        for name, corpus in corpora.items():
            if corpus.facts and all(f.cloze for f in corpus.facts):
                raise ConfigError(f"coherency cannot run on {name}: its facts are cloze sentences without subject "
                                  "and object entities to ask back for; use trex or google_re")
        if self.prompts == "lama":
            return
        from eval.prompts import fallback_relations, load_prompts

        loaded = {name: load_prompts(self.prompts, data_dir, corpus.relations) for name, corpus in corpora.items()}
        if not any(len(ps) > 1 for prompts in loaded.values() for ps in prompts.values()):
            return  # one prompt per relation: asked as the LAMA template is, one round trip per fact
        self.settings["prompt_uids"] = PER_PROMPT
        self.scoring = {"prompt_draws": self.draws, "prompt_seed": self.seed}
        for name, prompts in loaded.items():
            fell_back = fallback_relations(prompts)
            if fell_back:  # asked once, with the LAMA template: one prompt in the draws
                log.warning("%s: prompt set %s has no prompt for %s; asked with the template of relations.jsonl", name,
                            self.prompts, ", ".join(fell_back))

    def _templates(self, given: StageInput) -> dict[str, list[tuple[str, str]]]:
        """Per relation, the (prompt id, template) pairs asked: one, its LAMA template or the set's, unless
        `per_prompt`."""
        templates = {rel: [(self.prompts, r.template)] for rel, r in given.corpus.relations.items()}
        if self.prompts != "lama":
            from eval.prompts import load_prompts

            for rel, prompts in load_prompts(self.prompts, given.data_dir, given.corpus.relations).items():
                chosen = prompts if self.per_prompt else prompts[:1]
                templates[rel] = [(p.id if self.per_prompt else self.prompts, p.template) for p in chosen]
        return templates

    def _prepare(self, given: StageInput) -> list[Fact]:
        """The facts to ask (the runner drops those `left_out` names for every predictor) and what is correct.

        Correct answers come from every fact of the corpus ("present in the data"), not only the
        instances: a second step must not be wrong for naming another true subject.
        """
        instances = [f for f in given.facts if not f.cloze]
        if self._corpus != given.corpus.name:
            self._correct = correct_answers(f for f in given.corpus.facts if not f.cloze)
            self._symmetric = symmetric_relations(given.corpus.facts)
            self._corpus = given.corpus.name
        return instances

    @staticmethod
    def left_out(fact: Fact) -> str | None:
        """The instance rule: a fact whose labels are equal or contain each other is no instance. The runner
        drops it for every predictor with this reason, so it is counted, not silently missing."""
        return rule_reason(fact)

    @staticmethod
    def left_out_record(record: dict) -> str | None:
        """`left_out` of a recorded fact (its `subject` and `gold` labels): summary.md's note counts the facts of the
        whole directory the rule left out, not those an uncased model drops lower-cased on top."""
        subject, gold = record.get("subject"), record.get("gold")
        return labels_reason(subject, gold) if subject is not None and gold is not None else None

    def unsuitable(self, predictor: object, fact: Fact) -> str | None:
        """An uncased model compares lower-cased labels, so its "easy" facts are found lower-cased
        (as the paper's released code does): `Arrow`/`arrow`, `euro`/`Europe`."""
        if not getattr(predictor, "uncased", False):
            return None
        return CONTAINED if rule_reason(fact, lowercase=True) else None

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        from bridge.experiments.lama import with_context

        instances = self._prepare(given)
        templates = self._templates(given)
        out: dict[str, list[tuple[Query, Fact]]] = {rel: [] for rel in given.corpus.relations}
        suffix = (lambda pid: f"@{pid}") if self.per_prompt else (lambda pid: "")
        for fact in instances:
            for pid, template in templates[fact.relation]:
                for round_ in ROUNDS:
                    if stage == "first":
                        query = first_step_query(fact, round_, template)
                    else:
                        uid = first_step_query(fact, round_, template).uid + suffix(pid)
                        first = given.earlier.get("first", {}).get(uid)
                        if not first or "dropped" in first or not first["answers"]:
                            continue
                        top = first["answers"][0]
                        query = second_step_query(fact, round_, [Answer(top[0], top[1], top[2])], template)
                        if query is None:
                            continue
                    query = dataclasses.replace(query, uid=query.uid + suffix(pid), prompt=pid)
                    if stage == "second":
                        self._first_correct[query.uid] = bool(first["correct"])
                    out[fact.relation].append((query, fact))
        return with_context(out, self.context, given)

    def depth(self, stage: str, query: Query, fact: Fact, base: int) -> int:
        """Deep enough that the truth never falls off the end behind answers that are correct too (a KB
        lists them all): a first step asking the subject asks for as many more as the object has
        subjects (`base` covers a subject's objects); the second step skips every excluded answer."""
        if self._correct is None:
            return base
        if stage == "first":
            extra = self._correct.of(fact.relation, "subject", query.known) if query.slot == "subject" else ()
            return base + len(extra)
        return base + len(excluded_answers(fact, _round(query.uid), query.known, self._correct))

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        round_ = _round(query.uid)
        prompt = {"prompt_id": query.prompt} if self.per_prompt else {}
        truth: Entity = fact.object if query.slot == "object" else fact.subject
        if stage == "first":  # the top answer is asked back from; the truth among the tied top makes it right
            answers = saved_answers(pred.answers, (0, truth_position(pred, truth)), pred.shared_ties)
            return {"uid": query.uid, "unit": _unit(fact.uid, round_, prompt.get("prompt_id")), "fact_uid": fact.uid,
                    "relation": fact.relation, "round": round_, "slot": query.slot, "prompt": asked_prompt(query, pred),
                    "truth": truth.label, "answers": answers, "correct": first_step_correct(pred, truth),
                    "symmetric": fact.relation in self._symmetric, **_fact_fields(fact), **prompt,
                    **generation_fields(pred.extra)}
        if self._correct is None or self._corpus != fact.corpus:
            raise RuntimeError("coherency records are made after the queries of their corpus")
        excluded = excluded_answers(fact, round_, query.known, self._correct)
        answers = saved_answers(pred.answers, (pick_position(pred.answers, excluded, truth),), pred.shared_ties)
        scored = score_instance(fact, round_, [Answer(query.known.label, 0.0, query.known.id)], pred, self._correct)
        scored["first_correct"] = self._first_correct.get(query.uid, scored["first_correct"])
        return {"uid": query.uid, "unit": _unit(fact.uid, round_, prompt.get("prompt_id")),
                "prompt": asked_prompt(query, pred), "answers": answers, "symmetric": fact.relation in self._symmetric,
                **scored, **prompt, **generation_fields(pred.extra)}

    def instances(self, records: StageRecords) -> Records:
        """One record per (fact, round): the scored second step, or the first step when nothing followed.

        A dropped fact is one record (keyed by the fact), so dropped counts are facts, not rounds nor prompts.
        """
        seconds = {r["unit"]: r for r in records.get("second", {}).values() if "unit" in r}
        out: Records = {}
        for first in records.get("first", {}).values():
            if "dropped" in first:
                fact = fact_uid(first["uid"])
                out[fact] = {**first, "uid": fact, "fact_uid": fact}
                continue
            unit = first["unit"]
            second = seconds.get(unit)
            named = {k: first.get(k) for k in FACT_FIELDS}
            if second is not None and "dropped" not in second:
                out[unit] = {**second, "first_correct": first["correct"], **named}
            else:
                out[unit] = {"uid": unit, "fact_uid": first["fact_uid"], "relation": first["relation"], **named,
                             "round": first["round"], "first_answer": first["answers"][0][0] if first["answers"]
                             else None, "first_correct": first["correct"], "second_answer": None,
                             "second_correct": False, "coherent": False, "symmetric": first["symmetric"],
                             **({"prompt_id": first["prompt_id"]} if "prompt_id" in first else {}),
                             **({"second_dropped": second["dropped"]} if second else {})}
        return out

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        symmetric = {r["relation"] for r in instances if r.get("symmetric")}
        rows = summarize_coherency(instances, relation_types, symmetric)
        if any("prompt_id" in r for r in instances):
            rows += prompt_rows(instances, self.draws, self.seed)
        return rows, []


def per_prompt_scores(instances: list[dict]) -> dict[str, dict[str, dict[str, float]]]:
    """Per relation and prompt id, that prompt's coherency scores (`relation_scores` of its units alone)."""
    from eval.coherency import relation_scores

    by_prompt: dict[str, list[dict]] = {}
    for r in instances:
        if "dropped" not in r:
            by_prompt.setdefault(str(r.get("prompt_id", "lama")), []).append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for pid in sorted(by_prompt):
        for rel, scores in relation_scores(by_prompt[pid]).items():
            out.setdefault(rel, {})[pid] = scores
    return out


def prompt_rows(instances: list[dict], draws: int, seed: int) -> list[dict]:
    """Per-prompt coherency (rows with a `prompt` field) and, per metric of `DRAWN`, its min, mean and max over
    `draws` seeded draws of one prompt per relation (macro over relations), as LAMA draws its P@1; and the macro
    mean of each relation's worst and best prompt among those the draws took for it (`_drawn_prompt_worst/best`)."""
    from eval.consistency import draw_rows, drawn_extremes, random_prompt_draws

    scores = per_prompt_scores(instances)
    rows = []
    for rel in sorted(scores):
        for pid, by in scores[rel].items():
            rows += [{"setting": "raw", "group": rel, "metric": metric, "prompt": pid, "value": by[metric],
                      "n_facts": int(by["n_instances"])} for metric in DRAWN if metric in by]
    n = len({r["fact_uid"] for r in instances if "dropped" not in r})
    for metric in DRAWN:
        per_prompt = {rel: {pid: by[metric] for pid, by in prompts.items() if metric in by}
                      for rel, prompts in scores.items()}
        if not any(per_prompt.values()):
            continue
        drawn = random_prompt_draws(per_prompt, draws, seed)
        rows += draw_rows(metric, drawn, n)
        for stat, value in drawn_extremes(per_prompt, drawn).items():
            rows.append({"setting": "raw", "group": "all", "metric": f"{metric}_drawn_prompt_{stat}", "value": value,
                         "n_facts": n})
    return rows
