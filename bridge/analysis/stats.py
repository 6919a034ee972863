"""Per-fact statistics of a run (LAMA Fig. 3), stored in `RUN/analysis/fact_stats.parquet`.

Per (corpus, fact): SM, OM and co-occurrence from a text index (`kb.text.fact_stats`); ST, the
subject's whitespace tokens; SWP, its word pieces under a tokenizer; SOCS, the cosine of the
subject and object vectors (mean input embeddings of a masked LM's word pieces, or wikipedia2vec
entity vectors, falling back to their words). Per (corpus, predictor, fact): LPFP, the score of
the first answer, only for predictors whose scores are log-probabilities (LMs); KB and
retrieval scores are counts or BM25 and would correlate as something else, so they stay null.

`instances.parquet` carries these columns (`with_fact_stats`) from the scoring after them, or from
`write_fact_stats` when the run's record allows it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from bridge.run.fact_columns import (
    FACT_STATS,
    OTHER_STATS,
    TEXT_STATS,
    analysis_dir,
    fact_uid,
    predictor_kinds,
)
from bridge.run.instances import atomic_parquet
from bridge.run.parquet_files import read_frame
from eval.durable import write_atomic
from eval.errors import ConfigError, DataError
from eval.file_names import NAME_BYTES
from eval.types import Fact

FACT_COLUMNS: dict[str, str] = {"corpus": "string", "uid": "string", "relation": "string",
                                **{s: "Int64" for s in TEXT_STATS}, "st": "Int64", "swp": "Int64",
                                "socs": "Float64"}
STATISTICS = (*TEXT_STATS, *OTHER_STATS, "lpfp")
Note = Callable[[str], None]


def atomic_json(obj, target: Path) -> Path:
    """Write JSON whole, synced: a reader, and the disk after a power cut, never holds half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, json.dumps(obj, indent=1, ensure_ascii=False).encode("utf-8", NAME_BYTES),
                 target.parent / f".{target.name}.{os.getpid()}.tmp")
    return target


# -- the run's facts ---------------------------------------------------------------------------
def check_lama_run(run_dir: Path, run_config: dict, option: str = "") -> None:
    """The statistics are per LAMA fact (one object query per fact): other experiments' units are not facts."""
    experiment = run_config.get("experiment", "lama")
    if experiment != "lama":
        where = f"{option} {run_dir}" if option else str(run_dir)
        raise ConfigError(f"{where} is a `kbc run {experiment}` run: per-fact statistics and correlations need a "
                          "`kbc run lama` run (one ranked object query per fact)")


def read_instances(path: Path) -> pd.DataFrame:
    """`instances.parquet`, or a one-line error saying how to get a sound one back."""
    import pyarrow as pa

    try:
        return read_frame(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise DataError(f"{path}: unreadable ({first}); delete it: `kbc analyze` rebuilds it from the "
                        "run's predictions") from None


def run_instances(run_dir: Path) -> pd.DataFrame:
    """The run's per-fact table (`instances.parquet`, or rebuilt from the predictions when absent)."""
    from bridge.run.directory import open_run
    from bridge.run.instances import FILENAME, instances_frame

    check_lama_run(Path(run_dir), open_run(run_dir).config)
    path = Path(run_dir) / FILENAME
    frame = read_instances(path) if path.exists() else instances_frame(Path(run_dir))
    if frame.empty or "uid" not in frame.columns or "corpus" not in frame.columns:
        raise DataError(f"{run_dir} holds no predictions yet; run `kbc run lama ... --out {run_dir}` first")
    return frame


def run_facts(run_dir: Path, frame: pd.DataFrame, data_dir: str | Path | None) -> dict[str, list[Fact]]:
    """Per corpus, the facts of the data the run asked about, in data order."""
    from bridge.run.directory import open_run
    from eval.corpora import load_corpus

    run = open_run(run_dir)
    data_dir = data_dir or run.config.get("data_dir")
    compat = run.config.get("settings", {}).get("compat")
    out = {}
    for corpus in run.corpora:
        mine = frame[frame["corpus"] == corpus]
        asked = {fact_uid(u) for u in mine["uid"]}
        if not asked:
            continue
        loaded = load_corpus(corpus, data_dir, sorted(set(mine["relation"])), compat=compat)
        out[corpus] = [f for f in loaded.facts if f.uid in asked]
    return out


# -- statistics --------------------------------------------------------------------------------
def subject_tokens(label: str) -> int:
    return len(label.split())


def load_tokenizer(path: str | Path, option: str = "--tokenizer"):
    """The tokenizer in `path`; `option` is the flag named in the error when there is none."""
    from transformers import AutoTokenizer

    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"{option} {path}: not a folder with tokenizer files")
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError):
        from transformers import BertTokenizer

        if (path / "vocab.txt").is_file():
            return BertTokenizer.from_pretrained(str(path), do_lower_case="uncased" in path.name)
        raise ConfigError(f"{option} {path}: no tokenizer files transformers can read") from None


def default_tokenizer(run_config: dict, data_dir: str | Path | None) -> Path | None:
    """The first masked LM of the run, else bert-base-cased from the shared tokenizers beside the data."""
    for configs in run_config.get("predictor_configs", {}).values():
        for described in configs.values():
            # "model" is the folder; a masked LM's "path" is its scoring path (`last-layer+head-at-mask`)
            if isinstance(described, dict) and described.get("kind") == "masked-lm" and described.get("model"):
                if Path(described["model"]).is_dir():
                    return Path(described["model"])
    data = data_dir or run_config.get("data_dir")
    if data:
        from eval.datadir import absolute_path

        candidate = absolute_path(data).parent / "tokenizers" / "bert-base-cased"
        if candidate.is_dir():
            return candidate
    return None


class InputEmbeddings:
    """Mean input embedding of a label's word pieces in a language model (LAMA's SOCS).

    LAMA takes them from BERT; SOCS only needs the static input embedding matrix and the model's own
    tokenizer, which a causal (GPT-2) or encoder-decoder LM has as well, so any of them is accepted.
    """

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        what = "a language model folder saved with save_pretrained (config.json, weights, tokenizer files)"
        if not path.is_dir():
            raise ConfigError(f"--embeddings {path}: not a folder; pass {what}")
        if not (path / "config.json").is_file():
            from lm.loading import has_tokenizer_files

            found = "tokenizer files but no model" if has_tokenizer_files(path) else "no model"
            raise ConfigError(f"--embeddings {path}: {found} (no config.json); pass {what}")
        self.tokenizer = load_tokenizer(path, "--embeddings")
        self.matrix = _input_embeddings(path)

    def vector(self, label: str):
        ids = self.tokenizer(label, add_special_tokens=False)["input_ids"]
        return self.matrix[ids].mean(axis=0) if ids else None


def _input_embeddings(path: Path):
    """The input embedding matrix of the model in `path` (masked, causal or encoder-decoder), as float32."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM

    try:
        config = AutoConfig.from_pretrained(str(path))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--embeddings {path}: config.json is not a model transformers knows "
                          f"({str(exc).splitlines()[0][:120]})") from None
    model = None
    for auto in (AutoModelForMaskedLM, AutoModelForCausalLM, AutoModel):
        try:
            model = auto.from_pretrained(str(path), config=config)
            break
        except ValueError as exc:  # this architecture has no head of that kind: try the next
            if "Unrecognized configuration class" not in str(exc):
                raise ConfigError(f"--embeddings {path}: the model cannot be loaded "
                                  f"({str(exc).splitlines()[0][:160]})") from None
        except Exception as exc:  # weights missing (OSError) or damaged (the safetensors and torch errors)
            raise ConfigError(f"--embeddings {path}: no model weights transformers can read "
                              f"({str(exc).splitlines()[0][:160]})") from None
    embeddings = model.get_input_embeddings() if model is not None else None
    if embeddings is None or not hasattr(embeddings, "weight"):
        raise ConfigError(f"--embeddings {path}: a {config.model_type} model has no input embeddings to take SOCS "
                          "from; pass a masked or causal language model")
    return embeddings.weight.detach().float().numpy()


class Wikipedia2vecVectors:
    """An entity's wikipedia2vec vector by its title, else the mean of its words' vectors."""

    def __init__(self, path: str | Path) -> None:
        from lm.entities.embeddings import load_embeddings

        self.emb = load_embeddings(path)

    def vector(self, label: str):
        row = self.emb.entity_row(label)
        if row is not None:
            return self.emb.entity_vectors[row]
        rows = [r for w in label.split() if (r := self.emb.word_row(w)) is not None]
        return self.emb.word_vectors[rows].mean(axis=0) if rows else None


def cosine(a, b) -> float | None:
    import numpy as np

    if a is None or b is None:
        return None
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return None
    value = float(np.dot(a, b) / (na * nb))
    return value if math.isfinite(value) else None


SUBJECT_STATS = ("sm", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs")  # they read the subject label


def subjectless(fact: Fact) -> bool:
    """A SQuAD cloze has no subject: its label is the placeholder "Squad", whose mentions, tokens and vector would
    be counted for every fact alike and correlate as noise; only the object's statistics hold."""
    from eval.lama import SQUAD_RELATION

    return fact.cloze is not None and fact.relation == SQUAD_RELATION.id


def fact_stats_frame(facts: dict[str, list[Fact]], index=None, tokenizer=None, vectors=None,
                     progress: bool = False) -> pd.DataFrame:
    """`FACT_COLUMNS` for every fact; a statistic whose source is None is left null."""
    from kb.text.fact_stats import fact_text_stats

    rows = []
    cache: dict[str, object] = {}

    def vec(label: str):
        if label not in cache:
            cache[label] = vectors.vector(label)
        return cache[label]

    for corpus, items in facts.items():
        text = fact_text_stats(items, index, progress=progress) if index is not None else [{} for _ in items]
        for f, t in zip(items, text):
            row = {
                "corpus": corpus, "uid": f.uid, "relation": f.relation,
                **{s: t.get(s) for s in TEXT_STATS},
                "st": subject_tokens(f.subject.label),
                "swp": len(tokenizer.tokenize(f.subject.label)) if tokenizer is not None else None,
                "socs": cosine(vec(f.subject.label), vec(f.object.label)) if vectors is not None else None,
            }
            if subjectless(f):
                row.update(dict.fromkeys(SUBJECT_STATS))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(FACT_COLUMNS)).astype(FACT_COLUMNS)


def unrecorded_predictors(frame: pd.DataFrame, run_config: dict) -> list[str]:
    """Predictors with rows whose kind the run never recorded (stopped before they were built)."""
    kinds = predictor_kinds(run_config)
    return sorted({p for p in frame["predictor"].dropna().unique() if p not in kinds})


def write_fact_stats(run_dir: Path, stats: pd.DataFrame) -> str | None:
    """Write `fact_stats.parquet`, then `instances.parquet` again with its columns, by the writer scoring uses and
    recorded as scoring records it (`bridge.run.freshness.rewrite_recorded`): the run stays readable, and a table
    or summary edited by hand is still refused. Returns why the table was left as it was, else None.

    Under the run's lock: a `kbc run` writing into it meanwhile is refused, not interleaved."""
    from bridge.run.directory import open_run
    from bridge.run.freshness import rewrite_recorded
    from bridge.run.instances import write_instances
    from bridge.run.run_lock import RunLock

    run_dir = Path(run_dir)
    with RunLock(run_dir):
        atomic_parquet(stats, analysis_dir(run_dir) / FACT_STATS)
        return rewrite_recorded(run_dir, open_run(run_dir).config, lambda: write_instances(run_dir))


def available(frame: pd.DataFrame, statistics: Sequence[str] = STATISTICS) -> list[str]:
    return [s for s in statistics if s in frame.columns and frame[s].notna().any()]


def covers(stats: pd.DataFrame | None, frame: pd.DataFrame) -> bool:
    """Whether `stats` has a row for every fact of the run (a run extended later needs them again), and none computed
    by an earlier version from SQuAD's placeholder subject."""
    from eval.lama import SQUAD_RELATION

    if stats is None:
        return False
    if stats.loc[stats["relation"] == SQUAD_RELATION.id, list(SUBJECT_STATS)].notna().any().any():
        return False
    have = set(zip(stats["corpus"], stats["uid"]))
    return all(key in have for key in zip(frame["corpus"], frame["uid"].map(fact_uid)))
