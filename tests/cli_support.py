"""Running `kbc` in-process as a user would, for CLI tests."""

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


class Bar:
    """A stand-in for the runner's progress bar (`bridge.run.runner.tqdm`) that notes each step it is moved."""

    moves: list = []

    def __init__(self, *args, **kwargs) -> None:
        Bar.moves = []

    def update(self, n: int = 1) -> None:
        if n:
            Bar.moves.append(n)

    def close(self) -> None:
        pass
