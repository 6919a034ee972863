"""Statement scoring (BEAR, lm-pub-quiz): each candidate is put into the template and the whole statement is
scored, so answers of any number of tokens are ranked alike and the rank is exact over the answer space.

Masked LMs: pseudo-log-likelihood, the sum (or mean) over the statement's non-special tokens of
log p(token | the statement with that token masked), with lm-pub-quiz's masking variants:
`original` masks the token alone; `within_word_l2r` (the default) also masks the rest of its word to the
right; `sentence_l2r` masks everything from the token to the end of the input (the closing special token
too); `answer_l2r+word_l2r` masks the rest of the answer for an answer token and acts as `within_word_l2r`
elsewhere. Words and the answer's tokens come from the fast tokenizer's word ids and character offsets,
as lm-pub-quiz reads them.

Causal LMs: the summed log-probability of the statement's tokens after BOS (lm/causal.py's token-tree
scorer: statements sharing leading tokens share those positions, across candidates and instances).

Speed, with the same numbers: every masked copy is built once however many statements need it (copies
with the whole answer masked are the same for answers of one length); on a CPU copies run in batches of one
exact length (no padding), on a GPU sorted by length and padded into a few full batches under an attention
mask; the last layer and the vocabulary projection run only at the scored position; every log p is gathered
on the device and comes back in one transfer per call.

Templating: lm-pub-quiz upper-cases the first character of every statement, which rewrites an answer or
subject label that opens the sentence ("[Y] served as ..." with "de Gaulle" gives "De Gaulle"). kbcompare
keeps labels as they are and upper-cases only template text that opens a statement. lm-pub-quiz also puts
labels in verbatim, so a label with a leading space (BEAR's P175 subject " Crazy") opens the statement with
a space or leaves two inside it, which tokenizers read differently; kbcompare strips labels.
`compat="lm-pub-quiz"` does both as lm-pub-quiz does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.errors import ConfigError, KbcError
from eval.types import OBJECT_SLOT, SUBJECT_SLOT
from lm.batches import length_batches, map_passes, pad_rows, to_device
from lm.heap import keep_batch_memory
from lm.token_ids import encodings

PLL_VARIANTS = ("within_word_l2r", "original", "sentence_l2r", "answer_l2r+word_l2r")
REDUCTIONS = ("sum", "mean")
COMPAT = "lm-pub-quiz"
_SLOTS = re.compile(f"({re.escape(SUBJECT_SLOT)}|{re.escape(OBJECT_SLOT)})")
SHORT_STATEMENT = 8  # tokens: a pass of copies this short holds the most copies (COPY_TOKENS // 8)
COPY_TOKENS = 8192  # tokens per forward pass of masked copies: bounds activations, amortises the weights
# on a GPU, padded tokens per pass: few passes. Passes of 8,192 pad less (BEAR's sorted copies: 5% of the tokens
# against 13%) yet ran no faster on an H200 (float32 0.36 s against 0.35, bfloat16 0.13 against 0.10)
GPU_COPY_TOKENS = 32768
STATEMENT_CACHE = "statement-pll-v1"  # bump when token scores of a statement would change


@dataclass(frozen=True, slots=True)
class Statement:
    """A filled template and where its answer sits (character span, for `answer_l2r+word_l2r`)."""

    text: str
    answer: tuple[int, int]


def check_options(pll: str, reduction: str) -> None:
    if pll not in PLL_VARIANTS:
        raise ConfigError(f"pll={pll!r}: use one of {', '.join(PLL_VARIANTS)}")
    if reduction not in REDUCTIONS:
        raise ConfigError(f"reduction={reduction!r}: use one of {', '.join(REDUCTIONS)}")


def fill(template: str, subject: str, answer: str, compat: str | None = None, asked: str = OBJECT_SLOT) -> Statement:
    """The statement with the subject at [X] and the answer at [Y], filled in one pass (a label holding a
    slot marker stays text); the opening character is upper-cased and labels are stripped of surrounding
    spaces (lm-pub-quiz keeps them; see the module docstring). The span is the `asked` slot's: [Y] for
    object queries, [X] when the subject is asked (coherency's way back)."""
    if compat != COMPAT:
        subject, answer = subject.strip(), answer.strip()
    text, span = "", (0, 0)
    parts = _SLOTS.split(template)
    for i, part in enumerate(parts):
        if i % 2 == 0:
            text += part
            continue
        value = subject if part == SUBJECT_SLOT else answer
        if part == asked:
            span = (len(text), len(text) + len(value))
        text += value
    opens_with_template = bool(parts[0])
    if text and (compat == COMPAT or opens_with_template):
        first = text[0].upper()  # one character may upper-case to more: Armenian "և" to "ԵՒ", "ß" to "SS"
        text, grown = first + text[1:], len(first) - 1
        if grown and span != (0, 0):  # the span stays on its slot: after the opening character, or over it
            span = (span[0] + grown if span[0] else 0, span[1] + grown)
    return Statement(text, span)


def reduce(scores: Sequence[float], reduction: str) -> float:
    """Sum or mean of token scores, accumulated in float64 over float32 values as lm-pub-quiz does."""
    total = sum(float(s) for s in scores)
    if reduction == "mean":
        return total / len(scores) if len(scores) else float("nan")
    return total


class MaskedStatementScorer:
    """Pseudo-log-likelihood of statements under a masked LM (an `lm.masked.MaskedLMScorer`'s model)."""

    def __init__(self, scorer, pll: str = "within_word_l2r", batch_size: int | None = None,
                 bucketing: bool | None = None) -> None:
        check_options(pll, "sum")
        if not getattr(scorer.tokenizer, "is_fast", False):
            raise KbcError(f"{scorer.name}: statement scoring reads word boundaries from a fast tokenizer; "
                           "this model's tokenizer is not one")
        self.scorer = scorer
        self.tokenizer = scorer.tokenizer
        self.pll = pll
        self.batch_size = batch_size
        # pad copies of different lengths into a few full batches (the engine's choice: on a GPU) or not
        self.bucketing = bool(getattr(scorer, "bucketing", False)) if bucketing is None else bucketing
        self.copies_run = 0  # masked copies sent through the model (after sharing)
        self.copies_asked = 0  # masked copies the statements needed
        if getattr(scorer.device, "type", None) == "cpu":  # a pass's [copies, vocabulary] logits and log-probs
            keep_batch_memory((batch_size or COPY_TOKENS // SHORT_STATEMENT) * scorer.vocab_size * 4, 4)

    def _copies(self, ids: list[int], scored: list[int], word: list[int | None], answer: list[int],
                mask_id: int) -> list[tuple[tuple[int, ...], int]]:
        """(masked input ids, scored position) for each scored token of one statement."""
        out = []
        for k, pos in enumerate(scored):
            masked = [pos]
            if self.pll == "sentence_l2r":
                masked = list(range(pos, len(ids)))
            elif self.pll == "answer_l2r+word_l2r" and pos in answer:
                masked = [a for a in answer if a >= pos]
            elif self.pll != "original" and word[pos] is not None:
                for right in scored[k + 1:]:
                    if word[right] != word[pos]:
                        break  # a word is contiguous: the tokens after it belong to other words
                    masked.append(right)
            copy = list(ids)
            for m in masked:
                copy[m] = mask_id
            out.append((tuple(copy), pos))
        return out

    def _key(self, statement: Statement) -> str:
        from lm.cache import ResultCache

        s = self.scorer
        return ResultCache.key(STATEMENT_CACHE, s.fingerprint or "-", str(s.dtype), str(s.device.type), self.pll,
                               statement.text, f"{statement.answer[0]}:{statement.answer[1]}")

    def token_scores(self, statements: Sequence[Statement]) -> list[list[float]]:
        """Per statement, log p of each scored (non-special) token, in order; from the engine's result cache where
        it holds them (keyed by model fingerprint, dtype, device, PLL variant and the statement), so a rerun does
        no forward pass. The reduction is applied afterwards, so one entry serves `sum` and `mean`."""
        cache = getattr(self.scorer, "cache", None)
        if cache is None or not self.scorer.fingerprint:
            return self._run(statements)
        keys = [self._key(s) for s in statements]
        found = cache.get_rows(list(dict.fromkeys(keys)))
        todo = list(dict.fromkeys(i for i, k in enumerate(keys) if k not in found))
        fresh = dict(zip((keys[i] for i in todo), self._run([statements[i] for i in todo]))) if todo else {}
        if fresh:
            cache.put_rows(fresh.items())
        return [fresh[k] if k in fresh else found[k].tolist() for k in keys]

    def _run(self, statements: Sequence[Statement]) -> list[list[float]]:
        """Per statement, log p of each scored token, computed."""
        if not statements:
            return []
        encoded = encodings(self.tokenizer, [s.text for s in statements], add_special_tokens=True)
        mask_id = self.scorer.mask_id
        limit = self.scorer.max_length
        # statements whose masked copies are equal (answers of one length with the answer masked) share the copy,
        # each reading its own token: one read per scored token, statement by statement
        index: dict[tuple[tuple[int, ...], int], int] = {}  # (copy, scored position) -> copy number
        copy_of: list[int] = []  # per read: the copy it is read from
        read_token: list[int] = []  # per read: the token whose log p is read
        sizes: list[int] = []  # scored tokens per statement
        for statement, enc in zip(statements, encoded):
            ids = enc.ids
            if len(ids) > limit:
                raise KbcError(f"{self.scorer.name}: statement of {len(ids)} tokens exceeds the model's {limit}: "
                               f"{statement.text[:200]!r}")
            scored = [p for p, special in enumerate(enc.special_tokens_mask) if not special]
            answer = _answer_tokens(enc, statement.answer) if self.pll == "answer_l2r+word_l2r" else []
            for unit in self._copies(ids, scored, enc.word_ids, answer, mask_id):
                copy_of.append(index.setdefault(unit, len(index)))
                read_token.append(ids[unit[1]])
            sizes.append(len(scored))
        self.copies_asked += len(copy_of)
        self.copies_run += len(index)
        flat = self._forward(list(index), np.array(copy_of, dtype=np.int64), np.array(read_token, dtype=np.int64))
        owner = np.repeat(np.arange(len(statements)), sizes)
        bad = [statements[i].text for i in np.unique(owner[~np.isfinite(flat)]).tolist()]
        if bad:
            from lm.finite import NonFiniteScores

            raise NonFiniteScores(self.scorer.name, bad, len(statements))
        values, ends = flat.tolist(), np.cumsum(sizes).tolist()
        return [values[end - n:end] for n, end in zip(sizes, ends)]

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Copy numbers per forward pass. Exact-length batches (no padding) on a CPU, the largest first so that
        passes side by side (`map_passes`) end together; with `bucketing`, copies sorted by length cut into a few
        full batches padded under an attention mask."""
        if self.bucketing:
            if self.batch_size:
                return length_batches(lengths, self.batch_size)
            budget = COPY_TOKENS if self.scorer.device.type == "cpu" else GPU_COPY_TOKENS
            return length_batches(lengths, len(lengths), budget)
        by_length: dict[int, list[int]] = {}
        for j, length in enumerate(lengths):
            by_length.setdefault(length, []).append(j)
        batches = [members[start:start + step] for length, members in sorted(by_length.items())
                   for step in [self.batch_size or max(1, COPY_TOKENS // length)]
                   for start in range(0, len(members), step)]
        batches.sort(key=lambda batch: -len(batch) * lengths[batch[0]])
        return batches

    def _forward(self, keys: list[tuple[tuple[int, ...], int]], copy_of: np.ndarray, read_token: np.ndarray):
        """log p of each read (`copy_of[r]`'s copy at its scored position, token `read_token[r]`), float32.

        Index arrays are built once per call and sent to the device in one transfer each; each pass gathers its
        reads on the device, and the values come back in one transfer at the end (no wait between passes)."""
        import torch

        if not keys:
            return np.zeros(0, dtype=np.float32)
        device = self.scorer.device
        batches = self._batches([len(copy) for copy, _ in keys])
        packed = [pad_rows([keys[j][0] for j in batch], self.scorer.pad_id) for batch in batches]
        batch_of = np.empty(len(keys), dtype=np.int64)
        row_of = np.empty(len(keys), dtype=np.int64)
        for b, batch in enumerate(batches):
            batch_of[batch] = b
            row_of[batch] = np.arange(len(batch))
        order = np.argsort(batch_of[copy_of], kind="stable")  # reads, pass by pass
        read_ends = np.cumsum(np.bincount(batch_of[copy_of], minlength=len(batches))).tolist()
        token_ends = np.cumsum([array.size for array, _ in packed]).tolist()
        row_ends = np.cumsum([len(batch) for batch in batches]).tolist()

        ids = to_device(np.concatenate([array.ravel() for array, _ in packed]), device)
        padded = any(k is not None for _, k in packed)
        keep = to_device(np.concatenate([(np.ones(array.shape, dtype=bool) if k is None else k).ravel()
                                         for array, k in packed]).astype(np.int64), device) if padded else None
        positions = to_device(np.array([keys[j][1] for batch in batches for j in batch], dtype=np.int64), device)
        rows = to_device(row_of[copy_of[order]], device)
        tokens = to_device(read_token[order], device)

        def run(b: int):
            """The reads of pass `b`, on the device."""
            with torch.inference_mode():
                t0, t1 = (token_ends[b - 1] if b else 0), token_ends[b]
                r0, r1 = (row_ends[b - 1] if b else 0), row_ends[b]
                shape = packed[b][0].shape
                attention = None if packed[b][1] is None else keep[t0:t1].view(shape)
                logits = self.scorer._mask_logits(ids[t0:t1].view(shape), attention, positions[r0:r1])
                logp = torch.log_softmax(logits.float(), dim=-1)
                a, z = (read_ends[b - 1] if b else 0), read_ends[b]
                return logp[rows[a:z], tokens[a:z]]

        values = torch.cat(list(map_passes(run, range(len(batches)), device))).cpu().numpy()
        flat = np.empty(len(copy_of), dtype=np.float32)
        flat[order] = values
        return flat

    def score(self, statements: Sequence[Statement], reduction: str = "sum") -> list[float]:
        check_options(self.pll, reduction)
        return [reduce(row, reduction) for row in self.token_scores(statements)]


def _answer_tokens(enc, span: tuple[int, int]) -> list[int]:
    """Token positions covering the answer's characters: first to last token met in the span (lm-pub-quiz)."""
    start, end = span
    first = next((t for c in range(start, end) if (t := enc.char_to_token(c)) is not None), None)
    last = next((t for c in reversed(range(start, end)) if (t := enc.char_to_token(c)) is not None), None)
    if first is None or last is None:
        return []
    return list(range(first, last + 1))


class CausalStatementScorer:
    """Summed log-probability of statements under a causal LM, via `lm.causal.CausalLMScorer`'s token tree."""

    def __init__(self, scorer) -> None:
        self.scorer = scorer

    def score_groups(self, groups: Sequence[Sequence[Statement]], reduction: str = "sum") -> list[list[float]]:
        """Scores of each group's statements; statements of one group share one token tree (put the statements
        that share leading text, e.g. one relation and template, in one group)."""
        check_options("original", reduction)
        texts = [[s.text for s in g] for g in groups]
        scored = self.scorer.loglik_groups(texts)
        if reduction == "sum":
            return [[ll for ll, _ in row] for row in scored]
        return [[ll / n if n else float("nan") for ll, n in row] for row in scored]

    def score(self, statements: Sequence[Statement], reduction: str = "sum") -> list[float]:
        return self.score_groups([statements], reduction)[0]


class Seq2SeqStatementScorer:
    """Log-likelihood of statements as an encoder-decoder LM's decoder writes them from an empty input.

    The encoder reads the empty text once (its output is the same for every statement); the decoder is
    teacher-forced on the statement's tokens (no special tokens) and each token's log-probability summed,
    or averaged under `mean`.
    """

    def __init__(self, model, tokenizer, *, name: str = "seq2seq", batch_size: int = 32) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.batch_size = max(1, int(batch_size))
        self.device = next(model.parameters()).device

    def token_scores(self, statements: Sequence[Statement]) -> list[list[float]]:
        import torch

        ids = self.tokenizer([s.text for s in statements], add_special_tokens=False)["input_ids"]
        source = self.tokenizer([""], return_tensors="pt")["input_ids"].to(self.device)
        start = self.model.config.decoder_start_token_id
        out: list[list[float]] = [[] for _ in statements]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        with torch.inference_mode():
            encoded = self.model.get_encoder()(input_ids=source).last_hidden_state
            for at in range(0, len(order), self.batch_size):
                batch = [i for i in order[at:at + self.batch_size] if ids[i]]
                if not batch:
                    continue
                width = max(len(ids[i]) for i in batch)
                labels = torch.zeros((len(batch), width), dtype=torch.long)
                keep = torch.zeros((len(batch), width), dtype=torch.bool)
                for j, i in enumerate(batch):
                    labels[j, :len(ids[i])] = torch.tensor(ids[i])
                    keep[j, :len(ids[i])] = True
                decoder_in = torch.cat([torch.full((len(batch), 1), start, dtype=torch.long), labels[:, :-1]], dim=1)
                logits = self.model(encoder_outputs=(encoded.expand(len(batch), -1, -1),),
                                    decoder_input_ids=decoder_in.to(self.device)).logits.float()
                logp = torch.log_softmax(logits, dim=-1).gather(-1, labels.to(self.device)[..., None])[..., 0].cpu()
                for j, i in enumerate(batch):
                    out[i] = logp[j, keep[j]].tolist()
        bad = [statements[i].text for i, row in enumerate(out) if not np.isfinite(row).all()]
        if bad:
            from lm.finite import NonFiniteScores

            raise NonFiniteScores(self.name, bad, len(statements))
        return out

    def score(self, statements: Sequence[Statement], reduction: str = "sum") -> list[float]:
        check_options("original", reduction)
        return [reduce(row, reduction) for row in self.token_scores(statements)]
