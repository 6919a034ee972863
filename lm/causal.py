"""Causal-LM typed querying (coherency paper §3.2, after Kassner et al. 2021).

A causal LM cannot fill a blank, so each candidate entity is put into the slot and the filled
sentence is scored by its log-likelihood, sum over tokens of log p(token | BOS, earlier tokens).
Candidates may span several tokens; the most likely sentence gives the answer. Both slots can be
asked: object queries rank the relation's objects, subject queries its subjects.

Shared prefix: the sentences of one query differ only from the slot on. The prefix is found on
token ids: each sentence is tokenized whole (BPE merges across the slot boundary stay as the model
sees them) and the prefix is the longest run of ids all of the query's sentences share. What follows
it (the candidate and any text after the slot) forms a token tree: candidates sharing leading tokens
share those nodes. The prefix and the tree's nodes that have children run as one sequence, with a
4-D attention mask under which a node sees the prefix and its own ancestors only and a position id
equal to its place in the whole sentence, so each node's hidden state is the one it has in its own
sentence; logits are computed only where a next token is read. Several queries' prefixes and trees
are packed into the rows of one pass (a tree too long for a row is split, the later part repeating
the prefix and the ancestors it needs). A sentence's log-likelihood is the prefix's own, plus its
first token after the prefix read from the prefix's last position, plus one read per tree edge on
its path. This equals scoring each sentence whole (float32: within 1e-4, `tests/test_causal_prefix.py`)
while running the model over a fraction of the tokens. Models that do not honour such masks and
position ids fall back to whole sentences (checked against them when the scorer is built). The sentences of
a call are tokenized at once, each pass reads its log-probabilities on the device by index arrays, and all
passes are queued before their values come back in one transfer (a GPU does not wait on the host between them).

`prompt=extended` (the paper's templates for autoregressive models, "extended so that the
entity appears at the very end"): object queries use `template_obj` ("[X] was born in [Y]"),
subject queries `template_sub` ("[Y] is the birth place of [X]"); then a one-token candidate is a
leaf of the tree and is read from the prefix's last position alone.

A template closing with an end-of-sequence marker written as text (`[Y]. </s`, every template of the GPT-2
AutoPrompt sets) is scored without it (`eval.prompts.spoken_template`), the record naming the template scored.

Every candidate is scored, so `Query.targets` get exact ranks (`Prediction.target_ranks`). Ties
follow `eval.metrics`: equal log-likelihoods are ordered by candidate order (the relation's
entities in corpus order, or the vocabulary file order), in the answer list and in exact ranks alike.
Results go to the result cache per sentence, under a key that names the scoring path.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from eval.errors import DataError
from eval.prompts import spoken_template
from eval.relations import check_template
from eval.set_rules import LOG_NORM, log_norm
from eval.types import (
    ASKED_TEMPLATE,
    CHOICE_SCORES,
    CHOICE_SCORING,
    OBJECT_SLOT,
    SUBJECT_SLOT,
    Answer,
    Fact,
    Prediction,
    Query,
)
from lm.batches import pad_rows, to_device
from lm.cache import ResultCache
from lm.finite import NonFiniteScores
from lm.heap import keep_batch_memory
from lm.precision import agreement_tolerance
from lm.token_ids import token_ids

NOT_IN_SET = "object is not in the candidate set"
SUBJECT_NOT_IN_SET = "subject is not in the candidate set"
ROW_TOKENS = 256  # tokens per packed row: attention within a row costs its length squared
FORWARD_TOKENS = 1024  # tokens per pass: bounds the [tokens, vocab] logits, amortises reading the weights
GPU_FORWARD_TOKENS = 32768  # on a GPU: enough rows per pass to fill the card (the logits stay on it)
SENTENCE_TOKENS = 32  # a LAMA sentence's tokens, about: what a pass of whole sentences holds per row
CHECK_TEXTS = ("Paris is the capital of France .", "Paris is the capital of Ulaanbaatar Province .",
               "Paris is the capital of")


class CausalLMScorer:
    def __init__(self, model, tokenizer, *, fingerprint: str, dtype: str = "float32", batch_size: int = 32,
                 cache: ResultCache | None = None, shared_prefix: bool = True, name: str | None = None) -> None:
        self.name = name or getattr(model, "name_or_path", None) or fingerprint  # errors name the model's path
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
        self.forward_tokens = FORWARD_TOKENS if self.device.type == "cpu" else GPU_FORWARD_TOKENS
        if self.device.type == "cpu":  # a pass's [tokens, vocabulary] float32 logits and log-probs reuse memory
            vocab = getattr(getattr(model, "config", None), "vocab_size", None) or len(tokenizer)
            keep_batch_memory(max(self.forward_tokens, self.batch_size * SENTENCE_TOKENS) * vocab * 4, 4)
        self.check_gap: float | None = None  # largest shared-prefix vs whole-sentence difference in the check
        self.shared_prefix = shared_prefix and self._shared_prefix_agrees()

    @property
    def path(self) -> str:
        return "shared-prefix" if self.shared_prefix else "full-sentence"

    @property
    def max_positions(self) -> int | None:
        """Positions the model has (GPT-2: 1,024): a longer input has no position embedding; None: no limit named."""
        from lm.loading import max_positions

        return max_positions(self.model)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with BOS first, so the first word is scored too (GPT-2's <|endoftext|>)."""
        head = [self.bos_id] if self.bos_id is not None else []
        return [head + row for row in token_ids(self.tokenizer, texts)]

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
                array, keep = pad_rows([ids[i] for i in batch], self.pad_id)
                keep = np.ones(array.shape, dtype=bool) if keep is None else keep
                input_ids = torch.from_numpy(array).to(self.device)
                attention = torch.from_numpy(keep.astype(np.int64)).to(self.device)
                self.forward_calls += 1
                self.tokens_run += int(keep.sum())
                logits = self.model(input_ids=input_ids, attention_mask=attention).logits.float()
                logp = torch.log_softmax(logits[:, :-1], dim=-1)
                tok = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1) * attention[:, 1:]
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
        """Each group's prefix and candidate token tree, packed into rows of one attention-masked pass."""
        out: dict[str, tuple[float, int]] = {}
        jobs: list[tuple[list[str], list[list[int]]]] = []
        encoded = iter(self.encode([t for g in groups for t in g]))  # one tokenizer call for every group
        for group in groups:
            rows = [(t, next(encoded)) for t in group]
            out.update({t: (0.0, 0) for t, ids in rows if len(ids) <= 1})  # BOS alone: nothing to predict
            rows = [(t, ids) for t, ids in rows if len(ids) > 1]
            if rows and _shared_length([ids for _, ids in rows]) == 0:
                parts = [[row] for row in rows]  # no BOS and different first tokens: nothing is shared
            else:
                parts = [rows] if rows else []
            jobs.extend(([t for t, _ in part], [ids for _, ids in part]) for part in parts)
        trees = [_Tree(ids) for _, ids in jobs]
        segments = [seg for q, tree in enumerate(trees) for seg in tree.segments(q)]
        packed: list[list[_Segment]] = []
        for seg in segments:  # several short segments share a row: little padding
            if packed and sum(len(s.ids) for s in packed[-1]) + len(seg.ids) <= ROW_TOKENS:
                packed[-1].append(seg)
            else:
                packed.append([seg])
        import torch

        passes: list[list[list[_Segment]]] = []
        batch: list[list[_Segment]] = []
        widest = 0
        for row in packed:
            width = max(widest, sum(len(s.ids) for s in row))
            if batch and (len(batch) >= self.batch_size or (len(batch) + 1) * width > self.forward_tokens):
                passes.append(batch)
                batch, width = [], sum(len(s.ids) for s in row)
            batch.append(row)
            widest = width
        if batch:
            passes.append(batch)
        with torch.inference_mode():  # every pass is queued before any value is read back: no wait between them
            picked = [self._forward(rows) for rows in passes]
            values = torch.cat(picked).cpu().numpy().astype(np.float64) if picked else np.zeros(0)
        at = 0
        for segment in (s for rows in passes for row in rows for s in row):
            n = len(segment.edges)
            trees[segment.query].store(segment.edges, values[at:at + n])
            at += n
        for (texts, ids), tree in zip(jobs, trees):
            for text, ll, row in zip(texts, tree.logliks(), ids):
                out[text] = (ll, len(row) - 1)
        return out

    def _forward(self, rows: list[list[_Segment]]):
        """One pass over packed segments, each token seeing its own prefix and tree ancestors only: the log p of
        every read, segment by segment in `rows` order, left on the device."""
        import torch

        width = max(sum(len(s.ids) for s in row) for row in rows)
        n = len(rows)
        input_ids = np.full((n, width), self.pad_id, dtype=np.int64)
        positions = np.zeros((n, width), dtype=np.int64)
        allowed = np.zeros((n, width, width), dtype=bool)
        keep = np.zeros((n, width), dtype=bool)
        read_at, read_token = [], []  # flat position (row * width + column) and token of each read
        for r, row in enumerate(rows):
            at = 0
            for seg in row:
                k = len(seg.ids)
                input_ids[r, at:at + k] = seg.ids
                positions[r, at:at + k] = seg.positions
                allowed[r, at:at + k, at:at + k] = seg.mask()
                read_at.append(np.asarray(seg.read_at, dtype=np.int64) + (r * width + at))
                read_token.append(np.asarray(seg.read_token, dtype=np.int64))
                at += k
            allowed[r, np.arange(at, width), np.arange(at, width)] = True  # padding sees itself: no empty softmax
        where = np.concatenate(read_at)
        keep.reshape(-1)[where] = True
        kept = (np.cumsum(keep.reshape(-1)) - 1)[where]  # each read's place among the kept positions
        dev = self.device
        dtype = next(self.model.parameters()).dtype
        mask = torch.zeros((n, 1, width, width), dtype=dtype, device=dev)
        mask.masked_fill_(~to_device(allowed, dev).unsqueeze(1), torch.finfo(dtype).min)
        keep_t = to_device(keep, dev)
        self.forward_calls += 1
        self.tokens_run += sum(len(s.ids) for row in rows for s in row)
        logits = self.model(input_ids=to_device(input_ids, dev), attention_mask=mask,
                            position_ids=to_device(positions, dev), logits_to_keep=keep_t, use_cache=False).logits
        if logits.dim() == 3:  # the model ignored logits_to_keep
            logits = logits[keep_t]
        logits = logits.float()
        rows_at, targets = to_device(kept, dev), to_device(np.concatenate(read_token), dev)
        return logits[rows_at, targets] - torch.logsumexp(logits, dim=-1)[rows_at]

    def _shared_prefix_agrees(self) -> bool:
        """Whether this model honours the tree masks and position ids of `_run_shared` (checked against whole
        sentences)."""
        try:
            import torch

            with torch.inference_mode():
                shared = self._run_shared([list(CHECK_TEXTS)])
            full = self._run_full(list(CHECK_TEXTS))
        except (TypeError, ValueError, AttributeError, RuntimeError, IndexError):
            return False
        finally:
            self.forward_calls = self.tokens_run = 0
        if not all(np.isfinite(full[t][0]) for t in CHECK_TEXTS):
            raise NonFiniteScores(self.name, list(CHECK_TEXTS), len(CHECK_TEXTS), check=True)
        reference = torch.tensor([full[t][0] for t in CHECK_TEXTS])
        tol = agreement_tolerance(next(self.model.parameters()).dtype, reference)
        self.check_gap = max(abs(shared[t][0] - full[t][0]) for t in CHECK_TEXTS)
        return self.check_gap <= tol and all(shared[t][1] == full[t][1] for t in CHECK_TEXTS)

    # --- cache -----------------------------------------------------------------------------------
    def _cached(self, texts: Sequence[str], kind: str, run) -> list[tuple[float, int]]:
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            keys, found = [""] * len(unique), {}
        else:
            keys = [ResultCache.key(kind, self.fingerprint, self.dtype, self.device.type, t) for t in unique]
            found = self.cache.get_many(keys, 1)
        key_of = dict(zip(unique, keys))
        found = {k: hit for k, hit in found.items() if np.isfinite(hit[1][0])}  # never serve a NaN
        out: dict[str, tuple[float, int]] = {t: (float(found[k][1][0]), found[k][2])
                                              for t, k in zip(unique, keys) if k in found}
        todo = [t for t in unique if t not in out]
        if todo:
            # float32, as the cache stores them: a cached result equals the fresh one
            new = {t: (float(np.float32(ll)), n) for t, (ll, n) in run(todo).items()}
            bad = [t for t in todo if not np.isfinite(new[t][0])]
            if bad:
                raise NonFiniteScores(self.name, bad, len(todo))
            out.update(new)
            if self.cache is not None:
                self.cache.put_many([(key_of[t], np.array([0]), np.array([new[t][0]]), new[t][1]) for t in todo])
        return [out[t] for t in texts]


def _shared_length(ids: Sequence[Sequence[int]]) -> int:
    """Length of the token prefix all rows share, leaving every row at least one token after it
    (0 when their first tokens differ; a single row shares all but its last token with itself)."""
    shortest = min(len(row) for row in ids)
    # the prefix all rows share is the one the lexicographically first and last share
    n = min(len(os.path.commonprefix(list(ids))), shortest - 1)
    return n if n or len(ids) > 1 else shortest - 1


class _Segment:
    """A query's prefix and some of its tree nodes, as one stretch of a packed row."""

    __slots__ = ("query", "prefix", "ids", "positions", "parents", "read_at", "read_token", "edges")

    def __init__(self, query: int, prefix: list[int]) -> None:
        self.query = query
        self.prefix = len(prefix)
        self.ids = list(prefix)
        self.positions = list(range(len(prefix)))
        self.parents = list(range(-1, len(prefix) - 1))
        self.read_at: list[int] = []  # per read: the local position it is read at
        self.read_token: list[int] = []  # per read: the token whose log-probability is read there
        self.edges: list[int] = []  # per read: the tree edge it is stored under (-1: the prefix's own)

    def add(self, node: tuple[int, ...], parent: int, edges: Mapping[int, int] | None = None) -> int:
        """Add a tree node (reading the tokens after it: token -> edge); its local position."""
        self.ids.append(node[-1])
        self.positions.append(self.prefix + len(node) - 1)  # where the token sits in the whole sentence
        self.parents.append(parent)
        at = len(self.ids) - 1
        if edges:
            self.read_at.extend([at] * len(edges))
            self.read_token.extend(edges)
            self.edges.extend(edges.values())
        return at

    def mask(self) -> np.ndarray:
        """Causal over the prefix; a tree node sees the prefix, its ancestors and itself (its own sentence)."""
        n, p = len(self.ids), self.prefix
        out = np.zeros((n, n), dtype=bool)
        out[:p, :p] = np.tril(np.ones((p, p), dtype=bool))
        for i in range(p, n):
            out[i] = out[self.parents[i]]
            out[i, i] = True
        return out


class _Tree:
    """One query's sentences: their shared token prefix, then a trie of what follows it (candidate and any text
    after the slot). Candidates sharing leading tokens share those nodes; only nodes with children are run."""

    def __init__(self, ids: Sequence[Sequence[int]]) -> None:
        self.p = _shared_length(ids)
        self.prefix = list(ids[0][:self.p])
        self.children: dict[tuple[int, ...], dict[int, int]] = {}  # node -> {next token: edge number}
        self.paths: list[list[int]] = []  # per row: the edges from the prefix to its end
        n = 0
        for row in ids:
            cont = tuple(row[self.p:])
            path = []
            for d in range(len(cont)):
                edge = self.children.setdefault(cont[:d], {}).setdefault(cont[d], n)
                n += edge == n
                path.append(edge)
            self.paths.append(path)
        self.head = 0.0  # the prefix's own log-likelihood
        self.values = np.full(n, np.nan)  # edge -> log p(its token | prefix, node above it); NaN until read

    def segments(self, query: int) -> list[_Segment]:
        """The prefix with all nodes, split where a row would grow past ROW_TOKENS (a later segment repeats
        the prefix and the ancestors it needs, reading nothing from them)."""
        p = self.p
        cap = max(ROW_TOKENS - p, p)
        seg = _Segment(query, self.prefix)
        seg.read_at, seg.read_token, seg.edges = list(range(p - 1)), self.prefix[1:p], [-1] * (p - 1)
        first = self.children[()]
        seg.read_at += [p - 1] * len(first)
        seg.read_token += list(first)
        seg.edges += list(first.values())
        out, local = [seg], {}
        for node in sorted(n for n in self.children if n):  # preorder: parents first
            # a parent already in this segment brings its ancestors; after a split, they come again
            missing = [] if len(node) == 1 or node[:-1] in local else \
                [node[:d] for d in range(1, len(node)) if node[:d] not in local]
            if len(seg.ids) - p + len(missing) + 1 > cap and len(seg.ids) > p:
                seg, local = _Segment(query, self.prefix), {}
                out.append(seg)
                missing = [node[:d] for d in range(1, len(node))]
            for anc in missing:
                local[anc] = seg.add(anc, local.get(anc[:-1], p - 1))
            local[node] = seg.add(node, local.get(node[:-1], p - 1), self.children[node])
        return out

    def store(self, edges: Sequence[int], values: np.ndarray) -> None:
        """A segment's reads: the prefix's own (edge -1) add up in order, the others are kept by edge."""
        edges = np.asarray(edges, dtype=np.int64)
        own = edges < 0
        for value in values[own].tolist():
            self.head += value
        self.values[edges[~own]] = values[~own]

    def logliks(self) -> list[float]:
        """Each row's log-likelihood: the prefix's, then its edges' in order."""
        values = self.values.tolist()
        return [self.head + sum(values[e] for e in path) for path in self.paths]


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
            if not isinstance(template, str) or not template.rstrip().endswith(end) or other not in template:
                raise DataError(f"{path}:{n}: {rel} template {template!r} must hold {other} and end with {end}")
            check_template(template, f"{path}:{n}")
            out[(rel, slot)] = template.rstrip()
    if not out:
        raise DataError(f"extended templates file {path} is empty")
    return out


def _check_tokens(name: str, tokenizer, by_slot: Mapping[str, Mapping[str, Sequence[str]]]) -> None:
    """Every candidate must give tokens: one that gives none would score as the bare template, the same for all
    such candidates (a broken tokenizer gives every candidate 0.0, ranked in candidate order)."""
    words = list(dict.fromkeys(c for table in by_slot.values() for cands in table.values() for c in cands))
    if not words:
        return
    ids = tokenizer([" " + w for w in words], add_special_tokens=False, return_attention_mask=False)["input_ids"]
    empty = [w for w, row in zip(words, ids) if not row]
    if empty:
        raise DataError(f"{name}: the tokenizer gives candidate {empty[0]!r} no tokens ({len(empty):,} of "
                        f"{len(words):,} candidates); is the model's tokenizer complete?")


class CausalTypedPredictor:
    """Ranks each relation's candidate entities by the log-likelihood of the filled template."""

    ranks = "exact"  # every candidate is scored: Prediction.target_ranks holds exact ranks
    slots = ("object", "subject")
    score_scale = "log-prob"  # of the filled template
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
        tokenizer = getattr(scorer, "tokenizer", None)
        if tokenizer is not None:
            _check_tokens(name, tokenizer, self.by_slot)
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

    work_unit = "sentence"  # what the run's progress bar counts: a query's cost is its candidates' sentences

    def work(self, query: Query) -> int:
        """The sentences typed querying scores for `query`: one per candidate (its relation's, or its choices)."""
        return len(self._candidates(query))

    def cost(self, queries: Sequence[Query]) -> str:
        """Said before starting: typed querying scores one sentence per candidate and query. A relation's candidates
        are all its entities in the corpus (or the vocabulary file's words), however few of its facts a run asks."""
        sizes = [len(self._candidates(q)) for q in queries] or [0]
        low, high = min(sizes), max(sizes)
        each = f"{low:,}" if low == high else f"{low:,} to {high:,}"
        closed = sum(bool(getattr(q, "choices", ())) for q in queries)
        if closed == len(queries):
            what = f"{each} choices of their own each"
        elif closed:
            what = f"{each} candidates or choices each"
        else:
            whole = ("the words of the file" if self.source.startswith("file:")
                     else "every entity of the relation in the corpus")
            what = f"{each} candidates each: {whole}, which --limit does not shrink"
        return (f"typed querying will score {sum(sizes):,} sentences ({len(queries):,} queries x {what}; "
                f"{self.scorer.path})")

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        reason = NOT_IN_SET if slot == "object" else SUBJECT_NOT_IN_SET
        kept, dropped = [], {}
        for fact in facts:
            asked = fact.object if slot == "object" else fact.subject
            if getattr(fact, "choices", ()) or asked.label in self._sets[slot].get(fact.relation, ()):
                kept.append(fact)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def _candidates(self, query: Query) -> list[str]:
        """A closed question's own choices (any text is a sentence to score), else the relation's candidates."""
        choices = getattr(query, "choices", ())
        return list(dict.fromkeys(choices)) if choices else self.by_slot[query.slot].get(query.relation, [])

    def _template(self, query: Query) -> str | None:
        """The template asked in place of the query's own (the extended one, or the query's without a closing
        end-of-sequence marker written as text: `eval.prompts.spoken_template`); None where the query's own is asked."""
        # a closed question keeps its own wording; only relation prompts are swapped for the extended templates
        if getattr(query, "choices", ()):
            return None
        extended = self.templates.get((query.relation, query.slot))
        template = spoken_template(extended or query.template)
        return template if extended or template != query.template else None

    def sentence(self, query: Query, candidate: str) -> str:
        template = self._template(query)
        filled = dataclasses.replace(query, template=template) if template else query
        text = filled.text(candidate)
        return f"{query.context} {text}" if query.context else text

    def sentences(self, query: Query) -> list[str]:
        """The query's sentence for each candidate; a context is cut from its end so that every sentence fits the
        model's positions (as masked LMs cut theirs), and a prompt that cannot fit on its own is refused."""
        cands = self._candidates(query)
        out = [self.sentence(query, c) for c in cands]
        limit = getattr(self.scorer, "max_positions", None)
        if not limit or not out or max(len(s.encode("utf-8")) for s in out) + 3 <= limit:
            return out  # a token covers at least one byte: these fit without tokenizing twice
        if max(len(row) for row in self.scorer.encode(out)) <= limit:
            return out
        bare = dataclasses.replace(query, context=None)
        prompts = [self.sentence(bare, c) for c in cands]
        lengths = [len(row) for row in self.scorer.encode(prompts)]
        longest = max(lengths)
        if longest > limit:
            at = lengths.index(longest)
            template = self.templates.get((query.relation, query.slot)) or query.template
            shown = repr(template) if len(template) <= 80 else f"{template[:60]!r}... ({len(template):,} characters)"
            raise DataError(f"{self.name}: template {shown} of {query.relation} cannot fit the model's {limit:,} "
                            f"positions: with {query.known.label[:80]!r} and candidate {cands[at][:80]!r} it is "
                            f"{longest:,} tokens; shorten the template")
        tokenizer = self.scorer.tokenizer
        ids = tokenizer(query.context or "", add_special_tokens=False)["input_ids"]
        keep = min(len(ids), limit - longest - 1)
        while keep > 0:
            cut = tokenizer.decode(ids[:keep]).strip()
            trial = [f"{cut} {p}" for p in prompts]
            over = max(len(row) for row in self.scorer.encode(trial)) - limit
            if over <= 0:
                return trial
            keep -= over
        return prompts

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        groups = []
        for q in queries:
            groups.append(self.sentences(q))
        try:
            scored = self.scorer.loglik_groups(groups)
        except NonFiniteScores as exc:
            asked = next((q for q, g in zip(queries, groups) if exc.bad[0] in g), None)
            raise (exc if asked is None else exc.for_fact(f"{asked.fact_uid} ({asked.relation})")) from None
        out = []
        for q, scores in zip(queries, scored):
            cands = self._candidates(q)
            ll = np.array([s for s, _ in scores], dtype=np.float64)
            order = np.argsort(-ll, kind="stable")  # ties: candidate order
            rank = np.empty(len(cands), dtype=np.int64)
            rank[order] = np.arange(1, len(cands) + 1)
            where = {c: i for i, c in enumerate(cands)}
            targets = {t: int(rank[where[t]]) for t in q.targets if t in where}
            answers = tuple(Answer(cands[i], float(ll[i])) for i in order[:depth])
            # a sentence log-likelihood is no distribution over the candidates: set rules read their softmax
            extra = {"n_candidates": len(cands), LOG_NORM: log_norm(ll)}
            template = self._template(q)
            if template:  # the record's prompt is the sentence scored, not the query's own template
                extra[ASKED_TEMPLATE] = template
            if getattr(q, "choices", ()):  # a closed question: each choice's score, which its rank orders
                extra[CHOICE_SCORES] = {c: float(ll[where[c]]) for c in q.choices if c in where}
                extra[CHOICE_SCORING] = "log-likelihood of the sentence with the choice at the answer slot"
            out.append(Prediction(q.uid, answers, False, extra, targets))
        return out
