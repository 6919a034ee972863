"""A run whose prediction files changed after scoring is refused naming the files, and how each changed."""

import json
import shutil

import pytest
from analyze_support import call_kbc
from cli_support import run_kbc


@pytest.fixture(scope="module")
def scored(tmp_path_factory, lama_dir):
    root = tmp_path_factory.mktemp("changed")
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "20", "--predictors", "freq",
            "--data-dir", str(lama_dir), "--out", str(root / "run"), "--quiet"]
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        assert call_kbc(argv)[0] == 0
    return root / "run"


def _refusal(run, capsys):
    code, _, err = run_kbc(["leaderboard", str(run)], capsys)
    assert code == 2
    head = f"error: {run}: its prediction files changed since its summaries were written"
    return err.removeprefix(head).removesuffix("; rerun the same `kbc run` command to rescore it\n")


def test_the_changed_prediction_files_are_named(scored, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    folder = run / "predictions" / "trex" / "freq"
    torn = folder / "P19.jsonl"
    torn.write_bytes(torn.read_bytes()[:-40])  # a torn last line
    assert _refusal(run, capsys) == ": predictions/trex/freq/P19.jsonl (cut or edited)"
    (folder / "P36.jsonl").unlink()
    assert _refusal(run, capsys) == (": predictions/trex/freq/P19.jsonl (cut or edited), predictions/trex/freq/"
                                     "P36.jsonl (removed)")
    stamp = json.loads((run / ".kbc-summaries").read_text())
    del stamp["prediction_files"]  # written by an earlier kbc: the digest of them all only
    (run / ".kbc-summaries").write_text(json.dumps(stamp))
    assert _refusal(run, capsys) == " (cut, edited or added)"
