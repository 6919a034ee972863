"""Factories for language-model predictors, and the resolver that claims model names and paths.

Claimed names: a local model directory (kind read from its config.json: masked, causal or
seq2seq), a path that should be one (reported clearly when it is not), and Hugging Face ids
(`bert-base-cased`, `gpt2`, `t5-base`, `org/name`). Options come from `--set [NAME.]KEY=VALUE`:

  candidates=common|full|relation   masked LMs: LAMA common vocabulary (default), whole vocabulary,
                               or each relation's own objects
  vocab_file=PATH              candidate words, one per line (masked and causal LMs)
  normalize=full|candidates    masked LMs: log-softmax over the whole vocabulary (default, LAMA)
                               or over the candidates only
  max_length=N                 truncate prompts (with context) to N tokens
  cache=on|off                 the on-disk result cache under the cache dir (default on)
  prompt=lama|extended         causal LMs: LAMA templates, or the coherency paper's templates with the
                               asked entity at the very end (prompt_file=PATH to give that file)
  beams=N, max_new_tokens=N    seq2seq LMs (T5): beam search width (default 10) and span length
  answer=rank|generate         causal and seq2seq LMs: rank candidates (default) or write the answer with
                               `generate` (`bridge.predictors.generation`: prompt=lama|question|lmkbc2024, shots=K)
  set=threshold:X|top:K|threshold-tuned   set-valued answers (`kbc run lmkbc`, `kbc run lama --answers set`):
                               masked LMs cut their probabilities, causal and seq2seq LMs the softmax of their
                               scores over the answers they rank (`eval.set_answers`)
  scoring=slot|statement       statement: rank each relation's answer space by the score of the whole
                               filled statement (`lm.statement`; the default on BEAR corpora)
  pll=VARIANT, reduction=sum|mean   statement scoring: masked LMs' pseudo-log-likelihood variant (masked
                               LMs only: causal and seq2seq LMs refuse it) and the reduction of token scores
Subject queries (coherency) use the same rules: `candidates=relation` and causal typed querying
rank each relation's subjects.
`PredictorContext.compat == "lama"` (`--compat lama`) makes masked LMs tokenize around the mask
as LAMA's BERT connector does (WordPiece models only; see `lm.masked`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from bridge.predictors.generation import GEN_PROMPT, GENERATION_OPTIONS
from bridge.predictors.registry import Factory, PredictorContext
from bridge.run.options import SET_OPTION, Option, declares, number_option
from eval.errors import ConfigError, DataError, KbcError
from lm.generation import MAX_NEW_TOKENS

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
VOCABS = ("common", "full", "relation")


def resolve_model(name: str) -> Factory | None:
    """A factory for `name` when it names a model (dir or hub id); None when it is not ours."""
    from lm.loading import kind_from_config, kind_from_name, local_config

    config = local_config(name)
    if config is not None:
        kind = kind_from_config(config)
        if kind is None:
            raise KbcError(f"{name}: config.json names neither a masked nor a causal LM nor a seq2seq LM "
                           f"(architectures={config.get('architectures')}, model_type={config.get('model_type')!r})")
        return {"masked": make_masked, "seq2seq": make_seq2seq}.get(kind, make_causal)
    if name.startswith(("/", "./", "../", "~")) or Path(name).expanduser().exists():
        raise DataError(f"{name}: not a model directory (no config.json there); pass the folder that holds "
                       "config.json, the weights and the tokenizer files")
    if HUB_ID.match(name):
        kind = kind_from_name(name)
        if kind == "masked":
            return make_masked
        if kind == "causal":
            return make_causal
        if kind == "seq2seq":
            return make_seq2seq
        if "/" in name:
            return make_masked
    return None


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


PLL_OPTION = Option("pll", "statement scoring of masked LMs: lm-pub-quiz's pseudo-log-likelihood variant", "choice",
                    ("within_word_l2r", "original", "sentence_l2r", "answer_l2r+word_l2r"), "within_word_l2r")
# causal and encoder-decoder LMs score a statement's tokens left to right: a PLL variant would change nothing, so
# only masked LMs declare `pll` (a causal model's `--set NAME.pll=...` is refused, not recorded as if it applied)
SCORING_OPTION = Option("scoring", "slot: the answer at the mask (one token) or typed sentences; statement: every "
                        "option put in the template and the whole statement scored (default for BEAR, else slot)",
                        "choice", ("slot", "statement"))
REDUCTION_OPTION = Option("reduction", "statement scoring: sum or mean of the token scores", "choice", ("sum", "mean"),
                          "sum")
STATEMENT_OPTIONS = (SCORING_OPTION, REDUCTION_OPTION)  # every LM kind's; masked LMs add PLL_OPTION


def _statement(ctx: PredictorContext) -> bool:
    """Statement scoring when asked, or by default on BEAR corpora (closed answer spaces)."""
    from eval.bear import BEAR_CORPORA

    value = ctx.options.get("scoring")
    return value == "statement" if value else ctx.corpus.name in BEAR_CORPORA


def _statement_predictor(name: str, ctx: PredictorContext, scorer, extra: dict | None = None):
    """Each relation's answer space (the corpus's own, e.g. BEAR's, else the relation's objects: a typed space)."""
    from eval.answer_space import has_closed_spaces
    from lm.statement_predictor import StatementPredictor

    rels = ctx.corpus.relations
    subjects = None  # a closed answer space has no subject counterpart: subject queries stay unanswered
    if has_closed_spaces(rels):
        answers = {rel: [e.label for e in r.answer_space] for rel, r in rels.items()}
        source = "the answer space of each relation (the corpus's)"
    else:
        answers, subjects = _objects(ctx), _objects(ctx, "subject")
        source = "entities of each relation in the corpus (objects, or subjects for subject queries: typed)"
    return StatementPredictor(name, scorer, answers, reduction=ctx.options.get("reduction", "sum"),
                              compat=ctx.compat if ctx.compat == "lm-pub-quiz" else None, source=source,
                              describe_extra=extra, subjects=subjects)


SLOT_ONLY = ("candidates", "vocab_file", "normalize", "prompt_file")  # what ranks one answer at the slot
STATEMENT_ONLY = ("pll", "reduction")  # what scores whole statements


def check_scoring_options(name: str, options: dict[str, str], corpora: list[str]) -> None:
    """An option of one way of answering given to a predictor that answers every corpus of the run another way would
    be recorded as if it applied yet change nothing, so it is refused (`plan_predictors`, before any data is read)."""
    from eval.bear import BEAR_CORPORA

    def refuse(keys: tuple[str, ...], applies: str, fix: str) -> None:
        for key in keys:
            if key in options:
                raise ConfigError(f"--set {name}.{key}={options[key]} applies to {applies} only; {fix} or drop it")

    if options.get("answer") == "generate":
        refuse(("scoring", *STATEMENT_ONLY), "ranking (answer=rank)", f"set --set {name}.answer=rank")
        return
    scoring = options.get("scoring")
    statement = [scoring == "statement" if scoring else corpus in BEAR_CORPORA for corpus in corpora]
    if not any(statement):
        refuse(STATEMENT_ONLY, "statement scoring (scoring=statement, the default on BEAR corpora)",
               f"add --set {name}.scoring=statement")
    elif all(statement):
        refuse(SLOT_ONLY, "slot scoring (scoring=slot, the default except on BEAR corpora)",
               f"add --set {name}.scoring=slot")


def _cache(ctx: PredictorContext):
    from lm.cache import ResultCache

    value = ctx.options.get("cache", "on")
    if value not in ("on", "off"):
        raise ConfigError(f"--set cache={value}: use on or off")
    return ResultCache(Path(ctx.cache_dir) / "lm" / "results.sqlite") if value == "on" else None


# every option of a masked LM, however it is named (a path, a hub id, or the registry's `bert` with model=)
MASKED_LM_OPTIONS = (*MASKED_OPTIONS, SCORING_OPTION, PLL_OPTION, REDUCTION_OPTION, SET_OPTION)


@declares(*MASKED_LM_OPTIONS, settings=("dtype",))
def make_masked(name: str, ctx: PredictorContext):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, full_vocab, read_vocab_file, token_labels

    vocab = ctx.options.get("candidates", "common")
    if vocab not in VOCABS:
        raise ConfigError(f"--set candidates={vocab}: use one of {', '.join(VOCABS)}")
    normalize = ctx.options.get("normalize", "full")
    loaded = load(name, "masked", ctx.device, ctx.dtype)
    variant = ctx.options.get("pll", "within_word_l2r") if _statement(ctx) else None
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=ctx.dtype,
                            batch_size=ctx.batch_size, normalize=normalize, cache=_cache(ctx),
                            max_length=number_option(ctx.options, "max_length"), compat=getattr(ctx, "compat", None),
                            pll=variant)
    if variant is not None:
        from lm.statement import MaskedStatementScorer

        pll = MaskedStatementScorer(scorer, variant, batch_size=None)
        return _statement_predictor(name, ctx, pll, {"path": scorer.path, "device": str(scorer.device)})
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    extra = {}
    subjects = None  # subject queries: the same vocabulary, or each relation's subjects
    if ctx.options.get("vocab_file"):
        path = Path(ctx.options["vocab_file"]).expanduser()
        words = read_vocab_file(path)
        space = AnswerSpace(labels, fixed=from_words(labels, words, f"file:{path.name}"))
        _name_left_out(name, path, words, space.fixed.labels, labels.uncased)
        extra["vocab_file"] = str(path)
    elif vocab == "common":
        path = common_vocab_path(ctx.data_dir, labels.uncased)
        space = AnswerSpace(labels, fixed=from_words(labels, read_vocab_file(path), f"common:{path.name}"))
    elif vocab == "full":
        space = AnswerSpace(labels, fixed=full_vocab(labels))
    else:
        space = AnswerSpace(labels, per_relation=_objects(ctx))
        subjects = AnswerSpace(labels, per_relation=_objects(ctx, "subject"))
    return MaskedLMPredictor(name, scorer, space, extra, subject_space=subjects)


def check_common_vocab(spec: str, options: dict[str, str], corpora: list[str], data_dir: Path,
                       other: str = "--set candidates=full or --set vocab_file=PATH") -> None:
    """The LAMA common vocabulary a masked LM ranks by default (`candidates=common`, slot scoring), found before any
    predictor runs: the cased or the lowercased file by the tokenizer's casing, read only when one is missing."""
    from eval.bear import BEAR_CORPORA
    from lm.loading import load_tokenizer
    from lm.vocab import COMMON_CASED, COMMON_LOWER, common_vocab_path, is_uncased

    scoring = options.get("scoring")
    if options.get("vocab_file") or options.get("candidates", "common") != "common" or scoring == "statement" or (
            not scoring and all(c in BEAR_CORPORA for c in corpora)):
        return
    if all((Path(data_dir) / f).is_file() for f in (COMMON_CASED, COMMON_LOWER)):
        return
    tokenizer = load_tokenizer(options.get("model", spec))
    if tokenizer is not None:
        common_vocab_path(data_dir, is_uncased(tokenizer), other)


make_masked.check_inputs = check_common_vocab  # `plan_predictors`: before any predictor runs
make_masked.check_options = check_scoring_options  # `plan_predictors`: before any data is read


PROMPT_OPTIONS = (
    Option("prompt", "ranking: LAMA templates, or the coherency paper's with the asked entity at the very end; "
           "answer=generate: a prompt style (lama, question, lmkbc2024; default question)", "choice",
           ("lama", "extended", "question", "lmkbc2024"), "lama"),
    Option("prompt_file", "templates for prompt=extended (JSONL: relation, template_obj, template_sub)", "path"),
)
EXTENDED_FILE = Path("prompts") / "coherency" / "relations_autregressive.jsonl"


ANSWER_OPTION = Option("answer", "rank: score candidates (default); generate: write the answer with `generate`, parse "
                       "it and link it to the corpus's entities", "choice", ("rank", "generate"), "rank")
GENERATING = "answer=generate"
GENERATE_LENGTH = Option("max_new_tokens", "answer=generate: longest text written, in tokens", "int",
                         default=str(MAX_NEW_TOKENS), minimum=1, only_with=GENERATING)
GENERATE_BEAMS = Option("beams", "answer=generate: beam search width (1: greedy)", "int", default="1", minimum=1,
                        maximum=64, only_with=GENERATING)
# a ranking model's options of generation: a model answering by rank would ignore them
LOCAL_GENERATION = tuple(replace(o, only_with=GENERATING) for o in GENERATION_OPTIONS)


def _generate(name: str, ctx: PredictorContext, kind: str):
    """The predictor of `answer=generate`, or None when the model ranks (and a generation style is refused)."""
    if ctx.options.get("answer", "rank") == "generate":
        from bridge.predictors.generation import make_local

        return make_local(name, ctx, kind)
    if ctx.options.get("prompt") in ("question", "lmkbc2024"):  # the options of generation: `scope_options`
        raise ConfigError(f"--set prompt={ctx.options['prompt']} applies to generation; add --set "
                          f"NAME.answer=generate for the model {name}")
    return None


@declares(VOCAB_FILE, *PROMPT_OPTIONS, CACHE_OPTION, *STATEMENT_OPTIONS, SET_OPTION, ANSWER_OPTION, GENERATE_LENGTH,
          GENERATE_BEAMS, *LOCAL_GENERATION, settings=("dtype",))
def make_causal(name: str, ctx: PredictorContext):
    from lm.causal import CausalLMScorer, CausalTypedPredictor, read_extended_templates
    from lm.loading import load
    from lm.vocab import read_vocab_file

    generating = _generate(name, ctx, "causal")
    if generating is not None:
        return generating
    templates, extra = {}, {}
    if ctx.options.get("prompt", "lama") == "extended":
        path = Path(ctx.options["prompt_file"]) if ctx.options.get("prompt_file") else _extended_file(ctx)
        templates = {k: t for k, t in read_extended_templates(path).items() if k[0] in ctx.corpus.relations}
        extra = {"prompt": "extended", "prompt_file": str(path),
                 "lama_templates": sorted(r for r in ctx.corpus.relations if (r, "object") not in templates)}
    loaded = load(name, "causal", ctx.device, ctx.dtype)
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=ctx.dtype,
                            batch_size=ctx.batch_size, cache=_cache(ctx))
    if _statement(ctx):
        from lm.statement import CausalStatementScorer

        return _statement_predictor(name, ctx, CausalStatementScorer(scorer),
                                    {"path": scorer.path, "device": str(scorer.device)})
    if ctx.options.get("vocab_file"):
        words = read_vocab_file(ctx.options["vocab_file"])
        candidates = subjects = {rel: words for rel in ctx.corpus.relations}
        source = f"file:{ctx.options['vocab_file']}"
    else:
        candidates, subjects = _objects(ctx), _objects(ctx, "subject")
        source = "entities of the relation in the corpus (objects, or subjects for subject queries)"
    return CausalTypedPredictor(name, scorer, candidates, source, extra, subject_candidates=subjects,
                                templates=templates)


make_causal.check_options = check_scoring_options  # `plan_predictors`: before any data is read


def _extended_file(ctx: PredictorContext) -> Path:
    """The coherency templates shipped beside the LAMA data (`<data>/../prompts/coherency/...`)."""
    for root in (Path(ctx.data_dir), Path(ctx.data_dir).parent):
        if (root / EXTENDED_FILE).is_file():
            return root / EXTENDED_FILE
    raise ConfigError(f"prompt=extended: {EXTENDED_FILE} not found next to the data directory {ctx.data_dir}; "
                      "pass --set prompt_file=PATH")


SEQ2SEQ_OPTIONS = (
    Option("beams", "beam search width; every beam gives one answer (the coherency paper: 10)", "int", default="10",
           minimum=1, maximum=64),
    Option("max_new_tokens", "longest span written, in tokens", "int", default="24", minimum=1),
)


@declares(*SEQ2SEQ_OPTIONS, *STATEMENT_OPTIONS, SET_OPTION, ANSWER_OPTION, GEN_PROMPT, *LOCAL_GENERATION,
          settings=("dtype",))
def make_seq2seq(name: str, ctx: PredictorContext):
    from lm.loading import load
    from lm.seq2seq import Seq2SeqSpanPredictor

    generating = _generate(name, ctx, "seq2seq")
    if generating is not None:
        return generating
    loaded = load(name, "seq2seq", ctx.device, ctx.dtype)
    if _statement(ctx):
        from lm.statement import Seq2SeqStatementScorer

        scorer = Seq2SeqStatementScorer(loaded.model, loaded.tokenizer, name=name, batch_size=ctx.batch_size)
        return _statement_predictor(name, ctx, scorer, {"fingerprint": loaded.fingerprint, "dtype": ctx.dtype})
    return Seq2SeqSpanPredictor(name, loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint,
                                dtype=ctx.dtype, beams=number_option(ctx.options, "beams", 10),
                                max_new_tokens=number_option(ctx.options, "max_new_tokens", 24),
                                batch_size=ctx.batch_size)


make_seq2seq.check_options = check_scoring_options  # `plan_predictors`: before any data is read


def _name_left_out(name: str, path: Path, words: list[str], kept: tuple[str, ...], uncased: bool) -> None:
    """Say which words of a user's vocabulary file the model cannot rank (no single whole-word token of it), so an
    answer space smaller than the file is no surprise, and a fact of such an object is known to be dropped."""
    import logging

    from lm.vocab import normalize

    have = set(kept)
    left = list(dict.fromkeys(w for w in words if normalize(w, uncased) not in have))
    if left:
        shown = ", ".join(repr(w) for w in left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        logging.getLogger("kbc").warning("%s: %d of the %d words of %s are no single token of the model and are not "
                                         "ranked: %s", name, len(left), len(dict.fromkeys(words)), path, shown)


def _objects(ctx: PredictorContext, slot: str = "object") -> dict[str, list[str]]:
    """Each relation's distinct object (or subject) labels in corpus order (the typed-querying answer space)."""
    from bridge.predictors.kb import is_set_corpus

    if slot == "object" and is_set_corpus(ctx.corpus):
        return _set_objects(ctx)
    out: dict[str, list[str]] = {rel: [] for rel in ctx.corpus.relations}
    for fact in ctx.corpus.facts:
        out.setdefault(fact.relation, []).append((fact.object if slot == "object" else fact.subject).label)
    return {rel: list(dict.fromkeys(objs)) for rel, objs in out.items()}


def _set_objects(ctx: PredictorContext) -> dict[str, list[str]]:
    """A set-valued corpus (LM-KBC): each relation's objects in its train split, then in the corpus, as the data
    writes them (each object's label where the data ties one to its id, and the rows' surface forms), so that
    every gold object can be ranked and an answer maps back to an id through the labels."""
    from eval.lmkbc import load_lmkbc, resolve_lmkbc_dir

    facts = list(ctx.corpus.facts)
    if (resolve_lmkbc_dir(ctx.data_dir) / "train.jsonl").is_file():
        facts = [*load_lmkbc(ctx.data_dir, "train", list(ctx.corpus.relations)).facts, *facts]
    out: dict[str, list[str]] = {rel: [] for rel in ctx.corpus.relations}
    for fact in facts:
        labelled = [o.label for o in fact.objects if o.label != o.id or not (o.id or "").startswith("Q")]
        out.setdefault(fact.relation, []).extend([*labelled, *fact.labels])
    return {rel: [o for o in dict.fromkeys(objs) if o.strip()] for rel, objs in out.items()}
