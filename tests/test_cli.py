"""The `kbc` CLI: the LAMA table, and one-line errors with exit status 2 for bad input."""

import json
import logging

import pytest
from cli_support import run_kbc

from bridge.cli import expand_multi


def test_multi_value_options():
    assert expand_multi(["run", "lama", "--corpus", "trex", "google_re", "--predictors", "freq", "--quiet"]) == [
        "run", "lama", "--corpus", "trex", "--corpus", "google_re", "--predictors", "freq", "--quiet"]


def test_run_lama_prints_table(tmp_path, lama_dir, capsys):
    code, out, err = run_kbc(["run", "lama", "--corpus", "google_re", "squad", "--predictors", "freq",
                          "--data-dir", str(lama_dir), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0
    assert "| google_re | freq | 372 | 5527 | 1.86 ± 0.32 | 4.63 ± 0.39 | 6.80 ± 0.91 | 4.43 ± 0.35 | [3.74, 5.12] |" \
        in out
    # SQuAD: its one relation (the cloze sentences), then Total
    # SQuAD has no relation whose objects Freq could count: not applicable, as LAMA Table 2's "-"
    assert "| squad | freq | - | 0 | - | - |" in out
    assert "google_re: 3 relations, read 5528, kept 5527, dropped 1" in err


def test_kb_lookups_drop_cloze_facts_as_gold_does(tmp_path, lama_dir, capsys):
    """A SQuAD cloze has no subject to look up: `kb` answers none of them, it does not miss all 305."""
    from kb.freq import NO_RELATION

    out_dir = tmp_path / "o"
    code, out, _ = run_kbc(["run", "lama", "--corpus", "squad", "--predictors", "freq", "kb", "gold", "--data-dir",
                            str(lama_dir), "--out", str(out_dir), "--store", str(tmp_path / "store"), "--quiet"],
                           capsys)
    assert code == 0
    dropped = {(d["predictor"], d["reason"]): d["n"] for d in json.loads((out_dir / "dropped.json").read_text())}
    why = "a SQuAD question has no subject to look up: its facts are cloze sentences about a passage"
    assert dropped == {("gold", why): 305, ("kb", why): 305, ("freq", NO_RELATION): 305}
    rows = json.loads((out_dir / "summary.json").read_text())
    assert {r["metric"] for r in rows} == {"units_answered"} and {r["value"] for r in rows} == {0}
    assert {r["predictor"] for r in rows} == {"freq", "kb", "gold"}
    assert out.startswith("nothing scored: no predictor answered any fact it was asked")


def _forget_unasked(out_dir, name: str = "kb") -> None:
    """Make `out_dir`'s predictor look recorded before it dropped the facts it does not apply to."""
    config = json.loads((out_dir / "config.json").read_text())
    assert config["predictor_specs"][name].pop("unasked") == "dropped"
    (out_dir / "config.json").write_text(json.dumps(config))


def _lookups_resume(out_dir, name: str, args: list[str], capsys) -> None:
    """Predictor `name` over Google-RE facts it answers, recorded before it dropped the facts it does not apply to:
    the directory resumes to the same summary."""
    lookups = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_death", "--limit", "5",
               "--predictors", name, "--out", str(out_dir), *args]
    assert run_kbc(lookups, capsys)[0] == 0
    summary = (out_dir / "summary.json").read_text()
    _forget_unasked(out_dir, name)
    assert run_kbc(lookups, capsys)[0] == 0
    assert (out_dir / "summary.json").read_text() == summary


def test_kb_records_scoring_cloze_facts_as_misses_are_not_resumed(tmp_path, lama_dir, capsys):
    store = ["--store", str(tmp_path / "store"), "--data-dir", str(lama_dir), "--quiet"]
    squad = ["run", "lama", "--corpus", "squad", "--predictors", "kb", "--out", str(tmp_path / "s"), *store]
    assert run_kbc(squad, capsys)[0] == 0
    _forget_unasked(tmp_path / "s")
    code, _, err = run_kbc(squad, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {tmp_path / 's'}: predictor 'kb' has squad answers there from an earlier kbc version, which scored "
        "each fact it cannot look up (a cloze sentence, a negated probe) as a miss; use another --out to leave them "
        "out as not applicable")
    _lookups_resume(tmp_path / "g", "kb", store, capsys)  # a directory of lookups only: its records stand


def test_freq_drops_squad_and_keeps_lookup_corpora_as_they_were(tmp_path, lama_dir, capsys, monkeypatch):
    from kb.freq import NO_RELATION, FreqPredictor

    argv = ["run", "lama", "--corpus", "google_re", "trex", "--relations", "place_of_death", "P19", "P1376",
            "--predictors", "freq", "--data-dir", str(lama_dir), "--quiet"]
    assert run_kbc([*argv, "--out", str(tmp_path / "new")], capsys)[0] == 0
    with monkeypatch.context() as m:  # Freq as it was, answering every fact
        m.delattr(FreqPredictor, "filter_facts")
        assert run_kbc([*argv, "--out", str(tmp_path / "old")], capsys)[0] == 0
    old = sorted((tmp_path / "old" / "predictions").rglob("*.jsonl"))
    assert old and [f.read_bytes() for f in old] == [
        (tmp_path / "new" / f.relative_to(tmp_path / "old")).read_bytes() for f in old]
    squad = ["run", "lama", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(lama_dir), "--quiet",
             "--out", str(tmp_path / "s")]
    assert run_kbc(squad, capsys)[0] == 0
    dropped = json.loads((tmp_path / "s" / "dropped.json").read_text())
    assert {(d["predictor"], d["reason"]): d["n"] for d in dropped} == {("freq", NO_RELATION): 305}


def test_freq_records_of_squad_are_not_resumed(tmp_path, lama_dir, capsys, monkeypatch):
    from kb.freq import FreqPredictor

    squad = ["run", "lama", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(lama_dir), "--quiet",
             "--out", str(tmp_path / "s")]
    with monkeypatch.context() as m:  # Freq as it was, ranking SQuAD's answers under its placeholder relation
        m.delattr(FreqPredictor, "filter_facts")
        assert run_kbc(squad, capsys)[0] == 0
    _forget_unasked(tmp_path / "s", "freq")
    code, _, err = run_kbc(squad, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {tmp_path / 's'}: predictor 'freq' has squad answers there from an earlier kbc version, which ranked "
        "each SQuAD question's answers by frequency under one placeholder relation; use another --out to leave them "
        "out as not applicable, as LAMA's Freq")
    # a directory of relations only: its records stand
    _lookups_resume(tmp_path / "g", "freq", ["--data-dir", str(lama_dir), "--quiet"], capsys)


def test_progress_bars_unless_quiet(tmp_path, lama_dir, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_death", "--predictors", "freq",
            "--limit", "5", "--data-dir", str(lama_dir), "--store", str(tmp_path / "store")]
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "a")], capsys)
    assert code == 0 and "5/5" in err and ("google_re: 1 relation, read 766, kept 765, dropped 1; asking a sample of 5 "
                                            "(--limit 5, seed 0)\n") in err
    code, _, err = run_kbc(["-q", *argv, "--out", str(tmp_path / "b")], capsys)
    assert code == 0 and err == ""  # warnings and errors only: no info lines, no bars


@pytest.mark.parametrize(("flags", "level"), [([], logging.INFO), (["-q"], logging.WARNING), (["-v"], logging.DEBUG),
                                              (["-v", "-v"], logging.DEBUG)])
def test_verbose_adds_debug_messages_and_quiet_drops_info(capsys, flags, level):
    logger = logging.getLogger("kbc")
    before = logger.level
    try:
        code, _, _ = run_kbc([*flags, "ls"], capsys)
        assert code == 0 and logger.level == level
    finally:
        logger.setLevel(before)


@pytest.mark.parametrize("content,message", [
    ('{"relation": "P19", "template": "[X] was born in [Y] ."}\n{bad\n', "relations.jsonl:2: malformed JSON"),
    ('{"relation": "P19", "template": "[X] was born ."}\n', "lacks [Y]"),
    ("", "relations.jsonl: file is empty"),
])
def test_bad_relations_file(tmp_path, capsys, content, message):
    data = tmp_path / "lama"
    data.mkdir()
    (data / "relations.jsonl").write_text(content)
    (data / "TREx").mkdir()
    code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data),
                          "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert message in err and err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_relation_and_predictor(tmp_path, lama_dir, capsys):
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--relations", "P9999",
                        "--data-dir", str(lama_dir), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--relations P9999: no chosen corpus (trex) has this relation" in err
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "frq", "--data-dir", str(lama_dir)],
                       capsys)
    assert code == 2 and "did you mean 'freq'" in err


def test_missing_data_dir_says_how(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_kbc(["data", "stats"], capsys)
    assert code == 2 and "kbc data download" in err and "KBC_DATA" in err


def test_kb_types_json(tmp_path, lama_dir, capsys):
    store = ["--corpus", "google_re", "--data-dir", str(lama_dir), "--store", str(tmp_path / "s")]
    assert run_kbc(["kb", "load", *store], capsys)[0] == 0
    code, out, _ = run_kbc(["kb", "types", *store, "--json"], capsys)
    rows = {r["relation"]: r for r in json.loads(out)}
    assert code == 0 and rows["place_of_birth"]["computed"] == "N-1" and rows["place_of_birth"]["agree"]
    code, out, _ = run_kbc(["kb", "types", *store], capsys)
    table = out.splitlines()[:4]  # the header and Google-RE's three relations, columns under their heads
    assert code == 0 and len({line.index("N-1") for line in table[1:]} | {table[0].index("declared")}) == 1


def test_relations_help_says_every_chosen_corpus_must_hold_one_of_them(tmp_path, lama_dir, capsys):
    code, out, _ = run_kbc(["run", "negated", "--help"], capsys)
    assert code == 0
    assert ("--relations TEXT Only these relation ids: each must be a relation of some chosen corpus, and every "
            "chosen corpus must hold at least one of them.") in " ".join(out.split())
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "google_re", "--predictors", "freq", "--relations",
                            "P19", "--data-dir", str(lama_dir), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert (code, err.splitlines()[-1]) == (2, "error: --relations names no relation of corpus google_re; drop "
                                               "--corpus google_re or add one of its relations (e.g. "
                                               "place_of_birth)")


def test_batch_size_help_gives_what_was_measured_on_a_cpu(capsys):
    """docs/performance.md measured 32, 128 and 256 on a CPU: 128 was faster than 32 with both models tried, so the
    help must not call 32 the CPU's batch size without saying so."""
    code, out, _ = run_kbc(["run", "lama", "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "32 suits a CPU" not in text
    assert ("Inputs per forward pass of local LM predictors. On a CPU 32 to 128 (128 scored 5-23% faster than 32 with "
            "2- and 4-layer BERTs, 256 no faster than 128); on a GPU 512, and 2048 for a masked LM in bfloat16. "
            "[default: 32; x>=1]") in text


def test_seed_help_names_the_prompt_draws_it_also_seeds(capsys):
    """--seed seeds the --prompt-draws draws (LAMA's p@1_random_prompt_*, coherency's) and KMIR's generated questions,
    not only the --limit sample: the help says so."""
    for experiment in ("lama", "coherency", "kmir"):
        code, out, _ = run_kbc(["run", experiment, "--help"], capsys)
        assert code == 0
        wanted = "--seed INTEGER Seed of the --limit sample, of the --prompt-draws draws and of KMIR's questions."
        assert "".join(wanted.split()) in "".join(out.split())  # help wraps inside --prompt-draws


def test_every_group_lists_its_commands_whole():
    """A group's command list shows each command's short help in full at 80 columns, never cut to `...`."""
    import click

    from bridge.cli import cli

    def contexts(command, parent, name):
        ctx = command.make_context(name, [], parent=parent, resilient_parsing=True, terminal_width=80,
                                   max_content_width=80)
        yield ctx
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                yield from contexts(command.get_command(ctx, sub), ctx, sub)

    groups = {ctx.command_path: ctx.command.get_help(ctx) for ctx in contexts(cli, None, "kbc")
              if isinstance(ctx.command, click.Group)}
    assert sorted(groups) == ["kbc", "kbc analyze", "kbc cache", "kbc data", "kbc entities", "kbc index", "kbc kb",
                              "kbc run"]
    cut = [(path, line) for path, text in groups.items() for line in text.split("Commands:")[1].splitlines()
           if line.rstrip().endswith("...")]
    assert cut == []
    assert "  download  Fetch corpora by NAME (default: lama; `all`).\n" in groups["kbc data"]


HELP_OF_EVERY_COMMAND = """
import contextlib, io, sys
import click
from bridge.cli import cli, main
from kbcompare.runs import command_context

def paths(command, ctx, path):
    yield path
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            yield from paths(command.get_command(ctx, name), ctx, [*path, name])

def helped(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(argv)
        except SystemExit as exc:
            return exc.code, out.getvalue()
    return 0, out.getvalue()

command_context("lama", {})  # the Python API makes a context of `kbc run lama` on its own
for path in paths(cli, click.Context(cli, info_name="kbc"), []):
    code, text = helped([*path, "-h"])
    if code != 0 or text != helped([*path, "--help"])[1]:
        print(" ".join(["kbc", *path]), code, text.strip().splitlines()[-1])
"""


def test_every_command_takes_h_as_help():
    """`kbc --help` lists `-h, --help` and the command pages of the site do too, so `-h` works on every command, also
    in a process where the Python API or the command's own first parse made its context (a fresh process each)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", HELP_OF_EVERY_COMMAND], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_a_run_where_nothing_was_answered_says_so(tmp_path, lama_dir, capsys):
    out_dir = tmp_path / "o"
    code, out, _ = run_kbc(["run", "lama", "--corpus", "squad", "--predictors", "gold", "--data-dir", str(lama_dir),
                            "--out", str(out_dir), "--store", str(tmp_path / "store"), "--quiet"], capsys)
    assert code == 0
    assert out.splitlines()[0] == ("nothing scored: no predictor answered any fact it was asked; why each was dropped "
                                   f"is in {out_dir / 'dropped.json'}")


def test_data_dir_help_says_the_data_folder_holding_lama_is_accepted():
    """BEAR, FewRel, LM-KBC and negated examples pass the folder holding lama/ and their own folders: every command's
    --data-dir help says it takes that folder, not a LAMA copy only."""
    from bridge.cli import cli

    helps = {" ".join(path): next(p.help for p in command.params if p.name == "data_dir")
             for path, command in _commands(cli) if any(p.name == "data_dir" for p in command.params)}
    assert {"kbc run bear", "kbc run fewrel", "kbc run lmkbc", "kbc run negated", "kbc data stats"} <= set(helps)
    for path, text in helps.items():
        assert text.startswith("A LAMA copy, the data folder holding it (with bear/, fewrel/"), path


def _commands(command, path=("kbc",)):
    """Every leaf command of the `kbc` tree with its path."""
    import click

    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            yield from _commands(command.get_command(ctx, name), (*path, name))
    else:
        yield path, command


@pytest.mark.parametrize(("flag", "metavar"), [("--store", "PATH|URL"), ("--store-update", "URL")])
def test_a_flag_shows_one_metavar_in_every_command(flag, metavar):
    import click

    from bridge.cli import cli

    shown = {" ".join(path[1:]): param.make_metavar(click.Context(command, info_name=path[-1]))
             for path, command in _commands(cli) for param in command.params if flag in getattr(param, "opts", ())}
    assert shown and {k: v for k, v in shown.items() if v != metavar} == {}


def test_the_predictors_of_kbc_run_and_kbc_serve_read_name_equals_spec():
    import click

    from bridge.cli import cli

    shown = {" ".join(path[1:]): param.make_metavar(click.Context(command, info_name=path[-1]))
             for path, command in _commands(cli) if path[1] in ("run", "serve")
             for param in command.params if "--predictors" in getattr(param, "opts", ())}
    assert len(shown) == 8 and set(shown.values()) == {"NAME=SPEC"}, shown


@pytest.mark.parametrize(("experiment", "default"), [("lama", None), ("coherency", None), ("kmir", None),
                                                      ("negated", None), ("bear", "bear"), ("lmkbc", "lmkbc2024"),
                                                      ("fewrel", "fewrel")])
def test_run_help_says_whether_corpus_and_predictors_are_required(capsys, experiment, default):
    code, out, _ = run_kbc(["run", experiment, "--help"], capsys)
    text = " ".join(out.partition("Options:")[2].split())
    corpus = text[text.index("--corpus"):text.index("--predictors")]
    assert code == 0 and (f"default: {default}." if default else "required, here or in --config.") in corpus
    assert "the column; required, here or in --config." in text


def test_a_closed_stdout_pipe_ends_quietly_with_the_status_of_a_broken_pipe():
    """`kbc ls | head -1` ends as `yes | head -1` does: no traceback, no error line, status 141 (SIGPIPE); a reader
    that closed the pipe before anything was written stands for `head` gone after its first line."""
    import os
    import subprocess
    import sys

    for argv in (["ls"], ["--help"]):
        read, write = os.pipe()
        os.close(read)
        try:
            done = subprocess.run([sys.executable, "-m", "bridge.cli", *argv], stdout=write, stderr=subprocess.PIPE,
                                  text=True, timeout=300)
        finally:
            os.close(write)
        assert (done.returncode, done.stderr) == (141, ""), argv
