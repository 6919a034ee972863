"""Choice options whose refusal names the closest choice, as every other unknown name of kbc does."""

from __future__ import annotations

import click

from eval.corpora import close_hint


class NamedChoice(click.Choice):
    """`click.Choice` with a "did you mean" in its message: `'trexx' is not one of ... (did you mean 'trex'?)`."""

    def get_invalid_choice_message(self, value, ctx: click.Context | None) -> str:
        hint = close_hint(str(value), map(str, self.choices))
        message = super().get_invalid_choice_message(value, ctx)
        return f"{message.rstrip('.')}{hint}." if hint else message
