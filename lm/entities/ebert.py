"""E-BERT inputs and forward passes on any masked LM (E-BERT §3).

REPLACE: the subject's word pieces become one position whose input embedding is the mapped
entity vector W·F(e):  `The native language of Jean_Marais is [MASK] .`
CONCAT: the entity, a slash, then the original word pieces:  `Jean_Marais / Jean Mara ##is`.
Other positions keep the model's own word-piece embeddings; positions and segments are added by
the model as usual (`inputs_embeds`), and neither the encoder nor the output layer is changed.
A subject without an entity vector is asked as plain BERT (the paper's fallback).

Token-level answers rank every candidate token: ties follow `eval.metrics` (equal probabilities
ordered by candidate position, the vocabulary file order), in the answer list and in the exact
ranks of `candidate_ranks` alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.errors import DataError
from eval.metrics import exact_rank, top_order
from eval.types import Query
from lm.batches import pad_rows, to_device

MODES = ("bert", "replace", "concat")


@dataclass(frozen=True, slots=True)
class Encoded:
    """One model input: token ids, where [MASK] is, and where (and which) entity vector goes."""

    ids: tuple[int, ...]
    mask_pos: int
    entity_pos: int | None = None
    entity_row: int | None = None
    subject_span: tuple[int, int] | None = None  # token span of the subject in the plain input


def render(query: Query, mask: str) -> tuple[str, list[tuple[int, int]]]:
    """The prompt with the known entity and `mask` filled in, and the character spans of the entity."""
    pattern = re.compile(re.escape(query.given) + "|" + re.escape(query.asked))
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    pos = 0
    for m in pattern.finditer(query.template):
        piece = query.template[pos:m.start()]
        parts.append(piece)
        length += len(piece)
        fill = query.known.label if m.group() == query.given else mask
        if m.group() == query.given:
            spans.append((length, length + len(fill)))
        parts.append(fill)
        length += len(fill)
        pos = m.end()
    parts.append(query.template[pos:])
    return "".join(parts), spans


def shown_input(query: Query, mode: str, title: str, mask: str = "[MASK]") -> str:
    """The input `mode` scores, as text: the subject's first mention become its entity (REPLACE,
    `The native language of [E:Jean_Marais] is [MASK] .`) or the entity, a slash and the mention (CONCAT,
    `[E:Jean_Marais] / Jean Marais`); the entity marked `[E:title]`, spaces as underscores, so that a one-word
    title is told from the word it replaces."""
    text, spans = render(query, mask)
    if mode == "bert" or not spans:
        return text
    start, end = spans[0]
    entity = f"[E:{title.replace(' ', '_')}]"
    if mode == "concat":
        entity = f"{entity} / {text[start:end]}"
    return text[:start] + entity + text[end:]


class InputBuilder:
    """Token ids for BERT, REPLACE and CONCAT inputs of a query (one tokenizer call per query)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.mask_id = int(tokenizer.mask_token_id)
        self.placeholder = int(tokenizer.unk_token_id if tokenizer.unk_token_id is not None else self.mask_id)
        self.slash = tuple(tokenizer(" /", add_special_tokens=False)["input_ids"])

    def plain(self, query: Query) -> Encoded:
        text, spans = render(query, self.tokenizer.mask_token)
        enc = self.tokenizer(text, return_offsets_mapping=True)
        ids = tuple(int(i) for i in enc["input_ids"])
        if self.mask_id not in ids:
            raise DataError(f"query {query.uid}: template {query.template!r} has no {query.asked} slot to mask")
        span = None
        if spans:
            start, end = spans[0]
            hit = [i for i, (s, e) in enumerate(enc["offset_mapping"]) if e > s and s < end and e > start]
            if hit:
                span = (hit[0], hit[-1] + 1)
        return Encoded(ids, ids.index(self.mask_id), subject_span=span)

    def build(self, query: Query, mode: str, entity_row: int | None) -> Encoded:
        """The input for `mode`; without an entity (or a subject in the text) the plain BERT input."""
        base = self.plain(query)
        if mode == "bert" or entity_row is None or base.subject_span is None:
            return base
        a, b = base.subject_span
        ids = base.ids
        if mode == "replace":
            new = ids[:a] + (self.placeholder,) + ids[b:]
        elif mode == "concat":
            new = ids[:a] + (self.placeholder,) + self.slash + ids[a:b] + ids[b:]
        else:
            raise DataError(f"unknown E-BERT mode {mode!r}; choose one of {', '.join(MODES)}")
        return Encoded(new, new.index(self.mask_id), a, entity_row, base.subject_span)


def padded(sequences: Sequence[Sequence[int]], pad_id: int, device: str = "cpu"):
    """(ids, attention mask) tensors of token id sequences, padded on the right to the longest, copied to a GPU
    without waiting for the work queued there (`to_device`)."""
    array, keep = pad_rows(sequences, pad_id)
    att = np.ones(array.shape, dtype=np.int64) if keep is None else keep.astype(np.int64)
    return to_device(array, device), to_device(att, device)


class MaskedScorer:
    """Batched forward passes with entity vectors spliced into `inputs_embeds`.

    `mapped` holds W·F(e) for every entity row (already in the model's embedding space). Returns
    the full-vocabulary probabilities at [MASK], and the vector the output layer multiplies with
    its (tied) word-piece embeddings, which is what entity-level answers are scored against.
    """

    def __init__(self, model, mapped: np.ndarray | None, pad_id: int, batch_size: int = 32,
                 device: str = "cpu") -> None:
        import torch

        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.pad_id = pad_id
        self.mapped = None if mapped is None else torch.as_tensor(np.asarray(mapped, np.float32))
        self._captured = None

    def _capture(self, module, inputs, output) -> None:
        self._captured = inputs[0]

    def embed(self, batch: Sequence[Encoded]):
        """(ids, attention mask, inputs_embeds) for one batch, padded on the right."""
        ids, att = padded([e.ids for e in batch], self.pad_id, self.device)
        embeds = self.model.get_input_embeddings()(ids)
        for i, e in enumerate(batch):
            if e.entity_pos is not None:
                if self.mapped is None:
                    raise DataError("an entity input needs mapped entity vectors")
                embeds[i, e.entity_pos] = self.mapped[e.entity_row].to(device=self.device, dtype=embeds.dtype)
        return ids, att, embeds

    def run(self, encoded: Sequence[Encoded], want_hidden: bool = False):
        """Probabilities (n, V) at each input's [MASK], and optionally output-layer inputs (n, d)."""
        import torch

        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        probs: list = [None] * len(encoded)
        hidden: list = [None] * len(encoded)
        hook = self.model.get_output_embeddings().register_forward_hook(self._capture) if want_hidden else None
        try:
            self._forward(encoded, order, probs, hidden, want_hidden)
        finally:
            if hook is not None:
                hook.remove()
            self._captured = None
        stacked = torch.stack(probs).numpy() if probs else np.zeros((0, 0), np.float32)
        hid = torch.stack(hidden).numpy() if want_hidden and hidden else None
        return stacked, hid

    def _forward(self, encoded, order, probs, hidden, want_hidden: bool) -> None:
        import torch

        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                batch = [encoded[i] for i in idx]
                _, att, embeds = self.embed(batch)
                logits = self.model(inputs_embeds=embeds, attention_mask=att).logits
                rows = torch.arange(len(batch), device=logits.device)
                at = torch.tensor([e.mask_pos for e in batch], device=logits.device)
                p = torch.softmax(logits[rows, at].float(), dim=-1).cpu()
                h = self._captured[rows, at].float().cpu() if want_hidden else None
                for j, i in enumerate(idx):
                    probs[i] = p[j]
                    if want_hidden:
                        hidden[i] = h[j]


def top_candidates(probs: np.ndarray, cand_ids: Sequence[int], labels: Sequence[str],
                   depth: int) -> list[list[tuple[str, float]]]:
    """Per row, the `depth` most probable candidate tokens as (label, probability), best first."""
    return [[(labels[p], float(v)) for p, v in zip(pos, val)] for pos, val in top_positions(probs, cand_ids, depth)]


def top_positions(probs: np.ndarray, cand_ids: Sequence[int], depth: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row, candidate positions and probabilities of the `depth` best candidates, best first
    (exact ties by candidate position)."""
    sub = probs[:, np.asarray(cand_ids)]
    out = []
    for r in range(len(sub)):
        order = top_order(sub[r], depth)
        out.append((order.astype(np.int32), sub[r, order].astype(np.float32)))
    return out


def candidate_ranks(probs: np.ndarray, cand_ids: Sequence[int],
                    positions: Sequence[Sequence[int]]) -> list[tuple[list[int], list[float]]]:
    """Per row, the exact rank among all candidates and the probability of each candidate position asked."""
    sub = probs[:, np.asarray(cand_ids)]
    return [([exact_rank(sub[r], p) for p in pos], [float(sub[r, p]) for p in pos])
            for r, pos in enumerate(positions)]
