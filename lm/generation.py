"""Text written by a local Hugging Face model with `generate`: the second way an LM answers, beside ranking.

Greedy decoding by default (`beams` > 1: beam search; `temperature` > 0: sampling, seeded per prompt so a
rerun writes the same text). Causal LMs are fed left-padded batches and only the new tokens are decoded;
seq2seq LMs decode their output. Chat turns are rendered with the tokenizer's chat template (the text
rendered is what the model reads). Stop sequences cut the text at the first one written. Identical prompts
are generated once. A prompt and answer must fit the model's positions (a causal LM's together, a BART-like
seq2seq model's each): a longer one is refused with one line before anything is generated (the model would fail
on an index out of range).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from eval.errors import ConfigError
from lm.heap import keep_batch_memory

# the longest answer written by default, local or served: LM-KBC's baseline writes 64 tokens, room for a list of
# objects; one answer stops at its first line (`eval.answer_text`), so a longer cap costs it nothing
MAX_NEW_TOKENS = 64


@dataclass(frozen=True)
class GenerationParams:
    """What changes a generation (part of each cached response's key)."""

    max_new_tokens: int = MAX_NEW_TOKENS
    beams: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0

    def describe(self) -> dict:
        return {"max_new_tokens": self.max_new_tokens, "beams": self.beams, "temperature": self.temperature,
                "top_p": self.top_p, "stop": list(self.stop), "seed": self.seed}


@dataclass(frozen=True)
class Generated:
    """One response: the text (cut at the first stop sequence), the tokens it cost and, from a server that sends
    one, its `system_fingerprint` (what it says of the weights and settings that answered; never cached); read
    from the response cache, `run`: the run that asked it (its cache scope), where it said."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    system_fingerprint: str | None = field(default=None, compare=False)
    run: str | None = field(default=None, compare=False)
    # False where the server sent no token count that can be read (its tokens count 0): said in the counts line
    usage_reported: bool = field(default=True, compare=False)
    # True where generation stopped at `max_new_tokens` before its end (a server's `finish_reason: "length"`; a local
    # model's without its end-of-text token): an answer cut mid-way, said in the counts line
    cut: bool = field(default=False, compare=False)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """`text` up to the first stop sequence it holds (OpenAI servers leave the stop sequence out too)."""
    ends = [text.find(s) for s in stop if s and s in text]
    return text[:min(ends)] if ends else text


def prompt_seed(seed: int, prompt: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}\0{prompt}".encode()).digest()[:4], "big")


class LocalGenerator:
    """Batched `generate` on one loaded model (causal or seq2seq) on its device."""

    def __init__(self, model, tokenizer, *, fingerprint: str, name: str, seq2seq: bool, batch_size: int = 8) -> None:
        self.model, self.tokenizer, self.fingerprint, self.name = model, tokenizer, fingerprint, name
        self.seq2seq = seq2seq
        self.batch_size = max(1, int(batch_size))
        self.device = next(model.parameters()).device
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if self.pad is None:
            raise ConfigError(f"{name}: its tokenizer has neither a pad nor an end-of-text token; generation cannot "
                              "batch it")

    @property
    def _ends(self) -> set[int]:
        """The tokens that end a generation: the tokenizer's end-of-text and the model's generation config's (a chat
        model's end of turn)."""
        ends = {self.tokenizer.eos_token_id}
        config = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ends.update(config if isinstance(config, list) else [config])
        return {e for e in ends if isinstance(e, int)}

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def render(self, messages: Sequence[dict]) -> str:
        """Chat turns as the text the model reads (its chat template, with the assistant's turn opened)."""
        if not self.has_chat_template:
            raise ConfigError(f"{self.name}: its tokenizer has no chat template; use --set chat=off")
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)

    @property
    def context(self) -> int | None:
        """Positions the model has (GPT-2: 1,024) for a causal LM's prompt and answer together, for a seq2seq
        model's prompt and for its answer each (BART's learned positions; T5's relative ones name no limit); None:
        no limit."""
        from lm.loading import max_positions

        if not self.seq2seq:
            return max_positions(self.model)
        value = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    def _encode(self, prompts: Sequence[str]) -> list[list[int]]:
        special = self.seq2seq or not self.has_chat_template  # a rendered chat template holds its own specials
        return [self.tokenizer(p, add_special_tokens=special)["input_ids"] for p in prompts]

    def check_fits(self, prompts: Sequence[str], params: GenerationParams) -> None:
        """Refuse, before any generation, a prompt whose tokens and `max_new_tokens` exceed the model's context."""
        self._fits(self._encode(list(dict.fromkeys(prompts))), params)

    def _fits(self, enc: Sequence[Sequence[int]], params: GenerationParams) -> None:
        limit, new = self.context, params.max_new_tokens
        longest = max(map(len, enc), default=0)
        if limit is None:
            return
        if self.seq2seq:
            if max(longest, new) <= limit:
                return
            what = (f"a prompt of {longest} tokens or max_new_tokens={new} is longer than the model's context of "
                    f"{limit} tokens (its encoder's and its decoder's each)")
        else:
            if longest + new <= limit:
                return
            what = (f"a prompt of {longest} tokens and max_new_tokens={new} are longer than the model's context of "
                    f"{limit} tokens")
        raise ConfigError(f"{self.name}: {what}; use fewer shots, a shorter prompt or a smaller max_new_tokens")

    def generate(self, prompts: Sequence[str], params: GenerationParams,
                 kept: Callable[[str, Generated], None] | None = None,
                 handed: Callable[[Sequence[str]], None] | None = None) -> dict[str, Generated]:
        """Prompt -> its response; identical prompts once, batched by length. `handed(prompts)` is told of each
        batch as it goes to the model, `kept(prompt, response)` of each response as its batch is done: a stop loses
        the batch being generated only, and the caller knows which prompts the model never saw."""
        import torch

        unique = list(dict.fromkeys(prompts))
        enc = self._encode(unique)
        self._fits(enc, params)
        order = sorted(range(len(unique)), key=lambda i: len(enc[i]))
        sampled = params.temperature > 0
        per_prompt = sampled  # sampling draws per prompt alone, so that a text never depends on its batch
        size = 1 if per_prompt else self.batch_size
        if self.device.type == "cpu":  # each step's [batch x beams, vocabulary] float32 logits and log-probs reuse
            vocab = getattr(getattr(self.model, "config", None), "vocab_size", None) or len(self.tokenizer)
            keep_batch_memory(size * params.beams * vocab * 4, 4)
        out: dict[str, Generated] = {}
        ends = self._ends
        with torch.inference_mode():
            for start in range(0, len(order), size):
                batch = order[start:start + size]
                width = max(len(enc[i]) for i in batch)
                ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for j, i in enumerate(batch):
                    n = len(enc[i])
                    if self.seq2seq:  # the encoder reads right-padded input
                        ids[j, :n], mask[j, :n] = torch.tensor(enc[i]), 1
                    else:  # a causal LM continues from the last position: pad on the left
                        ids[j, width - n:], mask[j, width - n:] = torch.tensor(enc[i]), 1
                kwargs = {"max_new_tokens": params.max_new_tokens, "num_beams": params.beams, "do_sample": sampled,
                          "pad_token_id": self.pad}
                if sampled:
                    kwargs.update(temperature=params.temperature, top_p=params.top_p)
                    torch.manual_seed(prompt_seed(params.seed, unique[batch[0]]))
                if handed is not None:
                    handed([unique[i] for i in batch])
                result = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                             **kwargs)
                rows = result.cpu().tolist()
                for j, i in enumerate(batch):
                    new = rows[j] if self.seq2seq else rows[j][width:]
                    used = _until_end(new, self.tokenizer.eos_token_id, self.pad, self.seq2seq)
                    text = self.tokenizer.decode(used, skip_special_tokens=True)
                    answered = cut_at_stop(text, params.stop)
                    # a stop sequence ends an answer as the server's does: only one that ran on is cut
                    cut = answered == text and _ran_out(new, ends, params.max_new_tokens, self.seq2seq)
                    out[unique[i]] = Generated(answered, len(enc[i]), len(used), cut=cut)
                for i in batch if kept is not None else ():
                    kept(unique[i], out[unique[i]])
        return out


def _until_end(ids: list[int], eos: int | None, pad: int, seq2seq: bool) -> list[int]:
    """The generated tokens before the end-of-text token (and without a seq2seq decoder's start token)."""
    if seq2seq and ids and ids[0] == pad:
        ids = ids[1:]
    end = next((k for k, t in enumerate(ids) if t == eos), len(ids))
    return ids[:end]


def _ran_out(ids: list[int], ends: set[int], max_new_tokens: int, seq2seq: bool) -> bool:
    """Whether a generation spent all its `max_new_tokens` without writing a token that ends it."""
    if seq2seq and ids:  # the decoder's start token is no generated token
        ids = ids[1:]
    return len(ids) >= max_new_tokens and not ends.intersection(ids)
