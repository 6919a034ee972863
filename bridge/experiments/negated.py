"""Negated and misprimed LAMA (Kassner & Schütze 2020) as an experiment: each fact asked three ways.

Per fact the positive cloze, the negated one ("[X] was not born in [Y] .", where the data has one) and the
misprimed one ("Kabul? [X] was born in [Y] .", misprimes drawn `high_ranked`, `low_ranked` or `random`) are
three queries (`<uid>`, `<uid>:negated`, `<uid>:misprimed`). A unit is the fact with the three top answers;
rows per relation and `all` (macro over relations): `p@1` of the positive query, `overlap` (% of facts whose
negated query puts the same answer first), `spearman` (rank correlation of the two queries' scores over the
candidates both saved top-answer lists hold; records keep the top answers only), `became-prime` and `p@1-drop`
(`eval.negated`). Each row carries the stderr and seeded bootstrap interval of its mean over the facts it is taken
over (`intervals`), drawn as LAMA's rows are.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from bridge.experiments.base import Records, StageInput, StageRecords
from bridge.experiments.lama import ranked_record
from bridge.run.intervals import Found, UnitSets, interval_table
from eval.errors import ConfigError, DataError
from eval.negated import (
    VARIANTS,
    MisprimeOutcome,
    load_probes,
    misprime_scores,
    negation_scores,
    probe_versions,
    shared_top_spearman,
    summarize_misprimes,
    summarize_negation,
)
from eval.types import Fact, Prediction, Query

KINDS = ("negated", "misprimed")
PROBE_SUFFIXES = tuple(f":{kind}" for kind in KINDS)
log = logging.getLogger("kbc")


def fact_uid(uid: str) -> str:
    """The fact a probe is of: `X`, `X:negated` and `X:misprimed` are all probes of X."""
    for suffix in PROBE_SUFFIXES:
        if uid.endswith(suffix):
            return uid.removesuffix(suffix)
    return uid


class NegatedExperiment:
    name = "negated"
    stages = ("",)
    title = "Negated and misprimed LAMA"
    metrics = ("p@1", "overlap", "spearman", "became-prime", "p@1-drop")
    probes = True
    # a predictor that answered misprimed queries is scored on P@1 drop even where it got no fact right without the
    # prime: the shared scope is the facts every predictor got right, none then (`bridge.run.summaries.held_metrics`)
    held_with = {"p@1-drop": "became-prime"}
    spread = ("Cells: value ± standard error (per relation: of its mean over the facts the measure is taken over: "
              "every fact for P@1, those with a negated answer for overlap, those with a rho for Spearman, those with "
              "a misprimed answer for became-prime, those right without the prime for P@1 drop; Total: of the mean "
              "over relations); `Total 95% CI`: a seeded percentile bootstrap interval, those facts resampled within "
              "each relation (summary.json holds every cell's `stderr`, `ci_low`, `ci_high`; a cell of one fact has "
              "none).")

    def __init__(self, misprimes: str = "random") -> None:
        if misprimes not in VARIANTS:
            raise ConfigError(f"--misprimes {misprimes}: use one of {', '.join(VARIANTS)}")
        self.misprimes = misprimes
        self.settings = {"misprimes": misprimes}
        self._primes: dict[str, str] = {}
        self._said: set[str] = set()
        self._rhos: dict[int, tuple[dict, float]] = {}  # id(unit) -> (the unit, held so the id stays its own; rho)

    def input_versions(self, corpora: dict, data_dir) -> dict[str, dict[str, str]]:
        """Per corpus and relation, a digest of the negated and misprimed sentences of the `--misprimes` files: the
        questions asked, which the data version of the positive facts (the `random/` files) does not cover."""
        return {name: probe_versions(load_probes(data_dir, name.removeprefix("negated-"), self.misprimes,
                                                 list(corpus.relations)))
                for name, corpus in corpora.items()}

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        corpus = given.corpus.name.removeprefix("negated-")
        loaded = load_probes(given.data_dir, corpus, self.misprimes, list(given.corpus.relations))
        folders = dict.fromkeys(f"{p.parent}/" for p in loaded.files)
        if given.corpus.name not in self._said:  # once per corpus, not per predictor
            self._said.add(given.corpus.name)
            log.info("%s: negated and misprimed sentences from %s", given.corpus.name, ", ".join(folders))
        probes = {p.fact.uid: p for p in loaded.facts}
        lacking = [fact for fact in given.facts if fact.uid not in probes]
        if lacking:  # Google-RE's low_ranked files lack 14 facts: no low-ranked prime was found for them
            probes |= self._without_misprime(given, corpus, lacking)
        out: dict[str, list[tuple[Query, Fact]]] = {rel: [] for rel in given.corpus.relations}
        for fact in given.facts:
            probe = probes.get(fact.uid)
            if probe is None or probe.fact != fact:
                raise DataError(f"{probe.where if probe else f'negated/misprimed {corpus}'}: fact {fact.uid} differs "
                                f"between the random and the {self.misprimes} files (its subject, object or "
                                "sentence): the two are not of one release (`kbc data list` names a changed file)")
            base = Query(fact.uid, fact.uid, fact.corpus, fact.relation, fact.subject, "object", fact.cloze or "",
                         targets=(fact.object.label,))
            out[fact.relation].append((base, fact))
            for kind, template in (("negated", probe.negated), ("misprimed", probe.misprimed)):
                if template:
                    out[fact.relation].append((dataclasses.replace(base, uid=f"{fact.uid}:{kind}", template=template,
                                                                   prompt=kind), fact))
            if probe.misprimed:
                self._primes[fact.uid] = probe.prime
        return out

    def _without_misprime(self, given: StageInput, corpus: str, lacking: list[Fact]) -> dict:
        """The probes of facts the `--misprimes` files lack: the negated sentence of the facts' own (`random/`)
        file, no misprimed one, so they count in every measure but those of the prime."""
        own = {p.fact.uid: p for p in load_probes(given.data_dir, corpus, "random", list(given.corpus.relations)).facts}
        found = {f.uid: dataclasses.replace(own[f.uid], misprimed="", prime="") for f in lacking if f.uid in own}
        key = f"{given.corpus.name}:lacking"
        if found and key not in self._said:
            self._said.add(key)
            log.info("%s: %d fact(s) have no %s misprime (absent from those files): asked the positive and negated "
                     "sentences only, left out of became-prime and p@1-drop", given.corpus.name, len(found),
                     self.misprimes)
        return found

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict) -> dict:
        record = ranked_record(query, fact, pred, {})
        record["probe"] = query.prompt if query.prompt in KINDS else "positive"
        if record["probe"] == "misprimed":
            record["prime"] = self._primes[fact.uid]
        record["lowercased"] = pred.lowercased
        return record

    def instances(self, records: StageRecords) -> Records:
        """One unit per fact: its positive record with the top answers of the other two queries.

        Dropped records carry no `probe`, so the kind is read off the uid; a fact counts once in the dropped
        tallies: as dropped when its positive query is, else under `part_dropped` when a probe of it is.
        """
        done = records.get("", {})
        units: Records = {}
        for uid, record in done.items():
            if uid.endswith(PROBE_SUFFIXES):
                continue
            unit = dict(record)
            for kind in KINDS:
                other = done.get(f"{uid}:{kind}")
                if other is not None and "dropped" in other and "dropped" not in unit:
                    unit.setdefault("part_dropped", other["dropped"])
                if other is not None and "dropped" not in other:
                    unit[f"top_{kind}"] = other["answers"][0][0] if other["answers"] else None
                    if kind == "negated":
                        unit["answers_negated"] = other["answers"]
                    if kind == "misprimed":
                        unit["prime"] = other["prime"]
            units[uid] = unit
        return units

    def scored_on(self, unit: dict, metric: str) -> bool:
        """Whether `metric` is taken over this fact, so a shared scope holds the same facts for every predictor:
        `overlap` needs a negated top answer, `spearman` a defined rho, `became-prime` a misprimed top answer and
        `p@1-drop` one of a fact the positive query got right (`summarize`'s rules)."""
        if metric == "overlap":
            return bool(unit.get("top_negated"))
        if metric == "spearman":
            return bool(unit.get("top_negated")) and not math.isnan(self._rho(unit))
        if metric == "became-prime":
            return bool(unit.get("top_misprimed"))
        if metric == "p@1-drop":
            top = unit["answers"][0][0] if unit["answers"] else ""
            case = str.lower if unit.get("lowercased") else str
            return bool(unit.get("top_misprimed")) and case(top) == case(unit["gold"])
        return True

    @staticmethod
    def unit_columns(unit: dict) -> dict:
        """`instances.parquet`'s columns of a fact, as LAMA's table has them: its positive query's top answer and
        whether its gold ranks first (null for a dropped fact); with `top_negated` and `top_misprimed` beside them,
        every score of the summary can be recomputed from the table."""
        if "dropped" in unit:
            return {"top1": None, "correct_raw": None}
        return {"top1": unit["answers"][0][0] if unit["answers"] else None, "correct_raw": unit["rank_raw"] == 1}

    def summarize(self, instances: list[dict], relation_types: dict, mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        rows: list[dict] = []
        by_rel: dict[str, list[dict]] = {}
        for unit in instances:
            by_rel.setdefault(unit["relation"], []).append(unit)
        p1 = {rel: 100.0 * sum(u["rank_raw"] == 1 for u in units) / len(units) for rel, units in by_rel.items()}
        rows += [{"setting": "raw", "group": rel, "metric": "p@1", "value": v, "n_facts": len(by_rel[rel])}
                 for rel, v in p1.items()]
        if p1:
            rows.append({"setting": "raw", "group": "all", "metric": "p@1", "value": math.fsum(p1.values()) / len(p1),
                         "n_facts": len(instances)})
        negated, primed, lowered = self.outcomes(instances)
        if negated:
            rows += _rows(summarize_negation(negated), ("overlap", "spearman"))
        if primed:
            rows += _rows(summarize_misprimes(primed, lowered), ("became-prime", "p@1-drop"))
        return rows, []

    def _rho(self, unit: dict) -> float:
        """A fact's Spearman rho (`shared_top_spearman`; it needs a negated answer), worked out once: its rows, its
        interval and the shared scopes all read it, and a rho (a scipy call) is most of what scoring costs."""
        held = self._rhos.get(id(unit))
        if held is None or held[0] is not unit:
            held = self._rhos[id(unit)] = (unit, shared_top_spearman(unit["answers"], unit["answers_negated"]))
        return held[1]

    def outcomes(self, instances: list[dict]) -> tuple[list[tuple[str, bool, float]], list[MisprimeOutcome], bool]:
        """What the negation and misprime measures are taken over: (relation, same top answer, rho) of each fact
        with a negated answer, the outcome of each with a misprimed one, and whether the answers were lower-cased."""
        top = [(u, u["answers"][0][0] if u["answers"] else "") for u in instances]
        negated = [(u["relation"], t == u["top_negated"], self._rho(u)) for u, t in top if u.get("top_negated")]
        primed = [MisprimeOutcome(u["relation"], t, u["top_misprimed"], u["gold"], u["prime"])
                  for u, t in top if u.get("top_misprimed")]
        return negated, primed, any(u.get("lowercased") for u in instances)

    def intervals(self, items: list[dict], types: dict, bootstrap: int, seed: int, key: str) -> Found:
        """The stderr and seeded bootstrap interval of `summarize`'s rows: per relation over the facts a metric is
        taken over, `all` (the mean over relations) resampling facts within each relation, drawn as LAMA's rows
        are (`interval_table`: per corpus and relation), so a rerun or a resume gives the same intervals."""
        ordered = sorted(items, key=lambda u: str(u["uid"]))  # the draws depend on the facts, not their order
        negated, primed, lowered = self.outcomes(ordered)
        scores = {"p@1": {}} | negation_scores(negated) | misprime_scores(primed, lowered)
        for unit in ordered:
            scores["p@1"].setdefault(unit["relation"], []).append(100.0 * (unit["rank_raw"] == 1))
        sets: UnitSets = {}
        for metric, per_rel in scores.items():
            cells = {rel: np.array(values) for rel, values in per_rel.items() if values}
            sets[("raw", metric)] = (cells, {"all": list(cells)}, {}, {})
        return interval_table(sets, bootstrap, seed, key)


def _rows(table: dict[str, dict[str, float]], metrics: tuple[str, ...]) -> list[dict]:
    return [{"setting": "raw", "group": group, "metric": metric, "value": row[metric],
             "n_facts": int(row.get(f"n-{metric}", row["n"]))}  # spearman, p@1-drop: the facts they are taken over
            for group, row in table.items() for metric in metrics if metric in row]
