"""Bad input gets one `error:` line and exit 2, never a traceback: run files with values of the wrong type,
reports of correlations joined from another run, `--embeddings` folders that are no masked LM, a port in use."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pandas as pd
import pytest
from analyze_support import check_socs_column, small_run  # noqa: F401  (pytest finds the fixture by name)
from cli_support import run_kbc

from eval.errors import ConfigError


def _one_error(code: int, err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- 1. run files: every typed key is checked as its flag would be -------------------------------------------
BAD_TOML = [
    ('limit = "five"', "limit: expected an integer, got 'five'"),
    ("limit = 2.5", "limit: expected an integer, got 2.5"),
    ("limit = 0", "limit: expected an integer of at least 1, got 0"),
    ('seed = "x"', "seed: expected an integer, got 'x'"),
    ("seed = 1.5", "seed: expected an integer"),
    ("depth = true", "depth: expected an integer, got true"),
    ("depth = 0", "depth: expected an integer of at least 1"),
    ('batch_size = "32"', "batch_size: expected an integer"),
    ("prompt_draws = 0", "prompt_draws: expected an integer of at least 1"),
    ('store_timeout = "slow"', "store_timeout: expected a number, got 'slow'"),
    ("store_timeout = false", "store_timeout: expected a number"),
    ("store_timeout = 0", "store_timeout: expected a finite number above 0, got 0"),
    ("store_timeout = nan", "store_timeout: expected a finite number"),
    ('dtype = "float64"', "dtype: expected one of 'float32', 'bfloat16', 'float16', got 'float64'"),
    ('setting = "best"', "setting: expected one of 'raw', 'filtered'"),
    ("compat = true", "compat: expected one of 'lama'"),
    ("device = 0", "device: expected a string, got 0"),
    ("out = 5", "out: expected a string"),
    ("data_dir = [\"a\"]", "data_dir: expected a string, got a list"),
    ("prompts = 1", "prompts: expected a string"),
    ("context = false", "context: expected a string"),
    ("relations = 19", "relations: expected a list of strings, got 19"),
    ('relations = ["P19", 36]', "relations: expected a list of strings"),
    ("set = 5", "set: expected a table"),
    ("set = { cache = [1] }", "set.cache: expected a string, number or boolean"),
]


def _run_file(tmp_path: Path, extra: str) -> Path:
    """A TOML run file of freq on T-REx into tmp_path/out, with the `extra` lines (they replace the same keys)."""
    path = tmp_path / "run.toml"
    base = {"corpus": '["trex"]', "predictors": '["freq"]', "out": f'"{tmp_path / "out"}"'}
    given = {line.split("=")[0].strip() for line in extra.splitlines()}
    lines = [f"{k} = {v}" for k, v in base.items() if k not in given]
    path.write_text("\n".join([*lines, extra]) + "\n")
    return path


@pytest.mark.parametrize(("line", "needle"), BAD_TOML, ids=[b[0] for b in BAD_TOML])
def test_run_file_values_of_the_wrong_type(line, needle, lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = _run_file(tmp_path, line)
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(lama_dir), "--quiet"], capsys)
    _one_error(code, err, f"--config {path}: {needle}")
    assert not (tmp_path / "out").exists()


def test_a_named_pipe_as_the_run_file_is_named(lama_dir, tmp_path, capsys, pipe_writer):
    pipe = tmp_path / "run.toml"
    os.mkfifo(pipe)
    opened = pipe_writer(pipe)
    code, _, err = run_kbc(["run", "lama", "--config", str(pipe), "--data-dir", str(lama_dir), "--quiet"], capsys)
    read = set(opened)  # before the release at the end opens it
    _one_error(code, err, f"--config {pipe}: not a regular file (a named pipe, socket or device)")
    assert not read


def test_a_byte_order_mark_before_the_run_file_is_ignored(tmp_path):
    from bridge.cli.run import read_run_file

    plain = _run_file(tmp_path, "limit = 3")
    marked = tmp_path / "marked.toml"
    marked.write_text("\ufeff" + plain.read_text(encoding="utf-8"), encoding="utf-8")
    assert read_run_file(marked) == read_run_file(plain)


@pytest.mark.parametrize(("line", "needle"), [
    ("limit: five", "limit: expected an integer, got 'five'"),
    ("seed:", "seed: expected an integer, got nothing"),
    ("depth: yes", "depth: expected an integer, got true"),
    ("corpus: {trex: 1}", "corpus: expected a list of strings, got a table"),
    ("predictors: {f: {spec: freq, x: [1]}}", "predictors.f.x: expected a string, number or boolean"),
    ("predictors: {f: 3}", "predictors.f: expected a spec string or a table"),
    ("predictors: [freq, 3]", "predictors: expected a list of NAME=SPEC strings"),
])
def test_yaml_run_file_values_of_the_wrong_type(line, needle, lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "run.yaml"
    text = f"corpus: [trex]\npredictors: [freq]\nout: {tmp_path / 'out'}\n"
    key = line.split(":")[0]
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(f"{key}:")) + f"\n{line}\n"
    path.write_text(text)
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(lama_dir), "--quiet"], capsys)
    _one_error(code, err, needle)


def test_run_file_with_good_types_runs_as_the_flags_do(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = _run_file(tmp_path, 'relations = "P19 P36"\nlimit = 4\nseed = 3\ndepth = 10\nstore_timeout = 5\n'
                               f'store = "{tmp_path / "store"}"')
    code, out, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(lama_dir), "--quiet"], capsys)
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "out" / "instances.parquet")
    assert frame.groupby("relation")["uid"].nunique().to_dict() == {"P19": 4, "P36": 4}
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "4",
                            "--seed", "3", "--depth", "10", "--predictors", "freq", "--data-dir", str(lama_dir),
                            "--store", str(tmp_path / "store"), "--out", str(tmp_path / "flags"), "--quiet"], capsys)
    assert code == 0, err
    flags = pd.read_parquet(tmp_path / "flags" / "instances.parquet")
    assert sorted(flags["uid"]) == sorted(frame["uid"])


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"limit": "five"}, "--limit 'five': expected an integer"),
    ({"limit": 2.5}, "--limit 2.5: expected an integer"),
    ({"seed": "x"}, "--seed 'x': expected an integer"),
    ({"depth": True}, "--depth True: expected an integer"),
    ({"batch_size": 0}, "--batch-size 0: must be at least 1"),
    ({"store_timeout": "a"}, "--store-timeout 'a': expected a number"),
])
def test_run_config_checks_value_types(kwargs, needle, tmp_path):
    from bridge.run.config import RunConfig

    with pytest.raises(ConfigError, match="^" + needle.replace("(", r"\(")):
        RunConfig(["trex"], ["freq"], tmp_path / "out", **kwargs).check_values()


# -- 2. a report of correlations that name predictors of another run --------------------------------------------
def _fact_stats(run: Path) -> None:
    inst = pd.read_parquet(run / "instances.parquet")
    facts = inst.drop_duplicates(["corpus", "uid"]).reset_index(drop=True)
    n = len(facts)
    folder = run / "analysis"
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"corpus": facts["corpus"], "uid": facts["uid"], "relation": facts["relation"],
                  "sm": [i % 7 for i in range(n)], "om": [i * 3 for i in range(n)],
                  "cooc_paragraphs": [i % 9 for i in range(n)], "cooc_sentences": [i % 4 for i in range(n)],
                  "st": [1 + i % 3 for i in range(n)], "swp": [2 + i % 5 for i in range(n)],
                  "socs": [i / n for i in range(n)]}).astype(
        {"sm": "Int64", "om": "Int64", "cooc_paragraphs": "Int64", "cooc_sentences": "Int64", "st": "Int64",
         "swp": "Int64", "socs": "Float64"}).to_parquet(folder / "fact_stats.parquet", index=False)


@pytest.fixture(scope="module")
def compared(lama_dir, tmp_path_factory):
    """Run `main` (freq, gold) and run `p_dup` (freq, and a KB predictor the first run lacks), correlations of
    `main` computed with `--compare p_dup`."""
    from analyze_support import call_kbc

    root = tmp_path_factory.mktemp("compared")
    mp = pytest.MonkeyPatch()
    mp.setenv("KBC_CACHE", str(root / "cache"))
    common = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "8", "--data-dir",
              str(lama_dir), "--store", str(root / "store"), "--quiet"]
    try:
        for out, preds in (("main", ["freq", "gold"]), ("p_dup", ["freq", "majority=freq"])):
            code, text = call_kbc([*common, "--predictors", *preds, "--out", str(root / out)])
            assert code == 0, text
        _fact_stats(root / "main")
        code, text = call_kbc(["analyze", "correlation", str(root / "main"), "--compare", str(root / "p_dup"),
                               "--quiet"])
        assert code == 0, text
    finally:
        mp.undo()
    return root


def test_correlation_json_holds_the_compared_labels(compared):
    import json

    rows = json.loads((compared / "main" / "analysis" / "correlation.json").read_text())
    assert {"freq", "gold", "freq (p_dup)", "majority"} <= {r["predictor"] for r in rows}


@pytest.mark.parametrize("with_compare", [False, True])
def test_report_draws_predictors_joined_from_another_run(compared, with_compare, capsys, monkeypatch):
    from test_report import check_figures, parse

    monkeypatch.setenv("KBC_CACHE", str(compared / "cache"))
    out = compared / f"report-{with_compare}"
    argv = ["report", str(compared / "main"), "--out", str(out)]
    if with_compare:
        argv += ["--compare", str(compared / "p_dup")]
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "Traceback" not in err
    html = Path(stdout.strip())
    assert html.parent == out
    names = check_figures(html, parse(html))
    # every coefficient of these few facts is undefined: no figure of empty bars, the matrix and bins remain
    assert "cooccurrence_bins" in names and "correlation" not in names
    text = html.read_text(encoding="utf-8")
    assert "freq (p_dup)" in text  # its rows are in the correlation matrix


def test_figures_give_every_label_a_colour(tmp_path):
    from bridge.report import figures

    colour = figures.colours(["freq", "gold"])
    panels = {("trex", "pearson"): {"sm": {"freq": 0.1, "gold": None, "freq (p_dup)": -0.2, "x": 0.3}}}
    paths = figures.correlation_bars(panels, colour, tmp_path)
    assert all(p.is_file() for p in paths)
    full = figures.complete(colour, ["freq", "freq (p_dup)", "x"])
    assert full["freq"] == colour["freq"] and len(set(full.values())) == 4
    bins = {("trex", "cooc_paragraphs"): {"other": [("0", 3, 10.0), ("1", 2, None)]}}
    assert all(p.is_file() for p in figures.binned(bins, {}, tmp_path))
    many = figures.complete({}, [f"p{i}" for i in range(30)])
    assert len(many) == 30


# -- 3. --embeddings: a causal LM gives SOCS from its input embeddings; other folders are one line ----------------
def test_embeddings_from_a_causal_lm(small_run, tmp_path, capsys):  # noqa: F811
    import torch
    from lm_fixtures import tiny_model_dir
    from transformers import GPT2LMHeadModel

    from bridge.analysis.stats import InputEmbeddings

    gpt2 = tiny_model_dir("gpt2", tmp_path)
    emb = InputEmbeddings(gpt2)
    weights = GPT2LMHeadModel.from_pretrained(str(gpt2)).transformer.wte.weight.detach()
    assert torch.equal(torch.from_numpy(emb.matrix), weights.float())
    check_socs_column(small_run, gpt2, tmp_path)


@pytest.fixture(scope="module")
def freq_run(lama_dir, tmp_path_factory):
    from analyze_support import call_kbc

    root = tmp_path_factory.mktemp("freqrun")
    mp = pytest.MonkeyPatch()
    mp.setenv("KBC_CACHE", str(root / "cache"))
    try:
        code, text = call_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "8",
                               "--predictors", "freq", "gold", "--data-dir", str(lama_dir), "--store",
                               str(root / "store"), "--out", str(root / "run"), "--quiet"])
    finally:
        mp.undo()
    assert code == 0, text
    return root / "run"


def test_embeddings_folders_that_hold_no_model(freq_run, tmp_path, capsys):
    from lm_fixtures import tiny_model_dir

    bert = tiny_model_dir("bert-cased", tmp_path / "m")
    tok_only = tmp_path / "tok-only"
    tok_only.mkdir()
    for f in bert.iterdir():
        if f.name != "config.json" and not f.name.startswith("model"):
            shutil.copy(f, tok_only / f.name)
    no_weights = tmp_path / "no-weights"
    shutil.copytree(bert, no_weights)
    for f in no_weights.glob("model*"):
        f.unlink()
    unknown = tmp_path / "unknown"
    shutil.copytree(bert, unknown)
    (unknown / "config.json").write_text('{"model_type": "no-such-model"}')
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("not a model")
    missing = tmp_path / "missing"
    capsys.readouterr()  # what building the tiny model printed
    cases = [(tok_only, "tokenizer files but no model"), (no_weights, "no model weights"),
             (unknown, "config.json is not a model transformers knows"), (plain, "no model (no config.json)"),
             (missing, "not a folder")]
    for folder, needle in cases:
        code, _, err = run_kbc(["analyze", "stats", str(freq_run), "--embeddings", str(folder),
                                "--index", str(tmp_path / "no-index"), "--quiet"], capsys)
        line = _one_error(code, err, f"--embeddings {folder}", needle)
        assert "--tokenizer" not in line
    assert not (freq_run / "analysis" / "fact_stats.parquet").exists()


def test_a_damaged_index_names_one_rebuild_command(freq_run, tmp_path, capsys):
    index = tmp_path / "idx"
    index.mkdir()
    (index / "CURRENT").write_text("garbage")
    code, _, err = run_kbc(["analyze", "stats", str(freq_run), "--index", str(index), "--quiet"], capsys)
    line = _one_error(code, err, f"{index}: the text index is damaged")
    assert line.count("kbc index build") == 1 and f"kbc index build --out {index}" in line


# -- 4. kbc serve on a port in use ------------------------------------------------------------------------------
def test_serve_on_a_port_in_use_is_one_line_before_any_url(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = run_kbc(["serve", "--port", str(port), "--data-dir", str(lama_dir), "--relations", "P36",
                                  "--predictors", "freq"], capsys)
    _one_error(code, err, f"port {port} is in use", "--port")
    assert "open http" not in out


def test_serve_binds_before_loading_and_hands_the_socket_over(monkeypatch):
    from bridge.cli.serve import listen_socket

    sock = listen_socket("127.0.0.1", 0)
    sock.listen()
    try:
        port = sock.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} is in use"):
            listen_socket("127.0.0.1", port).close()
    finally:
        sock.close()
    with pytest.raises(ConfigError, match="--host 192.0.2.1 --port 0: cannot listen there"):
        listen_socket("192.0.2.1", 0)
