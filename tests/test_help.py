"""Every command's --help at 80 columns, as a user reads it: no word of any help text lost
(a `[spool]` once vanished as a markup tag), summaries that read as sentences (no line
broken where the source file was), and no line over 80 columns."""
import os
import re
import subprocess

import pytest
import typer.main

from helpers import JOBMON
from jobmon.cli import app

COMMANDS = typer.main.get_command(app)


def commands(group=COMMANDS, path=()):
    for name, cmd in sorted(group.commands.items()):
        yield path + (name,), cmd
        if hasattr(cmd, "commands"):
            yield from commands(cmd, path + (name,))


def words(text):
    """The words of a help text as a reader sees them (markdown's backticks dropped)."""
    return re.findall(r"[\w'./@=+-]+|[\[\]]", text.replace("`", ""))


def shown(argv):
    env = dict(os.environ, COLUMNS="80", TERM="dumb", NO_COLOR="1")
    r = subprocess.run([JOBMON, *argv, "--help"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("path, cmd", list(commands()), ids=lambda x: " ".join(x)
                         if isinstance(x, tuple) else "")
def test_help_keeps_every_word_within_80_columns(path, cmd):
    out = shown(list(path))
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())
    seen = words(flat)
    texts = [cmd.help or ""] + [p.help for p in cmd.params if getattr(p, "help", None)]
    for text in texts:
        for paragraph in text.split("\n\n"):
            want = words(paragraph)
            # in order: each word of the text after the last one found
            at = 0
            for w in want:
                assert w in seen[at:], (path, w, paragraph)
                at = seen.index(w, at) + 1


def test_summaries_are_sentences_not_source_lines():
    """The command list: a summary of several source lines reads on as one paragraph (it
    broke where its source line did, the next word starting a line of its own)."""
    out = shown([])
    rows = [line[2:-1] for line in out.splitlines() if line.startswith("│ ")]
    query = " ".join(r[13:].strip() for r in rows[[r[:13].strip() for r in rows].index(
        "query"):][:4])
    assert "by every definition, what the scheduler recorded, totals" in query, out
    texts = [r[13:].rstrip() for r in rows]
    width = max(map(len, texts))
    for line, nxt in zip(texts, texts[1:]):   # a line ended early: its next word fitted
        if nxt.strip() and not rows[texts.index(nxt)][:13].strip():
            assert len(line) + 1 + len(nxt.split()[0]) > width, (line, nxt)
