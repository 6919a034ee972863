"""Text holding a file name Python could not decode, written into UTF-8 files (config.json, caches, report pages).

Python keeps the bytes of such a name as surrogates (U+DC80-U+DCFF): under a C locale without UTF-8 mode every
byte past ASCII, under any locale a byte that is not UTF-8 (a folder named in Latin-1). Strict UTF-8 refuses them;
written raw, the file would no longer be UTF-8. The `NAME_BYTES` error handler writes bytes that spell UTF-8 text
as that text (`donn\\udcc3\\udca9es` -> `données`, the name the file system has) and any other byte as a JSON
escape (`\\udce9`), which `json.loads` reads back as the same surrogate and the file stays UTF-8."""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Iterable

from eval.labels import nfc

NAME_BYTES = "kbc-name-bytes"


def escaped_bytes(text: str) -> bytes | None:
    """The bytes `text` stands for where it is all surrogates Python made of undecodable bytes, else None."""
    if all(0xDC80 <= ord(ch) <= 0xDCFF for ch in text):
        return bytes(ord(ch) - 0xDC00 for ch in text)
    return None


def _name_bytes(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    raw = escaped_bytes(text)
    if raw is not None:
        try:
            raw.decode("utf-8")
            return raw, exc.end
        except UnicodeDecodeError:
            pass
    return "".join(f"\\u{ord(ch):04x}" for ch in text), exc.end


codecs.register_error(NAME_BYTES, _name_bytes)


# names Windows keeps for devices: `CON.jsonl` or `nul.txt` cannot be a file there, whatever the suffix or case
WINDOWS_DEVICES = frozenset(["CON", "PRN", "AUX", "NUL", *(f"{port}{n}" for port in ("COM", "LPT")
                                                          for n in "123456789¹²³")])


def windows_device(name: str) -> bool:
    """Whether a file or folder named `name` (with any suffix) would name a device on Windows, not a file."""
    return name.split(".")[0].rstrip(" ").upper() in WINDOWS_DEVICES


def case_clash(names: Iterable[str]) -> tuple[str, str] | None:
    """The first two of `names` that differ only in case, which a case-insensitive file system (macOS, Windows)
    takes for one file; None where there are none."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            return other, name
    return None


def ascii_stem(text: str, kept: str) -> str:
    """A file name stem for `text`, given `kept`, what is left of it once each run of characters a name may not hold
    is replaced: `kept` itself where `text` is ASCII, else `kept` (perhaps empty) and 8 hex digits of the SHA-256
    of `text` in NFC, joined by `_` (`首都` -> `<8 hex digits>`, `café` -> `caf_<8 hex digits>`).

    Names in other scripts would all be left as one (`首都` and `出身地` as nothing); kept in their own script they
    would reach file systems that list them decomposed (macOS), archives and links that mangle them. An ASCII stem
    needs none of that, and every ASCII text keeps the stem it always had. NFC: `é` typed as one character or as
    `e` and an accent is one name, as it is one file on macOS."""
    if text.isascii():
        return kept
    digest = hashlib.sha256(nfc(text).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{kept}_{digest}" if kept else digest
