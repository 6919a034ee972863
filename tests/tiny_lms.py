"""Tiny randomly initialised BERT / RoBERTa / GPT-2 / T5 models with the *real* tokenizers, saved as model dirs.

Needs only torch and transformers, so that benchmarks build them too; the tests reach them through
`lm_fixtures` (its session fixture `tiny_models`). Weights use a wide initializer (0.2) so that scores spread
out instead of being near-uniform, which makes rank comparisons meaningful. The tokenizer vocabularies come
from `../shared/data/tokenizers/` (see its SOURCES.md); the models are never downloaded.
"""

from __future__ import annotations

from pathlib import Path

TOKENIZERS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tokenizers"
KINDS = ("bert-cased", "bert-uncased", "roberta", "gpt2")
SIZE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48,
        "initializer_range": 0.2}


def tokenizer_for(kind: str):
    """The real tokenizer of bert-base-cased / bert-base-uncased / roberta-base / gpt2."""
    from tokenizers import AddedToken
    from transformers import BertTokenizer, GPT2Tokenizer, RobertaTokenizer

    if not TOKENIZERS.is_dir():
        raise FileNotFoundError(f"tokenizer files not found at {TOKENIZERS} (see ../shared/data/tokenizers/SOURCES.md)")
    if kind == "bert-cased":
        return BertTokenizer.from_pretrained(TOKENIZERS / "bert-base-cased", do_lower_case=False)
    if kind == "bert-uncased":
        return BertTokenizer.from_pretrained(TOKENIZERS / "bert-base-uncased", do_lower_case=True)
    if kind == "roberta":
        # roberta-base's published tokenizer strips the space before <mask> into the mask token
        return RobertaTokenizer.from_pretrained(TOKENIZERS / "roberta-base",
                                                mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))
    if kind == "gpt2":
        return GPT2Tokenizer.from_pretrained(TOKENIZERS / "gpt2")
    raise ValueError(f"unknown tiny model kind {kind!r}; one of {KINDS}")


def build_model(kind: str, tokenizer, seed: int = 0, **overrides):
    import torch
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(seed)
    if kind.startswith("bert"):
        config = BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **{**SIZE, **overrides})
        return BertForMaskedLM(config)
    if kind == "roberta":
        config = RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, bos_token_id=0,
                               eos_token_id=2, max_position_embeddings=130, type_vocab_size=1,
                               **{**SIZE, **overrides})
        return RobertaForMaskedLM(config)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=len(tokenizer), n_embd=SIZE["hidden_size"], n_layer=2, n_head=2,
                            n_positions=256, initializer_range=0.2, bos_token_id=tokenizer.bos_token_id,
                            eos_token_id=tokenizer.eos_token_id, **overrides)
        return GPT2LMHeadModel(config)
    raise ValueError(f"unknown tiny model kind {kind!r}; one of {KINDS}")


def tiny_model_dir(kind: str, tmp_path: Path, seed: int = 0, **overrides) -> Path:
    """Save a tiny random `kind` model with its real tokenizer under tmp_path/<kind>; return the dir."""
    out = Path(tmp_path) / f"tiny-{kind}-{seed}"
    if (out / "config.json").is_file():
        return out
    tokenizer = tokenizer_for(kind)
    model = build_model(kind, tokenizer, seed, **overrides)
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_t5_dir(root, extra_ids: int = 125):
    import torch
    from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

    out = root / f"tiny-t5-{extra_ids}"
    if (out / "config.json").is_file():
        return out
    tokenizer = ByT5Tokenizer(extra_ids=extra_ids)
    torch.manual_seed(0)
    config = T5Config(vocab_size=384, d_model=32, d_ff=64, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, initializer_factor=2.0)
    T5ForConditionalGeneration(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
