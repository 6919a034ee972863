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
