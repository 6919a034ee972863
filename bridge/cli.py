"""The `kbc` command line. Subcommand groups load lazily from `SUBCOMMANDS`.

User errors (`KbcError`) print one line and exit with status 2; Ctrl-C keeps what was written.
"""

from __future__ import annotations

import importlib
import sys

import click

from eval.errors import KbcError

# name -> ("module:attribute", help); each is a click command or group
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("bridge.cli_run:run", "Run experiments (LAMA probe) over KB and LM predictors."),
    "data": ("bridge.cli_data:data", "Get, locate and describe the evaluation data."),
    "kb": ("bridge.cli_kb:kb", "The graph store: load facts, relation statistics and types."),
    "ls": ("bridge.cli_run:ls", "List the registered predictors."),
    "index": ("bridge.cli_index:index", "Wikipedia text index (tantivy or Elasticsearch): build, stats, search."),
    "cooccur": ("bridge.cli_index:cooccur", "Paragraphs mentioning A, B and both (PMI) in a text index."),
    "entities": ("bridge.cli_entities:entities", "wikipedia2vec entities: train, E-BERT map, link-stats, search."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        module, attr = SUBCOMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(SUBCOMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kbcompare")
def cli() -> None:
    """kbcompare: knowledge bases and language models side by side on the same factual queries."""


# Options that take several space-separated values: `--corpus trex google_re`.
MULTI_VALUE = {"--corpus", "--predictors", "--relations"}


def expand_multi(argv: list[str]) -> list[str]:
    """Rewrite `--opt a b` as `--opt a --opt b` (click options take one value per occurrence)."""
    out: list[str] = []
    current = None
    for arg in argv:
        if arg in MULTI_VALUE:
            current = arg
            continue
        if current and not arg.startswith("-"):
            out += [current, arg]
            continue
        if current and arg == current:
            continue
        current = None
        out.append(arg)
    if current:
        out.append(current)  # dangling option: let click report the missing value
    return out


def main(argv: list[str] | None = None) -> None:
    argv = expand_multi(list(sys.argv[1:] if argv is None else argv))
    try:
        cli.main(args=argv, prog_name="kbc", standalone_mode=False)
    except KbcError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("interrupted: results written so far are kept; rerun the same command to resume", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("interrupted: results written so far are kept; rerun the same command to resume", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
