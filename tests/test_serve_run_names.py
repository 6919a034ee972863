"""`kbc serve --run` names each run by its folder as given: two folders of one name are refused with both paths and
the fix (a link under another name), and the run behind such a link is served under the link's name."""

import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc

from bridge.run.summaries import collect
from bridge.serve.runs import Runs
from eval.errors import ConfigError

GOLDEN = Path(__file__).parent / "golden" / "lama_run"


@pytest.fixture
def two_a(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)
    runs = []
    for parent in ("runs", "other"):
        shutil.copytree(GOLDEN, tmp_path / parent / "A")
        collect(tmp_path / parent / "A")
        runs.append(Path(parent) / "A")
    return runs[0], runs[1]


def test_two_runs_of_one_folder_name_are_refused_with_both_paths_and_the_fix(two_a, tmp_path, capsys):
    line = (f"two --run directories are named 'A' (runs/A and other/A), and the explorer names a run by its folder; "
            f"give one another name, e.g. a link to it: `ln -s {tmp_path}/other/A A-2`, then --run A-2")
    with pytest.raises(ConfigError) as caught:
        Runs(list(two_a))
    assert str(caught.value) == line
    assert run_kbc(["serve", "--run", "runs/A", "--run", "other/A", "--port", "0"], capsys) == (2, "",
                                                                                             f"error: {line}\n")


def test_a_link_serves_a_run_under_the_links_name(two_a, tmp_path):
    Path("A-2").symlink_to(tmp_path / "other" / "A")
    runs = Runs([two_a[0], Path("A-2"), two_a[0].resolve()])  # the same run under another spelling is listed once
    assert [(r["name"], r["path"]) for r in runs.listing()] == [("A", "runs/A"), ("A-2", "A-2")]
