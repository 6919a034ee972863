"""Two `kbcompare.run` calls from two threads of one process (a thread pool, a notebook's background job), each
into its own `--out`: both finish, and each writes what it writes alone. The first runs of a fresh interpreter
load their models at the same time, which is where transformers' lazy first import of its classes races."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from lm_fixtures import tiny_models  # noqa: F401  (pytest finds the fixture by name)

import kbcompare

CONCURRENT = textwrap.dedent("""
    import json, sys, threading
    import kbcompare
    lama, masked, causal, root = sys.argv[1:]
    errors = []
    def run(name, model):
        try:
            kbcompare.run("lama", corpus="trex", relations=["P19"], limit=4, predictors={name: model},
                          data_dir=lama, out=f"{root}/{name}")
        except BaseException as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=run, args=a) for a in (("masked", masked), ("causal", causal))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    from transformers.utils import logging
    print(json.dumps({"errors": errors, "verbosity": logging.get_verbosity(),
                      "bars": logging.is_progress_bar_enabled()}))
""")


def test_two_runs_from_two_threads_of_a_fresh_process(lama_dir, tiny_models, tmp_path, monkeypatch):  # noqa: F811
    masked, causal = tiny_models("bert-cased"), tiny_models("gpt2")
    env = {**os.environ, "KBC_CACHE": str(tmp_path / "cache-threads")}
    done = subprocess.run([sys.executable, "-c", CONCURRENT, str(lama_dir), str(masked), str(causal),
                           str(tmp_path / "threads")], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["errors"] == []
    # transformers' verbosity and bars, switched off while each model loads, are back as they were
    assert (seen["verbosity"], seen["bars"]) == (30, True)

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache-alone"))
    for name, model in (("masked", masked), ("causal", causal)):
        kbcompare.run("lama", corpus="trex", relations=["P19"], limit=4, predictors={name: model},
                      data_dir=lama_dir, out=tmp_path / "alone" / name)
        threaded, alone = tmp_path / "threads" / name, tmp_path / "alone" / name
        assert (threaded / "summary.json").read_bytes() == (alone / "summary.json").read_bytes()
        pd.testing.assert_frame_equal(pd.read_parquet(threaded / "instances.parquet"),
                                      pd.read_parquet(alone / "instances.parquet"))


def test_a_run_into_an_out_another_thread_writes_names_this_process(lama_dir, tmp_path, monkeypatch):
    """The refusal names the holder as what it is, a run of this Python process (a notebook, a script), not as a
    `kbc` command line made of the script's arguments."""
    from bridge.run.run_lock import RunLock

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["/srv/kernel/ipykernel_launcher.py", "-f", "/srv/kernel-1.json"])
    out = tmp_path / "run"
    out.mkdir()
    with RunLock(out), pytest.raises(kbcompare.ConfigError) as refused:
        kbcompare.run("lama", corpus="trex", relations=["P19"], limit=2, predictors=["freq"], data_dir=lama_dir,
                      out=out)
    message = str(refused.value)
    assert f"process {os.getpid()} (`python /srv/kernel/ipykernel_launcher.py -f /srv/kernel-1.json`" in message
    assert message.endswith("in another thread of this process; wait for it or use another --out")
    assert "`kbc" not in message


@pytest.mark.parametrize(("argv", "command"), [
    (["/venv/bin/kbc", "run", "lama"], "kbc run lama"),
    (["/src/bridge/cli/__main__.py", "serve"], "kbc serve"),
    (["sweep.py", "--n", "3"], "python sweep.py --n 3"),
    ([], "python"),
])
def test_the_command_line_a_lock_names(argv, command):
    from kb.writer_lock import command_line

    assert command_line(argv) == command


def test_a_run_leaves_the_caller_s_torch_threads_and_gives_the_command_s_numbers(lama_dir, tiny_models, tmp_path,  # noqa: F811
                                                                                 capsys, monkeypatch):
    """A notebook's `torch.set_num_threads(3)` holds after a run whose passes ran side by side on one thread each,
    and after one that failed in a pass; the run's numbers are those `kbc run` writes."""
    import torch
    from cli_support import run_kbc

    import lm.statement

    bert = tiny_models("bert-cased")
    asked = {"corpus": "trex", "relations": ["P19"], "limit": 6, "predictors": {"m": str(bert)},
             "settings": {"m.scoring": "statement"}, "data_dir": lama_dir}
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache-api"))
        kbcompare.run("lama", out=tmp_path / "api", **asked)
        assert torch.get_num_threads() == 3
        passes = lm.statement.map_passes

        def failing(fn, items, device):
            def fail(item):
                raise RuntimeError("a pass failed")

            return passes(fail, items, device)

        monkeypatch.setattr(lm.statement, "map_passes", failing)
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache-failed"))
        with pytest.raises(RuntimeError, match="a pass failed"):
            kbcompare.run("lama", out=tmp_path / "failed", **asked)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    monkeypatch.setattr(lm.statement, "map_passes", passes)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache-cli"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "6", "--predictors",
                            f"m={bert}", "--set", "m.scoring=statement", "--data-dir", str(lama_dir), "--out",
                            str(tmp_path / "cli"), "--quiet"], capsys)
    assert code == 0, err
    assert (json.loads((tmp_path / "api" / "summary.json").read_text())
            == json.loads((tmp_path / "cli" / "summary.json").read_text()))
