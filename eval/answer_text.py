"""From a generated text to answers: one answer or a set, an abstention, and each answer linked to a KB entity.

A model asked by generation writes prose, not a ranking. The answer is read from the first lines it writes:
bullet lines (`- A`, `* A`, `1. A`) are one item each; otherwise the first non-empty line, cut at a closing
full stop (not one after a common abbreviation, "St. Louis", nor one inside a name the index knows), with an
`Answer:` prefix removed. Each line is split into answers at commas, semicolons and " and "
(a leading "and " dropped: "France, Germany, and Spain"), except where a stretch of it names an entity by label
or alias, one entity or several ("Washington, D.C.", "Trinidad and Tobago", "Sharp, Stewart and Company" stay
whole; `LabelIndex.names`): the longest such stretch from the left is one answer. So one answer written as
bullets, as a comma list or as "A and B" reads the same, and a single answer is the first of them; a set is every
one of them. A number's own comma and "and" ("1,024", "one hundred and twelve") are no separators. A text that
says none, unknown, n/a or "I don't know" is an abstention: an empty set where the experiment asks for a set, no
answer where it asks for one. Items are linked to entities by label and alias (`eval.disambiguate.LabelIndex`);
an item naming no entity, or several, stays a string and is counted as unlinked, and so is a first line that
holds no answer at all ("::::").
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from eval.disambiguate import LabelIndex

# how generations are read into answers and scored; part of a generating predictor's identity (`bridge.run.config`),
# so that answers read under two rules never mix in one run directory. Bump it when either changes.
# 2: lines split at commas, semicolons and " and " wherever no stretch names an entity; labels compared ignoring
# case (`eval.generated_scores.same_label`)
# 3: a full stop inside a stretch naming an entity, or after a common abbreviation ("St. Louis"), ends no answer
# 4: a name's own closing full stop is kept ("Martin Luther King Jr."); every label LM-KBC's splits write names an
# entity where a line is split
# 5: an answer is linked (and split) among the entities of its own relation's facts, not of every relation loaded;
# on LAMA the plain `lmkbc2024` prompt's examples are of the asked relation
# 6: a number is read from digits standing as a word of their own ("52 episodes", not "179trotro"), and is the answer
# 7: a reasoning model's `<think>…</think>` block is no answer: the answer follows it, none where it never closes
ANSWER_RULE = 7
GENERATED = "generation"  # the raw generation's key in `Prediction.extra` and in records
# what a record of a generated answer keeps beside its answers: the exact prompt, the raw text, what was read from it
GENERATION_FIELDS = ("prompt", "prompt_text", GENERATED, "parsed", "unlinked", "abstained", "shots")
_YES, _NO = frozenset({"yes", "true", "correct"}), frozenset({"no", "false", "incorrect"})
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")
_PREFIX = re.compile(r"^\s*(?:the\s+)?answers?\b\s*(?:is|are)?\s*[:=-]?\s*", re.IGNORECASE)
_NONE = frozenset({"none", "unknown", "n/a", "na", "no answer", "no answers", "nobody", "nothing", "empty",
                   "i don't know", "i do not know", "not known", "there are none", "there is none"})
_TRIM = " \t\"'`*_.,;:!"
# a reasoning model's thoughts before its answer, where the server leaves them in the text (no reasoning parser)
_THINK_OPEN = re.compile(r"\s*<(?:think|thinking)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)
# where a line holds several answers: semicolons, commas (not a number's thousands separator: "1,024"), " and "
_LIST = r";|(?<!\d),|,(?!\d{3}(?!\d))"
_SEPARATORS = re.compile(rf"\s*(?:{_LIST})\s*|\s+and\s+")
_NUMBER_SEPARATORS = re.compile(rf"\s*(?:{_LIST})\s*")  # "one hundred and twelve" is one number
# a sentence's closing full stop: after a lower-case letter or ")", before a capital ("Paris. It is the capital")
_SENTENCE_END = re.compile(r"(?<=[a-z\)])\.\s+(?=[A-Z])")
# abbreviations of names a full stop follows inside them ("St. Petersburg", "Mt. Everest", "Martin Luther King Jr.")
_ABBREVIATIONS = frozenset({"St", "Ste", "Mt", "Ft", "Pt", "Dr", "Jr", "Sr", "Mr", "Mrs", "Ms", "Prof", "Rev", "Gen",
                            "Col", "Lt", "Capt", "Sgt", "Gov", "Sen", "Rep", "Hon", "Bros"})


@dataclass(frozen=True)
class Parsed:
    """What a generation answered: its items in order (empty when it abstained or wrote nothing usable)."""

    items: tuple[str, ...]
    abstained: bool = False


def _clean(item: str, trim: str = _TRIM) -> str:
    # whitespace runs as one space; `trim` holds the space, so the ends read the same as with `re.sub(r"\s+", " ")`,
    # at a fraction of its cost (a long answer line has its stretches cleaned many times over)
    item = " ".join(item.split()).strip(trim)
    return item[4:].strip(trim) if item.lower().startswith("and ") else item


def _name_in(text: str, names: Callable[[str], bool]) -> str | None:
    """`text` cleaned as an answer with its full stops kept where that names an entity ("Washington, D.C.",
    "Martin Luther King Jr."), else with them trimmed where that does; None where neither does."""
    for form in (_clean(text, _TRIM.replace(".", "")), _clean(text)):
        if form and names(form):
            return form
    return None


def is_abstention(text: str) -> bool:
    """Whether `text` (one line or item) says there is no answer."""
    return _clean(text).lower().rstrip(".!") in _NONE


def _names_nothing(_text: str) -> bool:
    return False


def first_sentence(line: str, names: Callable[[str], bool] = _names_nothing) -> str:
    """`line` up to its closing full stop; a full stop after a common abbreviation ("St. Louis") or inside a
    stretch between separators that `names` an entity ("Adela Rogers St. Johns") ends nothing."""
    separators = None  # (starts, ends) of the line's separators, found once: a long answer has many stops
    for stop in _SENTENCE_END.finditer(line):
        word = re.search(r"[A-Za-z]+$", line[:stop.start()])
        if word and word.group() in _ABBREVIATIONS:
            continue
        if separators is None:
            found = list(_SEPARATORS.finditer(line))
            separators = [m.start() for m in found], [m.end() for m in found]
        starts, ends = separators
        # no separator holds a full stop, so those ending before it and starting after it bound its stretch
        before = bisect.bisect_right(ends, stop.start())
        after = bisect.bisect_left(starts, stop.end())
        stretch = line[ends[before - 1] if before else 0:starts[after] if after < len(starts) else len(line)]
        if _name_in(stretch, names) is not None:
            continue
        return line[:stop.start()]
    return line


def stated(text: str) -> str:
    """The part of a generation that can state its answer: what follows a reasoning model's `<think>…</think>`
    block (its opening tag may be the prompt's, as DeepSeek-R1's chat template writes it), nothing where the block
    never closes (cut at `max_new_tokens` while thinking); the whole text of any other."""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end():]
    return "" if _THINK_OPEN.match(text) else text


def answer_lines(text: str, names: Callable[[str], bool] = _names_nothing) -> list[str]:
    """The answer part of a generation (`stated`): its leading bullet lines, else its first non-empty line up to its
    closing full stop (`first_sentence`; `names` tells a stop inside an entity's name)."""
    lines = [line for line in stated(text).splitlines() if line.strip()]
    if not lines:
        return []
    bullets = []
    for line in lines:
        match = _BULLET.match(line)
        if not match:
            break
        bullets.append(match.group(1))
    if bullets:
        return bullets
    first = _PREFIX.sub("", lines[0], count=1) if _PREFIX.match(lines[0]) and ":" in lines[0] else lines[0]
    return [first_sentence(first, names)]


def split_answers(line: str, names: Callable[[str], bool], numeric: bool = False,
                  longest: int | None = None) -> list[str]:
    """The answers of one line, in order: split at every separator, then from the left the longest run of pieces
    that `names` an entity is one answer (else one piece); `numeric`: " and " is no separator. `longest`: no text
    longer than this names an entity (`LabelIndex.longest`), so no run holding more is tried: a long list reads in
    time linear in its pieces, not quadratic."""
    seps = list((_NUMBER_SEPARATORS if numeric else _SEPARATORS).finditer(line))
    starts, ends = [0, *(m.end() for m in seps)], [*(m.start() for m in seps), len(line)]
    last = None  # per run start, the last piece a run naming an entity can end at
    if longest is not None:
        # a run's answer keeps every character of it that is neither a space nor trimmed, but for a leading "and "
        kept = [0, *accumulate(not c.isspace() and c not in _TRIM for c in line)]
        ends_kept = [kept[e] for e in ends]
        last = [bisect.bisect_right(ends_kept, kept[s] + longest + 4) - 1 for s in starts]
    out, i = [], 0
    while i < len(starts):
        j = len(starts) - 1 if last is None else max(i, min(len(starts) - 1, last[i]))
        while j > i and _name_in(line[starts[i]:ends[j]], names) is None:
            j -= 1
        item = _name_in(line[starts[i]:ends[j]], names) or _clean(line[starts[i]:ends[j]])
        if item:
            out.append(item)
        i = j + 1
    return out


def parse_generation(text: str, many: bool, index: LabelIndex | None = None, numeric: bool = False) -> Parsed:
    """The answer (`many=False`) or the answer set (`many=True`) a generation states; a stretch that names an
    entity of `index` is never split (without one, every separator splits). `numeric`: the answers are numbers."""
    names = _names_nothing if index is None or numeric else index.names
    longest = 0 if names is _names_nothing else index.longest
    lines = answer_lines(text, names)
    if not lines or (len(lines) == 1 and is_abstention(lines[0])):
        return Parsed((), abstained=bool(lines))
    parts = [p for line in lines for p in split_answers(line, names, numeric, longest)]
    items = [p for p in parts if not is_abstention(p)]
    if not many:
        items = items[:1]
    abstained = not items and bool(parts)
    if not items and not abstained:  # text that is no answer ("::::"): an answer naming no entity, counted as such
        items = [lines[0].strip()]
    return Parsed(tuple(dict.fromkeys(items)), abstained=abstained)


def parse_yes_no(text: str) -> str | None:
    """"yes" or "no" as the first word of a generation's answer says it ("Yes, it is.", "False"); None when it
    says neither."""
    lines = answer_lines(text)
    word = re.match(r"\W*([A-Za-z]*)", lines[0]).group(1).lower() if lines else ""
    return "yes" if word in _YES else "no" if word in _NO else None


def generation_fields(extra: dict) -> dict:
    """The fields of `GENERATION_FIELDS` a generating predictor's `Prediction.extra` holds (none for a ranking one)."""
    return {key: extra[key] for key in GENERATION_FIELDS if key in extra} if GENERATED in extra else {}


def link_items(items: tuple[str, ...] | list[str], index: LabelIndex) -> list[tuple[str, str | None]]:
    """(item, entity id or None) per item: None where it names no entity, or several."""
    return [(item, _link(item, index)) for item in items]


def _link(item: str, index: LabelIndex) -> str | None:
    resolved = index.resolve(item)
    return None if resolved == item.strip() else resolved
