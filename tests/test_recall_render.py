"""The one event renderer (eventlog/store/render.py): who sent an event, its text, its time, its media marker — and
that grep, tail, search, export and the agent's lines all show the same sender for the same event."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog.agent.tool import line_for
from eventlog.cli.main import cli
from eventlog.store import render
from eventlog.search import _hit
from eventlog.store.writer import EventLog


def msg(frm=None, direction="in", text="hi", **kw):
    ev = {"event": "message:received" if direction == "in" else "message:sent", "channel": "telegram",
          "chat_id": "1", "ts": "2026-11-01T10:00:00.000Z", "direction": direction, "text": text, **kw}
    if frm is not None:
        ev["from"] = frm
    return ev


@pytest.mark.parametrize("frm, sender, who", [
    ({"id": 7, "username": "ann", "name": "Ann Lee"}, "Ann Lee", "@ann"),  # the value by name, shown by handle
    ({"id": 7, "username": "ann"}, "ann", "@ann"),
    ({"id": 7, "name": "Ann Lee"}, "Ann Lee", "Ann Lee"),
    ({"id": 7}, "7", "7"),
    ({"id": 0}, "0", "0"),  # an id of 0 is an id, not "no sender"
    ({"id": 7, "username": "", "name": ""}, "7", "7"),  # empty strings name nobody
    ({"id": True, "username": None}, None, "?"),  # a bool is not an id
    ({"id": [1], "username": {"a": 1}}, None, "?"),
    ("not an object", None, "?"),
    (None, None, "?"),
])
def test_sender_and_who(frm, sender, who) -> None:
    ev = msg(frm)
    assert render.sender(ev) == sender
    assert render.who(ev) == who


def test_who_without_a_sender_depends_on_the_event() -> None:
    assert render.who(msg(None, "out")) == "bot"  # the tap's message:sent has no `from`: the bot sent it
    assert render.who(msg(None, "in")) == "?"
    assert render.who({"event": "tap:start", "chat_id": "eventlog"}) == ""


def test_sent_by_matches_any_name_any_case() -> None:
    ev = msg({"id": 7, "username": "Ann", "name": "Ann Lee"})
    assert all(render.sent_by(ev, w) for w in ("ann", "@ANN", "ann lee", "7"))
    assert not render.sent_by(ev, "bob") and not render.sent_by(msg(None), "ann")
    assert not render.sent_by(msg({"id": True}), "true")


def test_media_marker_and_body() -> None:
    photo = msg(None, text=None, raw={"update_id": 1, "message": {"photo": [{"file_id": "x"}], "chat": {"id": 1}}})
    assert render.media_marker(photo) == "[photo]" and render.body(photo) == "[photo]"
    imported = msg(None, text="", media={"media_type": "voice_message"})
    assert render.body(imported) == "[voice]"  # Telegram Desktop's media_type, by its Bot API name
    assert render.body(msg(None, text="", media={"media_type": "sticker", "sticker_emoji": "👍"})) == "[sticker 👍]"
    venue = {"message": {"venue": {"title": "x"}, "location": {"latitude": 1.5}}}
    assert render.media_marker(msg(None, raw=venue)) == "[venue]"  # a venue also carries its location
    assert render.media_marker(msg(None, raw={"message": {"dice": {"emoji": "🎲", "value": 3}}})) == "[dice 🎲]"
    assert render.media_marker(msg(None, "out", text=None, method="sendVideoNote")) == "[video note]"
    assert render.media_marker(msg(None, "out", method="sendMessage")) is None
    assert render.body(msg(None, text=None)) == "(no text)"
    assert render.body(msg(None, text="caption", raw={"message": {"photo": []}})) == "caption"
    assert render.media_marker({"raw": "not an object", "media": "x"}) is None
    assert render.media_marker({"raw": {"callback_query": {"photo": []}}}) is None  # not a message of the update


@pytest.mark.parametrize("who, hit", [
    ("annie", True), ("@ANNIE", True), ("7", True),  # the handle and the id, exactly
    ("anni", False), ("70", False),
    ("ann lee", True), ("Ann  Lee", True), ("lee", True), ("an", True), ("LE", True),  # the name, by word or start
    ("nn", False), ("ee", False), ("ann leex", False), ("", False), ("@", False),
])
def test_sent_by_name_words_and_prefixes(who, hit) -> None:
    assert render.sent_by(msg({"id": 7, "username": "annie", "name": "Ann Lee"}), who) is hit


def test_lines() -> None:
    ev = msg({"id": 7, "username": "ann"}, text="a\nb")
    assert render.grep_line(ev, [(0, 1)], True) == "1 2026-11-01T10:00:00.000Z in  @ann: a\\nb"
    assert render.grep_line(ev, [], False, style=lambda s, role: f"<{role}>{s}") == \
        "<head>1 2026-11-01T10:00:00.000Z in  @ann- a\\nb"
    assert render.tail_line(ev) == "1 2026-11-01T10:00:00.000Z message:received in @ann: a\\nb"
    assert render.tail_line({"event": "tap:start", "chat_id": "eventlog", "ts": 5}) == "eventlog 5 tap:start -"


class _NoSecrets:
    def scan(self, text):
        return type("R", (), {"findings": []})()

    def redact(self, text, findings):
        return text, []


def test_every_surface_shows_one_sender(root) -> None:
    """The same events through grep, tail, export md, search and the agent's lines: one answer to "who"."""
    evs = [msg({"id": 7, "username": "ann", "name": "Ann"}, text="alpha one"),
           msg({"id": 8, "name": "Bob Stone"}, text="alpha two"),
           msg(None, "out", text="alpha three")]
    EventLog(root, fsync="never").append_many(evs)
    want = ["@ann", "Bob Stone", "bot"]
    run = lambda *a: CliRunner().invoke(cli, [*a, "--root", str(root)], catch_exceptions=False)  # noqa: E731
    grep = run("grep", "alpha", "--tz", "UTC").stdout.splitlines()
    assert [ln.split(" ", 3)[3].split(":")[0].strip() for ln in grep] == want
    tail = run("tail", "--tz", "UTC").stdout.splitlines()
    assert [ln.split(" ")[4].rstrip(":") for ln in tail] == ["@ann", "Bob", "bot"]  # "Bob Stone" has a space
    out = root.parent / "t.md"
    run("export", "--chat", "1", "--format", "md", "-o", str(out), "--tz", "UTC")
    md = [ln for ln in out.read_text().splitlines() if ln.startswith("- ")]
    assert [ln.split("** ", 1)[1].split(" (")[0] for ln in md] == want
    assert [line_for(_NoSecrets(), e, full=True).split(" ", 4)[4].split(":")[0] for e in evs] == want
    # search's JSON carries the accessor (the display name: what live and imported rows share), the SQL view the same
    assert [_hit(1, 1.0, e).sender for e in evs] == ["Ann", "Bob Stone", None]
    sql = run("sql", "SELECT sender FROM messages ORDER BY ts, id", "--format", "json").stdout.splitlines()
    assert [orjson.loads(x)["sender"] for x in sql] == ["Ann", "Bob Stone", None]
