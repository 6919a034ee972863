"""Predictors that answer by generation: a local causal or seq2seq LM (`--set NAME.answer=generate`) or any
OpenAI-compatible server (a spec that is an `http://` or `https://` URL, `--set NAME.model=NAME`).

Each query's prompt is built by `eval.question_prompts`, the response is read by `eval.answer_text` (one answer,
or a set on set-valued corpora) and each answer is linked to an entity of the corpus by label and alias. The
`Prediction` holds the linked answers in the order written (score 1.0: no ranking), and its `extra` the exact
prompt, the raw generation and what was parsed, linked and left unlinked. Responses are cached
(`lm.response_cache`) unless `cache=off`, each as it comes (a failure or an interrupt loses none paid for): a local
model's by its weights' fingerprint, a server's for the run only unless `cache=shared` (a server may change its
weights and say nothing of it); the run prints how each query was answered (asked, from the cache, sharing another
query's prompt, unanswered), the requests sent and failed and the tokens used, and keeps the sums in config.json.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bridge.predictors.registry import PredictorContext
from bridge.run.options import SET_OPTION, Option, declares
from eval.answer_text import GENERATED, link_items, parse_generation, stated
from eval.disambiguate import LabelIndex
from eval.errors import ConfigError
from eval.jsonl import write_json
from eval.lmkbc import NUMERIC
from eval.question_prompts import STYLES, Example, Prompt, Prompter, read_questions
from eval.set_rules import parse_number
from eval.types import Answer, Prediction, Query
from lm.generation import MAX_NEW_TOKENS, Generated, GenerationParams

GENERATION_OPTIONS = (
    Option("shots", "examples shown before the question (k-shot), drawn per query, seeded", "int", default="0",
           minimum=0, maximum=64),
    Option("shots_seed", "seed of the example draws", "int", default="0"),
    Option("chat", "send chat turns (the tokenizer's chat template; a server's chat API): auto uses them for "
           "question styles where the model has a template", "choice", ("auto", "on", "off"), "auto"),
    Option("question_file", "questions per relation (CSV Relation,PromptTemplate with {subject_entity})", "path"),
    Option("temperature", "sampling temperature (0: greedy)", "float", default="0", minimum=0),
    Option("top_p", "nucleus sampling mass", "float", default="1", minimum=0, maximum=1),
    Option("stop", "stop sequences, separated by | (\\| is a | of a sequence; \\n a newline)", "str"),
    Option("seed", "sampling seed", "int", default="0"),
)
GEN_PROMPT = Option("prompt", f"prompt style of generation: {', '.join(STYLES)} (see docs/generation.md)", "choice",
                    STYLES, "question")
CACHE = Option("cache", "on-disk response cache. on: this run's own (a resumed run reads it back; another --out "
               "asks again). shared: across runs too, keyed by the URL, the API, the model name, its GET /v1/models "
               "entry and the system_fingerprint of a first question asked again each run; where a server reports "
               "nothing there that changes with its weights (transformers serve), a row cached from earlier weights "
               "is served. off: none", "choice", ("on", "shared", "off"), "on", identity=False)
SERVER_OPTIONS = (
    Option("model", "the model name the server serves", "str", required=True),
    Option("api", "chat: /v1/chat/completions; completions: /v1/completions", "choice", ("chat", "completions"),
           "chat"),
    Option("key_env", "environment variable holding the API key (the key is never written anywhere)", "str",
           identity=False),
    Option("timeout", "seconds one request may take, from connecting to the last byte of its response", "float",
           default="60", minimum=0.1, identity=False),
    Option("concurrency", "requests in flight at once", "int", default="4", minimum=1, maximum=256, identity=False),
    Option("retries", "retries of a request answered 429, 502, 503 or 504, timed out or dropped by the server, with "
           "jittered exponential backoff or after the Retry-After it names (at most 60 s)", "int", default="3",
           minimum=0, maximum=20, identity=False),
    Option("max_new_tokens", "longest answer, in tokens", "int", default=str(MAX_NEW_TOKENS), minimum=1),
)
# the max_new_tokens a local model's generation took by default before it was MAX_NEW_TOKENS (a server's: 64): a run's
# record without the setting was written so
LOCAL_TOKENS_BEFORE = 32


def applied_options(options: dict[str, str], served: bool, tokens: int = MAX_NEW_TOKENS) -> dict[str, str]:
    """A generating predictor's options with each generation setting it was not given at its default, as applied
    (`tokens`: the default max_new_tokens): its identity records them all, so that `config.json` states every
    setting its answers depend on and a changed default never resumes a run under settings other than its own."""
    defaults = {"prompt": GEN_PROMPT.default, **{o.key: o.default for o in GENERATION_OPTIONS if o.default},
                "max_new_tokens": str(tokens)}
    defaults.update({"api": "chat"} if served else {"beams": "1"})  # a server takes no beams
    return {**defaults, **options}


def recorded_before(seen: dict) -> tuple[dict, list[str]]:
    """A generating predictor's identity as recorded by an earlier kbc version, which recorded only the options
    given, with the settings it lacks at the defaults that version applied (a local model's max_new_tokens: 32),
    and the keys so filled; any other identity as it is."""
    options = seen.get("options")
    if not isinstance(options, dict) or not (options.get("answer") == "generate" or is_server(str(seen.get("spec")))):
        return seen, []
    served = is_server(str(seen.get("spec")))
    applied = applied_options(options, served, MAX_NEW_TOKENS if served else LOCAL_TOKENS_BEFORE)
    return {**seen, "options": dict(sorted(applied.items()))}, sorted(set(applied) - set(options))


# how each query of an attempt was answered: asked (a request of this attempt), cached (a cache row another run
# wrote), resumed (a row this run wrote: asked by an attempt before it was resumed), shared (the prompt of another
# query of the attempt, answered by the same request) or unanswered (handed to the model: a failure or an
# interrupt came before its answer); a query whose prompt was never sent is none of these (`_tally_queries`)
QUERIES = ("asked", "cached", "resumed", "shared", "unanswered")
# what adds up over the attempts that make a run (`bridge.run.usage_log`): each query's answer counted by the attempt
# that asked or read it from another run's cache, each request and token paid once
# the rest of an attempt's sample, as the runner counts it (`bridge.run.runner.sample_tally`): never handed over
SAMPLE = {"recorded": "recorded before the run was resumed", "left_out": "left out unasked",
          "not_asked": "not asked before the stop"}
RUN_TOTALS = ("asked", "cached", "shared", "sent", "retried", "failed", "prompt_tokens", "completion_tokens",
              "damaged", "empty", "cut")


def is_server(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def check_served_options(name: str, options: dict[str, str], corpora: Sequence[str] = ()) -> None:
    """Options of served model `name` that cannot work together, or a key that is not there: refused before any data
    is read (`plan_predictors`, which names the run's `corpora`: a served model answers each the same way), naming
    the options as written for this predictor."""
    at = f"{name}." if name else ""
    if options.get("chat") == "on" and options.get("api", "chat") != "chat":
        raise ConfigError(f"--set {at}chat=on needs {at}api=chat (the server renders the chat template)")
    key_env = options.get("key_env")
    if key_env and not os.environ.get(key_env):
        raise ConfigError(f"--set {at}key_env={key_env}: that environment variable is not set; export it with the "
                          "server's API key")


def resolve_server(name: str):
    """The served-model factory for a URL spec; None for anything else."""
    return make_served if is_server(name) else None


def stop_sequences(value: str, where: str = "stop") -> tuple[str, ...]:
    """`stop=A|B` as its stop sequences: split at each `|` but an escaped one (`\\|`, a `|` of the sequence), each
    read with Python's escapes (`\\n` a newline, `\\t` a tab, `\\\\` a backslash); an escape that is none is
    one `error:` line."""
    parts, current, i = [], "", 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            current += "|" if value[i + 1] == "|" else value[i:i + 2]  # an escape is read below, whole
            i += 2
            continue
        if value[i] == "|":
            parts.append(current)
            current = ""
        else:
            current += value[i]
        i += 1
    parts.append(current)
    try:
        return tuple(part.encode().decode("unicode_escape") for part in parts)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--set {where}={value}: {exc.reason} (write a backslash as \\\\, a | within a stop "
                          "sequence as \\|)") from None


def params_of(ctx: PredictorContext) -> GenerationParams:
    o = ctx.options
    stop = stop_sequences(o["stop"], f"{ctx.name}.stop" if ctx.name else "stop") if o.get("stop") else ()
    return GenerationParams(max_new_tokens=int(o.get("max_new_tokens", MAX_NEW_TOKENS)),
                            beams=int(o.get("beams", 1)) if o.get("answer") == "generate" else 1,
                            temperature=float(o.get("temperature", 0)), top_p=float(o.get("top_p", 1)),
                            stop=stop, seed=int(o.get("seed", 0)))


def _set_rule_check(ctx: PredictorContext) -> None:
    rule = ctx.options.get("set", "")
    if rule.startswith("threshold"):
        raise ConfigError(f"--set set={rule}: a generated answer has no probabilities to cut; leave set= out (every "
                          "answer written counts) or use top:K")


def prompter_of(ctx: PredictorContext, chat: bool) -> Prompter:
    """The prompt style, questions and example pool of this corpus."""
    from bridge.predictors.kb import is_set_corpus

    style = ctx.options.get("prompt", "question")
    if style not in STYLES:  # a ranking style (extended) asked with answer=generate
        raise ConfigError(f"--set prompt={style}: generation takes one of {', '.join(STYLES)}")
    set_corpus = is_set_corpus(ctx.corpus)
    questions: dict[str, str] = {}
    if ctx.options.get("question_file"):
        questions = read_questions(Path(ctx.options["question_file"]))
    elif set_corpus or style == "lmkbc2024":
        from eval.lmkbc import resolve_lmkbc_dir
        from eval.question_prompts import QUESTIONS

        questions = read_questions(resolve_lmkbc_dir(ctx.data_dir) / QUESTIONS)
    templates = {rel: r.template for rel, r in ctx.corpus.relations.items()}
    shots = int(ctx.options.get("shots", 0))
    pool = _pool(ctx, set_corpus) if shots else []
    # LM-KBC's examples are of every relation, asked or not (the baseline's plain prompt draws from all): their
    # questions too
    asked_of = {r: q for r, q in questions.items() if r in templates or (set_corpus and bool(pool))}
    prompter = Prompter(style, templates, shots=shots, seed=int(ctx.options.get("shots_seed", 0)), chat=chat,
                        questions=asked_of, pool=pool, every_relation=set_corpus)
    asked = prompter.asked_as_questions()
    if asked:  # one run, two prompt styles: said, so that nobody reads the run as LAMA-style throughout
        logging.getLogger("kbc").warning(
            "%s: prompt=lama asks %s as questions (\"Fill in the blank: ...\"): their templates do not end in the "
            "asked slot, so there is no sentence to continue", ctx.corpus.name, ", ".join(asked))
    return prompter


def _pool(ctx: PredictorContext, set_corpus: bool) -> list[Example]:
    """Solved examples the run does not score: LM-KBC's train split; on LAMA the relation's facts (the asked fact
    and its subject's facts are left out per query)."""
    if set_corpus:
        from eval.lmkbc import load_lmkbc

        train = load_lmkbc(ctx.data_dir, "train")  # every relation's: a prompt never depends on --relations
        return [Example(f.relation, f.subject.label, f.subject.key, tuple(f.labels), f"train:{f.uid}")
                for f in train.facts]
    return [Example(f.relation, f.subject.label, f.subject.key, (f.object.label,), f.uid) for f in ctx.corpus.facts]


class RelationIndexes:
    """One label index per relation, over the entities of that relation's facts: a relation's answers link (and
    split) the same whichever other relations a run loads, as its scores must. A relation the corpus holds no fact
    of (one a KMIR axiom infers) links among the entities of every relation the run loaded."""

    def __init__(self, facts: Sequence, listed: dict[str, list[str]]) -> None:
        self._facts: dict[str, list] = {}
        for fact in facts:
            self._facts.setdefault(fact.relation, []).append(fact)
        self._all, self._listed, self._known = list(facts), listed, _forms(listed)
        self._built: dict[str, LabelIndex] = {}

    def of(self, relation: str) -> LabelIndex:
        """The index that links the answers to a query of `relation`."""
        key = relation if relation in self._facts else ""
        if key not in self._built:
            self._built[key] = self._index(self._facts.get(key) or self._all)
        return self._built[key]

    def _index(self, facts: Sequence) -> LabelIndex:
        labels: dict[str, str] = {}
        aliases: dict[str, list[str]] = {}
        for fact in facts:
            for e in (fact.subject, fact.object):
                labels.setdefault(e.key, e.label)
                if e.aliases:
                    aliases.setdefault(e.key, []).extend(e.aliases)
        for qid, forms in self._listed.items():
            if qid in labels:
                aliases.setdefault(qid, []).extend(forms)
        return LabelIndex(labels, aliases, self._known)


class OneIndex:
    """The same label index for every relation (LM-KBC's: the labels its splits write, whatever is loaded)."""

    def __init__(self, index: LabelIndex) -> None:
        self.index = index

    def of(self, relation: str) -> LabelIndex:
        return self.index


def label_indexes(ctx: PredictorContext) -> RelationIndexes | OneIndex:
    """The corpus's entities by label (and X-FACTR's aliases where the data has them), keyed by id or label, per
    relation; every form of that alias list names an entity where a generated answer is split
    (`eval.answer_text`)."""
    from bridge.predictors.kb import is_set_corpus
    from eval.disambiguate import load_aliases
    from eval.lmkbc import alias_file
    from eval.lmkbc import label_index as lmkbc_index

    if is_set_corpus(ctx.corpus):
        from eval.lmkbc import resolve_lmkbc_dir

        path = alias_file(resolve_lmkbc_dir(ctx.data_dir))
        return OneIndex(lmkbc_index(ctx.data_dir, _forms(load_aliases(path)) if path is not None else ()))
    path = alias_file(Path(ctx.data_dir))
    return RelationIndexes(ctx.corpus.facts, load_aliases(path) if path is not None else {})


def _forms(aliases: dict[str, list[str]]) -> set[str]:
    return {form for forms in aliases.values() for form in forms}


class GenerationPredictor:
    """Asks each query by generation and links what it writes; the backend is local or a server."""

    ranks = "none"  # no ranking: rank-based metrics do not apply
    slots = ("object", "subject")  # a subject is asked with a blank in its place (`Prompter.prompt`)

    def __init__(self, name: str, backend, prompter: Prompter, indexes: RelationIndexes | OneIndex,
                 labels: dict[str, str], *,
                 many: bool, params: GenerationParams, model: str, cache=None, scope: str | None = None,
                 extra: dict | None = None, anchors: tuple[Path, ...] | None = None, run: str | None = None,
                 attempt: str | None = None, one_turn: bool = False, option: str = "") -> None:
        self.name, self.backend, self.prompter, self.indexes, self.labels = name, backend, prompter, indexes, labels
        self.option = option  # how the run writes this predictor's options ("llm." of --set llm.max_new_tokens=N)
        self.one_turn = one_turn  # plain text sent as one user turn (a chat endpoint with chat=off): recorded so
        self.many, self.params, self.model, self.cache = many, params, model, cache
        self.scope = scope  # a server's cache: "run:TOKEN" (this run's own) or "shared"; None: a local model's
        self.key_base: str | None = None  # what every cache key starts with, settled at the first ask
        self.extra = extra or {}
        self.counts = dict.fromkeys(("queries", *QUERIES, "sent", "prompt_tokens", "completion_tokens", "empty",
                                     "cut", "unreported"), 0)
        self._answered: set[str] = set()  # keys answered by a request of this attempt (a later chunk's hit shares)
        # a server's run: where its first answer is kept, to ask again when the run resumes (`_same_server`)
        self.run = run  # the run's cache scope: cache rows it wrote are told from other runs' (`resumed`)
        self.attempt = attempt  # this attempt of the run: its first answer is checked once, whatever the corpora
        self.anchors = anchors if scope is not None and scope.startswith("run:") else None
        self._keep_first: tuple[Path, object] | None = None  # where the first answer goes, and the prompt preferred
        self._kept_other = False  # an answer to another prompt is kept there until the preferred one comes
        self.on_batch: Callable[[int], None] | None = None  # told of the queries each response answers (progress)
        self.on_cached: Callable[[int], None] | None = None  # told of those the cache answers, apart (progress)
        self.on_spent: Callable[[], None] | None = None  # told of each response counted (the run's usage file)

    @property
    def parameter_count(self) -> int | None:
        """A local model's number of weights (the run's config and the leaderboard show it); a server's is unknown."""
        model = getattr(getattr(self.backend, "generator", None), "model", None)
        if not callable(getattr(model, "parameters", None)):
            return None
        return int(sum(p.numel() for p in model.parameters()))

    def describe(self) -> dict:
        return {"kind": "generation", "model": self.model, "fingerprint": self.backend.fingerprint, "ranks": self.ranks,
                "answers": "a set" if self.many else "one answer", **self.prompter.describe(),
                **self.params.describe(), **self.extra}

    def _count(self, response: Generated, told: bool = True) -> None:
        self.counts["sent"] += 1
        self.counts["prompt_tokens"] += response.prompt_tokens
        self.counts["completion_tokens"] += response.completion_tokens
        self.counts["unreported"] += not response.usage_reported
        if told:
            self._spent()

    def _spent(self) -> None:
        """Tell `on_spent` of what was counted, before the answer is cached: a kill between counts the request, and
        its asking again when the run resumes, as a server charges both."""
        if self.on_spent is not None:
            self.on_spent()

    def _settle(self, first, sending: Callable[[], None]) -> Generated | None:
        """Settle what the cache keys start with: a local model's weights fingerprint; a server's URL and API with
        this run's token (cache=on), or (cache=shared) with what its model list says of the model and the
        system_fingerprint of `first`, asked now whatever the cache holds (`sending()` is told first): all a server
        can say of the weights answering now. Returns the response it asked, if any."""
        if self.scope is None:
            self.key_base = self.backend.fingerprint
            return None
        what: dict = {"server": self.backend.fingerprint}
        asked = None
        if self.scope == "shared":
            what["listed"] = self.backend.listed()
            sending()
            asked = self.backend.generate([first], self.params)[0]
            self._count(asked)
            what["system_fingerprint"] = asked.system_fingerprint
            if asked.system_fingerprint is None and not (what["listed"] or {}).get("created"):
                logging.getLogger("kbc").warning(
                    "cache=shared: %s reports no system_fingerprint and no creation time of model %s (GET "
                    "/v1/models: %s): answers cached from other weights served there under this name are used as "
                    "this model's; use cache=on to ask again", self.backend.settings.shown, self.model,
                    json.dumps(what["listed"], sort_keys=True) if what["listed"] else "not listed")
        else:
            what["scope"] = self.scope
        self.key_base = json.dumps(what, sort_keys=True, ensure_ascii=False)
        return asked

    def _ask(self, prompts: Sequence[Prompt]) -> list[Generated]:
        """The responses, from the cache where it has them; the rest asked a slice at a time, each response cached
        as it comes (a failure or an interrupt loses none that came back) and told to `on_batch`. Every query is
        counted once, by what became of it: asked, from the cache, sharing the prompt of another query (one request
        answers both), unanswered (handed to the model, no answer came) or, where the run stopped before its prompt
        went out, not at all: the runner counts it not asked before the stop."""
        from lm.response_cache import response_key

        sent = [p.sent() for p in prompts]
        if not sent:
            return []
        keys: list[str] = []
        found: dict[str, Generated] = {}
        how: dict[str, str] = {}  # each key answered: asked, cached, resumed, or shared (asked by an earlier chunk)
        handed: set[str] = set()  # keys whose prompt went to the model
        first_out: list[bool] = []  # the first prompt, sent by `_settle` before any key is known
        self.counts["queries"] += len(sent)
        try:
            asked = None
            if self.key_base is None and self.cache is not None:
                asked = self._settle(sent[0], lambda: first_out.append(True))
            keys = [response_key(self.key_base or self.backend.fingerprint, self.model, s, self.params) for s in sent]
            per_key = Counter(keys)
            if first_out:
                handed.add(keys[0])

            prompt_of = dict(zip(keys, sent))

            def keep(key: str, response: Generated) -> None:
                """A response asked for a query: kept as the run's first answer where it is one, then cached."""
                found[key], how[key] = response, "asked"
                self.counts["asked"] += 1  # counted as it comes (`_tally_queries` counts the rest as the ask ends)
                self._spent()
                self._answered.add(key)
                self._kept_first(prompt_of[key], response)
                if self.cache is not None:
                    self.cache.put(key, response, self.run)
                self._moved(per_key[key])

            if asked is not None:  # `_settle` counted its cost
                keep(keys[0], asked)
            distinct = list(dict.fromkeys(keys))
            if self.cache is not None:
                for key in distinct:
                    hit = self.cache.get(key) if key not in found else None
                    if hit is not None:
                        found[key] = hit
                        how[key] = ("shared" if key in self._answered else
                                    "resumed" if self.run and hit.run == self.run else "cached")
                self._moved(sum(per_key[k] for k in how if how[k] != "asked"), cached=True)  # at once
            if self.anchors is not None:
                self._same_server(sent[0])
            missing = [k for k in distinct if k not in found]
            first = prompt_of
            check = getattr(self.backend, "check_fits", None)
            if check is not None and missing:  # a prompt the model cannot take: refused before any is asked
                check([first[k] for k in missing], self.params)
            step = self.backend.slice  # prompts handed over at once: a local model loses one batch at most

            for start in range(0, len(missing), step):
                part = missing[start:start + step]

                def came(i: int, response: Generated, part: list[str] = part) -> None:
                    self._count(response, told=False)  # told with the query it answers
                    keep(part[i], response)

                def went(done: Sequence[int], part: list[str] = part) -> None:
                    handed.update(part[i] for i in done)

                self.backend.generate([first[k] for k in part], self.params, came, went)
        finally:
            self._tally_queries(len(sent), keys, found, how, handed, bool(first_out))
        self._kept_first(sent[0], found.get(keys[0]))  # from the cache, where an earlier attempt asked it
        return [found[k] for k in keys]

    def _tally_queries(self, n: int, keys: list[str], found: dict[str, Generated], how: dict[str, str],
                       handed: set[str], first_out: bool) -> None:
        """Count each of the `n` queries of an `_ask` by what became of it; one never handed to the model leaves
        `queries` (the runner counts it not asked before the stop)."""
        c = self.counts
        if not keys:  # stopped before any key was known: only `_settle`'s first prompt can have gone out
            c["unanswered"] += first_out
            c["queries"] -= n - first_out
            return
        seen: set[str] = set()
        for key in keys:
            if key in found:
                if key in seen or how[key] != "asked":  # an asked one was counted as its answer came (`_ask`)
                    c["shared" if key in seen else how[key]] += 1
            elif key in handed:
                c["unanswered"] += 1
            else:
                c["queries"] -= 1
            seen.add(key)

    def _moved(self, n: int, cached: bool = False) -> None:
        tell = self.on_cached if cached and self.on_cached is not None else self.on_batch
        if tell is not None and n:
            tell(n)

    def _kept_first(self, prompt, response: Generated | None) -> None:
        """Keep the run's first answer (`_same_server`) as soon as one has come, before it is cached and before a
        later request fails: the answer to the run's first prompt, and until it comes the first answer to any, so
        that the answers a run stopped before its first prompt was answered kept are checked when it resumes."""
        if self._keep_first is None or response is None:
            return
        path, first = self._keep_first
        if prompt == first:
            self._keep_first = None
        elif self._kept_other:
            return
        self._kept_other = True
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"prompt": prompt, "text": response.text, "attempt": self.attempt})

    def _same_server(self, first) -> None:
        """A run that asks a server is resumed only while the server answers as it did: its first answer is kept
        (per run, predictor settings and model name) and asked again once when the run goes on, by the first corpus
        that asks (the answer kept names the attempt that wrote or checked it: the attempt's other corpora ask
        nothing more). A server may serve other weights under the same URL and name, and a resumed run would then
        score two models as one. Sampling (temperature > 0) answers differently by design: nothing is checked
        then."""
        import hashlib

        anchors, self.anchors = self.anchors, None  # once per run
        if self.params.temperature > 0:
            return
        what = json.dumps([self.scope, self.backend.fingerprint, self.model, self.params.describe()], sort_keys=True)
        name = f"{hashlib.sha256(what.encode()).hexdigest()}.json"
        path = anchors[0] / name  # where it is kept from now on; read from the first place that has it
        kept = None
        for folder in anchors:
            try:
                kept = json.loads((folder / name).read_text(encoding="utf-8"))
                prompt, text = kept["prompt"], kept["text"]
                break
            except (OSError, ValueError, KeyError, TypeError):
                kept = None
        if kept is None:  # the run's first ask: its first answer is kept once it has come (`_ask`)
            self._keep_first = (path, first)
            return
        if self.attempt is not None and kept.get("attempt") == self.attempt:  # this attempt's, kept or checked
            return
        response = self.backend.generate([prompt], self.params)[0]
        self._count(response)
        if response.text != text:
            from lm.served import ServerError

            raise ServerError(f"{self.backend.settings.shown}: model {self.model} answers differently than when this "
                              f"run started ({json.dumps(text[:60], ensure_ascii=False)} then, "
                              f"{json.dumps(response.text[:60], ensure_ascii=False)} now, to the run's first "
                              "prompt): it may serve other weights under this name, and the run would score two "
                              "models as one; start a new --out")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"prompt": prompt, "text": text, "attempt": self.attempt})  # checked: once an attempt

    def _prompt(self, query: Query) -> Prompt:
        """What is sent for `query`: a query carrying its own wording (a KMIR question) is asked as written; text a
        chat endpoint takes as one user turn is that turn, as the server receives it."""
        prompt = self.prompter.prompt(query, getattr(query, "question_text", None))
        if self.one_turn and prompt.messages is None:
            return replace(prompt, messages=({"role": "user", "content": prompt.text},))
        return prompt

    def check_fits(self, queries: Sequence[Query]) -> None:
        """Refuse, before any of a stage is asked, prompts a local model cannot take with its answer (longer than its
        context); a server says so itself."""
        check = getattr(self.backend, "check_fits", None)
        if check is not None:
            check([self._prompt(q).sent() for q in queries], self.params)

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        prompts = [self._prompt(q) for q in queries]
        responses = self._ask(prompts)
        out = []
        for q, prompt, response in zip(queries, prompts, responses):
            self.counts["empty"] += not stated(response.text).strip()  # nothing, or thoughts cut before an answer
            self.counts["cut"] += response.cut  # cached with its answer: a rerun counts it again
            index = self.indexes.of(q.relation)
            parsed = parse_generation(response.text, self.many, index, numeric=q.relation in NUMERIC)
            if q.relation in NUMERIC:  # a count is no entity: the number it states, as a word of its own, is the answer
                linked = [(item, parse_number(item, word=True)) for item in parsed.items]
                answers = tuple(Answer(number, 1.0) for item, number in linked if number is not None)
            else:
                linked = link_items(parsed.items, index)
                answers = tuple(Answer(self.labels.get(key, item) if key else item, 1.0,
                                       key if key and not key.startswith("label:") else None) for item, key in linked)
            extra = {"prompt": prompt.sent(), GENERATED: response.text, "parsed": list(parsed.items),
                     "linked": [[item, key] for item, key in linked], "abstained": parsed.abstained,
                     "unlinked": [item for item, key in linked if key is None]}
            if prompt.shots:
                extra["shots"] = list(prompt.shots)
            rendered = getattr(self.backend, "rendered", {}).get(_as_key(prompt.sent()))
            if rendered is not None:
                extra["prompt_text"] = rendered
            out.append(Prediction(q.uid, answers, False, extra))
        return out

    def tally(self) -> dict[str, int]:
        """What asking cost so far: queries by how each was answered, requests sent, retried and failed, tokens
        used, damaged cache rows, empty answers and answers cut at max_new_tokens."""
        c = self.counts
        return {**{k: c[k] for k in ("queries", *QUERIES)},
                "sent": getattr(self.backend, "sent", c["sent"]),  # a server's: every HTTP request, retries too
                "retried": getattr(self.backend, "retried", 0), "failed": getattr(self.backend, "failed", 0),
                "prompt_tokens": c["prompt_tokens"], "completion_tokens": c["completion_tokens"],
                "damaged": getattr(self.cache, "damaged", 0), "empty": c["empty"], "cut": c["cut"],
                "unreported": c["unreported"]}

    def report_line(self, tally: dict[str, int]) -> str:
        """The line of a `tally` (one predictor's, or the sum over the Ray workers that each asked a share): its
        queries add up to the attempt's sample (asked + from the cache + sharing a prompt + unanswered, and where the
        runner says so, recorded before the run was resumed, left out unasked and not asked before the stop);
        a server's requests count every HTTP request, retries and the check of a resumed run's first answer too; a
        local model sends no request: its `sent` counts its generations (one per distinct prompt)."""
        t = {k: tally.get(k, 0) for k in ("queries", *QUERIES, *RUN_TOTALS, *SAMPLE)}
        note = f", {t['damaged']} damaged cache rows asked again" if t["damaged"] else ""
        if isinstance(self.backend, LocalBackend):
            cost = f"generations {t['sent']}"
        else:
            sent = f"{t['sent']} ({t['retried']} of them retries)" if t["retried"] else f"{t['sent']}"
            cost = f"requests sent {sent}, failed {t['failed']}"
        resumed = f" ({t['resumed']} asked before the run was resumed)" if t["resumed"] else ""
        # an empty generation parses to no answer: wrong, neither abstained nor unlinked, so the rates hide it; where
        # a set is asked it is the empty set, which the challenge scores 1 against an empty gold set
        scored = "read as empty sets: right only where the gold set is empty" if self.many else "scored wrong"
        empty = f"; {t['empty']} answers were empty text ({scored})" if t["empty"] else ""
        # an answer cut mid-way is scored as written: wrong or partial, for want of tokens rather than knowledge
        cut = (f"; {t['cut']} answers were cut at max_new_tokens={self.params.max_new_tokens} before they ended "
               f"(scored as written): raise it with --set {self.option}max_new_tokens=N") if t["cut"] else ""
        # a server that sends no usage would read as one that spent no tokens
        silent = tally.get("unreported", 0)
        unreported = f" ({silent} of the responses said no token count: not counted)" if silent else ""
        rest = "".join(f", {t[k]} {words}" for k, words in SAMPLE.items() if t[k])
        return (f"{t['queries'] + sum(t[k] for k in SAMPLE)} queries: {t['asked']} asked, "
                f"{t['cached'] + t['resumed']} from the cache{resumed}, {t['shared']} sharing another query's prompt, "
                f"{t['unanswered']} unanswered{rest}; {cost}; tokens used "
                f"{t['prompt_tokens']} prompt + {t['completion_tokens']} completion{unreported}{note}{empty}{cut}")

    def report(self) -> str:
        """Queries by how each was answered, requests and tokens (printed when the run is done with this
        predictor)."""
        return self.report_line(self.tally())


def _as_key(prompt) -> str:
    import json

    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, ensure_ascii=False)


class LocalBackend:
    """`lm.generation.LocalGenerator` behind the backend interface: chat turns rendered by the chat template."""

    def __init__(self, generator) -> None:
        self.generator = generator
        self.fingerprint = generator.fingerprint
        self.slice = 4 * generator.batch_size
        self.rendered: dict[str, str] = {}

    def _texts(self, prompts: Sequence) -> list[str]:
        texts = []
        for p in prompts:
            text = p if isinstance(p, str) else self.generator.render(p)
            if not isinstance(p, str):
                self.rendered[_as_key(p)] = text
            texts.append(text)
        return texts

    def check_fits(self, prompts: Sequence, params: GenerationParams) -> None:
        """Refuse prompts longer than the model's context with its answer, before any is generated."""
        self.generator.check_fits(self._texts(prompts), params)

    def generate(self, prompts: Sequence, params: GenerationParams,
                 kept: Callable[[int, Generated], None] | None = None,
                 handed: Callable[[Sequence[int]], None] | None = None) -> list[Generated]:
        """As `ServedGenerator.generate`: `kept(i, response)` as each batch is done, `handed([i, ...])` as each goes
        to the model."""
        texts = self._texts(prompts)
        where: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            where.setdefault(text, []).append(i)

        def came(text: str, response: Generated) -> None:
            for i in where[text] if kept is not None else ():
                kept(i, response)

        def went(batch: Sequence[str]) -> None:
            if handed is not None:
                handed([i for text in batch for i in where[text]])

        done = self.generator.generate(texts, params, came, went)
        return [done[t] for t in texts]


def _cache(ctx: PredictorContext):
    from lm.response_cache import ResponseCache

    return ResponseCache(Path(ctx.cache_dir) / "lm" / "responses.sqlite") if ctx.options.get("cache", "on") != "off" \
        else None


FIRST_ANSWERS = "served_first_answers"


def _anchors(ctx: PredictorContext) -> tuple[Path, ...]:
    """Where a served run's first answer is kept: its own folder, so that deleting the cache or resuming under
    another one keeps the check (`_same_server`); then the cache, where runs of earlier versions kept it."""
    cached = Path(ctx.cache_dir) / "lm" / FIRST_ANSWERS
    return (Path(ctx.out) / FIRST_ANSWERS, cached) if ctx.out is not None else (cached,)


def _entity_labels(index_ctx: PredictorContext) -> dict[str, str]:
    from bridge.predictors.kb import is_set_corpus

    if is_set_corpus(index_ctx.corpus):
        return {}
    return {e.key: e.label for f in index_ctx.corpus.facts for e in (f.subject, f.object)}


def build(name: str, ctx: PredictorContext, backend, *, chat: bool, model: str, extra: dict, scope: str | None = None,
          one_turn: bool = False) -> GenerationPredictor:
    from bridge.predictors.kb import is_set_corpus

    _set_rule_check(ctx)
    return GenerationPredictor(name, backend, prompter_of(ctx, chat), label_indexes(ctx),
                               _entity_labels(ctx),
                               many=is_set_corpus(ctx.corpus), params=params_of(ctx), model=model,
                               cache=_cache(ctx), scope=scope, extra=extra,
                               anchors=_anchors(ctx), run=ctx.scope,
                               attempt=ctx.attempt, one_turn=one_turn, option=f"{ctx.name}." if ctx.name else "")


def make_local(name: str, ctx: PredictorContext, kind: str) -> GenerationPredictor:
    """A local causal or seq2seq LM answering by `generate` (`--set NAME.answer=generate`)."""
    from lm.generation import LocalGenerator
    from lm.loading import load

    loaded = load(name, kind, ctx.device, ctx.dtype)
    generator = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name=name,
                               seq2seq=kind == "seq2seq", batch_size=ctx.batch_size)
    wanted = ctx.options.get("chat", "auto")
    if wanted == "on" and not generator.has_chat_template:
        raise ConfigError(f"--set chat=on: {name} has no chat template in its tokenizer; use chat=off")
    style = ctx.options.get("prompt", "question")
    chat = wanted == "on" or (wanted == "auto" and style != "lama" and generator.has_chat_template)
    return build(name, ctx, LocalBackend(generator), chat=chat, model=name,
                 extra={"backend": "local", "device": str(generator.device), "dtype": ctx.dtype})


@declares(*SERVER_OPTIONS, GEN_PROMPT, *GENERATION_OPTIONS, CACHE, SET_OPTION)
def make_served(name: str, ctx: PredictorContext) -> GenerationPredictor:
    """A model behind an OpenAI-compatible server; `name` is the server's URL."""
    from lm.served import ServedGenerator, ServerSettings, api_root

    o = ctx.options
    check_served_options(ctx.name or "", o)
    api = o.get("api", "chat")
    settings = ServerSettings(api_root(name), o["model"], api=api, key_env=o.get("key_env"),
                              timeout=float(o.get("timeout", 60)), concurrency=int(o.get("concurrency", 4)),
                              retries=int(o.get("retries", 3)), option_prefix=f"{ctx.name}." if ctx.name else "")
    chat = api == "chat" and o.get("chat", "auto") != "off"
    # a server's weights can change under the same URL and name: its cache is this run's unless asked for shared
    scope = "shared" if o.get("cache") == "shared" else f"run:{ctx.scope or uuid.uuid4().hex}"
    generator = ServedGenerator(settings)
    generator.keeps = o.get("cache", "on") != "off"  # what the stop line says of the answers still in flight
    return build(name, ctx, generator, chat=chat, model=o["model"],
                 extra={"backend": "server", **settings.describe()}, scope=scope, one_turn=api == "chat" and not chat)


make_served.check_options = check_served_options  # `plan_predictors`: before any data is read
