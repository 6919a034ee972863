"""The report's table of what asking a model by generation cost: queries by how each was answered, requests and
tokens, summed over the attempts that made the run (`bridge.run.usage_log`; a resumed run counts each request and
token once; a local model sends no request: its column counts generations)."""

from __future__ import annotations

from bridge.report.page import Table

COLUMNS = (("asked", "asked"), ("cached", "from the cache"), ("shared", "sharing a prompt"),
           ("sent", "requests sent (local: generations)"), ("retried", "retried"), ("failed", "failed"),
           ("prompt_tokens", "prompt tokens"), ("completion_tokens", "completion tokens"),
           ("empty", "empty text"), ("cut", "cut at max_new_tokens"))


def usage_table(usage: list[tuple[str, str, dict]], unrecorded: dict[str, int] | None = None) -> Table:
    """One row per generating predictor and corpus: its answered queries add up (asked + from another run's cache
    + sharing another query's prompt), then what the requests cost, then how many answers were empty text or cut
    at max_new_tokens (scored as written, so the rates do not show them; 0 where an older run kept no count).
    An attempt of an earlier version, or under Ray, added its counts when it ended: `unrecorded` (shown name ->
    such attempts killed first) says whose counts leave some out, so that they are not read as the whole run's."""
    rows = []
    for shown, corpus, spent in usage:
        counts = [int(spent.get(key) or 0) for key, _ in COLUMNS]
        rows.append([shown, corpus, str(sum(counts[:3])), *map(str, counts)])
    caption = ("Queries, requests and tokens of each predictor answering by generation (summed over the attempts "
               "that made the run; a query a resumed attempt read back from the run's own cache counts once), and "
               "its answers that were empty text or cut at max_new_tokens (scored as written)")
    missing = {shown: n for shown, n in (unrecorded or {}).items() if n and shown in {u[0] for u in usage}}
    if missing:
        listed = ", ".join(f"{shown} {n}" for shown, n in missing.items())
        caption += (f". Attempts killed before they could add their counts (made by an earlier version of kbc, or "
                    f"under --executor ray, which add them as they end; config.json's runs log records no end for "
                    f"them) are left out, so these rows may count less than the run asked, sent and answered: "
                    f"{listed}")
    return Table(["predictor", "corpus", "queries answered", *(head for _, head in COLUMNS)], rows, caption)
