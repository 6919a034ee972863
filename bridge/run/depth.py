"""What a run's answer depth (`--depth`) cuts, and which of its figures another run's depth would change.

A predictor that ranks every candidate exactly (`ranks: exact` in its recorded configuration: masked LMs, the
random baseline) records the gold's exact rank past the list it returns, so its P@k and MRR hold at every k,
whatever the depth, as do `kb` and `kb-inferred`, which list every object they hold. Any other that ranks only
the list it returns (`ranks: list`: Freq, the gold KB, retrieval) has P@k exact up
to k = depth (the list holds the depth plus room for the other valid objects a filtered rank skips) and nothing
past it, and an MRR that counts ranks within its list only. So its P@k past the depth is never written (no summary
row, no curve point), and runs whose list-ranking predictors were asked to other depths compare on P@k up to the
smaller depth only: MRR and any P@k past it are refused.
"""

from __future__ import annotations

from pathlib import Path

from eval.errors import ConfigError
from eval.metrics import CURVE_KS

EXACT_RANKS = ("exact", "none")  # ranks recorded past the list, or no ranking at all (answers by generation)


def _k(metric: str) -> int | None:
    """k of a `p@k` metric, else None."""
    head, _, tail = str(metric).partition("@")
    return int(tail) if head == "p" and tail.isdigit() else None


def list_depth(config: dict, corpus: str, predictor: str) -> int | None:
    """The depth past which `predictor`'s P@k in `corpus` is unknown: its `--depth` where it ranks only the list it
    returns, None where its ranks are exact (or it has none)."""
    described = (config.get("predictor_configs") or {}).get(corpus, {}).get(predictor)
    if isinstance(described, dict) and described.get("ranks") in EXACT_RANKS:
        return None
    spec = (config.get("predictor_specs") or {}).get(predictor, {})
    if spec.get("answers") == "every held object":  # `kb`, `kb-inferred`: the whole list, whatever the depth
        return None
    depth = spec.get("depth")
    return int(depth) if isinstance(depth, int) else None


def past_depth(metric: str, depth: int | None) -> bool:
    """Whether `metric` is a P@k past `depth` (None: no depth cuts it)."""
    k = _k(metric)
    return depth is not None and k is not None and k > depth


def within_depth(rows: list[dict], depth: int | None) -> list[dict]:
    """`rows` (summary rows with `metric`, curve points with `k`) without the P@k past `depth`."""
    if depth is None:
        return rows
    return [r for r in rows if not past_depth(f"p@{r['k']}" if "k" in r else r.get("metric", ""), depth)]


def cut_note(config: dict) -> list[str]:
    """summary.md's lines on the P@k a depth left out, where a predictor ranks a list shorter than the curves."""
    cut: dict[int, list[str]] = {}
    for corpus, described in (config.get("predictor_configs") or {}).items():
        for name in described:
            depth = list_depth(config, corpus, name)
            if depth is not None and depth < max(CURVE_KS) and name not in cut.get(depth, []):
                cut.setdefault(depth, []).append(name)
    return [f"{', '.join(sorted(names))}: ranked to --depth {depth} (only the answers it returns), so no P@k past "
            f"k = {depth} (a table or curve point of a larger k leaves {'it' if len(names) == 1 else 'them'} out); "
            "predictors that rank every candidate exactly keep every k." for depth, names in sorted(cut.items())]


def run_depths(config: dict, corpora: list[str] | None = None) -> tuple[int, ...]:
    """The depths of a run's predictors that rank only the lists they return (in `corpora`, else all)."""
    found = {list_depth(config, corpus, name) for corpus, described in (config.get("predictor_configs") or {}).items()
             if corpora is None or corpus in corpora for name in described}
    return tuple(sorted(d for d in found if d is not None))


def depth_changes(metric: str, depths: list[tuple[int, ...]]) -> bool:
    """Whether runs of these list depths could differ on `metric` by depth alone: MRR (counted within each list)
    and a P@k past the smallest depth, where the runs' depths differ."""
    if len(set(depths)) < 2:
        return False
    k = _k(metric)
    if metric == "mrr":
        return True
    return k is not None and k > min(d for found in depths for d in found)


def same_depth(configs: dict[Path, dict], metrics: tuple[str, ...], needs: str = "a leaderboard",
               corpora: list[str] | None = None) -> None:
    """Refuse runs whose list-ranking predictors were asked to different depths where that changes a metric of
    `metrics`; P@k up to the smaller depth is the same number at both and stays comparable."""
    (first, mine), *rest = [(run, run_depths(c, corpora)) for run, c in configs.items()]
    for run, theirs in rest:
        pair = [mine, theirs]
        changed = [m for m in metrics if depth_changes(m, [d for d in pair if d])]
        if changed:
            shown = [", ".join(map(str, d)) for d in (theirs, mine)]
            upto = min(d for found in pair for d in found)
            raise ConfigError(f"{run} and {first} differ in --depth ({shown[0]} vs {shown[1]}) for predictors that "
                              f"rank only the answers they return: their {' and '.join(changed)} "
                              f"{'depends' if len(changed) == 1 else 'depend'} on it; {needs} needs runs of one "
                              f"--depth for it (P@k up to k = {upto} compares)")
