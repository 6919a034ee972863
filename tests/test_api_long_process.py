"""Many `kbcompare.run` calls in one process (a notebook, a sweep): what a run parsed of its prediction records is
not kept once it returns, else each run added its records to the process's memory (about 30 MB for 7,000 LM records)
until a cap of a million records, several GB."""

from __future__ import annotations

from pathlib import Path

import kbcompare
from bridge.run import results


def _kept_under(out: Path) -> list[str]:
    return [key for key in results._PARSED if Path(key).resolve().is_relative_to(out.resolve())]


def test_a_run_keeps_none_of_its_records_once_it_returns(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    options = dict(corpus="trex", relations=["P19", "P36"], limit=5, predictors=["freq", "kb"], data_dir=lama_dir)
    first = kbcompare.run("lama", **options, out=tmp_path / "a")
    assert list((tmp_path / "a" / "predictions").rglob("*.jsonl"))  # records were written, and read to score them
    assert _kept_under(tmp_path / "a") == []
    again = kbcompare.run("lama", **options, out=tmp_path / "a")  # a rerun reads them back: nothing asked again
    assert _kept_under(tmp_path / "a") == []
    assert (again.run_dir / "summary.json").read_bytes() == (first.run_dir / "summary.json").read_bytes()
    other = kbcompare.run("lama", **{**options, "seed": 1}, out=tmp_path / "b")
    assert _kept_under(tmp_path / "b") == [] and other.summary.shape[0] > 0

