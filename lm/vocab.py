"""Candidate answer sets for masked LMs, and the single-token test that decides which facts an LM can answer.

A candidate is one vocabulary id with a word label. Labels follow LAMA's connectors: WordPiece
tokens are their own label; a byte-level BPE token that starts a word (`ĠParis`) is the word
(`Paris`); word-internal pieces get `_piece_` so they never equal a gold object; a label seen twice
gets `_<id>` appended. Only word labels (not pieces, not special tokens) can be gold answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import DataError
from eval.jsonl import read_text
from eval.labels import clean_label

COMMON_CASED = "common_vocab_cased.txt"
COMMON_LOWER = "common_vocab_lowercased.txt"

NOT_SINGLE_TOKEN = "object is not a single token of the model"
NOT_CANDIDATE = "object is not in the candidate vocabulary"


@dataclass(frozen=True)
class CandidateSet:
    """Candidate ids (best-first ranking happens over these) with their labels, in a fixed order."""

    name: str
    ids: tuple[int, ...]
    labels: tuple[str, ...]
    index: dict[str, int] = field(init=False, repr=False, compare=False)
    fingerprint: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.labels):
            raise ValueError("ids and labels differ in length")
        object.__setattr__(self, "index", {label: i for i, label in enumerate(self.labels)})
        digest = hashlib.sha256(",".join(map(str, self.ids)).encode())
        object.__setattr__(self, "fingerprint", digest.hexdigest()[:16])

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, label: str) -> bool:
        return label in self.index


@dataclass(frozen=True)
class TokenLabels:
    """Every vocabulary id's label, and the word label -> id map of ids that are whole words."""

    labels: tuple[str, ...]
    words: dict[str, int]
    uncased: bool


def is_uncased(tokenizer) -> bool:
    """True when the tokenizer lower-cases its input (bert-base-uncased and the like)."""
    if hasattr(tokenizer, "do_lower_case"):
        return bool(tokenizer.do_lower_case)
    pieces = tokenizer.tokenize("Paris London XYZ")
    return bool(pieces) and all(p == p.lower() for p in pieces)


def _byte_level(tokenizer) -> bool:
    vocab = tokenizer.get_vocab()
    return "Ġthe" in vocab or "Ġ" in vocab


def token_labels(tokenizer, size: int | None = None) -> TokenLabels:
    """Labels for ids 0..size-1 (size: the model's output rows, which may exceed the tokenizer's)."""
    vocab = tokenizer.get_vocab()
    size = size or max(vocab.values()) + 1
    by_id = [""] * size
    for tok, i in vocab.items():
        if i < size:
            by_id[i] = tok
    special = set(tokenizer.all_special_ids)
    byte_level = _byte_level(tokenizer)
    labels: list[str] = []
    words: dict[str, int] = {}
    seen: set[str] = set()
    for i, tok in enumerate(by_id):
        word = False
        if not tok:
            label = f"<id {i}>"
        elif i in special:
            label = tok
        elif byte_level:
            text = tokenizer.convert_tokens_to_string([tok])
            if text.startswith(" ") and text.strip():
                label, word = text.strip(), True
            else:
                label = f"_{text}_"
        else:
            label, word = tok, not tok.startswith("##")
        if label in seen:
            label, word = f"{label}_{i}", False
        seen.add(label)
        labels.append(label)
        if word:
            words[label] = i
    return TokenLabels(tuple(labels), words, is_uncased(tokenizer))


def full_vocab(labels: TokenLabels) -> CandidateSet:
    """Every output row of the model, special tokens and word pieces included (as fill-mask ranks)."""
    return CandidateSet("full", tuple(range(len(labels.labels))), labels.labels)


def from_words(labels: TokenLabels, words: Iterable[str], name: str) -> CandidateSet:
    """The words that are single whole-word tokens of the model, in the given order (duplicates once)."""
    ids, out = [], []
    for word in dict.fromkeys(normalize(w, labels.uncased) for w in words):
        i = labels.words.get(word)
        if i is not None:
            ids.append(i)
            out.append(word)
    if not ids:
        raise DataError(f"candidate vocabulary {name!r} has no word that is a single token of the model")
    return CandidateSet(name, tuple(ids), tuple(out))


def normalize(label: str, uncased: bool) -> str:
    """How a gold object is compared with candidates: lower-cased for uncased models, as LAMA does."""
    return label.lower() if uncased else label


def read_vocab_file(path: str | Path) -> list[str]:
    """One token per line (LAMA's common vocabulary format); blank lines are ignored. Words are compared with gold
    labels, so they are cleaned as labels are (`clean_label`: NFC, no zero-width characters at the ends)."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise DataError(f"vocabulary file {path} is a directory; pass a file with one word per line")
    if not path.is_file():
        raise DataError(f"vocabulary file {path} does not exist")
    words = [clean_label(line) for line in read_text(path, f"vocabulary file {path}").splitlines()]
    words = [w for w in words if w]
    if not words:
        raise DataError(f"vocabulary file {path} is empty")
    return words


def common_vocab_path(data_dir: Path, uncased: bool, other: str = "--set candidates=full or --set vocab_file=PATH"
                      ) -> Path:
    """LAMA's common vocabulary for a cased or uncased model; `other`: the options that name other candidates."""
    path = Path(data_dir) / (COMMON_LOWER if uncased else COMMON_CASED)
    if not path.is_file():
        raise DataError(f"{path} is missing: masked LMs rank LAMA's common vocabulary by default, which ships with "
                        f"the LAMA data; copy it there, or pass {other}")
    return path


def target_positions(targets: Iterable[str], candidates: CandidateSet, uncased: bool) -> dict[str, int]:
    """Each target label that is a candidate (compared as gold objects are) -> its candidate position."""
    out: dict[str, int] = {}
    for label in targets:
        pos = candidates.index.get(normalize(label, uncased))
        if pos is not None:
            out[label] = pos
    return out


def drop_reason(gold: str, candidates: CandidateSet, labels: TokenLabels) -> str | None:
    """Why a fact with this gold object cannot be scored over `candidates`; None when it can."""
    word = normalize(gold, labels.uncased)
    if word in candidates:
        return None
    if word in labels.words:
        return NOT_CANDIDATE
    return NOT_SINGLE_TOKEN


class AnswerSpace:
    """The candidate set for each relation: one fixed set, or the relation's own objects."""

    def __init__(self, labels: TokenLabels, fixed: CandidateSet | None = None,
                 per_relation: dict[str, list[str]] | None = None) -> None:
        if (fixed is None) == (per_relation is None):
            raise ValueError("give exactly one of fixed or per_relation")
        self.labels = labels
        self.fixed = fixed
        self._objects = per_relation or {}
        self._built: dict[str, CandidateSet] = {}

    @property
    def mode(self) -> str:
        return self.fixed.name if self.fixed else "relation"

    def for_relation(self, relation: str) -> CandidateSet:
        if self.fixed is not None:
            return self.fixed
        if relation not in self._built:
            objects = self._objects.get(relation, [])
            words = [w for w in objects if normalize(w, self.labels.uncased) in self.labels.words]
            if not words:
                self._built[relation] = CandidateSet(f"relation:{relation}", (), ())
            else:
                self._built[relation] = from_words(self.labels, words, f"relation:{relation}")
        return self._built[relation]

    def describe(self) -> dict:
        if self.fixed is not None:
            return {"vocab": self.fixed.name, "candidates": len(self.fixed), "candidates_sha": self.fixed.fingerprint}
        return {"vocab": "relation", "relations": len(self._objects)}
