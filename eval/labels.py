"""Labels as the tool compares them: answers match gold by label text, so two spellings a reader cannot tell apart
must be one label. `é` typed as one code point (NFC, what most editors write) and as `e` plus a combining accent
(NFD, what macOS file names and some exports give) are one label in Unicode NFC; a zero-width space, word joiner or
byte-order mark at either end of a cell (left by copying from a web page or a spreadsheet) shows nothing. Without
this, Freq counts the spellings as two objects and a KB or LM answer in one spelling misses gold in the other."""

from __future__ import annotations

import re
import unicodedata

# whitespace and the invisible format characters that carry no meaning at a label's ends: zero-width space, joiners
# (meaningful inside a Persian or Hindi word, joining nothing at its ends), word joiner, byte-order mark, and the
# directional marks LRM, RLM and ALM that right-to-left keyboards and editors type around a word (kept inside)
_INVISIBLE = "\\s\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u061c"
_ENDS = re.compile(f"^[{_INVISIBLE}]+|[{_INVISIBLE}]+$")


def clean_label(text: str) -> str:
    """`text` in NFC without surrounding spaces, zero-width characters or directional marks."""
    if text.isascii():  # most labels: already NFC, and no zero-width character to strip
        return text.strip()
    return _ENDS.sub("", unicodedata.normalize("NFC", text))


def nfc(text: str) -> str:
    """`text` in NFC only, where spaces are part of what a model is asked (BEAR's labels, as lm-pub-quiz reads them)."""
    return unicodedata.normalize("NFC", text)


# bidirectional embeddings, overrides and isolates: "\u202eaet" shows as "tea" (labels of other scripts need none)
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


# the line and paragraph separators (categories Zl, Zp): line breaks as much as "\n" to an editor or a terminal
LINE_SEPARATORS = frozenset("\u2028\u2029")

# the C0 and C1 controls (Unicode category Cc), the line separators and the bidirectional controls, one pattern
# searched in C
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(LINE_SEPARATORS | BIDI_CONTROLS)) + "]")


def control_character(text: str) -> str | None:
    """The first control character of `text` as `U+001B`, or None: a C0/C1 control, a line or paragraph separator
    (U+2028, U+2029) or a bidirectional override. A
    label holding one prints as another label ("tea" and "tea\\x1b[8m" or "\\u202eaet" look alike; "\\r" hides what
    comes before it) and an escape sequence reaches the terminal of whoever reads `kbc show` or a table."""
    bad = _CONTROL.search(text)
    return None if bad is None else f"U+{ord(bad.group()):04X}"


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}")


def printable(text: str, lines: bool = False) -> str:
    """`text` with its control characters shown escaped (`\\x1b`, `\\r`, `\\u202e`), as a text view prints data: a
    template or generated answer may hold them (only labels are refused with them), and printed raw an escape
    sequence or `\\r` rewrites the reader's terminal. With `lines`, newlines stay: the view's own line breaks."""
    if lines:
        return "\n".join(_CONTROL.sub(_escaped, line) for line in text.split("\n"))
    return _CONTROL.sub(_escaped, text)


# the accents of Latin, Greek and Cyrillic letters (Combining Diacritical Marks); the marks of other scripts (a
# Devanagari virama, a kana voicing mark) make other letters and are kept
_ACCENTS = re.compile("[\u0300-\u036f]")


def search_key(text: str) -> str:
    """How a subject typed into a search is matched when no label is the same text in another case: case and width
    folded and without accents, so the capitals a language writes find the label: Greek drops accents on capitals
    (ΚΥΠΡΟΥ is Κύπρου) and Turkish dots its capital I (İZMİR, and IĞDIR for Iğdır: `casefold` alone keeps ı and
    the dot of İ apart from i)."""
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", _ACCENTS.sub("", folded).replace("ı", "i"))
