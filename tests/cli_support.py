"""Running `kbc` in-process as a user would, for CLI tests."""

import contextlib
import io

from bridge.cli import main


def run_kbc(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `kbc ARGV`."""
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def run_kbc_captured(argv: list[str], one_stream: bool = False) -> tuple[int, str, str]:
    """`run_kbc` without `capsys`, for module-scoped fixtures (capsys serves one test only); `one_stream`: stderr
    written into stdout's text, in the order written (the third value is then empty)."""
    out = io.StringIO()
    err = out if one_stream else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), "" if one_stream else err.getvalue()


class Bar:
    """A stand-in for the runner's progress bar (`bridge.run.runner.tqdm`) that notes each step it is moved, and
    the note of answers read from the cache (which leave its total instead); `shown`: the words of a bar the cache
    answered whole, which replace its count."""

    moves: list = []
    shown: str | None = None

    def __init__(self, *args, total: int = 0, **kwargs) -> None:
        Bar.moves, Bar.shown = [], None
        self.total = total

    @property
    def bar_format(self) -> str | None:
        return Bar.shown

    @bar_format.setter
    def bar_format(self, value: str) -> None:
        Bar.shown = value.removeprefix("{desc}: ")

    def update(self, n: int = 1) -> None:
        if n:
            Bar.moves.append(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        Bar.moves.append(s)

    def close(self) -> None:
        pass


def board_csv(text: str) -> list[dict]:
    """The rows of a `kbc leaderboard --format csv` board, after its `# warning:`/`# note:` comment lines."""
    import csv

    return list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("# ")))


def board_comments(text: str) -> list[str]:
    """The `# ...` comment lines that lead a CSV board (its warnings and notes), without the `# `."""
    return [line[2:] for line in text.splitlines() if line.startswith("# ")]


def one_sample_note(limit: int, seed: int = 0, runs: int = 1) -> str:
    """The leaderboard's note where every run asked the one `--limit` sample."""
    who = "the run" if runs == 1 else f"all {runs} runs"
    return (f"a sample, not every fact: {who} asked `--limit {limit} --seed {seed}` (at most --limit facts per "
            "relation, drawn with --seed)")


def run_labelled(tmp_path, relations: list[dict], rows: list[tuple[str, str]], predictors: list[str], capsys):
    """`kbc run lama` over a LAMA folder of `relations` (relations.jsonl rows, labels in any script), each holding
    `rows` (subject, object); the run folder `tmp_path/run`."""
    import json

    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in relations),
                                          encoding="utf-8")
    for r in relations:
        (data / "TREx" / f"{r['relation']}.jsonl").write_text(
            "".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n" for s, o in rows))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", *predictors, "--data-dir", str(data),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    return tmp_path / "run"
