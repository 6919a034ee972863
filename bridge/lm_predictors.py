"""Factories for language-model predictors, and the resolver that claims model names and paths.

Claimed names: a local model directory (kind read from its config.json), a path that should be
one (reported clearly when it is not), and Hugging Face ids (`bert-base-cased`, `gpt2`,
`org/name`). Options come from `--set [NAME.]KEY=VALUE`:

  candidates=common|full|relation   masked LMs: LAMA common vocabulary (default), whole vocabulary,
                               or each relation's own objects
  vocab_file=PATH              candidate words, one per line (masked and causal LMs)
  normalize=full|candidates    masked LMs: log-softmax over the whole vocabulary (default, LAMA)
                               or over the candidates only
  max_length=N                 truncate prompts (with context) to N tokens
  cache=on|off                 the on-disk result cache under the cache dir (default on)
`PredictorContext.compat == "lama"` (`--compat lama`) makes masked LMs tokenize around the mask
as LAMA's BERT connector does (WordPiece models only; see `lm.masked`).
"""

from __future__ import annotations

import re
from pathlib import Path

from bridge.options import Option, declares
from bridge.registry import Factory, PredictorContext
from eval.errors import ConfigError, KbcError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
VOCABS = ("common", "full", "relation")


def resolve_model(name: str) -> Factory | None:
    """A factory for `name` when it names a model (dir or hub id); None when it is not ours."""
    from lm.loading import kind_from_config, kind_from_name, local_config

    config = local_config(name)
    if config is not None:
        kind = kind_from_config(config)
        if kind is None:
            return _fails(f"{name}: config.json names neither a masked nor a causal LM "
                          f"(architectures={config.get('architectures')}, model_type={config.get('model_type')!r})")
        return make_masked if kind == "masked" else make_causal
    if name.startswith(("/", "./", "../", "~")) or Path(name).expanduser().exists():
        return _fails(f"{name}: not a model directory (no config.json there); pass the folder that holds "
                      "config.json, the weights and the tokenizer files")
    if HUB_ID.match(name):
        kind = kind_from_name(name)
        if kind == "masked":
            return make_masked
        if kind == "causal":
            return make_causal
        if "/" in name:
            return make_masked
    return None


def _fails(message: str) -> Factory:
    raise KbcError(message)


CACHE_OPTION = Option("cache", "on-disk result cache (never changes answers)", "choice", ("on", "off"), "on",
                      identity=False)
VOCAB_FILE = Option("vocab_file", "candidate answers, one word per line (instead of the default set)", "path")
MASKED_OPTIONS = (
    Option("candidates", "answer space: LAMA common vocabulary, whole vocabulary, or each relation's objects",
           "choice", VOCABS, "common"),
    VOCAB_FILE,
    Option("normalize", "log-softmax over the whole vocabulary (LAMA) or over the candidates only", "choice",
           ("full", "candidates"), "full"),
    Option("max_length", "truncate prompts (with context) to this many tokens", "int", minimum=8),
    CACHE_OPTION,
)


def _cache(ctx: PredictorContext):
    from lm.cache import ResultCache

    value = ctx.options.get("cache", "on")
    if value not in ("on", "off"):
        raise ConfigError(f"--set cache={value}: use on or off")
    return ResultCache(Path(ctx.cache_dir) / "lm" / "results.sqlite") if value == "on" else None


def _int_option(ctx: PredictorContext, key: str) -> int | None:
    value = ctx.options.get(key)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise ConfigError(f"--set {key}={value}: expected an integer") from exc


@declares(*MASKED_OPTIONS, settings=("dtype",))
def make_masked(name: str, ctx: PredictorContext):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, full_vocab, read_vocab_file, token_labels

    vocab = ctx.options.get("candidates", "common")
    if vocab not in VOCABS:
        raise ConfigError(f"--set candidates={vocab}: use one of {', '.join(VOCABS)}")
    normalize = ctx.options.get("normalize", "full")
    loaded = load(name, "masked", ctx.device, ctx.dtype)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=ctx.dtype,
                            batch_size=ctx.batch_size, normalize=normalize, cache=_cache(ctx),
                            max_length=_int_option(ctx, "max_length"), compat=getattr(ctx, "compat", None))
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    extra = {}
    if ctx.options.get("vocab_file"):
        path = Path(ctx.options["vocab_file"]).expanduser()
        space = AnswerSpace(labels, fixed=from_words(labels, read_vocab_file(path), f"file:{path.name}"))
        extra["vocab_file"] = str(path)
    elif vocab == "common":
        path = common_vocab_path(ctx.data_dir, labels.uncased)
        space = AnswerSpace(labels, fixed=from_words(labels, read_vocab_file(path), f"common:{path.name}"))
    elif vocab == "full":
        space = AnswerSpace(labels, fixed=full_vocab(labels))
    else:
        space = AnswerSpace(labels, per_relation=_objects(ctx))
    return MaskedLMPredictor(name, scorer, space, extra)


@declares(VOCAB_FILE, CACHE_OPTION, settings=("dtype",))
def make_causal(name: str, ctx: PredictorContext):
    from lm.causal import CausalLMScorer, CausalTypedPredictor
    from lm.loading import load
    from lm.vocab import read_vocab_file

    loaded = load(name, "causal", ctx.device, ctx.dtype)
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=ctx.dtype,
                            batch_size=ctx.batch_size, cache=_cache(ctx))
    if ctx.options.get("vocab_file"):
        words = read_vocab_file(ctx.options["vocab_file"])
        candidates = {rel: words for rel in ctx.corpus.relations}
        source = f"file:{ctx.options['vocab_file']}"
    else:
        candidates, source = _objects(ctx), "objects of the relation in the corpus"
    return CausalTypedPredictor(name, scorer, candidates, source)


def _objects(ctx: PredictorContext) -> dict[str, list[str]]:
    """Each relation's distinct object labels in corpus order (the typed-querying answer space)."""
    out: dict[str, list[str]] = {rel: [] for rel in ctx.corpus.relations}
    for fact in ctx.corpus.facts:
        out.setdefault(fact.relation, []).append(fact.object.label)
    return {rel: list(dict.fromkeys(objs)) for rel, objs in out.items()}
