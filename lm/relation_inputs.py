"""Relation classification inputs as E-BERT's Appendix A writes them (Zhang et al.'s marking):

  BERT:   [CLS] $ Tang ##ier $ ' s # Ibn Bat ##to ##uta Airport # is the busiest airport in the region . [SEP]
  E-BERT: [CLS] $ Tangier $ ' s # Tangier_Ibn_Battouta_Airport # is the busiest airport in the region . [SEP]
  CONCAT: [CLS] $ Tangier / Tang ##ier $ ' s # Tangier_Ibn_Battouta_Airport / Ibn Bat ##to ##uta Airport # ...

`#` marks the subject (head), `$` the object (tail). An entity position is one input slot whose embedding is
the mapped wikipedia2vec vector W∘F(e) (spliced into `inputs_embeds`); every other position keeps the model's
word-piece embedding. A marked entity without a vector keeps its word pieces (the paper's fallback), counted
in `fallback`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval.errors import ConfigError
from eval.fewrel import HEAD_MARK, TAIL_MARK, Sentence
from eval.types import Entity

FORMS = ("bert", "ebert", "concat")


@dataclass(frozen=True, slots=True)
class RelationInput:
    """Token ids, and (position, entity row) where an entity vector replaces the placeholder id."""

    ids: tuple[int, ...]
    entities: tuple[tuple[int, int], ...] = ()
    fallback: int = 0  # marked entities that had no vector and kept their word pieces


def marked_words(s: Sentence) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The words with `#` around the head and `$` around the tail, and each entity's word span (markers excluded)."""
    out: list[str] = []
    spans: dict[str, list[int]] = {"head": [], "tail": []}
    marks = (("head", HEAD_MARK, s.head_span), ("tail", TAIL_MARK, s.tail_span))
    for i, word in enumerate(s.words):
        for _, mark, (start, _end) in marks:
            if i == start:
                out.append(mark)
        for which, _, (start, end) in marks:
            if start <= i < end:
                spans[which].append(len(out))
        out.append(word)
        for _, mark, (_start, end) in marks:
            if i + 1 == end:
                out.append(mark)
    return out, {k: (v[0], v[-1] + 1) for k, v in spans.items()}


class RelationInputBuilder:
    """Ids of the three forms for sentences; `link(entity) -> row or None` finds entity vectors."""

    def __init__(self, tokenizer, link: Callable[[Entity], int | None] | None = None, max_length: int = 256) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise ConfigError("relation classification needs a fast tokenizer (word positions of the pieces)")
        self.tokenizer = tokenizer
        self.link = link
        self.max_length = max_length
        self.placeholder = int(tokenizer.unk_token_id)
        self.slash = tuple(int(i) for i in tokenizer(["/"], is_split_into_words=True, add_special_tokens=False)
                           ["input_ids"])

    def build(self, sentences: Sequence[Sentence], form: str) -> list[RelationInput]:
        if form not in FORMS:
            raise ConfigError(f"unknown input form {form!r}; choose one of {', '.join(FORMS)}")
        if form != "bert" and self.link is None:
            raise ConfigError(f"input form {form} needs entity vectors (wikipedia2vec)")
        marked = [marked_words(s) for s in sentences]
        enc = self.tokenizer([m for m, _ in marked], is_split_into_words=True)
        return [self._one(s, enc["input_ids"][k], enc.word_ids(k), spans, form)
                for k, (s, (_, spans)) in enumerate(zip(sentences, marked))]

    def _one(self, s: Sentence, ids: list[int], word_ids: list[int | None], spans: dict[str, tuple[int, int]],
             form: str) -> RelationInput:
        rows = {"head": None, "tail": None}
        if form != "bert":
            rows = {"head": self.link(s.head), "tail": self.link(s.tail)}
        owner: dict[int, str] = {}  # word index -> the entity whose mention it is
        for which, (a, b) in spans.items():
            owner.update({w: which for w in range(a, b)})
        out: list[int] = []
        entities: list[tuple[int, int]] = []
        k = 0
        while k < len(ids):
            which = owner.get(word_ids[k]) if word_ids[k] is not None else None
            if which is None or rows[which] is None:
                out.append(int(ids[k]))
                k += 1
                continue
            end = k
            while end < len(ids) and word_ids[end] is not None and owner.get(word_ids[end]) == which:
                end += 1
            entities.append((len(out), int(rows[which])))
            out.append(self.placeholder)
            if form == "concat":
                out += [*self.slash, *(int(i) for i in ids[k:end])]
            k = end
        if len(out) > self.max_length:  # keep [SEP] last; entity slots past the cut go with it
            out = out[:self.max_length - 1] + out[-1:]
            entities = [(p, r) for p, r in entities if p < self.max_length - 1]
        fallback = sum(1 for r in rows.values() if r is None) if form != "bert" else 0
        return RelationInput(tuple(out), tuple(entities), fallback)

    def view(self, item: RelationInput, titles: Sequence[str]) -> list[str]:
        """The input as text: word pieces, entity slots as their wikipedia2vec titles (tests, `kbc show`)."""
        pieces = self.tokenizer.convert_ids_to_tokens(list(item.ids))
        for pos, row in item.entities:
            pieces[pos] = titles[row].replace(" ", "_")
        return pieces
