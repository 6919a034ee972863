"""`--store-update` and `--store-timeout` taken alike by the commands that read the graph store: the same limit, and
`kbc analyze evidence`, which runs prompts as `kbc run` does, hands them on to its run."""

from __future__ import annotations

import pytest
from cli_support import run_kbc

from eval.errors import ConfigError

COMMANDS = (["run", "lama", "--corpus", "squad", "--predictors", "freq"], ["kb", "stats"],
            ["analyze", "evidence", "RUN"], ["serve"])


@pytest.fixture
def squad_run(lama_dir, tmp_path, monkeypatch, capsys):
    """A finished run of the frequency baseline on SQuAD (quick: no store, no model)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "squad"
    code, _, err = run_kbc(["run", "lama", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(lama_dir),
                            "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    return run


@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_store_timeout_of_zero_is_refused_alike_by_every_command(command, tmp_path, capsys):
    argv = [str(tmp_path) if a == "RUN" else a for a in command]
    code, out, err = run_kbc([*argv, "--store-timeout", "0"], capsys)
    shown = " ".join(a for a in command if not a.startswith("-") and a not in ("RUN", "squad", "freq"))
    assert (code, out, err) == (2, "", "error: Invalid value for '--store-timeout': 0.0 is not in the range x>0. "
                                       f"(see `kbc {shown} --help`)\n")


def test_kbc_run_takes_a_store_timeout_under_a_tenth_of_a_second_as_the_others_do(lama_dir, tmp_path, monkeypatch,
                                                                                   capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "run"), "--store-timeout", "0.05", "--quiet"], capsys)
    assert code == 0, err
    (tmp_path / "run.toml").write_text('corpus = "squad"\npredictors = ["freq"]\nstore_timeout = 0.05\n'
                                       f'out = "{tmp_path / "file"}"\n')
    code, _, err = run_kbc(["run", "lama", "--config", str(tmp_path / "run.toml"), "--data-dir", str(lama_dir),
                            "--quiet"], capsys)
    assert code == 0, err


@pytest.mark.parametrize(("given", "update", "timeout"), [
    ([], None, 30.0),
    (["--store-update", "http://127.0.0.1:9/update", "--store-timeout", "7.5"], "http://127.0.0.1:9/update", 7.5)])
def test_analyze_evidence_hands_its_store_options_to_the_run_it_makes(squad_run, monkeypatch, capsys, given, update,
                                                                      timeout):
    import bridge.run.runner

    seen = []

    def run_experiment(cfg, experiment, progress=True, *args, **kwargs):
        seen.append(cfg)
        raise ConfigError("stopped before asking anything")

    monkeypatch.setattr(bridge.run.runner, "run_experiment", run_experiment)
    code, _, err = run_kbc(["analyze", "evidence", str(squad_run), "--store", "http://127.0.0.1:9/query", *given,
                            "--quiet"], capsys)
    assert code != 0 and "stopped before asking anything" in err
    assert [(c.store, c.store_update, c.store_timeout) for c in seen] == [("http://127.0.0.1:9/query", update,
                                                                           timeout)]
