"""Relation definitions (`relations.jsonl`) with the template checks every prompt relies on."""

from __future__ import annotations

import re
from pathlib import Path

from eval.errors import DataError
from eval.file_names import ascii_stem
from eval.jsonl import opt_str, read_jsonl, req_str
from eval.labels import clean_label, control_character, nfc
from eval.types import OBJECT_SLOT, RELATION_TYPES, SUBJECT_SLOT, Relation

MASK_TOKEN = "[MASK]"  # the mask as data files write it: no slot of a template (eval.lama.MASK)

# namespaces of relations an axioms file names (kb/axioms.ttl), held and shown as prefixed ids
IRI_PREFIXES = (("http://www.wikidata.org/prop/direct/", ""), ("http://schema.org/", "schema:"),
                ("https://schema.org/", "schema:"))


def relation_id(rel: str) -> str:
    """A relation's id, as records hold it and tables show it: a relation named by IRI in an axioms file as a
    prefixed name (`schema:birthPlace`, never `http://schema.org/birthPlace`; `P19` for a Wikidata property)."""
    for namespace, prefix in IRI_PREFIXES:
        if rel.startswith(namespace) and len(rel) > len(namespace):
            return prefix + rel[len(namespace):]
    return rel


def slug(name: str) -> str:
    """A file-system-safe relation id, its prediction files' name (predictor names are checked to be safe already):
    each run of characters other than ASCII letters, digits, `.`, `_` and `-` as one `_`, and for an id holding
    any other character a hash of the id besides (`ascii_stem`), so that ids in another script have names apart
    (and `é` in either Unicode spelling one name)."""
    return ascii_stem(name, _ascii_part(nfc(name))) or "predictor"


def older_slug(name: str) -> str:
    """The name an older kbc gave a relation's prediction files, without the hash `slug` adds to an id holding
    characters past ASCII (every ASCII id's name is the same): `首都` -> `predictor`, `café` -> `caf`."""
    return _ascii_part(name) or "predictor"


def _ascii_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


def _suggested(rel_id: str) -> str:
    """An id to name in place of one refused for its spaces, slashes or control characters: those as `_` (its
    file name, `slug`, is no id to type: a hash for an id in another script)."""
    kept = "".join("_" if control_character(ch) else ch for ch in rel_id)
    return re.sub(r"[\s/\\_]*[\s/\\][\s/\\_]*", "_", kept).strip("_.") or "X1"


MAX_STEM = 200  # a file name holds at most 255 bytes on common file systems, less the suffixes a run adds


def check_relation_id(rel_id: str, where: str, files: dict[str, tuple[str, str]]) -> None:
    """A relation id `--relations` can name (it splits its values on spaces) and whose prediction files no other
    relation of the list shares (`files`: each file name so far -> its relation and line, updated)."""
    if rel_id.split() != [rel_id]:
        raise DataError(f"{where}: relation id {rel_id!r} holds a space, which --relations would split; "
                        f"give it an id without one ({_suggested(rel_id)!r})")
    if "/" in rel_id or "\\" in rel_id or rel_id in (".", "..") or control_character(rel_id):
        raise DataError(f"{where}: relation id {rel_id!r} names its data file (TREx/<id>.jsonl), so it cannot hold "
                        "a / or \\, be . or .., or hold a control character; give it another id "
                        f"({_suggested(rel_id)!r})")
    stem = slug(rel_id)
    if len(stem.encode()) > MAX_STEM:
        raise DataError(f"{where}: relation id {rel_id[:40]!r}... is {len(rel_id)} characters long; its run "
                        f"files (<id>.jsonl, <id>.digests) need a name of at most {MAX_STEM} characters: give it a "
                        "shorter id")
    if stem in files:
        other, at = files[stem]
        raise DataError(f"{where}: relations {other!r} ({at}) and {rel_id!r} would share the prediction file "
                        f"{stem}.jsonl; give one of them another id")
    files[stem] = (rel_id, where)


def check_template(template: str, where: str) -> None:
    """Exactly one [X] and one [Y], and no [MASK]: a missing slot leaves the fact unasked, a second [Y] becomes a
    second mask (or a second copy of the candidate), a second [X] a second copy of the subject, and a [MASK] written
    in place of [Y] a second mask, or a statement scored with a mask in it."""
    if MASK_TOKEN in template:
        raise DataError(f"{where}: template {template!r} holds {MASK_TOKEN}; write [Y] where the answer goes "
                        "(each model puts its own mask there)")
    missing = [s for s in (SUBJECT_SLOT, OBJECT_SLOT) if s not in template]
    if missing:
        raise DataError(f"{where}: template {template!r} lacks {' and '.join(missing)}")
    for slot in (SUBJECT_SLOT, OBJECT_SLOT):
        n = template.count(slot)
        if n > 1:
            raise DataError(f"{where}: template {template!r} holds {slot} {n} times; a template holds [X] and [Y] "
                            "once each")


def _relation_label(row: dict, where: str) -> str | None:
    """The `label` field, cleaned as entity labels are (`clean_label`: NFC, no spaces or directional marks at its
    ends, which would head a column with an invisible character); one holding a control character (an escape
    sequence) would reach the terminal of whoever reads a table that names the relation."""
    label = opt_str(row, "label", where)
    if label and (bad := control_character(label)):
        raise DataError(f"{where}: field 'label' holds the control character {bad}: a label is one line of printable "
                        "text")
    return clean_label(label) if label else label


def load_relations(path: Path) -> dict[str, Relation]:
    relations: dict[str, Relation] = {}
    files: dict[str, tuple[str, str]] = {}
    for lineno, row in read_jsonl(path, required=("relation", "template")):
        where = f"{path}:{lineno}"
        rel_id = req_str(row, "relation", where)
        if rel_id not in relations:  # a second definition is named as such below
            check_relation_id(rel_id, where, files)
        template = nfc(req_str(row, "template", where))  # "né" typed as n, e, accent: [UNK] to a BERT
        check_template(template, where)
        rtype = opt_str(row, "type", where)
        if rtype is not None and rtype not in RELATION_TYPES:
            raise DataError(f"{where}: unknown relation type {rtype!r} (expected one of {RELATION_TYPES})")
        rel = Relation(
            id=rel_id,
            label=_relation_label(row, where) or rel_id,
            template=template,
            type=rtype,
            description=opt_str(row, "description", where) or "",
        )
        if rel.id in relations:
            raise DataError(f"{where}: relation {rel.id} defined twice")
        relations[rel.id] = rel
    return relations


def select_relations(available: dict[str, Relation], wanted: list[str] | None, where: str) -> list[str]:
    """The wanted relation ids in order, or all; unknown ids are an error with a suggestion."""
    if not wanted:
        return list(available)
    unknown = [r for r in wanted if r not in available]
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(u, available, n=1) for u in unknown]
        hint = "; ".join(f"{u}: did you mean {h[0]}?" for u, h in zip(unknown, hints) if h)
        raise DataError(
            f"unknown relation id(s) {', '.join(unknown)} in {where}" + (f" ({hint})" if hint else "")
            + f"; known: {', '.join(sorted(available))}"
        )
    return list(wanted)


DOMAIN_PREFIX = "domain:"
GROUP_SEP = "|"


def stored_type(relation: Relation) -> str | None:
    """What a run stores as a relation's type: its cardinality type, else its knowledge domains (BEAR) as
    summary groups `domain:<name>` joined by `|` (a relation may have several)."""
    if relation.type or not relation.domains:
        return relation.type
    return GROUP_SEP.join(f"{DOMAIN_PREFIX}{d}" for d in relation.domains)


def summary_groups(stored: str | None) -> list[str]:
    """The summary groups (besides `all`) a relation counts in, from its stored type."""
    return stored.split(GROUP_SEP) if stored else []
