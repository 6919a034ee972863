"""FewRel 1.0 relation classification (E-BERT §4 and Appendix A): sentences with a marked head and tail
entity (word positions and Wikidata ids) and the relation between them.

Only FewRel's validation file is public in full here (16 relations x 700 sentences), so a seeded split of it
(per relation 8:1:1 train/dev/test) stands in for the 80-relation split of Zhang et al. (2019) that the paper
uses: scores compare models run on the same split, not the paper's numbers. Every row is checked; a malformed
one stops the load with one line naming the file, relation and row.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from eval.datadir import absolute_path, data_root, no_data, optional_file, resolve_data_dir
from eval.errors import DataError
from eval.jsonl import read_text
from eval.lama import Corpus
from eval.report_counts import LoadReport
from eval.types import Entity, Evidence, Fact, Relation

CORPUS = "fewrel"
DATA_FILE = "val_wiki.json"
NAMES_FILE = "pid2name.json"
SPLIT_SEED = 0
SPLIT = (("train", 8), ("dev", 1), ("test", 1))  # parts of every relation's sentences, in this order
HEAD_MARK, TAIL_MARK = "#", "$"  # Zhang et al.: `#` around the subject (head), `$` around the object (tail)


@dataclass(frozen=True)
class Sentence:
    """One labelled sentence: words, and the first mention of each entity as a word span [start, end)."""

    uid: str  # `<relation>:<row index in the file>`
    relation: str
    words: tuple[str, ...]
    head: Entity  # label: the words of the mention; aliases: FewRel's own (lowercased) name
    head_span: tuple[int, int]
    tail: Entity
    tail_span: tuple[int, int]

    @property
    def text(self) -> str:
        return " ".join(self.words)


def resolve_fewrel_dir(data_dir: str | Path | None = None) -> Path:
    """The folder holding `val_wiki.json`: `--data-dir` itself, its `fewrel/`, or `fewrel/` beside it; without
    one, `fewrel/` in or beside the LAMA copy (`$KBC_DATA`, else `./data/lama`: `./data/fewrel`, where
    `kbc data download fewrel` puts it)."""
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        tried = [root, root / CORPUS, root.parent / CORPUS]
    else:
        try:
            lama = resolve_data_dir(None)
        except DataError:
            lama = data_root()
        tried = [lama / CORPUS, lama.parent / CORPUS]
    for folder in tried:
        if optional_file([folder / DATA_FILE], "FewRel data file") is not None:  # a folder or pipe there: named
            return absolute_path(folder)
    raise no_data(f"FewRel data ({DATA_FILE})", tried, CORPUS, "point --data-dir at the folder holding it")


def _span(value, n_words: int, where: str) -> tuple[int, int]:
    """The first mention's word span; mentions must be non-empty runs of consecutive word positions."""
    if not isinstance(value, list) or not value or not isinstance(value[0], list) or not value[0]:
        raise DataError(f"{where}: expected [[positions, ...], ...] with at least one position")
    first = value[0]
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_words for i in first):
        raise DataError(f"{where}: positions {first} are not word positions 0..{n_words - 1}")
    if first != list(range(first[0], first[0] + len(first))):
        raise DataError(f"{where}: positions {first} are not consecutive")
    return first[0], first[-1] + 1


def _entity(value, words: list[str], where: str) -> tuple[Entity, tuple[int, int]]:
    if (not isinstance(value, list) or len(value) != 3 or not isinstance(value[0], str)
            or not isinstance(value[1], str) or not value[1]):
        raise DataError(f"{where}: expected [name, Wikidata id, [[positions]]]")
    start, end = _span(value[2], len(words), where)
    surface = " ".join(words[start:end])
    return Entity(surface, value[1], (value[0],) if value[0] != surface else ()), (start, end)


def read_sentences(path: Path, relations: list[str] | None = None) -> list[Sentence]:
    """Every sentence of a FewRel file, in file order (relations as listed, rows as given)."""
    text = read_text(path, str(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object {{relation: [sentences]}}")
    if not data:
        raise DataError(f"{path}: holds no relation; expected an object {{relation: [sentences]}}")
    if relations:
        missing = [r for r in relations if r not in data]
        if missing:
            raise DataError(f"--relations {missing[0]}: not in {path} (it holds {', '.join(data)})")
    out: list[Sentence] = []
    for rel, rows in data.items():
        if relations and rel not in relations:
            continue
        if not isinstance(rows, list):
            raise DataError(f"{path}: relation {rel}: expected a list of sentences")
        if not rows:
            raise DataError(f"{path}: relation {rel}: no sentences (a relation needs some to train, select and test)")
        for i, row in enumerate(rows):
            where = f"{path}: relation {rel}, row {i}"
            if not isinstance(row, dict) or not {"tokens", "h", "t"} <= set(row):
                raise DataError(f"{where}: expected an object with tokens, h and t")
            words = row["tokens"]
            if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
                raise DataError(f"{where}: tokens must be a non-empty list of strings")
            head, head_span = _entity(row["h"], words, f"{where}, h")
            tail, tail_span = _entity(row["t"], words, f"{where}, t")
            if head_span[0] < tail_span[1] and tail_span[0] < head_span[1]:
                raise DataError(f"{where}: head and tail mentions overlap")
            out.append(Sentence(f"{rel}:{i}", rel, tuple(words), head, head_span, tail, tail_span))
    return out


def split(sentences: list[Sentence], seed: int = SPLIT_SEED) -> dict[str, list[Sentence]]:
    """Per relation, a seeded shuffle cut 8:1:1 into train, dev and test (each part in file order)."""
    by_rel: dict[str, list[Sentence]] = {}
    for s in sentences:
        by_rel.setdefault(s.relation, []).append(s)
    total = sum(w for _, w in SPLIT)
    parts: dict[str, list[Sentence]] = {name: [] for name, _ in SPLIT}
    for rel, rows in by_rel.items():
        order = list(range(len(rows)))
        random.Random(f"{seed}/{rel}").shuffle(order)
        start = 0
        for k, (name, weight) in enumerate(SPLIT):
            end = len(rows) if k == len(SPLIT) - 1 else start + round(len(rows) * weight / total)
            parts[name] += [rows[i] for i in sorted(order[start:end])]
            start = end
    return parts


def check_parts(parts: dict[str, list[Sentence]], path: Path, needed: tuple[str, ...]) -> None:
    """Refuse a file whose split leaves one of the `needed` parts empty: nothing to ask, or to train or select on."""
    empty = next((part for part in needed if not parts[part]), None)
    if empty is not None:
        n = sum(len(v) for v in parts.values())
        raise DataError(f"{path}: the seeded {':'.join(str(w) for _, w in SPLIT)} split of its {n} sentences leaves "
                        f"the {empty} part empty; a relation of 10 or more sentences has some in every part")


def relation_names(root: Path) -> dict[str, tuple[str, str]]:
    """Property id -> (name, description) from `pid2name.json`, empty where the file is absent."""
    path = root / NAMES_FILE
    if optional_file([path], "FewRel relation names file") is None:
        return {}
    text = read_text(path, str(path))
    try:
        data = json.loads(text)
        return {k: (str(v[0]), str(v[1]) if len(v) > 1 else "") for k, v in data.items()}
    except (json.JSONDecodeError, TypeError, IndexError, KeyError, AttributeError):
        raise DataError(f"{path}: expected {{property id: [name, description]}}") from None


def load_split(data_dir: str | Path | None = None, relations: list[str] | None = None) -> dict[str, list[Sentence]]:
    """The train/dev/test parts of the staged file (the test part is the corpus a run asks)."""
    root = resolve_fewrel_dir(data_dir)
    return split(read_sentences(root / DATA_FILE, relations))


def load_fewrel(data_dir: str | Path | None = None, relations: list[str] | None = None) -> Corpus:
    """The test part as a corpus: one `Fact` per sentence (subject = head, object = tail, relation = gold,
    `cloze` = the sentence), with every relation of the file as a class."""
    root = resolve_fewrel_dir(data_dir)
    sentences = read_sentences(root / DATA_FILE, relations)
    names = relation_names(root)
    rels = list(dict.fromkeys(s.relation for s in sentences))
    relation_map = {r: Relation(r, names.get(r, (r, ""))[0], "[X] [Y]", None, names.get(r, ("", ""))[1])
                    for r in rels}
    parts = split(sentences)
    check_parts(parts, root / DATA_FILE, ("test",))
    test = parts["test"]
    facts = [Fact(s.uid, CORPUS, s.relation, s.head, s.tail, (Evidence(s.text),), cloze=s.text) for s in test]
    report = LoadReport(str(root / DATA_FILE), read=len(sentences), kept=len(test),
                        parts={name: len(rows) for name, rows in parts.items()})  # broken down per relation below
    report.notes.append(f"seeded split {'/'.join(n for n, _ in SPLIT)} {':'.join(str(w) for _, w in SPLIT)} "
                        f"(seed {SPLIT_SEED}) of all {len(rels)} relations: the {len(test)} test sentences are "
                        f"the ones asked (--relations and --limit narrow only these); the other "
                        f"{len(sentences) - len(test)}, of all {len(rels)} relations whatever --relations says, "
                        "train and select the fine-tuned models")
    reports = [report, *_relation_reports(parts)]
    files = [root / DATA_FILE] + ([root / NAMES_FILE] if (root / NAMES_FILE).is_file() else [])
    return Corpus(CORPUS, relation_map, facts, reports, files, asked_part="test part")


def _relation_reports(parts: dict[str, list[Sentence]]) -> list[LoadReport]:
    """Per relation, its sentences read and how many fell in each part (kept: the test part, the one asked)."""
    counts: dict[str, dict[str, int]] = {}
    for name, rows in parts.items():
        for s in rows:
            per = counts.setdefault(s.relation, {part: 0 for part, _ in SPLIT})
            per[name] += 1
    return [LoadReport(f"{CORPUS}/{rel}", read=sum(per.values()), kept=per["test"], relation=rel, parts=per)
            for rel, per in counts.items()]
