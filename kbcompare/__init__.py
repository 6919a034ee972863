"""kbcompare from Python: run experiments, read their tables as pandas DataFrames, compare and rank runs, ask one
query of KBs and LMs side by side, and probe a model while it trains.

Everything here runs what the `kbc` command runs, with the same run directories, caches and checks. Errors a
user can act on are `KbcError`s (`ConfigError` for settings that cannot work, `DataError` for missing or damaged
data) whose message is the one line `kbc` prints after `error:`.

    import kbcompare
    result = kbcompare.run("lama", corpus="trex", relations=["P19"], predictors=["freq"], out="runs/p19")
    result.table()            # the headline table, one row per predictor
    result.facts              # one row per fact and predictor
"""

from __future__ import annotations

from bridge.run.reading import EarlierReadingWarning
from eval.errors import ConfigError, DataError, KbcError
from kbcompare.boards import FewSharedWarning, compare, leaderboard
from kbcompare.runs import Run, experiments, load_run, run
from kbcompare.sides import Answers, Sides, ask

__all__ = ["Answers", "ConfigError", "DataError", "EarlierReadingWarning", "FewSharedWarning", "KbcError",
           "ProbeCallback", "Run", "Sides", "ask", "compare", "experiments", "leaderboard", "load_run", "run"]


def __getattr__(name: str):
    if name == "ProbeCallback":  # imports transformers: only when asked for
        from kbcompare.callback import ProbeCallback

        return ProbeCallback
    raise AttributeError(f"module 'kbcompare' has no attribute {name!r}")
