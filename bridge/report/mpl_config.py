"""matplotlib's folder (its font list, its matplotlibrc) inside kbc's cache, `$KBC_CACHE/matplotlib`, unless
MPLCONFIGDIR names one. By default matplotlib writes into HOME: where HOME is read-only (many clusters) it warns
on every report and lists the fonts anew, and a user's `~/.config/matplotlib/matplotlibrc` would change the
figures a report draws from the same run. The figures are drawn with matplotlib's own defaults and the report's
few settings (`report_style`), whatever matplotlibrc matplotlib read: `./matplotlibrc` of the folder kbc runs in,
`$MATPLOTLIBRC`, one in MPLCONFIGDIR, or rcParams a notebook set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eval.datadir import cache_root


def use_kbc_cache() -> None:
    """Point matplotlib at kbc's cache; call before matplotlib is first imported (later it has no effect)."""
    if not os.environ.get("MPLCONFIGDIR"):
        os.environ["MPLCONFIGDIR"] = str(cache_root() / "matplotlib")


def relist_fonts_step() -> str:
    """What makes matplotlib list the installed fonts again: clearing kbc's `matplotlib` kind, unless MPLCONFIGDIR
    names another folder, where matplotlib keeps its font list (`fontlist-*.json`) instead."""
    mine = os.environ.get("MPLCONFIGDIR")
    if mine and Path(mine) != cache_root() / "matplotlib":
        return f"delete the fontlist-*.json files in MPLCONFIGDIR ({mine})"
    return "run `kbc cache clear matplotlib`"


# the report's own settings over matplotlib's defaults; the salt keeps SVG ids the same from one drawing to the next
REPORT_RC = {"svg.hashsalt": "kbcompare", "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
             "axes.spines.right": False}


@contextmanager
def report_style(rc: dict | None = None) -> Iterator[None]:
    """matplotlib's defaults and `rc` (`REPORT_RC` unless given) while a figure is drawn and saved, the settings
    before it afterwards: a figure depends on its run alone, not on the folder or session it is made in."""
    import matplotlib

    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # all but the backend and the like, which draw nothing
        matplotlib.rcParams.update(REPORT_RC if rc is None else rc)
        matplotlib.rcParams["font.family"] = font_families()
        yield


FALLBACK_PREFIX = "Noto Sans"  # families drawing the scripts DejaVu Sans lacks (CJK, Devanagari, Hangul, Thai...)


def font_families() -> list[str]:
    """matplotlib's default font, then each installed Noto Sans family (by name) for the characters it lacks: a
    label in Japanese or Hindi draws as boxes without one, and a machine that has such fonts draws it. Labels
    DejaVu Sans covers draw as with DejaVu Sans alone."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    fallback = sorted(n for n in installed if n.startswith(FALLBACK_PREFIX) and "Mono" not in n)
    return ["DejaVu Sans", *fallback]
