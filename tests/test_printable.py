"""The one cleaning function for text from a job, and the figure guard
(jobmon.printable): what they show, and that they keep what is harmless as it is."""
from jobmon.printable import clean, fixed
from jobmon.sinks import card_text as card


def test_controls_are_shown_as_pictures_and_invisible_controls_replaced():
    assert clean("a\tb") == "a\u2409b" and clean("a\rb") == "a\u240db"    # still two ids
    assert clean("\x1b]2;x\x07\x1b[2J\x7f") == "\u241b]2;x\u2407\u241b[2J\u2421"
    for bidi in ("\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f",
                 "\u061c"):
        assert clean(f"x{bidi}y") == "x\ufffdy"
    assert clean("c1\x9b31m\u2028\u2029\ud800") == "c1\ufffd31m\ufffd\ufffd\ufffd"
    for harmless in ("4711.0", "ce01#4711.0#1700000000", "Grüße, 日本語 job", "a b",
                     "[bold]x[/bold]", ""):
        assert clean(harmless) == harmless
    assert clean(None) == "None" and clean(12) == "12"


def test_figures_beyond_any_real_one_are_short():
    assert fixed(1e308) == "1e+308" and fixed(-1e308, ",.0f") == "-1e+308"
    assert fixed(10**400) == "inf" and fixed(float("inf")) == "inf"
    assert fixed(float("nan")) == "nan"
    assert fixed(3.14159) == "3.14" and fixed(12345.6, ",.0f") == "12,346"
    assert fixed(2, ".1f") == "2.0"
    assert fixed("x\x1b[2J") == "x\u241b[2J" and fixed(None) == "None"   # a forged field


def test_a_card_shows_a_hostile_id_and_host_as_text_and_forged_figures_short():
    s = {"job": "x\x1b]2;PWNED\x07\u202e", "host": "h\x1b[2J", "exit_code": 0,
         "wall_seconds": 1e308, "cpu_user_seconds": 1e308, "rss_peak_bytes": 1e308,
         "cores_allocated": 1.0, "read_bytes": 1e308}
    lines = card.card_lines(s, [("r", "advice \x1b[31m")])
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert lines[0].startswith("jobmon: job x\u241b]2;PWNED\u2407\ufffd exit code 0 after 1e+308 s")
    assert all(len(x) <= card.MAX_COLUMNS for x in lines) and "e+308" in text
