"""A single-value option given twice is refused in every command, naming the option and each value; options that
take several values, counted options and flags may be repeated."""

import click
import pytest
from cli_support import run_kbc

from bridge.cli import cli, expand_multi
from bridge.cli.repeats import refuse_repeats


@pytest.mark.parametrize("argv,line", [
    (["report", "runs/A", "--compare", "runs/B", "--compare", "runs/X", "--out", "rep"],
     "error: --compare takes one value, not 2 ('runs/B' and 'runs/X'); give one (see `kbc report --help`)\n"),
    (["compare", "runs/A", "freq", "bert", "--b-run", "runs/B", "--b-run=runs/X"],
     "error: --b-run takes one value, not 2 ('runs/B' and 'runs/X'); give one (see `kbc compare --help`)\n"),
    (["leaderboard", "runs/A", "--metric", "mrr", "--metric", "p@1", "--metric", "p@10"],
     "error: --metric takes one value, not 3 ('mrr', 'p@1' and 'p@10'); give one (see `kbc leaderboard --help`)\n"),
    # a single-value option named with two values (`--corpus` takes several in `kbc run`, one in `kbc serve`)
    (["serve", "--corpus", "trex", "google_re"],
     "error: --corpus takes one value, not 2 ('trex' and 'google_re'); give one (see `kbc serve --help`)\n"),
    # subcommands of groups, an option added by a shared decorator, and a short spelling with a long one
    (["kb", "stats", "--store", "a", "--store-timeout", "5", "--store-timeout", "6"],
     "error: --store-timeout takes one value, not 2 ('5' and '6'); give one (see `kbc kb stats --help`)\n"),
    (["run", "lama", "--corpus", "trex", "--limit", "3", "--limit=4", "--out", "x"],
     "error: --limit takes one value, not 2 ('3' and '4'); give one (see `kbc run lama --help`)\n"),
])
def test_single_value_option_twice_is_refused(argv, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_kbc(argv, capsys)
    assert (code, out, err) == (2, "", line)
    assert list(tmp_path.iterdir()) == []  # refused before anything is read or written


def test_repeatable_options_and_flags_pass():
    """`--run`, `--set`, `--predictors`, `--relations` (multiple), `-v -v` (counted) and a flag given twice."""
    ctx = click.Context(cli, info_name="kbc")
    argv = expand_multi(["serve", "--run", "runs/A", "--run", "other/A", "--set", "bert.top_k=5", "--set",
                         "bert.device=cpu", "--predictors", "freq", "bert=/m", "--relations", "P19", "P36",
                         "--corpus", "trex"])
    name, command, rest = cli.resolve_command(ctx, argv)
    assert name == "serve" and rest[-2:] == ["--corpus", "trex"]
    refuse_repeats(ctx, "serve", command, rest)  # nothing to refuse
    compare = cli.get_command(ctx, "compare")
    refuse_repeats(ctx, "compare", compare, ["runs/A", "freq", "bert", "--json", "--json", "--corpus", "trex",
                                             "--corpus", "google_re"])
    group = click.Context(cli, info_name="kbc")
    assert cli.parse_args(group, ["-v", "-v", "leaderboard", "runs/A"]) == ["runs/A"]
    assert group.params["verbose"] == 2


def test_a_set_key_given_twice_with_two_values_is_refused(tmp_path, monkeypatch, capsys):
    """`--set freq.set=top:1 --set freq.set=top:3` kept top:3 silently; the same value twice is one value."""
    from bridge.run.options import parse_sets

    monkeypatch.chdir(tmp_path)
    code, out, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:1", "--set",
                              "freq.set=top:3", "--out", "x"], capsys)
    assert (code, out, err) == (2, "", "error: --set freq.set is given twice ('top:1' and 'top:3'); give one\n")
    assert list(tmp_path.iterdir()) == []
    assert parse_sets(["freq.set=top:1", "freq.set=top:1", "depth=5"]) == {"freq.set": "top:1", "depth": "5"}
