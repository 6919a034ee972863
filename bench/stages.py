"""Where the seconds of one `kbc run` go: each stage's own wall time, nested stages taken out of their callers.

    python bench/stages.py -- run lama --corpus trex --predictors bert=DIR ...   (any `kbc` arguments)

runs `kbc` in this process with a clock around the functions listed in `STAGES` (and around every first import
of a module, wherever it happens), then prints one line `stages {json}`: stage -> seconds, with `total` (from
this process's start) and `other` (what no stage holds: argument parsing, the runner's own loops, writing the
record lines). A stage inside another is charged to the inner one alone. On a GPU the device is synchronised at
each stage boundary, so that kernels are charged to the stage that launched them.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import time
from pathlib import Path

# `KBC_STAGE_CLOCK=cpu`: this process's CPU seconds instead of wall seconds (steadier on a shared machine)
CLOCK = time.process_time if os.environ.get("KBC_STAGE_CLOCK") == "cpu" else time.perf_counter
START = CLOCK()
ROOT = Path(__file__).resolve().parents[1]
PREFIX = "stages "

# stage -> the functions charged to it, as (module, attribute path); a module attribute is looked up where the
# caller finds it (`from x import f` binds f in the caller's module)
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "data": (("bridge.run.runner", "plan_run"), ("bridge.run.runner", "check_relations")),
    "store": (("bridge.run.runner", "open_store"), ("bridge.run.runner", "_valid_objects"),
              ("kb.store", "GraphStore.ensure_relations")),
    "queries": (("bridge.experiments.lama", "LamaExperiment.queries"),),
    "model_load": (("lm.loading", "load"),),
    "scorer_init": (("lm.masked", "MaskedLMScorer.__init__"),),
    "candidates": (("lm.vocab", "token_labels"), ("lm.vocab", "from_words"), ("lm.vocab", "read_vocab_file")),
    "filter": (("bridge.run.runner", "_drop_unsupported"), ("bridge.run.runner", "_unanswerable"),
               ("bridge.run.runner", "_drop_unsuitable")),
    "tokenise": (("lm.masked", "MaskedLMScorer.encode"),),
    "forward": (("lm.masked", "MaskedLMScorer._candidate_logp"),),
    "extract": (("lm.masked", "MaskedLMScorer._extract"),),
    "result_cache": (("lm.cache", "ResultCache.get_many"), ("lm.cache", "ResultCache.put_many")),
    "predict_host": (("lm.masked", "MaskedLMPredictor.predict"),),
    "records": (("bridge.run.executors", "Recorder.lines"),),
    "config": (("bridge.run.runner", "merge_config"), ("bridge.run.runner", "write_json"),
               ("bridge.run.runner", "package_versions")),
    "summaries": (("bridge.run.runner", "collect"),),
    "read_records": (("bridge.run.summaries", "answered_units"),),
    "metrics": (("bridge.experiments.lama", "LamaExperiment.summarize"),),
    "intervals": (("bridge.run.summaries", "unit_sets"), ("bridge.run.summaries", "interval_table")),
    "summary_md": (("bridge.run.summaries", "markdown"),),
    "instances": (("bridge.run.instances", "write_instances"),),
    "digests": (("bridge.run.summaries", "files_digest"), ("bridge.run.summaries", "inputs_digest"),
                ("bridge.run.summaries", "write_stamp")),
}


class StageClock:
    """Exclusive wall time per stage: entering a stage stops its caller's clock until it returns."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.stack: list[str] = []
        self.mark = CLOCK()

    def _sync(self) -> None:
        torch = sys.modules.get("torch")
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
            return  # not imported, or being imported right now
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():  # a CUDA device is in use
            cuda.synchronize()

    def _charge(self) -> None:
        self._sync()
        now = CLOCK()
        if self.stack:
            name = self.stack[-1]
            self.seconds[name] = self.seconds.get(name, 0.0) + now - self.mark
        self.mark = now

    def wrap(self, name: str, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self._charge()
            self.stack.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                self._charge()
                self.stack.pop()

        return timed

    def install(self) -> None:
        """Every first import is charged to `imports`; then each function of `STAGES` to its stage."""
        bootstrap = importlib._bootstrap  # type: ignore[attr-defined]
        find_and_load = bootstrap._find_and_load
        bootstrap._find_and_load = self.wrap("imports", find_and_load)
        for stage, targets in STAGES.items():
            for module, path in targets:
                owner = importlib.import_module(module)
                *parents, attr = path.split(".")
                for part in parents:
                    owner = getattr(owner, part)
                setattr(owner, attr, self.wrap(stage, getattr(owner, attr)))

    def report(self) -> dict[str, float]:
        total = CLOCK() - START
        out = {name: round(s, 3) for name, s in sorted(self.seconds.items(), key=lambda kv: -kv[1])}
        out["other"] = round(total - sum(self.seconds.values()), 3)
        out["total"] = round(total, 3)
        return out


def run_kbc(argv: list[str]) -> int:
    """`kbc argv` in this process with the clock installed; prints the `stages` line; the exit status."""
    sys.path.insert(0, str(ROOT))
    clock = StageClock()
    clock.install()  # the stage modules' own imports are charged to `imports` as in a plain run
    status = 0
    sys.argv = ["kbc", *argv]
    try:
        from bridge.cli import main

        main()  # as the `kbc` command runs it (it also ends the process as `kbc` does)
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    print(PREFIX + json.dumps(clock.report()), flush=True)
    return status


def parse(stdout: str) -> dict[str, float]:
    """The stage seconds a `bench/stages.py` run printed."""
    line = next(line for line in reversed(stdout.splitlines()) if line.startswith(PREFIX))
    return json.loads(line[len(PREFIX):])


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(run_kbc(args[1:] if args[:1] == ["--"] else args))
