"""Loader for BEAR and BEAR-big (lm-pub-quiz's probe): closed answer spaces, three templates per relation.

Layout: `<root>/BEAR/` (or `BEAR-big/`) holds `P*.jsonl` (`sub_id, sub_label, sub_aliases, obj_id,
obj_label[, answer_idx]`) and `metadata_relations.json` (per relation: `templates` with [X]/[Y], and for
BEAR `answer_space_labels`/`answer_space_ids`); `<root>/relation_info.json` gives each relation's
knowledge domains. Where the metadata names no answer space (BEAR-big), it is built as lm-pub-quiz does:
the relation's objects by id in order of first appearance, and `answer_idx` is the gold's place in it.

Every row is one fact (lm-pub-quiz scores every row); its uid is `<relation>:<row index>`, the row index
counting from 0 as lm-pub-quiz's `instance_index`. Bad input (an `answer_idx` out of range or naming
another object than the row's, a template without [X] or [Y], an empty answer space, duplicate answer
labels) is a DataError naming the file and, where there is one, the line, before anything is scored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from eval.datadir import absolute_path, data_root, no_data, optional_file
from eval.errors import DataError
from eval.jsonl import check_no_lone_surrogate, json_type, opt_list, opt_str, read_jsonl, read_text, req_str
from eval.labels import clean_label, nfc
from eval.lama import Corpus
from eval.relations import check_template, select_relations
from eval.report_counts import LoadReport
from eval.types import Entity, Fact, Relation

BEAR_CORPORA = {"bear": "BEAR", "bear-big": "BEAR-big"}
ENV_VAR = "KBC_BEAR"
METADATA = "metadata_relations.json"
RELATION_INFO = "relation_info.json"


def resolve_bear_dir(corpus: str, data_dir: str | Path | None = None) -> Path:
    """The folder holding `corpus`'s relation files: `--data-dir` (the BEAR root, the corpus folder itself, or
    a LAMA copy with `bear/` beside or inside it), else `$KBC_BEAR`, else `bear/` beside `$KBC_DATA`'s LAMA copy,
    else `./data/bear` (where `kbc data download bear` puts it)."""
    sub = _subfolder(corpus)
    given = [Path(d).expanduser() for d in (data_dir, os.environ.get(ENV_VAR)) if d]
    tried: list[Path] = []
    for root in given or [data_root()]:
        for cand in (root / sub, root / "bear" / sub, root.parent / "bear" / sub, root):
            if cand is root and root.name.lower() != sub.lower():
                continue
            if optional_file([cand / METADATA], f"{sub} metadata file") is not None:  # a folder or pipe there: named
                return absolute_path(cand)
        tried += [root / sub, root / "bear" / sub, root.parent / "bear" / sub]
    raise no_data(f"{sub} data ({METADATA})", tried, corpus,
                  f"point --data-dir or {ENV_VAR} at the folder holding {sub}/")


def _subfolder(corpus: str) -> str:
    try:
        return BEAR_CORPORA[corpus]
    except KeyError:
        raise DataError(f"unknown BEAR corpus {corpus!r}; choose from {', '.join(BEAR_CORPORA)}") from None


def _read_json(path: Path) -> dict:
    text = read_text(path, str(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    check_no_lone_surrogate(data, text, str(path))
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object, got {json_type(data)}")
    return data


def _domains(root: Path) -> dict[str, tuple[str, ...]]:
    """Per relation, its knowledge domains (`relation_info.json` beside the corpus folders; absent: none)."""
    path = root.parent / RELATION_INFO
    if not path.is_file():
        return {}
    out = {}
    for rel, info in _read_json(path).items():
        if not isinstance(info, dict):
            raise DataError(f"{path}: relation {rel}: expected an object, got {json_type(info)}")
        out[rel] = tuple(opt_list(info, "domains", f"{path}: relation {rel}"))
    return out


def _names(root: Path) -> dict[str, str]:
    """Relation id -> Wikidata property name, for tables only. BEAR's files name no relation (templates and domains
    only), so the names come from the corpora staged beside BEAR's folder where there are any: LAMA's
    `lama/relations.jsonl`, then FewRel's `fewrel/pid2name.json` (57 of BEAR's 60 relations); none found, or a file
    that cannot be read: ids alone."""
    from eval.fewrel import relation_names
    from eval.relations import load_relations

    base = root.parent.parent  # <data>/bear/BEAR -> <data>
    names: dict[str, str] = {}
    try:
        names.update((pid, name) for pid, (name, _) in relation_names(base / "fewrel").items() if name)
        lama = base / "lama" / "relations.jsonl"
        if lama.is_file():
            names.update((r, rel.label) for r, rel in load_relations(lama).items() if rel.label != r)
    except (DataError, OSError):
        return {}
    return names


def _answer_space(meta: dict, where: str) -> tuple[Entity, ...] | None:
    """The metadata's answer space (None where it names none); empty, ragged or duplicate labels are refused."""
    if "answer_space_labels" not in meta and "answer_space_ids" not in meta:
        return None
    labels = opt_list(meta, "answer_space_labels", where)
    ids = opt_list(meta, "answer_space_ids", where)
    if not labels:
        raise DataError(f"{where}: the answer space is empty (answer_space_labels)")
    if len(ids) != len(labels):
        raise DataError(f"{where}: {len(labels)} answer_space_labels but {len(ids)} answer_space_ids")
    space = tuple(Entity(nfc(label), oid or None) for label, oid in zip(labels, ids))
    _check_unique(space, where)
    return space


def _check_unique(space: Iterable[Entity], where: str) -> None:
    """Answers match gold by label: two answers with one label could never be told apart."""
    seen: dict[str, int] = {}
    for i, ent in enumerate(space):
        if ent.label in seen:
            raise DataError(f"{where}: answer label {ent.label!r} appears twice in the answer space "
                            f"(positions {seen[ent.label]} and {i})")
        seen[ent.label] = i


def _templates(meta: dict, where: str) -> tuple[str, ...]:
    templates = opt_list(meta, "templates", where)
    if not templates:
        raise DataError(f"{where}: no templates")
    templates = [nfc(template) for template in templates]  # as labels: one spelling of an accent
    for i, template in enumerate(templates):
        check_template(template, f"{where}: template {i}")
    return tuple(templates)


def _rows(path: Path) -> list[tuple[str, dict]]:
    rows = []
    for lineno, row in read_jsonl(path, required=("sub_label", "obj_label")):
        where = f"{path}:{lineno}"
        if not isinstance(row["sub_label"], str):  # may be empty: lm-pub-quiz scores such rows too
            raise DataError(f"{where}: field 'sub_label' must be a string, got {json_type(row['sub_label'])}")
        req_str(row, "obj_label", where)
        # one spelling of a label (NFC), so that "café" written two ways is one answer, as the LAMA layout reads it
        row.update(sub_label=nfc(row["sub_label"]), obj_label=nfc(row["obj_label"]))
        rows.append((where, row))
    return rows


def _space_from_rows(rows: list[tuple[str, dict]], where: str) -> tuple[Entity, ...]:
    """lm-pub-quiz's answer space for a relation without one: objects by id, first appearance, first label."""
    first: dict[str, Entity] = {}
    for at, row in rows:
        oid = opt_str(row, "obj_id", at) or f"label:{row['obj_label']}"
        first.setdefault(oid, Entity(row["obj_label"], opt_str(row, "obj_id", at)))
    space = tuple(first.values())
    _check_unique(space, where)
    return space


def _gold_index(row: dict, at: str, space: tuple[Entity, ...], position: dict[str, int]) -> int:
    """The row's `answer_idx`, checked against the answer space and the row's own object."""
    label, oid = row["obj_label"], opt_str(row, "obj_id", at)
    if "answer_idx" not in row:
        key = oid or f"label:{label}"
        if key not in position:
            raise DataError(f"{at}: object {label!r} ({oid}) is not in the relation's answer space")
        return position[key]
    idx = row["answer_idx"]
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise DataError(f"{at}: answer_idx must be a whole number, got {json_type(idx)}")
    if not 0 <= idx < len(space):
        raise DataError(f"{at}: answer_idx {idx} is out of range (the answer space has {len(space)} answers, "
                        f"0 to {len(space) - 1})")
    gold = space[idx]
    # the answer space's label is the one asked: the row's may differ only by what shows nothing at its ends (a space,
    # a right-to-left mark its editor typed)
    if clean_label(gold.label) != clean_label(label) or (oid and gold.id and gold.id != oid):
        raise DataError(f"{at}: answer_idx {idx} names {gold.label!r} ({gold.id}) but the row's object is "
                        f"{label!r} ({oid})")
    return idx


def load_bear(corpus: str = "bear", data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
              template: int = 0) -> Corpus:
    """BEAR or BEAR-big; each relation's `template` is its `template`-th (0, 1 or 2), `templates` all three."""
    root = resolve_bear_dir(corpus, data_dir)
    meta_path = root / METADATA
    metadata = _read_json(meta_path)
    files = {p.stem: p for p in sorted(root.glob("*.jsonl"))}
    missing = sorted(set(files) - set(metadata))
    if missing:
        raise DataError(f"{meta_path}: no entry for relation file(s) {', '.join(missing)}")
    available = [r for r in metadata if r in files]  # lm-pub-quiz reads the relations that have a file
    if not available:
        raise DataError(f"{root}: no relation files (expected <relation>.jsonl beside {METADATA})")
    domains = _domains(root)
    names = _names(root)
    stub = {r: Relation(r, r, "[X] [Y]") for r in available}
    wanted = select_relations(stub, list(relations or []), corpus)
    out = Corpus(corpus, {}, [], files=[meta_path])
    no_file = [r for r in metadata if r not in files]  # BEAR-big's P414 upstream; else a copy missing a file
    if no_file and not relations:
        note = LoadReport(f"{corpus} {METADATA}")
        note.notes.append(f"{len(no_file)} relation{'s have' if len(no_file) > 1 else ' has'} no data file, so "
                          f"{'they are' if len(no_file) > 1 else 'it is'} not asked: {', '.join(no_file)}")
        out.reports.append(note)
    for rel in wanted:
        where = f"{meta_path}: relation {rel}"
        meta = metadata[rel]
        if not isinstance(meta, dict):
            raise DataError(f"{where}: expected an object, got {json_type(meta)}")
        templates = _templates(meta, where)
        if not 0 <= template < len(templates):
            raise DataError(f"{where}: has {len(templates)} templates, no template {template}")
        path = files[rel]
        rows = _rows(path)
        space = _answer_space(meta, where) or _space_from_rows(rows, f"{path} (answer space from its objects)")
        position = {e.key: i for i, e in enumerate(space)}
        out.relations[rel] = Relation(rel, names.get(rel, rel), templates[template], answer_space=space,
                                      templates=templates, domains=domains.get(rel, ()))
        out.files.append(path)
        report = LoadReport(f"{corpus}/{rel}", relation=rel)
        for i, (at, row) in enumerate(rows):
            report.read += 1
            idx = _gold_index(row, at, space, position)
            sub = Entity(row["sub_label"], opt_str(row, "sub_id", at), tuple(opt_list(row, "sub_aliases", at)))
            out.facts.append(Fact(f"{rel}:{i}", corpus, rel, sub, space[idx], answer_idx=idx))
            report.kept += 1
        blank = sum(1 for _, row in rows if not row["sub_label"].strip())
        if blank:
            report.notes.append(f"{blank} fact(s) with an empty subject label, asked as lm-pub-quiz does")
        out.reports.append(report)
    return out
