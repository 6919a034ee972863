"""What the queries of a run with evidence contexts were asked with: how many got no context, or fewer texts than
the K of `--context retrieved:K`. They are scored as asked (a query without a context is the bare prompt), so
the summaries count them per relation, in summary.md, config.json (`contexts`) and on stderr."""

from __future__ import annotations

from collections import Counter

from bridge.experiments.lama import CONTEXT_PARTS, parse_context
from eval.errors import ConfigError


def context_counts(config: dict, units: list[dict], unit: str = "facts") -> dict[str, dict]:
    """Per corpus: the context setting, the `unit`s asked (not dropped), and per relation those asked without a
    context (`none`) and, for `retrieved:K`, with 1 to K-1 paragraphs (`fewer_than_k`). Each query counts once,
    whichever predictors answered it (all read the same context). Records written before `context_parts` was
    kept say only whether they had a context."""
    spec = str((config.get("settings") or {}).get("context") or "none")
    try:
        kind, k = parse_context(spec)
    except ConfigError:
        return {}
    if kind == "none" or config.get("experiment", "lama") != "lama":
        return {}
    seen: set[tuple[str, str]] = set()
    asked: Counter = Counter()
    none: dict[str, Counter] = {}
    short: dict[str, Counter] = {}
    for u in units:
        key = (str(u.get("corpus")), str(u.get("uid")))
        if "dropped" in u or key in seen:
            continue
        seen.add(key)
        corpus, rel = key[0], str(u.get("relation"))
        asked[corpus] += 1
        parts = u.get(CONTEXT_PARTS)
        if parts is None:
            parts = k if u.get("context") else 0
        if parts == 0:
            none.setdefault(corpus, Counter())[rel] += 1
        elif parts < k:
            short.setdefault(corpus, Counter())[rel] += 1
    return {corpus: {"context": spec, "unit": unit, "asked": n,
                     "none": dict(sorted(none.get(corpus, {}).items())),
                     **({"fewer_than_k": dict(sorted(short.get(corpus, {}).items()))} if kind == "retrieved" else {})}
            for corpus, n in asked.items()}


def _per_relation(counts: dict[str, int]) -> str:
    return ", ".join(f"{rel} {n:,}" for rel, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def context_notes(counts: dict[str, dict]) -> list[str]:
    """A line per corpus with queries asked without a full context (none when every one had it)."""
    notes = []
    for corpus, c in counts.items():
        none, short, unit = sum(c["none"].values()), sum(c.get("fewer_than_k", {}).values()), c["unit"]
        if not none and not short:
            continue
        spec = c["context"]
        parts = []
        if none:
            why = "no evidence text" if spec == "gold" else "no paragraph beside the fact's own"
            parts.append(f"{none:,} of {c['asked']:,} {unit} were asked without a context ({why}; scored on the "
                         f"prompt alone): {_per_relation(c['none'])}")
        if short:
            k = parse_context(spec)[1]
            parts.append(f"{short:,} with fewer than {k} paragraphs (the index holds no more for their words): "
                         f"{_per_relation(c['fewer_than_k'])}")
        notes.append(f"{corpus}: `--context {spec}`: {'; '.join(parts)}.")
    return notes


def asked_with_note(config: dict) -> list[str]:
    """The prompt set and evidence context a LAMA-style run asked with, where either is not the default."""
    settings = config.get("settings") or {}
    prompts, context = str(settings.get("prompts") or "lama"), str(settings.get("context") or "none")
    if "prompts" not in settings and "context" not in settings or (prompts, context) == ("lama", "none"):
        return []
    files = [r["prompt_file"] for r in config.get("runs") or [] if isinstance(r, dict) and r.get("prompt_file")]
    shown = f"{prompts} ({files[-1]})" if files and files[-1] != prompts else prompts
    return [f"Asked with prompt set `{shown}` and context `{context}` (`--prompts`, `--context`)."]
