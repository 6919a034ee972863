"""`--compat lama`: the data rules of LAMA's released code, where they differ from this project's.

LAMA's `scripts/batch_eval_KB_completion.py` (template mode, used for T-REx and Google-RE):
- facts are deduplicated by (sub_label, obj_label) after filtering, keeping the first, so two
  Wikidata entities with one label count once (`lama_dedup`); the template and the subject
  label are `strip()`ped when the prompt is built (`lama_prompt`);
- a Google-RE judgment other than "yes" (e.g. "skip") counts as "no", and a fact is skipped when
  "no" votes outnumber "yes" votes (`eval.lama.load_google_re(..., compat="lama")`).
Without compat, facts are identified by Wikidata ids (see `eval.lama`), which keeps 23 more
T-REx facts for bert-base-cased with the common vocabulary (34,013 against LAMA's 33,990).
LAMA's tokenization around the mask is a masked-LM rule: `lm.masked` applies it.
"""

from __future__ import annotations

from collections.abc import Iterable

from eval.errors import ConfigError
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Fact

COMPAT_MODES = ("lama", "lm-pub-quiz")  # lm-pub-quiz: statement scoring's templating (`lm.statement`)


def check_compat(compat: str | None) -> str | None:
    """The compat mode, validated (None: this project's own rules)."""
    if compat is not None and compat not in COMPAT_MODES:
        raise ConfigError(f"--compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")
    return compat


def lama_dedup(facts: Iterable[Fact]) -> tuple[list[Fact], dict[str, int]]:
    """Template facts deduplicated by (relation, subject label, object label), first kept.

    Facts with a cloze sentence (SQuAD, ConceptNet) are kept as they are: LAMA deduplicates only
    in template mode. Returns the kept facts in their order and, per relation with removals, the
    number of facts removed. LAMA compares the labels as read, before any `strip()`.
    """
    kept: list[Fact] = []
    removed: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    for fact in facts:
        if fact.cloze is None:
            key = (fact.relation, fact.subject.label, fact.object.label)
            if key in seen:
                removed[fact.relation] = removed.get(fact.relation, 0) + 1
                continue
            seen.add(key)
        kept.append(fact)
    return kept, removed


def lama_prompt(template: str, known: str, mask: str, slot: str = "object") -> str:
    """LAMA's `parse_template`: `template.strip()` with the stripped label at [X] and `mask` at [Y]."""
    given, asked = (SUBJECT_SLOT, OBJECT_SLOT) if slot == "object" else (OBJECT_SLOT, SUBJECT_SLOT)
    return template.strip().replace(given, known.strip()).replace(asked, mask)
