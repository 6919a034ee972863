"""Start-up cost: commands load only the libraries they use, and the collector does not walk long-lived data."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from eval.errors import ConfigError

HEAVY = ("torch", "transformers", "faiss", "pandas", "scipy", "sklearn", "rdflib", "pyoxigraph", "tantivy")


def _imported(args: list[str]) -> list[str]:
    code = ("import json, sys\nfrom bridge.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["ls"], ["data", "stats", "--help"], ["show", "--help"]])
def test_light_commands_import_no_heavy_library(args):
    assert _imported(args) == []


def test_show_of_a_run_imports_no_heavy_library(tmp_path):
    run = tmp_path / "run"
    (run / "predictions" / "trex" / "freq").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"corpora": ["trex"], "predictors": ["freq"]}))
    (run / "predictions" / "trex" / "freq" / "P19.jsonl").write_text(json.dumps(
        {"uid": "u1", "relation": "P19", "subject": "A", "gold": "B", "rank_raw": 1, "rank_filtered": 1,
         "answers": [["B", 1.0, None]]}) + "\n")
    assert _imported(["show", str(run), "--uid", "u1"]) == []


def test_the_collector_runs_less_often_during_a_command():
    from bridge.cli import main

    before = gc.get_threshold()
    try:
        main(["--version"])
        assert gc.get_threshold() == (100_000, 50, 20)
    finally:
        gc.set_threshold(*before)


def test_only_the_kbc_process_itself_leaves_its_objects_to_the_exit(monkeypatch):
    """`kbc` ends without the collector walking every object it made; a caller passing arguments keeps its
    collector as it was."""
    from bridge.cli import main

    before = gc.get_threshold()
    try:
        main(["ls"])
        assert gc.isenabled() and gc.get_freeze_count() == 0
        monkeypatch.setattr(sys, "argv", ["kbc", "ls"])
        main()
        assert not gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()
        gc.set_threshold(*before)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, ConfigError])
def test_a_stopped_or_refused_kbc_also_leaves_its_objects_to_the_exit(monkeypatch, stop):
    """Ctrl-C (or an error line) ends `kbc` as a finished command does: the collector's last walk over every object a
    run made (seconds, after "interrupted" is printed) is skipped, so the process ends as soon as its records are
    kept."""
    import bridge.cli as cli_module

    def stopped(**_):
        raise stop("stopped") if stop is ConfigError else stop

    before = gc.get_threshold()
    monkeypatch.setattr(cli_module.cli, "main", stopped)
    monkeypatch.setattr(sys, "argv", ["kbc", "ls"])
    try:
        with pytest.raises(SystemExit) as ended:
            cli_module.main()
        assert (ended.value.code, gc.isenabled(), gc.get_freeze_count() > 0) == (
            130 if stop is KeyboardInterrupt else 2, False, True)
    finally:
        gc.unfreeze()
        gc.enable()
        gc.set_threshold(*before)
