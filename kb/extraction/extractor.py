"""The relation extractor: a linear model over hashed pair features, trained and applied k-fold.

Method: one-vs-rest logistic regression (scikit-learn `SGDClassifier`,
log loss), classes = the corpus relations plus `NA` ("no relation"). Training rows of a fold:
every distantly labelled pair of its training sentences, plus up to `negatives` sampled
unlabelled pairs per sentence as `NA`. Folds group sentences by subject entity (sentences that
share a subject, or that are aligned to facts of several subjects, fall in one group), so a
sentence is only ever labelled by a model that saw no sentence aligned to a fact of its subjects. Each pair's
prediction is the arg-max class; its confidence is that class's probability.
"""

from __future__ import annotations

import random
import sys
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from eval.errors import ConfigError
from eval.types import Fact
from kb.extraction.candidates import Sentence, candidate_pairs
from kb.extraction.features import sentence_pair_features

try:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.linear_model import SGDClassifier
except ImportError:  # pragma: no cover - depends on the installed extras
    raise ConfigError("the relation extractor needs scikit-learn: pip install 'kbcompare[re]'") from None

NA = "NA"
N_FEATURES = 2**20


@dataclass(frozen=True)
class Settings:
    folds: int = 5
    window: int = 15  # max tokens between the two mentions of a candidate pair
    negatives: int = 2  # sampled "no relation" pairs per training sentence
    alpha: float = 1e-6
    epochs: int = 5
    seed: int = 0

    def describe(self) -> dict:
        return {"model": "SGDClassifier(log_loss, one-vs-rest)", "features": f"hashed 2^{N_FEATURES.bit_length() - 1}",
                **self.__dict__}


@dataclass(frozen=True, slots=True)
class Extracted:
    """One triple extracted from one sentence: mention indices, relation, confidence."""

    sentence: int
    m1: int
    m2: int
    relation: str
    confidence: float


@dataclass
class Extraction:
    triples: list[Extracted]
    folds: list[int]  # fold of each sentence
    # per relation: held-out pair counts {"tp", "predicted", "gold"}
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    train_rows: int = 0


class _Groups:
    """Union-find over subject keys."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def assign_folds(sentences: Sequence[Sentence], facts: Sequence[Fact], k: int) -> list[int]:
    """Fold of each sentence: a hash of the smallest subject key of its connected subject group."""
    groups = _Groups()
    for sent in sentences:
        keys = [facts[i].subject.key for i in sent.facts]
        for key in keys:
            groups.find(key)
        for key in keys[1:]:
            groups.union(keys[0], key)
    out = []
    for sent in sentences:
        root = groups.find(facts[sent.facts[0]].subject.key) if sent.facts else sent.text
        out.append(zlib.crc32(root.encode()) % k)
    return out


class PairClassifier:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model = SGDClassifier(loss="log_loss", alpha=settings.alpha, max_iter=settings.epochs, tol=None,
                                   random_state=settings.seed, n_jobs=2)

    def fit(self, x, labels: Sequence[str]) -> PairClassifier:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model.fit(x, np.asarray(labels))
        return self

    def predict(self, x) -> tuple[list[str], list[float]]:
        if x.shape[0] == 0:
            return [], []
        proba = self.model.predict_proba(x)
        best = proba.argmax(axis=1)
        classes = self.model.classes_
        return [str(classes[b]) for b in best], proba[np.arange(len(best)), best].tolist()


def hash_features(sentences: Sequence[Sentence], pairs: Sequence[list[tuple[int, int]]], progress: bool):
    """One sparse row per candidate pair, sentence by sentence."""
    hasher = FeatureHasher(N_FEATURES, input_type="string", alternate_sign=False, dtype=np.float32)
    if not any(pairs):  # FeatureHasher cannot take an empty input
        from scipy.sparse import csr_matrix

        return csr_matrix((0, N_FEATURES), dtype=np.float32)
    rows = (
        feats
        for s, ps in tqdm(zip(sentences, pairs), total=len(sentences), desc="pair features", unit="sent",
                          disable=not progress, file=sys.stderr)
        for feats in sentence_pair_features(s, ps)
    )
    return hasher.transform(rows).tocsr()


def kfold_extract(sentences: Sequence[Sentence], facts: Sequence[Fact], settings: Settings | None = None,
                  progress: bool = True) -> Extraction:
    """Train on k-1 folds, extract from the held-out fold, for every fold."""
    settings = settings or Settings()
    folds = assign_folds(sentences, facts, settings.folds)
    pairs = [candidate_pairs(s, settings.window) for s in sentences]
    starts = np.cumsum([0] + [len(p) for p in pairs])
    x_all = hash_features(sentences, pairs, progress)
    rng = random.Random(settings.seed)
    negatives: list[list[int]] = []
    for s, ps in zip(sentences, pairs):
        unlabelled = [n for n, p in enumerate(ps) if p not in s.gold]
        negatives.append(rng.sample(unlabelled, min(settings.negatives, len(unlabelled))))
    result = Extraction([], folds)
    for fold in tqdm(range(settings.folds), desc="k-fold training", disable=not progress, file=sys.stderr):
        rows, y_train = [], []
        for idx, s in enumerate(sentences):
            if folds[idx] == fold:
                continue
            for n, p in enumerate(pairs[idx]):
                for rel in sorted(s.gold.get(p, ())):
                    rows.append(starts[idx] + n)
                    y_train.append(rel)
            for n in negatives[idx]:
                rows.append(starts[idx] + n)
                y_train.append(NA)
        result.train_rows += len(y_train)
        if len(set(y_train)) < 2:
            continue  # nothing to learn from (tiny inputs): this fold extracts nothing
        clf = PairClassifier(settings).fit(x_all[np.asarray(rows, dtype=np.int64)], y_train)
        test = [idx for idx in range(len(sentences)) if folds[idx] == fold]
        test_rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in test]) if test else np.zeros(0, int)
        labels, confs = clf.predict(x_all[test_rows])
        at = 0
        for idx in test:
            for n, (i, j) in enumerate(pairs[idx]):
                label, conf = labels[at + n], confs[at + n]
                _score(result.scores, label, sentences[idx].gold.get((i, j), set()))
                if label != NA:
                    result.triples.append(Extracted(idx, i, j, label, conf))
            at += len(pairs[idx])
    return result


def _score(scores: dict[str, dict[str, int]], label: str, gold: set[str]) -> None:
    for rel in gold:
        scores.setdefault(rel, {"tp": 0, "predicted": 0, "gold": 0})["gold"] += 1
    if label != NA:
        row = scores.setdefault(label, {"tp": 0, "predicted": 0, "gold": 0})
        row["predicted"] += 1
        row["tp"] += label in gold


def precision_recall(scores: dict[str, dict[str, int]]) -> dict[str, tuple[float, float]]:
    """Held-out pair-level precision and recall (percent) per relation."""
    out = {}
    for rel, c in sorted(scores.items()):
        p = 100.0 * c["tp"] / c["predicted"] if c["predicted"] else 0.0
        r = 100.0 * c["tp"] / c["gold"] if c["gold"] else 0.0
        out[rel] = (p, r)
    return out
