"""A tiny LM-KBC 2024 data folder (train, val, templates) with hand-checked gold sets and predictions."""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATES = """Relation,PromptTemplate
countryLandBordersCountry,{subject_entity} shares a land border with {mask_token}.
personHasCityOfDeath,{subject_entity} died in the city of {mask_token}.
seriesHasNumberOfEpisodes,The series {subject_entity} has {mask_token} episodes.
awardWonBy,{subject_entity} was won by {mask_token}.
companyTradesAtStockExchange,{subject_entity} shares can be traded at {mask_token}.
"""


def row(sid: str, subject: str, relation: str, ids: list[str], labels: list[str]) -> dict:
    return {"SubjectEntityID": sid, "SubjectEntity": subject, "ObjectEntitiesID": ids, "ObjectEntities": labels,
            "Relation": relation}


# val: 8 pairs over three relations; PREDICTED holds each pair's prediction (by fact uid)
VAL = [
    row("Q101", "Aland", "countryLandBordersCountry", ["Q1", "Q2"], ["Bland", "Cland"]),
    row("Q102", "Island", "countryLandBordersCountry", [], []),
    row("Q103", "Dland", "countryLandBordersCountry", ["Q4"], ["Eland"]),
    row("Q104", "Fland", "countryLandBordersCountry", [], []),
    row("Q105", "Show One", "seriesHasNumberOfEpisodes", ["12"], ["12"]),
    row("Q106", "Show Two", "seriesHasNumberOfEpisodes", ["10"], ["10"]),
    row("Q107", "Acme", "companyTradesAtStockExchange", ["Q6"], ["Big Board"]),
    row("Q108", "Bcme", "companyTradesAtStockExchange", ["Q7", "Q8"], ["Small Board", "Mid Board"]),
]
PREDICTED = {
    "countryLandBordersCountry:Q101": ["Q1", "Q3"],
    "countryLandBordersCountry:Q102": [],
    "countryLandBordersCountry:Q103": [],
    "countryLandBordersCountry:Q104": ["Q5"],
    "seriesHasNumberOfEpisodes:Q105": ["12"],
    "seriesHasNumberOfEpisodes:Q106": ["10", "12", "10"],
    "companyTradesAtStockExchange:Q107": [],
    "companyTradesAtStockExchange:Q108": [],
}
# train: Q1 is "Bland" by elimination (Q101 is the subject "Aland"); Q7 and Q8 stay open
TRAIN = [
    row("Q2", "Cland", "countryLandBordersCountry", ["Q1", "Q101"], ["Aland", "Bland"]),
    row("Q109", "Ccme", "companyTradesAtStockExchange", ["Q7", "Q8"], ["Mid Board", "Small Board"]),
]


def write_lmkbc(root: Path, val: list[dict] | None = None, train: list[dict] | None = None) -> Path:
    """The folder layout of lm-kbc/dataset2024's data: train.jsonl, val.jsonl, prompt_templates/."""
    (root / "prompt_templates").mkdir(parents=True, exist_ok=True)
    (root / "prompt_templates" / "masked_prompts.csv").write_text(TEMPLATES, encoding="utf-8")
    for name, rows in (("val", VAL if val is None else val), ("train", TRAIN if train is None else train)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def submission_lines(rows: list[dict], predicted: dict[str, list[str]]) -> str:
    """The prediction file the challenge's evaluate.py reads, for the same pairs."""
    return "".join(json.dumps({"SubjectEntity": r["SubjectEntity"], "Relation": r["Relation"],
                               "ObjectEntitiesID": predicted[f"{r['Relation']}:{r['SubjectEntityID']}"]}) + "\n"
                   for r in rows)
