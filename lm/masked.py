"""Masked-LM probing (LAMA §4.2): the log-probability of each candidate token at the mask.

Exactness: the prompt is the relation template with the subject at [X] and the model's own mask
token at [Y], tokenized by the model's tokenizer exactly as `pipeline("fill-mask")` does, and
scores are log-softmax over the *whole* output vocabulary, then restricted to the candidates
(LAMA's `log_probs[:, vocab_subset]`). `normalize="candidates"` renormalizes over the candidate
rows instead (same ranking, head restricted to those rows).

Exact ranks: `Query.targets` (gold first, then the other valid objects) get their exact rank among
all candidates, whatever the answer depth (`Prediction.target_ranks`). Ties follow
`eval.metrics`: equal scores are ordered by candidate position (the vocabulary file order), in the
answer list and in exact ranks alike, so a target's exact rank is its position in the list.

Context (coherency §3.4): a query with a context is read as a sentence pair, `context [SEP] prompt`
with the model's own special tokens (BERT `[CLS] c [SEP] p [SEP]`, RoBERTa `<s> c </s></s> p </s>`;
segment ids left at 0), the context cut from its end to fit the maximum length: the prompt is never cut.

`compat="lama"` tokenizes as LAMA's BERT connector (`CustomBaseTokenizer`): the prompt is split on
whitespace; a whitespace token holding `[MASK]` becomes `[MASK]` followed by the rest of that token
as one word (characters before the mask too; no punctuation split, no lower-casing), and every other
token goes through BERT's basic tokenizer; all words are then cut into WordPieces. Google-RE's
`[X] (born [MASK]).` thus ends in `[MASK] ) ##.` where BERT's own tokenizer gives `[MASK] ) .`.
The template and the subject label are `strip()`ped as LAMA's `parse_template` does. WordPiece
models only (LAMA's BERT connector).

Cache: an entry is keyed by model, dtype, scoring mode, compat mode, candidate set, prompt and the
candidate positions of the targets; it holds the targets' exact ranks and log-probs followed by the
top candidates, all from one forward pass, so a cached result equals the fresh one it stores.

Speed: identical prompts run once; prompts are grouped by exact token length so batches carry no
padding (and need no attention mask); the encoder runs under `torch.inference_mode`; the last
transformer layer runs only at mask positions (its keys and values still see every token), and so
does the MLM head, in float32 even when the encoder runs in bfloat16. On the host a chunk's results stay arrays
(`ScoredColumns`, one row per distinct prompt and targets) until each prediction is put together, so that a GPU
waits as little as possible on Python; a prediction's answers stay a list of labels and one of scores
(`RankedAnswers`), the scores a record saves rounded for all queries at once (`rounded_scores`).
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from eval.compat import check_compat, lama_prompt
from eval.errors import KbcError
from eval.types import (
    CHOICE_SCORES,
    CHOICE_SCORING,
    QUERIES_PER_CALL,
    SCORE_DIGITS,
    TOP_SAVED,
    Fact,
    Prediction,
    Query,
    RankedAnswers,
    ranked_prediction,
)
from lm.batches import ToHost, encoder_mask, length_batches, pad_rows, to_device
from lm.cache import ResultCache
from lm.finite import NonFiniteScores, text_of
from lm.heap import keep_batch_memory
from lm.precision import agreement_tolerance
from lm.token_ids import WordIds, token_ids
from lm.vocab import AnswerSpace, CandidateSet, drop_reason, full_vocab, normalize, target_positions

# Architectures whose head we split into encoder -> transform -> decoder (the fast path).
HEAD_TRANSFORMS: dict[str, Callable] = {
    "bert": lambda m: m.cls.predictions.transform,
    "roberta": lambda m: _seq(m.lm_head.dense, _gelu(), m.lm_head.layer_norm),
    "xlm-roberta": lambda m: _seq(m.lm_head.dense, _gelu(), m.lm_head.layer_norm),
    "camembert": lambda m: _seq(m.lm_head.dense, _gelu(), m.lm_head.layer_norm),
    "distilbert": lambda m: _seq(m.vocab_transform, m.activation, m.vocab_layer_norm),
    "albert": lambda m: _seq(m.predictions.dense, m.predictions.activation, m.predictions.LayerNorm),
    "electra": lambda m: m.generator_predictions,
}
Text = str | tuple[str, str]  # a prompt, or (context, prompt): read as `context [SEP] prompt`
MIN_BUCKET_FRACTION = 4  # length groups smaller than batch_size / this are merged (with padding)
CACHE_VERSION = "masked-v3"  # v2: deterministic ties, exact target ranks, compat mode in the key; v3: max_length
NOT_SINGLE_TOKEN_CHOICE = "a choice is not a single token of the model"
log = logging.getLogger("kbc")
_PATHS_SAID: set[tuple[str, str, str, str]] = set()  # each model's scoring path is said once per process


def _seq(*mods):
    import torch

    return torch.nn.Sequential(*mods)


def _gelu():
    from transformers.activations import ACT2FN

    return ACT2FN["gelu"]  # the exact (erf) GELU that RoBERTa's head applies


def _split_last_layer(base):
    """(the encoder without its last layer, that layer) for BERT-style encoders, else (None, None).

    The copy shares every weight with `base`; only its layer list is shorter.
    """
    import torch

    encoder = getattr(base, "encoder", None)
    layers = getattr(encoder, "layer", None)
    config = getattr(base, "config", None)
    if not isinstance(layers, torch.nn.ModuleList) or len(layers) < 2:
        return None, None
    if getattr(config, "position_embedding_type", "absolute") != "absolute" or getattr(config, "is_decoder", False):
        return None, None
    last = layers[-1]
    needed = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output",
              "intermediate", "output")
    try:
        for path in needed:
            last.get_submodule(path)
    except AttributeError:
        return None, None
    trunk = copy.copy(base)
    trunk._modules = dict(base._modules)
    short = copy.copy(encoder)
    short._modules = dict(encoder._modules)
    short._modules["layer"] = torch.nn.ModuleList(list(layers)[:-1])
    trunk._modules["encoder"] = short
    return trunk, last


def _plus_bias(logits, bias):
    """`logits + bias`, added in place where that gives the same tensor (the same dtype): no second [B, V] tensor,
    which on a CPU is fresh memory whose pages the kernel faults in, batch after batch."""
    return logits.add_(bias) if bias.dtype == logits.dtype else logits + bias


def _last_layer_at(layer, hidden, mask_pos, attention_mask):
    """The last layer's output at the mask positions only ([B, H]); keys/values cover all tokens."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    att = layer.attention.self
    batch, length, _ = hidden.shape
    heads, size = att.num_attention_heads, att.attention_head_size
    at_mask = hidden[torch.arange(batch, device=hidden.device), mask_pos]
    q = att.query(at_mask).view(batch, heads, 1, size)
    k = att.key(hidden).view(batch, length, heads, size).transpose(1, 2)
    v = att.value(hidden).view(batch, length, heads, size).transpose(1, 2)
    keep = None if attention_mask is None else attention_mask[:, None, None, :].bool()
    context = scaled_dot_product_attention(q, k, v, attn_mask=keep).reshape(batch, heads * size)
    attended = layer.attention.output(context, at_mask)
    return layer.output(layer.intermediate(attended), attended)


@dataclass
class Scored:
    """Top candidates of one prompt (positions into the candidate set, log-probs), prompt length,
    and the exact rank and log-prob of each target candidate position."""

    pos: np.ndarray
    logp: np.ndarray
    n_tokens: int
    ranks: dict[int, int] = field(default_factory=dict)
    target_logp: dict[int, float] = field(default_factory=dict)


@dataclass
class ScoredColumns:
    """`Scored` of many inputs as arrays, one row per distinct (input, targets) unit: input i is row `unit[i]`.
    Unit u's target positions (sorted) are `targets[starts[u]:starts[u + 1]]`, their exact ranks and log-probs
    at the same places of `ranks` and `target_logp`."""

    unit: np.ndarray  # [inputs] int64
    pos: np.ndarray  # [units, depth] int32: top candidates, best first
    logp: np.ndarray  # [units, depth] float32
    n_tokens: np.ndarray  # [units] int64
    targets: np.ndarray  # [pairs] int64
    starts: np.ndarray  # [units + 1] int64
    ranks: np.ndarray  # [pairs] int64
    target_logp: np.ndarray  # [pairs] float32
    _keys: tuple[int, np.ndarray] | None = field(default=None, init=False, repr=False)

    def find(self, units: np.ndarray, positions: np.ndarray, n_candidates: int) -> np.ndarray:
        """Where each (unit, candidate position) pair is among the targets (an index into `ranks`), -1 where
        that position is no target of that unit: one binary search over keys sorted by unit, then position
        (made once: the targets never change)."""
        if not len(self.targets):
            return np.full(len(units), -1, dtype=np.int64)
        if self._keys is None or self._keys[0] != n_candidates:
            owner = np.repeat(np.arange(len(self.starts) - 1), self.starts[1:] - self.starts[:-1])
            self._keys = (n_candidates, owner * n_candidates + self.targets)
        keys = self._keys[1]
        wanted = units * n_candidates + positions
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        return np.where(keys[at] == wanted, at, -1)


def rounded_scores(scores: np.ndarray) -> np.ndarray:
    """float32 scores rounded to `SCORE_DIGITS` places in one go, each the very float `round(float(s), SCORE_DIGITS)`
    gives: a float32 times 10**6 is exact in float64 (24 + 14 significant bits), so `rint` rounds that exact value
    half to even, as `round` does, and the division gives the float nearest the rounded decimal, as `round` does."""
    if scores.dtype != np.float32:
        raise TypeError(f"rounded_scores takes float32 scores, not {scores.dtype}")
    return np.rint(scores.astype(np.float64) * _SCALE) / _SCALE


_SCALE = 10.0 ** SCORE_DIGITS
assert SCORE_DIGITS <= 6  # `rounded_scores` is exact while a float32 times the scale fits float64's 53 bits


CHOICE_LOGPROB = "log-probability of the choice's token at the answer slot, over the model's whole vocabulary"


class LamaBertTokenization:
    """LAMA's BERT connector tokenization (`CustomBaseTokenizer` + WordPiece) for a WordPiece tokenizer."""

    def __init__(self, tokenizer) -> None:
        from tokenizers import normalizers

        backend = getattr(tokenizer, "backend_tokenizer", None)
        model = getattr(backend, "model", None)
        if type(model).__name__ != "WordPiece" or backend.normalizer is None or backend.pre_tokenizer is None:
            raise KbcError(f"--compat lama reproduces LAMA's BERT tokenization, which needs a WordPiece "
                           f"tokenizer; {type(tokenizer).__name__} is not one")
        self.backend = backend
        self.model = model
        self.mask = tokenizer.mask_token
        self.mask_id = int(tokenizer.mask_token_id)
        self.cls_id = int(tokenizer.cls_token_id)
        self.sep_id = int(tokenizer.sep_token_id)
        # BERT's _clean_text and _tokenize_chinese_chars, which run on the whole text first
        self.clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                                                lowercase=False)
        self._pieces: dict[tuple[str, bool], tuple[tuple[str, int], ...]] = {}  # memo: tokens repeat a lot

    def _token_pieces(self, token: str, basic: bool) -> tuple[tuple[str, int], ...]:
        """(WordPiece, id) pairs of one whitespace token: through BERT's basic tokenizer when `basic`
        (lower-casing and accent stripping for uncased models, punctuation split), else as one word."""
        key = (token, basic)
        if key not in self._pieces:
            if basic:
                normalized = self.backend.normalizer.normalize_str(token)
                words = [w for w, _ in self.backend.pre_tokenizer.pre_tokenize_str(normalized)]
            else:
                words = [token]
            self._pieces[key] = tuple((t.value, t.id) for w in words for t in self.model.tokenize(w))
        return self._pieces[key]

    def pieces(self, text: str) -> list[tuple[str, int]]:
        """(WordPiece, id) pairs of `text` without [CLS]/[SEP], in LAMA's order."""
        out: list[tuple[str, int]] = []
        for token in self.clean.normalize_str(text).split():
            if self.mask in token:
                out.append((self.mask, self.mask_id))
                rest = token.replace(self.mask, "").strip()
                if rest:
                    out += self._token_pieces(rest, basic=False)
            else:
                out += self._token_pieces(token, basic=True)
        return out

    def tokens(self, text: str) -> list[str]:
        """WordPiece tokens without [CLS]/[SEP] (for inspection and tests)."""
        return [piece for piece, _ in self.pieces(text)]

    def encode(self, text: str, max_length: int) -> list[int]:
        ids = [self.cls_id] + [i for _, i in self.pieces(text)]
        if len(ids) + 1 > max_length:
            ids = ids[:max_length - 1]
        return ids + [self.sep_id]


def _top_by_position(logp, depth: int):
    """torch.topk with equal scores put in candidate order, and which rows need `_ties_fixed` (those where the
    `depth`-th and the next score are equal), all left on the device: nothing here waits for the card.

    The top `depth + 1` fix the top-`depth` set unless the last two are equal. Within the set, equal scores are
    put in candidate order by two small stable sorts."""
    import torch

    n = logp.shape[-1]
    if depth >= n:
        s = torch.sort(logp, dim=-1, descending=True, stable=True)
        return s.values[:, :depth], s.indices[:, :depth], logp.new_zeros(logp.shape[0], dtype=torch.bool)
    top = torch.topk(logp, depth + 1, dim=-1)
    boundary = top.values[:, depth - 1] == top.values[:, depth]
    by_pos = torch.sort(top.indices[:, :depth], dim=-1, stable=True)
    values = top.values[:, :depth].gather(1, by_pos.indices)
    s = torch.sort(values, dim=-1, descending=True, stable=True)
    return s.values, by_pos.values.gather(1, s.indices), boundary


def _ties_fixed(logp, rows, depth: int):
    """Top `depth` (values, indices) of `rows` of `logp` by a full stable sort: exact ties at the cut-off are
    kept in candidate order."""
    import torch

    full = torch.sort(logp[rows], dim=-1, descending=True, stable=True)
    return full.values[:, :depth], full.indices[:, :depth]


def _exact_ranks(logp, rows, positions):
    """Exact ranks (the eval.metrics tie rule) and scores of candidate `positions` in `rows` of `logp` [B, C].

    `rows` and `positions` are flat long tensors, one entry per (row, target) pair: no padding, no loop per row.
    """
    import torch

    ranks, scores = [], []
    n_cand = logp.shape[1]
    step = max(1, (1 << 25) // max(1, n_cand))  # pairs per chunk: bounds the [pairs, C] comparisons
    order = torch.arange(n_cand, device=logp.device)
    on_card = logp.device.type != "cpu"
    for start in range(0, len(rows), step):
        block = logp[rows[start:start + step]]
        pos = positions[start:start + step]
        score = block.gather(1, pos[:, None])  # [P, 1]
        if on_card:  # the host does not wait for the card to learn which rows hold ties
            rank = 1 + (block > score).sum(dim=-1) + ((block == score) & (order[None, :] < pos[:, None])).sum(dim=-1)
        else:  # equal scores before the candidate, looked for only where another candidate has its score (rare)
            higher = torch.count_nonzero(block > score, dim=-1)
            rank = 1 + higher
            tied = torch.nonzero(torch.count_nonzero(block >= score, dim=-1) - higher > 1).flatten()
            if len(tied):
                rank[tied] += ((block[tied] == score[tied]) & (order[None, :] < pos[tied, None])).sum(dim=-1)
        ranks.append(rank)
        scores.append(score[:, 0])
    if not ranks:
        return rows.new_zeros(0), logp.new_zeros(0)
    return torch.cat(ranks), torch.cat(scores)


class MaskedLMScorer:
    """Scores prompts holding one mask token; independent of queries and relations."""

    bucketing = False  # pad into full batches (see `batches`): set on a GPU

    def __init__(self, model, tokenizer, *, fingerprint: str, dtype: str = "float32", batch_size: int = 32,
                 normalize: str = "full", cache: ResultCache | None = None, max_length: int | None = None,
                 compat: str | None = None, name: str | None = None, pll: str | None = None) -> None:
        """`pll`: the pseudo-log-likelihood variant where the scorer serves statement scoring (its log says so)."""
        import torch

        # errors name the model as the user gave it (its path), not the cache fingerprint
        self.name = name or getattr(model, "name_or_path", None) or fingerprint
        if normalize not in ("full", "candidates"):
            raise KbcError(f"normalize={normalize!r}: use full or candidates")
        if tokenizer.mask_token is None:
            raise KbcError(f"{self.name}: the tokenizer has no mask token, so this is not a masked LM")
        self.model = model
        self.tokenizer = tokenizer
        self.fingerprint = fingerprint
        self.dtype = dtype
        self.batch_size = max(1, int(batch_size))
        self.normalize = normalize
        self.cache = cache
        self.compat = check_compat(compat)
        self.lama = LamaBertTokenization(tokenizer) if self.compat == "lama" else None
        self._word_ids = WordIds.of(tokenizer)  # a BERT-style tokenizer: each distinct word asked once
        self.device = next(model.parameters()).device
        self.bucketing = self.device.type == "cuda"
        limit = getattr(model.config, "max_position_embeddings", 512) or 512
        if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # positions start after the padding index
        self.max_length = min(max_length or limit, limit, getattr(tokenizer, "model_max_length", limit) or limit)
        self.mask_id = tokenizer.mask_token_id
        self.mask_token = tokenizer.mask_token
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        out = model.get_output_embeddings()
        self.vocab_size = out.weight.shape[0]
        self.path = "full-model"
        self.encoder = None
        self.transform = None
        self.trunk = self.last_layer = None
        build = HEAD_TRANSFORMS.get(getattr(model.config, "model_type", ""))
        if build is not None and isinstance(out, torch.nn.Linear):
            self.encoder = model.base_model
            transform = build(model)
            # the head runs in float32 whatever the encoder dtype: it is cheap at mask positions only
            self.transform = copy.deepcopy(transform).float()
            self.weight = out.weight.detach().float()
            self.bias = out.bias.detach().float() if out.bias is not None else None
            self.trunk, self.last_layer = _split_last_layer(self.encoder)
            if self.trunk is not None and self._fast_path_agrees():
                self.path = "last-layer+head-at-mask"
            else:
                self.trunk = self.last_layer = None
                if self._fast_path_agrees():
                    self.path = "encoder+head-at-mask"
                else:
                    self.encoder = self.transform = None
        self.forward_calls = 0
        self._rows: dict[tuple[str, str, int], object] = {}  # candidate set -> its ids on the device
        self.on_batch = None  # optional callable(n): told after each batch of n prompts (progress bars)
        if self.device.type == "cpu":  # a batch's [batch, vocabulary] float32 logits, log-probs, candidate
            keep_batch_memory(self.batch_size * self.vocab_size * 4, 8)  # columns and rank comparisons reuse memory
        said = (self.name, dtype, str(self.device), self.path, pll)
        if said not in _PATHS_SAID:
            _PATHS_SAID.add(said)
            how = f"statements scored by PLL ({pll}), each masked copy's logits by " if pll else ""
            log.info("%s: %smasked-LM scoring path %s (%s on %s)", self.name, how, self.path, dtype, self.device)

    # --- model execution -------------------------------------------------------------------------
    def _fast_path_agrees(self) -> bool:
        """Check the split head against the model's own forward on one prompt (guards architecture drift).

        In a reduced precision the model's own forward rounds where the split head (float32) does not: the
        two are compared within what that precision allows (`agreement_tolerance`), not float32's."""
        import torch

        text = f"Paris is the capital of {self.tokenizer.mask_token} ."
        enc = self.tokenizer([text], return_tensors="pt").to(self.device)
        pos = int((enc["input_ids"][0] == self.mask_id).nonzero()[0, 0])
        ids = enc["input_ids"]
        with torch.inference_mode():
            ref = self.model(**enc).logits[0, pos].float()
            if not bool(torch.isfinite(ref).all()):
                raise NonFiniteScores(self.name, [text], 1, check=True)
            got = self._head(self._mask_hidden(ids, None, torch.tensor([pos], device=self.device)).float())[0]
        tol = agreement_tolerance(next(self.model.parameters()).dtype, ref)
        return bool(torch.allclose(ref, got, atol=tol, rtol=0))

    def _head(self, hidden):
        """Logits over all rows for hidden states at mask positions ([N, H] float32)."""
        import torch

        h = self.transform(hidden)
        logits = h @ self.weight.T
        if self.bias is not None:
            logits = _plus_bias(logits, self.bias)
        return logits if logits.dtype == torch.float32 else logits.float()

    def _mask_hidden(self, input_ids, attention_mask, mask_pos):
        """Final hidden states at the mask positions ([B, H])."""
        import torch

        if self.trunk is not None:
            hidden = self.trunk(input_ids=input_ids, attention_mask=encoder_mask(self.trunk, attention_mask))
            hidden = hidden.last_hidden_state
            return _last_layer_at(self.last_layer, hidden, mask_pos.to(hidden.device), attention_mask)
        hidden = self.encoder(input_ids=input_ids, attention_mask=encoder_mask(self.encoder, attention_mask))
        hidden = hidden.last_hidden_state
        return hidden[torch.arange(len(mask_pos), device=hidden.device), mask_pos.to(hidden.device)]

    def _mask_logits(self, input_ids, attention_mask, mask_pos, rows=None):
        """Logits at the mask position of each row ([B, V], or [B, len(rows)] for candidate rows)."""
        import torch

        self.forward_calls += 1
        if self.encoder is None:
            out = self.model(input_ids=input_ids, attention_mask=encoder_mask(self.model, attention_mask)).logits
            logits = out[torch.arange(len(mask_pos), device=out.device), mask_pos.to(out.device)].float()
            return logits if rows is None else logits.index_select(1, rows)
        h = self.transform(self._mask_hidden(input_ids, attention_mask, mask_pos).float())
        if rows is None:
            logits = h @ self.weight.T
            return _plus_bias(logits, self.bias) if self.bias is not None else logits
        logits = h @ self.weight[rows].T
        return _plus_bias(logits, self.bias[rows]) if self.bias is not None else logits

    # --- tokenization and batching ---------------------------------------------------------------
    def _plain(self, texts: list[str]) -> list[list[int]]:
        """Token ids with special tokens, cut to `max_length`. All texts go through the backend at once without
        truncation (a third faster than the wrapper, which also truncates); the rare ones that come out longer
        than `max_length` are asked again with the wrapper's truncation, so every row is what it would give."""
        if self.lama is not None:
            return [self.lama.encode(t, self.max_length) for t in texts]
        ids = self._ids(texts, add_special_tokens=True)
        long = [i for i, row in enumerate(ids) if len(row) > self.max_length]
        if long:
            cut = self.tokenizer([texts[i] for i in long], add_special_tokens=True, truncation=True,
                                 max_length=self.max_length, return_attention_mask=False,
                                 return_token_type_ids=False)["input_ids"]
            for i, row in zip(long, cut):
                ids[i] = row
        return ids

    def _pieces(self, texts: list[str]) -> list[list[int]]:
        """Token ids without special tokens."""
        if self.lama is not None:
            return [[i for _, i in self.lama.pieces(t)] for t in texts]
        return self._ids(texts)

    def _ids(self, texts: list[str], add_special_tokens: bool = False) -> list[list[int]]:
        """The backend's ids of `texts`, uncut (`WordIds` where the tokenizer allows it)."""
        if self._word_ids is not None:
            return self._word_ids(texts, add_special_tokens)
        return token_ids(self.tokenizer, texts, add_special_tokens)

    def _pairs(self, pairs: list[tuple[str, str]]) -> list[list[int]]:
        """`context [SEP] prompt` with the model's own special tokens (a sentence pair), cut to
        `max_length` by shortening the context only; a prompt that leaves no room goes alone.
        A mask token in the context is removed first, so the input holds the prompt's mask only."""
        mask = self.tokenizer.mask_token
        contexts = [re.sub(re.escape(mask), " ", c, flags=re.IGNORECASE) for c, _ in pairs]
        prompts = [p for _, p in pairs]
        lengths = [len(ids) for ids in self._pieces(prompts)]
        n_special = 3 if self.lama is not None else self.tokenizer.num_special_tokens_to_add(pair=True)
        fits = [n + n_special < self.max_length for n in lengths]
        out: list[list[int]] = [[] for _ in pairs]
        alone = [i for i, ok in enumerate(fits) if not ok]
        for i, row in zip(alone, self._plain([prompts[i] for i in alone]) if alone else []):
            out[i] = row
        both = [i for i, ok in enumerate(fits) if ok]
        if not both:
            return out
        if self.lama is not None:
            for i in both:
                c = [t for _, t in self.lama.pieces(contexts[i])][:self.max_length - n_special - lengths[i]]
                p = [t for _, t in self.lama.pieces(prompts[i])]
                out[i] = [self.lama.cls_id, *c, self.lama.sep_id, *p, self.lama.sep_id]
            return out
        enc = self.tokenizer([contexts[i] for i in both], [prompts[i] for i in both], truncation="only_first",
                             max_length=self.max_length, return_attention_mask=False, return_token_type_ids=False)
        for i, row in zip(both, enc["input_ids"]):
            out[i] = row
        return out

    def encode(self, texts: Sequence[Text]) -> list[list[int]]:
        """Token ids of prompts, or of (context, prompt) pairs (see `_pairs`)."""
        plain = [i for i, t in enumerate(texts) if isinstance(t, str)]
        paired = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        ids: list[list[int]] = [[] for _ in texts]
        for i, row in zip(plain, self._plain([texts[i] for i in plain]) if plain else []):
            ids[i] = row
        for i, row in zip(paired, self._pairs([texts[i] for i in paired]) if paired else []):
            ids[i] = row
        for text, row in zip(texts, ids):
            prompt = text if isinstance(text, str) else text[1]
            n = row.count(self.mask_id)
            if n == 0 and self.mask_token in prompt:
                raise KbcError(f"{self.name}: a prompt is longer than max_length={self.max_length} tokens, so its "
                               f"{self.mask_token} was cut off: {prompt[:200]!r}; raise the predictor's max_length "
                               "(--set NAME.max_length=N) or leave it unset for the model's own limit")
            if n != 1:
                raise KbcError(f"prompt needs exactly one {self.mask_token} but it appears {n} times: "
                               f"{prompt[:200]!r}")
        return ids

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped by exact length (no padding); small groups merged with their neighbours.

        With `bucketing` (on a GPU, where a few full batches beat many small exact-length ones) the indices
        sorted by length are cut into full batches, each padded to its longest row under an attention mask."""
        if self.bucketing:
            return length_batches(lengths, self.batch_size)
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        groups: list[list[int]] = []
        for i in order:
            if groups and lengths[groups[-1][-1]] == lengths[i]:
                groups[-1].append(i)
            else:
                groups.append([i])
        small = max(1, self.batch_size // MIN_BUCKET_FRACTION)
        batches: list[list[int]] = []
        pending: list[int] = []
        for group in groups:
            if len(group) < small:
                pending += group
                if len(pending) >= self.batch_size:
                    batches.append(pending[:self.batch_size])
                    pending = pending[self.batch_size:]
                continue
            for start in range(0, len(group), self.batch_size):
                batches.append(group[start:start + self.batch_size])
        if pending:
            batches.append(pending)
        return batches

    # --- scoring ---------------------------------------------------------------------------------
    def score(self, texts: Sequence[Text], candidates: CandidateSet, depth: int,
              targets: Sequence[Sequence[int]] | None = None) -> list[Scored]:
        """Top-`depth` candidates for each text, and the exact ranks of its `targets` (candidate positions).

        Identical texts run once; the cache is consulted first (per text and target positions).
        """
        cols = self.columns(texts, candidates, depth, targets)
        out = []
        for u in cols.unit.tolist():
            at, to = int(cols.starts[u]), int(cols.starts[u + 1])
            tgt = cols.targets[at:to].tolist()
            ranks, logp = cols.ranks[at:to].tolist(), cols.target_logp[at:to].tolist()
            out.append(Scored(cols.pos[u], cols.logp[u], int(cols.n_tokens[u]), dict(zip(tgt, ranks)),
                              dict(zip(tgt, logp))))
        return out

    def columns(self, texts: Sequence[Text], candidates: CandidateSet, depth: int,
                targets: Sequence[Sequence[int]] | None = None,
                on_units: Callable[[ScoredColumns, np.ndarray], None] | None = None) -> ScoredColumns:
        """`score` as arrays, one row per distinct (text, targets) unit (`ScoredColumns`): no object per input.

        `on_units(cols, units)` is told of each set of units whose rows are final (those the cache held, then
        each batch's): on a GPU the caller's work on one batch's rows runs while the card runs the next."""
        depth = min(depth, len(candidates))
        wanted = [tuple(sorted(set(t))) for t in targets] if targets is not None else [()] * len(texts)
        index: dict[tuple[Text, tuple[int, ...]], int] = {}
        unit = np.fromiter((index.setdefault(u, len(index)) for u in zip(texts, wanted)), dtype=np.int64,
                           count=len(texts))
        units = list(index)
        sizes = np.fromiter((len(t) for _, t in units), dtype=np.int64, count=len(units))
        starts = np.zeros(len(units) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        flat = np.fromiter((p for _, t in units for p in t), dtype=np.int64, count=int(starts[-1]))
        cols = ScoredColumns(unit, np.zeros((len(units), depth), dtype=np.int32),
                             np.zeros((len(units), depth), dtype=np.float32), np.zeros(len(units), dtype=np.int64),
                             flat, starts, np.zeros(len(flat), dtype=np.int64), np.zeros(len(flat), dtype=np.float32))
        keys = [self._key(text, candidates, tgt) for text, tgt in units] if self.cache is not None else []
        done = np.zeros(len(units), dtype=bool)
        if self.cache is not None:
            by_size: dict[int, list[int]] = {}
            for u, size in enumerate(sizes.tolist()):
                by_size.setdefault(size, []).append(u)
            for size, group in by_size.items():
                found = self.cache.get_many([keys[u] for u in group], size + depth)
                for u in group:
                    hit = found.get(keys[u])
                    if hit is not None and np.isfinite(hit[1]).all():  # never serve a NaN
                        pos, logp, n = hit
                        at = starts[u]
                        cols.ranks[at:at + size], cols.target_logp[at:at + size] = pos[:size], logp[:size]
                        cols.pos[u], cols.logp[u], cols.n_tokens[u] = pos[size:], logp[size:], n
                        done[u] = True
        todo = np.flatnonzero(~done)
        if on_units is not None and len(todo) < len(units):
            on_units(cols, np.flatnonzero(done))
        if len(todo):
            filled = np.zeros(len(units), dtype=bool)

            def batch_done(scored: ScoredColumns, unit_ids: np.ndarray) -> None:
                filled[unit_ids] = True
                if on_units is not None:
                    on_units(scored, unit_ids)

            try:
                self._run(units, todo, candidates, depth, cols, batch_done)
            except BaseException:  # a Ctrl-C or a failure keeps what the batches before it scored
                self._keep(keys, cols, np.flatnonzero(filled))
                raise
            self._keep(keys, cols, todo)
        return cols

    def _keep(self, keys: list[str], cols: ScoredColumns, which: np.ndarray) -> None:
        """Put the rows of the units `which` into the result cache (a top and the targets' ranks per unit)."""
        if self.cache is None or not len(which):
            return
        depth = cols.pos.shape[1]
        rows = np.concatenate([cols.ranks.astype(np.int32), cols.pos.ravel()])
        scores = np.concatenate([cols.target_logp, cols.logp.ravel()])
        starts, tops = cols.starts, len(cols.targets) + which * depth
        self.cache.put_many([(keys[u], np.concatenate([rows[starts[u]:starts[u + 1]], rows[t:t + depth]]),
                              np.concatenate([scores[starts[u]:starts[u + 1]], scores[t:t + depth]]), n)
                             for u, t, n in zip(which.tolist(), tops.tolist(), cols.n_tokens[which].tolist())])

    def _run(self, units: list[tuple[Text, tuple[int, ...]]], todo: np.ndarray, candidates: CandidateSet, depth: int,
             cols: ScoredColumns, on_units: Callable[[ScoredColumns, np.ndarray], None] | None = None) -> None:
        """Forward passes for the texts of the units `todo` (each text once); fills their rows of `cols`, telling
        `on_units` of each batch's units once they are filled."""
        import torch

        where: dict[Text, int] = {}
        text_of_unit = np.fromiter((where.setdefault(units[u][0], len(where)) for u in todo.tolist()), dtype=np.int64,
                                   count=len(todo))
        texts = list(where)
        # the units of each text, grouped: text i's units are todo[order[first[i]:first[i + 1]]]
        order = np.argsort(text_of_unit, kind="stable")
        first = np.searchsorted(text_of_unit[order], np.arange(len(texts) + 1))
        ids = self.encode(texts)
        lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=len(ids))
        rows = self._candidate_rows(candidates)
        sizes = cols.starts[1:] - cols.starts[:-1]

        def collect(batch: list[int], unit_ids: np.ndarray, unit_rows: np.ndarray, dest: np.ndarray, logp,
                    sent: ToHost) -> None:
            top, pos, ranks, scores = self._extract(logp, depth, sent, [text_of(texts[i]) for i in batch])
            cols.pos[unit_ids], cols.logp[unit_ids] = pos[unit_rows], top[unit_rows]
            cols.n_tokens[unit_ids] = lengths[batch][unit_rows]
            cols.ranks[dest], cols.target_logp[dest] = ranks, scores
            if on_units is not None:
                on_units(cols, unit_ids)
            if self.on_batch is not None:
                self.on_batch(len(batch))

        waiting = None  # a batch on its way to the host while the card runs the next one
        with torch.inference_mode():
            for batch in self.batches(lengths.tolist()):
                logp = self._candidate_logp(*self._pack([ids[i] for i in batch]), rows).float()
                at = np.asarray(batch, dtype=np.int64)
                count = first[at + 1] - first[at]  # units per text of the batch
                picked = np.repeat(first[at] - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
                unit_ids = todo[order[picked]]
                unit_rows = np.repeat(np.arange(len(batch)), count)
                k = sizes[unit_ids]
                dest = np.repeat(cols.starts[unit_ids] - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
                pairs = np.stack([np.repeat(unit_rows, k), cols.targets[dest]], axis=1)
                sent = self._extract_start(logp, depth, pairs)
                if waiting is not None:
                    collect(*waiting)
                waiting = (batch, unit_ids, unit_rows, dest, logp, sent)
            if waiting is not None:
                collect(*waiting)

    def _candidate_rows(self, candidates: CandidateSet):
        """The candidates' vocabulary ids as a tensor on the device, made once per candidate set (a chunk of
        queries asks the same set again)."""
        import torch

        key = (candidates.name, candidates.fingerprint, len(candidates))
        if key not in self._rows:
            self._rows[key] = torch.tensor(candidates.ids, dtype=torch.long, device=self.device)
        return self._rows[key]

    def _candidate_logp(self, input_ids, attention, mask_pos, rows):
        """Log-probs of the candidate `rows` at each mask ([B, len(rows)]): log-softmax over the whole vocabulary,
        or over the candidates alone (`normalize="candidates"`)."""
        import torch

        if self.normalize == "full":  # candidate columns by `index_select`: the same copy, 2/3 of the time on a CPU
            return torch.log_softmax(self._mask_logits(input_ids, attention, mask_pos), dim=-1).index_select(1, rows)
        return torch.log_softmax(self._mask_logits(input_ids, attention, mask_pos, rows), dim=-1)

    def _pack(self, rows: list[list[int]]):
        """(input ids [B, L], attention mask or None when no row is padded, mask positions [B]) on the device,
        copied without waiting for the card (`to_device`)."""
        array, keep = pad_rows(rows, self.pad_id)
        attention = None if keep is None else to_device(keep.astype(np.int64), self.device)
        mask_pos = (array == self.mask_id).argmax(axis=1)
        return to_device(array, self.device), attention, to_device(mask_pos, self.device)

    def _extract_start(self, logp, depth: int, pairs: np.ndarray | Sequence[tuple[int, int]]) -> ToHost:
        """Top `depth` (log-probs, candidate positions) per row, the exact rank and log-prob of each (row,
        candidate position) pair, whether each row is finite and whether its top needs `_ties_fixed`: computed
        on the device and sent to the host in one transfer that the host collects later (`_extract`), so that on
        a GPU the next batch runs while the host turns this one into results.

        A NaN or infinity anywhere in a row makes the row's sum non-finite."""
        import torch

        values, indices, boundary = _top_by_position(logp, depth)
        where = to_device(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), self.device)
        ranks, scores = _exact_ranks(logp, where[:, 0], where[:, 1])
        finite = torch.isfinite(logp.sum(dim=-1))
        return ToHost(torch.cat([values.double().flatten(), indices.double().flatten(), ranks.double(),
                                 scores.double(), finite.double(), boundary.double()]))

    def _extract(self, logp, depth: int, sent: ToHost, inputs: list[str]):
        """The host arrays of `_extract_start` once they have arrived: (top log-probs [B, depth], their
        positions [B, depth], the pairs' ranks, their log-probs). Rows tied at the cut-off are sorted in full
        here; rows that look non-finite are confirmed element by element before anything is refused."""
        import torch

        batch = logp.shape[0]
        flat = sent.wait()
        n_pairs = (len(flat) - 2 * batch * depth - 2 * batch) // 2
        cut = np.cumsum([batch * depth, batch * depth, n_pairs, n_pairs, batch])
        top, pos, rank, score, finite, boundary = np.split(flat, cut)
        top, pos = top.reshape(batch, depth), pos.reshape(batch, depth)
        if not finite.all():
            bad = [j for j in np.flatnonzero(finite == 0).tolist() if not bool(torch.isfinite(logp[j]).all())]
            if bad:
                raise NonFiniteScores(self.name, [inputs[j] for j in bad], batch)
        if boundary.any():
            tied = np.flatnonzero(boundary)
            values, indices = _ties_fixed(logp, to_device(tied, self.device), depth)
            top[tied] = values.double().cpu().numpy()
            pos[tied] = indices.double().cpu().numpy()
        return top.astype(np.float32), pos.astype(np.int32), rank.astype(np.int64), score.astype(np.float32)

    def _key(self, text: Text, candidates: CandidateSet, targets: tuple[int, ...] = ()) -> str:
        text = text if isinstance(text, str) else "\x1e".join(("context [SEP] prompt", *text))
        # every setting that changes a score is in the key: `max_length` cuts long inputs (contexts) differently
        return ResultCache.key(CACHE_VERSION, self.fingerprint, self.dtype, str(self.device.type), self.normalize,
                               self.compat or "-", str(self.max_length), candidates.fingerprint, text,
                               ",".join(map(str, targets)))


class MaskedLMPredictor:
    """The Predictor protocol over a MaskedLMScorer and an answer space (LAMA's candidate vocabulary).

    Subject queries put the mask at [X] and the object at [Y]; their candidates come from
    `subject_space` (default: the object space, e.g. the common vocabulary).
    """

    ranks = "exact"  # every candidate is scored: Prediction.target_ranks holds exact ranks
    slots = ("object", "subject")
    score_scale = "log-prob"  # of the candidate token at the mask

    def __init__(self, name: str, scorer: MaskedLMScorer, space: AnswerSpace, describe_extra: dict | None = None,
                 subject_space: AnswerSpace | None = None):
        self.name = name
        self.scorer = scorer
        self.space = space
        self.spaces = {"object": space, "subject": subject_space or space}
        self.uncased = space.labels.uncased
        self._extra = describe_extra or {}
        self._gold: dict[tuple[str, str], str] = {}  # (fact uid, slot) -> gold label, learnt in filter_facts
        self._full: CandidateSet | None = None  # the whole vocabulary, for closed questions (`choices`)
        self._labels: dict[int, tuple[CandidateSet, np.ndarray]] = {}  # candidate set -> its labels (`_label_array`)

    @property
    def chunk_size(self) -> int:
        """Queries per call: the runner's 512, or on a GPU at least one full batch, so that a `--batch-size` above
        512 makes passes of that size (a call's prompts are batched together)."""
        return max(QUERIES_PER_CALL, self.scorer.batch_size) if self.scorer.bucketing else QUERIES_PER_CALL

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self.spaces[slot].for_relation(relation))

    def _choice_space(self) -> CandidateSet:
        """Every token of the model: a closed question is never limited to a vocabulary its choices are not in."""
        if self._full is None:
            self._full = full_vocab(self.space.labels)
        return self._full

    def describe(self) -> dict:
        return {
            "kind": "masked-lm",
            "model": self.name,
            "fingerprint": self.scorer.fingerprint,
            "dtype": self.scorer.dtype,
            "device": str(self.scorer.device),
            "normalize": self.scorer.normalize,
            "lowercased": self.uncased,
            "max_length": self.scorer.max_length,
            "path": self.scorer.path,
            "compat": self.scorer.compat,
            "ranks": self.ranks,
            "ties": "candidate order (vocabulary file order)",
            "slots": list(self.slots),
            **({"subject_space": self.spaces["subject"].describe()} if self.spaces["subject"] is not self.space
               else {}),
            **self.space.describe(),
            **self._extra,
        }

    def prompt(self, query: Query) -> str:
        """LAMA prompt: subject at [X], the model's mask at [Y] (lower-cased for uncased models)."""
        mask = self.scorer.mask_token
        if self.scorer.compat == "lama":
            text = lama_prompt(query.template, query.known.label, mask, query.slot)
        else:
            text = query.text(mask)
        if self.uncased:
            text = mask.join(part.lower() for part in text.split(mask))
        return text

    def model_input(self, query: Query) -> Text:
        """The prompt, or (context, prompt) when the query has a context (coherency §3.4): the model
        reads `context [SEP] prompt`, the context cut to fit its maximum length, never the prompt."""
        if not query.context:
            return self.prompt(query)
        return (query.context.lower() if self.uncased else query.context), self.prompt(query)

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        """Facts whose asked entity (the object, or the subject for `slot="subject"`) is one candidate
        token; the rest counted by reason."""
        kept, dropped = [], {}
        mask = self.scorer.tokenizer.mask_token
        space = self.spaces[slot]
        for fact in facts:
            asked, known = (fact.object, fact.subject) if slot == "object" else (fact.subject, fact.object)
            choices = getattr(fact, "choices", ())
            if choices:  # a closed question: its choices are ranked over the whole vocabulary
                whole = all(normalize(c, self.uncased) in space.labels.words for c in choices)
                reason = None if whole else NOT_SINGLE_TOKEN_CHOICE
            else:
                reason = drop_reason(asked.label, space.for_relation(fact.relation), space.labels)
            if reason is not None and slot == "subject":
                reason = reason.replace("object", "subject", 1)
            if reason is None and fact.cloze is None and mask in known.label:
                # the label's mask would become a second mask in the prompt
                reason = f"{'subject' if slot == 'object' else 'object'} label contains the mask token {mask}"
            if reason is None and fact.cloze is not None and mask in fact.cloze:
                # a cloze sentence masking more than its slot (SQuAD has three): the prompt would hold two masks
                reason = f"cloze sentence holds the mask token {mask} besides its slot"
            if reason is None:
                kept.append(fact)
                self._gold[(fact.uid, slot)] = normalize(asked.label, self.uncased)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def _label_array(self, cands: CandidateSet) -> np.ndarray:
        """The candidates' labels as an object array, made once per candidate set: a batch's labels in one take."""
        held = self._labels.get(id(cands))
        if held is None or held[0] is not cands:
            held = self._labels[id(cands)] = (cands, np.array(cands.labels, dtype=object))
        return held[1]

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        # queries sharing a candidate set are scored together: bigger length buckets, less padding
        groups: dict[int, tuple[CandidateSet, list[int]]] = {}
        for i, q in enumerate(queries):
            cands = self._choice_space() if getattr(q, "choices", ()) else self.spaces[q.slot].for_relation(q.relation)
            groups.setdefault(id(cands), (cands, []))[1].append(i)
        out: list[Prediction | None] = [None] * len(queries)
        for cands, idx in groups.values():
            if not len(cands):
                for i in idx:
                    out[i] = Prediction(queries[i].uid, (), self.uncased, {"n_candidates": 0}, {})
                continue
            asked = [queries[i] for i in idx]
            texts = [self.model_input(q) for q in asked]
            where = [target_positions(q.targets, cands, self.uncased) for q in asked]
            answers: dict[int, RankedAnswers] = {}  # identical inputs share their answers

            def fill(cols: ScoredColumns, units: np.ndarray, idx=idx, asked=asked, where=where, cands=cands,
                     answers=answers) -> None:
                self._fill(out, idx, asked, where, cands, cols, np.flatnonzero(np.isin(cols.unit, units)), answers)
            ahead = self.scorer.bucketing  # on a GPU, while the card runs the next batch; on a CPU, all at once
            try:
                cols = self.scorer.columns(texts, cands, depth, [tuple(t.values()) for t in where],
                                           fill if ahead else None)
            except NonFiniteScores as exc:
                bad = next((q for q, t in zip(asked, texts) if text_of(t) in exc.bad), None)
                raise (exc if bad is None else exc.for_fact(f"{bad.fact_uid} ({bad.relation})")) from None
            if not ahead:
                self._fill(out, idx, asked, where, cands, cols, np.arange(len(asked)), answers)
        return out  # type: ignore[return-value]

    def _fill(self, out: list, idx: list[int], asked: list[Query], where: list[dict[str, int]], cands: CandidateSet,
              cols: ScoredColumns, sel: np.ndarray, answers: dict[int, RankedAnswers]) -> None:
        """The predictions of `asked[sel]` (at `idx[sel]` of `out`) from their scores, whose rows of `cols` are
        final: the labels, ranks and gold log-probs of all of them are looked up at once, then each prediction is
        put together. `answers` holds each unit's answers once made (identical inputs share them)."""
        n = len(cands)
        picked = sel.tolist()
        asked = [asked[j] for j in picked]
        where = [where[j] for j in picked]
        units = cols.unit[sel]
        rows = np.unique(units)
        row_of = dict(zip(rows.tolist(), range(len(rows))))
        label_rows = self._label_array(cands)[cols.pos[rows]].tolist()
        top = cols.logp[rows]
        score_rows = top.tolist()
        rounded_rows = rounded_scores(top[:, :TOP_SAVED]).tolist()  # what a record saves, rounded at once
        n_tokens = cols.n_tokens[rows].tolist()
        counts = np.fromiter(map(len, where), dtype=np.int64, count=len(where))
        flat = np.fromiter((p for t in where for p in t.values()), dtype=np.int64, count=int(counts.sum()))
        found = cols.find(np.repeat(units, counts), flat, n)
        ranks = cols.ranks[found].tolist()
        target_logp = cols.target_logp[found].tolist()
        golds = [self._gold.get((q.fact_uid, q.slot)) for q in asked]
        gpos = np.fromiter((cands.index.get(g, -1) if g else -1 for g in golds), dtype=np.int64, count=len(golds))
        at = np.where(gpos >= 0, cols.find(units, np.maximum(gpos, 0), n), -1)
        gold_logp = np.full(len(at), np.nan)
        gold_logp[at >= 0] = rounded_scores(cols.target_logp[at[at >= 0]])
        gold_logp = gold_logp.tolist()
        start = 0
        for j, q, u, tpos, gold, hit in zip(picked, asked, units.tolist(), where, golds, gold_logp):
            i, r = idx[j], row_of[u]
            got = answers.get(u)
            if got is None:
                got = answers[u] = RankedAnswers(label_rows[r], score_rows[r], rounded_rows[r])
            extra = {"n_tokens": n_tokens[r]}
            if hit != hit:  # NaN: the gold is no target of this input; it may still be among the answers
                hit = round(got.scores[got.labels.index(gold)], SCORE_DIGITS) if gold and gold in got.labels else None
            if hit is not None:
                extra["gold_logprob"] = hit  # LAMA Table 3 reports it
            end = start + len(tpos)
            if getattr(q, "choices", ()):  # a closed question: each choice's score, which its rank orders
                extra[CHOICE_SCORES] = dict(zip(tpos, target_logp[start:end]))
                extra[CHOICE_SCORING] = CHOICE_LOGPROB
            out[i] = ranked_prediction(q.uid, got, self.uncased, extra, dict(zip(tpos, ranks[start:end])))
            start = end
