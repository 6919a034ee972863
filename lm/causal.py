"""Causal-LM typed querying (coherency paper §3.2, after Kassner et al. 2021).

A causal LM cannot fill a blank, so each candidate entity is put into the slot and the filled
sentence is scored by its log-likelihood, sum over tokens of log p(token | BOS, earlier tokens).
Candidates may span several tokens; the most likely sentence gives the answer. Sentences are
deduplicated, grouped by token length (little padding) and batched; results go to the cache.

Every candidate is scored, so `Query.targets` get exact ranks (`Prediction.target_ranks`). Ties
follow `eval.metrics`: equal log-likelihoods are ordered by candidate order (the relation's objects
in corpus order, or the vocabulary file order), in the answer list and in exact ranks alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval.types import Answer, Fact, Prediction, Query
from lm.cache import ResultCache

NOT_IN_SET = "object is not in the candidate set"


class CausalLMScorer:
    def __init__(self, model, tokenizer, *, fingerprint: str, dtype: str = "float32", batch_size: int = 32,
                 cache: ResultCache | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.fingerprint = fingerprint
        self.dtype = dtype
        self.batch_size = max(1, int(batch_size))
        self.cache = cache
        self.device = next(model.parameters()).device
        self.bos_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)
        self.forward_calls = 0

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with BOS first, so the first word is scored too (GPT-2's <|endoftext|>)."""
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_attention_mask=False)["input_ids"]
        head = [self.bos_id] if self.bos_id is not None else []
        return [head + row for row in enc]

    def loglik(self, texts: Sequence[str]) -> list[tuple[float, int]]:
        """(log-likelihood, scored tokens) of each text; identical texts computed once."""
        import torch

        unique = list(dict.fromkeys(texts))
        keys = [ResultCache.key("causal", self.fingerprint, self.dtype, self.device.type, t) for t in unique]
        key_of = dict(zip(unique, keys))
        found = self.cache.get_many(keys, 1) if self.cache is not None else {}
        out: dict[str, tuple[float, int]] = {t: (float(found[k][1][0]), found[k][2])
                                              for t, k in zip(unique, keys) if k in found}
        todo = [t for t in unique if t not in out]
        if todo:
            ids = self.encode(todo)
            order = sorted(range(len(todo)), key=lambda i: len(ids[i]))
            new = []
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    batch = order[start:start + self.batch_size]
                    width = max(len(ids[i]) for i in batch)
                    input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                    attention = torch.zeros((len(batch), width), dtype=torch.long)
                    for j, i in enumerate(batch):
                        input_ids[j, :len(ids[i])] = torch.tensor(ids[i])
                        attention[j, :len(ids[i])] = 1
                    self.forward_calls += 1
                    logits = self.model(input_ids=input_ids.to(self.device),
                                        attention_mask=attention.to(self.device)).logits.float()
                    logp = torch.log_softmax(logits[:, :-1], dim=-1)
                    target = input_ids[:, 1:].to(self.device)
                    tok = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * attention[:, 1:].to(self.device)
                    sums = tok.sum(dim=1).cpu().numpy()
                    for j, i in enumerate(batch):
                        n = len(ids[i]) - 1
                        out[todo[i]] = (float(sums[j]), n)
                        new.append((key_of[todo[i]], np.array([0]), np.array([sums[j]]), n))
            if self.cache is not None:
                self.cache.put_many(new)
        return [out[t] for t in texts]


class CausalTypedPredictor:
    """Ranks each relation's candidate entities by the log-likelihood of the filled template."""

    ranks = "exact"  # every candidate is scored: Prediction.target_ranks holds exact ranks

    def __init__(self, name: str, scorer: CausalLMScorer, candidates: dict[str, list[str]],
                 source: str, describe_extra: dict | None = None) -> None:
        self.name = name
        self.scorer = scorer
        self.candidates = {rel: list(dict.fromkeys(c)) for rel, c in candidates.items()}
        self._sets = {rel: set(c) for rel, c in self.candidates.items()}
        self.source = source
        self._extra = describe_extra or {}

    def describe(self) -> dict:
        return {
            "kind": "causal-lm-typed",
            "model": self.name,
            "fingerprint": self.scorer.fingerprint,
            "dtype": self.scorer.dtype,
            "device": str(self.scorer.device),
            "candidates": self.source,
            "candidates_per_relation": {rel: len(c) for rel, c in sorted(self.candidates.items())},
            "ranks": self.ranks,
            "ties": "candidate order",
            **self._extra,
        }

    chunk_size = 8  # queries per call: each scores every candidate sentence, so work is kept often

    def answer_space_size(self, relation: str) -> int:
        return len(self.candidates.get(relation, ()))

    def cost(self, queries: Sequence[Query]) -> str:
        """Said before starting: typed querying scores one sentence per candidate and query."""
        n = sum(len(self.candidates.get(q.relation, ())) for q in queries)
        return f"typed querying will score {n:,} sentences ({len(queries):,} queries x their relation's candidates)"

    def filter_facts(self, facts: Sequence[Fact]) -> tuple[list[Fact], dict[str, int]]:
        kept, dropped = [], {}
        for fact in facts:
            if fact.object.label in self._sets.get(fact.relation, ()):
                kept.append(fact)
            else:
                dropped[NOT_IN_SET] = dropped.get(NOT_IN_SET, 0) + 1
        return kept, dropped

    def sentence(self, query: Query, candidate: str) -> str:
        text = query.text(candidate)
        return f"{query.context} {text}" if query.context else text

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        texts, spans = [], []
        for q in queries:
            cands = self.candidates.get(q.relation, [])
            spans.append((len(texts), cands))
            texts += [self.sentence(q, c) for c in cands]
        scores = self.scorer.loglik(texts)
        out = []
        for q, (start, cands) in zip(queries, spans):
            ll = np.array([s for s, _ in scores[start:start + len(cands)]], dtype=np.float64)
            order = np.argsort(-ll, kind="stable")  # ties: candidate order
            rank = np.empty(len(cands), dtype=np.int64)
            rank[order] = np.arange(1, len(cands) + 1)
            where = {c: i for i, c in enumerate(cands)}
            targets = {t: int(rank[where[t]]) for t in q.targets if t in where}
            answers = tuple(Answer(cands[i], float(ll[i])) for i in order[:depth])
            out.append(Prediction(q.uid, answers, False, {"n_candidates": len(cands)}, targets))
        return out
