"""How `kbc show` prints one unit of a run: the fact's head lines, each predictor's gold ranks and top answers, the
prompt as sent, in text and as `--json` holds them. Shared by every experiment's view."""

from __future__ import annotations

from bridge.run.directory import RunDir
from eval.answer_text import GENERATED

SHOW_TOP = 5  # answers per predictor in the text view (`--json` holds every saved answer)


def ranked_entry(run: RunDir, corpus: str, name: str, record: dict) -> dict:
    """An answered LAMA-style record as `--json` prints it: the gold's ranks (in the list and exact, raw and
    filtered), a generation's fields, the scale of the scores and every saved answer."""
    entry = {"status": "answered", "rank_raw": record.get("rank_raw"), "rank_filtered": record.get("rank_filtered")}
    for key in ("rank_exact_raw", "rank_exact_filtered", "extra", "prompt", "prompt_text", "context", "context_parts",
                GENERATED, "parsed", "unlinked", "abstained", "em_raw", "em_filtered", "predicted"):
        if key == "prompt" and GENERATED not in record:
            continue
        if key in record:
            entry[key] = record[key]
    scale = _score_scale(run, corpus, name)
    if scale is not None:
        entry["score_scale"] = scale
    entry["answers"] = answer_dicts(record)
    if _described(run, corpus, name).get("lowercased") is True and isinstance(record.get("gold"), str):
        entry["gold_as_answered"] = record["gold"].lower()  # an uncased model answers "wien" for gold "Wien"
    from bridge.analysis.retrieved import read_of_record

    read = read_of_record(run.config, corpus, name, record)
    if read is not None:  # a retrieval record: the paragraphs it read (`extra.retrieved`), texts where at hand
        entry["read"] = read
    return entry


def answer_dicts(record: dict) -> list[dict]:
    """A record's saved answers (`[label, score, id]`) as `--json` prints them."""
    return [{"label": ans[0], "score": ans[1], "id": ans[2] if len(ans) > 2 else None}
            for ans in record.get("answers") or []]


def _described(run: RunDir, corpus: str, predictor: str) -> dict:
    """What the run config recorded of a predictor on a corpus (`predictor_configs`), {} where nothing."""
    described = ((run.config.get("predictor_configs") or {}).get(corpus) or {}).get(predictor)
    return described if isinstance(described, dict) else {}


def _score_scale(run: RunDir, corpus: str, predictor: str) -> str | None:
    """The scale a predictor declared its scores on (`score_scale`, recorded as `scores`), None where unrecorded."""
    scale = _described(run, corpus, predictor).get("scores")
    return scale if isinstance(scale, str) else None


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


def indented(head: str, text: str) -> list[str]:
    """`head` then `text`, its further lines (a prompt of several) lined up under its first."""
    return [(head if i == 0 else " " * len(head)) + line for i, line in enumerate(text.split("\n"))]


def with_id(label, id_) -> str:
    return f"{label} ({id_})" if id_ else str(label)


def fact_head(fact: dict) -> list[str]:
    """A fact's first lines: corpus, relation and uid; its subject, its prompt (where `fact` has one: one prompt asks
    it), its gold and the other valid objects (where it has them: a filtered setting scores it)."""
    prompt = fact.get("prompt")
    lines = [f"{fact['corpus']} / {fact['relation']} / uid {fact['uid']}"]
    for label, value in (("subject", with_id(fact["subject"], fact["subject_id"])),
                         *([("prompt", prompt if isinstance(prompt, str) else "-")] if "prompt" in fact else []),
                         ("gold", with_id(fact["gold"], fact["gold_id"])),
                         *([("other valid", ", ".join(fact["other_valid"] or []) or "-")] if "other_valid" in fact
                           else [])):
        lines += indented(f"  {label + ':':<13}", value)
    return lines


def gold_ranks_text(entry: dict) -> str:
    """The gold's ranks of a `ranked_entry`: in the saved list, and exact where recorded, raw and filtered."""
    if entry["rank_raw"] is None and entry["rank_filtered"] is None:
        ranks = "gold not among the answers"
    else:
        ranks = f"gold rank raw {_rank(entry['rank_raw'])}, filtered {_rank(entry['rank_filtered'])}"
    if "rank_exact_raw" in entry or "rank_exact_filtered" in entry:
        ranks += (f"; exact raw {_rank(entry.get('rank_exact_raw'))}, "
                  f"filtered {_rank(entry.get('rank_exact_filtered'))}")
    return ranks + (f" (score: {entry['score_scale']})" if "score_scale" in entry else "")


def ranked_lines(answers: list[dict], golds: set, pad: str) -> list[str]:
    """The top answers with their scores, a gold one marked, and how many more `--json` shows."""
    lines = [] if answers else [f"{pad}(no answers)"]
    for i, ans in enumerate(answers[:SHOW_TOP], 1):
        score = ans["score"]
        score = f"{score + 0.0:.4g}" if isinstance(score, (int, float)) else str(score)  # + 0.0: no "-0"
        mark = "  <- gold" if ans["label"] in golds else ""
        lines.append(f"{pad}{i}. {ans['label']}  {score}{mark}")
    if len(answers) > SHOW_TOP:
        lines.append(f"{pad}({len(answers) - SHOW_TOP} more; --json shows every answer)")
    return lines


def not_answered(record: dict | None) -> dict | None:
    """A predictor's entry for a unit it did not run or dropped; None where it answered."""
    if record is None:
        return {"status": "not run"}
    if "dropped" in record:
        return {"status": "dropped", "reason": record["dropped"]}
    return None


def prompt_text(prompt: str | list | None) -> str:
    """A prompt as sent: a sentence, or a chat's messages one a line (`[role] content`)."""
    return prompt if isinstance(prompt, str) else "\n".join(f"[{m['role']}] {m['content']}" for m in prompt or [])


READ_CHARS = 160  # of a read paragraph or context in the text view (`--json` holds it whole)


def context_lines(entry: dict, pad: str) -> list[str]:
    """The evidence context the query was asked with (`--context`), cut, with its length and texts joined."""
    if "context" not in entry and "context_parts" not in entry:
        return []
    context = str(entry.get("context") or "")
    if not context:
        return [f"{pad}context: none (asked on the prompt alone)"]
    parts = entry.get("context_parts")
    joined = f", {parts} text{'s' if parts != 1 else ''}" if isinstance(parts, int) else ""
    cut = context if len(context) <= READ_CHARS else context[:READ_CHARS].rstrip() + " ..."
    return [f"{pad}context ({len(context):,} characters{joined}; --json holds it whole): {cut}"]


def read_lines(entry: dict, pad: str) -> list[str]:
    """What an answer read: its query's evidence context (`context_lines`), and the paragraphs a retrieval answer
    read, in the order searched: id, BM25 score and text where the index is at hand (else the ids and why), and
    the paragraph and sentence each answer shown was read from."""
    context = context_lines(entry, pad)
    read = entry.get("read")
    if not read:
        return context
    if not read:
        return []
    if not read["paragraphs"]:
        return [*context, f"{pad}read: no paragraph"]
    from bridge.analysis.retrieved import window

    lines = [*context, f"{pad}read (extra.retrieved, in the order searched"
             + (f"; {read['note']}" if read["note"] else "") + "):"]
    for i, p in enumerate(read["paragraphs"], 1):
        score = f"  BM25 {p['score']:.4g}" if p["score"] is not None else ""
        first = f"  first holds {', '.join(p['first_of'])}" if p["first_of"] else ""
        lines.append(f"{pad}  {i}. {p['id']}{score}{first}")
        if p["text"] is not None:
            lines.append(f"{pad}     {window(p['text'], (p['first_of'] or [''])[0], READ_CHARS)}")
    for label, source in list(read["sources"].items())[:SHOW_TOP]:
        lines += indented(f"{pad}{label} <- {source['paragraph']}: ", f"\"{source['sentence']}\"")
    return lines
