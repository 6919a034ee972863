"""Named predictors and their own options: `--predictors NAME=SPEC`, `--set NAME.KEY=VALUE`.

Each factory declares the option keys it accepts (`declares(...)`), with one line of help each,
so that a misspelled or misplaced key fails before any work, and `kbc ls NAME` can list them.
An unscoped `--set KEY=VALUE` applies to every predictor of the run that declares KEY.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import ConfigError
from eval.set_rules import parse_set_rule
from eval.user_values import strict_float, strict_int

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


@dataclass(frozen=True)
class Option:
    """One accepted `--set` key. `identity=False` marks keys that never change answers (caching)."""

    key: str
    help: str
    # str | int | float | rates (positive, comma-separated) | path | choice | bool | set-rule | model | masked-model
    kind: str = "str"
    choices: tuple[str, ...] = ()
    default: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    identity: bool = True
    required: bool = False
    only_with: str = ""  # KEY=VALUE: the option applies only when the predictor's KEY is VALUE (answer=generate)

    def check(self, value: str, where: str) -> str:
        """The value as stored (paths expanded), or a one-line error naming the key and the fix."""
        if value == "":
            raise ConfigError(f"{where}: empty value; give {self.key}=VALUE")
        if self.kind == "choice" and value not in self.choices:
            close = difflib.get_close_matches(value, self.choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}={value}: use one of {', '.join(self.choices)}{hint}")
        if self.kind in ("int", "float"):
            try:
                number = strict_int(value) if self.kind == "int" else strict_float(value)
            except ValueError:
                raise ConfigError(f"{where}={value}: expected {'an integer' if self.kind == 'int' else 'a number'} "
                                  "in ASCII digits") from None
            if self.minimum is not None and number < self.minimum:
                raise ConfigError(f"{where}={value}: must be at least {self.minimum:g}")
            if self.maximum is not None and number > self.maximum:
                raise ConfigError(f"{where}={value}: must be at most {self.maximum:g}")
        if self.kind == "bool" and value.lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
            raise ConfigError(f"{where}={value}: expected 0 or 1")
        if self.kind == "set-rule":
            try:
                parse_set_rule(value)
            except ConfigError as exc:
                raise ConfigError(f"{where}={value}: {str(exc).partition(': ')[2]}") from None
        if self.kind == "model":
            return check_model(value, where)
        if self.kind == "masked-model":  # the help says why a masked LM is needed
            from lm.loading import other_kind

            value = check_model(value, where)
            given = other_kind(value, "masked")
            if given:
                raise ConfigError(f"{where}={value}: {given}; {self.help}")
            return value
        if self.kind == "rates":
            try:
                rates = [strict_float(x) for x in value.split(",")]
            except ValueError:
                raise ConfigError(f"{where}={value}: expected a number or comma-separated numbers (e.g. "
                                  "5e-5,3e-5,2e-5)") from None
            if any(not r > 0 for r in rates):
                raise ConfigError(f"{where}={value}: learning rates must be positive")
        if self.kind == "path":
            path = Path(value).expanduser()
            if not path.exists():
                raise ConfigError(f"{where}={value}: no such file or directory")
            return str(path)
        return value

    def describe(self) -> str:
        kind = "|".join(self.choices) if self.kind == "choice" else self.kind.upper()
        default = f" (default {self.default})" if self.default is not None else ""
        return f"{self.key}={kind}: {self.help}{default}"


SET_OPTION = Option("set", "LM-KBC (kbc run lmkbc): how ranked answers become a set: threshold:X (probability above "
                    "X), top:K or threshold-tuned (per relation on the train split)", "set-rule")


def check_model(value: str, where: str) -> str:
    """A local model directory (with config.json) or something shaped like a hub id."""
    path = Path(value).expanduser()
    if value.startswith(("/", "./", "../", "~")) or path.exists():
        if not (path / "config.json").is_file():
            what = "no such directory" if not path.exists() else "not a model directory (no config.json)"
            raise ConfigError(f"{where}={value}: {what}; pass the folder that holds config.json, weights and "
                              "tokenizer files")
        return str(path)
    if not HUB_ID.match(value):
        raise ConfigError(f"{where}={value}: neither a local model directory nor a hub id")
    return value


def number_option(options: dict[str, str], key: str, default: float | None = None, parse=strict_int,
                  minimum: float | None = None):
    """The number an option holds (`parse`: `strict_int` or `strict_float`), `default` when it is not given.

    `Option.check` has accepted the text already; a factory reads it with the same strict parser.
    """
    value = options.get(key)
    if value is None:
        return default
    try:
        number = parse(value)
    except ValueError:
        kind = "an integer" if parse is strict_int else "a number"
        raise ConfigError(f"--set {key}={value}: expected {kind} in ASCII digits") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"--set {key}={value}: must be at least {minimum:g}")
    return number


def truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes", "on")


def declares(*options: Option, settings: tuple[str, ...] = ()) -> Callable:
    """Attach accepted options (and the run settings that change answers, e.g. dtype) to a factory."""

    def wrap(factory: Callable) -> Callable:
        factory.options = {o.key: o for o in options}
        factory.settings = settings
        return factory

    return wrap


def accepted(factory: Callable) -> dict[str, Option]:
    return getattr(factory, "options", {})


@dataclass
class NamedSpec:
    """A predictor of a run: its column name and what it is (registry name, model path or hub id)."""

    name: str
    spec: str
    options: dict[str, str] = field(default_factory=dict)


def default_name(spec: str) -> str:
    """A registry name as it is; a model path by its last folder (`/m/bert-base-cased` -> bert-base-cased)."""
    base = spec.rstrip("/").rsplit("/", 1)[-1] if ("/" in spec or spec.startswith("~")) else spec
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-._") or "predictor"


def predictor_items(values: Iterable[str]) -> list[str]:
    """The predictors that `--predictors` values name, in order, each once.

    A `NAME=SPEC` value, or the path of an existing folder, is one predictor whatever it holds (a
    model folder whose path has spaces); any other value may list several, separated by spaces.
    """
    out: list[str] = []
    for value in values:
        name, sep, _ = value.partition("=")
        if (sep and NAME.match(name)) or (value.strip() and Path(value).expanduser().exists()):
            out.append(value)
        else:
            out += value.split()
    return list(dict.fromkeys(out))


def parse_predictors(values: Iterable[str]) -> list[NamedSpec]:
    """`NAME=SPEC` (split at the first `=`: SPEC may be any path) or `SPEC` items; names must be unique
    and usable as folder names."""
    out: list[NamedSpec] = []
    for item in values:
        name, sep, spec = item.partition("=")
        if sep:
            if not name or not spec:
                raise ConfigError(f"--predictors {item!r}: expected NAME=SPEC with both parts "
                                  "(e.g. bert=/models/bert-base-cased)")
            if not NAME.match(name):
                raise ConfigError(f"--predictors {item!r}: a name may hold letters, digits, '.', '_' and '-' "
                                  "and must start with a letter or digit")
        else:
            spec, name = item, default_name(item)
        _refuse_credentials(name, spec)
        if spec.startswith(("http://", "https://")):  # one server, however its URL is written: its API root
            from lm.served import api_root

            spec = api_root(spec)
        out.append(NamedSpec(name, spec))
    seen: dict[str, NamedSpec] = {}
    for p in out:
        folded = p.name.lower()  # case-insensitive file systems would merge Bert and bert
        if folded in seen:
            first = seen[folded]
            if first.name != p.name:
                from bridge.run.name_clashes import CASE

                raise ConfigError(f"--predictors: predictors {first.name!r} ({shown(first.spec)}) and {p.name!r} "
                                  f"({shown(p.spec)}) differ only in case, {CASE} folder; name them apart with "
                                  "NAME=SPEC")
            raise ConfigError(f"--predictors: two predictors are named {p.name!r} ({shown(first.spec)} and "
                              f"{shown(p.spec)}); "
                              f"name them apart with NAME=SPEC")
        seen[folded] = p
    return out


def _refuse_credentials(name: str, spec: str) -> None:
    """A server URL holding a user name or password is refused before any work: a run records its spec and command
    line, and an error line names the URL, so the password would be shown and written. The key goes in an
    environment variable (`NAME.key_env`), sent only in the Authorization header."""
    if not spec.startswith(("http://", "https://")):
        return
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(spec)
    if parts.fragment or spec.endswith("#"):
        raise ConfigError(f"--predictors {name}: the server URL holds a fragment (#...), which a server never sees; "
                          "give the URL without it")
    secret = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(k)]
    if "@" not in parts.netloc and not secret:
        return
    from lm.served import public_url

    try:
        bare = public_url(spec)
    except ValueError:  # a port that is no number: name only the scheme
        bare = spec.split("://", 1)[0] + "://HOST/v1"
    held = "a user name or password" if "@" in parts.netloc else f"a key ({secret[0]}=...)"
    raise ConfigError(f"--predictors {name}: the server URL holds {held}, which a run would record "
                      f"and print; give the URL without it ({bare}) and the key in an environment variable: "
                      f"--set {name}.key_env=VAR (sent as a Bearer token)")


# query names keys hide in (Azure Functions': `code`)
_SECRET_PARAM = re.compile(r"key|token|secret|passw|signature|sig$|auth|^code$", re.IGNORECASE)


def shown(spec: str) -> str:
    """A predictor's spec as an error line shows it: a server URL's query values as `***` (`lm.served.recorded_url`)."""
    from lm.served import recorded_text

    return recorded_text(spec)


def parse_sets(items: Iterable[str]) -> dict[str, str]:
    """KEY=VALUE items as a dict; a key given twice with two values is refused, never the last one kept silently."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE or NAME.KEY=VALUE, got {item!r}")
        if out.get(key, value) != value:
            raise ConfigError(f"--set {key} is given twice ({out[key]!r} and {value!r}); give one")
        out[key] = value
    return out


RUN_FLAGS = ("depth", "batch-size", "device", "dtype", "limit", "seed")  # `kbc run` flags, not predictor options


def run_flag_hint(key: str) -> str:
    """`did you mean the run flag --depth? ` for a `--set` key close to a flag of `kbc run` itself."""
    close = difflib.get_close_matches(key.replace("_", "-"), RUN_FLAGS, n=1)
    return f"did you mean the run flag --{close[0]}? " if close else ""


def scope_options(sets: dict[str, str], predictors: list[NamedSpec],
                  declared: dict[str, dict[str, Option]], sources: dict[str, str] | None = None) -> None:
    """Give each predictor its own validated options (fills `NamedSpec.options`).

    `declared` maps predictor name -> its accepted options. Scoped keys win over unscoped ones. `sources` names
    where a key was written when that was not `--set` (a run file's table key), for the error lines.
    """
    sources = sources or {}

    def where(key: str) -> str:
        return sources.get(key, f"--set {key}")

    names = {p.name: p for p in predictors}
    given: dict[tuple[str, str], str] = {}  # (predictor, option) -> the key it was written as
    unscoped = {k: v for k, v in sets.items() if "." not in k or k.rsplit(".", 1)[0] not in names}
    for key, value in unscoped.items():
        if "." in key:
            prefix = key.rsplit(".", 1)[0]
            close = difflib.get_close_matches(prefix, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"{where(key)}: no predictor of this run is named {prefix!r}; {hint}"
                              f"predictors: {', '.join(names)}")
        takers = [p for p in predictors if key in declared[p.name]]
        if not takers:
            every = sorted({k for opts in declared.values() for k in opts})
            close = difflib.get_close_matches(key, every, n=1)
            hint = f"did you mean {close[0]!r}? " if close else run_flag_hint(key)
            raise ConfigError(f"{where(key)}: no predictor of this run takes this option; {hint}"
                              f"accepted: {', '.join(every) or 'none'} (see `kbc ls NAME`)")
        for p in takers:
            p.options[key] = declared[p.name][key].check(value, where(key))
            given[(p.name, key)] = key
    for key, value in sets.items():
        if key in unscoped:
            continue
        name, opt = key.rsplit(".", 1)
        accepts = declared[name]
        if opt not in accepts:
            close = difflib.get_close_matches(opt, accepts, n=1)
            hint = f"did you mean {name}.{close[0]}? " if close else run_flag_hint(opt)
            raise ConfigError(f"{where(key)}: predictor {name} ({shown(names[name].spec)}) does not take {opt!r}; "
                              f"{hint}it takes: {', '.join(sorted(accepts)) or 'no options'}")
        names[name].options[opt] = accepts[opt].check(value, where(key))
        given[(name, opt)] = key
    for (name, key), written in given.items():
        condition = declared[name][key].only_with
        if condition:
            needed, _, wanted = condition.partition("=")
            if names[name].options.get(needed, declared[name][needed].default) != wanted:
                raise ConfigError(f"{where(written)} applies to {needed}={wanted} only; add --set "
                                  f"{name}.{needed}={wanted} or drop it")
    for p in predictors:
        for opt in declared[p.name].values():
            if opt.required and opt.key not in p.options:
                raise ConfigError(f"predictor {p.name} ({shown(p.spec)}) needs --set {p.name}.{opt.key}=... "
                                  f"({opt.help})")


def identity_options(options: dict[str, str], declared: dict[str, Option]) -> dict[str, str]:
    """The options that change a predictor's answers (part of what a rerun must match)."""
    return {k: v for k, v in sorted(options.items()) if declared.get(k, Option(k, "")).identity}
