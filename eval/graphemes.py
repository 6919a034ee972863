"""What a reader sees of a label as characters and columns: a shortened label is cut between the characters a reader
sees (grapheme clusters), never inside an emoji sequence, a flag, a Devanagari conjunct or a letter with its accent;
and a text table pads a label by the columns a terminal gives it (a CJK character takes two, a combining mark none),
not by its code points. Close to UAX #29's extended grapheme clusters and to wcwidth, without a dependency."""

from __future__ import annotations

import unicodedata

ZWJ = "\u200d"
_EXTEND_FORMAT = frozenset("\u200c\u200d\u200e\u200f\u061c\u2060\ufeff")  # invisible, no column of their own
_VIRAMA = 9  # the canonical combining class of a virama (Devanagari ्): it joins the next consonant to a conjunct


def _is_extend(char: str) -> bool:
    """A character that belongs to the one before it: a combining or spacing mark, a joiner, a variation selector,
    an emoji skin-tone modifier or tag."""
    code = ord(char)
    return (unicodedata.category(char) in ("Mn", "Me", "Mc") or char in _EXTEND_FORMAT
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F or code in (0xFF9E, 0xFF9F))  # and half-width kana's voicing marks


def _regional(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def _hangul(char: str) -> str | None:
    """The Hangul syllable type: L, V or T (a conjoining jamo), S (a syllable), else None."""
    code = ord(char)
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97F:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    return "S" if 0xAC00 <= code <= 0xD7A3 else None


def _joined(text: str, i: int) -> bool:
    """Whether `text[i]` belongs to the character a reader sees before it (no cluster boundary before index i)."""
    if i <= 0 or i >= len(text):
        return False
    char, prev = text[i], text[i - 1]
    if _regional(char) and _regional(prev):
        run = 0  # regional indicators before this one: two make one flag
        while i - run - 1 >= 0 and _regional(text[i - run - 1]):
            run += 1
        return run % 2 == 1
    return (_is_extend(char) or prev == ZWJ
            or (unicodedata.combining(prev) == _VIRAMA and unicodedata.category(char) == "Lo")
            or (_hangul(char) in ("V", "T") and _hangul(prev) is not None)
            or (_hangul(prev) == "L" and _hangul(char) in ("L", "S")))


def clusters(text: str) -> list[str]:
    """`text` as the characters a reader sees (extended grapheme clusters, closely)."""
    out: list[str] = []
    for i, char in enumerate(text):
        if out and _joined(text, i):
            out[-1] += char
        else:
            out.append(char)
    return out


def boundary(text: str, i: int) -> int:
    """The nearest index at or before `i` where `text` may be cut without splitting what a reader sees as one
    character (an emoji sequence, a Devanagari conjunct, a letter and its accent)."""
    while _joined(text, i):
        i -= 1
    return i


def shorten(text: str, limit: int) -> str:
    """`text` if it is at most `limit` characters a reader sees, else its first `limit - 1` and an ellipsis."""
    if len(text) <= limit:
        return text
    parts = clusters(text)
    return text if len(parts) <= limit else "".join(parts[:limit - 1]) + "…"


def columns(text: str) -> int:
    """The columns `text` takes in a terminal, as wcwidth counts them: two for a wide (CJK, Hangul, emoji)
    character, none for a combining mark or a format character, one for others (a Devanagari vowel sign ा too);
    an emoji sequence (joined, with a skin tone, in emoji presentation) or a flag takes two."""
    if text.isascii():
        return len(text)
    return sum(_cluster_columns(c) for c in clusters(text))


def _cluster_columns(cluster: str) -> int:
    first = cluster[0]
    if _regional(first) or "\ufe0f" in cluster or (len(cluster) > 1 and _columns(first) == 2 and (
            ZWJ in cluster or 0x1F3FB <= ord(cluster[1]) <= 0x1F3FF)):
        return 2  # a flag, an emoji presentation, an emoji ZWJ sequence or with a skin tone
    return sum(_columns(c) for c in cluster)


def _columns(char: str) -> int:
    if unicodedata.category(char) in ("Mn", "Me", "Cf") or _hangul(char) in ("V", "T"):
        return 0  # conjoining vowels and final consonants draw on the initial jamo
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def ljust(text: str, width: int) -> str:
    """`text` padded with spaces to `width` terminal columns."""
    return text + " " * max(0, width - columns(text))


def rjust(text: str, width: int) -> str:
    return " " * max(0, width - columns(text)) + text
