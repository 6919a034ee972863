"""`eval.graphemes`: labels cut and padded by what a reader sees, in any script."""

from __future__ import annotations

import unicodedata

from cli_support import run_kbc, run_labelled

from bridge.report.figures import _short
from eval.graphemes import boundary, clusters, columns, ljust, shorten

FAMILY, THUMB, FLAGS = "👨\u200d👩\u200d👧", "👍\U0001F3FD", "\U0001F1EF\U0001F1F5\U0001F1EB\U0001F1F7"


def test_clusters_keep_emoji_sequences_flags_conjuncts_and_accents_whole():
    assert clusters(FAMILY + THUMB + FLAGS) == [FAMILY, THUMB, FLAGS[:2], FLAGS[2:]]
    assert clusters("क्षेत्र") == ["क्षे", "त्र"] and clusters("cafe\u0301") == ["c", "a", "f", "e\u0301"]
    assert clusters("اسلام\u200cآباد")[4] == "م\u200c" and clusters("ｷﾞ") == ["ｷﾞ"]


def test_a_shortened_label_is_cut_between_what_a_reader_sees():
    """A tick label cut at 26 code points split an emoji family into a man and a dangling joiner, and a Devanagari
    conjunct into a consonant with a stray virama."""
    label = "emoji " + FAMILY * 12
    assert _short(label) == "emoji " + FAMILY * 12  # 18 characters a reader sees: whole
    assert _short("x" * 24 + "क्षे" + "त्र" + "z") == "x" * 24 + "क्षे" + "…"
    assert shorten("x" * 24 + FAMILY + "y", 26) == "x" * 24 + FAMILY + "y"
    assert shorten("x" * 25 + FAMILY + "yz", 26) == "x" * 25 + "…"


def test_columns_count_wide_characters_twice_and_marks_not_at_all():
    assert [columns(t) for t in ("首都", "수도", "cafe\u0301", FAMILY, THUMB, "❤\ufe0f", "ab")] == [4, 4, 4, 2, 2, 2, 2]
    assert columns(unicodedata.normalize("NFD", "수도")) == 4 and ljust("首都", 6) == "首都  "


def test_kbc_compare_aligns_columns_after_a_cjk_relation_label(tmp_path, capsys):
    """The relation column was padded by code points: each row with a Japanese or Korean label ran two columns
    per character past the others."""
    relations = [{"relation": "ja", "template": "[X]の首都は[Y]です。", "label": "首都"},
                 {"relation": "de", "template": "Die Hauptstadt von [X] ist [Y] .", "label": "Hauptstadt"}]
    run_labelled(tmp_path, relations, [("a", "b"), ("c", "d")], ["freq", "kb"], capsys)
    code, out, err = run_kbc(["compare", str(tmp_path / "run"), "freq", "kb"], capsys)
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith(("relation ", "de ", "ja ", "all "))]
    wide = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line) for line in rows]
    assert len(rows) == 4 and len(set(wide)) == 1, rows


def test_an_evidence_window_in_a_script_without_spaces_is_cut_between_what_a_reader_sees():
    """Text without spaces was cut where the width fell: a window began with the ष of a क्ष conjunct, or split a
    flag into two letters."""
    from bridge.analysis.retrieved import window

    text = "あ" * 100 + "क्षेत्र" * 50 + "東京" + FAMILY * 40
    shown = window(text, "東京", 41).strip("…")
    assert clusters(shown)[0] in ("क्षे", "त्र") and shown.endswith(FAMILY)
    flags = FLAGS * 30
    for i in range(len(flags)):
        assert boundary(flags, i) % 2 == 0 and boundary(FAMILY + "x", i % 7) in (0, 5, 6)
