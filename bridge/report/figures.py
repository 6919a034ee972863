"""The report's figures, drawn with matplotlib (Agg) and saved twice: PNG for the page, SVG to zoom.

Each function draws one figure from plain rows and returns the paths it wrote. A predictor has the
same colour in every figure; panels are one per corpus so numbers over different fact sets never
share an axis.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bridge.report.mpl_config import relist_fonts_step, report_style, use_kbc_cache

use_kbc_cache()
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from eval.errors import naming  # noqa: E402
from eval.graphemes import shorten  # noqa: E402

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
# for labels the view does not list (predictors of another run joined by `kbc analyze --compare`)
PALETTE_MORE = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d",
                "#9edae5")
DPI = 110
STAT_TICKS = {"sm": "SM", "om": "OM", "cooc_paragraphs": "co-occ.\nparagraphs", "cooc_sentences": "co-occ.\nsentences",
              "st": "ST", "swp": "SWP", "socs": "SOCS", "lpfp": "LPFP"}
MAX_WIDTH = 26.0


def styled(draw: Callable[..., list[Path]]) -> Callable[..., list[Path]]:
    """`draw` in the report's style (`report_style`), whatever matplotlibrc was read."""
    @functools.wraps(draw)
    def drawn(*args, **kwargs) -> list[Path]:
        with report_style():
            return draw(*args, **kwargs)

    return drawn


# matplotlib's warning for each character of a label that the font lacks (drawn as a box)
_GLYPH = re.compile(r"Glyph (\d+) .*missing from font\(s\) (.+?)\.?$")


@contextmanager
def noting_glyphs(missing: dict[str, set[str]]) -> Iterator[None]:
    """Draws under it add each character a label needs that the font lacks to `missing` (font -> characters), where
    matplotlib would warn once per character and figure, with its own source lines: a report of Japanese, Hindi and
    Korean relations printed dozens of such warnings. Other warnings pass as they are."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        found = _GLYPH.match(str(w.message))
        if found:
            missing.setdefault(found.group(2), set()).add(chr(int(found.group(1))))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def missing_glyphs_note(missing: dict[str, set[str]]) -> str:
    """One line for the characters the figures could not draw: which scripts, which characters, what draws them."""
    chars = sorted(set().union(*missing.values()))
    scripts = sorted({w if (w := unicodedata.name(c, "UNKNOWN").split()[0]) == "CJK" else w.title() for c in chars})
    shown = " ".join(chars[:12]) + (f" and {len(chars) - 12} more" if len(chars) > 12 else "")
    return (f"the figures' font ({', '.join(sorted(missing))}) has no glyph for {len(chars)} "
            f"character{'s' if len(chars) > 1 else ''} of the labels drawn ({', '.join(scripts)}: {shown}); they "
            "show as boxes in the figures (the tables show them); install a Noto Sans font covering these scripts "
            f"(e.g. Noto Sans CJK JP, Noto Sans Devanagari: the fonts-noto packages), then {relist_fonts_step()} "
            "so that the next report lists the fonts again")


def colours(predictors: Sequence[str]) -> dict[str, str]:
    return {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(predictors)}


def complete(colour: dict[str, str], names) -> dict[str, str]:
    """`colour` plus a colour for each of `names` it lacks, unused colours first, so no label is undrawable."""
    missing = [n for n in dict.fromkeys(names) if n not in colour]
    if not missing:
        return colour
    out = dict(colour)
    free = [c for c in (*PALETTE, *PALETTE_MORE) if c not in set(colour.values())] or list(PALETTE_MORE)
    for i, name in enumerate(missing):
        out[name] = free[i % len(free)]
    return out


def save(fig, out: Path, key: str) -> list[Path]:
    """PNG and SVG of `fig` under `out`, without timestamps (the same data draws the same files)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{key}.png", out / f"{key}.svg"]
    with naming(paths[0]):
        fig.savefig(paths[0], dpi=DPI, metadata={"Software": None})
    with naming(paths[1]):
        fig.savefig(paths[1], metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return paths


def _row_of_panels(sizes: list[int], per_group: float, height: float):
    """One panel per corpus side by side, each as wide as its number of groups."""
    width = max(5.5, min(MAX_WIDTH, 1.2 + 0.9 * len(sizes) + per_group * sum(max(n, 2) for n in sizes)))
    fig, axes = plt.subplots(1, len(sizes), figsize=(width, height), squeeze=False,
                             gridspec_kw={"width_ratios": [max(n, 2) for n in sizes]})
    return fig, list(axes[0])


ROW_GROUPS = 16  # groups one row of bars holds: more wrap into rows below, so a page-wide figure stays readable


def _wrapped(panels: dict[str, dict]) -> list[tuple[str, str, dict]]:
    """(title, corpus, groups) per panel: a corpus with more than `ROW_GROUPS` groups split into even parts."""
    out = []
    for corpus, groups in panels.items():
        items = list(groups.items())
        parts = max(1, -(-len(items) // ROW_GROUPS))
        size = -(-len(items) // parts) if items else 0
        for i in range(parts):
            title = corpus if parts == 1 else f"{corpus} ({i + 1} of {parts})"
            out.append((title, corpus, dict(items[i * size:(i + 1) * size])))
    return out


def _short(text: str, limit: int = 26) -> str:
    """A tick label cut between the characters a reader sees, never inside an emoji sequence or a conjunct."""
    return shorten(text, limit)


def legend_label(name: str, upper: Collection[str] = ()) -> str:
    """A predictor's name in a legend, marked when it is an upper bound (it reads the gold evidence)."""
    return f"{name} (upper bound)" if name in upper else name


def _legend(fig, names: list[str], colour: dict[str, str], upper: Collection[str] = ()) -> None:
    """One legend for all panels, in a strip above them, so it never covers a bar, line or point."""
    from matplotlib.patches import Patch

    names = list(dict.fromkeys(names))
    ncol = min(len(names), 6)
    strip = (0.3 * math.ceil(len(names) / max(ncol, 1)) + 0.05) / fig.get_figheight()
    fig.legend(handles=[Patch(color=colour[n], label=legend_label(n, upper)) for n in names], fontsize=8,
               frameon=False, ncol=max(ncol, 1), loc="upper right", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 1 - strip))


@styled
def p_at_k(curves: dict[str, dict[str, list[tuple[int, float]]]], colour: dict[str, str], out: Path,
           key: str = "p_at_k", upper: Collection[str] = ()) -> list[Path]:
    """LAMA Fig. 2: macro P@k against k (log scale), one line per predictor, one panel per corpus."""
    corpora = list(curves)
    colour = complete(colour, [p for lines in curves.values() for p in lines])
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.6 * len(corpora), 3.8), squeeze=False)
    for ax, corpus in zip(axes[0], corpora):
        for predictor, points in curves[corpus].items():
            ks, values = zip(*sorted(points))
            ax.plot(ks, values, label=predictor, color=colour[predictor], linewidth=1.8)
        ax.set_xscale("log")
        top = max(k for points in curves[corpus].values() for k, _ in points)
        ticks = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= top]
        ax.set_xticks(ticks, [str(k) for k in ticks])
        ax.minorticks_off()
        ax.set_xlabel("k")
        ax.set_ylabel("mean P@k (%)")
        ax.set_ylim(0, 100)
        ax.set_title(corpus)
        ax.grid(alpha=0.3, which="both")
    _legend(fig, [p for lines in curves.values() for p in lines], colour, upper)
    return save(fig, out, key)


@styled
def grouped_bars(panels: dict[str, dict[str, dict[str, float]]], colour: dict[str, str], ylabel: str, out: Path,
                 key: str, labels: dict[str, str] | None = None, ylim: float | None = 100.0,
                 upper: Collection[str] = (),
                 intervals: dict[tuple[str, str, str], tuple[float, float]] | None = None,
                 subtitles: dict[str, str] | None = None) -> list[Path]:
    """Bars per group (relation, type, kind), predictors side by side, one panel per corpus; `subtitles`: corpus ->
    a line under its panel's title, so that the image alone says what its bars are over.

    `panels`: corpus -> group -> predictor -> value, groups in the order to draw; `intervals`:
    (corpus, group, predictor) -> (low, high), drawn as error bars where the summary has them. A predictor
    without a value in a group its panel shows (a relation its run does not hold) gets "n/a" there, so that no
    value reads as a bar of 0.
    """
    intervals = intervals or {}
    labels = labels or {}
    colour = complete(colour, [p for groups in panels.values() for v in groups.values() for p in v])
    n_pred = max((len({p for v in groups.values() for p in v}) for groups in panels.values()), default=1)
    long_labels = any(len(labels.get(g, g)) > 6 for groups in panels.values() for g in groups)
    height = 4.4 if long_labels else 3.2
    wrapped = _wrapped(panels)
    if sum(len(g) for g in panels.values()) <= ROW_GROUPS:  # side by side: the panels fit one row
        fig, axes = _row_of_panels([len(g) for g in panels.values()], 0.2 * n_pred + 0.25, height)
    else:  # one panel per row, each part of a corpus as wide as the widest
        widest = max(max(len(g), 2) for _, _, g in wrapped)
        width = max(5.5, min(MAX_WIDTH, 1.2 + (0.2 * n_pred + 0.25) * widest))
        fig, grid = plt.subplots(len(wrapped), 1, figsize=(width, height * len(wrapped) + 0.4), squeeze=False)
        axes = list(grid[:, 0])
    for ax, (title, corpus, groups) in zip(axes, wrapped):
        names = list(dict.fromkeys(p for values in groups.values() for p in values))
        step = 0.8 / max(len(names), 1)
        for i, predictor in enumerate(names):
            xs = [g + (i - (len(names) - 1) / 2) * step for g in range(len(groups))]
            ys = [values.get(predictor, math.nan) for values in groups.values()]
            ax.bar(xs, ys, width=step, label=predictor, color=colour[predictor])
            for x, y in zip(xs, ys):  # no value (a relation its run does not hold) is no bar of 0: said so
                if math.isnan(y):
                    ax.text(x, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=6, color="#777777")
            ci = [intervals.get((corpus, g, predictor)) for g in groups]
            if any(ci):
                lo = [y - c[0] if c else 0.0 for y, c in zip(ys, ci)]
                hi = [c[1] - y if c else 0.0 for y, c in zip(ys, ci)]
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="#333333", elinewidth=0.8, capsize=1.5)
        ax.set_xticks(range(len(groups)))
        ticks = [_short(f"{g} {labels[g]}" if g in labels else g) for g in groups]
        ax.set_xticklabels(ticks, rotation=60 if long_labels else 0, ha="right" if long_labels else "center",
                           fontsize=8)
        ax.set_xlim(-0.6, len(groups) - 0.4)
        if ylim is not None:
            ax.set_ylim(0, ylim)
        ax.set_ylabel(ylabel)
        below = (subtitles or {}).get(corpus)
        ax.set_title(f"{title}\n{below}" if below else title, loc="left", fontsize=8 if below else None)
        ax.grid(axis="y", alpha=0.3)
    _legend(fig, [p for groups in panels.values() for v in groups.values() for p in v], colour, upper)
    return save(fig, out, key)


@styled
def deltas(panels: dict[str, list[tuple[str, dict[str, float], float | None]]], baseline: str, colour: dict[str, str],
           out: Path, key: str, labels: dict[str, str] | None = None, metric: str = "P@1",
           upper: Collection[str] = ()) -> list[Path]:
    """E-BERT Fig. 2: `metric` of each predictor minus `baseline` per relation, relations sorted by the mean
    delta; bars for one predictor, a point per predictor for several; the share of facts whose object name
    is a substring of the subject name as crosses, in a narrow panel beside with its own x-axis.

    `panels`: corpus -> [(relation, predictor -> delta, share or None)].
    """
    labels = labels or {}
    others = list(dict.fromkeys(p for rows in panels.values() for _, d, _ in rows for p in d))
    colour = complete(colour, others)
    sizes = [max(len(rows), 2) for rows in panels.values()]
    crossed = any(r[2] is not None for rows in panels.values() for r in rows)
    fig, axes = plt.subplots(len(panels), 2 if crossed else 1, sharey="row", squeeze=False,
                             figsize=(8.4 if crossed else 6.8, 1.3 * len(sizes) + 0.24 * sum(sizes) + 0.4),
                             gridspec_kw={"height_ratios": sizes, **({"width_ratios": [4, 1]} if crossed else {})})
    for ax, side, (corpus, rows) in zip(axes[:, 0], axes[:, -1], panels.items()):
        rows = sorted(rows, key=lambda r: sum(r[1].values()) / max(len(r[1]), 1))
        ys = list(range(len(rows)))
        values = [v for r in rows for v in r[1].values()]
        if len(others) == 1:
            one = [r[1].get(others[0], math.nan) for r in rows]
            ax.barh(ys, one, color=["#2ca02c" if v >= 0 else "#d62728" for v in one], height=0.7)
        else:
            for i, other in enumerate(others):
                offset = (i - (len(others) - 1) / 2) * min(0.7 / len(others), 0.18)
                points = [(y + offset, r[1][other]) for y, r in zip(ys, rows) if other in r[1]]
                ax.scatter([v for _, v in points], [y for y, _ in points], color=colour[other], s=16, zorder=3)
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.invert_yaxis()  # top to bottom as the table's rows: the lowest mean delta first
        ax.set_yticks(ys)
        ax.set_yticklabels([_short(f"{r[0]} {labels[r[0]]}" if r[0] in labels else r[0]) for r in rows], fontsize=8)
        subject = others[0] if len(others) == 1 else "predictor"
        ax.set_xlabel(f"{metric}: {subject} − {legend_label(baseline, upper)} (points)")
        bound = max([abs(v) for v in values] + [5.0])
        ax.set_xlim(-bound * 1.08, bound * 1.08)
        ax.set_title(corpus, loc="left")
        ax.grid(axis="x", alpha=0.3)
        if crossed:  # a panel of its own beside, with its own x-axis: never a second axis on the deltas
            shares = [(y, r[2]) for y, r in zip(ys, rows) if r[2] is not None]
            side.scatter([s for _, s in shares], [y for y, _ in shares], marker="x", color="#333333", s=18)
            side.set_xlim(-4, 104)  # a cross at 0 or 100 drawn whole
            side.set_xlabel("object in subject (% of facts)", fontsize=8)
            side.grid(axis="x", alpha=0.3)
            side.tick_params(axis="y", left=False, labelleft=False)
    if len(others) > 1:
        _legend(fig, others, colour, upper)
    else:
        fig.tight_layout()
    return save(fig, out, key)


@styled
def correlation_bars(panels: dict[tuple[str, str], dict[str, dict[str, float | None]]], colour: dict[str, str],
                     out: Path, key: str = "correlation", upper: Collection[str] = ()) -> list[Path]:
    """LAMA Fig. 3: correlation of per-fact P@1 with each statistic, bars per predictor.

    `panels`: (corpus, method) -> statistic -> predictor -> coefficient (None: undefined, drawn as a gap).
    """
    keys = list(panels)
    colour = complete(colour, [p for stats in panels.values() for v in stats.values() for p in v])
    corpora = list(dict.fromkeys(c for c, _ in keys))
    methods = list(dict.fromkeys(m for _, m in keys))
    fig, axes = plt.subplots(len(corpora), len(methods), figsize=(4.8 * len(methods), 3.0 * len(corpora) + 0.4),
                             squeeze=False)
    for r, corpus in enumerate(corpora):
        for c, method in enumerate(methods):
            ax = axes[r][c]
            stats = panels.get((corpus, method), {})
            names = list(dict.fromkeys(p for v in stats.values() for p in v))
            step = 0.8 / max(len(names), 1)
            for i, predictor in enumerate(names):
                xs = [s + (i - (len(names) - 1) / 2) * step for s in range(len(stats))]
                ys = [math.nan if v.get(predictor) is None else v[predictor] for v in stats.values()]
                ax.bar(xs, ys, width=step, label=predictor, color=colour[predictor])
            ax.axhline(0, color="#333333", linewidth=0.8)
            ax.set_xticks(range(len(stats)))
            ax.set_xticklabels([STAT_TICKS.get(s, s) for s in stats], fontsize=8)
            ax.set_ylim(-1, 1)
            ax.set_ylabel(f"{method.capitalize()} r with P@1")
            ax.set_title(f"{corpus}, {method}")
            ax.grid(axis="y", alpha=0.3)
    _legend(fig, [p for stats in panels.values() for v in stats.values() for p in v], colour, upper)
    return save(fig, out, key)


@styled
def binned(panels: dict[tuple[str, str], dict[str, list[tuple[str, int, float | None]]]], colour: dict[str, str],
           out: Path, key: str = "cooccurrence_bins", upper: Collection[str] = ()) -> list[Path]:
    """KMIR Fig. 2: P@1 per bin of a count statistic, a line per predictor, facts per bin above the axis.

    `panels`: (corpus, statistic) -> predictor -> [(bin label, facts, P@1 or None)], bins in order.
    """
    keys = list(panels)
    colour = complete(colour, [p for lines in panels.values() for p in lines])
    cols = min(2, len(keys))
    rows_n = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(5.4 * cols, 3.4 * rows_n + 0.4), squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, (corpus, statistic) in zip(axes.flat, keys):
        lines = panels[(corpus, statistic)]
        bins = list(dict.fromkeys(b for points in lines.values() for b, _, _ in points))
        for predictor, points in lines.items():
            at = {b: (n, v) for b, n, v in points}
            ys = [math.nan if at.get(b, (0, None))[1] is None else at[b][1] for b in bins]
            ax.plot(range(len(bins)), ys, marker="o", markersize=3.5, label=predictor, color=colour[predictor])
        counts = {b: max((n for points in lines.values() for bb, n, _ in points if bb == b), default=0) for b in bins}
        crowded = len(bins) > 10
        for x, b in enumerate(bins):
            if counts[b]:
                ax.annotate(str(counts[b]), (x, 1.01), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                            fontsize=6.5, color="#555555", rotation=90 if crowded else 0)
        ax.set_xticks(range(len(bins)))
        ax.set_xticklabels(bins, fontsize=7, rotation=45, ha="right")
        ax.set_ylim(0, 100)
        ax.set_xlabel(statistic)
        ax.set_ylabel("P@1 (%)")
        ax.set_title(f"{corpus}: {statistic} (facts per bin above)", pad=22, fontsize=9)
        ax.grid(alpha=0.3)
    _legend(fig, [p for lines in panels.values() for p in lines], colour, upper)
    return save(fig, out, key)


@styled
def rank_boxes(panels: dict[str, dict[str, dict[str, list[float]]]], colour: dict[str, str], out: Path,
               key: str = "rank_variation", labels: dict[str, str] | None = None,
               upper: Collection[str] = ()) -> list[Path]:
    """LAMA Fig. 4: distribution of the gold rank over a fact's evidence sentences, per relation and predictor.

    `panels`: corpus -> relation -> predictor -> ranks (log scale; one value per fact: its mean rank).
    """
    labels = labels or {}
    colour = complete(colour, [p for rels in panels.values() for v in rels.values() for p in v])
    n_pred = max((len({p for v in rels.values() for p in v}) for rels in panels.values()), default=1)
    fig, axes = _row_of_panels([len(r) for r in panels.values()], 0.3 * n_pred + 0.3, 4.4)
    for ax, (corpus, rels) in zip(axes, panels.items()):
        names = list(dict.fromkeys(p for v in rels.values() for p in v))
        step = 0.8 / max(len(names), 1)
        for i, predictor in enumerate(names):
            data = [(g, values[predictor]) for g, values in enumerate(rels.values()) if values.get(predictor)]
            if not data:
                continue
            positions = [g + (i - (len(names) - 1) / 2) * step for g, _ in data]
            box = ax.boxplot([v for _, v in data], positions=positions, widths=step * 0.85, patch_artist=True,
                             showfliers=False, manage_ticks=False)
            for patch in box["boxes"]:
                patch.set_facecolor(colour[predictor])
                patch.set_alpha(0.75)
            for median in box["medians"]:
                median.set_color("#222222")
        ax.set_yscale("log")
        ax.set_xticks(range(len(rels)))
        ax.set_xticklabels([_short(f"{r} {labels[r]}" if r in labels else r) for r in rels], rotation=60, ha="right",
                           fontsize=8)
        ax.set_xlim(-0.6, len(rels) - 0.4)
        ax.set_ylabel("gold rank over evidences")
        ax.set_title(corpus, loc="left")
        ax.grid(axis="y", alpha=0.3)
    _legend(fig, [p for rels in panels.values() for v in rels.values() for p in v], colour, upper)
    return save(fig, out, key)
