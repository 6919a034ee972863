"""matplotlib's folder (its font list, its matplotlibrc) inside kbc's cache, `$KBC_CACHE/matplotlib`, unless
MPLCONFIGDIR names one. By default matplotlib writes into HOME: where HOME is read-only (many clusters) it warns
on every report and lists the fonts anew, and a user's `~/.config/matplotlib/matplotlibrc` would change the
figures a report draws from the same run."""

from __future__ import annotations

import os

from eval.datadir import cache_root


def use_kbc_cache() -> None:
    """Point matplotlib at kbc's cache; call before matplotlib is first imported (later it has no effect)."""
    if not os.environ.get("MPLCONFIGDIR"):
        os.environ["MPLCONFIGDIR"] = str(cache_root() / "matplotlib")
