"""Causal-LM typed querying (coherency paper §3.2, after Kassner et al. 2021).

A causal LM cannot fill a blank, so each candidate entity is put into the slot and the filled
sentence is scored by its log-likelihood, sum over tokens of log p(token | BOS, earlier tokens).
Candidates may span several tokens; the most likely sentence gives the answer. Both slots can be
asked: object queries rank the relation's objects, subject queries its subjects.

Shared prefix: the sentences of one query differ only from the slot on, so the tokens before it
are run once and every candidate continues from their cached keys and values
(`past_key_values`). The prefix is found on token ids: each sentence is tokenized whole (BPE
merges across the slot boundary stay as the model sees them) and the prefix is the longest run
of ids all of the query's sentences share. A sentence's log-likelihood is then the prefix's own
log-likelihood, plus its first token after the prefix read from the prefix's last position,
plus the rest from one batched pass over the continuations. This equals scoring each sentence
whole (float32: within 1e-4, `tests/test_causal_prefix.py`) while running the model over a
fraction of the tokens. Models whose cache cannot be reused that way fall back to whole sentences.

`prompt=extended` (the paper's templates for autoregressive models, "extended so that the
entity appears at the very end"): object queries use `template_obj` ("[X] was born in [Y]"),
subject queries `template_sub` ("[Y] is the birth place of [X]"); then a one-token candidate needs
no model pass of its own.

Every candidate is scored, so `Query.targets` get exact ranks (`Prediction.target_ranks`). Ties
follow `eval.metrics`: equal log-likelihoods are ordered by candidate order (the relation's
entities in corpus order, or the vocabulary file order), in the answer list and in exact ranks alike.
Results go to the result cache per sentence, under a key that names the scoring path.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from eval.errors import DataError
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Answer, Fact, Prediction, Query
from lm.cache import ResultCache

NOT_IN_SET = "object is not in the candidate set"
SUBJECT_NOT_IN_SET = "subject is not in the candidate set"
CONTINUATION_TOKENS = 512  # candidate tokens per continuation pass (bounds the [tokens, vocab] logits)
PREFIX_TOKENS = 2048  # prefix tokens per prefix pass (long evidence contexts get fewer groups per pass)
CHECK_TEXTS = ("Paris is the capital of France .", "Paris is the capital of Ulaanbaatar Province .",
               "Paris is the capital of")


class CausalLMScorer:
    def __init__(self, model, tokenizer, *, fingerprint: str, dtype: str = "float32", batch_size: int = 32,
                 cache: ResultCache | None = None, shared_prefix: bool = True) -> None:
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
        self.tokens_run = 0  # token positions sent through the model (both paths)
        self.shared_prefix = shared_prefix and self._shared_prefix_agrees()

    @property
    def path(self) -> str:
        return "shared-prefix" if self.shared_prefix else "full-sentence"

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with BOS first, so the first word is scored too (GPT-2's <|endoftext|>)."""
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_attention_mask=False)["input_ids"]
        head = [self.bos_id] if self.bos_id is not None else []
        return [head + row for row in enc]

    # --- whole sentences -------------------------------------------------------------------------
    def loglik(self, texts: Sequence[str]) -> list[tuple[float, int]]:
        """(log-likelihood, scored tokens) of each text, each sentence run whole; identical texts once."""
        return self._cached(texts, "causal", self._run_full)

    def _run_full(self, todo: list[str]) -> dict[str, tuple[float, int]]:
        import torch

        ids = self.encode(todo)
        order = sorted(range(len(todo)), key=lambda i: len(ids[i]))
        out: dict[str, tuple[float, int]] = {}
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
                self.tokens_run += int(attention.sum())
                logits = self.model(input_ids=input_ids.to(self.device),
                                    attention_mask=attention.to(self.device)).logits.float()
                logp = torch.log_softmax(logits[:, :-1], dim=-1)
                target = input_ids[:, 1:].to(self.device)
                tok = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * attention[:, 1:].to(self.device)
                sums = tok.sum(dim=1).cpu().numpy()
                for j, i in enumerate(batch):
                    out[todo[i]] = (float(sums[j]), len(ids[i]) - 1)
        return out

    # --- sentences sharing a prefix --------------------------------------------------------------
    def loglik_groups(self, groups: Sequence[Sequence[str]]) -> list[list[tuple[float, int]]]:
        """`loglik` of each text, for groups of texts that share their beginning (one query's sentences).

        Each group's shared token prefix runs once; without the shared-prefix path this is `loglik`.
        """
        flat = [t for g in groups for t in g]
        if not self.shared_prefix:
            scores = self.loglik(flat)
        else:
            def run(todo: list[str]) -> dict[str, tuple[float, int]]:
                pending = set(todo)
                mine = []
                for g in groups:  # each todo text scored in the first group holding it
                    own = [t for t in dict.fromkeys(g) if t in pending]
                    pending.difference_update(own)
                    if own:
                        mine.append(own)
                return self._run_shared(mine)

            scores = self._cached(flat, "causal-shared-prefix", run)
        out, start = [], 0
        for g in groups:
            out.append(scores[start:start + len(g)])
            start += len(g)
        return out

    def _run_shared(self, groups: list[list[str]]) -> dict[str, tuple[float, int]]:
        """Prefix passes (groups batched), then continuation passes (candidates batched) on the cached prefix."""
        import torch

        out: dict[str, tuple[float, int]] = {}
        texts: list[list[str]] = []
        encoded: list[list[list[int]]] = []
        for group in groups:
            rows = [(t, ids) for t, ids in zip(group, self.encode(group))]
            out.update({t: (0.0, 0) for t, ids in rows if len(ids) <= 1})  # BOS alone: nothing to predict
            rows = [(t, ids) for t, ids in rows if len(ids) > 1]
            if rows and _shared_length([ids for _, ids in rows]) == 0:
                rows_split = [[row] for row in rows]  # no BOS and different first tokens: nothing is shared
            else:
                rows_split = [rows] if rows else []
            for part in rows_split:
                texts.append([t for t, _ in part])
                encoded.append([ids for _, ids in part])
        groups = texts
        prefix_len = [_shared_length(ids) for ids in encoded]
        with torch.inference_mode():
            order = sorted(range(len(groups)), key=lambda g: prefix_len[g])  # similar lengths: little padding
            members: list[int] = []
            for g in order:
                if members and (len(members) >= self.batch_size or (len(members) + 1) * prefix_len[g] > PREFIX_TOKENS):
                    self._score_block(members, groups, encoded, prefix_len, out)
                    members = []
                members.append(g)
            if members:
                self._score_block(members, groups, encoded, prefix_len, out)
        return out

    def _score_block(self, members: list[int], groups: list[list[str]], encoded: list[list[list[int]]],
                     prefix_len: list[int], out: dict[str, tuple[float, int]]) -> None:
        import torch

        dev = self.device
        width = max(prefix_len[g] for g in members)
        prefix_ids = torch.full((len(members), width), self.pad_id, dtype=torch.long)
        prefix_mask = torch.zeros((len(members), width), dtype=torch.long)
        for j, g in enumerate(members):
            prefix_ids[j, :prefix_len[g]] = torch.tensor(encoded[g][0][:prefix_len[g]])
            prefix_mask[j, :prefix_len[g]] = 1
        self.forward_calls += 1
        self.tokens_run += int(prefix_mask.sum())
        result = self.model(input_ids=prefix_ids.to(dev), attention_mask=prefix_mask.to(dev), use_cache=True)
        logits = result.logits.float()
        norm = torch.logsumexp(logits, dim=-1)  # log-softmax where it is read, not over the whole [B, T, V]
        past = [(layer.keys, layer.values) for layer in result.past_key_values.layers]
        head = logits[:, :-1].gather(-1, prefix_ids[:, 1:].to(dev).unsqueeze(-1)).squeeze(-1) - norm[:, :-1]
        head_ll = (head * prefix_mask[:, 1:].to(dev)).sum(dim=1).cpu().tolist()
        at = (torch.arange(len(members)), torch.tensor([prefix_len[g] - 1 for g in members]))
        last = logits[at] - norm[at].unsqueeze(-1)
        rows: list[tuple[int, str, list[int]]] = []  # (block row, text, continuation ids)
        for j, g in enumerate(members):
            p = prefix_len[g]
            firsts = last[j, torch.tensor([ids[p] for ids in encoded[g]])].cpu().tolist()
            for text, ids, first in zip(groups[g], encoded[g], firsts):
                out[text] = (head_ll[j] + first, len(ids) - 1)
                if len(ids) - p > 1:
                    rows.append((j, text, ids[p:]))
        by_width: dict[int, list[tuple[int, str, list[int]]]] = {}
        for row in rows:  # one width per pass: padding would cost as much as real tokens
            by_width.setdefault(len(row[2]) - 1, []).append(row)
        lengths = [prefix_len[g] for g in members]
        for width, same in sorted(by_width.items()):
            step = max(1, CONTINUATION_TOKENS // width)
            for start in range(0, len(same), step):
                self._continue(same[start:start + step], past, prefix_mask, lengths, out)

    def _continue(self, batch: list[tuple[int, str, list[int]]], past: list, prefix_mask, prefix_len: list[int],
                  out: dict[str, tuple[float, int]]) -> None:
        """Adds log p(continuation tokens after the first) to `out` for each row, from the cached prefix."""
        import torch
        from transformers import DynamicCache

        dev = self.device
        width = max(len(ids) for _, _, ids in batch) - 1
        n = len(batch)
        input_ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        targets = torch.full((n, width), self.pad_id, dtype=torch.long)
        valid = torch.zeros((n, width), dtype=torch.long)
        positions = torch.zeros((n, width), dtype=torch.long)
        for i, (j, _, ids) in enumerate(batch):
            k = len(ids) - 1
            input_ids[i, :k] = torch.tensor(ids[:-1])
            targets[i, :k] = torch.tensor(ids[1:])
            valid[i, :k] = 1
            positions[i] = prefix_len[j] + torch.arange(width)
        index = torch.tensor([j for j, _, _ in batch], device=dev)
        cache = DynamicCache(ddp_cache_data=[(k.index_select(0, index), v.index_select(0, index)) for k, v in past])
        attention = torch.cat([prefix_mask.to(dev).index_select(0, index), valid.to(dev)], dim=1)
        self.forward_calls += 1
        self.tokens_run += int(valid.sum())
        logits = self.model(input_ids=input_ids.to(dev), attention_mask=attention, position_ids=positions.to(dev),
                            past_key_values=cache, use_cache=True).logits.float()
        picked = logits.gather(-1, targets.to(dev).unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        tok = picked * valid.to(dev)
        for (_, text, _), extra in zip(batch, tok.sum(dim=1).cpu().tolist()):
            ll, n_tok = out[text]
            out[text] = (ll + extra, n_tok)

    def _shared_prefix_agrees(self) -> bool:
        """Whether this model's cache can be continued as `_run_shared` does (checked against whole sentences)."""
        try:
            import torch

            with torch.inference_mode():
                shared = self._run_shared([list(CHECK_TEXTS)])
            full = self._run_full(list(CHECK_TEXTS))
        except (TypeError, ValueError, AttributeError, RuntimeError, IndexError):
            return False
        finally:
            self.forward_calls = self.tokens_run = 0
        tol = 1e-3 if self.dtype in ("float32", "fp32") else 0.5
        return all(abs(shared[t][0] - full[t][0]) <= tol and shared[t][1] == full[t][1] for t in CHECK_TEXTS)

    # --- cache -----------------------------------------------------------------------------------
    def _cached(self, texts: Sequence[str], kind: str, run) -> list[tuple[float, int]]:
        unique = list(dict.fromkeys(texts))
        keys = [ResultCache.key(kind, self.fingerprint, self.dtype, self.device.type, t) for t in unique]
        key_of = dict(zip(unique, keys))
        found = self.cache.get_many(keys, 1) if self.cache is not None else {}
        out: dict[str, tuple[float, int]] = {t: (float(found[k][1][0]), found[k][2])
                                              for t, k in zip(unique, keys) if k in found}
        todo = [t for t in unique if t not in out]
        if todo:
            # float32, as the cache stores them: a cached result equals the fresh one
            new = {t: (float(np.float32(ll)), n) for t, (ll, n) in run(todo).items()}
            out.update(new)
            if self.cache is not None:
                self.cache.put_many([(key_of[t], np.array([0]), np.array([new[t][0]]), new[t][1]) for t in todo])
        return [out[t] for t in texts]


def _shared_length(ids: Sequence[Sequence[int]]) -> int:
    """Length of the token prefix all rows share, leaving every row at least one token after it
    (0 when their first tokens differ; a single row shares all but its last token with itself)."""
    shortest = min(len(row) for row in ids)
    first = ids[0]
    n = 0
    while n < shortest - 1 and all(row[n] == first[n] for row in ids):
        n += 1
    return n if n or len(ids) > 1 else shortest - 1


def read_extended_templates(path: str | Path) -> dict[tuple[str, str], str]:
    """(relation, slot) -> template with the asked entity at the very end, from the coherency paper's file.

    Rows: {"relation", "template_obj" ending in [Y], "template_sub" ending in [X]}.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"extended templates file {path} does not exist (the coherency paper's "
                        "relations_autregressive.jsonl; pass --set prompt_file=PATH)")
    out: dict[tuple[str, str], str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rel, obj, sub = row["relation"], row["template_obj"], row["template_sub"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}:{n}: expected a JSON object with relation, template_obj and template_sub "
                            f"({exc})") from None
        for slot, template, end in (("object", obj, OBJECT_SLOT), ("subject", sub, SUBJECT_SLOT)):
            other = SUBJECT_SLOT if end == OBJECT_SLOT else OBJECT_SLOT
            if not template.rstrip().endswith(end) or other not in template:
                raise DataError(f"{path}:{n}: {rel} template {template!r} must hold {other} and end with {end}")
            out[(rel, slot)] = template.rstrip()
    if not out:
        raise DataError(f"extended templates file {path} is empty")
    return out


class CausalTypedPredictor:
    """Ranks each relation's candidate entities by the log-likelihood of the filled template."""

    ranks = "exact"  # every candidate is scored: Prediction.target_ranks holds exact ranks
    slots = ("object", "subject")
    chunk_size = 8  # queries per call: each scores every candidate sentence, so work is kept often

    def __init__(self, name: str, scorer: CausalLMScorer, candidates: dict[str, list[str]],
                 source: str, describe_extra: dict | None = None,
                 subject_candidates: dict[str, list[str]] | None = None,
                 templates: Mapping[tuple[str, str], str] | None = None) -> None:
        self.name = name
        self.scorer = scorer
        self.candidates = {rel: list(dict.fromkeys(c)) for rel, c in candidates.items()}
        subjects = subject_candidates if subject_candidates is not None else candidates
        self.by_slot = {"object": self.candidates,
                        "subject": {rel: list(dict.fromkeys(c)) for rel, c in subjects.items()}}
        self._sets = {slot: {rel: set(c) for rel, c in table.items()} for slot, table in self.by_slot.items()}
        self.source = source
        self.templates = dict(templates or {})  # (relation, slot) -> template replacing the query's own
        self._extra = describe_extra or {}

    def describe(self) -> dict:
        out = {
            "kind": "causal-lm-typed",
            "model": self.name,
            "fingerprint": self.scorer.fingerprint,
            "dtype": self.scorer.dtype,
            "device": str(self.scorer.device),
            "path": self.scorer.path,
            "candidates": self.source,
            "candidates_per_relation": {rel: len(c) for rel, c in sorted(self.candidates.items())},
            "ranks": self.ranks,
            "ties": "candidate order",
            "slots": list(self.slots),
            **self._extra,
        }
        if self.templates:
            out["templates"] = {f"{rel}:{slot}": t for (rel, slot), t in sorted(self.templates.items())}
        return out

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self.by_slot[slot].get(relation, ()))

    def cost(self, queries: Sequence[Query]) -> str:
        """Said before starting: typed querying scores one sentence per candidate and query."""
        n = sum(len(self.by_slot[q.slot].get(q.relation, ())) for q in queries)
        return (f"typed querying will score {n:,} sentences ({len(queries):,} queries x their relation's candidates; "
                f"{self.scorer.path})")

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        reason = NOT_IN_SET if slot == "object" else SUBJECT_NOT_IN_SET
        kept, dropped = [], {}
        for fact in facts:
            asked = fact.object if slot == "object" else fact.subject
            if asked.label in self._sets[slot].get(fact.relation, ()):
                kept.append(fact)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def sentence(self, query: Query, candidate: str) -> str:
        template = self.templates.get((query.relation, query.slot))
        filled = dataclasses.replace(query, template=template) if template else query
        text = filled.text(candidate)
        return f"{query.context} {text}" if query.context else text

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        groups = []
        for q in queries:
            groups.append([self.sentence(q, c) for c in self.by_slot[q.slot].get(q.relation, [])])
        scored = self.scorer.loglik_groups(groups)
        out = []
        for q, scores in zip(queries, scored):
            cands = self.by_slot[q.slot].get(q.relation, [])
            ll = np.array([s for s, _ in scores], dtype=np.float64)
            order = np.argsort(-ll, kind="stable")  # ties: candidate order
            rank = np.empty(len(cands), dtype=np.int64)
            rank[order] = np.arange(1, len(cands) + 1)
            where = {c: i for i, c in enumerate(cands)}
            targets = {t: int(rank[where[t]]) for t in q.targets if t in where}
            answers = tuple(Answer(cands[i], float(ll[i])) for i in order[:depth])
            out.append(Prediction(q.uid, answers, False, {"n_candidates": len(cands)}, targets))
        return out
