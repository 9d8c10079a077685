"""The per-job writers' JSON text is json.dumps's, byte for byte."""
import json
import random
import subprocess
import sys

import pytest

from jobmon.sinks import jsontext

ODD = ["", "plain", 'quote " and \\ back', "tab\tnl\nr\r\b\f", "\x00\x1f\x7f",
       "ünïcödé", "日本", "emoji 🦀", "\udc80 lone surrogate", "\U0010ffff"]


@pytest.mark.parametrize("indent", [None, 1, 2])
def test_scalars_strings_and_nesting(indent):
    objs = [None, True, False, 0, -7, 2 ** 70, 0.1, -1e-300, 1e300, float("nan"),
            float("inf"), -float("inf"), [], {}, (), [[]], {"a": {}},
            {"k": [1, 2.5, None, {"x": [True, False]}], "e": [], 3: "int key",
             1.5: "float key", True: "bool key", None: "none key"}] + ODD
    for o in objs + [objs, {s: s for s in ODD}]:
        assert jsontext.dumps(o, indent) == json.dumps(o, indent=indent), o


def test_random_strings():
    rng = random.Random(7)
    for _ in range(2000):
        s = "".join(chr(rng.choice([rng.randrange(0, 128), rng.randrange(128, 0x110000)]))
                    for _ in range(rng.randrange(0, 12)))
        assert jsontext.dumps([s]) == json.dumps([s])


def test_a_real_summary(tmp_path):
    out = tmp_path / "s.json"
    subprocess.run([sys.executable, "-m", "jobmon", "run", "--store=none", "--summary",
                    str(out), "--tag", "odd=ü\"\\", "--", "true"], check=True)
    summary = json.loads(out.read_text())
    assert out.read_text() == json.dumps(summary, indent=1) + "\n"
    assert jsontext.dumps(summary) == json.dumps(summary)


def test_what_json_cannot_write_is_refused():
    with pytest.raises(TypeError):
        jsontext.dumps({"x": object()})
    with pytest.raises(TypeError):
        jsontext.dumps({(1, 2): 0})
