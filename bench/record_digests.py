"""What checking prediction records against their digests (`bridge.run.record_digests`) costs, as `name=seconds`.

    python bench/record_digests.py [--run RUN] [--data-dir DIR] [--repeat 3]

Without `--run`, first runs `kbc run lama --corpus trex --predictors freq` (every T-REx fact, ~34K records) into a
temporary folder. Then times, best of `--repeat`, over every prediction file of the run:
- `read_checked` / `read_unchecked`: parsing every record as `kbc compare` or a scoring does, with and without the
  digest check, and their ratio;
- `resume_checked` / `resume_unchecked`: the uids a rerun reads off each line's head (`done_uids`), with and
  without the check, and their ratio;
- `write_digested` / `write_plain`: appending the same lines again in chunks of 512 with their digests (synced to
  disk per chunk) and as plain appends, and their ratio.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK = 512


def best(step, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None)
    parser.add_argument("--data-dir", default="../shared/data/lama")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kbc-records-"))
    run = args.run
    if run is None:
        run = work / "run"
        subprocess.run([sys.executable, "-m", "bridge.cli", "-q", "run", "lama", "--corpus", "trex", "--predictors",
                        "freq", "--data-dir", args.data_dir, "--out", str(run)], check=True)
    from bridge.run import record_digests, results

    files = sorted((run / "predictions").rglob("*.jsonl"))
    lines = sum(len(p.read_bytes().splitlines()) for p in files)
    size = sum(p.stat().st_size for p in files)

    def read() -> None:
        results._PARSED.clear()
        for path in files:
            results.complete_records(path)

    def resume() -> None:
        results._PARSED.clear()
        for path in files:
            results.done_uids(path)

    checked = best(read, args.repeat), best(resume, args.repeat)
    check = results.check_lines
    results.check_lines = lambda path, lines: None
    try:
        unchecked = best(read, args.repeat), best(resume, args.repeat)
    finally:
        results.check_lines = check

    copy = work / "copy"
    (copy / "predictions").mkdir(parents=True, exist_ok=True)
    (copy / "config.json").write_text("{}")
    (copy / record_digests.FOLDER).mkdir(exist_ok=True)
    texts = [p.read_text(encoding="utf-8").splitlines(keepends=True) for p in files]

    def write(digested: bool) -> None:
        for n, chunked in enumerate(texts):
            path = copy / "predictions" / f"{n}.jsonl"
            path.unlink(missing_ok=True)
            if digested:
                with record_digests.RecordAppender(path) as handle:
                    for start in range(0, len(chunked), CHUNK):
                        handle.write(chunked[start:start + CHUNK])
            else:
                with path.open("a", encoding="utf-8") as handle:
                    for start in range(0, len(chunked), CHUNK):
                        handle.writelines(chunked[start:start + CHUNK])
                        handle.flush()

    digested = best(lambda: write(True), args.repeat)
    plain = best(lambda: write(False), args.repeat)
    print(f"run={run}")
    print(f"files={len(files)}")
    print(f"lines={lines}")
    print(f"size_mb={size / 2**20:.1f}")
    print(f"read_checked={checked[0]:.3f}")
    print(f"read_unchecked={unchecked[0]:.3f}")
    print(f"read_ratio={checked[0] / unchecked[0]:.2f}")
    print(f"resume_checked={checked[1]:.3f}")
    print(f"resume_unchecked={unchecked[1]:.3f}")
    print(f"resume_ratio={checked[1] / unchecked[1]:.2f}")
    print(f"write_digested={digested:.3f}")
    print(f"write_plain={plain:.3f}")
    print(f"write_ratio={digested / plain:.2f}")


if __name__ == "__main__":
    main()
