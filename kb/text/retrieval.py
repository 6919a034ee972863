"""The retrieval baseline (LAMA §4.3, DrQA row): BM25 top-k paragraphs, then a reader.

The query is the prompt with the known entity filled in and the asked slot left out: for
T-REx / Google-RE the subject label plus the relation's template words, for SQuAD the cloze
sentence. Readers rank single-token candidates, as LAMA constrained DrQA to single tokens:
- `VocabReader` (default, offline): candidates are the vocabulary tokens (LAMA's common cased
  vocabulary) found in the retrieved paragraphs, each scored by the BM25 weight of the
  paragraphs it occurs in, its idf in the index, and a bonus when the words around it match
  the words around the slot in the prompt. The prompt's own words are never answers.
- `EntityReader`: candidates are the link targets of the retrieved paragraphs (entity names).
- `QAReader`: a Hugging Face extractive question-answering model for users with weights.

Ties (`eval.metrics`): equal scores are ordered by the reader's candidate order: vocabulary file
order (`VocabReader`), first appearance in the retrieved paragraphs (`EntityReader`, `QAReader`).
Ranks count within the returned list only (`ranks = "list"`).

Leakage: on the LAMA evidence corpus each T-REx / Google-RE fact's own evidence sentence is in
the index, so the plain number measures reading the aligned sentence (like LAMA's RE baselines,
which were given those sentences). `exclude_gold=True` drops the paragraphs aligned to the
queried fact before reading, which gives the leak-free number.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from eval.errors import DataError
from eval.types import Answer, Prediction, Query
from kb.text.analyzer import surface_tokens, tokens
from kb.text.index import Hit, TextIndex

SLOT = "\x00SLOT\x00"
CONTEXT = 2  # words compared on each side of the slot


def retrieval_text(query: Query) -> str:
    """The bag-of-words query: the prompt with the known entity and no slot."""
    return re.sub(r"\s+", " ", query.text(" ")).strip()


@dataclass(frozen=True, slots=True)
class SlotContext:
    """The words right before and after the asked slot, lowercased, nearest first."""

    left: tuple[str, ...]
    right: tuple[str, ...]
    own: frozenset[str]

    @classmethod
    def of(cls, query: Query) -> SlotContext:
        before, _, after = query.text(SLOT).partition(SLOT)
        left = tuple(reversed(tokens(before)))[:CONTEXT]
        right = tuple(tokens(after))[:CONTEXT]
        return cls(left, right, frozenset(tokens(before) + tokens(after)))

    def match(self, toks: Sequence[str], i: int) -> int:
        """How many context words sit at the same offsets around position `i`."""
        n = 0
        for d, word in enumerate(self.left, 1):
            if i - d >= 0 and toks[i - d] == word:
                n += 1
        for d, word in enumerate(self.right, 1):
            if i + d < len(toks) and toks[i + d] == word:
                n += 1
        return n


class Reader(Protocol):
    def describe(self) -> dict: ...

    def read(self, query: Query, hits: Sequence[Hit], depth: int) -> list[Answer]: ...


def load_vocab(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path}: candidate vocabulary not found (LAMA's common_vocab_cased.txt)")
    vocab = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not vocab:
        raise DataError(f"{path}: candidate vocabulary is empty")
    return vocab


def _weights(hits: Sequence[Hit]) -> list[float]:
    """Paragraph weights: BM25 scores relative to the best hit."""
    top = hits[0].score if hits and hits[0].score > 0 else 1.0
    return [h.score / top for h in hits]


class VocabReader:
    """Offline reader over a candidate vocabulary (see the module docstring)."""

    def __init__(self, vocab: Sequence[str], index: TextIndex, context_bonus: float = 1.0) -> None:
        self.vocab = {w: i for i, w in enumerate(vocab)}
        self.index = index
        self.total = len(index)
        self.context_bonus = context_bonus
        self._idf: dict[str, float] = {}

    def describe(self) -> dict:
        return {"reader": "vocab", "candidates": len(self.vocab), "context_bonus": self.context_bonus,
                "context_words": CONTEXT}

    def idf(self, term: str) -> float:
        value = self._idf.get(term)
        if value is None:
            df = self.index.doc_freq(term)
            value = self._idf[term] = math.log(1 + (self.total - df + 0.5) / (df + 0.5))
        return value

    def read(self, query: Query, hits: Sequence[Hit], depth: int) -> list[Answer]:
        ctx = SlotContext.of(query)
        scores: dict[str, float] = defaultdict(float)
        for weight, hit in zip(_weights(hits), hits):
            surface = surface_tokens(hit.paragraph.text)
            lower = [t.lower() for t in surface]
            best: dict[str, int] = {}
            for i, tok in enumerate(surface):
                if tok not in self.vocab or lower[i] in ctx.own:
                    continue
                best[tok] = max(best.get(tok, 0), ctx.match(lower, i))
            for tok, match in best.items():
                scores[tok] += weight * self.idf(tok.lower()) * (1 + self.context_bonus * match)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], self.vocab[kv[0]]))
        return [Answer(label, score) for label, score in ranked[:depth]]


class EntityReader:
    """Candidates are the entities the retrieved paragraphs link to, weighted by those paragraphs."""

    def describe(self) -> dict:
        return {"reader": "entities"}

    def read(self, query: Query, hits: Sequence[Hit], depth: int) -> list[Answer]:
        own = query.known.label
        scores: dict[str, float] = defaultdict(float)
        first: dict[str, int] = {}
        for weight, hit in zip(_weights(hits), hits):
            for link in hit.paragraph.links:
                if link == own:
                    continue
                scores[link] += weight
                first.setdefault(link, len(first))
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], first[kv[0]]))
        return [Answer(label, score) for label, score in ranked[:depth]]


class QAReader:
    """A Hugging Face extractive-QA model reads each paragraph; answers are single words.

    The cloze prompt becomes a question by putting "what" in the slot. Each word of a paragraph
    is scored as a span, p(start at its first piece) * p(end at its last piece), and the scores
    are summed over paragraphs, weighted as in `VocabReader`.
    """

    def __init__(self, model: str, vocab: Sequence[str] | None = None, device: str = "cpu",
                 max_length: int = 384) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.net = AutoModelForQuestionAnswering.from_pretrained(model).to(device).eval()
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot load the QA reader {model!r}: {str(exc).splitlines()[0]}") from None
        self.model = model
        self.device = device
        self.vocab = set(vocab) if vocab else None
        self.max_length = max_length

    def describe(self) -> dict:
        return {"reader": "qa", "model": self.model,
                "candidates": len(self.vocab) if self.vocab else "any single word"}

    def read(self, query: Query, hits: Sequence[Hit], depth: int) -> list[Answer]:
        import torch

        if not hits:
            return []
        question = re.sub(r"\s+", " ", query.text("what")).strip().rstrip(" .") + "?"
        contexts = [h.paragraph.text for h in hits]
        enc = self.tokenizer([question] * len(hits), contexts, truncation="only_second", padding=True,
                             max_length=self.max_length, return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")
        with torch.no_grad():
            out = self.net(**{k: v.to(self.device) for k, v in enc.items()})
        own = SlotContext.of(query).own
        scores: dict[str, float] = defaultdict(float)
        for row, (weight, text) in enumerate(zip(_weights(hits), contexts)):
            seq = enc.sequence_ids(row)
            ctx = torch.tensor([s == 1 for s in seq])
            p_start = torch.softmax(out.start_logits[row].cpu().masked_fill(~ctx, -1e9), -1)
            p_end = torch.softmax(out.end_logits[row].cpu().masked_fill(~ctx, -1e9), -1)
            spans: dict[int, list[int]] = {}
            for i, word in enumerate(enc.word_ids(row)):
                if seq[i] == 1 and word is not None:
                    spans.setdefault(word, [i, i])[1] = i
            for first, last in spans.values():
                label = text[int(offsets[row][first][0]):int(offsets[row][last][1])]
                words = surface_tokens(label)
                if len(words) != 1 or words[0] != label or label.lower() in own:
                    continue
                if self.vocab is not None and label not in self.vocab:
                    continue
                scores[label] += weight * float(p_start[first] * p_end[last])
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])  # stable: ties by first appearance
        return [Answer(label, score) for label, score in ranked[:depth]]


class RetrievalPredictor:
    """BM25 retrieval of `k` paragraphs per query, then `reader`."""

    name = "retrieval"
    ranks = "list"  # readers return a short list of candidates found in the paragraphs

    def __init__(self, index: TextIndex, reader: Reader, k: int = 5, exclude_gold: bool = False,
                 index_info: dict | None = None) -> None:
        self.index = index
        self.reader = reader
        self.k = k
        self.exclude_gold = exclude_gold
        self.index_info = index_info or {}

    def describe(self) -> dict:
        return {"predictor": "retrieval", "k": self.k, "exclude_gold": self.exclude_gold,
                "index": self.index_info, "ranks": self.ranks, **self.reader.describe()}

    def own_evidence(self, facts: Sequence) -> dict[str, list[int]]:
        """Per relation, [facts whose own evidence the index holds, facts]: where none does, leaving it out (or
        reading it) changes nothing, and the oracle bounds nothing."""
        held = self.index.facts_held(f.uid for f in facts)
        out: dict[str, list[int]] = {}
        for fact in facts:
            counts = out.setdefault(fact.relation, [0, 0])
            counts[0] += fact.uid in held
            counts[1] += 1
        return out

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.exclude_gold:
            return self.index.search(retrieval_text(query), self.k)
        own = query.own_facts
        hits = self.index.search(retrieval_text(query), self.k * 3 + 10)
        return [h for h in hits if own.isdisjoint(h.paragraph.facts)][:self.k]

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        out = []
        for query in queries:
            hits = self.retrieve(query)
            answers = self.reader.read(query, hits, depth)
            out.append(Prediction(query.uid, tuple(answers), extra={"retrieved": [h.paragraph.pid for h in hits]}))
        return out
