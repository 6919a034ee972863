"""Generated text read as one answer or a set, abstentions, and linking to entities by label and alias."""

from __future__ import annotations

import pytest

from eval.answer_text import Parsed, link_items, parse_generation
from eval.disambiguate import LabelIndex


@pytest.mark.parametrize(("text", "many", "expected"), [
    (" Paris.\nQ: Where was Rome founded?\nA: Italy", False, Parsed(("Paris",))),
    ("Paris. It is the capital of France.", False, Parsed(("Paris",))),
    ("Answer: Florence", False, Parsed(("Florence",))),
    ("\n\n  the United States of America  ", False, Parsed(("the United States of America",))),
    ("Trinidad and Tobago", False, Parsed(("Trinidad and Tobago",))),
    ("France, Germany and Spain", False, Parsed(("France, Germany and Spain",))),
    ("France, Germany, and Spain.", True, Parsed(("France", "Germany", "Spain"))),
    ("Belgium; Luxembourg; France\nnext line", True, Parsed(("Belgium", "Luxembourg", "France"))),
    ("- Belgium\n- Luxembourg\n* France\nSome prose after", True, Parsed(("Belgium", "Luxembourg", "France"))),
    ("1. NYSE\n2) NASDAQ", True, Parsed(("NYSE", "NASDAQ"))),
    ("Paris, Paris, Lyon", True, Parsed(("Paris", "Lyon"))),
    ("None", True, Parsed((), abstained=True)),
    ("None.", False, Parsed((), abstained=True)),
    ("I don't know", False, Parsed((), abstained=True)),
    ("Unknown\nQ: next", True, Parsed((), abstained=True)),
    ("", True, Parsed(())),
    ("   \n \n", False, Parsed(())),
    ("N/A, none", True, Parsed((), abstained=True)),
])
def test_parse_generation(text, many, expected):
    assert parse_generation(text, many) == expected


def test_linking_by_label_then_alias_then_case_and_and_splits():
    index = LabelIndex({"Q142": "France", "Q183": "Germany", "Q754": "Trinidad and Tobago", "Q30": "United States"},
                       {"Q30": ["USA", "United States of America"], "Q183": ["Federal Republic of Germany"]})
    items = ("France", "USA", "federal republic of germany", "Trinidad and Tobago", "France and Germany",
             "Atlantis", "Atlantis and France")
    assert link_items(items, index) == [("France", "Q142"), ("USA", "Q30"), ("federal republic of germany", "Q183"),
                                        ("Trinidad and Tobago", "Q754"), ("France", "Q142"), ("Germany", "Q183"),
                                        ("Atlantis", None), ("Atlantis and France", None)]


@pytest.mark.parametrize("many", [False, True])
def test_text_that_holds_no_answer_is_an_answer_naming_no_entity(many):
    """"::::" is neither an abstention nor nothing: it is kept as the answer, so the unlinked rate counts it."""
    parsed = parse_generation("::::::::\n", many=many)
    assert parsed == Parsed(("::::::::",), abstained=False)
    index = LabelIndex({"Q90": "Paris"}, {})
    assert link_items(parsed.items, index) == [("::::::::", None)]
