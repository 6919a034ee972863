"""The `kbc` command line. Subcommand groups load lazily from `SUBCOMMANDS`.

User errors (`KbcError`), usage errors and operating-system failures (a permission denied, a
full disk) print one `error:` line and exit with status 2; Ctrl-C keeps what was written, and so does
SIGTERM (`kill`, `timeout`, a job scheduler), which stops a command the same way; output cut short by its reader
(`| head`) ends quietly with status 141, as a broken pipe ends Unix tools.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from bridge.run.reading import gathered_notes
from eval.errors import KbcError

# name -> ("module:attribute", help); each is a click command or group
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("bridge.cli.run:run", "Run experiments over KB and LM predictors (LAMA, BEAR, LM-KBC, negated, "
                                  "coherency, KMIR, FewRel)."),
    "cache": ("bridge.cli.cache:cache", "kbc's cache: what it holds (info), what can never be used again (prune), "
                                        "whole kinds (clear)."),
    "data": ("bridge.cli.data:data", "Get, locate and describe the evaluation data."),
    "kb": ("bridge.cli.kb:kb", "The graph store: load facts, relation statistics and types."),
    "ls": ("bridge.cli.run:ls", "List the registered predictors."),
    "index": ("bridge.cli.index:index", "Wikipedia text index (tantivy or Elasticsearch): build, stats, search."),
    "cooccur": ("bridge.cli.index:cooccur", "Paragraphs mentioning A, B and both (PMI) in a text index."),
    "entities": ("bridge.cli.entities:entities", "wikipedia2vec entities: train, E-BERT map, link-stats, search."),
    "compare": ("bridge.cli.compare:compare", "Two predictors of a run fact by fact: counts, McNemar, bootstrap CI."),
    "leaderboard": ("bridge.cli.leaderboard:leaderboard",
                    "Every predictor of several runs ranked on one metric, with intervals (md, csv, json)."),
    "show": ("bridge.cli.compare:show", "One fact of a run across every predictor: answers and gold ranks."),
    "analyze": ("bridge.cli.analyze:analyze", "Per-fact statistics, correlations and evidence-rank variation."),
    "report": ("bridge.cli.report:report", "One HTML page (and Markdown) with a run's tables and figures."),
    "serve": ("bridge.cli.serve:serve", "The side-by-side explorer: a web page and JSON API over KBs, LMs and runs."),
}


# Every command takes `-h` as well as `--help`: a context made without the group's as parent (`out_folder`,
# `kbcompare.run`) must name them too, since click keeps the first help option it makes for a command.
HELP_OPTIONS = ["-h", "--help"]


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        module, attr = SUBCOMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand, once no single-value option of it is given twice (`refuse_repeats`); a name that is
        none, with the nearest one (click matches against loaded commands, and these load only when named)."""
        word = args[0] if args else ""
        if word and not word.startswith("-") and word not in SUBCOMMANDS and not ctx.resilient_parsing:
            import difflib

            close = difflib.get_close_matches(word, sorted(SUBCOMMANDS), n=1)
            ctx.fail(f"No such command {word!r}." + (f" Did you mean {close[0]!r}?" if close else ""))
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and name is not None and not ctx.resilient_parsing:
            from bridge.cli.repeats import refuse_repeats

            refuse_repeats(ctx, name, command, rest)
        return name, command, rest

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        with _stdout_pipe_guard():  # `kbc --help | head -1`
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context):
        with _stdout_pipe_guard():
            return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(SUBCOMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class StdoutClosed(Exception):
    """The reader of stdout went away (`kbc data stats | head -1`): not an OSError, which click would end as
    status 1 on its own."""


@contextmanager
def _stdout_pipe_guard() -> Iterator[None]:
    """A broken pipe on stdout raised as `StdoutClosed`; one elsewhere (a socket) stays the OSError it is."""
    try:
        yield
    except BrokenPipeError as exc:
        if stdout_closed():
            raise StdoutClosed from exc
        raise


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on it)."""
    import select

    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, 0)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor (a test's capture), or no poll
        return False


# The status a shell reports for a process that SIGPIPE ended, as `yes | head -1` reports for `yes`
BROKEN_PIPE_STATUS = 128 + signal.SIGPIPE


def end_on_closed_stdout() -> None:
    """End quietly: later writes (the flush at exit included) go to /dev/null, as the Python docs advise."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(BROKEN_PIPE_STATUS)


class StderrHandler(logging.Handler):
    """Messages to whatever `sys.stderr` is when they are emitted, each on a line of its own: in a terminal a
    progress bar shown there is cleared first and drawn again below (`tqdm.write`); in a file or pipe, where the
    bar's redraws are `\r`s on one line, the bar's line is ended first, so a filter that drops bar lines (`grep -v
    query/s`) keeps the message."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            stream = sys.stderr
            if stream.isatty():
                tqdm.write(record.getMessage(), file=stream)
            else:
                drawn = any(not getattr(bar, "disable", True) for bar in list(getattr(tqdm, "_instances", ())))
                stream.write(("\n" if drawn else "") + record.getMessage() + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


@click.group(cls=LazyGroup, context_settings={"help_option_names": HELP_OPTIONS})
@click.version_option(package_name="kbcompare")
@click.option("-v", "--verbose", count=True, help="Debug messages too (e.g. why a cache was not used).")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors.")
def cli(verbose: int, quiet: bool) -> None:
    """kbcompare: knowledge bases and language models side by side on the same factual queries."""
    level = logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO  # INFO is the default
    logger = logging.getLogger("kbc")
    logger.setLevel(level)
    if not logger.handlers:
        logger.addHandler(StderrHandler())
        logger.propagate = False


# Options that take several space-separated values: `--corpus trex google_re`.
MULTI_VALUE = {"--corpus", "--predictors", "--relations", "--filters"}


def expand_multi(argv: list[str]) -> list[str]:
    """Rewrite `--opt a b` and `--opt=a b` as `--opt a --opt b` (click options take one value each)."""
    out: list[str] = []
    current, took = None, False
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if arg in MULTI_VALUE or (eq and flag in MULTI_VALUE):
            if current and not took:
                out.append(current)  # a flag with no value: let click report it
            current, took = flag, bool(eq)
            if eq:
                out += [flag, value]
            continue
        if current and not arg.startswith("-"):
            out += [current, arg]
            took = True
            continue
        if current and not took:
            out.append(current)
        current = None
        out.append(arg)
    if current and not took:
        out.append(current)
    return out


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def usage_error_line(exc: click.UsageError, argv: list[str] = ()) -> str:
    """Click's message with a pointer to the command's help, as one line: the command click names, else the one
    `argv` names (an option missing its value is refused before click knows the command)."""
    path = exc.ctx.command_path if exc.ctx is not None else command_path(argv)
    folder = _dash_folder(exc, argv)
    if folder is not None:  # a folder named `-o2` (a run's, a report's) read as options
        kind = "folder" if os.path.isdir(folder) else "file"
        return (f"error: {folder} was read as options (`{path}` has no option {exc.option_name}); to name the {kind} "
                f"{folder}, write {shlex.quote('./' + folder)} (or put -- before it)")
    return f"error: {_one_line(exc.format_message())} (see `{path} --help`)"


def _dash_folder(exc: click.UsageError, argv: list[str]) -> str | None:
    """The word of `argv` that click read as the unknown option of `exc` and that names a file or folder here."""
    name = getattr(exc, "option_name", None) if isinstance(exc, click.NoSuchOption) else None
    takes = exc.ctx is not None and any(isinstance(p, click.Argument) for p in exc.ctx.command.params)
    if not name or not takes:  # a command that names no folder by position: the option is mistyped
        return None
    for word in argv:
        if word == "--":
            break
        short = not name.startswith("--") and word.startswith(name) and not word.startswith("--")
        if (word == name or short) and os.path.lexists(word):
            return word
    return None


def command_path(argv: list[str]) -> str:
    """`kbc show` for `show RUN --uid`: the deepest command the words of `argv` name."""
    return " ".join(_command_of(argv)[1])


def _command_of(argv: list[str]) -> tuple[click.Command, list[str]]:
    command: click.Command = cli
    path = ["kbc"]
    ctx = click.Context(cli, info_name="kbc")
    for word in argv:
        if word.startswith("-"):
            continue
        sub = command.get_command(ctx, word) if isinstance(command, click.Group) else None
        if sub is None:
            break
        command, path = sub, [*path, word]
    return command, path


RESUMABLE = "results written so far are kept; rerun the same command to resume"
INTERRUPTED = f"interrupted: {RESUMABLE}"


TERMINATED: list[int] = []  # the SIGTERM taken, if any: Ray's waits re-raise a signal's exception as a new one


def _terminated(signum: int, frame) -> None:
    """SIGTERM raised as Ctrl-C is: every block that keeps its work or marks a run as interrupted on Ctrl-C does
    so on it too."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    TERMINATED.append(signum)
    raise KeyboardInterrupt


def _default_sigterm_in_child() -> None:
    """A process forked here (a multiprocessing pool's worker) ends on SIGTERM as any process does, which is how its
    pool is terminated: with the command's handler it would print a KeyboardInterrupt traceback, and with one that
    holds the signal until a block ends (`lm.served.interrupts_held`) it would never end and the pool would wait
    for it forever."""
    if callable(signal.getsignal(signal.SIGTERM)):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


os.register_at_fork(after_in_child=_default_sigterm_in_child)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM stops it as Ctrl-C does. Python takes signals in the main thread only:
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    TERMINATED.clear()
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def interrupted_line(argv: list[str], out_existed: bool = True) -> str:
    """What an interrupted command leaves: a command whose work is not kept in part says so (`interrupted`); one
    stopped before it made its output folder (`out_existed` False and the folder still absent) kept nothing."""
    line = getattr(_command_of(argv)[0], "interrupted", INTERRUPTED)
    out = out_folder(argv)
    if line == INTERRUPTED and out is not None and not out_existed and not out.exists():
        return f"interrupted before anything was written ({out} was not made); rerun the same command to start"
    return line


def out_folder(argv: list[str]) -> Path | None:
    """The `--out` folder a command of `argv` writes (its default where not given); None where it has none or the
    words do not parse."""
    command, path = _command_of(argv)
    words = list(argv)
    for name in path[1:]:  # the command's own words follow its name; kbc's options (-q, -v) come before
        words = words[words.index(name) + 1:]
    try:
        ctx = command.make_context(path[-1], words, resilient_parsing=True, help_option_names=HELP_OPTIONS)
    except (click.ClickException, click.exceptions.Exit, ValueError, TypeError):
        return None
    out = ctx.params.get("out")
    return Path(out) if isinstance(out, str | Path) and out else None


def os_error_line(exc: OSError) -> str:
    """An operating-system failure (permissions, full disk, read-only file system) that reached the top."""
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    reason = exc.strerror or _one_line(str(exc)) or type(exc).__name__
    return f"error: {reason}" + (f": {' -> '.join(paths)}" if paths else "")


# Loading a corpus and a run's records makes millions of objects that live until the command ends; with
# Python's default thresholds the cycle collector walks them over and over (seconds per command). Cycles
# are still collected, only less often.
GC_THRESHOLD = (100_000, 50, 20)


def main(argv: list[str] | None = None) -> None:
    """Run kbc: user errors, usage errors and operating-system failures end as one `error:` line, status 2."""
    gc.set_threshold(*GC_THRESHOLD)
    command = argv is None  # this process is the `kbc` command (not a caller passing arguments)
    if command:
        from bridge.cli.streams import escape_unencodable

        escape_unencodable()
    argv = expand_multi(list(sys.argv[1:] if argv is None else argv))
    out = out_folder(argv)
    out_existed = out is None or out.exists()
    try:
        with sigterm_as_interrupt(), gathered_notes() as noted:
            cli.main(args=argv, prog_name="kbc", standalone_mode=False)
        for note in noted.values():  # each run read under another reading, once; none where the command failed
            click.echo(f"note: {note}", err=True)
    except KbcError as exc:
        line = _one_line(str(exc))
        if getattr(exc, "resumable", False) and out is not None and out.exists():  # a run stopped by a failure
            line += f"; {RESUMABLE}"  # that a later try may not meet (a server down, a timeout)
        click.echo(f"error: {line}", err=True)
        sys.exit(2)
    except click.UsageError as exc:
        click.echo(usage_error_line(exc, argv), err=True)
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo(interrupted_line(argv, out_existed), err=True)
        sys.exit(128 + signal.SIGTERM if TERMINATED else 130)  # the status a shell reports for either signal
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except StdoutClosed:
        end_on_closed_stdout()
    except OSError as exc:
        click.echo(os_error_line(exc), err=True)
        sys.exit(2)
    except ImportError as exc:  # a package of an extra not installed; any other is a defect: shown
        from bridge.cli.environment import missing_extra_line

        line = missing_extra_line(exc)
        if line is None:
            raise
        click.echo(line, err=True)
        sys.exit(2)
    except (MemoryError, RuntimeError) as exc:  # memory ran out, a symlink loop; any other is a defect: shown
        from bridge.cli.environment import environment_line

        line = environment_line(exc)
        if line is None:
            raise
        if line.startswith("error: out of memory") and out is not None and out.exists():
            line += f"; {RESUMABLE}"
        click.echo(line, err=True)
        sys.exit(2)
    finally:
        if command:  # done, stopped (Ctrl-C) or refused: the process ends now
            leave_objects_to_exit()


def leave_objects_to_exit() -> None:
    """Let the process end without its cycle collector walking every object a command made (a run's corpus and
    records: a million objects, seconds of shutdown). Objects are still freed as their last reference goes; what
    only a reference cycle holds is left to the operating system, so every file a command writes is closed by the
    block that wrote it, and exit handlers (`atexit`, logging) run as before."""
    gc.disable()
    gc.freeze()
