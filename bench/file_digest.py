"""What fingerprinting a checkpoint by every byte costs, first read and remembered, as `name=seconds`.

    python bench/file_digest.py [--mb 440] [--work DIR]

Writes a file of `--mb` MiB of random bytes (the size of bert-base-cased's weights by default) in `--work`
(a temporary folder), waits until it is past `eval.file_digests.RACY_NS`, then times:
- `first`: its SHA-256, read whole from the page cache (a file just written is there; a cold disk is slower);
- `remembered_process`: the same file again in this process;
- `remembered_cache`: again with this process's memo cleared: the entry under `<cache>/digests/`;
- `after_edit`: one byte in the middle rewritten and the mtime restored: read whole again.
and the ratio `first / remembered_cache`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def timed(step) -> tuple[float, str]:
    start = time.perf_counter()
    value = step()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=440)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kbc-digest-"))
    work.mkdir(parents=True, exist_ok=True)  # a `--work` not there yet is made, as the cache under it is
    os.environ["KBC_CACHE"] = str(work / "cache")
    from eval import file_digests

    path = work / "model.safetensors"
    with path.open("wb") as handle:
        for _ in range(args.mb):
            handle.write(os.urandom(1 << 20))
    time.sleep(file_digests.RACY_NS / 1e9 + 0.1)
    first, digest = timed(lambda: file_digests.file_sha256(path))
    again, same = timed(lambda: file_digests.file_sha256(path))
    file_digests._MEMO.clear()
    cached, kept = timed(lambda: file_digests.file_sha256(path))
    assert digest == same == kept
    stat = path.stat()
    with path.open("r+b") as handle:
        handle.seek(stat.st_size // 2)
        byte = handle.read(1)
        handle.seek(stat.st_size // 2)
        handle.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    edited, changed = timed(lambda: file_digests.file_sha256(path))
    assert changed != digest, "an edit kept the digest"
    print(f"size_mb={args.mb}")
    print(f"first={first:.3f}")
    print(f"remembered_process={again:.6f}")
    print(f"remembered_cache={cached:.6f}")
    print(f"after_edit={edited:.3f}")
    print(f"first_over_remembered_cache={first / cached:.0f}")
    path.unlink()


if __name__ == "__main__":
    main()
