"""The fixed cost of a full T-REx `kbc run lama` with a language model: a tiny 2-layer BERT (the real bert-base-cased
tokenizer, hidden size 32), whose encoder costs almost nothing: its `forward` stage is mostly the projection onto
the whole vocabulary and the log-softmax at each mask, and what is left is everything around the scoring.

    python bench/fixed_cost.py [--data ../shared/data] [--work DIR] [--cold] [--repeat 1] [--device cpu]

Set up first (not timed): the model, saved under `--work`, and a Freq run over T-REx that fills the graph store
(`--cold` skips it: each timed run then starts from an empty cache). Each timed run writes a new `--out` with the
LM result cache emptied, so every query is scored. Prints `name=value` pairs: `end_to_end_s` (the command from
start to exit, seconds) and each stage's own seconds (`bench/stages.py`: imports, data, store, model_load,
tokenise, forward, extract, predict_host, records, summaries, intervals, instances, ...), the median over
`--repeat` runs; `scoring_s` sums forward and extract, `fixed_s` is the rest (on a CPU `predict_host` holds each
batch's top k, exact ranks and finiteness check, tensor work that a GPU does on the card, so `fixed_s` counts it
there). `--cpu` counts CPU seconds instead of wall seconds (steadier where other work shares the machine; run
with OMP_NUM_THREADS=1 there).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCORING = ("forward", "extract")

from bench.stages import parse  # noqa: E402


def tiny_bert(data: Path, where: Path) -> str:
    """A randomly initialised 2-layer BERT with the real bert-base-cased tokenizer (built once per `--work`)."""
    from bench.gpu import build_bert, saved, tokenizers

    if (where / "config.json").is_file():
        return str(where)
    tokenizer, _ = tokenizers(data)
    return saved(build_bert(tokenizer, smoke=True), tokenizer, where)


def timed_kbc(args: list[str], env: dict[str, str], cpu: bool = False) -> tuple[float, dict[str, float]]:
    """(seconds from start to exit, stage seconds) of one `kbc` command run under `bench/stages.py`; `cpu`: the
    command's CPU seconds (user and system) instead of wall seconds, its stages likewise."""
    env = {**env, "KBC_STAGE_CLOCK": "cpu"} if cpu else env
    start, before = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "stages.py"), "--", *args], env=env,
                          capture_output=True, text=True)
    seconds = _children_cpu() - before if cpu else time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kbc {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, parse(done.stdout)


def plain_kbc(args: list[str], env: dict[str, str]) -> float:
    """Seconds from start to exit of one `kbc` command run as a user runs it: no stage clock, whose device
    synchronisation at every stage would stop a GPU run's host work from overlapping the card's."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bridge.cli", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"kbc {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def kbc_env(cache: Path) -> dict[str, str]:
    return {**os.environ, "KBC_CACHE": str(cache),
            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data",
                    help="folder holding lama/ and tokenizers/")
    ap.add_argument("--work", type=Path, default=None, help="model, cache and runs (default: a temporary folder)")
    ap.add_argument("--cold", action="store_true", help="an empty cache for each timed run (graph store included)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds instead of wall seconds (a shared machine)")
    ap.add_argument("--keep", action="store_true", help="keep each timed run's folder (run-1, run-2, ...)")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kbc-fixed-cost-"))
    model = tiny_bert(args.data, work / "model")
    cache = work / "cache"
    lama = ["run", "lama", "--corpus", "trex", "--data-dir", str(args.data / "lama"), "--quiet"]
    if not args.cold:
        subprocess.run([sys.executable, "-m", "bridge.cli", *lama, "--predictors", "freq", "--out",
                        str(work / "setup")], env=kbc_env(cache), check=True, capture_output=True)
    totals: list[float] = []
    stages: list[dict[str, float]] = []
    for i in range(1, args.repeat + 1):
        out = work / f"run-{i}"
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache / "lm" if not args.cold else cache, ignore_errors=True)
        seconds, found = timed_kbc([*lama, "--predictors", f"bert={model}", "--device", args.device,
                                    "--out", str(out)], kbc_env(cache), args.cpu)
        totals.append(seconds)
        stages.append(found)
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    names = list(dict.fromkeys(name for s in stages for name in s))
    result = {"end_to_end_s": round(statistics.median(totals), 2)}
    result |= {f"{name}_s": round(statistics.median(s.get(name, 0.0) for s in stages), 2) for name in names}
    scoring = statistics.median(sum(s.get(n, 0.0) for n in SCORING) for s in stages)
    result["scoring_s"] = round(scoring, 2)
    result["fixed_s"] = round(result["end_to_end_s"] - scoring, 2)
    print(" ".join(f"{k}={v}" for k, v in result.items()), flush=True)
    return result


if __name__ == "__main__":
    main()
