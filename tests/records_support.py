"""Hand-made run directories that read as `kbc run` leaves them: every record line with its digest."""

from __future__ import annotations

from pathlib import Path

from bridge.run.record_digests import FOLDER, SUFFIX, key_of, line_digest


def seal_records(run: Path) -> None:
    """Write the digests of every complete line of `run`'s prediction files, as the runner keeps them
    (`bridge.run.record_digests`): a test's hand-made records then read as records the run wrote."""
    predictions = run / "predictions"
    (run / FOLDER).mkdir(exist_ok=True)
    for path in sorted(predictions.rglob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        sums = run / FOLDER / path.relative_to(predictions).with_suffix(SUFFIX)
        sums.parent.mkdir(parents=True, exist_ok=True)
        key = key_of(path)
        sums.write_bytes(b"".join(line_digest(raw, key) for raw in lines if raw.endswith(b"\n")))
