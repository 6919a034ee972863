"""What a run directory's log of attempts (`config.json`'s `runs`) says is left part-asked, and by which command.

An attempt stopped part of the way (Ctrl-C, SIGTERM, an error, a kill) may leave a predictor with some of a
relation's queries recorded and the rest never asked. Scores over such a relation are over a subset chosen by where
the attempt stopped, so a run directory holding one is finished only by an attempt that asks that relation's same
sample again (the same `--limit`/`--seed`, or no `--limit`): `kbc run` refuses any other command into it, and the
readers refuse its summaries, each naming the command that finishes it.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from bridge.run.older_names import older_file
from bridge.run.results import slug
from eval.relations import older_slug

DONE = "done"  # per attempt: corpus -> predictor -> the relations whose queries it recorded whole
FRESH = "fresh"  # per attempt: corpus -> predictor -> relations an earlier attempt planned, unrecorded at its start


@dataclass(frozen=True)
class PartAsked:
    """One predictor's relation left part-asked by an attempt (its entry in the runs log)."""

    corpus: str
    predictor: str
    relation: str
    attempt: dict


def attempt_sample(attempt: dict) -> tuple:
    """The sample an attempt asked of each relation: (limit, seed), or (None, None) for every fact."""
    limit = attempt.get("limit") or None
    return (limit, attempt.get("seed", 0)) if limit else (None, None)


def finishes(sample: tuple, earlier: tuple) -> bool:
    """Whether asking `sample` of a relation asks every query of `earlier`'s sample: the same one, or every fact."""
    return sample == (None, None) or sample == earlier


def planned(attempt: dict, config: dict) -> set[tuple[str, str, str]]:
    """(corpus, predictor, relation) an attempt set out to ask: its recorded relations per corpus, or (entries
    written before those were) its `--relations`, else every relation the directory holds of the corpus."""
    asked = attempt.get("asked")
    out = set()
    for corpus in attempt.get("corpora") or []:
        if isinstance(asked, dict) and isinstance(asked.get(corpus), list):
            relations = asked[corpus]
        else:
            relations = attempt.get("relations") or list((config.get("relation_types") or {}).get(corpus) or {})
        out.update((corpus, p, r) for p in attempt.get("predictors") or [] for r in relations)
    return out


def completed(attempt: dict, config: dict) -> set[tuple[str, str, str]]:
    """What an attempt recorded whole: all it planned where it finished, else the relations it marked done."""
    if attempt.get("finished"):
        return planned(attempt, config)
    return _keys(attempt.get(DONE))


def _keys(per: object) -> set[tuple[str, str, str]]:
    """(corpus, predictor, relation) of a corpus -> predictor -> relations entry (`done`, `fresh`)."""
    if not isinstance(per, dict):
        return set()
    return {(c, p, r) for c, by in per.items() if isinstance(by, dict)
            for p, relations in by.items() if isinstance(relations, list) for r in relations}


def _nested(keys: set[tuple[str, str, str]]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for c, p, r in sorted(keys):
        out.setdefault(c, {}).setdefault(p, []).append(r)
    return out


def fresh(out: Path, config: dict, asks: set[tuple[str, str, str]]) -> dict[str, dict[str, list[str]]]:
    """What an attempt about to ask `asks` starts afresh: the keys an earlier attempt planned that hold no records
    now. Whatever earlier attempts left of them was nothing, so `part_asked` forgets their history there; noted in
    the attempt's entry, since a later attempt's records would hide it."""
    earlier = set().union(*(planned(a, config) for a in config.get("runs") or [] if isinstance(a, dict)))
    return _nested({key for key in asks & earlier if not _has_records(out, *key)})


def _has_records(out: Path, corpus: str, predictor: str, relation: str) -> bool:
    """Whether the predictor's files of the relation (of any stage) hold a record, under the name an older kbc gave
    them too (`bridge.run.older_names`): a relation it left part-asked is still found so."""
    folder = out / "predictions" / corpus / slug(predictor)
    older = [f for f in folder.glob(f"**/{older_slug(relation)}.jsonl")
             if older_file(f.with_name(f"{slug(relation)}.jsonl"), relation)]
    return any(f.is_file() and f.stat().st_size for f in [*folder.glob(f"**/{slug(relation)}.jsonl"), *older])


def part_asked(out: Path, config: dict) -> list[PartAsked]:
    """Every predictor's relation that an attempt left with some records and not all, and no later attempt
    finished (asking the same sample whole) or started afresh (no records at its start), in the order of the runs
    log. `kbc run` refuses by it at its start and the readers refuse summaries by it: one rule."""
    attempts = [a for a in config.get("runs") or [] if isinstance(a, dict)]
    left: dict[tuple[str, str, str], list[dict]] = {}
    asked_whole: dict[tuple[str, str, str], set[tuple]] = {}  # the samples of each recorded whole so far
    for attempt in attempts:
        sample = attempt_sample(attempt)
        for key in _keys(attempt.get(FRESH)):  # nothing recorded before it: what earlier attempts left is void
            left.pop(key, None)
            asked_whole.pop(key, None)
        whole = completed(attempt, config)
        for key in whole:
            asked_whole.setdefault(key, set()).add(sample)
            if key in left:
                left[key] = [a for a in left[key] if not finishes(sample, attempt_sample(a))]
        for key in sorted(planned(attempt, config) - whole):
            if not any(finishes(done, sample) for done in asked_whole.get(key, ())):  # else nothing was left to ask
                left.setdefault(key, []).append(attempt)
    found = [PartAsked(*key, attempt) for key, those in left.items() for attempt in those
             if _has_records(out, *key)]
    order = {id(a): i for i, a in enumerate(attempts)}

    def place(x: PartAsked) -> tuple:
        named = list(x.attempt.get("predictors") or [])
        return order[id(x.attempt)], x.corpus, x.relation, named.index(x.predictor) if x.predictor in named else 0

    return sorted(found, key=place)


def attempt_command(attempt: dict, config: dict, out: Path | None = None) -> str:
    """The command of an attempt, as it was typed (`argv`) where `kbc` ran it, else rebuilt from its entry (a run
    through the Python API): the flags that choose what it asks."""
    argv = typed_argv(attempt)
    if argv is not None:
        argv = [_this_kbc(argv[0]), *argv[1:]]
        return shlex.join(argv if out is None else _out_as(argv, out))
    specs = config.get("predictor_specs") or {}
    words = ["kbc", "run", str(config.get("experiment", "lama")), "--corpus", *(attempt.get("corpora") or [])]
    if attempt.get("relations"):
        words += ["--relations", *attempt["relations"]]
    words += ["--predictors", *(p if specs.get(p, {}).get("spec") == p else f"{p}={specs.get(p, {}).get('spec', p)}"
                                for p in attempt.get("predictors") or [])]
    limit, seed = attempt_sample(attempt)
    if limit:
        words += ["--limit", str(limit), "--seed", str(seed)]
    if config.get("data_dir"):
        words += ["--data-dir", str(config["data_dir"])]
    return shlex.join([*words, "--out", str(out)] if out is not None else words)


def typed_argv(attempt: dict) -> list[str] | None:
    """The words of the `kbc` command that made an attempt, as typed; None for an attempt made otherwise (the Python
    API, a test) or recorded before commands were."""
    argv = attempt.get("argv")
    if (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv) and Path(argv[0]).name == "kbc"
            and "run" in argv[1:]):
        return argv
    return None


def _this_kbc(recorded: str) -> str:
    """The `kbc` to type: the one running now where this process is a `kbc` (a run another installation made, an
    earlier version's, is finished by the version that reads it), else the one the run recorded."""
    running = sys.argv[0] if sys.argv else ""
    return running if Path(running).name == "kbc" else recorded


def _out_as(argv: list[str], out: Path) -> list[str]:
    """`argv` writing to `out`, the folder as it is named now: a run moved or copied, or one named from another
    working folder, is rescored where it lies, not where the command first wrote."""
    words = list(argv)
    for i, word in enumerate(words):
        if word == "--out" and i + 1 < len(words):
            words[i + 1] = str(out)
        elif word.startswith("--out="):
            words[i] = f"--out={out}"
    return words


def how_it_ended(attempt: dict) -> str:
    """'interrupted', 'failed (ERROR)' or 'recorded no end': an attempt that did not finish, in words."""
    if attempt.get("error") == "interrupted":
        return "interrupted"
    if attempt.get("failed"):
        return f"failed ({attempt.get('error') or 'no error recorded'})"
    return "recorded no end (killed, or still running)"


def _listed(items: list[PartAsked]) -> str:
    per: dict[tuple[str, str], list[str]] = {}
    for item in items:
        per.setdefault((item.corpus, item.relation), []).append(item.predictor)
    shown = [f"{c} {r} of {', '.join(dict.fromkeys(ps))}" for (c, r), ps in per.items()]
    return "; ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")


def finishing(items: list[PartAsked], config: dict, out: Path | None = None) -> tuple[str, str]:
    """What is part-asked (the first attempt's that left some) and the command that finishes it, in words."""
    first = items[0].attempt
    mine = [x for x in items if x.attempt is first]
    what = (f"the attempt started {first.get('started', '?')} ({how_it_ended(first)}) left {_listed(mine)} "
            "part-asked")
    more = len({id(x.attempt) for x in items}) - 1
    if more:
        what += f" (and {more} later attempt{'s' if more > 1 else ''} left more)"
    return what, f"`{attempt_command(first, config, out)}`"


def part_asked_refusal(out: Path, config: dict) -> str | None:
    """The readers' one line for a run whose summaries would score a part-asked relation; None where none is."""
    items = part_asked(out, config)
    if not items:
        return None
    what, command = finishing(items, config, out)
    return f"{out}: {what}, so its scores there would be over part of the facts; rerun {command} to finish it"


def rerun_hint(config: dict, out: Path | None = None) -> str:
    """How to complete or rescore a run: the command of its last attempt that did not finish, named and dated where
    the runs log holds more than one command; else the command its last attempt was typed as (`runs[].argv`),
    writing to `out`; else, for a run made through the Python API, `the same kbc run command`."""
    from bridge.run.record_digests import held_without_digests

    attempts = [a for a in config.get("runs") or [] if isinstance(a, dict)]
    open_ones = [a for a in attempts if not a.get("finished")]
    elsewhere = ""
    if out is not None and held_without_digests(out) is not None:  # `kbc run` would refuse to add there
        out, elsewhere = out.with_name(f"{out.name}-2"), (" (a new --out: kbc run does not add to records an older "
                                                          "kbc kept without digests)")
    commands = {attempt_command(a, config, out) for a in attempts}
    if open_ones and len(commands) > 1:
        last = open_ones[-1]
        return (f"rerun `{attempt_command(last, config, out)}` (the attempt started {last.get('started', '?')})"
                f"{elsewhere}")
    last = (open_ones or attempts or [{}])[-1]
    if typed_argv(last) is not None:
        return f"rerun `{attempt_command(last, config, out)}`{elsewhere}"
    return "rerun the same `kbc run` command" + (" into a new --out" if elsewhere else "")


def samples(config: dict) -> list[tuple[int | None, int | None]]:
    """The `(--limit, --seed)` of each distinct attempt of a run (the runs log's), `(None, None)` for one that asked
    every fact."""
    return list(dict.fromkeys(attempt_sample(a) for a in config.get("runs") or [] if isinstance(a, dict)))
