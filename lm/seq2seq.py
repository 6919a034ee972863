"""Span filling with sequence-to-sequence LMs (T5 and kin), as the coherency paper probes T5 (§3.2).

The asked slot becomes the first sentinel token (`<extra_id_0>`); the model writes the span
that fills it, e.g. `<pad><extra_id_0> Florence<extra_id_1></s>`. Beam search (10 beams by
default, the paper's setting) returns one span per beam, so answers may be several tokens
("Ulaanbaatar Province"). The span is the text after `<extra_id_0>` up to the next sentinel or
the end (models trained with salient span masking write it without the leading sentinel), cut
of surrounding spaces and one trailing full stop, as the paper's code cleans it. Beams that
yield the same label count once, at their best position. Score: the beam's length-normalised
log-probability. Answers are a list (`ranks = "list"`): the runner matches labels exactly.

A model whose tokenizer has no sentinel tokens (BART's `<mask>` is not one) cannot be asked this
way and is refused with one line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from eval.errors import KbcError
from eval.set_rules import LOG_NORM, log_norm
from eval.types import Answer, Prediction, Query
from lm.finite import NonFiniteScores
from lm.heap import keep_batch_memory

SENTINEL = "<extra_id_{}>"
MAX_SENTINELS = 100


def sentinel_ids(tokenizer) -> list[int]:
    """Ids of `<extra_id_0>`, `<extra_id_1>`, ... that the tokenizer knows, in order (stops at the first gap)."""
    ids = []
    unk = tokenizer.unk_token_id
    for i in range(MAX_SENTINELS):
        tid = tokenizer.convert_tokens_to_ids(SENTINEL.format(i))
        if tid is None or tid == unk:
            break
        ids.append(int(tid))
    return ids


def clean_span(text: str) -> str:
    text = text.strip()
    if len(text) > 1 and text.endswith("."):
        text = text[:-1].rstrip()
    return re.sub(r"\s+", " ", text)


class Seq2SeqSpanPredictor:
    """Fills the asked slot with the spans beam search writes for the first sentinel."""

    ranks = "list"  # generated spans, not scores over a candidate set
    slots = ("object", "subject")

    def __init__(self, name: str, model, tokenizer, *, fingerprint: str, dtype: str = "float32", beams: int = 10,
                 max_new_tokens: int = 24, batch_size: int = 8) -> None:
        sentinels = sentinel_ids(tokenizer)
        if not sentinels:
            raise KbcError(f"{name}: this seq2seq model's tokenizer ({type(tokenizer).__name__}) has no sentinel "
                           f"tokens ({SENTINEL.format(0)}), so it cannot fill a slot; use a T5-style model")
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.fingerprint = fingerprint
        self.dtype = dtype
        self.beams = max(1, int(beams))
        self.max_new_tokens = max(1, int(max_new_tokens))
        self.batch_size = max(1, int(batch_size))
        self.mask = SENTINEL.format(0)
        self.first = sentinels[0]
        self.stops = set(sentinels[1:]) | {i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None}
        self.device = next(model.parameters()).device
        self.generate_calls = 0
        if self.device.type == "cpu":  # each step's [batch x beams, vocabulary] float32 logits and log-probs, and the
            # log-probs of every step kept for the beams' scores, freed together when the batch is done: reused
            vocab = getattr(getattr(model, "config", None), "vocab_size", None) or len(tokenizer)
            keep_batch_memory(self.batch_size * self.beams * vocab * 4, self.max_new_tokens + 4)

    def describe(self) -> dict:
        return {"kind": "seq2seq-span", "model": self.name, "fingerprint": self.fingerprint, "dtype": self.dtype,
                "device": str(self.device), "beams": self.beams, "max_new_tokens": self.max_new_tokens,
                "mask": self.mask, "ranks": self.ranks, "slots": list(self.slots),
                "answers": "distinct spans of the beams, best first"}

    def prompt(self, query: Query) -> str:
        text = query.text(self.mask)
        return f"{text} {query.context}" if query.context else text

    def span(self, ids: Sequence[int]) -> str:
        """The text a generated sequence puts at the first sentinel."""
        ids = list(ids)
        if ids and ids[0] == self.model.config.decoder_start_token_id:
            ids = ids[1:]
        if self.first in ids:
            ids = ids[ids.index(self.first) + 1:]
        end = next((k for k, t in enumerate(ids) if t in self.stops), len(ids))
        return clean_span(self.tokenizer.decode(ids[:end], skip_special_tokens=True))

    def generate(self, prompts: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """Prompt -> (span, beam score) per beam, best first; identical prompts once, batched by length."""
        import torch

        unique = list(dict.fromkeys(prompts))
        enc = self.tokenizer(unique, add_special_tokens=True)["input_ids"]
        order = sorted(range(len(unique)), key=lambda i: len(enc[i]))
        out: dict[str, list[tuple[str, float]]] = {}
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                width = max(len(enc[i]) for i in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for j, i in enumerate(batch):
                    input_ids[j, :len(enc[i])] = torch.tensor(enc[i])
                    attention[j, :len(enc[i])] = 1
                self.generate_calls += 1
                result = self.model.generate(
                    input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device),
                    num_beams=self.beams, num_return_sequences=self.beams, max_new_tokens=self.max_new_tokens,
                    do_sample=False, output_scores=True, return_dict_in_generate=True)
                seqs = result.sequences.cpu().tolist()
                scores = result.sequences_scores.float().cpu().tolist()
                bad = [unique[i] for j, i in enumerate(batch)
                       if not all(math.isfinite(scores[r]) for r in range(j * self.beams, (j + 1) * self.beams))]
                if bad:
                    raise NonFiniteScores(self.name, bad, len(batch))
                for j, i in enumerate(batch):
                    rows = range(j * self.beams, (j + 1) * self.beams)
                    out[unique[i]] = [(self.span(seqs[r]), float(scores[r])) for r in rows]
        return out

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        prompts = [self.prompt(q) for q in queries]
        try:
            beams = self.generate(prompts)
        except NonFiniteScores as exc:
            asked = next((q for q, p in zip(queries, prompts) if p in exc.bad), None)
            raise (exc if asked is None else exc.for_fact(f"{asked.fact_uid} ({asked.relation})")) from None
        out = []
        for q, prompt in zip(queries, prompts):
            seen: dict[str, Answer] = {}
            for label, score in beams[prompt]:
                if label and label not in seen:
                    seen[label] = Answer(label, score)
            answers = tuple(seen.values())[:depth]
            extra = {"beams": [[s, round(v, 6)] for s, v in beams[prompt]]}
            if seen:  # beam scores are no distribution over the spans: set rules read their softmax over them
                extra[LOG_NORM] = log_norm([a.score for a in seen.values()])
            out.append(Prediction(q.uid, answers, False, extra))
        return out
