"""What a retrieval predictor read for one query, so its answers are as traceable as an extraction KB's.

A `retrieval` record keeps the ids of the paragraphs it read (`extra.retrieved`, in the order searched). Here each
id gets its BM25 score and text where the index is at hand, and each answer the first paragraph, in that order, whose
words hold it, with the sentence there: `copper` read from `brass#52`, "... rich in copper ...". Where the index is
not at hand (moved, rebuilt from other data, on Elasticsearch), only the ids are shown, and a note says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from eval.graphemes import boundary
from kb.text.analyzer import surface_tokens

SENTENCE_CHARS = 240
SHOWN_ANSWERS = 10  # answers traced to a paragraph (a page shows no more)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def window(text: str, phrase: str, width: int = SENTENCE_CHARS) -> str:
    """At most `width` characters of `text` around the first `phrase`, cut between words, an ellipsis where cut."""
    text = text.strip()
    if len(text) <= width:
        return text
    at = max(text.find(phrase), 0)
    start = max(0, min(at - (width - len(phrase)) // 2, len(text) - width))
    end = start + width
    if start and not text[start - 1].isspace():  # a word cut at the start: begin at the next one
        start = _next_word(text, start, at)
    if end < len(text) and not text[end].isspace():  # a word cut at the end: stop before it
        end = _previous_word_end(text, end, at + len(phrase))
    # a script without spaces (Japanese, Thai) is cut where the width falls: between the characters a reader sees
    start, end = boundary(text, start), boundary(text, end)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _next_word(text: str, start: int, limit: int) -> int:
    space = text.find(" ", start, limit)
    return start if space < 0 else space + 1


def _previous_word_end(text: str, end: int, limit: int) -> int:
    space = text.rfind(" ", limit, end)
    return end if space < 0 else space


def holds(text: str, label: str) -> bool:
    """Whether `text` holds `label` as whole words (as a reader finds a candidate there)."""
    words = surface_tokens(label)
    if not words:
        return False
    found = surface_tokens(text)
    n = len(words)
    return any(found[i:i + n] == words for i in range(len(found) - n + 1))


def answer_sentence(text: str, label: str) -> str | None:
    """The sentence of `text` holding `label` as whole words, at most `SENTENCE_CHARS` long; None where none does."""
    for sentence in _SENTENCES.split(text):
        if holds(sentence, label):
            return window(sentence, label)
    return window(text, label) if holds(text, label) else None


def marks(text: str, phrases: dict[str, str]) -> list[dict]:
    """The text as segments, each occurrence of a phrase as whole words marked with its role (rendered escaped, never
    as HTML)."""
    wanted = {p: role for p, role in phrases.items() if p.strip()}
    if not wanted:
        return [{"text": text, "mark": None}]
    # whole words only: an answer "US" is not marked inside "USA"
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(p)}(?!\w)" for p in sorted(wanted, key=len, reverse=True)))
    out, pos = [], 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            out.append({"text": text[pos:m.start()], "mark": None})
        out.append({"text": m.group(0), "mark": wanted[m.group(0)]})
        pos = m.end()
    if pos < len(text):
        out.append({"text": text[pos:], "mark": None})
    return out


def read_paragraphs(pids: Sequence[str], found: dict[str, tuple[float | None, str, str]],
                    answers: Sequence[str], subject: str = "") -> dict:
    """The paragraphs read (`pids`, in order; `found`: id -> (BM25 score, title, text) of those at hand) and, per
    answer, the first of them holding it and the sentence there: `{"paragraphs": [{id, title, score, text, segments,
    first_of}], "sources": {answer: {paragraph, sentence}}}`, `first_of` naming the answers a paragraph is the first
    to hold (a reader may add up several). A paragraph not at hand has only its id."""
    sources: dict[str, dict] = {}
    for label in dict.fromkeys(answers[:SHOWN_ANSWERS]):
        for pid in pids:
            if pid in found and (sentence := answer_sentence(found[pid][2], label)) is not None:
                sources[label] = {"paragraph": pid, "sentence": sentence}
                break
    paragraphs = []
    for pid in pids:
        if pid not in found:
            paragraphs.append({"id": pid, "title": None, "score": None, "text": None, "segments": None, "first_of": []})
            continue
        score, title, text = found[pid]
        first_of = [label for label, s in sources.items() if s["paragraph"] == pid]
        phrases = {label: "answer" for label in first_of}
        if subject:
            phrases[subject] = "subject"
        paragraphs.append({"id": pid, "title": title, "score": None if score is None else round(score, 3),
                           "text": text, "segments": marks(text, phrases), "first_of": first_of})
    return {"paragraphs": paragraphs, "sources": sources}


def from_hits(hits: Iterable) -> dict[str, tuple[float | None, str, str]]:
    """`found` for `read_paragraphs` from an index's hits."""
    return {h.paragraph.pid: (h.score, h.paragraph.title, h.paragraph.text) for h in hits}


def query_words(prompt: str, mask: str = "[MASK]") -> str:
    """The words a retrieval predictor searched for a recorded prompt: the prompt without its slot
    (`kb.text.retrieval.retrieval_text` of the query the prompt was made from)."""
    return re.sub(r"\s+", " ", prompt.replace(mask, " ")).strip()


def recorded_index(config: dict, corpus: str, name: str):
    """The index a run's retrieval predictor `name` read, opened, where it is at hand and holds what it held then;
    else None and why (the paragraphs are then shown by id only)."""
    from eval.errors import KbcError
    from kb.text.index import open_index
    from lm.loading import FILES_PREFIX

    described = ((config.get("predictor_configs") or {}).get(corpus) or {}).get(name) or {}
    info = described.get("index") if isinstance(described, dict) else None
    if not isinstance(info, dict) or not info.get("location"):
        return None, "the run records no index location"
    if info.get("backend", "tantivy") != "tantivy":
        return None, f"the index is {info.get('backend')}'s {info['location']!r}, not opened here"
    location = Path(str(info["location"]))
    if not location.exists():
        return None, f"the index {location} is not at hand"
    try:
        index = open_index("tantivy", location)
    except KbcError as exc:
        return None, f"the index {location} cannot be read: {exc}"
    stats = index.stats()
    recorded = (((config.get("predictor_specs") or {}).get(name) or {}).get("files") or {}).get("text_index")
    changed = (recorded is not None and recorded != FILES_PREFIX + index.fingerprint()[:16]) or \
        any(info.get(key) != stats.get(key) for key in ("paragraphs", "source", "data_versions") if key in info)
    if changed:
        index.close()
        return None, f"the index {location} was rebuilt since the run read it"
    return index, ""


def read_of_record(config: dict, corpus: str, name: str, record: dict) -> dict | None:
    """What a recorded retrieval answer read (`read_paragraphs`, plus `note` where the texts are not at hand); None
    for a record that keeps no `extra.retrieved`."""
    pids = ((record.get("extra") or {}) if isinstance(record.get("extra"), dict) else {}).get("retrieved")
    if not isinstance(pids, list):
        return None
    pids = [str(p) for p in pids]
    answers = [str(a[0]) for a in record.get("answers") or []]
    found: dict = {}
    index, note = recorded_index(config, corpus, name)
    if index is not None:
        with index:
            described = config["predictor_configs"][corpus][name]
            depth = int(described.get("k") or len(pids)) * 3 + 10  # as deep as the predictor searched
            hits = index.search(query_words(str(record.get("prompt") or "")), max(depth, len(pids)))
            found = {pid: v for pid, v in from_hits(hits).items() if pid in pids}
        if len(found) < len(pids):
            note = f"{len(pids) - len(found)} of the {len(pids)} paragraphs were not found again in the index"
    return {**read_paragraphs(pids, found, answers, str(record.get("subject") or "")), "note": note}
