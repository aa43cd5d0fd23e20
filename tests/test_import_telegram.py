"""`eventlog import telegram-desktop` against hand-written fixtures of Telegram Desktop's own export format
(tests/fixtures/telegram-desktop/README.md says where every shape comes from). Expected values are worked out by hand
from the fixtures (UTC from date_unixtime with `date -u -d @…`, chat ids by the documented rule)."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.importers import jsonstream
from eventlog.importers.telegram_desktop import bot_api_chat_id, flatten_text, peer_to_bot_api
from eventlog.store.writer import EventLog

FIX = Path(__file__).parent / "fixtures" / "telegram-desktop"
BOT = "7012345678"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def imp(root: Path, path: Path, *extra: str):
    return run("import", "telegram-desktop", str(path), "--root", str(root), *extra)


def sql(root: Path, query: str) -> list[dict]:
    r = run("sql", query, "--json", "--root", str(root))
    assert r.exit_code in (0, 1), r.output
    return [orjson.loads(line) for line in r.stdout.splitlines()]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def summary(r) -> dict:
    return orjson.loads(r.stdout.splitlines()[-1])


ROWS = "SELECT strftime(ts, '%Y-%m-%dT%H:%M:%SZ') AS t, chat_id, direction, event, message_id, text FROM messages ORDER BY ts"

BOT_DM = [  # by hand from bot_dm/result.json; the DM is logged under the user's id, as the bot sees it
    ("2026-03-01T09:00:00Z", "100200300", "in", "message:received", 101, "/start"),
    ("2026-03-01T09:00:02Z", "100200300", "out", "message:sent", 102, "Привет! Я помощник 🤖. Чем могу помочь?"),
    ("2026-03-01T09:01:30Z", "100200300", "in", "message:received", 103,
     "Смотри договор 👍🏽 тут: https://example.org/договор?id=1 и вот это 👨‍👩‍👧 @ivan_petrov секрет 🔥 x = 1"),
    ("2026-03-01T09:01:35Z", "100200300", "out", "message:sent", 104, "Понял, открываю договор."),
    ("2026-03-01T09:05:00Z", "100200300", "in", "message:received", 105, "Пересылаю: встреча в 15:00"),
    ("2026-03-01T09:06:00Z", "100200300", "in", "message:received", 106, "Скан страницы 1"),
    ("2026-03-01T09:07:00Z", "100200300", "in", "message:received", 107, ""),
    ("2026-03-01T23:59:59Z", "100200300", "in", "message:received", 108, ""),
    ("2026-03-02T00:00:05Z", "100200300", "out", "message:sent", 109, "Вот код:\nprint('привет')"),
    ("2026-03-02T00:01:00Z", "100200300", "in", "message:received", 111, ""),
]


def rows(root: Path) -> list[tuple]:
    return [tuple(r.values()) for r in sql(root, ROWS)]


def test_chat_id_rule():
    # Bot API: users as is; basic groups -id; supergroups and channels -(10^12 + id) — the "-100…" form
    assert bot_api_chat_id("bot_chat", 7012345678) == 7012345678
    assert bot_api_chat_id("private_group", 555666777) == -555666777
    assert bot_api_chat_id("private_supergroup", 1234567890) == -1001234567890
    assert bot_api_chat_id("public_channel", 123) == -1000000000123
    assert peer_to_bot_api("user100200300") == 100200300
    assert peer_to_bot_api("chat555666777") == -555666777
    assert peer_to_bot_api("channel1122334455") == -1001122334455
    assert peer_to_bot_api("1234") is None


def test_flatten_counts_code_points_not_utf16_units():
    # 👍🏽 is 2 code points / 4 UTF-16 units, 👨‍👩‍👧 5 / 8: the parts are already cut, flattening must not shift them
    parts = ["a👍🏽", {"type": "bold", "text": "б"}, "👨‍👩‍👧", {"type": "custom_emoji", "text": "🔥", "document_id": "1"}]
    text = flatten_text(parts)
    assert text == "a👍🏽б👨‍👩‍👧🔥"
    assert len(text) == 10 and len(text.encode("utf-16-le")) // 2 == 16
    assert text.index("б") == 3


def test_round_trip_bot_dm(root):
    r = imp(root, FIX / "bot_dm")
    assert r.exit_code == 0, r.output
    assert rows(root) == BOT_DM
    files = sorted(str(p.relative_to(root)) for p in (root / "raw").rglob("*.jsonl"))
    assert files == ["raw/telegram/chats/100200300/2026/03/01.jsonl", "raw/telegram/chats/100200300/2026/03/02.jsonl"]
    senders = {e["message_id"]: (e["sender"], e["sender_id"], e["is_bot"])
               for e in sql(root, "SELECT message_id, sender, sender_id, is_bot FROM messages")}
    assert senders[102] == ("Helper Bot", 7012345678, True)
    assert senders[101] == ("Иван Петров", 100200300, False)
    lines = [orjson.loads(x) for f in files for x in (root / f).read_bytes().splitlines()]
    by_id = {e["message_id"]: e for e in lines}
    assert all(e["source"] == "import:telegram-desktop" and len(e["export_sha256"]) == 64 for e in lines)
    assert by_id[104]["reply_to_message_id"] == 103 and by_id[104]["edited_ts"] == "2026-03-01T09:01:50.000Z"
    assert by_id[105]["forward"] == {"from": "Мария Сидорова"}
    assert by_id[106]["media"]["media_type"] == "photo" and by_id[106]["media"]["photo"].startswith("photos/")
    assert by_id[107]["media"]["file"].startswith("(File not included")
    assert by_id[108]["media"]["media_type"] == "voice_message"
    assert by_id[111]["media"]["sticker_emoji"] == "😂"
    assert by_id[103]["raw"]["text_entities"][5] == {"type": "text_link", "text": "вот это", "href": "https://example.com/x"}
    assert 110 not in by_id  # the unsupported record has no date: counted, not imported
    assert run("verify", "--root", str(root)).exit_code == 0


def test_reimport_adds_nothing_and_changes_no_byte(root):
    assert imp(root, FIX / "bot_dm").exit_code == 0
    before = snapshot(root)
    r = imp(root, FIX / "bot_dm" / "result.json", "--json")
    assert r.exit_code == 0
    assert summary(r)["added"] == 0 and summary(r)["duplicates"] == 10
    assert snapshot(root) == before


def test_overlapping_exports_give_their_union(root, tmp_path):
    assert imp(root, FIX / "overlap" / "jan-mar.json").exit_code == 0
    r = imp(root, FIX / "overlap" / "feb-apr.json", "--json")
    assert summary(r)["added"] == 2 and summary(r)["duplicates"] == 3
    got = [(x[0], x[2], x[4], x[5]) for x in rows(root)]
    assert got == [
        ("2026-01-15T10:00:00Z", "in", 201, "Январь: начали проект"),
        ("2026-02-10T10:00:00Z", "in", 202, "Февраль: статус?"),
        ("2026-02-10T10:00:05Z", "out", 203, "Статус: в работе 🛠"),
        ("2026-03-05T10:00:00Z", "in", 204, "Март: сдали этап 1"),
        ("2026-04-02T10:00:00Z", "in", 205, "Апрель: что дальше?"),
        ("2026-04-02T10:00:04Z", "out", 206, "Дальше этап 2 🚀"),
    ]
    other = tmp_path / "other"
    other.mkdir()
    assert imp(other, FIX / "overlap" / "feb-apr.json").exit_code == 0
    assert imp(other, FIX / "overlap" / "jan-mar.json").exit_code == 0
    assert rows(other) == rows(root)


def _tap_received(chat, mid, date, text, ts, update_id):
    """What the tap writes for an inbound message (eventlog/patches/openclaw/runtime/tap-core.mjs, receivedEvent)."""
    msg = {"message_id": mid, "date": date, "chat": {"id": int(chat), "type": "private" if int(chat) > 0 else
                                                     "supergroup"},
           "from": {"id": 100200300, "is_bot": False, "first_name": "Иван"}, "text": text}
    return {"event": "message:received", "channel": "telegram", "account": "default", "chat_id": chat, "ts": ts,
            "direction": "in", "update_type": "message", "update_id": update_id, "message_id": mid,
            "from": {"id": 100200300, "is_bot": False, "name": "Иван"}, "text": text,
            "raw": {"update_id": update_id, "message": msg}}


def _voice(ev):
    """A voice message as the tap logs it: no `text` at all, the voice object in the update."""
    del ev["text"], ev["raw"]["message"]["text"]
    ev["raw"]["message"]["voice"] = {"file_id": "AwACAgIAAxkBAAI", "duration": 7, "mime_type": "audio/ogg"}
    return ev


def _tap_sent(chat, mid, text, ts, method="sendMessage", parse_mode=None):
    """What the tap writes for an outbound call (tap-core.mjs, logSent): ts is taken after Telegram answered."""
    payload = {"chat_id": int(chat), "text": text, **({"parse_mode": parse_mode} if parse_mode else {})}
    return {"event": "message:sent", "channel": "telegram", "account": "default", "chat_id": chat, "ts": ts,
            "direction": "out", "method": method, "site": "send", "payload": payload, "text": text,
            "outcome": {"ok": True, "message_id": mid}, "message_id": mid}


def test_tap_events_in_a_dm_are_not_duplicated(root):
    # In a private chat the bot numbers messages itself (9001…), the exporter's account differently (101…):
    # the tap's events are recognised by text at Telegram's time, not by message_id.
    tap = [
        _tap_received("100200300", 9001, 1772355600, "/start", "2026-03-01T09:00:00.400Z", 1),
        _tap_sent("100200300", 9002, "Привет! Я помощник 🤖. Чем могу помочь?", "2026-03-01T09:00:03.120Z"),
        _tap_sent("100200300", 9004, "Понял", "2026-03-01T09:01:36.000Z"),
        _tap_sent("100200300", 9004, "Понял, открываю договор.", "2026-03-01T09:01:51.000Z", "editMessageText"),
        _tap_sent("100200300", 9009, "Вот код:\n<pre><code class=\"language-python\">print('привет')</code></pre>",
                  "2026-03-02T00:00:06.000Z", parse_mode="HTML"),
        _voice(_tap_received("100200300", 9008, 1772409599, "", "2026-03-01T23:59:59.800Z", 3)),
        # same number as the export's 103, but another message in the bot's numbering: must not hide 103
        _tap_received("100200300", 103, 1772300000, "другое", "2026-02-28T17:33:20.000Z", 2),
    ]
    EventLog(root).append_many(tap)
    r = imp(root, FIX / "bot_dm", "--json")
    assert r.exit_code == 0, r.output
    assert summary(r)["added"] == 5 and summary(r)["duplicates"] == 5
    imported = sql(root, "SELECT message_id FROM events WHERE event LIKE 'message:%' "
                         "AND message_id < 9000 AND text IS DISTINCT FROM 'другое' ORDER BY message_id")
    assert [x["message_id"] for x in imported] == [103, 105, 106, 107, 111]


def test_tap_events_in_a_supergroup_are_not_duplicated(root):
    chat = "-1001234567890"
    EventLog(root).append_many([
        _tap_received(chat, 4, 1770711000, "Всем привет! 👋", "2026-02-10T08:10:00.700Z", 10),
        _tap_sent(chat, 6, "Сводка: 2 задачи открыты, 1 закрыта ✅", "2026-02-10T08:11:05.000Z"),
    ])
    r = imp(root, FIX / "group", "--bot-id", BOT, "--json")
    assert r.exit_code == 0, r.output
    assert summary(r)["added"] == 8 and summary(r)["duplicates"] == 2
    got = [(x[0], x[2], x[4], x[5]) for x in rows(root)]
    assert got == [
        ("2026-02-10T08:10:00Z", "in", 4, "Всем привет! 👋"),  # the tap's
        ("2026-02-10T08:11:00Z", "in", 5, "@helper_bot сделай сводку по #альфа"),
        ("2026-02-10T08:11:05Z", "out", 6, "Сводка: 2 задачи открыты, 1 закрыта ✅"),  # the tap's
        ("2026-02-10T09:04:00Z", "in", 10, "Итог встречи — в закрепе 📌"),
    ]


def test_group_service_records(root):
    assert imp(root, FIX / "group", "--bot-id", BOT).exit_code == 0
    lines = [orjson.loads(x) for p in (root / "raw").rglob("*.jsonl") for x in p.read_bytes().splitlines()]
    svc = sorted((e for e in lines if e["event"] == "chat:service"), key=lambda e: e["message_id"])
    assert [(e["message_id"], e["action"], e["ts"]) for e in svc] == [
        (1, "create_channel", "2026-02-10T08:00:00.000Z"),
        (2, "invite_members", "2026-02-10T08:00:30.000Z"),
        (3, "join_group_by_link", "2026-02-10T08:05:00.000Z"),
        (7, "pin_message", "2026-02-10T08:12:00.000Z"),
        (8, "edit_group_title", "2026-02-10T08:20:00.000Z"),
        (9, "remove_members", "2026-02-10T09:00:00.000Z"),
    ]
    by = {e["message_id"]: e for e in svc}
    assert by[2]["text"] == "Иван Петров added Helper Bot, Мария Сидорова"
    assert by[7]["pinned_message_id"] == 6 and by[7]["text"] == "Иван Петров pinned a message"
    assert by[8]["title"] == "Проект «Бета»"
    assert by[8]["text"] == "Иван Петров changed the group name to «Проект «Бета»»"
    assert by[9]["text"] == "Пётр Козлов left the group"
    assert by[3]["from"] == {"id": 300400500, "name": "Пётр Козлов"}
    bot = [e for e in lines if e.get("message_id") == 6][0]
    assert bot["event"] == "message:sent" and bot["reply_to_message_id"] == 5 and bot["chat_id"] == "-1001234567890"


def test_full_account_imports_the_bots_chats_only(root):
    r = imp(root, FIX / "account", "--bot-id", BOT, "--json")
    assert r.exit_code == 0, r.output
    chats = [orjson.loads(x) for x in r.stdout.splitlines()[:-1]]
    assert [(c["chat_type"], c["chat_id"], c["added"], c["skipped"] is None) for c in chats] == [
        ("saved_messages", None, 0, False), ("personal_chat", None, 0, False), ("bot_chat", "100200300", 3, True),
        ("bot_chat", None, 0, False), ("private_group", "-555666777", 3, True),
        ("public_supergroup", "-1001987654321", 0, False), ("private_channel", "-1001122334455", 0, False)]
    assert [(x[0], x[1], x[2], x[4], x[5]) for x in rows(root)] == [
        ("2026-04-01T10:00:00Z", "100200300", "in", 5001, "Напомни завтра про отчёт"),
        ("2026-04-01T10:00:03Z", "100200300", "out", 5002, "Хорошо, напомню завтра в 10:00 ⏰"),
        ("2026-04-02T18:30:00Z", "100200300", "out", 5003, "Напоминание: отчёт 📄"),
        ("2026-04-05T07:00:40Z", "-555666777", "in", 901, "@helper_bot какая погода? ☀️"),
        ("2026-04-05T07:02:00Z", "-555666777", "out", 902, "Сегодня +12°C, без осадков."),
    ]
    # --chat-id selects a chat the bot did not write in; the bot is now known from the log
    r = imp(root, FIX / "account", "--chat-id", "-1001987654321", "--json")
    assert r.exit_code == 0, r.output
    assert summary(r)["added"] == 1 and summary(r)["bot_id"] == 7012345678


def test_bot_id_from_the_log(root):
    # the tap logged a my_chat_member update: always about the bot itself
    EventLog(root).append({"event": "message:received", "channel": "telegram", "chat_id": "-1001234567890",
                           "ts": "2026-02-09T10:00:00.000Z", "direction": "in", "update_type": "my_chat_member",
                           "raw": {"update_id": 5, "my_chat_member": {"chat": {"id": -1001234567890},
                                   "new_chat_member": {"status": "member", "user": {"id": 7012345678, "is_bot": True,
                                                                                   "first_name": "Helper Bot"}}}}})
    r = imp(root, FIX / "group", "--json")
    assert r.exit_code == 0, r.output
    assert summary(r)["bot_id"] == 7012345678
    assert [x["direction"] for x in sql(root, "SELECT direction FROM messages WHERE message_id = 6")] == ["out"]


def test_group_without_a_known_bot_is_refused(root):
    before = snapshot(root)
    r = imp(root, FIX / "group")
    assert r.exit_code == 2 and "--bot-id" in r.stderr
    assert snapshot(root) == before


def test_import_into_sealed_days_verifies(root):
    chat = "-1001234567890"
    log = EventLog(root)
    log.append_many([_tap_received(chat, 50, 1770800000, "до", "2026-02-10T06:00:00.000Z", 1),
                     _tap_received(chat, 51, 1770900000, "после", "2026-02-12T12:40:00.000Z", 2)])
    assert run("seal", "--root", str(root)).exit_code == 0
    seals = (root / "seals" / "telegram" / f"{chat}.jsonl").read_bytes().count(b"\n")
    r = imp(root, FIX / "group", "--bot-id", BOT, "--json")
    assert r.exit_code == 0 and summary(r)["added"] == 10
    assert (root / "seals" / "telegram" / f"{chat}.jsonl").read_bytes().count(b"\n") > seals  # the seal was extended
    v = run("verify", "--root", str(root))
    assert v.exit_code == 0, v.output


def test_dry_run_writes_nothing(root):
    before = snapshot(root)
    r = imp(root, FIX / "bot_dm", "--dry-run", "--json")
    assert r.exit_code == 0
    assert summary(r)["added"] == 10 and summary(r)["dry_run"] is True
    assert snapshot(root) == before


def test_small_read_chunks_give_the_same_events(root, monkeypatch):
    monkeypatch.setattr(jsonstream, "CHUNK", 7)  # every record, string and multi-byte character crosses a boundary
    assert imp(root, FIX / "bot_dm").exit_code == 0
    assert rows(root) == BOT_DM


def _bad_cases(tmp_path: Path) -> list[tuple[Path, str]]:
    src = (FIX / "bot_dm" / "result.json").read_bytes()
    cases = [(FIX / "bad" / "unknown_type.json", "unknown record type 'reaction'"),
             (FIX / "bad" / "not_export.json", "not a Telegram Desktop export"),
             (FIX / "bad" / "old_format.json", "no date_unixtime")]
    for n in (1, 200, len(src) // 2, len(src) - 3):
        p = tmp_path / f"cut{n}.json"
        p.write_bytes(src[:n])
        cases.append((p, "export"))
    for name, data, msg in (("array.json", b"[1, 2]", "not a Telegram Desktop export"), ("empty.json", b"", "empty"),
                            ("latin1.json", '{"name": "Ä"}'.encode("latin-1"), "not UTF-8"),
                            ("surrogate.json", src.replace("Скан страницы 1".encode(), b"\\ud800"), "surrogate"),
                            ("bigint.json", src.replace(b'"photo_file_size": 123456', b'"photo_file_size": 1' + b"0" * 25),
                             "64-bit"),
                            ("future.json", src.replace(b'"1772355600"', b'"999999999999"'), "out of range")):
        p = tmp_path / name
        p.write_bytes(data)
        cases.append((p, msg))
    return cases


def test_bad_input_one_line_exit_2_nothing_written(root, tmp_path):
    EventLog(root).append(_tap_received("100200300", 1, 1772000000, "есть", "2026-02-25T06:13:20.000Z", 1))
    before = snapshot(root)
    for path, msg in _bad_cases(tmp_path):
        r = imp(root, path)
        assert r.exit_code == 2, (path.name, r.output)
        assert r.stderr.count("\n") == 1 and msg in r.stderr, (path.name, r.stderr)
        assert "Traceback" not in r.output
        assert snapshot(root) == before, path.name


def test_export_folder_and_html_export(root, tmp_path):
    html = tmp_path / "ChatExport_2026-03-02"
    html.mkdir()
    (html / "messages.html").write_text("<html></html>")
    r = imp(root, html)
    assert r.exit_code == 2 and "HTML export" in r.stderr
    folder = tmp_path / "ChatExport_json"
    shutil.copytree(FIX / "bot_dm", folder)
    assert imp(root, folder).exit_code == 0


def test_help_has_an_example():
    r = run("import", "telegram-desktop", "--help")
    assert r.exit_code == 0 and "Example" in r.output


def test_bot_chat_without_user_messages_needs_chat_id(root, tmp_path):
    # derived from the hand-written fixture: only the bot's own messages remain, so the user's id is not in the file
    doc = orjson.loads((FIX / "bot_dm" / "result.json").read_bytes())
    doc["messages"] = [m for m in doc["messages"] if m.get("from_id") == "user7012345678"]
    path = tmp_path / "result.json"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    r = imp(root, path)
    assert r.exit_code == 2 and "--chat-id" in r.stderr
    r = imp(root, path, "--chat-id", "100200300", "--json")
    assert r.exit_code == 0 and summary(r)["added"] == 3
    assert [x[1] for x in rows(root)] == ["100200300"] * 3


def test_chat_id_that_selects_nothing_exits_1(root):
    before = snapshot(root)
    r = imp(root, FIX / "group", "--bot-id", BOT, "--chat-id", "-1009999")
    assert r.exit_code == 1 and "nothing imported" in r.stderr
    assert snapshot(root) == before


def test_progress_meter_on_a_terminal(capsys):
    from eventlog.cli.common import Meter
    from eventlog.cli.importer import import_progress

    meter = Meter()
    show = import_progress(meter)
    show("checking", 0, 8 << 20)
    show("checking", 1 << 20, 8 << 20)  # within 0.2 s of the last redraw: skipped
    show("importing", 8 << 20, 8 << 20)  # the last state: always drawn
    meter.close()
    err = capsys.readouterr().err
    assert "checking:   0% (0 of 8 MiB)" in err and "importing: 100% (8 of 8 MiB)" in err
    assert "(1 of 8 MiB)" not in err and err.endswith("\r\x1b[K")  # the line is cleared at the end


def test_readme_examples_run(tmp_path):
    # the README's import examples, each on the fixture of its kind (their paths are a user's download folders)
    import shlex

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("## Import: history from before the tap", 1)[1].split("\n## ", 1)[0]
    lines = [x.split("#")[0].strip() for x in section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()]
    kinds = [FIX / "bot_dm", FIX / "bot_dm", FIX / "account"]
    assert len(lines) == len(kinds)
    root = tmp_path / "root"
    root.mkdir()
    for line, path in zip(lines, kinds, strict=True):
        argv = shlex.split(line)[1:]
        argv[2] = str(path)
        r = CliRunner().invoke(cli, argv + ["--root", str(root)], catch_exceptions=False)
        assert r.exit_code == 0, (line, r.output)


def test_supergroup_with_its_migrated_basic_group_history(root):
    # tdesktop lists the old basic group's messages first, ids shifted by -10^9 (AdjustMigrateMessageIds); they are
    # the exporter's per-account numbers, merged by (message_id, time), not by message_id alone
    r = imp(root, FIX / "migrated", "--bot-id", BOT, "--json")
    assert r.exit_code == 0, r.output
    assert summary(r)["added"] == 5
    assert [(x[0], x[1], x[2], x[4], x[5]) for x in rows(root)] == [
        ("2025-12-01T09:00:00Z", "-1001444555666", "in", -999999999, "Старая группа: привет"),
        ("2025-12-01T09:05:00Z", "-1001444555666", "out", -999999998, "Привет из старой группы"),
        ("2025-12-02T10:30:00Z", "-1001444555666", "in", 2, "Теперь мы супергруппа 🎉"),
    ]
    before = snapshot(root)
    r = imp(root, FIX / "migrated", "--bot-id", BOT, "--json")
    assert summary(r)["added"] == 0 and summary(r)["duplicates"] == 5
    assert snapshot(root) == before
