"""Summaries of a whole run directory, rebuilt from every prediction file it holds.

Two scopes: `own` scores each predictor on the facts it answered; `shared` on the facts every
predictor of the directory answered in that corpus, so KB and LM numbers are over the same queries.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from bridge.results import predictions_path, read_done
from eval.errors import DataError
from eval.metrics import LAMA_MRR_CUTOFF
from eval.report import markdown


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a full or read-only disk: name the file, leave no half-written copy
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    finally:
        tmp.unlink(missing_ok=True)


def _read_config(out: Path) -> dict:
    from bridge.run_config import read_config

    config = read_config(out / "config.json")
    if config is None:
        raise DataError(f"{out}: no config.json; not a kbc run directory")
    return config


def collect(out: Path, setting: str = "raw") -> list[dict]:
    """Score every prediction file of `out`; write summary.json/md, curves.json, dropped.json, instances."""
    from bridge.experiments import get

    config = _read_config(out)
    experiment = get(config.get("experiment", "lama"))
    cutoff = LAMA_MRR_CUTOFF if config.get("settings", {}).get("compat") == "lama" else None
    rows: list[dict] = []
    curves: list[dict] = []
    dropped: list[dict] = []
    all_units: list[dict] = []
    shared_n: dict[str, int] = {}
    for corpus in config["corpora"]:
        types: dict[str, str | None] = config["relation_types"].get(corpus, {})
        answered: dict[str, dict[str, dict]] = {}
        for name in config["predictors"]:
            records = {stage: {uid: r for rel in types
                               for uid, r in read_done(predictions_path(out, corpus, name, rel, stage)).items()}
                       for stage in experiment.stages}
            units = experiment.instances(records)
            all_units += [{"corpus": corpus, "predictor": name, **u} for u in units.values()]
            reasons: Counter = Counter()
            for unit in units.values():
                if "dropped" in unit:
                    reasons[(unit["relation"], unit["dropped"])] += 1
            dropped += [{"corpus": corpus, "predictor": name, "relation": rel, "reason": why, "n": n}
                        for (rel, why), n in sorted(reasons.items())]
            mine = {uid: u for uid, u in units.items() if "dropped" not in u}
            if mine:
                answered[name] = mine
        shared = set.intersection(*(set(m) for m in answered.values())) if answered else set()
        shared_n[corpus] = len(shared)
        spaces = config.get("answer_space", {}).get(corpus, {})
        for name, mine in answered.items():
            for scope, items in (("own", list(mine.values())), ("shared", [mine[u] for u in sorted(shared)])):
                if not items:
                    continue
                head = {"corpus": corpus, "predictor": name}
                scored, curve = experiment.summarize(items, types, cutoff)
                rows += [{**head, "scope": scope, **row} for row in scored]
                rows += _space_rows(head, scope, scored, spaces.get(name, {}), types)
                curves += [{**head, "scope": scope, **row} for row in curve]
    write_json(out / "summary.json", rows)
    write_json(out / "curves.json", curves)
    write_json(out / "dropped.json", dropped)
    _record_dropped(out, config, dropped)
    notes = _notes(config, shared_n, experiment)
    metrics = getattr(experiment, "metrics", ("p@1", "p@10", "mrr"))
    title = getattr(experiment, "title", "LAMA probe")
    (out / "summary.md").write_text(markdown(rows, setting, dropped, notes, title, metrics), encoding="utf-8")
    from bridge.instances import write_instances

    write_instances(out, None if experiment.name == "lama" else all_units)
    return rows


def _record_dropped(out: Path, config: dict, dropped: list[dict]) -> None:
    """Each predictor's dropped facts per relation and reason, also in config.json beside its configuration."""
    tally: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for d in dropped:
        tally.setdefault((d["corpus"], d["predictor"]), {}).setdefault(d["relation"], {})[d["reason"]] = d["n"]
    configs = config.setdefault("predictor_configs", {})
    for (corpus, name), per_rel in tally.items():
        described = configs.setdefault(corpus, {}).setdefault(name, {})
        if isinstance(described, dict):
            described["dropped_facts"] = per_rel
    write_json(out / "config.json", config)


def _space_rows(head: dict, scope: str, scored: list[dict], sizes: dict[str, int | None],
                types: dict[str, str | None]) -> list[dict]:
    """`answer_space` rows: how many answers each relation was ranked over (groups: the mean), beside the scores."""
    rels = sorted({r["group"] for r in scored if r["group"] in types})
    members: dict[str, list[str]] = {rel: [rel] for rel in rels}
    members["all"] = rels
    for rel in rels:
        if types[rel]:
            members.setdefault(types[rel], []).append(rel)
    out = []
    for row in scored:
        if row["metric"] != "p@1":
            continue
        values = [sizes[r] for r in members.get(row["group"], []) if sizes.get(r) is not None]
        if values:
            out.append({**head, "scope": scope, "setting": row["setting"], "group": row["group"],
                        "metric": "answer_space", "value": sum(values) / len(values), "n_facts": row["n_facts"]})
    return out


def _notes(config: dict, shared_n: dict[str, int], experiment) -> list[str]:
    counts = ", ".join(f"{c} {n}" for c, n in shared_n.items())
    unit = getattr(experiment, "unit", "facts")
    notes = [f"Scope `shared`: the {unit} every predictor of this directory answered ({counts}); "
             f"`own`: the {unit} each predictor answered."]
    ranked = getattr(experiment, "metrics", ("mrr",))
    for corpus, configs in (config.get("predictor_configs", {}) if "mrr" in ranked else {}).items():
        listed = sorted(n for n, d in configs.items() if isinstance(d, dict) and d.get("ranks") == "list")
        if listed:
            notes.append(f"{corpus}: MRR of {', '.join(listed)} counts ranks within the answer list they return "
                         f"(depth {config.get('predictor_specs', {}).get(listed[0], {}).get('depth')}); other "
                         "predictors rank every candidate exactly.")
    if config.get("settings", {}).get("compat") == "lama":
        notes.append("`--compat lama`: facts deduplicated by labels, LAMA's tokenization, MRR counts ranks "
                     f"within the top {LAMA_MRR_CUTOFF:,}.")
    return notes
