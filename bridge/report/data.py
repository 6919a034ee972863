"""What a report reads from a run directory: summaries, curves, per-fact rows and analysis files.

Everything is read, nothing is written into the run. Missing optional parts (analysis files, the
per-fact table) are `None`, so the page can say what is missing instead of failing; a directory
without predictions or summaries is a user error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bridge.predictors.registry import REFERENCE, side_of, spec_of
from bridge.run.directory import RunDir, open_run
from bridge.run.parquet_files import read_frame
from eval.errors import ConfigError, DataError
from eval.relations import DOMAIN_PREFIX
from eval.report import NOT_RELATIONS

ANALYSIS = "analysis"
def is_relation(group: str) -> bool:
    """A summary group that is one relation (not a type, a KMIR question kind, a BEAR domain `domain:...` or
    `all`)."""
    return group not in NOT_RELATIONS and not group.startswith(DOMAIN_PREFIX)


def _json(path: Path) -> list | dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not valid JSON ({exc})") from None


NUMBERS = ("value", "k", "n_facts")  # summary and curve columns every figure and table computes with


def _rows(path: Path, needs: tuple[str, ...]) -> list[dict] | None:
    """A JSON list of row objects with at least the columns `needs`, or None when the file is absent."""
    rows = _json(path)
    if rows is None:
        return None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{path} must hold a JSON list of rows")
    for i, row in enumerate(rows):
        missing = [k for k in needs if k not in row]
        if missing:
            raise DataError(f"{path}: row {i} lacks {', '.join(missing)}")
        for key in NUMBERS:
            value = row.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise DataError(f"{path}: row {i}: {key!r} must be a number, got {type(value).__name__} "
                                f"{json.dumps(value)[:40]}; rerun the `kbc run` command to rewrite it")
    return rows


def _parquet(path: Path, needs: tuple[str, ...]) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        frame = read_frame(path)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise DataError(f"{path} cannot be read as parquet ({type(exc).__name__}: {exc})") from None
    missing = [c for c in needs if c not in frame.columns]
    if missing:
        raise DataError(f"{path} lacks the columns {', '.join(missing)}")
    return frame


@dataclass
class Analysis:
    """The files `kbc analyze` writes under `RUN/analysis/` (each None when absent)."""

    fact_stats: pd.DataFrame | None = None
    correlation: list[dict] | None = None
    bins: list[dict] | None = None
    evidence: pd.DataFrame | None = None
    evidence_summary: list[dict] | None = None


def read_analysis(run_dir: Path) -> Analysis:
    folder = run_dir / ANALYSIS
    return Analysis(
        fact_stats=_parquet(folder / "fact_stats.parquet", ("corpus", "uid", "relation")),
        correlation=_rows(folder / "correlation.json",
                          ("corpus", "predictor", "setting", "statistic", "target", "method", "coefficient",
                           "p_value", "n")),
        bins=_rows(folder / "bins.json", ("corpus", "predictor", "setting", "statistic", "bin", "n", "p@1")),
        evidence=_parquet(folder / "evidence.parquet", ("corpus", "predictor", "relation", "uid", "rank")),
        evidence_summary=_rows(folder / "evidence_summary.json",
                               ("corpus", "predictor", "relation", "n_facts", "median_rank", "mean_rank_std")),
    )


@dataclass
class RunData:
    """One run as the report sees it."""

    run: RunDir
    label: str
    summary: list[dict]
    curves: list[dict]
    dropped: list[dict]
    analysis: Analysis = field(default_factory=Analysis)
    _instances: pd.DataFrame | None = None
    _read_instances: bool = False

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def config(self) -> dict:
        return self.run.config

    @property
    def experiment(self) -> str:
        return str(self.config.get("experiment", "lama"))

    @property
    def command(self) -> str:
        """The `kbc run` command the run is known by: `bear` for the LAMA experiment over BEAR corpora alone."""
        from eval.bear import BEAR_CORPORA

        if self.experiment == "lama" and self.corpora and all(c in BEAR_CORPORA for c in self.corpora):
            return "bear"
        return self.experiment

    @property
    def corpora(self) -> list[str]:
        return self.run.corpora

    @property
    def predictors(self) -> list[str]:
        return self.run.predictors

    @property
    def instances(self) -> pd.DataFrame | None:
        """The per-fact table (`instances.parquet`), read once on first use."""
        if not self._read_instances:
            from bridge.run.instances import in_current_layout

            frame = _parquet(self.path / "instances.parquet", ())
            self._instances = None if frame is None else in_current_layout(frame, self.path, self.config)
            self._read_instances = True
        return self._instances

    def relation_type(self, corpus: str, relation: str) -> str | None:
        return (self.config.get("relation_types", {}).get(corpus) or {}).get(relation)

    def seconds(self) -> dict[str, dict[str, float]]:
        """Seconds per corpus and predictor, as the runner recorded them (empty when it did not)."""
        found = self.config.get("seconds")
        return found if isinstance(found, dict) else {}

    def usage(self) -> dict[str, dict[str, dict]]:
        """What asking a model by generation cost, per corpus and predictor (queries, requests, tokens), summed over
        the run's attempts: those of earlier versions added theirs to config.json as they ended, the others keep
        theirs as they go (`bridge.run.usage_log`); empty where it recorded none."""
        from bridge.run.usage_log import read_usage

        found = self.config.get("usage")
        total = {c: {p: dict(v) for p, v in per.items() if isinstance(v, dict)}
                 for c, per in (found if isinstance(found, dict) else {}).items() if isinstance(per, dict)}
        for corpus, per in read_usage(self.path).items():
            for name, counts in per.items():
                mine = total.setdefault(corpus, {}).setdefault(name, {})
                for key, n in counts.items():
                    mine[key] = int(mine.get(key) or 0) + n
        return total

    def unrecorded_attempts(self, predictor: str) -> int:
        """Attempts that asked `predictor`, recorded no end (killed, as by SIGKILL or a power cut) and kept no
        counts as they went (made by an earlier version, or under Ray, whose actors hold the counts until the job
        ends): their cost was to be added when they ended, so it is missing from `usage`."""
        runs = self.config.get("runs")
        return sum(1 for a in runs if isinstance(a, dict) and predictor in (a.get("predictors") or [])
                   and not a.get("finished") and not a.get("failed")
                   and (not a.get("usage_log") or (a.get("executor") or {}).get("kind") == "ray")
                   ) if isinstance(runs, list) else 0


def _has_predictions(run: RunDir) -> bool:
    folder = run.path / "predictions"
    return folder.is_dir() and any(folder.rglob("*.jsonl"))


def load_run(path: str | Path, label: str | None = None) -> RunData:
    """A run directory with predictions and summaries, or a one-line error saying what it lacks; one that a `kbc
    run` starts writing while it is read is refused (`read_steadily`), not drawn half old, half new."""
    from bridge.run.freshness import read_steadily

    return read_steadily([Path(path)], lambda: _load_run(path, label))


def _load_run(path: str | Path, label: str | None) -> RunData:
    """`load_run`, read once."""
    from bridge.run.freshness import check_scored, not_finished

    run = open_run(path)
    if not _has_predictions(run):
        raise DataError(f"{run.path} has no predictions (predictions/<corpus>/<predictor>/*.jsonl): "
                        "nothing to report; run `kbc run` into it first")
    summary = _rows(run.path / "summary.json", ("corpus", "predictor", "setting", "group", "metric", "value"))
    if summary is None:
        raise DataError(not_finished(run.path, run.config))
    curves = _rows(run.path / "curves.json", ("corpus", "predictor", "setting", "group", "k", "value")) or []
    dropped = _rows(run.path / "dropped.json", ()) or []
    check_scored(run.path, run.config)  # the summaries drawn are what scoring its files gave
    from eval.generated_scores import rates_in_percent

    summary = rates_in_percent(summary, str(run.config.get("experiment")))
    name = label or run.path.resolve().name
    return RunData(run, name, summary, curves, dropped, read_analysis(run.path))


def check_comparable(a: RunData, b: RunData) -> None:
    """Two runs compare only over the same corpora, experiment and question settings, and over the same data of
    the relations both hold (as `kbc leaderboard` and `kbc compare --b-run` refuse them otherwise)."""
    if sorted(a.corpora) != sorted(b.corpora):
        raise ConfigError(f"--compare needs runs over the same corpora: {a.path} has {', '.join(a.corpora)}, "
                          f"{b.path} has {', '.join(b.corpora)}")
    if a.experiment != b.experiment:
        raise ConfigError(f"--compare needs runs of the same experiment: {a.path} is {a.experiment}, "
                          f"{b.path} is {b.experiment}")
    from bridge.run.leaderboard import same_data, same_settings

    configs = {a.path: a.config, b.path: b.config}
    same_settings(configs, "`kbc report --compare`")
    from bridge.experiments import get
    from bridge.run.depth import same_depth

    same_depth(configs, tuple(getattr(get(a.experiment), "metrics", ("p@1", "p@10", "mrr"))), "`kbc report --compare`",
               list(a.corpora))
    for corpus in a.corpora:  # a relation both hold is the same question only over the same data
        held = [(c.get("relation_types") or {}).get(corpus) or {} for c in (a.config, b.config)]
        same_data(configs, corpus, [r for r in held[0] if r in held[1]], "`kbc report --compare`")


def upper_bound(config: dict, predictor: str) -> str | None:
    """Why a predictor is an upper bound rather than a baseline (it reads the gold evidence), else None."""
    from bridge.predictors.registry import upper_bound_text

    return upper_bound_text(config, predictor, spec_of(config, predictor))


def relation_labels(config: dict) -> dict[str, str]:
    """Relation id -> label from the run's data folder, then those the run recorded (KMIR's derived relations, an
    axioms file's own properties)."""
    labels = _data_labels(config)
    recorded = config.get("relation_labels")
    for per_corpus in recorded.values() if isinstance(recorded, dict) else ():
        for rel, label in per_corpus.items() if isinstance(per_corpus, dict) else ():
            if isinstance(label, str) and label and label != rel:  # an id for a label names nothing more
                labels.setdefault(rel, label)
    return labels


def _data_labels(config: dict) -> dict[str, str]:
    """Relation id -> label from the run's data folder's `relations.jsonl` (empty when it cannot be read)."""
    data_dir = config.get("data_dir")
    if not data_dir:
        return {}
    path = Path(data_dir) / "relations.jsonl"
    labels: dict[str, str] = {}
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and row.get("relation") and row.get("label"):
                    labels[str(row["relation"])] = str(row["label"])
    except OSError:
        return {}
    return labels


@dataclass
class View:
    """One run, or two runs side by side with each predictor named `<run>:<predictor>`."""

    runs: list[RunData]
    setting: str
    predictors: list[str]
    sides: dict[str, str]
    summary: list[dict]
    curves: list[dict]
    dropped: list[dict]
    analysis: Analysis
    origin: dict[str, tuple[RunData, str]]  # shown name -> (run, the run's own predictor name)
    upper: dict[str, str] = field(default_factory=dict)  # shown name -> why it is an upper bound

    @property
    def main(self) -> RunData:
        return self.runs[0]

    @property
    def experiment(self) -> str:
        return self.main.experiment

    @property
    def corpora(self) -> list[str]:
        return self.main.corpora

    def relation_info(self) -> dict[str, dict[str, tuple[str | None, str | None]]]:
        """Per corpus, each relation's label and type (`relation_info`) from whichever run holds it: runs side by
        side over different relations label every relation, not only the first run's."""
        from bridge.run.summaries import relation_info

        out: dict[str, dict[str, tuple[str | None, str | None]]] = {}
        for run in self.runs:
            for corpus, info in relation_info(run.config).items():
                mine = out.setdefault(corpus, {})
                for rel, (label, rtype) in info.items():
                    held = mine.get(rel, (None, None))
                    mine[rel] = (held[0] or label, held[1] or rtype)
        return out

    def relation_labels(self) -> dict[str, str]:
        """Relation id -> label from the runs' data folders (`relation_labels`), the first run's first."""
        out: dict[str, str] = {}
        for run in self.runs:
            for rel, label in relation_labels(run.config).items():
                out.setdefault(rel, label)
        return out

    def relations_held(self) -> dict[str, dict[str, list[str]]]:
        """Per corpus where the runs side by side hold different relations, each run's (by its label; ids in report
        order): what each run's Total is over. Empty for one run, or runs of the same relations."""
        from eval.report import relation_order

        out: dict[str, dict[str, list[str]]] = {}
        if len(self.runs) < 2:
            return out
        for corpus in dict.fromkeys(c for run in self.runs for c in run.corpora):
            held = {run.label: relation_order(list(run.config.get("relation_types", {}).get(corpus) or {}))
                    for run in self.runs if corpus in run.corpora}
            if len(held) > 1 and len({frozenset(rels) for rels in held.values()}) > 1:
                out[corpus] = held
        return out

    def seconds(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for shown, (run, name) in self.origin.items():
            for corpus, per in run.seconds().items():
                if isinstance(per, dict) and name in per:
                    out.setdefault(corpus, {})[shown] = per[name]
        return out

    def usage(self) -> list[tuple[str, str, dict]]:
        """(shown name, corpus, usage) of each generating predictor that recorded what asking cost."""
        return [(shown, corpus, per[name]) for shown, (run, name) in self.origin.items()
                for corpus, per in run.usage().items() if isinstance(per, dict) and isinstance(per.get(name), dict)]

    def unrecorded_usage(self) -> dict[str, int]:
        """Shown name -> attempts of its run that asked it and were killed before adding their cost to `usage`."""
        out = {shown: run.unrecorded_attempts(name) for shown, (run, name) in self.origin.items()}
        return {shown: n for shown, n in out.items() if n}


def _renamed_rows(rows: list[dict] | None, names: dict[str, str]) -> list[dict] | None:
    if rows is None:
        return None
    return [{**r, "predictor": names.get(r["predictor"], r["predictor"])} for r in rows if "predictor" in r]


def _renamed_frame(frame: pd.DataFrame | None, names: dict[str, str]) -> pd.DataFrame | None:
    if frame is None or "predictor" not in frame.columns:
        return frame
    return frame.assign(predictor=frame["predictor"].astype(str).map(lambda p: names.get(p, p)))


def _concat_rows(parts: list[list[dict] | None]) -> list[dict] | None:
    present = [p for p in parts if p is not None]
    return [r for p in present for r in p] if present else None


def _concat_frames(parts: list[pd.DataFrame | None]) -> pd.DataFrame | None:
    present = [p for p in parts if p is not None]
    return pd.concat(present, ignore_index=True) if present else None


def combine(runs: list[RunData], setting: str) -> View:
    """The view the report draws: one run as it is, or two with run-qualified predictor names."""
    if len(runs) == 2 and runs[0].label == runs[1].label:
        runs[0].label, runs[1].label = f"A ({runs[0].label})", f"B ({runs[1].label})"
    renames: list[dict[str, str]] = []
    origin: dict[str, tuple[RunData, str]] = {}
    for run in runs:
        names = {p: (p if len(runs) == 1 else f"{run.label}:{p}") for p in run.predictors}
        renames.append(names)
        origin.update({shown: (run, p) for p, shown in names.items()})
    sides = {shown: side_of(run.config, p) for shown, (run, p) in origin.items()}
    analysis = Analysis(
        fact_stats=runs[0].analysis.fact_stats,
        correlation=_concat_rows([_renamed_rows(r.analysis.correlation, n) for r, n in zip(runs, renames)]),
        bins=_concat_rows([_renamed_rows(r.analysis.bins, n) for r, n in zip(runs, renames)]),
        evidence=_concat_frames([_renamed_frame(r.analysis.evidence, n) for r, n in zip(runs, renames)]),
        evidence_summary=_concat_rows([_renamed_rows(r.analysis.evidence_summary, n) for r, n in zip(runs, renames)]),
    )
    return View(
        runs=runs, setting=setting, predictors=list(origin), sides=sides,
        summary=[r for run, n in zip(runs, renames) for r in _renamed_rows(run.summary, n) or []],
        curves=[r for run, n in zip(runs, renames) for r in _renamed_rows(run.curves, n) or []],
        dropped=[r for run, n in zip(runs, renames) for r in _renamed_rows(run.dropped, n) or []],
        analysis=analysis, origin=origin,
        upper={shown: why for shown, (run, p) in origin.items() if (why := upper_bound(run.config, p))},
    )




def chance_kbs(run: RunData) -> tuple[str, ...]:
    """KB specs that are chance level in this run, never "the best KB": Freq over BEAR's answer spaces, where
    objects are (nearly) equally frequent and the run warns its ranking is the data file's order."""
    return ("freq",) if run.command == "bear" else ()


def best_kb(view: View, metric: str) -> str | None:
    """The KB predictor with the best `metric` over all facts (mean over corpora), gold left out and upper
    bounds only when no other KB predictor was run."""
    rows = [r for r in view.summary if r["setting"] == view.setting and r["group"] == "all" and r["metric"] == metric
            and not r.get("prompt")]
    scope = "shared" if any(r.get("scope") == "shared" for r in rows) else "own"
    scores: dict[str, list[float]] = {}
    for r in rows:
        if r.get("scope", "own") == scope:
            scores.setdefault(r["predictor"], []).append(float(r["value"]))
    kbs = [p for p in view.predictors if view.sides[p] == "kb" and p in scores
           and spec_of(view.origin[p][0].config, view.origin[p][1]) not in (REFERENCE, *chance_kbs(view.origin[p][0]))]
    honest = [p for p in kbs if p not in view.upper] or kbs
    return max(honest, key=lambda p: sum(scores[p]) / len(scores[p]), default=None)


def delta_pairs(view: View, wanted: tuple[str, str] | None, metric: str = "p@1") -> list[tuple[str, str]]:
    """Which predictors the per-relation delta figure compares, as (baseline, other) shown names.

    Default, one LAMA or FewRel run: every LM against the best KB predictor (not gold, 100 by construction), none when
    the run lacks either side; coherency and KMIR runs draw deltas only when asked (`--delta A B`).
    Two runs: the same predictor name in both, else each run's predictors side by side.
    """
    if len(view.runs) == 2:
        first, second = view.runs
        shown = {(run.label, p): name for name, (run, p) in view.origin.items()}
        if wanted:
            a, b = first.run.predictor(wanted[0]), second.run.predictor(wanted[1])
            return [(shown[(first.label, a)], shown[(second.label, b)])]
        common = [p for p in first.predictors if p in second.predictors]
        pairs = [(p, p) for p in common] or list(zip(first.predictors, second.predictors))
        return [(shown[(first.label, a)], shown[(second.label, b)]) for a, b in pairs]
    run = view.main.run
    if wanted:
        a, b = run.predictor(wanted[0]), run.predictor(wanted[1])
        if a == b:
            raise ConfigError(f"--delta {a} {b}: name two different predictors")
        return [(a, b)]
    if view.experiment not in ("lama", "fewrel"):
        return []
    base = best_kb(view, metric)
    lms = [p for p in view.predictors if view.sides[p] == "lm"]
    return [(base, m) for m in lms] if base else []
