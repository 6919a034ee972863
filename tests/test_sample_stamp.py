"""The sample a run's readers state (`Sample: at most N facts…`, the explorer's header, the leaderboard's and
`kbc compare`'s sample notes) is the one its summaries were scored from: an attempt's `limit` or `seed` edited in
config.json's run log after scoring is refused by every reader, in the one line of the other tamper checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc, run_kbc_captured

from bridge.run.freshness import STAMP
from bridge.serve.runs import Runs
from eval.errors import DataError


@pytest.fixture(scope="module")
def scored(lama_dir, tmp_path_factory) -> Path:
    """A finished freq run over a sample of 4 facts of T-REx P19 and P36 (seed 0)."""
    root = tmp_path_factory.mktemp("sample")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        code = run_kbc_captured(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "4",
                        "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(root / "run"),
                        "--quiet"])
    assert code[0] == 0, code
    return root / "run"


def _report(run: Path, capsys) -> str:
    """The text of `kbc report RUN`'s page."""
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    return Path(out.strip()).read_text(encoding="utf-8")


def _edit_attempt(run: Path, **changes: object) -> None:
    """Change the first attempt of config.json's run log, as a hand edit would."""
    path = run / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["runs"][0].update(changes)
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")


def _why(run: Path, stated: str) -> str:
    """The refusal of `run` whose run log states the sample `stated` (it was scored from `--limit 4 --seed 0`): a
    rerun would keep the edited attempt, so the fix is to set it back."""
    return (f"{run}: its config.json's run log (`runs`) states the sample {stated}, but its summaries were scored "
            "from `--limit 4 --seed 0`; ")


@pytest.mark.parametrize(("changes", "stated"), [({"limit": 7}, "`--limit 7 --seed 0`"),
                                                   ({"seed": 3}, "`--limit 4 --seed 3`"),
                                                   ({"limit": None}, "every fact")])
def test_every_command_refuses_a_sample_edited_in_the_run_log(scored, tmp_path, capsys, changes, stated):
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    assert "Sample: at most 4 facts per relation, drawn with seed 0" in _report(run, capsys)
    _edit_attempt(run, **changes)
    for argv in (["report", str(run)], ["leaderboard", str(run)], ["leaderboard", str(scored), str(run)],
                 ["compare", str(run), "freq", "freq"], ["compare", str(scored), "freq", "freq", "--b-run", str(run)],
                 ["show", str(run), "--uid", "x"]):
        code, out, err = run_kbc(argv, capsys)
        assert (code, out) == (2, ""), argv
        assert err == f"error: {_why(run, stated)}set its attempts' `limit` and `seed` back to the sample scored\n"
    _edit_attempt(run, limit=4, seed=0)  # the fix the line names: the run reads as before
    assert "Sample: at most 4 facts per relation, drawn with seed 0" in _report(run, capsys)


def test_the_explorer_refuses_a_sample_edited_in_the_run_log(scored, lama_dir, tmp_path):
    """Served before the edit, or started after it: its API and pages state no sample but the one scored."""
    from fastapi.testclient import TestClient
    from markupsafe import escape

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig

    run = tmp_path / "run"
    shutil.copytree(scored, run)
    served = Runs([run])
    _edit_attempt(run, limit=7)
    why = _why(run, "`--limit 7 --seed 0`")
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=["freq"],
                                             cache_dir=tmp_path / "cache"))
    try:
        with TestClient(create_app(explorer, served)) as c:
            for url in ("/api/runs/run", "/api/runs/run/facts"):
                r = c.get(url)
                assert r.status_code >= 400 and r.json()["detail"].startswith(why), (url, r.text)
            page = c.get("/runs/run")
            assert page.status_code >= 400 and "a sample (--limit" not in page.text, page.text
            assert f'<p class="error" id="error">{escape(why)}' in page.text, page.text
    finally:
        explorer.close()
    with pytest.raises(DataError) as caught:
        Runs([run])
    assert str(caught.value).startswith(why)


def test_a_run_scored_before_samples_were_stamped_reads_as_before(scored, tmp_path, capsys):
    """A stamp of an earlier kbc version keeps no samples: its run is read as before (its run log trusted)."""
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    stamp = json.loads((run / STAMP).read_text(encoding="utf-8"))
    assert stamp.pop("samples") == [[4, 0]]
    (run / STAMP).write_text(json.dumps(stamp), encoding="utf-8")
    assert "Sample: at most 4 facts per relation, drawn with seed 0" in _report(run, capsys)
    assert run_kbc(["leaderboard", str(run)], capsys)[0] == 0
    assert Runs([run]).get("run") is not None
