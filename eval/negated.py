"""Negated and misprimed LAMA (Kassner & Schütze 2020): loaders and the measures the paper reports.

The data (`TREx/`, `GoogleRE/`, `ConceptNet/`, `SQUAD/`, each in `high_ranked/`, `low_ranked/`, `random/`,
the three ways the misprime was drawn) gives per fact the positive cloze (`masked_sentences`), the negated
one (`masked_negations`: "[X] was not born in [MASK] .") and the misprimed one (`masked_misprimed`:
"Kabul? [X] was born in [MASK] ."; the prime is what stands before the final "? ", a stray "?" of its own
dropped). A negation equal to the positive sentence (all of T-REx P159) is no
negated query: that fact is left out of the negation measures and counted.

Negation (per fact, over one candidate vocabulary, as LAMA's `get_negation_metric`): the Spearman rank
correlation between the positive and the negated query's scores of every candidate, and whether both put
the same candidate first (top-1 overlap); per relation, means over its facts (overlap in percent).
Misprime (per fact): whether the misprimed query's top answer is the prime; per relation the share in
percent (`became-prime`), and over the facts whose positive query ranks the gold first, the share whose
misprimed query no longer does (`p@1-drop`, the drop from 100%). Groups of relations are macro means.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.cells import count_of
from eval.datadir import ENV_VAR, absolute_path, data_root, no_data, resolve_data_dir
from eval.errors import DataError, KbcError
from eval.jsonl import json_type, read_jsonl, req_str
from eval.lama import MASK, Corpus
from eval.relations import load_relations
from eval.report_counts import LoadReport
from eval.types import OBJECT_SLOT, Entity, Fact, Relation

FOLDER = "negated_misprimed_lama"
CORPORA = {"trex": "TREx", "google_re": "GoogleRE", "conceptnet": "ConceptNet", "squad": "SQUAD"}
PROBE_CORPORA = tuple(f"negated-{c}" for c in CORPORA)  # the runner's names: the positive facts, asked three ways
VARIANTS = ("high_ranked", "low_ranked", "random")
PRIME_SEP = "? "


@dataclass(frozen=True, slots=True)
class ProbeFact:
    """A fact with its positive, negated (None: not given) and misprimed cloze, each holding [Y] once."""

    fact: Fact
    negated: str | None
    misprimed: str
    prime: str
    where: str = field(default="", compare=False)  # file:line it was read from


@dataclass
class ProbeCorpus:
    name: str
    variant: str
    facts: list[ProbeFact]
    reports: list[LoadReport]
    files: list[Path]


def resolve_negated_dir(data_dir: str | Path | None = None) -> Path:
    """The folder holding `TREx/`, `GoogleRE/` ...: `data_dir`, its `negated_misprimed_lama/`, or the one beside
    it; without one, beside the LAMA data of `$KBC_DATA`, else `./data/negated_misprimed_lama` (where
    `kbc data download negated-lama` puts it)."""
    root = data_root(data_dir)
    tried = [root, root / FOLDER, root.parent / FOLDER]
    for cand in tried:
        if any((cand / folder / variant).is_dir() for folder in CORPORA.values() for variant in VARIANTS):
            return absolute_path(cand)
    raise no_data(f"negated/misprimed LAMA data ({', '.join(CORPORA.values())})", tried, "negated-lama",
                  f"point --data-dir or {ENV_VAR} at the folder holding it")


def _first_cloze(row: dict, key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        got = "missing" if key not in row else json_type(value) if not isinstance(value, list) else "not a string"
        raise DataError(f"{where}: field {key!r} must be a non-empty array of sentences, got {got}")
    sentence = value[0]
    if sentence.count(MASK) != 1:
        raise DataError(f"{where}: {key} sentence holds {MASK} {sentence.count(MASK)} times, expected once: "
                        f"{sentence!r}")
    return sentence


def _files(root: Path, corpus: str, variant: str) -> list[tuple[str, Path]]:
    """(relation id, file) pairs of one corpus and variant; ConceptNet's relation comes from each row."""
    folder = root / CORPORA[corpus] / variant
    if not folder.is_dir():
        have = sorted(p.name for p in (root / CORPORA[corpus]).glob("*") if p.is_dir())
        raise DataError(f"{folder}: not found; {corpus} has the misprime variants {', '.join(have) or 'none'}")
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        stem = path.stem.removesuffix("_random")
        out.append(({"squad": "squad", "conceptnet": ""}.get(corpus, stem), path))
    if not out:
        raise DataError(f"{folder}: no .jsonl files")
    return out


def _without_facts(root: Path, corpus: str, have: set[str]) -> list[str]:
    """The relations of a variant folder other than random/ that random/ has no file of (TREx, Google-RE)."""
    if corpus in ("squad", "conceptnet"):
        return []
    found = {path.stem for variant in VARIANTS if variant != "random"
             for path in (root / CORPORA[corpus] / variant).glob("*.jsonl")}
    return sorted(found - have)


def load_probes(data_dir: str | Path | None = None, corpus: str = "trex", variant: str = "random",
                relations: Iterable[str] | None = None) -> ProbeCorpus:
    """One corpus and misprime variant; every line checked, a bad one is a DataError with file:line."""
    if corpus not in CORPORA:
        raise DataError(f"unknown negated/misprimed corpus {corpus!r}; choose from {', '.join(CORPORA)}")
    if variant not in VARIANTS:
        raise DataError(f"unknown misprime variant {variant!r}; choose from {', '.join(VARIANTS)}")
    root = resolve_negated_dir(data_dir)
    wanted = set(relations or ())
    out = ProbeCorpus(f"negated-{corpus}", variant, [], [], [])
    seen_rel: set[str] = set()
    for rel, path in _files(root, corpus, variant):
        report = LoadReport(f"{corpus}/{variant}/{path.name}", relation=rel or None)
        uids: set[str] = set()
        rows_seen: set[tuple] = set()
        no_negation = 0
        for lineno, row in read_jsonl(path, required=("obj_label", "masked_sentences", "masked_misprimed")):
            where = f"{path}:{lineno}"
            relation = req_str(row, "pred", where) if corpus == "conceptnet" else rel
            seen_rel.add(relation)
            report.read += 1
            if wanted and relation not in wanted:
                report.drop("not in the selected relations")
                continue
            probe = _probe(row, corpus, relation, where, lineno, uids)
            key = (relation, row.get("uuid"), probe.fact.subject.label, probe.fact.object.label, probe.fact.cloze,
                   probe.negated, probe.misprimed)
            if key in rows_seen:  # an exact repeat would count its fact twice in the scores
                report.drop("duplicate rows (identical to an earlier one)")
                continue
            rows_seen.add(key)
            no_negation += probe.negated is None
            out.facts.append(probe)
            report.kept += 1
        if no_negation:
            report.notes.append(f"{count_of(no_negation, 'facts')} {'has' if no_negation == 1 else 'have'} no negated "
                                "sentence (it equals the positive one)")
        out.reports.append(report)
        out.files.append(path)
    orphans = _without_facts(root, corpus, seen_rel) if variant == "random" and not wanted else []
    if orphans:  # facts come from random/ alone: another variant's file without one there would go unnoticed
        note = LoadReport(f"{corpus}/random")
        note.notes.append(f"{count_of(len(orphans), 'relations')} {'has' if len(orphans) == 1 else 'have'} "
                          f"misprime files but no random/ file of facts, so not asked: {', '.join(orphans)}")
        out.reports.append(note)  # after the reports of the files, which `probe_corpus` pairs with them
    unknown = sorted(wanted - seen_rel)
    if unknown and variant != "random":  # the facts come from random/: its relations were checked there
        raise DataError(f"{root / CORPORA[corpus] / variant}: no {variant} file of relation(s) {', '.join(unknown)}, "
                        "whose facts random/ holds; put the file back or choose another --misprimes")
    if unknown:
        raise DataError(f"unknown relation id(s) {', '.join(unknown)} in negated/misprimed {corpus}; "
                        f"known: {', '.join(sorted(seen_rel))}")
    return out


def probe_versions(probes: ProbeCorpus) -> dict[str, str]:
    """A digest per relation of the negated and misprimed sentences of one variant (uid, sentences, prime), which
    the data version of its positive facts does not cover: an edited `--misprimes` file changes its relation's."""
    digests: dict = {}
    for p in probes.facts:
        digest = digests.setdefault(p.fact.relation, hashlib.sha256(probes.variant.encode()))
        digest.update(f"\x1e{p.fact.uid}\x1f{p.negated or ''}\x1f{p.misprimed}\x1f{p.prime}".encode())
    return {rel: d.hexdigest()[:16] for rel, d in digests.items()}


def _probe(row: dict, corpus: str, relation: str, where: str, lineno: int, uids: set[str]) -> ProbeFact:
    positive = _first_cloze(row, "masked_sentences", where)
    negated = _first_cloze(row, "masked_negations", where)
    misprimed = _first_cloze(row, "masked_misprimed", where)
    prime = misprimed.removesuffix(PRIME_SEP + positive).rstrip("? ")
    if len(prime) == len(misprimed) or not prime:
        raise DataError(f"{where}: masked_misprimed {misprimed!r} is not '<prime>{PRIME_SEP}' followed by the "
                        "positive sentence")
    uuid = row.get("uuid")
    if uuid is not None and (isinstance(uuid, bool) or not isinstance(uuid, (str, int))):
        raise DataError(f"{where}: field 'uuid' must be a string or a number, got {json_type(uuid)}")
    uid = f"{corpus}/{relation}:{uuid}" if uuid is not None else f"{corpus}/{relation}:line{lineno}"
    if uid in uids:
        uid = f"{corpus}/{relation}:line{lineno}"
    uids.add(uid)
    subject, obj = Entity(req_str(row, "sub_label", where)), Entity(req_str(row, "obj_label", where))
    fact = Fact(uid, f"negated-{corpus}", relation, subject, obj,
                cloze=positive.replace(MASK, OBJECT_SLOT))
    neg = None if negated == positive else negated.replace(MASK, OBJECT_SLOT)
    return ProbeFact(fact, neg, misprimed.replace(MASK, OBJECT_SLOT), prime, where)


def _top(scores: Mapping[str, float]) -> str:
    """The first candidate of highest score, in candidate order (the project's tie rule)."""
    best, best_label = -math.inf, ""
    for label, score in scores.items():
        if score > best:
            best, best_label = score, label
    return best_label


def negation_pair(positive: Mapping[str, float], negated: Mapping[str, float]) -> tuple[bool, float]:
    """(same top-1 candidate, Spearman's rho of the two score vectors) over one candidate vocabulary.

    Both maps must score the same candidates; rho is NaN when either vector is constant (no ranking).
    """
    if positive.keys() != negated.keys():
        raise KbcError("the positive and the negated query must be scored over the same candidates "
                       f"({len(positive)} vs {len(negated)})")
    if len(positive) < 2:
        raise KbcError("a rank correlation needs at least two candidates")
    labels = list(positive)
    pos = [positive[k] for k in labels]
    neg = [negated[k] for k in labels]
    if len(set(pos)) == 1 or len(set(neg)) == 1:
        rho = math.nan
    else:
        from scipy import stats

        rho = float(stats.spearmanr(pos, neg).statistic)
    return _top(positive) == _top(negated), rho


def shared_top_spearman(positive: Sequence[Sequence], negated: Sequence[Sequence]) -> float:
    """Spearman's rho over the candidates both saved top-answer lists (`[label, score, ...]`) hold, as
    `negation_pair` computes it over a whole vocabulary; NaN when they share fewer than two or either is constant.

    A label's first entry counts (a KB may list one label under several ids).
    """
    pos: dict[str, float] = {}
    neg: dict[str, float] = {}
    for answers, scores in ((positive, pos), (negated, neg)):
        for answer in answers:
            scores.setdefault(answer[0], float(answer[1]))
    shared = [label for label in pos if label in neg]
    if len(shared) < 2:
        return math.nan
    return negation_pair({k: pos[k] for k in shared}, {k: neg[k] for k in shared})[1]


@dataclass(frozen=True, slots=True)
class MisprimeOutcome:
    """One fact: top answers of the positive and the misprimed query, the gold and the prime."""

    relation: str
    top_positive: str
    top_misprimed: str
    gold: str
    prime: str


def _norm(text: str, lowercased: bool) -> str:
    return text.lower() if lowercased else text


def negation_scores(rows: Sequence[tuple[str, bool, float]]) -> dict[str, dict[str, list[float]]]:
    """Per metric and relation, the per-fact scores its mean is of, from (relation, overlap, rho) rows: `overlap`
    (100 or 0) of every fact, `spearman` of the facts whose rho is defined (an empty list where none is)."""
    out: dict[str, dict[str, list[float]]] = {"overlap": {}, "spearman": {}}
    for rel, overlap, rho in rows:
        out["overlap"].setdefault(rel, []).append(100.0 * overlap)
        out["spearman"].setdefault(rel, [])
        if not math.isnan(rho):
            out["spearman"][rel].append(rho)
    return out


def summarize_negation(rows: Sequence[tuple[str, bool, float]]) -> dict[str, dict[str, float]]:
    """Per relation (relation, overlap, rho) means: `overlap` in percent, `spearman`, and `n` facts;
    `all` is the mean over relations. Facts whose rho is NaN are left out of `spearman` (`n-spearman`)."""
    scores = negation_scores(rows)
    table = {}
    for rel, overlaps in scores["overlap"].items():
        rhos = scores["spearman"][rel]
        row = {"overlap": math.fsum(overlaps) / len(overlaps), "n": float(len(overlaps)),
               "n-spearman": float(len(rhos))}
        if rhos:
            row["spearman"] = math.fsum(rhos) / len(rhos)
        table[rel] = row
    return _with_all(table, ("overlap", "spearman"))


def misprime_scores(outcomes: Sequence[MisprimeOutcome], lowercased: bool = False
                    ) -> dict[str, dict[str, list[float]]]:
    """Per metric and relation, the per-fact scores its mean is of (100 or 0): `became-prime` of every fact,
    `p@1-drop` of the facts right without the prime (an empty list where none was); matching as
    `summarize_misprimes` says."""
    out: dict[str, dict[str, list[float]]] = {"became-prime": {}, "p@1-drop": {}}
    for o in outcomes:
        out["became-prime"].setdefault(o.relation, []).append(
            100.0 * (o.top_misprimed.casefold() == o.prime.casefold()))
        right = out["p@1-drop"].setdefault(o.relation, [])
        if _norm(o.top_positive, lowercased) == _norm(o.gold, lowercased):
            right.append(100.0 * (_norm(o.top_misprimed, lowercased) != _norm(o.gold, lowercased)))
    return out


def summarize_misprimes(outcomes: Sequence[MisprimeOutcome], lowercased: bool = False) -> dict[str, dict[str, float]]:
    """Per relation `became-prime` (% of facts whose misprimed top answer is the prime), `p@1-drop` (% of the
    facts right without the prime that the prime makes wrong; absent when none was right), `n`, `n-p@1-drop`
    (the facts right without the prime, those the drop is taken over); `all` is the mean over relations. Gold
    labels match exactly (lower-cased for an uncased model); primes match whatever the case, since the data
    writes them sentence-cased ("Ibm? Steve Ballmer works for ...")."""
    scores = misprime_scores(outcomes, lowercased)
    table = {}
    for rel, became in scores["became-prime"].items():
        drops = scores["p@1-drop"][rel]
        row = {"became-prime": math.fsum(became) / len(became), "n": float(len(became)),
               "n-p@1-drop": float(len(drops))}
        if drops:
            row["p@1-drop"] = math.fsum(drops) / len(drops)
        table[rel] = row
    return _with_all(table, ("became-prime", "p@1-drop"))


def _with_all(table: dict[str, dict[str, float]], metrics: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """`all`: each metric's mean over the relations that have it; `n` and each metric's own count (`n-<metric>`,
    the facts it is taken over) summed over relations."""
    if not table:
        raise KbcError("no fact to summarize")
    overall: dict[str, float] = {"n": sum(row["n"] for row in table.values())}
    for metric in metrics:
        values = [row[metric] for row in table.values() if metric in row]
        if values:
            overall[metric] = math.fsum(values) / len(values)
        if any(f"n-{metric}" in row for row in table.values()):
            overall[f"n-{metric}"] = sum(row.get(f"n-{metric}", 0.0) for row in table.values())
    return {**table, "all": overall}


def lama_relation_without_probes(name: str, relation: str, data_dir: str | Path | None = None) -> bool:
    """Whether `relation` is one of LAMA's T-REx relations (its `relations.jsonl`) that `negated-trex` lacks (P27):
    a user asking for it needs to hear that the negated data has none, not a look-alike id."""
    if name != "negated-trex":
        return False
    try:
        root = resolve_data_dir(data_dir)
    except DataError:
        return False
    return relation in load_relations(root / "relations.jsonl")


def probe_corpus(name: str, data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
                 variant: str = "random") -> Corpus:
    """`negated-<corpus>` as a corpus of its positive facts (cloze sentences), for the runner; the negated and
    misprimed sentences are read again by `load_probes` where they are asked."""
    probes = load_probes(data_dir, name.removeprefix("negated-"), variant, relations)
    for report, path in zip(probes.reports, probes.files):  # the misprimes are read where they are asked
        report.source = (f"{report.source.split('/', 1)[0]}/{report.relation or path.stem} positive facts (from "
                         f"{path.parent.name}/{path.name}, whatever --misprimes says)")
    rels = dict.fromkeys(p.fact.relation for p in probes.facts)
    return Corpus(name, {r: Relation(r, r, OBJECT_SLOT) for r in rels}, [p.fact for p in probes.facts],
                  probes.reports, probes.files)
