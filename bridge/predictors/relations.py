"""Relation classifiers for `kbc run fewrel`: fine-tuned BERT, E-BERT, the CONCAT and AVG ensembles, and the KB.

Specs (`--predictors NAME=SPEC`): `bert` (or a model path / hub id: BERT on that model), `ebert` (entity vectors
in place of the marked entities' word pieces), `ebert-concat` (`entity / word pieces`), `ebert-avg` (the mean of
BERT's and E-BERT's class distributions, from the two fine-tuned models), `kb` / `kb-inferred` (the relations the
graph store holds between the head and tail ids). The E-BERT forms take the same `model`, `wikipedia2vec`, `map`
and linking options as the probing E-BERT predictors (`bridge.predictors.entities`), whose mapping they reuse.
`--dtype bfloat16` trains and predicts under bf16 autocast on any `--device` (a model of its own: the precision is
part of what a model is trained from).

Each fine-tuned model lives in `<out>/models/<form>-<digest>/` (the digest: everything it was trained from), so
a rerun resumes it, AVG reuses the BERT and E-BERT models of the same settings, and a user can load it with
`lm.relation_classifier.load_classifier`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bridge.predictors.entities import EBERT_OPTIONS, MODEL_OPTION
from bridge.predictors.registry import PredictorContext
from bridge.run.options import Option, declares
from eval.errors import ConfigError
from eval.fewrel import Sentence, load_split, resolve_fewrel_dir
from eval.types import Answer, Entity, Prediction, Query
from lm.entities.linking import LINK_RULE

LINKED = {"link_rule": LINK_RULE}  # identity of a form fed entity links: records linked another way are refused
FORMS = {"bert": ("bert",), "ebert": ("ebert",), "ebert-concat": ("concat",), "ebert-avg": ("bert", "ebert")}
KB_SPECS = ("kb", "kb-inferred")
TRAIN_OPTIONS = (
    Option("lr", "learning rate, or several comma-separated (Zhang et al.'s range: 5e-5,3e-5,2e-5): one model each, "
           "the best dev macro F1 kept", "rates", default="2e-5"),
    Option("train_batch", "training batch size (Zhang et al.: 32)", "int", default="32", minimum=1),
    Option("epochs", "training epochs (E-BERT fixes 10; fewer for a quick look)", "int", default="10", minimum=1),
    Option("train_seed", "seed of initialisation, dropout and data order", "int", default="0"),
)
ENTITY_KEYS = ("wikipedia2vec", "map", "map_kind", "titles", "redirects", "mentions")
# a causal or seq2seq model is refused before the data is read: the classifier needs BERT's embedding layers
ENCODER = replace(MODEL_OPTION, kind="masked-model",
                  help="FewRel fine-tunes a BERT-style encoder (a masked LM, e.g. models/bert-base-cased)")
_SPLITS: dict[tuple[str, str], dict[str, list[Sentence]]] = {}


def _split(data_dir) -> dict[str, list[Sentence]]:
    """The file's split, read once per content (a file edited between two runs of one process is read again)."""
    from eval.datadir import fingerprint
    from eval.fewrel import DATA_FILE

    root = resolve_fewrel_dir(data_dir)
    key = (str(root), fingerprint([root / DATA_FILE]))
    if key not in _SPLITS:
        _SPLITS[key] = load_split(root)
    return _SPLITS[key]


def classes_of(parts: dict[str, list[Sentence]]) -> list[str]:
    """Every relation of the file, in file order: the classifier's classes."""
    return list(dict.fromkeys(s.relation for part in parts.values() for s in part))


def _settings(ctx: PredictorContext) -> list:
    """One `TrainSettings` per learning rate asked."""
    from lm.relation_classifier import TrainSettings

    o = ctx.options
    rates = [float(x) for x in o.get("lr", "2e-5").split(",")]  # checked as --set values (`Option.check`)
    return [TrainSettings(lr=r, batch_size=int(o.get("train_batch", "32")), epochs=int(o.get("epochs", "10")),
                          seed=int(o.get("train_seed", "0")), dtype=ctx.dtype) for r in dict.fromkeys(rates)]


def _fingerprint(value: str) -> str:
    from lm.loading import files_fingerprint

    return files_fingerprint(value) if Path(value).expanduser().exists() else value


@dataclass
class FormModel:
    """One fine-tuned classifier and the input builder of its form."""

    form: str
    trained: object
    builder: object
    mapped: np.ndarray | None
    titles: list[str]


class ClassifierPredictor:
    """Answers each sentence with every class, ranked by the (averaged) class probabilities.

    A sentence's probabilities are computed with every test sentence of its relation, in the test part's order,
    whichever of them a call asks: batches (and their padding) then hold the same sentences in a run, a resume
    asking only what is left, and a `--limit` sample alike, so a resumed run records the very same numbers."""

    ranks = "list"
    slots = ("object",)

    def __init__(self, name: str, models: list[FormModel], sentences: dict[str, Sentence], classes: list[str],
                 described: dict, batch_size: int) -> None:
        self.name, self.models, self.sentences, self.classes = name, models, sentences, classes
        self.described, self.batch_size = described, batch_size
        self._by_relation: dict[str, tuple[dict[str, int], np.ndarray, np.ndarray, list[str]]] = {}

    def describe(self) -> dict:
        return self.described

    def answer_space_size(self, relation: str) -> int:
        """Every sentence is ranked over all classes."""
        return len(self.classes)

    def _relation(self, relation: str) -> tuple[dict[str, int], np.ndarray, np.ndarray, list[str]]:
        """(row by sentence uid, mean probabilities, fallbacks, inputs shown) of every test sentence of `relation`."""
        if relation not in self._by_relation:
            from lm.relation_classifier import predict_proba

            sentences = [s for s in self.sentences.values() if s.relation == relation]
            total = np.zeros((len(sentences), len(self.classes)), dtype=np.float64)
            fallback = np.zeros(len(sentences), dtype=np.int64)
            shown: list[str] = []
            for m in self.models:
                inputs = m.builder.build(sentences, m.form)
                t = m.trained
                total += predict_proba(t.encoder, t.head, t.batcher(m.mapped), inputs, self.batch_size)
                fallback += [x.fallback for x in inputs]
                if not shown:
                    shown = [" ".join(m.builder.view(x, m.titles)) for x in inputs]
            total /= len(self.models)
            self._by_relation[relation] = ({s.uid: k for k, s in enumerate(sentences)}, total, fallback, shown)
        return self._by_relation[relation]

    def predict(self, queries: list[Query], depth: int) -> list[Prediction]:
        out = []
        for q in queries:
            sentence = self.sentences[q.fact_uid]
            rows, total, fallback, shown = self._relation(sentence.relation)
            k = rows[sentence.uid]
            order = sorted(range(len(self.classes)), key=lambda c: (-total[k, c], c))
            answers = tuple(Answer(self.classes[c], float(total[k, c])) for c in order)
            out.append(Prediction(q.uid, answers, extra={"input": shown[k], "fallback": int(fallback[k])}))
        return out


def _entity_side(ctx: PredictorContext, model: str):
    """The probing E-BERT's resources (map W∘F, linker) for this model, and a cached link by entity. The map is fit
    on the float32 embeddings the classifier holds, whatever precision it computes in."""
    from bridge.predictors.entities import resources

    res = resources(replace(ctx, options={**ctx.options, "model": model}, dtype="float32"))
    seen: dict[str, int | None] = {}

    def link(entity: Entity) -> int | None:
        if entity.key not in seen:
            found = res.linker.link(entity)
            seen[entity.key] = None if found is None else int(found.row)
        return seen[entity.key]

    return res, link


def make_classifier(spec: str, ctx: PredictorContext, out: Path | None) -> ClassifierPredictor:
    from lm.relation_classifier import train_classifier
    from lm.relation_inputs import RelationInputBuilder

    forms = FORMS.get(spec, ("bert",))
    model = ctx.options.get("model") or (spec if spec not in FORMS else None)
    if not model:
        raise ConfigError(f"{spec} needs --set model=PATH (a BERT-family masked LM, e.g. models/bert-base-cased)")
    if any(f != "bert" for f in forms) and not ctx.options.get("wikipedia2vec"):
        raise ConfigError(f"{spec} needs --set wikipedia2vec=PATH (the entity vectors E-BERT maps into BERT's space)")
    if out is None:
        raise ConfigError("fine-tuned classifiers are trained inside a run directory (kbc run fewrel --out DIR)")
    parts = _split(ctx.data_dir)
    from eval.fewrel import DATA_FILE, check_parts

    check_parts(parts, resolve_fewrel_dir(ctx.data_dir) / DATA_FILE, ("train", "dev"))
    classes = classes_of(parts)
    grid = _settings(ctx)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    base = {"model": _fingerprint(model), "split": {k: len(v) for k, v in parts.items()},
            "data": hashlib.sha256("\n".join(s.uid + "\x1f" + s.text for p in parts.values() for s in p)
                                   .encode()).hexdigest()[:16]}
    models: list[FormModel] = []
    described: dict = {"predictor": "relation-classifier", "spec": spec, "forms": list(forms), "model": model,
                       "settings": [s.__dict__ for s in grid], "classes": classes, "ranks": "list", "slots": ["object"],
                       "models": {}}
    for form in forms:
        mapped, titles, link, identity = None, [], None, {**base, "form": form}
        if form != "bert":
            res, link = _entity_side(ctx, model)
            mapped, titles = res.mapped, list(res.emb.titles)
            identity["entities"] = {k: _fingerprint(ctx.options[k]) for k in ENTITY_KEYS if ctx.options.get(k)}
            identity["link_rule"] = LINK_RULE  # models trained on inputs linked another way are not resumed
        builder = RelationInputBuilder(tokenizer, link)
        train_in = builder.build(parts["train"], form)
        dev_in = builder.build(parts["dev"], form)
        coverage = _coverage(form, {"train": train_in, "dev": dev_in, "test": builder.build(parts["test"], form)})
        if coverage:
            print(f"fewrel {spec} ({form}): marked entities with an entity vector: " + ", ".join(
                f"{part} {c['with_vector']}/{c['entities']}" for part, c in coverage.items())
                + "; the rest keep their word pieces", file=sys.stderr)
        tried = []
        for settings in grid:
            digest = hashlib.sha256(json.dumps({**identity, "settings": settings.__dict__}, sort_keys=True)
                                    .encode()).hexdigest()[:10]
            folder = Path(out) / "models" / f"{form}-{digest}"
            trained = train_classifier(folder, model, tokenizer, identity, classes,
                                       (train_in, [s.relation for s in parts["train"]]),
                                       (dev_in, [s.relation for s in parts["dev"]]), mapped, settings, ctx.device,
                                       ctx.progress)
            tried.append((trained.info["best"]["f1"], -len(tried), trained, folder, settings))
        _, _, trained, folder, settings = max(tried, key=lambda t: t[:2])  # ties: the rate listed first
        models.append(FormModel(form, trained, builder, mapped, titles))
        described["models"][form] = {"folder": str(folder), "lr": settings.lr, "best": trained.info.get("best"),
                                     "dev": trained.info.get("history"), "entity_coverage": coverage or None,
                                     "dev_f1_by_lr": {str(s.lr): round(f1, 4) for f1, _, _, _, s in tried}}
    sentences = {s.uid: s for s in parts["test"]}
    # what a leaderboard lists beside it, as for a probed LM: every weight it asks (an ensemble's models together)
    described.update({"parameters": sum(int(x.numel()) for m in models
                                        for x in (*m.trained.encoder.parameters(), *m.trained.head.parameters())),
                      "dtype": models[0].trained.dtype, "device": str(ctx.device)})
    return ClassifierPredictor(spec, models, sentences, classes, described, ctx.batch_size)


def _coverage(form: str, built: dict[str, list]) -> dict[str, dict[str, int]]:
    """Per part, marked entities and how many got an entity vector (the rest fell back to word pieces)."""
    if form == "bert":
        return {}
    return {part: {"entities": 2 * len(items), "with_vector": 2 * len(items) - sum(x.fallback for x in items),
                   "fallback": sum(x.fallback for x in items)} for part, items in built.items()}


class KbPredictor:
    """The relations the graph store holds from a sentence's head to its tail (its classes first, file order)."""

    ranks = "list"
    slots = ("object",)

    def __init__(self, spec: str, held: dict[str, list[str]], graphs: list[str], classes: list[str]) -> None:
        self.spec, self.held, self.graphs, self.classes = spec, held, graphs, classes

    def describe(self) -> dict:
        answered = sum(1 for rels in self.held.values() if set(rels) & set(self.classes))
        return {"predictor": self.spec, "graphs": self.graphs, "ranks": "list", "slots": ["object"],
                "coverage": {"sentences": len(self.held), "with_a_class": answered}}

    def predict(self, queries: list[Query], depth: int) -> list[Prediction]:
        out = []
        for q in queries:
            rels = self.held[q.fact_uid]
            ranked = [r for r in self.classes if r in rels]
            out.append(Prediction(q.uid, tuple(Answer(r, 1.0) for r in ranked),
                                  extra={"kb_relations": sorted(rels)}))
        return out


def kb_lama_dir(spec: str, data_dir) -> Path:
    """The LAMA copy the KB answers from: the one beside the FewRel folder, else KBC_DATA's."""
    from eval.datadir import DEFAULT_DIR, ENV_VAR, resolve_data_dir
    from eval.errors import DataError

    beside = Path(data_dir).parent
    try:
        return resolve_data_dir(beside)
    except DataError:
        try:
            return resolve_data_dir(None)
        except DataError:
            where = f"${ENV_VAR}" if os.environ.get(ENV_VAR) else f"./{DEFAULT_DIR}"
            raise ConfigError(f"{spec} answers from the T-REx graphs of a LAMA copy, and neither {beside} (no "
                              f"lama/relations.jsonl beside fewrel/) nor {where} holds one: run `kbc data download "
                              f"lama --dest {beside}` or point {ENV_VAR} at a LAMA copy") from None


def check_kb_data(spec: str, options: dict, corpora: list[str], data_dir: Path) -> None:
    """`plan_predictors`: the LAMA copy the KB answers from is found before FewRel is read or --out is made."""
    kb_lama_dir(spec, data_dir)


def _trex(spec: str, data_dir, cache_dir):
    from eval.corpora import load_corpus

    return load_corpus("trex", kb_lama_dir(spec, data_dir), cache_dir=cache_dir)


def kb_data(spec: str, data_dir, cache_dir) -> dict[str, dict[str, str]]:
    """What the KB's graphs are built from (each T-REx relation's data version): part of its identity, so a rerun
    on an edited T-REx file or on another --data-dir's data never keeps answers of the old graphs."""
    from eval.lama import relation_versions

    return {"trex": relation_versions(_trex(spec, data_dir, cache_dir))}


def make_kb_classifier(spec: str, ctx: PredictorContext) -> KbPredictor:
    """T-REx's gold graphs (and with `kb-inferred` the facts the axioms derive), asked per head/tail pair."""
    from bridge.predictors.kmir import make_kb, make_kb_inferred
    from kb.relations_between import relations_between

    lama = kb_lama_dir(spec, ctx.data_dir)
    trex = _trex(spec, ctx.data_dir, ctx.cache_dir)
    inner = (make_kb_inferred if spec == "kb-inferred" else make_kb)(spec, replace(ctx, corpus=trex, data_dir=lama))
    graphs = list(inner.kb.graphs)
    parts = _split(ctx.data_dir)
    test = parts["test"]
    found = relations_between(ctx.store, [(s.head, s.tail) for s in test], graphs)
    held = {s.uid: sorted(found[(s.head.key, s.tail.key)]) for s in test}
    return KbPredictor(spec, held, graphs, classes_of(parts))


make_kb_classifier.data = kb_data  # `PlannedPredictor.identity`: the data it answers from
make_kb_classifier.check_inputs = check_kb_data


def _options(spec: str) -> tuple[Option, ...]:
    if spec not in FORMS or spec == "bert":
        return (ENCODER, *TRAIN_OPTIONS)
    return (ENCODER, *(o for o in EBERT_OPTIONS if o.key in ENTITY_KEYS), *TRAIN_OPTIONS)


def resolve_factory(name: str, spec: str, out: Path | None):
    """The factory `kbc run fewrel` builds predictor `name` (`spec`) with, or a one-line refusal.

    `ebert=PATH`, `ebert-concat=PATH`, `ebert-avg=PATH`: that E-BERT form on the model at PATH."""
    if spec in KB_SPECS:
        return declares()(make_kb_classifier)
    from bridge.predictors.registry import ENTRIES

    if spec not in FORMS and spec not in ENTRIES:  # a model path or hub id
        ENCODER.check(spec, f"--predictors {name}")
    if name in FORMS and name != "bert" and spec not in FORMS and spec not in ENTRIES:
        model = spec

        @declares(*(replace(o, required=False) if o.key == "model" else o for o in _options(name)),
                  settings=("dtype",))
        def named(_spec: str, ctx: PredictorContext) -> ClassifierPredictor:
            return make_classifier(name, replace(ctx, options={**ctx.options, "model": model}), out)

        named.identity_extra = LINKED  # type: ignore[attr-defined]
        return named
    if spec in ENTRIES and spec not in FORMS:
        raise ConfigError(f"predictor {spec} does not classify sentences; `kbc run fewrel` takes "
                          f"{', '.join([*FORMS, *KB_SPECS])} or a model path / hub id (BERT on that model)")
    options = _options(spec)
    if spec not in FORMS:
        options = tuple(replace(o, required=False) if o.key == "model" else o for o in options)

    @declares(*options, settings=("dtype",))
    def factory(name: str, ctx: PredictorContext) -> ClassifierPredictor:
        return make_classifier(name, ctx, out)

    if spec != "bert":  # as for probing
        factory.identity_extra = LINKED  # type: ignore[attr-defined]
    return factory
