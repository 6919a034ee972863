"""One query asked of the gold KB and of every predictor side by side, as `kbc serve` shows it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from lm.batches import callers_threads

ANSWER_COLUMNS = ("side", "name", "status", "rank", "label", "score", "id", "gold")


class Answers:
    """Every side's answers to one query: `.frame` (one row per answer, and one per side that gave none),
    `.gold` (what the gold KB holds), `.sets` (LM-KBC: each predictor's set), `.columns` and `.body` (the explorer's
    JSON object)."""

    def __init__(self, body: dict) -> None:
        self.body = body

    @property
    def columns(self) -> list[dict]:
        """Each side's column as the explorer's JSON API returns it (`side(name)` picks one)."""
        return self.body["columns"]

    @property
    def gold(self) -> list[str]:
        """What the gold KB holds for the subject and relation (empty for a subject the corpus lacks)."""
        return self.body["gold"]

    @property
    def prompt(self) -> str | None:
        """The sentence the language models were asked (None where a cloze corpus has no fact to ask)."""
        return self.body["query"]["prompt"]

    def side(self, name: str) -> dict:
        """One side's column by its name ("gold KB", "freq", "bert", ...)."""
        for column in self.columns:
            if column["name"] == name:
                return column
        from eval.errors import ConfigError

        raise ConfigError(f"no side {name!r}; sides: {', '.join(c['name'] for c in self.columns)}")

    @property
    def sets(self) -> dict[str, list[str] | None]:
        """A set-valued corpus's (LM-KBC's): each predictor's answer set, as `kbc run lmkbc` cuts it with the
        predictor's `set=` rule (every answer without one), each object as `kbc show` prints it: `label (id)` where
        the data ties a label to the id, else the id alone; None where the rule needs a run (`threshold-tuned`).
        Empty for other corpora."""
        return {c["name"]: None if c["set"] is None else [_labelled(a) for a in c["set"]]
                for c in self.columns if "set" in c}

    @property
    def frame(self) -> pd.DataFrame:
        """One row per answer (`side, name, status, rank, label, score, id, gold`), and one per side that gave
        none."""
        rows = []
        for c in self.columns:
            head = {"side": c["side"], "name": c["name"], "status": c["status"]}
            rows += [{**head, "rank": i, **{k: a.get(k) for k in ("label", "score", "id", "gold")}}
                     for i, a in enumerate(c["answers"], 1)] or [head]
        return pd.DataFrame(rows, columns=list(ANSWER_COLUMNS))

    def __repr__(self) -> str:
        return f"Answers({self.prompt!r}: gold {self.gold}; sides {', '.join(c['name'] for c in self.columns)})"


def _labelled(answer: dict) -> str:
    """`People's Republic of China (Q148)`; an id the data ties no label to (its label is the id), or an answer
    linked to no id, alone."""
    label, ident = answer.get("label"), answer.get("id")
    return f"{label} ({ident})" if ident and label and label != ident else str(label or ident)


class Sides:
    """The gold KB of a corpus and a set of predictors, built once (models load once) and asked many times.

    The options are `kbc serve`'s: `predictors` as `kbc run --predictors` (["freq", "bert=/models/bert"]),
    `settings` as `--set` ({"bert.candidates": "common"}). Use as a context manager, or call `close()`."""

    def __init__(self, predictors: str | Iterable[str] | Mapping[str, str | Mapping[str, object]] = (), *,
                 corpus: str = "trex", relations: str | Iterable[str] = (), data_dir: str | Path | None = None,
                 settings: str | Iterable[str] | Mapping[str, object] | None = None, store: str | None = None,
                 text_index: str | None = None, coherency: str | None = None, device: str = "cpu",
                 batch_size: int = 32,
                 cache_dir: str | Path | None = None) -> None:
        from bridge.run.options import parse_sets
        from bridge.serve.explorer import Explorer, ExplorerConfig
        from kbcompare.runs import predictor_items, settings_items

        items, extra = predictor_items(predictors)
        sets = parse_sets([*extra, *settings_items(settings or {})])
        cfg = ExplorerConfig(data_dir=None if data_dir is None else str(data_dir), corpus=corpus,
                             relations=[relations] if isinstance(relations, str) else list(relations),
                             predictors=items, options=sets, cache_dir=None if cache_dir is None else Path(cache_dir),
                             store=store, text_index=text_index, coherency=coherency, device=device,
                             batch_size=batch_size)
        self.explorer = Explorer.start(cfg)

    def ask(self, subject: str = "", relation: str = "", *, cloze: str = "", k: int = 10) -> Answers:
        """Ask `subject` + `relation` (e.g. "Dante", "P19"), or a cloze with one [MASK], of every side."""
        from bridge.serve.sides import Ask, answer, check

        asked = check(Ask(subject=subject, relation=relation, cloze=cloze, k=k), self.explorer)
        return Answers(self.explorer.call(answer, self.explorer, asked))

    def close(self) -> None:
        self.explorer.close()

    def __enter__(self) -> Sides:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ask(subject: str = "", relation: str = "", *, cloze: str = "", k: int = 10,
        predictors: str | Iterable[str] | Mapping[str, str | Mapping[str, object]] = (), **options: object) -> Answers:
    """One query asked of the gold KB and of `predictors` side by side (`Sides` takes the other options; keep a
    `Sides` open to ask many queries without loading the models each time)."""
    relations = options.pop("relations", None)
    if relations is None and relation and not cloze:
        relations = [relation]  # only the asked relation's facts are loaded
    from kbcompare.runs import console_bars

    with console_bars(), callers_threads(), Sides(predictors, relations=relations or (), **options) as sides:
        return sides.ask(subject, relation, cloze=cloze, k=k)
