"""`eventlog grep` as a command: flags, exit codes, context, filters, output shapes; the case-fold table."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.recall.grep import ODD_UPPER, fold_class, prefilter_regex, required_literal
from eventlog.store.writer import EventLog


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def msg(chat, ts, text, direction="in", user="ann", **kw):
    kind = "message:received" if direction == "in" else "message:sent"
    return {"event": kind, "channel": "telegram", "chat_id": chat, "ts": ts, "text": text, "direction": direction,
            "from": {"id": 7 if user == "ann" else 8, "username": user, "name": user.title()}, **kw}


@pytest.fixture
def log(root):
    EventLog(root, fsync="never").append_many([
        msg("1", "2026-11-01T10:00:00.000Z", "hello there"),
        msg("1", "2026-11-01T10:00:01.000Z", "we signed the договор today", user="bob"),
        msg("1", "2026-11-01T10:00:02.000Z", "ok", direction="out", user="bot"),
        msg("1", "2026-11-01T10:00:03.000Z", "what about the contract?"),
        msg("1", "2026-11-01T10:00:04.000Z", "Ёлка стоит", user="bob"),
        msg("1", "2026-11-01T10:00:05.000Z", "bye"),
        msg("2", "2026-11-02T09:00:00.000Z", "по договору всё", direction="out", user="bot"),
        msg("2", "2026-11-03T09:00:00.000Z", 'key "chat_id" and a \\ backslash'),
        {"event": "dlp:alert", "channel": "telegram", "chat_id": "1", "ts": "2026-11-01T11:00:00.000Z",
         "text": "договор in a non-message event", "rule": "x"},
        {"event": "message:received", "channel": "telegram", "chat_id": "1", "ts": "2026-11-01T12:00:00.000Z",
         "update_type": "message_reaction", "raw": {"reaction": "договор"}},
    ])
    return root


def texts(r) -> list[str]:
    return [orjson.loads(x)["event"]["text"] for x in r.stdout.splitlines() if orjson.loads(x)["type"] == "match"]


def test_literal_exit_codes_and_only_message_text(log):
    r = run("grep", "договор", "--json", "--root", str(log))
    assert r.exit_code == 0
    # Not the alert (not a message), not the reaction (договор only in its raw JSON).
    assert texts(r) == ["we signed the договор today", "по договору всё"]
    assert run("grep", "nothing-like-this", "--root", str(log)).exit_code == 1
    assert run("grep", "chat_id", "--json", "--root", str(log)).stdout.count('"match"') == 1  # only where it's text
    assert run("grep", "telegram", "--root", str(log)).exit_code == 1  # a field value, not text
    r = run("grep", '"chat_id"', "--json", "--root", str(log))
    assert texts(r) == ['key "chat_id" and a \\ backslash']
    assert texts(run("grep", "\\ back", "--json", "--root", str(log))) == ['key "chat_id" and a \\ backslash']


def test_ignore_case_cyrillic_and_count(log):
    assert run("grep", "ёлка", "--count-total", "--root", str(log)).stdout.strip() == "0"
    r = run("grep", "ёлка", "-c", "--root", str(log))  # per chat, like rg -c per file: chats without a match omitted
    assert r.exit_code == 1 and r.stdout == ""
    r = run("grep", "ёлка", "-i", "--count-total", "--root", str(log))
    assert r.exit_code == 0 and r.stdout.strip() == "1"
    r = run("grep", "ёлка", "-i", "-c", "--root", str(log))
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1 and r.stdout.strip().endswith(":1")
    assert orjson.loads(run("grep", "ЁЛКА", "-i", "--count-total", "--json", "--root", str(log)).stdout) == {
        "type": "count", "count": 1}
    assert run("grep", "zzz", "-c", "--root", str(log)).exit_code == 1


def test_regex_and_fuzzy(log):
    assert texts(run("grep", "-E", r"^(hello|bye)", "--json", "--root", str(log))) == ["hello there", "bye"]
    assert run("grep", "-E", "(unclosed", "--root", str(log)).exit_code == 2
    r = run("grep", "--fuzzy", "договор", "--json", "--root", str(log))
    assert texts(r) == ["we signed the договор today", "по договору всё"]
    r = run("grep", "--fuzzy=75", "contarct", "--json", "--root", str(log))
    assert texts(r) == ["what about the contract?"]
    assert run("grep", "--fuzzy=101", "x", "--root", str(log)).exit_code == 2
    assert run("grep", "--fuzzy", "-E", "x", "--root", str(log)).exit_code == 2


def test_filters(log):
    assert texts(run("grep", "o", "--from", "bob", "--json", "--root", str(log))) == [
        "we signed the договор today"]
    assert texts(run("grep", "стоит", "--from", "@BOB", "--json", "--root", str(log))) == ["Ёлка стоит"]
    assert texts(run("grep", "стоит", "--from", "ann", "--json", "--root", str(log))) == []
    assert texts(run("grep", "договор", "--fuzzy", "--direction", "out", "--json", "--root", str(log))) == [
        "по договору всё"]
    assert texts(run("grep", "договор", "--fuzzy", "--chat", "2", "--json", "--root", str(log))) == [
        "по договору всё"]
    assert texts(run("grep", "договор", "--fuzzy", "--since", "2026-11-02", "--until", "2026-11-02", "--json",
                     "--root", str(log))) == ["по договору всё"]
    assert run("grep", "x", "--since", "garbage", "--root", str(log)).exit_code == 2


def test_context_groups(log):
    r = run("grep", "contract", "-C", "1", "--root", str(log))
    lines = r.stdout.splitlines()
    assert [ln.split(" ", 3)[3].strip() for ln in lines] == ["@bot- ok", "@ann: what about the contract?",
                                                              "@bob- Ёлка стоит"]
    r = run("grep", "-E", "hello|bye", "-C", "1", "--json", "--root", str(log))
    kinds = [(orjson.loads(x)["type"], orjson.loads(x)["event"].get("text")) for x in r.stdout.splitlines()]
    assert kinds == [("match", "hello there"), ("context", "we signed the договор today"),
                     ("context", "Ёлка стоит"), ("match", "bye")]
    r = run("grep", "-E", "hello|bye", "-C", "1", "--root", str(log))
    assert "--" in r.stdout.splitlines()  # two separate groups


def test_highlight_and_json_spans(log):
    r = run("grep", "-i", "ЁЛ", "--color", "always", "--root", str(log))
    assert "\x1b[" in r.stdout and "Ёл" in r.stdout
    row = orjson.loads(run("grep", "-i", "ЁЛ", "--json", "--root", str(log)).stdout)
    assert row["spans"] == [[0, 2]] and row["file"] == "raw/telegram/chats/1/2026/11/01.jsonl" and row["line"] == 5
    assert "\x1b[" not in run("grep", "-i", "ЁЛ", "--root", str(log)).stdout


def test_fold_table_is_complete():
    """ODD_UPPER must list every code point whose simple lowercase does not map back through upper()/title()."""
    import _sre

    odd = []
    for cp in range(0x110000):
        low = _sre.unicode_tolower(cp)
        if low != cp and chr(cp) not in (chr(low).upper(), chr(low).title()):
            odd.append(cp)
    assert tuple(odd) == ODD_UPPER


@pytest.mark.parametrize("ch", list("aZёЁßſkKİıµ1-\"\\") + ["\u212a", "\u2126", "\u1e9e", "\u03f4", "😀"])
def test_fold_class_is_exactly_re_ignorecase(ch):
    import re

    rx = re.compile(re.escape(ch), re.IGNORECASE)
    # Every candidate the prefilter allows matches, and nothing in these blocks that matches is left out.
    cls = fold_class(ch)
    assert all(rx.fullmatch(c) for c in cls)
    blocks = list(range(0x0, 0x600)) + list(range(0x1E00, 0x2200)) + [0x1F600]
    assert {chr(c) for c in blocks if rx.fullmatch(chr(c))} <= set(cls)


def test_prefilter_and_required_literal():
    assert prefilter_regex('a"b\n', False) == "a\\x{5c}\\x{22}b\\x{5c}n"
    assert required_literal(r"foo\d+barbaz", 0) == ("barbaz", False)
    assert required_literal(r"(?i)ёлка", 0) == ("ёлка", True)
    assert required_literal(r"a|b", 0) == ("", False)
