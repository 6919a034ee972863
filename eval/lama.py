"""Loaders for the LAMA corpora: T-REx, Google-RE, SQuAD and ConceptNet.

Identity rule: facts are identified by Wikidata ids where present. Two rows are duplicates
when their ids are identical, or when their labels are identical and no id tells them apart
(one side lacks an id). So T-REx keeps rows that share labels but not ids (two "BMW 3 Series"
entities), and Google-RE place-of-death loses one of its two "John Flavel -> Exeter" rows
(one subject has no Wikidata id), giving the paper's 765 facts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eval.cells import count_of
from eval.datadir import fingerprint, optional_file, resolve_data_dir
from eval.errors import DataError
from eval.jsonl import opt_list, opt_qid, opt_str, read_jsonl, req_str
from eval.labels import clean_label, control_character
from eval.relations import load_relations, select_relations
from eval.report_counts import LoadReport
from eval.types import OBJECT_SLOT, Entity, Evidence, Fact, Relation, new_evidence

LAMA_CORPORA = ("trex", "google_re", "squad", "conceptnet")  # every corpus: eval.corpora
MASK = "[MASK]"
# How the loaders read a data file, recorded in each run config (`data_reading`): bumped when the same bytes give
# other facts (labels stripped of surrounding spaces; a uuid given twice numbered; labels and templates in NFC;
# directional marks dropped around labels), so that a run an earlier version wrote is not told its data files changed
# where only the reading did
READING = 3

# LAMA §4.1.1: one manual template per Google-RE relation (as in LAMA's released scripts).
GOOGLE_RE_RELATIONS = {
    "place_of_birth": Relation("place_of_birth", "birth-place", "[X] was born in [Y] .", "N-1"),
    "date_of_birth": Relation("date_of_birth", "birth-date", "[X] (born [Y]).", "N-1"),
    "place_of_death": Relation("place_of_death", "death-place", "[X] died in [Y] .", "N-1"),
}
SQUAD_RELATION = Relation("squad", "SQuAD cloze", f"{OBJECT_SLOT}", None)
NO_DATA_SOURCE = "trex relations.jsonl"  # the report listing relations that have no data file
# every such report (BEAR's metadata lists relations too): none concerns the relations a run keeps
NO_DATA_SOURCES = frozenset({NO_DATA_SOURCE, "bear metadata_relations.json", "bear-big metadata_relations.json"})


@dataclass
class Corpus:
    name: str
    relations: dict[str, Relation]
    facts: list[Fact]
    reports: list[LoadReport] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    other_relations: int = 0  # facts a corpus-wide source read of relations `keep_relations` left out
    fact_filter: str = ""  # what besides the data files chose the facts (LAMA-UHN's filters), part of their version
    filter_details: dict = field(default_factory=dict)  # the filters and the model that chose the facts (LAMA-UHN)
    asked_part: str = ""  # the part of what was read that is asked (FewRel: "test part"), which kept counts from

    def by_relation(self) -> dict[str, list[Fact]]:
        grouped: dict[str, list[Fact]] = {r: [] for r in self.relations}
        for fact in self.facts:
            grouped[fact.relation].append(fact)
        return grouped

    def keep_relations(self, relations: list[str]) -> None:
        """Only `relations` (all of this corpus), as its loader gives them when asked for them: their facts and
        reports and the corpus-wide reports, less the note on relations without a data file, which concerns none
        of them (a relation without a data file is no relation of the corpus)."""
        self.relations = {r: self.relations[r] for r in relations}
        own_source = {r.relation for r in self.reports if r.relation is not None}  # read by a source of their own
        self.other_relations += sum(f.relation not in self.relations and f.relation not in own_source
                                    for f in self.facts)
        self.facts = [f for f in self.facts if f.relation in self.relations]
        self.reports = [r for r in self.reports if r.relation in self.relations
                        or (r.relation is None and r.source not in NO_DATA_SOURCES)]

    @property
    def version(self) -> str:
        known = getattr(self, "_version", None)  # (files, version) where a snapshot read them already
        if known is not None and known[0] == tuple(self.files):
            return known[1]
        return fingerprint(self.files)

    def summary(self, verbose: bool = False, n_facts: int | None = None, removed: dict[str, int] | None = None) -> str:
        """One total line, then the sources that dropped rows or carry notes (all if verbose).

        `n_facts`: the number of facts, for an outline that holds none (`eval.corpora.corpus_outline`); `removed`:
        per relation, the facts `--compat lama` removed from those read as label duplicates (`eval.compat.lama_dedup`),
        so that read = kept + dropped + removed on the one line."""
        read = sum(r.read for r in self.reports)
        dropped = sum(r.n_dropped for r in self.reports)
        deduplicated = sum((removed or {}).values())
        n = len(self.relations)
        kept = len(self.facts) if n_facts is None else n_facts
        other = f"{self.other_relations} of other relations, " if self.other_relations else ""
        part = f"{self.asked_part} {kept + self.other_relations + dropped + deduplicated}: " if self.asked_part else ""
        by_relation = ", ".join(f"{rel} {k}" for rel, k in (removed or {}).items())
        dedup = (f", removed {deduplicated} with the labels of an earlier fact (--compat lama: {by_relation})"
                 if deduplicated else "")
        whole = next((r for r in self.reports if r.parts and r.relation is None), None)
        if whole is not None:  # a file split whole, one part asked (FewRel); per-relation reports break it down
            split = ", ".join(f"{k} {name}" for name, k in whole.parts.items())
            others = f" ({whole.kept - kept} of other relations)" if whole.kept != kept else ""
            lines = [f"{self.name}: {count_of(n, 'relations')}, read {whole.read}: {split}, "
                     f"{whole.n_dropped} dropped; asked: {kept} of the {self.asked_part or 'kept part'}'s "
                     f"{whole.kept}{others}{dedup}"]
        else:
            lines = [f"{self.name}: {count_of(n, 'relations')}, read {read}, {part}{other}kept {kept}, "
                     f"dropped {dropped}{dedup}"]
        lines += ["  " + r.summary() for r in self.reports if verbose or r.n_dropped or r.notes]
        return "\n".join(lines)


class _Deduper:
    """Applies the identity rule of the module docstring within one relation."""

    def __init__(self) -> None:
        self._ids: set[tuple[str, str]] = set()
        self._labels: dict[tuple[str, str], list[tuple[str | None, str | None]]] = {}

    def seen(self, sub: Entity, obj: Entity) -> str | None:
        """Why the fact repeats an earlier row (`same ids`, or `same labels` where an id is missing), or None."""
        if sub.id and obj.id and (sub.id, obj.id) in self._ids:
            return "same ids"
        for sid, oid in self._labels.get((sub.label, obj.label), []):
            if _compatible(sid, sub.id) and _compatible(oid, obj.id):
                return "same labels"
        if sub.id and obj.id:
            self._ids.add((sub.id, obj.id))
        self._labels.setdefault((sub.label, obj.label), []).append((sub.id, obj.id))
        return None


def _compatible(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


TREX_FOLDERS = ("TREx", "TREx_reconstructed")  # where a T-REx relation's file lies, the first that has it


def _trex_file(root: Path, rel: str) -> Path | None:
    """The relation's data file, the first folder's that has one; a folder in its place is refused, not skipped."""
    return optional_file([root / sub / f"{rel}.jsonl" for sub in TREX_FOLDERS], f"data file of relation {rel}")


def _shadowed_files(root: Path, rel: str, read: Path) -> list[Path]:
    """The relation's files in the later folders, not read since `read` (an earlier folder's) comes first: named in
    the load report, so that two copies of a relation do not pass unseen."""
    return [path for sub in TREX_FOLDERS if (path := root / sub / f"{rel}.jsonl") != read and path.is_file()]


def _unlisted_files(root: Path, listed: Iterable[str]) -> list[Path]:
    """T-REx data files whose relation `relations.jsonl` does not list, so that no run asks them."""
    known = set(listed)
    return [path for sub in TREX_FOLDERS if (root / sub).is_dir()
            for path in sorted((root / sub).glob("*.jsonl")) if path.stem not in known]


def load_trex(data_dir: str | Path | None = None, relations: Iterable[str] | None = None) -> Corpus:
    """T-REx from `TREx/` (the official layout) with `TREx_reconstructed/` for files it lacks."""
    root = resolve_data_dir(data_dir)
    rel_path = root / "relations.jsonl"
    all_rel = load_relations(rel_path)
    with_data = {r: p for r in all_rel if (p := _trex_file(root, r))}
    if not with_data:
        raise DataError(f"{root}: no T-REx files (expected TREx/<relation>.jsonl)")
    wanted = select_relations({r: all_rel[r] for r in with_data}, list(relations or []), "T-REx")
    corpus = Corpus("trex", {r: all_rel[r] for r in wanted}, [], files=[rel_path])
    no_data = sorted(set(all_rel) - set(with_data))
    uids: set[str] = set()
    for rel in wanted:
        path = with_data[rel]
        corpus.files.append(path)
        report = LoadReport(f"trex/{rel} ({path.parent.name}/{path.name})", relation=rel)
        dedup = _Deduper()
        object_labels: dict[str, dict[str, None]] = {}
        for lineno, row in read_jsonl(path, required=("sub_label", "obj_label")):
            report.read += 1
            where = f"{path}:{lineno}"
            pred = row.get("predicate_id", rel)
            if pred != rel:
                raise DataError(f"{where}: predicate_id {pred!r} in the file of relation {rel}")
            sub = Entity(_label(row, "sub_label", where), opt_qid(row, "sub_uri", where))
            obj = Entity(_label(row, "obj_label", where), opt_qid(row, "obj_uri", where))
            if obj.id:
                object_labels.setdefault(obj.id, {})[obj.label] = None
            repeated = dedup.seen(sub, obj)
            if repeated:
                report.drop(f"duplicate rows ({repeated})")
                continue
            evidences = _trex_evidences(row, obj.label, where)
            uid = _unique_uid(opt_str(row, "uuid", where) or f"{rel}:{lineno}", uids)
            corpus.facts.append(Fact(uid, "trex", rel, sub, obj, evidences))
            report.kept += 1
        report.notes += _label_notes(object_labels)
        report.notes += [f"{p.parent.name}/{p.name} is not read: {path.parent.name}/{path.name} comes first (keep one "
                         "of them)" for p in _shadowed_files(root, rel, path)]
        corpus.reports.append(report)
    if no_data and not relations:
        note = LoadReport(NO_DATA_SOURCE)
        n = len(no_data)
        note.notes.append(f"{n} relation{'s have' if n > 1 else ' has'} no data file: {', '.join(no_data)}")
        corpus.reports.append(note)
    unlisted = _unlisted_files(root, all_rel)
    if unlisted and not relations:
        note = LoadReport(NO_DATA_SOURCE)
        note.notes.append(f"{len(unlisted)} data file{'s are' if len(unlisted) > 1 else ' is'} not asked, "
                          f"{'their relations' if len(unlisted) > 1 else 'its relation'} not in relations.jsonl "
                          "(add a line with the relation id and its template): "
                          + ", ".join(f"{p.parent.name}/{p.name}" for p in unlisted))
        corpus.reports.append(note)
    return corpus


def _unique_uid(uid: str, seen: set[str]) -> str:
    """`uid`, or `<uid>#2` (`#3`, ...) where a fact before it has it: a fact's prompts, its gold and its records are
    found by its uid, so two facts given one uuid would be taken for one (as `eval.queries` numbers query uids)."""
    given, n = uid, 1
    while uid in seen:
        n += 1
        uid = f"{given}#{n}"
    seen.add(uid)
    return uid


def _label_notes(object_labels: dict[str, dict[str, None]]) -> list[str]:
    """A note where one object id is written with several labels: answers match gold by label, so a KB, naming the
    entity one way, misses the facts that write it another, and Freq counts the labels apart."""
    several = {oid: list(labels) for oid, labels in object_labels.items() if len(labels) > 1}
    if not several:
        return []
    shown = ", ".join(f"{oid} " + " / ".join(repr(label) for label in labels)
                      for oid, labels in list(several.items())[:3])
    more = f" and {len(several) - 3} more" if len(several) > 3 else ""
    return [f"{len(several)} object id{'s are' if len(several) > 1 else ' is'} written with several labels ({shown}"
            f"{more}): answers match by label, so write one label per id"]


def _label(row: dict, key: str, where: str) -> str:
    """An entity label without surrounding spaces, in NFC (`clean_label`): a space a spreadsheet left would make
    "tea " another answer than "tea" (Freq counting them apart, a KB answering the one label of its id and missing
    the other)."""
    label = clean_label(req_str(row, key, where))
    if not label:
        raise DataError(f"{where}: field {key!r} must be a non-empty string, got only invisible characters")
    if bad := control_character(label):
        raise DataError(f"{where}: field {key!r} holds the control character {bad} (a tab, line break, escape, NUL "
                        "or bidirectional override): a label is one line of printable text")
    return label


def _trex_evidences(row: dict, obj_label: str, where: str) -> tuple[Evidence, ...]:
    """T-REx evidence sentences with [MASK] restored from `obj_surface` (else the object label).

    Fields that are strings are taken as they are (an empty one as None, as `opt_str` does); any other value goes
    through `opt_str`, which names the evidence: a corpus has hundreds of thousands of them."""
    out = []
    for i, ev in enumerate(opt_list(row, "evidences", where, dict), 1):
        masked = ev.get("masked_sentence")
        if type(masked) is not str:
            masked = opt_str(ev, "masked_sentence", f"{where}: evidence {i}")
        if masked:
            surface, sub_surface = ev.get("obj_surface"), ev.get("sub_surface")
            if type(surface) is not str or type(sub_surface) is not str:
                at = f"{where}: evidence {i}"
                surface, sub_surface = opt_str(ev, "obj_surface", at), opt_str(ev, "sub_surface", at)
            surface, sub_surface = surface or None, sub_surface or None
            out.append(new_evidence(masked.replace(MASK, surface or obj_label), masked, sub_surface, surface, None))
    return tuple(out)


def _majority_no(row: dict, compat: str | None = None) -> bool:
    """More "no" than "yes" votes; under compat "lama" every vote other than "yes" is a "no"."""
    votes = [j.get("judgment") for j in row.get("judgments") or () if isinstance(j, dict)]
    yes = votes.count("yes")
    no = len(votes) - yes if compat == "lama" else votes.count("no")
    return no > yes


def load_google_re(data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
                   compat: str | None = None) -> Corpus:
    """Google-RE with LAMA's templates; facts rated "no" by most judges are dropped.

    `compat="lama"`: LAMA's released rule, any judgment other than "yes" (e.g. "skip") counts as
    "no" (it drops no row of the staged data).
    """
    root = resolve_data_dir(data_dir)
    wanted = select_relations(GOOGLE_RE_RELATIONS, list(relations or []), "Google-RE")
    corpus = Corpus("google_re", {r: GOOGLE_RE_RELATIONS[r] for r in wanted}, [])
    uids: set[str] = set()
    for rel in wanted:
        path = root / "Google_RE" / f"{rel}_test.jsonl"
        corpus.files.append(path)
        report = LoadReport(f"google_re/{rel}", relation=rel)
        dedup = _Deduper()
        for lineno, row in read_jsonl(path, required=("sub_label", "obj_label")):
            report.read += 1
            where = f"{path}:{lineno}"
            opt_list(row, "judgments", where, dict)
            if _majority_no(row, compat):
                report.drop("judged wrong by most raters")
                continue
            sub = Entity(_label(row, "sub_label", where), opt_qid(row, "sub_w", where),
                         tuple(opt_list(row, "sub_aliases", where)))
            obj = Entity(_label(row, "obj_label", where), opt_qid(row, "obj_w", where),
                         tuple(opt_list(row, "obj_aliases", where)))
            if dedup.seen(sub, obj):
                report.drop("duplicates (same labels, no Wikidata id tells them apart)")
                continue
            evidences = tuple(
                Evidence(text=snippet, url=opt_str(ev, "url", f"{where}: evidence {i}"))
                for i, ev in enumerate(opt_list(row, "evidences", where, dict), 1)
                if (snippet := opt_str(ev, "snippet", f"{where}: evidence {i}"))
            )
            uid = _unique_uid(opt_str(row, "uuid", where) or f"{rel}:{lineno}", uids)
            corpus.facts.append(Fact(uid, "google_re", rel, sub, obj, evidences))
            report.kept += 1
        corpus.reports.append(report)
    return corpus


def _cloze(row: dict, where: str) -> str:
    sentences = row.get("masked_sentences")
    if not isinstance(sentences, list) or not sentences or not isinstance(sentences[0], str):
        raise DataError(f"{where}: field 'masked_sentences' is missing or empty")
    sentence = sentences[0]
    if MASK not in sentence:
        raise DataError(f"{where}: masked sentence has no {MASK}: {sentence!r}")
    return sentence.replace(MASK, OBJECT_SLOT, 1)


def load_squad(data_dir: str | Path | None = None, relations: Iterable[str] | None = None) -> Corpus:
    """SQuAD cloze questions: the masked sentence is the prompt; there is no subject id."""
    root = resolve_data_dir(data_dir)
    select_relations({"squad": SQUAD_RELATION}, list(relations or []), "SQuAD")
    path = root / "Squad" / "test.jsonl"
    corpus = Corpus("squad", {"squad": SQUAD_RELATION}, [], files=[path])
    report = LoadReport("squad")
    for lineno, row in read_jsonl(path, required=("obj_label", "masked_sentences")):
        report.read += 1
        where = f"{path}:{lineno}"
        cloze = _cloze(row, where)
        uid = opt_str(row, "id", where) or opt_str(row, "uuid", where) or f"squad:{lineno}"
        obj = Entity(req_str(row, "obj_label", where))
        sub = Entity(opt_str(row, "sub_label", where) or "Squad")
        corpus.facts.append(Fact(uid, "squad", "squad", sub, obj, cloze=cloze))
        report.kept += 1
    corpus.reports.append(report)
    return corpus


def load_conceptnet(data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
                    path: Path | None = None) -> Corpus:
    """ConceptNet (LAMA format: sub, obj, pred, masked_sentences); one relation per `pred`."""
    root = None if path else resolve_data_dir(data_dir)
    path = path or root / "ConceptNet" / "test.jsonl"
    if not path.is_file():
        raise DataError(
            f"{path}: ConceptNet file not found (the LAMA release has it at ConceptNet/test.jsonl; "
            "run `kbc data download`)"
        )
    facts: list[Fact] = []
    relations_seen: dict[str, Relation] = {}
    report = LoadReport("conceptnet")
    for lineno, row in read_jsonl(path, required=("pred", "masked_sentences")):
        report.read += 1
        where = f"{path}:{lineno}"
        rel = req_str(row, "pred", where)
        relations_seen.setdefault(rel, Relation(rel, rel, OBJECT_SLOT, None))
        sub = Entity(opt_str(row, "sub_label", where) or req_str(row, "sub", where))
        obj = Entity(opt_str(row, "obj_label", where) or req_str(row, "obj", where))
        uid = str(row.get("uuid") or f"conceptnet:{lineno}")
        facts.append(Fact(uid, "conceptnet", rel, sub, obj, cloze=_cloze(row, where)))
        report.kept += 1
    wanted = select_relations(relations_seen, list(relations or []), "ConceptNet")
    facts = [f for f in facts if f.relation in wanted]
    if len(facts) < report.kept:
        report.drop("not in the selected relations", report.kept - len(facts))
        report.kept = len(facts)
    return Corpus("conceptnet", {r: relations_seen[r] for r in wanted}, facts, [report], [path])


LOADERS = {
    "trex": load_trex,
    "google_re": load_google_re,
    "squad": load_squad,
    "conceptnet": load_conceptnet,
}


def source_files(name: str, root: Path) -> list[Path]:
    """The data files the loader of corpus `name` reads for all its relations, found without parsing them
    (T-REx: `relations.jsonl` and the file of each relation that has one), and those its load reports name (T-REx
    files `relations.jsonl` does not list): a snapshot is current only while all of them are what it was made of."""
    if name == "trex":
        listed = load_relations(root / "relations.jsonl")
        read = {r: p for r in listed if (p := _trex_file(root, r))}
        return [root / "relations.jsonl", *read.values(), *_unlisted_files(root, listed),
                *(p for r, path in read.items() for p in _shadowed_files(root, r, path))]
    if name == "google_re":
        return [root / "Google_RE" / f"{rel}_test.jsonl" for rel in GOOGLE_RE_RELATIONS]
    return [root / ("Squad/test.jsonl" if name == "squad" else "ConceptNet/test.jsonl")]


def relation_ids(name: str, data_dir: str | Path | None = None) -> dict[str, Relation] | None:
    """The relations a whole corpus holds, read without parsing its facts (T-REx: the `relations.jsonl`
    entries that have a data file); None where only the facts tell (ConceptNet, LAMA-UHN) or for other corpora."""
    if name not in LOADERS:
        return None
    root = resolve_data_dir(data_dir)
    if name == "trex":
        all_rel = load_relations(root / "relations.jsonl")
        return {r: rel for r, rel in all_rel.items() if _trex_file(root, r)}
    if name == "google_re":
        return dict(GOOGLE_RE_RELATIONS)
    if name == "squad":
        return {"squad": SQUAD_RELATION}
    return None


def folders_without_data(name: str, relation: str, data_dir: str | Path | None = None) -> list[Path]:
    """The folders looked in for the data file of a relation the corpus lists but has no file for (T-REx:
    `relations.jsonl` names 46 relations, the release has files for 41); none for any other relation or corpus."""
    if name != "trex":
        return []
    root = resolve_data_dir(data_dir)
    if relation in load_relations(root / "relations.jsonl") and _trex_file(root, relation) is None:
        return [root / sub for sub in TREX_FOLDERS]
    return []


def relation_versions(corpus: Corpus) -> dict[str, str]:
    """A content hash per relation (its template and facts), so one edited file changes one version."""
    digests = {rel: hashlib.sha256(f"{r.template}\x1f{r.type}".encode()) for rel, r in corpus.relations.items()}
    for rel, r in corpus.relations.items():
        if r.answer_space or r.templates:  # a closed answer space and the other templates (BEAR) change answers too
            digests[rel].update("\x1e".join([*r.templates, *(f"{e.label}\x1f{e.id}" for e in r.answer_space)]).encode())
    for f in corpus.facts:
        objects = getattr(f, "objects", None)  # a gold set (LM-KBC `SetFact`), else the one gold object
        gold = ("\x1d".join(f"{o.label}\x1f{o.id}" for o in objects) if objects is not None
                else f"{f.object.label}\x1f{f.object.id}")
        digests[f.relation].update(f"\x1e{f.uid}\x1f{f.subject.label}\x1f{f.subject.id}\x1f{gold}\x1f{f.cloze}".encode())
    return {rel: d.hexdigest()[:16] for rel, d in digests.items()}


def joined_versions(versions: dict[str, str], inputs: dict[str, str]) -> dict[str, str]:
    """Each relation's data version joined with the digest of another input its questions are read from (an
    experiment's own files, `input_versions`), so that a change to either changes the version."""
    return {rel: hashlib.sha256(f"{v}\x1f{inputs[rel]}".encode()).hexdigest()[:16] if rel in inputs else v
            for rel, v in versions.items()}


def version_choices(corpus: Corpus) -> dict[str, dict[str, str]]:
    """Per relation, what of its `relation_versions` a run chose rather than read: the template asked where a
    corpus gives several (BEAR's `--template`) and the filter that chose its facts (LAMA-UHN), so a changed
    version can be told apart from changed data files."""
    out: dict[str, dict[str, str]] = {}
    for rel, r in corpus.relations.items():
        chosen = {"template": str(r.templates.index(r.template))} if r.template in r.templates else {}
        out[rel] = chosen | ({"filter": corpus.fact_filter} if corpus.fact_filter else {})
    return out
