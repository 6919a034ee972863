"""MkDocs hook: the `commands.md` page, written from the `kbc` click tree at build time, so the
command reference always says what the installed CLI accepts."""

from __future__ import annotations

import click
from mkdocs.structure.files import File, Files

WIDTH = 100  # fixed, so the page does not depend on the terminal that builds it


def _walk(command: click.Command, parent: click.Context | None, name: str):
    ctx = command.make_context(name, [], parent=parent, resilient_parsing=True,
                               terminal_width=WIDTH, max_content_width=WIDTH)
    yield ctx
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            yield from _walk(command.get_command(ctx, sub), ctx, sub)


def commands_page() -> str:
    """Every command's `--help`, one section each, in the order `kbc --help` lists them."""
    from bridge.cli import cli

    parts = [
        "# Commands",
        "",
        "Every `kbc` command with the help it prints (`kbc COMMAND --help`), generated from the CLI when "
        "these pages are built. Conventions and errors: [Command line](cli.md).",
        "",
    ]
    for ctx in _walk(cli, None, "kbc"):
        parts += [f"## {ctx.command_path}", "", "```text", ctx.command.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(parts)


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "commands.md", content=commands_page()))
    return files
