"""Predictors by name. Entries import lazily, so `kbc` starts fast and optional parts stay optional.

A name is looked up in `ENTRIES` first; otherwise each resolver in `RESOLVERS` may claim it
(e.g. a Hugging Face model id or a local model path).
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eval.errors import ConfigError

if TYPE_CHECKING:
    from bridge.predictors.base import Predictor
    from eval.lama import Corpus
    from kb.store import GraphStore


@dataclass
class PredictorContext:
    """What a factory may use to build a predictor for one corpus."""

    corpus: Corpus
    store: GraphStore
    cache_dir: Path
    data_dir: Path
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 32
    options: dict[str, str] = field(default_factory=dict)
    progress: bool = True  # whether set-up work (index or KB builds) may show progress bars
    compat: str | None = None  # "lama": behave as LAMA's released code (tokenization around the mask)
    scope: str | None = None  # the run's own token: what a cache kept for one run only is keyed by
    attempt: str | None = None  # this attempt of the run (a resume is another): what is checked once per attempt
    name: str | None = None  # the predictor's given name: how its options are written (`--set NAME.KEY=VALUE`)
    axioms: str | None = None  # the run's axioms file (`kbc run kmir --axioms`); None: the shipped kb/axioms.ttl
    asked: list | None = None  # the facts this run asks of the corpus (its --limit sample); None: not known
    out: Path | None = None  # the run's folder: what a run keeps of its own there (a server's first answer)


Factory = Callable[[str, PredictorContext], "Predictor"]

# name -> ("module:function", one-line help)
ENTRIES: dict[str, tuple[str, str]] = {
    "freq": ("bridge.predictors.kb:make_freq", "LAMA Freq baseline: objects ranked by frequency in the relation"),
    "random": ("bridge.predictors.random_baseline:make_random",
               "Chance: a question's choices, or the relation's entities, ranked uniformly at random (seeded)"),
    "gold": ("bridge.predictors.kb:make_gold", "The gold KB: every valid answer from the graph store (SPARQL)"),
    "kb": ("bridge.predictors.kmir:make_kb",
           "The gold graphs by lookup: a subject's objects (score 1, ties shared), a question's choice"),
    "kb-inferred": ("bridge.predictors.kmir:make_kb_inferred",
                    "The gold graphs and the facts the axioms derive (kb/axioms.ttl, or kmir's --axioms), by lookups"),
    "retrieval": ("bridge.predictors.text:make_retrieval",
                  "LAMA DrQA row: BM25 paragraphs + offline reader, the fact's own evidence left out"),
    "retrieval-oracle": ("bridge.predictors.text:make_retrieval_oracle",
                         "Upper bound: retrieval that also reads the fact's own evidence paragraphs (gold leak)"),
    "re-naive": ("bridge.predictors.extraction:make_re_naive",
                 "LAMA RE_n: relation-extraction KB, exact-label linking"),
    "re-oracle": ("bridge.predictors.extraction:make_re_oracle", "LAMA RE_o: relation-extraction KB, oracle linking"),
    "bert": ("bridge.predictors.entities:make_bert", "The masked LM of --set model=PATH (E-BERT's BERT baseline)"),
    "ebert": ("bridge.predictors.entities:make_ebert", "E-BERT REPLACE: subject pieces -> mapped wikipedia2vec entity"),
    "ebert-concat": ("bridge.predictors.entities:make_ebert", "E-BERT CONCAT ensemble input: 'Entity / word pieces'"),
    "ebert-avg": ("bridge.predictors.entities:make_ebert",
                  "E-BERT AVG ensemble: mean of BERT and E-BERT probabilities"),
    "ebert-entity": ("bridge.predictors.entities:make_ebert",
                     "E-BERT input, entity-level answers (multi-token objects)"),
    "bert-entity": ("bridge.predictors.entities:make_ebert", "BERT input, entity-level answers (multi-token objects)"),
}
# predictors that read the gold evidence (or learn from the test facts' own sentences): upper bounds, not baselines
UPPER_BOUNDS: dict[str, str] = {
    "retrieval-oracle": "reads the fact's own evidence paragraphs",
    "re-oracle": "extracts from the test facts' own sentences with oracle entity linking",
}


# predictors whose scores on single-answer corpora (LAMA) are no probabilities: a `set=threshold...` rule
# would cut them meaninglessly, so it is refused before anything runs (set-valued corpora score fractions)
NOT_PROBABILITIES: dict[str, str] = {
    "freq": "Freq scores objects by their counts in the relation",
}


def threshold_refusal(name: str, spec: str, rule: str, set_valued: bool) -> str | None:
    """Why predictor `name` (of `spec`) cannot take set rule `rule` in this experiment, or None."""
    if set_valued or spec not in NOT_PROBABILITIES or not rule.startswith("threshold:"):
        return None
    return (f"--set {name}.set={rule}: {NOT_PROBABILITIES[spec]}, not probabilities, so no threshold applies; "
            f"use {name}.set=top:K (e.g. top:1)")


# oracles whose oracle part (linking to the asked facts) is lost on a corpus without text of its own (BEAR,
# LM-KBC): they then read another corpus's sentences and bound nothing of the asked one
BORROWS_TEXT = frozenset({"re-oracle"})


def upper_bound_text(config: dict, predictor: str, spec: str) -> str | None:
    """Why a predictor of a run (its `config.json`) is an upper bound rather than a baseline, else None."""
    if spec not in UPPER_BOUNDS:
        return None
    borrowed = any(isinstance((c or {}).get(predictor), dict) and c[predictor].get("text")
                   for c in (config.get("predictor_configs") or {}).values())
    return None if borrowed and spec in BORROWS_TEXT else UPPER_BOUNDS[spec] + _evidence_held(config, predictor)


def _evidence_held(config: dict, predictor: str) -> str:
    """How many facts of each relation had evidence of their own to read, as a run recorded (`own_evidence`):
    on a relation where none had, the oracle read what the leak-free predictor read and bounds nothing."""
    parts, none = [], []
    for corpus, per in (config.get("own_evidence") or {}).items():
        counts = (per or {}).get(predictor) if isinstance(per, dict) else None
        rows = [(rel, c[0], c[1]) for rel, c in (counts or {}).items() if isinstance(c, list) and len(c) == 2] \
            if isinstance(counts, dict) else []
        if rows:
            parts.append(f"{corpus} " + ", ".join(f"{rel} {held:,} of {of:,}" for rel, held, of in rows))
            none += [f"{corpus} {rel}" for rel, held, _ in rows if held == 0]
    if not parts:
        return ""
    where = (f"; none on {', '.join(none)}: there it reads what the leak-free retrieval reads, no upper bound"
             if none else "")
    return f" (facts of each relation whose own evidence its index holds: {'; '.join(parts)}{where})"


def upper_bound_note(config: dict) -> str | None:
    """A footnote naming the predictors of a run (its `config.json`) that are upper bounds, or None."""
    specs = {name: (ident or {}).get("spec", name) for name, ident in (config.get("predictor_specs") or {}).items()}
    marked = [f"`{name}` {why}" for name, spec in specs.items() if (why := upper_bound_text(config, name, spec))]
    return "Upper bounds, not baselines: " + "; ".join(marked) + "." if marked else None


def shown_spec(config: dict, predictor: str) -> str:
    """What a table names a predictor of a run (its `config.json`) by: its spec, or for a served model `MODEL at
    URL`, the model it asked and the server's API root (without credentials)."""
    ident = (config.get("predictor_specs") or {}).get(predictor) or {}
    spec = str(ident.get("spec", predictor))
    model = (ident.get("options") or {}).get("model")
    if not spec.startswith(("http://", "https://")) or not model:
        return spec
    from lm.served import api_root, public_url

    try:
        return f"{model} at {api_root(public_url(spec))}"
    except ValueError:  # a port that is no number: not a URL a run could have asked
        return spec


# what a generating predictor's answers depend on besides its model, as a run records it (`predictor_configs`; a
# question file among the options): two runs of one model are told apart by those they differ in
GENERATION_SETTINGS = ("prompt", "question_file", "shots", "shots_seed", "chat", "max_new_tokens", "temperature",
                       "top_p", "beams", "stop", "seed", "api")
# how a statement-scoring predictor scored (`lm.statement_predictor`); its defaults, where it has one
STATEMENT_SETTINGS = {"pll": "within_word_l2r", "reduction": "sum", "compat": None}
ASKED_SETTINGS = (*GENERATION_SETTINGS, *STATEMENT_SETTINGS)


def generation_settings(config: dict, predictor: str) -> dict:
    """How a predictor of a run (its `config.json`) was asked: `GENERATION_SETTINGS` of a generating predictor,
    `STATEMENT_SETTINGS` of a statement-scoring one; empty for any other. The same in every corpus of a run (one set
    of options per predictor): the first corpus that describes it says them."""
    for per in (config.get("predictor_configs") or {}).values():
        described = (per or {}).get(predictor) if isinstance(per, dict) else None
        kind = described.get("kind") if isinstance(described, dict) else None
        if kind in ("generation", "statement"):
            options = ((config.get("predictor_specs") or {}).get(predictor) or {}).get("options") or {}
            keys = GENERATION_SETTINGS if kind == "generation" else STATEMENT_SETTINGS
            return {key: described.get(key, options.get(key)) for key in keys if key in described or key in options}
    return {}


def statement_brief(config: dict, predictor: str) -> str | None:
    """`reduction=mean, compat=lm-pub-quiz`: the `STATEMENT_SETTINGS` of a statement-scoring predictor that are not
    the defaults ("defaults" where all are); None for any other predictor."""
    described = next((per.get(predictor) for per in (config.get("predictor_configs") or {}).values()
                      if isinstance(per, dict) and isinstance(per.get(predictor), dict)), None)
    if not described or described.get("kind") != "statement":
        return None
    mine = generation_settings(config, predictor)
    keys = [key for key in STATEMENT_SETTINGS if key in mine and mine[key] != STATEMENT_SETTINGS[key]]
    return settings_brief(mine, keys) or "defaults"


def settings_apart(settings: list[dict]) -> list[str]:
    """The `ASKED_SETTINGS` in which some of `settings` (one per predictor, `generation_settings`) differ."""
    return [key for key in ASKED_SETTINGS
            if len({json.dumps(s.get(key), sort_keys=True) for s in settings}) > 1]


def settings_brief(settings: dict, keys: list[str]) -> str:
    """`prompt=lama, shots=2`: `keys` of one predictor's settings as `--set` writes them."""
    return ", ".join(f"{key}={setting_text(settings.get(key))}" for key in keys)


def setting_text(value) -> str:
    """A recorded setting as `--set` writes it: on/off, `A|B` for stop sequences, 0.7 rather than 0.70, - for none."""
    if value is None or value == []:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return "|".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def apart_briefs(items: list[tuple[dict, str, str]]) -> list[str]:
    """Per (config, predictor, shown spec): where another item of the same spec differs from it in
    `ASKED_SETTINGS`, those settings of its own (`prompt=lama, shots=2`; `reduction=mean`), else "", so that two
    runs of one model with other prompts, sampling or statement scoring read apart in one table."""
    settings = [generation_settings(config, predictor) for config, predictor, _ in items]
    out = []
    for (_, _, spec), mine in zip(items, settings):
        same = [s for (_, _, other), s in zip(items, settings) if other == spec and s]
        out.append(settings_brief(mine, settings_apart(same)) if mine else "")
    return out


KB_MODULES = ("bridge.predictors.kb", "bridge.predictors.kmir", "bridge.predictors.text",
              "bridge.predictors.extraction")
BASELINE_MODULES = ("bridge.predictors.random_baseline",)  # chance floors: neither a KB nor an LM


REFERENCE = "gold"  # the gold KB scores 100 by construction: a reference, never a baseline to beat


def spec_of(config: dict, predictor: str) -> str:
    """The registry name or model path a predictor of a run (its `config.json`) was built from."""
    return str(((config.get("predictor_specs") or {}).get(predictor) or {}).get("spec", predictor))


def side_of(config: dict, predictor: str) -> str:
    """"kb", "lm" or "baseline" (a chance floor, never an LM in delta figures): a predictor of a run (its
    `config.json`), by the registry entry it was built from; a model path or id is an LM."""
    entry = ENTRIES.get(spec_of(config, predictor))
    module = entry[0].split(":")[0] if entry else ""
    return "kb" if module in KB_MODULES else "baseline" if module in BASELINE_MODULES else "lm"


# "module:function" taking a name and returning a Factory, or None if the name is not theirs
RESOLVERS: list[str] = [
    "bridge.predictors.generation:resolve_server",  # http(s):// URLs: OpenAI-compatible servers
    "bridge.predictors.lm:resolve_model",  # local model dirs, HF ids (bert-base-cased, gpt2, org/name)
]


def _load(target: str):
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def resolve(name: str) -> Factory:
    if name in ENTRIES:
        return _load(ENTRIES[name][0])
    for target in RESOLVERS:
        factory = _load(target)(name)
        if factory is not None:
            return factory
    close = difflib.get_close_matches(name, ENTRIES, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(f"unknown predictor {name!r}; {hint}known: {', '.join(sorted(ENTRIES))} (see `kbc ls`)")


def available() -> dict[str, str]:
    return {name: help_ for name, (_, help_) in sorted(ENTRIES.items())}


def build(name: str, ctx: PredictorContext) -> Predictor:
    return resolve(name)(name, ctx)
