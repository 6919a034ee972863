"""Generated text read as one answer or a set, abstentions, and linking to entities by label and alias."""

from __future__ import annotations

import pytest

from eval.answer_text import Parsed, link_items, parse_generation, parse_yes_no
from eval.disambiguate import LabelIndex
from eval.generated_scores import answer_hits


@pytest.mark.parametrize(("text", "many", "expected"), [
    (" Paris.\nQ: Where was Rome founded?\nA: Italy", False, Parsed(("Paris",))),
    ("Paris. It is the capital of France.", False, Parsed(("Paris",))),
    ("Answer: Florence", False, Parsed(("Florence",))),
    ("\n\n  the United States of America  ", False, Parsed(("the United States of America",))),
    ("France, Germany and Spain", False, Parsed(("France",))),
    ("France and Germany", False, Parsed(("France",))),
    ("- France\n- Germany", False, Parsed(("France",))),
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


@pytest.mark.parametrize(("text", "expected"), [
    ("<think>\nMaybe Berlin, or Rome.\n</think>\n\nParis", Parsed(("Paris",))),
    ("Okay, the user asks. Berlin?\n</think>\nParis.", Parsed(("Paris",))),  # the opening tag was the prompt's
    ("<THINKING>Rome</THINKING> Paris and Lyon", Parsed(("Paris",))),
    ("<think>\nThe user asks about Berlin. Hmm", Parsed(())),  # cut while thinking: no answer came
    ("<think>Hmm.</think>\nI don't know.", Parsed((), abstained=True)),
])
def test_a_reasoning_models_thoughts_are_no_answer(text, expected):
    assert parse_generation(text, False) == expected


def test_a_yes_or_no_is_read_after_the_thoughts():
    assert parse_yes_no("<think>\nNo, wait.\n</think>\nYes, it is.") == "yes"
    assert parse_yes_no("<think>\nYes, probably") is None


def test_linking_by_label_then_alias_then_case():
    index = LabelIndex({"Q142": "France", "Q183": "Germany", "Q754": "Trinidad and Tobago", "Q30": "United States"},
                       {"Q30": ["USA", "United States of America"], "Q183": ["Federal Republic of Germany"]})
    items = ("France", "USA", "federal republic of germany", "Trinidad and Tobago", "Atlantis")
    assert link_items(items, index) == [("France", "Q142"), ("USA", "Q30"), ("federal republic of germany", "Q183"),
                                        ("Trinidad and Tobago", "Q754"), ("Atlantis", None)]


def test_linking_ignores_how_an_accent_is_spelled():
    """LM-KBC's gold labels written in NFD (e with a combining accent) never linked the NFC text models write: an
    answer naming the gold entity scored as unlinked, and F1 fell."""
    index = LabelIndex({"Q1": "Jose\u0301 Saramago", "Q2": "S\u00e3o Paulo"}, {"Q2": ["Sa\u0303o Paulo city"]})
    items = ("Jos\u00e9 Saramago", "jos\u00e9 saramago", "Sa\u0303o Paulo", "S\u00e3o Paulo city")
    assert link_items(items, index) == [(items[0], "Q1"), (items[1], "Q1"), (items[2], "Q2"), (items[3], "Q2")]


@pytest.mark.parametrize("many", [False, True])
def test_text_that_holds_no_answer_is_an_answer_naming_no_entity(many):
    """"::::" is neither an abstention nor nothing: it is kept as the answer, so the unlinked rate counts it."""
    parsed = parse_generation("::::::::\n", many=many)
    assert parsed == Parsed(("::::::::",), abstained=False)
    index = LabelIndex({"Q90": "Paris"}, {})
    assert link_items(parsed.items, index) == [("::::::::", None)]


@pytest.fixture(scope="module")
def p19_p36(lama_dir):
    """One index over the entities of T-REx's P19 and P36 together (what a KMIR question of a relation neither holds
    links by on a run of the two): the labels of their entities, X-FACTR's aliases of them, and every form of that
    alias list as a name; the rules below hold for any set of entities, and this one has the ambiguities they need."""
    from bridge.predictors.generation import label_indexes
    from bridge.predictors.registry import PredictorContext
    from eval.corpora import load_corpus

    corpus = load_corpus("trex", lama_dir, ["P19", "P36"])
    return label_indexes(PredictorContext(corpus, None, lama_dir, lama_dir)).of("P31"), corpus


def test_the_labels_the_answer_forms_below_rest_on(p19_p36):
    _, corpus = p19_p36
    ids: dict[str, set[str]] = {}
    for f in corpus.facts:
        for e in (f.subject, f.object):
            ids.setdefault(e.label, set()).add(e.id)
    assert ids["Tokyo"] == {"Q1490"} and ids["Berlin"] == {"Q64"} and ids["London"] == {"Q84"}
    assert ids["Lincoln"] == {"Q28260", "Q180057"} and ids["Philadelphia"] == {"Q1345", "Q935334"}
    assert ids["Bosnia and Herzegovina"] == {"Q225"}
    assert "Washington, D.C." not in ids and "Trinidad and Tobago" not in ids  # labels of other LAMA relations


@pytest.mark.parametrize("text", [" Tokyo, Berlin", " - Tokyo\n- Berlin", " Tokyo and Berlin", "Tokyo; Berlin.",
                                  "Answer: Tokyo, and Berlin", " 1. Tokyo\n2. Berlin", "Tokyo"])
def test_one_answer_written_as_a_list_in_any_form_is_its_first_item(p19_p36, text):
    index, _ = p19_p36
    parsed = parse_generation(text, False, index)
    assert parsed == Parsed(("Tokyo",))
    assert link_items(parsed.items, index) == [("Tokyo", "Q1490")]
    assert parse_generation(text, True, index) == Parsed(("Tokyo",) if text == "Tokyo" else ("Tokyo", "Berlin"))


@pytest.mark.parametrize(("text", "first"), [
    (" Lincoln and London", "Lincoln"),  # an ambiguous label (Nebraska's capital, and Lincoln in England) is a name
    (" Lincoln, London", "Lincoln"),
    (" - Lincoln\n- London", "Lincoln"),
    ("Athens and London", "Athens"),
    ("Guadalajara and London", "Guadalajara"),
    ("Inverness and London", "Inverness"),
    ("Warsaw and London", "Warsaw"),
])
def test_a_part_naming_several_entities_is_an_answer_compared_by_label(p19_p36, text, first):
    index, _ = p19_p36
    parsed = parse_generation(text, False, index)
    assert parsed == Parsed((first,))
    assert link_items(parsed.items, index) == [(first, None)]
    assert answer_hits([first, 1.0, None], first, "Q28260") == (True, True)


@pytest.mark.parametrize(("text", "many", "expected", "linked"), [
    ("Washington, D.C.", False, ("Washington, D.C.",), [None]),  # a name of the alias list, no entity of P19/P36
    ("Washington, D.C., Berlin", True, ("Washington, D.C.", "Berlin"), [None, "Q64"]),
    ("Trinidad and Tobago", False, ("Trinidad and Tobago",), [None]),
    ("Bosnia and Herzegovina", False, ("Bosnia and Herzegovina",), ["Q225"]),
    ("Bosnia and Herzegovina and Serbia", True, ("Bosnia and Herzegovina", "Serbia"), ["Q225", "Q403"]),
    ("Lincoln, Nebraska", False, ("Lincoln, Nebraska",), ["Q28260"]),  # an alias of one of the two Lincolns
    ("Tokyo, Japan", False, ("Tokyo",), ["Q1490"]),
    ("D.C.", False, ("D.C.",), [None]),
    ("Paris.", False, ("Paris",), [None]),  # its closing full stop is no part of it; Paris names several
])
def test_a_stretch_that_names_an_entity_stays_whole(p19_p36, text, many, expected, linked):
    index, _ = p19_p36
    parsed = parse_generation(text, many, index)
    assert parsed == Parsed(expected)
    assert [key for _, key in link_items(parsed.items, index)] == linked


@pytest.mark.parametrize(("text", "linked", "gold", "gold_id"), [
    ("berlin", "Q64", "Berlin", "Q64"),
    ("philadelphia", None, "Philadelphia", "Q1345"),
    ("dover", None, "Dover", "Q179224"),
    ("harrisburg", None, "Harrisburg", "Q79652"),
    ("athens", None, "Athens", "Q1524"),
    ("PHILADELPHIA", None, "Philadelphia", "Q1345"),
])
def test_a_lower_case_answer_scores_as_its_label_whether_it_links_or_not(p19_p36, text, linked, gold, gold_id):
    index, _ = p19_p36
    ((item, key),) = link_items(parse_generation(text, False, index).items, index)
    assert (item, key) == (text, linked)
    label = {"Q64": "Berlin"}.get(key, item)  # a linked answer carries its entity's label
    assert answer_hits([label, 1.0, key], gold, gold_id) == (True, True)


def test_a_label_compared_ignoring_case_counts_for_the_filtered_setting_too():
    assert answer_hits(["rome", 1.0, None], "Florence", "Q2044", {"Rome", "Turin"}) == (False, True)
    assert answer_hits(["Milan", 1.0, None], "Florence", "Q2044", {"Rome", "Turin"}) == (False, False)
    assert answer_hits(["Rome", 1.0, "Q220"], "Rome", "Q2044") == (False, False)  # ids decide where both have one


@pytest.mark.parametrize(("text", "expected"), [
    ("1,024 episodes", ("1,024 episodes",)),
    ("one hundred and twelve", ("one hundred and twelve",)),
    ("12, 13", ("12", "13")),
])
def test_a_number_keeps_its_own_comma_and_and(text, expected):
    assert parse_generation(text, True, numeric=True) == Parsed(expected)


@pytest.mark.parametrize(("text", "expected"), [
    (" Moscow, St. Petersburg, Kazan", ("Moscow", "St. Petersburg", "Kazan")),
    (" St. Louis", ("St. Louis",)),
    ("Mt. Everest and Dr. Seuss. Both are famous.", ("Mt. Everest", "Dr. Seuss")),
    ("Edward R. Murrow, Adela Rogers St. Johns, Richard Petty", ("Edward R. Murrow", "Adela Rogers St. Johns",
                                                                 "Richard Petty")),
    ("Kazan. It lies on the Volga, in Russia", ("Kazan",)),
    # a full stop inside a name the index knows ends nothing; the same stop in an unknown name does
    ("Wm. Wrigley Jr. Company, Mars", ("Wm. Wrigley Jr. Company", "Mars")),
    ("Wm. Wrigley Sr. Partners, Mars", ("Wm",)),
])
def test_a_full_stop_in_a_name_ends_no_answer(text, expected):
    index = LabelIndex({"Q1": "Wm. Wrigley Jr. Company", "Q2": "Mars"}, {})
    assert parse_generation(text, True, index) == Parsed(expected)


def _split_answers_trying_every_run(line: str, names, numeric: bool = False) -> list[str]:
    """`split_answers` as first written: every run of pieces from the left is tried, longest first."""
    from eval.answer_text import _NUMBER_SEPARATORS, _SEPARATORS, _clean, _name_in

    seps = list((_NUMBER_SEPARATORS if numeric else _SEPARATORS).finditer(line))
    starts, ends = [0, *(m.end() for m in seps)], [*(m.start() for m in seps), len(line)]
    out, i = [], 0
    while i < len(starts):
        j = len(starts) - 1
        while j > i and _name_in(line[starts[i]:ends[j]], names) is None:
            j -= 1
        item = _name_in(line[starts[i]:ends[j]], names) or _clean(line[starts[i]:ends[j]])
        if item:
            out.append(item)
        i = j + 1
    return out


@pytest.fixture(scope="module")
def lmkbc_val(lama_dir):
    """LM-KBC's validation rows and the index a generating predictor on `kbc run lmkbc` splits answers by."""
    import json

    from bridge.predictors.generation import _forms
    from eval.disambiguate import load_aliases
    from eval.lmkbc import alias_file, label_index, resolve_lmkbc_dir

    root = resolve_lmkbc_dir(lama_dir)
    rows = [json.loads(line) for line in (root / "val.jsonl").read_text().splitlines()]
    return rows, label_index(lama_dir, _forms(load_aliases(alias_file(root))))


def test_no_text_longer_than_the_longest_form_names_an_entity(lmkbc_val):
    """What `split_answers` skips runs by: case folding never shortens a character, so a form matched ignoring
    case is no shorter than the text; the longest form itself names one."""
    _, index = lmkbc_val
    assert all(len(chr(c).casefold()) >= 1 for c in range(0x110000))
    forms = [*(form for table, _ in index._tables for form in table), *(f for fs in index._names for f in fs)]
    longest = [form for form in forms if len(form) == index.longest]
    assert longest and all(index.names(form) for form in longest)
    assert not index.names(longest[0] + " x")


def test_answers_split_as_when_every_run_was_tried(lmkbc_val):
    """Every validation row's gold labels written as a list in several forms (separators, stray punctuation and
    spaces, a leading "and", numbers) split exactly as trying every run of pieces split them."""
    import random

    from eval.answer_text import split_answers

    rows, index = lmkbc_val
    rng = random.Random(0)
    seps = [", ", " and ", "; ", ",, ", " ,  and ", ". ", ", and ", ",", " ;and  "]
    lines = []
    for row in rows:
        objects = row["ObjectEntities"][:30]
        lines += [", ".join(objects), " and ".join(objects), "; ".join(objects)]
        noisy = [rng.choice(["", "*", '"', " ", "and ", "..."]) + o + rng.choice(["", ".", "  ", "'"]) for o in objects]
        lines.append("".join(o + rng.choice(seps) for o in noisy))
    lines += ["1,024 and 12, 3", ",,,,", " and and , ; ", "and France, and"]
    assert len(lines) == 4 * len(rows) + 4
    for line in lines:
        for numeric in (False, True):
            names = index.names if not numeric else (lambda _text: False)
            longest = index.longest if not numeric else 0
            assert split_answers(line, names, numeric, longest) == _split_answers_trying_every_run(line, names, numeric)


def test_a_long_list_asks_for_names_linearly_often(lmkbc_val):
    """awardWonBy's 657 gold labels as one line: every one an answer of its own, as written (the closing full
    stop of "Jr." or "Sr." kept: the labels name entities), read with a bounded number of look-ups per piece
    (trying every run asks about 200,000 times)."""
    from eval.answer_text import split_answers

    rows, index = lmkbc_val
    objects = max((r["ObjectEntities"] for r in rows), key=len)
    asked = []

    def names(text: str) -> bool:
        asked.append(text)
        return index.names(text)

    assert len(objects) == 657
    answers = split_answers(", ".join(objects), names, False, index.longest)
    assert answers == objects and sum(o.endswith(("Jr.", "Sr.")) for o in objects) == 15
    assert len(asked) < 30 * len(objects)


def test_a_names_own_closing_full_stop_is_kept(lmkbc_val):
    """"Martin Luther King Jr." is a label the LM-KBC data writes (in a row whose id and label lists differ in
    length, so tied to no id): an answer naming it keeps its full stop and matches the gold label as written; a
    sentence's full stop after a name without one is trimmed."""
    _, index = lmkbc_val
    assert parse_generation("Martin Luther King Jr., T. S. Eliot and I. M. Pei", True, index).items == (
        "Martin Luther King Jr.", "T. S. Eliot", "I. M. Pei")
    assert parse_generation("Martin Luther King Jr.", False, index).items == ("Martin Luther King Jr.",)
    assert parse_generation("Paris.", False, index).items == ("Paris",)
    # both forms known: the one written, full stop and all
    both = LabelIndex({"Q1": "Sammy Davis Jr."}, {"Q1": ["Sammy Davis Jr"]})
    assert parse_generation("Sammy Davis Jr., Paris", True, both).items == ("Sammy Davis Jr.", "Paris")
    assert parse_generation("Sammy Davis Jr, Paris", True, both).items == ("Sammy Davis Jr", "Paris")


def test_the_docs_name_every_abstention_the_parser_takes():
    """docs/generation.md lists the abstentions: each form it names is one, and each the parser takes is named."""
    import re
    from pathlib import Path

    from eval.answer_text import _NONE, is_abstention

    text = " ".join((Path(__file__).parents[1] / "docs" / "generation.md").read_text().split())
    sentence = text[text.index("An answer line (or every item of it) saying"):].split(" is an abstention")[0]
    named = {n.lower() for n in re.findall(r'"([^"]+)"', sentence) if n not in (".", "!")}
    assert named == set(_NONE), named ^ set(_NONE)
    assert all(is_abstention(n) and is_abstention(n.upper() + ".") for n in named)


def test_a_server_url_is_read_as_its_api_root_as_the_docs_say():
    from lm.served import api_root

    assert {url: api_root(url) for url in (
        "http://127.0.0.1:8011", "http://127.0.0.1:8011/", "http://127.0.0.1:8011/v1", "http://127.0.0.1:8011/v1/",
        "http://127.0.0.1:8011/v1/chat/completions", "http://127.0.0.1:8011/v1/completions")} == dict.fromkeys(
        ["http://127.0.0.1:8011", "http://127.0.0.1:8011/", "http://127.0.0.1:8011/v1", "http://127.0.0.1:8011/v1/",
         "http://127.0.0.1:8011/v1/chat/completions", "http://127.0.0.1:8011/v1/completions"],
        "http://127.0.0.1:8011/v1")


def test_the_unlinked_rate_counts_abstentions_and_empty_answers_as_zero_as_the_docs_say():
    """LAMA: 10 of 50 facts unlinked, 12 of them abstaining: 20%, not 10/38. LM-KBC: a pair's unlinked share,
    averaged over every pair, abstaining ones counting 0 (2 of 3, 1 of 1 and an abstention: (66.7 + 100 + 0) / 3)."""
    from eval.generated_scores import pooled_rate_rows, rate_cells

    def rec(parsed: list[str], unlinked: list[str], abstained: bool = False) -> dict:
        return {"relation": "P19", "parsed": parsed, "unlinked": unlinked, "abstained": abstained}

    lama = [rec(["x"], ["x"])] * 10 + [rec([], [], True)] * 12 + [rec(["Rome"], [])] * 28
    cells = rate_cells(lama)
    assert sum(cells["unlinked"]["P19"]) / 50 == 20.0 and sum(cells["abstain"]["P19"]) / 50 == 24.0
    pairs = [rec(["a", "b", "c"], ["a", "b"]), rec(["d"], ["d"]), rec([], [], True)]
    rows = {(r["group"], r["metric"]): r["value"] for r in pooled_rate_rows(pairs)}
    assert round(rows[("all", "unlinked")], 9) == 55.555555556 and rows[("all", "abstain")] == 100 / 3


def test_the_pooled_rates_do_not_depend_on_the_order_of_the_records():
    """A resumed LM-KBC run may hold its pairs in another order than an uninterrupted one: the unlinked and
    abstention rates are the same to the last bit."""
    import random

    from eval.generated_scores import pooled_rate_rows

    rng = random.Random(5)
    records = []
    for _ in range(80):
        parsed = [f"a{i}" for i in range(rng.randint(1, 7))]
        unlinked = parsed[: rng.randint(0, len(parsed))]
        relation = rng.choice(["P19", "P36"])
        records.append({"relation": relation, "parsed": parsed, "unlinked": unlinked, "abstained": rng.random() < 0.1})
    first = {(r["group"], r["metric"]): r["value"] for r in pooled_rate_rows(records)}
    for seed in range(5):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        assert {(r["group"], r["metric"]): r["value"] for r in pooled_rate_rows(shuffled)} == first
