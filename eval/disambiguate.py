"""From an answer's surface form to a Wikidata id, so that set answers are scored by id as LM-KBC scores them.

An answer maps to the one id whose label it equals; failing that, to the one id with such an alias; then
the same ignoring case (an uncased model writes "france"). At the first of these steps that finds ids,
one id is the answer and several leave it open. An answer that names no id, or several, is kept as it
is and is compared by label. Short aliases (at most `SHORT` characters: Wikidata's country codes "CA",
"IT") match only as written, and lower-case ones ("no" for Norway, "it" for Italy, "can" for Canada) not at
all: they are everyday words an LM writes for other reasons. Whether a text names an entity at all, one or
several (`LabelIndex.names`), decides where a generated answer is split (`eval.answer_text`); forms known to
name entities the index does not link (`known=`: the alias list of every LAMA T-REx entity) count there too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path

from eval.errors import DataError
from eval.jsonl import QID, read_text
from eval.labels import nfc

SHORT = 3


class LabelIndex:
    """Labels and aliases of known entities: labels before aliases, exact before ignoring case."""

    def __init__(self, labels: Mapping[str, str], aliases: Mapping[str, Iterable[str]] | None = None,
                 known: Iterable[str] = ()) -> None:
        self._tables: list[tuple[dict[str, set[str]], bool]] = []
        self._resolved: dict[str, str] = {}  # text -> what `resolve` gave: the tables never change
        alias_forms = {qid: [a for a in forms if a and a != labels.get(qid) and not (len(a) <= SHORT and a.islower())]
                       for qid, forms in (aliases or {}).items()}
        # other forms naming entities, under the aliases' rules: short ones only as written, lower-case short never
        kept = [nfc(n) for n in known if n and not (len(n) <= SHORT and n.islower())]
        self._names = (frozenset(kept), frozenset(n.casefold() for n in kept if len(n) > SHORT))
        for folded in (False, True):
            for is_alias, names in ((False, {qid: [label] for qid, label in labels.items()}), (True, alias_forms)):
                table: dict[str, set[str]] = {}
                for qid, forms in names.items():
                    for form in forms:
                        if folded and is_alias and len(form) <= SHORT:
                            continue
                        form = nfc(form)  # "José" in the data and in a model's text, whichever way each spells é
                        table.setdefault(form.casefold() if folded else form, set()).add(qid)
                self._tables.append((table, folded))
        # no text longer than every form names an entity: a text matches a form as written or case-folded, and
        # case folding never shortens a text (each character folds to one or more)
        forms = chain((form for table, _ in self._tables for form in table), *self._names)
        self.longest: int = max(map(len, forms), default=0)

    def ids(self, text: str) -> set[str]:
        """The ids `text` names at the first step that finds any (several: an ambiguous label); empty when none."""
        text = nfc(text.strip())
        for table, folded in self._tables:
            ids = table.get(text.casefold() if folded else text)
            if ids:
                return ids
        return set()

    def resolve(self, text: str) -> str:
        """The one id `text` names, else `text` itself (remembered: an LM ranks the same words for every subject)."""
        found = self._resolved.get(text)
        if found is None:
            ids = self.ids(text)
            found = self._resolved[text] = next(iter(ids)) if len(ids) == 1 else text.strip()
        return found

    def names(self, text: str) -> bool:
        """Whether `text` is a label or alias of some entity: one, or several ("Lincoln"); never where `text`
        stripped is longer than `longest`."""
        text = nfc(text.strip())
        exact, folded = self._names
        return bool(self.ids(text)) or text in exact or text.casefold() in folded


# the alias lists this process parsed last, by path, with the text each was parsed from: a process that builds
# several runs (a notebook, the Python API, a run over several corpora) parses a list once while its text is the same
_PARSED: dict[str, tuple[str, dict[str, list[str]]]] = {}
KEEP_PARSED = 2


def load_aliases(path: Path, keep: Iterable[str] | None = None) -> dict[str, list[str]]:
    """A tab-separated alias list (`QID<TAB>alias<TAB>alias...`, as X-FACTR's `alias/TREx/en.txt`), limited to
    the ids in `keep` when given; a line without a Wikidata id first is a DataError with file:line."""
    text = read_text(path, str(path))
    found = _PARSED.get(str(path))
    if found is None or found[0] != text:
        found = (text, _parse_aliases(path, text))
        _PARSED.pop(str(path), None)
        _PARSED[str(path)] = found
        while len(_PARSED) > KEEP_PARSED:
            del _PARSED[next(iter(_PARSED))]
    wanted = set(keep) if keep is not None else None
    return {qid: list(forms) for qid, forms in found[1].items() if wanted is None or qid in wanted}


def _parse_aliases(path: Path, text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        qid, *forms = line.split("\t")
        if not QID.fullmatch(qid):
            raise DataError(f"{path}:{lineno}: expected a Wikidata id (Q...) then tab-separated aliases, got {qid!r}")
        out.setdefault(qid, []).extend(form for form in map(str.strip, forms) if form)
    return out
