"""`eval.labels`: the one reading of a label that every loader shares."""

from __future__ import annotations

import unicodedata

from eval.labels import BIDI_CONTROLS, clean_label, control_character, printable, search_key


def test_control_characters_are_the_unicode_controls_and_the_bidirectional_ones():
    """Every code point: refused exactly where Unicode calls it a control (Cc) or it is a bidirectional control."""
    wrong = [cp for cp in range(0x110000)
             if (control_character(f"a{chr(cp)}b") is not None)
             != (chr(cp) in BIDI_CONTROLS or unicodedata.category(chr(cp)) in ("Cc", "Zl", "Zp"))]
    assert wrong == []
    assert control_character("tea\x1b[8m") == "U+001B" and control_character("\u202eaet") == "U+202E"
    assert control_character("c\u2028d") == "U+2028"  # a line separator breaks the line as "\n" does


def test_clean_label_is_one_spelling_whether_or_not_the_text_is_ascii():
    assert clean_label(" tea\t") == "tea" == clean_label("\u200btea\ufeff")
    assert clean_label("cafe\u0301 ") == "caf\u00e9" == clean_label("\u00a0caf\u00e9")
    assert clean_label("New  York") == "New  York"  # spaces inside a label are kept as written


def test_printable_shows_control_characters_escaped_and_keeps_the_rest():
    assert printable("[X] is\x1b[8m a\r[Y]\u202e\tz\x85") == "[X] is\\x1b[8m a\\r[Y]\\u202e\\tz\\x85"
    assert printable("one\ntwo\x07", lines=True) == "one\ntwo\\x07" and printable("a\nb") == "a\\nb"
    assert printable("José née Ω") == "José née Ω"


def test_directional_marks_at_the_ends_are_dropped_and_joiners_inside_kept():
    """A right-to-left keyboard types RLM (or Arabic's ALM) around a word: "دمشق" with and without one looked
    alike and were two labels. Inside a word a zero-width non-joiner is spelling (Persian "اسلام‌آباد" is drawn
    otherwise than "اسلامآباد"), and so are a joiner in a Devanagari conjunct and in an emoji sequence."""
    assert clean_label("\u200fدمشق\u200f") == "دمشق" == clean_label("\u061cدمشق ") == clean_label("دمشق\u200e")
    assert clean_label("اسلام\u200cآباد\u200c") == "اسلام\u200cآباد" != clean_label("اسلامآباد")
    assert clean_label("क्\u200dष") == "क्\u200dष" and clean_label("👨\u200d👩\u200d👧") == "👨\u200d👩\u200d👧"
    assert clean_label("تهران \u200f(ایران)") == "تهران \u200f(ایران)"  # inside, a mark orders the brackets


def test_search_key_folds_case_accents_and_width_but_keeps_other_scripts_marks():
    assert search_key("ΚΥΠΡΟΥ") == search_key("Κύπρου") and search_key("IĞDIR") == search_key("Iğdır")
    assert search_key("ISTANBUL") == search_key("İstanbul") and search_key("イギリス") == search_key("ｲｷﾞﾘｽ")
    assert search_key("キリス") != search_key("ギリス") and search_key("क्षेत्र") != search_key("कषेत्र")
