"""LM-KBC 2024 (set-valued answers): the train/val JSONL, its prompt templates, labels and submissions.

Each line is one subject and relation with its gold set, possibly empty: `SubjectEntityID`,
`SubjectEntity`, `Relation`, `ObjectEntitiesID` (Wikidata ids; numbers for seriesHasNumberOfEpisodes)
and `ObjectEntities` (surface forms). The two lists are not aligned: their orders differ and some labels
were split at commas ("Washington", "D.C." for Q61), so a label is tied to an id only where the data
decides it (`object_labels`); every other id keeps its id as label and is matched by id alone.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from eval.datadir import ENV_VAR, absolute_path, data_root, no_data, optional_file
from eval.errors import DataError
from eval.jsonl import QID, json_type, read_jsonl, read_text, req_str, write_jsonl_line
from eval.labels import nfc
from eval.lama import Corpus
from eval.relations import check_template, select_relations
from eval.report_counts import LoadReport
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Entity, Relation, SetFact

CORPUS = "lmkbc2024"
SPLITS = ("train", "val")
NUMERIC = frozenset({"seriesHasNumberOfEpisodes"})
RELATIONS = ("countryLandBordersCountry", "personHasCityOfDeath", "seriesHasNumberOfEpisodes", "awardWonBy",
             "companyTradesAtStockExchange")
# Each relation as the Wikidata property a KB holds it under, and the slot asked: awardWonBy names the award,
# the object of its winners' P166 (award received), so the winners are the subjects of P166
WIKIDATA = {"countryLandBordersCountry": ("P47", "object"), "personHasCityOfDeath": ("P20", "object"),
            "seriesHasNumberOfEpisodes": ("P1113", "object"), "awardWonBy": ("P166", "subject"),
            "companyTradesAtStockExchange": ("P414", "object")}
TEMPLATES = Path("prompt_templates") / "masked_prompts.csv"
# Wikidata aliases of the LAMA T-REx entities (X-FACTR's `alias/TREx/en.txt`), beside the LM-KBC folder
ALIASES = Path("xfactr") / "alias_TREx_en.txt"
FIELDS = ("SubjectEntityID", "SubjectEntity", "Relation", "ObjectEntitiesID", "ObjectEntities")
_NUMBER = re.compile(r"0|[1-9][0-9]*")


def resolve_lmkbc_dir(data_dir: str | Path | None = None) -> Path:
    """The folder holding `train.jsonl`/`val.jsonl`: `data_dir` itself, its `lmkbc2024/`, or the `lmkbc2024/`
    beside it; without one, beside the LAMA data of `$KBC_DATA`, else `./data/lmkbc2024` (where
    `kbc data download lmkbc2024` puts it)."""
    root = data_root(data_dir)
    tried = [root, root / CORPUS, root.parent / CORPUS]
    for cand in tried:
        if any((cand / f"{split}.jsonl").is_file() for split in SPLITS):
            return absolute_path(cand)
    raise no_data("LM-KBC data (train.jsonl / val.jsonl)", tried, CORPUS,
                  f"point --data-dir or {ENV_VAR} at the folder holding them")


def template_rows(path: Path, missing: str) -> list[tuple[str, str, str]]:
    """(file:line, relation, template) of a `Relation,PromptTemplate` CSV (the challenge's prompt files); a missing
    file is one error saying `missing`, a bad header or row one naming its line."""
    if optional_file([path], "LM-KBC prompt template file") is None:  # a folder or pipe there is named as such
        raise DataError(f"{path}: {missing}")
    text = read_text(path, str(path))
    reader = csv.reader(io.StringIO(text))
    rows = _csv_rows(reader, path)
    header = next(rows, (1, None))[1]
    if header != ["Relation", "PromptTemplate"]:
        raise DataError(f"{path}:1: expected the header Relation,PromptTemplate, got {','.join(header or [])!r}")
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for lineno, row in rows:
        where = f"{path}:{lineno}"
        if not "".join(row).strip():  # a blank line, or one of spaces, as the JSONL files skip it
            continue
        if len(row) != 2 or not row[0].strip():
            raise DataError(f"{where}: expected two fields, Relation and PromptTemplate")
        if row[0].strip() in seen:
            raise DataError(f"{where}: relation {row[0].strip()} has a second template")
        seen.add(row[0].strip())
        out.append((where, row[0].strip(), row[1]))
    return out


def _csv_rows(reader, path: Path) -> Iterator[tuple[int, list[str]]]:
    """(first line, fields) of each CSV record, line numbers counting a quoted line break; what the csv module
    cannot read (a field past its size limit, an unclosed quote) is a DataError naming the line."""
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataError(f"{path}:{start}: malformed CSV ({exc})") from None
        yield start, row
        start = reader.line_num + 1


def load_templates(path: Path) -> dict[str, Relation]:
    """The challenge's `Relation,PromptTemplate` CSV as relations with LAMA-style [X]/[Y] templates."""
    out: dict[str, Relation] = {}
    for where, rel, raw in template_rows(path, "prompt template file not found (the challenge's data has it at "
                                               f"{TEMPLATES})"):
        template = nfc(raw).replace("{subject_entity}", SUBJECT_SLOT).replace("{mask_token}", OBJECT_SLOT)
        check_template(template, where)
        out[rel] = Relation(rel, rel, template)
    return out


def _objects_field(row: dict, key: str, where: str) -> list[str]:
    value = row[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        got = json_type(value) if not isinstance(value, list) else "an array holding a non-string"
        raise DataError(f"{where}: field {key!r} must be an array of strings (empty for no object), got {got}")
    return value


def _check_ids(ids: list[str], relation: str, where: str) -> list[str]:
    pattern, what = (_NUMBER, "a whole number") if relation in NUMERIC else (QID, "a Wikidata id (Q...)")
    for value in ids:
        if not pattern.fullmatch(value):
            raise DataError(f"{where}: ObjectEntitiesID holds {value!r}; each object of {relation} is {what}")
    return list(dict.fromkeys(ids))


def read_rows(path: Path, objects: bool = True) -> list[tuple[int, dict]]:
    """The rows of one split file, every field checked; a bad line is a DataError with file:line.

    `objects` False: a split without objects (the challenge's test file): no row may hold them."""
    if not objects:
        return _rows_without_objects(path)
    out, seen = [], {}
    for lineno, row in read_jsonl(path, required=FIELDS):
        where = f"{path}:{lineno}"
        _subject_row(row, where, seen)
        rel = row["Relation"]
        ids = _check_ids(_objects_field(row, "ObjectEntitiesID", where), rel, where)
        labels = _objects_field(row, "ObjectEntities", where)
        if bool(ids) != bool(labels):
            raise DataError(f"{where}: ObjectEntitiesID has {len(ids)} objects but ObjectEntities {len(labels)}; "
                            "both are empty for a subject with no object")
        out.append((lineno, {**row, "ObjectEntitiesID": ids}))
    return out


def _subject_row(row: dict, where: str, seen: dict) -> None:
    """A row's subject and relation checked, and not seen before in the file."""
    sid = req_str(row, "SubjectEntityID", where)
    if not QID.fullmatch(sid):
        raise DataError(f"{where}: SubjectEntityID {sid!r} is not a Wikidata id (Q...)")
    req_str(row, "SubjectEntity", where)
    rel = req_str(row, "Relation", where)
    if rel not in RELATIONS:
        hint = difflib.get_close_matches(rel, RELATIONS, n=1)
        raise DataError(f"{where}: unknown relation {rel!r}" + (f" (did you mean {hint[0]}?)" if hint else "")
                        + f"; LM-KBC 2024 has {', '.join(RELATIONS)}")
    if (sid, rel) in seen:
        raise DataError(f"{where}: subject {sid} and relation {rel} again (first at line {seen[sid, rel]})")
    seen[sid, rel] = where.rsplit(":", 1)[1]


def _rows_without_objects(path: Path) -> list[tuple[int, dict]]:
    out, seen = [], {}
    for lineno, row in read_jsonl(path, required=FIELDS[:3]):
        where = f"{path}:{lineno}"
        held = [k for k in FIELDS[3:] if k in row]
        if held:
            raise DataError(f"{where}: {held[0]} here, but the file's first line has no objects; a split is "
                            "either with objects on every line or without them on every line")
        _subject_row(row, where, seen)
        out.append((lineno, {**row, "ObjectEntitiesID": [], "ObjectEntities": []}))
    return out


def has_objects(path: Path) -> bool:
    """Whether a split file holds gold objects (train, val) or not (the challenge's test file), by its first row."""
    first = next(read_jsonl(path), None)
    return first is None or any(k in first[1] for k in FIELDS[3:])


def split_path(root: Path, split: str) -> Path:
    """The file of `split`: `train`/`val` in the LM-KBC folder, else a path to a split file of one's own."""
    if split in SPLITS:
        return root / f"{split}.jsonl"
    path = Path(split).expanduser()
    if not path.is_file():
        raise DataError(f"--split {split}: not train, val or a readable split file")
    return path


def object_labels(rows: Iterable[dict]) -> dict[str, str]:
    """Each entity id with the one label the data ties to it; ids it leaves open are absent.

    Subjects are certain (id and label side by side). An object id's label must be in the label list of
    every row holding it whose two lists have equal lengths, and not be a label another id of the row
    already has; this is repeated until nothing changes.
    """
    rows = [r for r in rows if r["Relation"] not in NUMERIC]
    known = {r["SubjectEntityID"]: r["SubjectEntity"] for r in rows}
    even = [r for r in rows if len(r["ObjectEntitiesID"]) == len(set(r["ObjectEntities"]))]
    cands: dict[str, set[str]] = {}
    for r in even:
        for qid in r["ObjectEntitiesID"]:
            if qid not in known:
                cands[qid] = cands.get(qid, set(r["ObjectEntities"])) & set(r["ObjectEntities"])
    changed = True
    while changed:
        changed = False
        for r in even:
            taken = {known[q] for q in r["ObjectEntitiesID"] if q in known}
            taken |= {next(iter(cands[q])) for q in r["ObjectEntitiesID"] if len(cands.get(q, ())) == 1}
            for qid in r["ObjectEntitiesID"]:
                options = cands.get(qid)
                if options and len(options) > 1 and options & taken:
                    cands[qid] = options - taken
                    changed = True
    return known | {q: next(iter(c)) for q, c in cands.items() if len(c) == 1}


def load_lmkbc(data_dir: str | Path | None = None, split: str = "val", relations: Iterable[str] | None = None,
               labels: Mapping[str, str] | None = None) -> Corpus:
    """One split as a corpus of `SetFact`s; `labels` (id -> label) defaults to `object_labels` over both splits.

    `split`: train, val, or the path of a split file of one's own; one without objects (the challenge's test
    file) gives facts that are asked and never scored (`SetFact.scored` False)."""
    root = resolve_lmkbc_dir(data_dir)
    templates = load_templates(root / TEMPLATES)
    wanted = select_relations(templates, list(relations or []), "LM-KBC 2024")
    path = split_path(root, split)
    scored = has_objects(path)
    rows = read_rows(path, scored)
    if labels is None:
        others = [root / f"{s}.jsonl" for s in SPLITS if (root / f"{s}.jsonl").is_file()
                  and (root / f"{s}.jsonl").resolve() != path.resolve()]
        labels = object_labels([r for _, r in rows] + [r for p in others for _, r in read_rows(p)])
    corpus = Corpus(CORPUS, {r: templates[r] for r in wanted}, [], files=[path, root / TEMPLATES])
    report = LoadReport(f"{CORPUS}/{split if split in SPLITS else path.name}")
    unlabelled: dict[str, int] = {}
    for lineno, row in rows:
        report.read += 1
        rel = row["Relation"]
        if rel not in corpus.relations:
            if rel not in templates:
                raise DataError(f"{path}:{lineno}: relation {rel} has no template in {root / TEMPLATES}")
            report.drop("not in the selected relations")
            continue
        ids = row["ObjectEntitiesID"]
        if rel in NUMERIC:
            objects = tuple(Entity(value, value) for value in ids)
        else:
            objects = tuple(Entity(labels.get(qid, qid), qid) for qid in ids)
            for qid in ids:
                if qid not in labels:
                    unlabelled[qid] = unlabelled.get(qid, 0) + 1
        subject = Entity(row["SubjectEntity"], row["SubjectEntityID"])
        corpus.facts.append(SetFact(f"{rel}:{subject.id}", CORPUS, rel, subject, objects, tuple(row["ObjectEntities"]),
                                    scored=scored))
        report.kept += 1
    if unlabelled:
        times = sum(unlabelled.values())
        report.notes.append(f"{len(unlabelled)} object ids ({times} gold objects) have no label the data ties to them:"
                            " they match by id only")
    corpus.reports.append(report)
    return corpus


def submission_rows(facts: Sequence[SetFact], predicted: Mapping[str, Sequence[str]]) -> list[dict]:
    """The challenge's prediction format, one row per gold pair: subject id and label, relation, object ids."""
    return [{"SubjectEntityID": f.subject.id, "SubjectEntity": f.subject.label, "Relation": f.relation,
             "ObjectEntitiesID": list(dict.fromkeys(predicted.get(f.uid, ())))} for f in facts]


def write_submission(path: Path, facts: Sequence[SetFact], predicted: Mapping[str, Sequence[str]]) -> None:
    """Write `submission_rows` as JSONL, ready to submit or to score with the challenge's `evaluate.py`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in submission_rows(facts, predicted):
            write_jsonl_line(handle, row)


def alias_file(root: Path) -> Path | None:
    """The alias list in the LM-KBC folder or beside it (`xfactr/alias_TREx_en.txt`), if there is one."""
    from eval.datadir import optional_file

    return optional_file((root / ALIASES, root.parent / ALIASES), "alias list")


def object_aliases(root: Path, rows: Iterable[dict]) -> dict[str, list[str]]:
    """The aliases the alias list gives the objects of `rows` (numbers have none); empty without a list."""
    from eval.disambiguate import load_aliases

    path = alias_file(root)
    if path is None:
        return {}
    ids = {q for r in rows if r["Relation"] not in NUMERIC for q in r["ObjectEntitiesID"]}
    return load_aliases(path, keep=ids)


def _both_splits(root: Path) -> list[dict]:
    return [r for split in SPLITS if (root / f"{split}.jsonl").is_file() for _, r in read_rows(root / f"{split}.jsonl")]


def known_labels(data_dir: str | Path | None = None) -> dict[str, str]:
    """Each id of both splits with the one label the data ties to it (`object_labels`): how an answer's or a gold
    object's id is shown with its label where records keep only the id."""
    return object_labels(_both_splits(resolve_lmkbc_dir(data_dir)))


def label_index(data_dir: str | Path | None = None, known: Iterable[str] = ()):
    """The labels and aliases answers are linked by (`eval.disambiguate.LabelIndex`), from both splits; `known`:
    other forms known to name entities (where a generated answer is split). Every label the splits write names an
    entity there, tied to an id or not ("Martin Luther King Jr." of a row whose two lists differ in length), so
    its own full stop or comma is kept where an answer line is split."""
    from eval.disambiguate import LabelIndex

    root = resolve_lmkbc_dir(data_dir)
    rows = _both_splits(root)
    written = {label for r in rows if r["Relation"] not in NUMERIC
               for label in (r["SubjectEntity"], *r["ObjectEntities"])}
    return LabelIndex(object_labels(rows), object_aliases(root, rows), {*known, *written})
