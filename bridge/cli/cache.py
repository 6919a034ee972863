"""`kbc cache info|prune|clear`: what kbc's cache holds, and removing it without harm to a kbc that uses it."""

from __future__ import annotations

import json

import click

from bridge.cli.choices import NamedChoice
from bridge.run.cache_admin import (
    FIRST_ANSWERS,
    KINDS,
    Usage,
    clear,
    dead_entries,
    first_answers,
    inventory,
    not_kbcs,
    not_kinds,
    remove_dead,
    root_source,
)
from eval.cells import byte_size, count_of
from eval.datadir import cache_root
from eval.errors import ConfigError


def _root():
    from bridge.run.config import check_cache

    root = cache_root().absolute()  # a relative KBC_CACHE names another folder from each folder kbc runs in
    check_cache(root)
    return root


def _left_alone(paths, why: str) -> None:
    for path in paths:
        click.echo(f"left alone: {path} ({why})")


@click.group(invoke_without_command=True)
@click.pass_context
def cache(ctx: click.Context) -> None:
    """kbc's cache (~/.cache/kbcompare, or $KBC_CACHE): what it holds, and removing what is no longer used.

    `kbc cache` alone is `kbc cache info`. Whatever is removed is computed again when next needed, with the same
    results.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(info)


@cache.command("info", short_help="The cache folder, and the size and files of each kind.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (sizes in bytes).")
def info(as_json: bool) -> None:
    """The cache folder (and why it is that one), and the size and files of each kind of cache in it; entries
    kbc did not make (counted apart, in no kind) and links (never followed) are named."""
    root = _root()
    found = inventory(root)
    total = Usage()
    for u in found.kinds.values():
        total.add(u)
    foreign, others = found.foreign + found.not_kbcs, found.others
    if as_json:
        click.echo(json.dumps({"root": str(root), "source": root_source(), "exists": root.is_dir(),
                               "kinds": {k: {"bytes": u.bytes, "files": u.files, "what": KINDS[k]}
                                         for k, u in found.kinds.items()},
                               "total": {"bytes": total.bytes, "files": total.files},
                               "not_kbc": [str(p) for p in foreign],
                               "not_kbc_total": {"bytes": others.bytes, "files": others.files},
                               "links": [str(p) for p in found.links]}, indent=1))
        return
    click.echo(f"cache: {root} ({root_source()})" + ("" if root.is_dir() else "; not made yet: nothing is cached"))
    click.echo(f"{'kind':10s} {'size':>9s} {'files':>8s}  what")
    for kind, u in found.kinds.items():
        click.echo(f"{kind:10s} {byte_size(u.bytes):>9s} {u.files:>8,}  {KINDS[kind]}")
    click.echo(f"{'total':10s} {byte_size(total.bytes):>9s} {total.files:>8,}")
    if foreign:
        click.echo(f"{'not kbc':10s} {byte_size(others.bytes):>9s} {others.files:>8,}  in no kind nor the total: the "
                   "entries named below")
    _left_alone(foreign, "not kbc's: never removed")
    _left_alone(found.links, "a link: never followed nor removed")


@cache.command("prune", short_help="Remove what can never be used again.")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
def prune(dry_run: bool) -> None:
    """Remove what can never be used again: parsed-corpus snapshots whose data files are gone or changed (or of an
    earlier kbc version), remembered digests of files gone or changed, and temporary files of writers killed
    mid-write (kbc's own names only, untouched for 30 minutes). Safe while other kbc commands run."""
    root = _root()
    dead, foreign = dead_entries(root)
    foreign = not_kinds(root) + foreign
    removed = dead if dry_run else remove_dead(dead)
    verb = "would remove" if dry_run else "removed"
    for entry in removed:
        click.echo(f"{verb} {entry.path.relative_to(root)} ({byte_size(entry.bytes)}): {entry.why}")
    for kind in KINDS:
        mine = [e for e in removed if e.kind == kind]
        if mine:
            entries = f"{len(mine):,} {'entry' if len(mine) == 1 else 'entries'}"
            click.echo(f"{kind}: {verb} {entries}, {byte_size(sum(e.bytes for e in mine))}")
    _left_alone([p for p in foreign if not p.is_symlink()], "not kbc's: never removed")
    links = [p for p in foreign if p.is_symlink()] + [root / k for k in KINDS if (root / k).is_symlink()]
    _left_alone(links, "a link: never followed nor removed")
    freed = byte_size(sum(e.bytes for e in removed))
    click.echo(f"{'would free' if dry_run else 'freed'} {freed} in {root}" if removed
               else f"nothing to remove in {root}")


@cache.command("clear", short_help="Remove whole kinds of cache (all by default).")
@click.argument("kinds", nargs=-1, metavar="[KIND]...", type=NamedChoice(list(KINDS)))
@click.option("--yes", "-y", is_flag=True, help="Do not ask before removing.")
def clear_kinds(kinds: tuple[str, ...], yes: bool) -> None:
    """Remove every entry of each KIND (store, lm, index, entities, re, snapshots, digests, uhn, matplotlib;
    default: all), asking first unless --yes. Refused, with nothing removed, while another kbc process uses the
    graph store, an LM cache or a text index build among them."""
    root = _root()
    chosen = list(dict.fromkeys(kinds)) or list(KINDS)
    would = clear(root, chosen, check_only=True)  # refused before asking, not after
    found = inventory(root)
    size = Usage()
    for kind in chosen:
        size.add(would[kind])
    what = ", ".join(chosen) if kinds else "every kind"
    if not size.files and not size.links:
        _first_answers_kept(root, chosen)
        click.echo(f"nothing to remove in {root}")
        return
    if not yes:
        try:
            asked = click.confirm(f"remove {count_of(size.files, 'files')} ({byte_size(size.bytes)}) of {what} "
                                  f"from {root}?", default=False, err=True)
        except click.Abort:
            click.echo(err=True)  # the question's line ends
            raise ConfigError("kbc cache clear asks before removing, and got no answer; nothing removed: pass "
                              "--yes to clear without asking") from None
        if not asked:
            click.echo("nothing removed")
            return
    done = clear(root, chosen)
    for kind, removed in done.items():
        if kinds or removed.files:  # every kind cleared: only those that held something are listed
            click.echo(f"{kind}: removed {count_of(removed.files, 'files')} ({byte_size(removed.bytes)})")
        _left_alone(removed.links, "a link: never followed nor removed")
    _left_alone((found.foreign if not kinds else []) + not_kbcs(root, chosen), "not kbc's: never removed")
    _first_answers_kept(root, chosen)
    click.echo(f"freed {byte_size(sum(u.bytes for u in done.values()))} in {root}")


def _first_answers_kept(root, chosen: list[str]) -> None:
    """The line naming the served runs' first answers a clear of `chosen` leaves, and why (none where it leaves
    none)."""
    if kept := first_answers(root, chosen):
        click.echo(f"left alone: {root / 'lm' / FIRST_ANSWERS} ({count_of(len(kept), 'files')}: the first answers "
                   "of served-model runs, which a resumed run asks its server again to tell other weights; remove "
                   "it by hand once those runs are done)")


# what a Ctrl-C leaves: not a run's "results kept, resume"
clear_kinds.interrupted = ("interrupted: part of what was asked may be removed, the rest is kept whole (what is gone "
                           "is computed again when next needed); rerun the same command to finish")
prune.interrupted = ("interrupted: some of what can never be used again may be left (never anything else removed); "
                     "rerun the same command to finish")
