"""The fixed cost of everyday commands: seconds from start to exit, each as `name=seconds`.

    python bench/everyday.py [--data-dir ../shared/data/lama] [--work DIR] [--repeat 3]

Uses its own cache and run folders under `--work` (a temporary folder by default), set up first
(not timed): a Freq + gold-KB run over T-REx + Google-RE, which loads the graph store, and a Freq run. Then:
- `freq_rerun`: the same Freq run again, nothing left to compute;
- `freq_first_warm`: a Freq run into a new `--out` on that warm cache;
- `relations_typo`: `--relations P999` until its `error:` line;
- `help`, `ls`, `data_stats`, `kb_stats`: `kbc --help`, `kbc ls`, `kbc data stats`, `kbc kb stats`;
- `compare`, `show`: `kbc compare RUN freq gold` and `kbc show RUN --uid U` on the full T-REx run;
- `serve_first_answer`: `kbc serve --predictors freq` (T-REx, gold KB and Freq) on a free port, until its first
  answer to `/api/query` (a T-REx P19 fact), then stopped.
Each figure is the median of `--repeat` runs (the first-run figure: a fresh `--out` each time).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

KBC = [sys.executable, "-m", "bridge.cli"]


def kbc(args: list[str], env: dict[str, str], expect: int = 0) -> float:
    """Seconds one `kbc` command takes; its exit status must be `expect`."""
    start = time.perf_counter()
    done = subprocess.run([*KBC, "-q", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"kbc {' '.join(args)} exited {done.returncode}, expected {expect}: {done.stderr[-2000:]}")
    return seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_first_answer(data: list[str], env: dict[str, str], subject: str, timeout: float = 300.0) -> float:
    """Seconds from starting `kbc serve` (Freq beside the gold KB, T-REx) to its first answered query."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/query?" + urllib.parse.urlencode({"subject": subject, "relation": "P19"})
    start = time.perf_counter()
    proc = subprocess.Popen([*KBC, "-q", "serve", "--port", str(port), "--predictors", "freq", *data], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while time.perf_counter() - start < timeout:
            if proc.poll() is not None:
                raise SystemExit(f"kbc serve exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(url, timeout=30) as response:
                    body = json.loads(response.read())
                if response.status == 200 and body:
                    return time.perf_counter() - start
            except urllib.error.HTTPError as exc:
                raise SystemExit(f"kbc serve answered {exc.code}: {exc.read()[:500]!r}") from None
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        raise SystemExit(f"kbc serve gave no answer in {timeout:.0f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def median(fn, repeat: int) -> float:
    return statistics.median(fn(i) for i in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("KBC_DATA"))
    ap.add_argument("--work", default=None, help="folder for the cache and runs (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help="figures to measure (default: all)")
    args = ap.parse_args()
    if not args.data_dir:
        raise SystemExit("error: pass --data-dir or set KBC_DATA")
    work = Path(args.work or tempfile.mkdtemp(prefix="kbc-everyday-"))
    env = {**os.environ, "KBC_CACHE": str(work / "cache"), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    data = ["--data-dir", str(args.data_dir)]
    base = ["run", "lama", "--corpus", "trex", "google_re", *data, "--quiet"]
    both = work / "both"
    freq = work / "freq"
    # set-up, not timed: the graph store and both runs (rerun each time: a run's summaries are current for this code)
    kbc([*base, "--predictors", "freq", "gold", "--out", str(both)], env)
    kbc([*base, "--predictors", "freq", "--out", str(freq)], env)
    first = json.loads((both / "predictions" / "trex" / "freq" / "P19.jsonl").open().readline())
    uid = first["uid"]
    figures = {
        "freq_rerun": lambda i: kbc([*base, "--predictors", "freq", "--out", str(freq)], env),
        "freq_first_warm": lambda i: kbc([*base, "--predictors", "freq", "--out",
                                          str(work / f"first-{time.time_ns()}")], env),
        "relations_typo": lambda i: kbc([*base, "--predictors", "freq", "--relations", "P999",
                                         "--out", str(work / "typo")], env, expect=2),
        "help": lambda i: kbc(["--help"], env),
        "ls": lambda i: kbc(["ls"], env),
        "data_stats": lambda i: kbc(["data", "stats", *data], env),
        "kb_stats": lambda i: kbc(["kb", "stats"], env),
        "compare": lambda i: kbc(["compare", str(both), "freq", "gold", "--corpus", "trex"], env),
        "show": lambda i: kbc(["show", str(both), "--uid", uid], env),
        "serve_first_answer": lambda i: serve_first_answer(data, env, first["subject"]),
    }
    for name, fn in figures.items():
        if args.only is None or name in args.only:
            print(f"{name}={median(fn, args.repeat):.2f}", flush=True)


if __name__ == "__main__":
    main()
