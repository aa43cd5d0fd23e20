"""Issue 27 item 4, answers that need more than one turn: a hit's date for "when" questions, `eventlog_search
{context: N}` (each hit with its neighbouring turns, same scope and redaction as a hit, erased content never shown,
inside the tool's cap with the neighbours trimmed first), `eventlog_context` by a hit's id, and relative dates in the
question — through the tool backend, the CLI and the plugin's JavaScript under real Node."""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eventlog.agent import turns
from eventlog.agent.relative import question_period
from eventlog.agent.tool import TEXT_CAP, handle
from eventlog.cli.main import cli
from eventlog.ops.trail import concerns
from eventlog.search import index
from eventlog.store.writer import EventLog

from test_agent import planted_key, run_plugin, system_events

REPO = Path(__file__).resolve().parents[1]
UTC = timezone.utc
HIT = re.compile(r"^> \[([0-9A-Z]{26})\]")
NEAR = re.compile(r"^  \[([0-9A-Z]{26})\]")


def m(chat: str, ts: str, text: str, name: str = "Ann", account: str | None = None) -> dict[str, Any]:
    ev = {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "direction": "in",
          "from": {"id": 5, "name": name}, "text": text}
    if account:
        ev["account"] = account
    return ev


@pytest.fixture()
def cabin(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Chat 111 talks about a cabin over two days, with chat 222 and account ops's chat 111 writing in between."""
    r = tmp_path / "log"
    key = planted_key()
    evs = {
        "old": m("111", "2023-05-07T09:00:00Z", "the zebracanary plan from sunday"),
        "ask": m("111", "2023-05-08T10:00:00Z", "shall we book the cabin at the lake?"),
        "yes": m("111", "2023-05-08T10:01:00Z", "yes, that one", name="Bo"),
        "other": m("222", "2023-05-08T10:01:30Z", "chat two says kumquat"),
        "ops": m("111", "2023-05-08T10:01:40Z", "account ops says persimmon", account="ops"),
        "key": m("111", "2023-05-08T10:01:50Z", f"card for it: {key}"),
        "paid": m("111", "2023-05-08T10:02:00Z", "I paid the deposit for the cabin"),
        "bye": m("111", "2023-05-08T10:03:00Z", "great, see you there", name="Bo"),
        "next": m("111", "2023-05-09T08:00:00Z", "packing the car tomorrow"),
    }
    log = EventLog(r, fsync="never")
    ids = {k: log.append(ev)["id"] for k, ev in evs.items()}
    index.update(r, vectors=False)
    return r, {**ids, "secret": key}


def search(root: Path, args: dict[str, Any], **req: Any) -> dict[str, Any]:
    out = handle({"tool": "search", "chat": "111", "args": {"mode": "bm25", **args}, **req}, root, record=False)
    assert out["ok"], out["text"]
    return out


def test_a_hit_carries_its_date_for_when_questions(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    for mode in (None, "bm25", "text"):  # the default (hybrid) too
        args = {"query": "when did we pay the deposit?" if mode != "text" else "deposit"}
        out = handle({"tool": "search", "chat": "111", "args": {**args, **({"mode": mode} if mode else {})}}, root,
                     record=False)
        line = next(ln for ln in out["text"].splitlines() if ln.startswith(f"[{d['paid']}]"))
        assert line.startswith(f"[{d['paid']}] 2023-05-08 10:02Z in Ann: I paid the deposit"), line


def test_context_shows_each_hit_with_its_turns_in_its_own_scope(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    plain = search(root, {"query": "deposit"})
    out = search(root, {"query": "deposit", "context": 3})
    assert out["ids"] == plain["ids"] == [d["paid"]]  # context changes what is shown around a hit, not the ranking
    lines = out["text"].splitlines()
    assert "with up to 3 message(s) before and after it" in lines[0]
    body = lines[1:]
    shown = [(HIT.match(ln) or NEAR.match(ln))[1] for ln in body]  # type: ignore[index]
    # oldest first, the chat's own turns only: not chat 222's, not account ops's chat with the same id
    assert shown == [d["ask"], d["yes"], d["key"], d["paid"], d["bye"], d["next"]]
    assert HIT.match(body[3]) and out["context_ids"] == [d["key"], d["bye"], d["yes"], d["next"], d["ask"]]
    text = out["text"]
    assert "kumquat" not in text and "persimmon" not in text
    assert "[REDACTED:anthropic-api-key]" in text and d["secret"][:20] not in text  # a neighbour is redacted
    assert "2023-05-09 08:00Z in Ann: packing the car" in text  # across the day file, with its date
    # the other account's chat 111 gets its own turns and nobody else's
    ops = handle({"tool": "search", "chat": "111", "account": "ops",
                  "args": {"query": "persimmon", "mode": "bm25", "context": 3}}, root, record=False)
    assert ops["ids"] == [d["ops"]] and ops["context_ids"] == [] and "cabin" not in ops["text"]


def test_context_for_an_owner_search_stays_in_each_hits_chat(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    out = search(root, {"query": "kumquat", "scope": "all", "context": 2}, all_allowed=True)
    assert out["ids"] == [d["other"]] and out["context_ids"] == []  # chat 222 has one message: no neighbours
    assert "cabin" not in out["text"] and "yes, that one" not in out["text"]


def test_overlapping_turns_are_shown_once(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    out = search(root, {"query": "cabin", "context": 3})
    assert set(out["ids"]) == {d["ask"], d["paid"]}
    text = out["text"]
    assert text.count("yes, that one") == 1 and "(shown above)" in text and "(a hit, shown with its own turns)" in text
    assert text.count("--\n") == 1 and sum(1 for ln in text.splitlines() if HIT.match(ln)) == 2


def test_erased_turns_never_appear(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    assert "zebracanary" in search(root, {"query": "book cabin lake", "context": 5})["text"]
    r = CliRunner().invoke(cli, ["forget", "--until", "2023-05-07", "--tz", "UTC", "--reason", "test", "--yes",
                                 "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = search(root, {"query": "book cabin lake", "context": 5})
    assert out["ids"][0] == d["ask"] and "zebracanary" not in out["text"] and d["old"] not in out["text"]
    ctx = handle({"tool": "context", "chat": "111", "args": {"id": d["ask"], "before": 20}}, root, record=False)
    assert "zebracanary" not in ctx["text"] and ctx["ids"][0] == d["ask"]


def test_the_cap_trims_turns_first_never_a_hit(tmp_path: Path) -> None:
    root = tmp_path / "log"
    evs = []
    for day in range(1, 21):  # a needle a day among hay, every line long: the cap binds
        for k in range(9):
            text = f"needle of day {day} " if k == 4 else f"hay {k} "
            evs.append(m("5", f"2026-10-{day:02d}T10:0{k}:00Z", text + "x" * 600))
    EventLog(root, fsync="never").append_many(evs)
    index.update(root, vectors=False)
    for limit in (10, 20):
        plain = search(root, {"query": "needle", "limit": limit}, chat="5")
        out = search(root, {"query": "needle", "limit": limit, "context": 5}, chat="5")
        assert len(out["text"]) <= TEXT_CAP and len(plain["text"]) <= TEXT_CAP
        hits = [HIT.match(ln)[1] for ln in out["text"].splitlines() if HIT.match(ln)]  # type: ignore[index]
        assert len(plain["ids"]) == limit and out["ids"] == plain["ids"] == hits  # no hit gave way to a turn
        groups = out["text"].split("\n--\n")
        near = [sum(1 for ln in g.splitlines() if NEAR.match(ln)) for g in groups]
        assert 0 < sum(near) < 2 * 5 * limit  # some turns shown, most trimmed
        # nearest first over every hit in rank order: one turn each side before anyone's second
        assert max(near) <= 2 and near == sorted(near, reverse=True), near
        for g in groups:  # a turn shown is the hit's nearest: the hay just before and after it
            lines = g.splitlines()
            at = next(i for i, ln in enumerate(lines) if HIT.match(ln))
            assert all(" hay 3 " in ln for ln in lines[:at] if NEAR.match(ln))
            assert all(" hay 5 " in ln for ln in lines[at + 1:])


def test_bad_context_is_a_bad_argument(cabin: tuple[Path, dict[str, str]]) -> None:
    root, _ = cabin
    for bad in (-1, 6, "two", True):
        out = handle({"tool": "search", "chat": "111", "args": {"query": "cabin", "context": bad}}, root,
                     record=False)
        assert not out["ok"] and out["error_kind"] == "bad_arguments" and "context must be" in out["text"]


def test_the_turns_shown_are_on_the_record(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    out = handle({"tool": "search", "chat": "111", "args": {"query": "deposit", "mode": "bm25", "context": 1}}, root)
    rec = [e for e in system_events(root) if e["event"] == "recall:query"][-1]
    assert rec["payload"] == {"ids": [d["paid"]], "context_ids": out["context_ids"]} == \
        {"ids": [d["paid"]], "context_ids": [d["key"], d["bye"]]}
    # forgetting a turn that was shown beside a hit forgets the call too (the hit alone is not what it showed)
    assert concerns(None, {d["bye"]})(rec) and not concerns(None, {d["ask"]})(rec)


def test_context_takes_a_hit_id_as_the_line_shows_it(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    out = handle({"tool": "context", "chat": "111", "args": {"id": f"[{d['yes'].lower()}]", "before": 1, "after": 1}},
                 root, record=False)
    assert out["ok"] and out["ids"] == [d["ask"], d["yes"], d["key"]], out["text"]
    assert out["text"].splitlines()[2].startswith(f"> [{d['yes']}] 2023-05-08 10:01Z in Bo: yes, that one")


def test_cli_agent_search_context(cabin: tuple[Path, dict[str, str]]) -> None:
    root, d = cabin
    r = CliRunner().invoke(cli, ["agent", "search", "deposit", "--chat", "111", "--mode", "bm25", "--context", "1",
                                 "--json", "--root", str(root)], catch_exceptions=False)
    out = json.loads(r.output)
    assert r.exit_code == 0 and out["ids"] == [d["paid"]] and out["context_ids"] == [d["key"], d["bye"]]


def test_relative_phrases_map_to_periods() -> None:
    tz = timezone(timedelta(hours=3))
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)  # a Wednesday, 15:00 in the zone

    def day(s: str) -> tuple[datetime, datetime]:
        d = datetime.fromisoformat(s).replace(tzinfo=tz)
        return d.astimezone(UTC), (d + timedelta(days=1)).astimezone(UTC)

    cases = {
        "what did we decide yesterday?": ("yesterday", *day("2026-12-01")),
        "что было вчера": ("yesterday", *day("2026-12-01")),
        "и позавчера тоже": ("2-days-ago", *day("2026-11-30")),
        "the day before yesterday": ("2-days-ago", *day("2026-11-30")),
        "what did Ann say 3 days ago": ("3-days-ago", *day("2026-11-29")),
        "что он писал 5 дней назад": ("5-days-ago", *day("2026-11-27")),
        "a week ago, the plumber": ("1-weeks-ago", day("2026-11-23")[0], day("2026-11-29")[1]),
        "неделю назад": ("1-weeks-ago", day("2026-11-23")[0], day("2026-11-29")[1]),
        "две недели назад": ("2-weeks-ago", day("2026-11-16")[0], day("2026-11-22")[1]),
        "last week": ("last-week", day("2026-11-23")[0], day("2026-11-29")[1]),
        "на прошлой неделе": ("last-week", day("2026-11-23")[0], day("2026-11-29")[1]),
        "in this month": ("this-month", day("2026-12-01")[0], day("2026-12-31")[1]),
        "в прошлом году": ("last-year", day("2025-01-01")[0], day("2025-12-31")[1]),
        "this year's budget": ("this-year", day("2026-01-01")[0], day("2026-12-31")[1]),
    }
    for q, want in cases.items():
        assert question_period(q, tz, now) == want, q
    for q in ("what about the plumber", "10000 days ago", "yesterdays", "agony"):
        assert question_period(q, tz, now) is None, q


def test_the_plugin_passes_context_and_says_when_to_read_around(cabin: tuple[Path, dict[str, str]],
                                                                 tmp_path: Path) -> None:
    from eventlog.agent import install as ins
    from eventlog.smoke.harness import HarnessError, check_install

    try:
        node, _ = check_install()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    root, d = cabin
    dm = {"nativeChannelId": "111", "requesterSenderId": "9", "deliveryContext": {"channel": "telegram", "to": "111"}}
    s, c = run_plugin(node, tmp_path, {"command": ins.default_command(), "helper": True}, [
        ["eventlog_search", dm, {"query": "deposit", "mode": "bm25", "context": 1}],
        ["eventlog_context", dm, {"id": d["paid"], "before": 1, "after": 0}],
    ], {"EVENTLOG_ROOT": str(root)})
    assert s["details"]["ok"] and s["details"]["ids"] == [d["paid"]]
    assert [ln[:2] for ln in s["text"].splitlines()[1:]] == ["  ", "> ", "  "] and "see you there" in s["text"]
    assert "context: 2" in s["desc"] and "eventlog_context" in s["desc"] and "\"when\"" in s["desc"]
    assert "hit's id" in c["desc"] and "before or after" in c["desc"]
    assert c["text"].splitlines()[2].startswith(f"> [{d['paid']}]")
    index_mjs = (REPO / "eventlog" / "agent" / "plugin" / "index.mjs").read_text()
    assert f"const MAX_CONTEXT = {turns.MAX_CONTEXT};" in index_mjs and "maximum: MAX_CONTEXT" in index_mjs
