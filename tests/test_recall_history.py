"""History is history, whatever its source (issue 24, part 3): a Telegram Desktop import and the tap's live events of
the same chat read alike — in the views (replies, edits, forwards, media, source, chat type and title, one sender per
person, the bot included), in the `replies` view, in `grep --from`, and in tail / grep / export md for media-only
messages. The import goes through the CLI on the hand-written fixture (tests/fixtures/telegram-desktop, worked out
from tdesktop's writer); the live events are shaped as the tap writes them (runtime/tap-event.mjs, docs/log-format.md)
and go through the writer."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.recall.compact import compact
from eventlog.store.writer import EventLog

from test_compact import age_tree

FIX = Path(__file__).parent / "fixtures" / "telegram-desktop"
IVAN, BOT, CHAT = 100200300, 7012345678, "100200300"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def sql(root: Path, q: str) -> list[dict]:
    r = run("sql", q, "--json", "--root", str(root))
    assert r.exit_code in (0, 1), r.output
    return [orjson.loads(x) for x in r.stdout.splitlines()]


def _ivan(mid: int, ts: str, text: str | None, **message) -> dict:
    """A private message from Ivan as the tap logs it: `from` with his username and first + last name."""
    msg = {"message_id": mid, "date": 1772409600, "chat": {"id": IVAN, "type": "private", "first_name": "Иван",
                                                            "last_name": "Петров", "username": "ivan_petrov"},
           "from": {"id": IVAN, "is_bot": False, "first_name": "Иван", "last_name": "Петров",
                    "username": "ivan_petrov"}, **message}
    ev = {"event": "message:received", "channel": "telegram", "account": "default", "chat_id": CHAT, "ts": ts,
          "direction": "in", "update_type": "message", "update_id": 5000 + mid, "message_id": mid,
          "raw": {"update_id": 5000 + mid, "message": msg},
          "from": {"id": IVAN, "is_bot": False, "username": "ivan_petrov", "name": "Иван Петров"}}
    if text is not None:
        msg["text"] = text
        ev["text"] = text
    return ev


def _sent(mid: int, ts: str, text: str | None, method: str = "sendMessage", **payload) -> dict:
    """What the tap logs for the bot's call: no `from`; the payload, and the outcome with the sent message's sender
    as Telegram returned it (runtime/tap-event.mjs, outcomeOf)."""
    body = {"chat_id": IVAN, **({"text": text} if text is not None else {}), **payload}
    if method.startswith("edit"):
        body["message_id"] = mid
    ev = {"event": "message:sent", "channel": "telegram", "account": "default", "chat_id": CHAT, "ts": ts,
          "direction": "out", "method": method, "site": "ingress", "message_id": mid, "payload": body,
          "outcome": {"ok": True, "message_id": mid,
                      "from": {"id": BOT, "is_bot": True, "username": "helper_bot", "name": "Helper Bot"}}}
    if text is not None:
        ev["text"] = text
    return ev


# Three streamed answers: a sendMessage and its editMessageText previews — ten rows, three replies.
STREAMED = [("Думаю", "Думаю…", "Думаю… готово", "Думаю… готово: 42"), ("Сейчас", "Сейчас посмотрю", "Нашёл договор"),
            ("Вот", "Вот ссылка", "Вот ссылка: https://example.org/d")]


def _live() -> list[dict]:
    evs = [_ivan(900, "2026-03-02T10:00:00.000Z", "Привет снова"),
           _ivan(901, "2026-03-02T10:00:30.000Z", None, photo=[{"file_id": "AgAC", "width": 90, "height": 90}]),
           _ivan(902, "2026-03-02T10:00:40.000Z", None, sticker={"file_id": "CAAC", "emoji": "👍", "type": "regular"}),
           _sent(903, "2026-03-02T10:00:50.000Z", None, "sendPhoto", photo={"$file": "chart.png"})]
    mid, second = 910, 0
    for versions in STREAMED:
        for i, text in enumerate(versions):
            second += 1
            evs.append(_sent(mid, f"2026-03-02T10:01:{second:02d}.000Z", text,
                             "sendMessage" if i == 0 else "editMessageText"))
        mid += 1
    return evs


@pytest.fixture(scope="module", params=["jsonl", "parquet"])
def log(request, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp(request.param) / "root"
    root.mkdir(mode=0o700)
    for export in ("bot_dm", "group"):
        r = run("import", "telegram-desktop", str(FIX / export), "--bot-id", str(BOT), "--root", str(root))
        assert r.exit_code == 0, r.output
    EventLog(root, fsync="never", autoseal=False).append_many(_live())
    if request.param == "parquet":
        age_tree(root)
        compact(root)
    return root


def test_an_imported_reply_edit_forward_and_photo_read_like_live_ones(log):
    rows = {r["message_id"]: r for r in sql(log, f"SELECT * FROM messages WHERE chat_id = '{CHAT}'")}
    assert rows[104]["reply_to_message_id"] == 103
    assert rows[104]["edited_ts"] == "2026-03-01T09:01:50.000Z" and rows[104]["is_edit"] is False
    assert rows[105]["forward_from"] == "Мария Сидорова"
    assert (rows[106]["text"], rows[106]["media"], rows[106]["media_type"]) == ("Скан страницы 1", "[photo]", "photo")
    assert (rows[108]["media"], rows[111]["media"]) == ("[voice]", "[sticker 😂]")
    assert (rows[901]["media"], rows[902]["media"], rows[903]["media"]) == ("[photo]", "[sticker 👍]", "[photo]")
    assert rows[106]["source"] == "import:telegram-desktop" and rows[900]["source"] is None
    edits = sql(log, "SELECT message_id, edited_ts, via, new_text, original_text FROM edits WHERE message_id = 104")
    assert edits == [{"message_id": 104, "edited_ts": "2026-03-01T09:01:50.000Z", "via": "import:telegram-desktop",
                      "new_text": "Понял, открываю договор.", "original_text": None}]


def test_an_imported_chat_has_its_type_and_title(log):
    chats = {r["chat_id"]: r for r in sql(log, "SELECT chat_id, type, title, username FROM chats")}
    assert chats[CHAT]["type"] == "private" and chats[CHAT]["username"] == "ivan_petrov"
    group = chats["-1001234567890"]
    assert group["type"] == "supergroup" and group["title"] == "Проект «Бета»"  # the later rename wins


def test_one_sender_per_person_live_and_imported(log):
    who = sql(log, "SELECT sender, sender_id, count(DISTINCT coalesce(source, 'live')) AS sources FROM messages "
                   f"WHERE chat_id = '{CHAT}' GROUP BY ALL ORDER BY sender_id")
    # each has imported rows (a display name, no handle) and live ones (Ivan's `from`, the bot's outcome)
    assert who == [{"sender": "Иван Петров", "sender_id": IVAN, "sources": 2},
                   {"sender": "Helper Bot", "sender_id": BOT, "sources": 2}]
    assert sql(log, "SELECT count(*) AS n FROM messages WHERE sender_id IS NULL") == [{"n": 0}]
    bot = sql(log, f"SELECT source, sender_name, sender_username, is_bot FROM messages WHERE sender_id = {BOT} "
                   "GROUP BY ALL ORDER BY source")
    assert bot == [{"source": "import:telegram-desktop", "sender_name": "Helper Bot", "sender_username": None,
                    "is_bot": True},
                   {"source": None, "sender_name": "Helper Bot", "sender_username": "helper_bot", "is_bot": True}]


def test_a_bot_message_logged_without_its_sender_has_none(tmp_path):
    root = tmp_path / "root"
    old = _sent(1, "2026-03-02T10:00:00.000Z", "hi")
    old["outcome"].pop("from")  # logged by a tap before the sender was recorded
    EventLog(root, fsync="never", autoseal=False).append(old)
    assert sql(root, "SELECT sender, sender_id, is_bot FROM messages") == [
        {"sender": None, "sender_id": None, "is_bot": True}]


def test_replies_fold_streaming_previews(log):
    live = sql(log, "SELECT message_id, text, versions FROM replies WHERE chat_id = $c AND source IS NULL "
                    "AND text IS NOT NULL ORDER BY ts".replace("$c", f"'{CHAT}'"))
    assert live == [{"message_id": 910 + i, "text": v[-1], "versions": len(v)} for i, v in enumerate(STREAMED)]
    assert sql(log, f"SELECT count(*) AS n FROM messages WHERE chat_id = '{CHAT}' AND method IN "
                    "('sendMessage', 'editMessageText')") == [{"n": 10}]
    imported = sql(log, f"SELECT message_id, text FROM replies WHERE chat_id = '{CHAT}' AND source IS NOT NULL")
    assert sorted(r["message_id"] for r in imported) == [102, 104, 109]


def grep(root: Path, *args: str) -> list[str]:
    r = run("grep", *args, "--root", str(root))
    assert r.exit_code in (0, 1), r.output
    return r.stdout.splitlines()


@pytest.mark.parametrize("who", ["Иван", "иван", "петров", "Иван Петров", "Ив", str(IVAN)])
def test_grep_from_a_first_name_a_word_or_a_prefix(log, who):
    lines = grep(log, "--from", who, "--chat", CHAT)
    assert any("Смотри договор" in x for x in lines)  # imported, named by display name only
    assert any("Привет снова" in x for x in lines)  # live, with a username


def test_grep_from_is_not_a_substring_search(log):
    assert grep(log, "--from", "ван", "--chat", CHAT) == []
    assert grep(log, "--from", "ivan", "--chat", CHAT) == []  # a handle matches exactly


def test_media_only_messages_show_their_marker(log, tmp_path):
    listed = grep(log, "--from", "Иван", "--chat", CHAT, "--since", "2026-03-01", "--until", "2026-03-02")
    assert any(x.endswith("Иван Петров: [voice]") for x in listed) and not any(x.endswith(": ") for x in listed)
    r = run("tail", "-n", "20", "--chat", CHAT, "--root", str(log))
    assert r.exit_code == 0, r.output
    tail = r.stdout.splitlines()
    assert any(x.endswith("@ivan_petrov: [sticker 👍]") for x in tail)
    assert any(x.endswith("bot: [photo]") for x in tail)
    md = tmp_path / "chat.md"
    assert run("export", "--chat", CHAT, "--format", "md", "-o", str(md), "--root", str(log)).exit_code == 0
    text = md.read_text()
    assert "Иван Петров (in): [sticker 😂]" in text and "@ivan_petrov (in): [photo]" in text
    assert "(no text)" not in text
