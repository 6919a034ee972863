"""The confusion matrix of one relation classifier: `<stem>.json` (the counts), `<stem>.png` and `<stem>.svg` (a heat
map, as every figure a report shows: PNG to see, SVG to scale)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eval.errors import naming


def write_confusion(stem: Path, predictor: str, gold: list[str], labels: list[str], matrix: np.ndarray) -> None:
    """The counts (`gold` rows, `labels` then no answer as columns) always; the figure where matplotlib is
    installed (`pip install kbcompare[report]`)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(
        {"predictor": predictor, "gold": gold, "predicted": [*labels, "none"], "counts": matrix.tolist()},
        indent=1), encoding="utf-8")
    from bridge.report.mpl_config import report_style, use_kbc_cache

    use_kbc_cache()
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # matplotlib's defaults whatever matplotlibrc it read; no random ids or date: a rescore writes the same
    with report_style({"svg.hashsalt": "kbcompare"}):
        size = 2 + 0.45 * len(labels)
        fig, ax = plt.subplots(figsize=(size + 1, 2 + 0.45 * len(gold)))
        shown = ax.imshow(matrix, cmap="Blues")
        ax.set_xticks(range(len(labels) + 1), [*labels, "none"], rotation=90)
        ax.set_yticks(range(len(gold)), gold)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(f"{predictor}: confusion matrix")
        for (i, j), n in np.ndenumerate(matrix):
            if n:
                ax.text(j, i, str(n), ha="center", va="center", fontsize=6,
                        color="white" if n > matrix.max() / 2 else "black")
        fig.colorbar(shown, ax=ax, fraction=0.04)
        fig.tight_layout()
        with naming(stem.with_suffix(".png")):
            fig.savefig(stem.with_suffix(".png"), dpi=100, metadata={"Software": None})
        with naming(stem.with_suffix(".svg")):
            fig.savefig(stem.with_suffix(".svg"), metadata={"Date": None, "Creator": None})
        plt.close(fig)
