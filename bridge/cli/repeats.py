"""A single-value option given twice is refused: click keeps the last value and drops the first without a word
(`kbc report A --compare B --compare X` would report A against X only). Options that take several values
(`multiple=True`: `--set`, `--predictors`, `--run`), counted options (`-v -v`) and flags are left alone."""

from __future__ import annotations

import click


def single_value_options(command: click.Command, ctx: click.Context) -> list[click.Option]:
    """The options of `command` that hold one value, the last one given."""
    return [p for p in command.get_params(ctx)
            if isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag)]


def refuse_repeats(parent: click.Context, name: str, command: click.Command, args: list[str]) -> None:
    """Raise a usage error naming the option and its values where `args` give `command` (or a subcommand of it) a
    single-value option more than once. Words that do not parse are left for click to refuse."""
    ctx = command.context_class(command, info_name=name, parent=parent, resilient_parsing=True,
                                **command.context_settings)
    parser = command.make_parser(ctx)
    single = single_value_options(command, ctx)
    for option in single:  # each value kept in order, where click keeps the last
        parser.add_option(obj=option, opts=option.opts, dest=option.name, action="append", nargs=option.nargs)
    values, rest, _ = parser.parse_args(list(args))
    for option in single:
        given = values.get(option.name) or []
        if len(given) > 1:
            shown = ", ".join(_shown(v) for v in given[:-1]) + f" and {_shown(given[-1])}"
            raise click.UsageError(f"{max(option.opts, key=len)} takes one value, not {len(given)} ({shown}); "
                                   "give one", ctx=ctx)
    if isinstance(command, click.Group) and rest:
        sub = command.get_command(ctx, rest[0])
        if sub is not None:
            refuse_repeats(ctx, rest[0], sub, rest[1:])


def _shown(value) -> str:
    return repr(" ".join(map(str, value)) if isinstance(value, tuple | list) else str(value))
