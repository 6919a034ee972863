"""Errors a user can act on. The CLI prints them as one line and exits with status 2."""


class KbcError(Exception):
    """Base class for user-facing errors (bad input, missing data, bad configuration)."""


class DataError(KbcError):
    """Input data is missing or malformed; the message names the file (and line) or the fix."""


class ConfigError(KbcError):
    """A command-line or run configuration that cannot work."""
