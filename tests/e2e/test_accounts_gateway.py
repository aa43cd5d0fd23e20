"""Issue 24 part 1 on the REAL gateway, offline: two Telegram accounts in one gateway (two bot tokens, each against its
own fake Bot API), each bound to its own agent. One user writes to both bots, so both conversations have the user's id
as chat id. The log keeps them apart — two files under the two layouts' paths, two chains, `verify` clean — and the
recall tool behind each bot finds only what the user told that bot.
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest

from eventlog.smoke.fake_telegram import FakeTelegram
from eventlog.smoke.harness import HarnessError, clone_openclaw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_llm import ToolLLM  # noqa: E402
from test_agent_gateway import AgentGateway, wait_for  # noqa: E402

pytestmark = pytest.mark.e2e

B_ID = 7000002


class SecondBot(FakeTelegram):
    """The fake Bot API of the second account's bot: its own token and bot identity."""

    @property
    def bot_user(self) -> dict[str, Any]:
        return {"id": B_ID, "is_bot": True, "first_name": "Second Test Bot", "username": "second_test_bot"}


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.is_file() else []


def partition(root: Path, rel: str) -> list[dict[str, Any]]:
    return [e for p in sorted((root / rel).rglob("*.jsonl")) for e in lines(p)]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory, openclaw_install: tuple[Path, Path]
        ) -> Iterator[tuple[AgentGateway, SecondBot]]:
    pkg = clone_openclaw(tmp_path_factory.mktemp("openclaw-accounts"), openclaw_install[1])
    r = subprocess.run([sys.executable, "-m", "eventlog", "patch", "apply", "--openclaw", str(pkg), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path_factory.mktemp("accounts")
    second = SecondBot(token=f"{B_ID}:AAFakeTokenForTheSecondTestBot0000000").start()
    g = AgentGateway(work / "gw", openclaw_dir=pkg, llm=ToolLLM(), users=2,
                     env={"EVENTLOG_AGENT_CTX_DUMP": str(work / "ctx.jsonl")})
    g.data_dir = work / "data"
    g.ctx_dump = work / "ctx.jsonl"
    g.extra_config = {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "bee"}]},
        "bindings": [{"agentId": "main", "match": {"channel": "telegram", "accountId": "default"}},
                     {"agentId": "bee", "match": {"channel": "telegram", "accountId": "b"}}],
        "channels": {"telegram": {"accounts": {"b": {
            "enabled": True, "botToken": second.token, "apiRoot": second.url, "dmPolicy": "allowlist",
            "allowFrom": [str(u) for u in g.users]}}}},
    }
    g.workdir.mkdir(parents=True)
    try:
        mark = second.mark()
        g.start()
        second.wait_for(method="getUpdates", since=mark, timeout=240)
    except (HarnessError, TimeoutError) as exc:
        g.stop()
        second.stop()
        pytest.fail(f"{exc}\n{g.log_tail()}", pytrace=False)
    yield g, second
    g.stop()
    second.stop()
    assert not g.net_violations(), g.net_violations()


def converse(g: AgentGateway, bot: FakeTelegram, uid: int, text: str, ack: str) -> None:
    marker = secrets.token_hex(4)
    g.llm.script(ack, when=marker)
    mark = bot.mark()
    bot.send_dm(f"{text} m{marker}", user_id=uid)
    bot.wait_for(lambda r: r.method in ("sendMessage", "editMessageText") and ack in r.text(), since=mark, timeout=240)


def ask(g: AgentGateway, bot: FakeTelegram, uid: int, args: dict[str, Any]) -> str:
    """The user asks this bot; the model calls eventlog_search with `args`; → the tool's result text."""
    marker = "q" + secrets.token_hex(4)
    g.llm.call_tool(marker, "eventlog_search", args)
    n = len(g.llm.tool_results)
    mark = bot.mark()
    bot.send_dm(f"what is my boat called? {marker}", user_id=uid)
    name, result = g.llm.wait_tool_result(n, timeout=240)
    assert name == "eventlog_search"
    bot.wait_for(lambda r: r.method in ("sendMessage", "editMessageText") and "log" in r.text(), since=mark,
                 timeout=240)
    return result


def test_one_user_two_bots_two_partitions_and_scoped_recall(two: tuple[AgentGateway, SecondBot]) -> None:
    g, second = two
    uid = g.new_user()
    boat_a, boat_b = "Marlin" + secrets.token_hex(3), "Seagull" + secrets.token_hex(3)
    converse(g, g.telegram, uid, f"my boat is called {boat_a}", "Nice boat.")
    converse(g, second, uid, f"my boat is called {boat_b}", "Lovely boat.")
    root = g.eventlog_root
    a_rel, b_rel = f"raw/telegram/chats/{uid}", f"raw/telegram/accounts/b/chats/{uid}"
    # the tap logs a reply once Telegram answered it: wait for both bots' replies to be on the record
    for rel, ack in ((a_rel, "Nice boat."), (b_rel, "Lovely boat.")):
        assert wait_for(lambda rel=rel, ack=ack: any(e.get("direction") == "out" and ack in (e.get("text") or "")
                                                     for e in partition(root, rel))), (rel, partition(root, rel))
    a, b = partition(root, a_rel), partition(root, b_rel)
    # two files: each bot's conversation (received and sent) in its own partition, nothing of the other's
    assert any(boat_a in (e.get("text") or "") for e in a) and not any(boat_b in (e.get("text") or "") for e in a)
    assert not any(boat_a in (e.get("text") or "") or "Nice boat." in (e.get("text") or "") for e in b)
    assert not any("Lovely boat." in (e.get("text") or "") for e in a)
    assert {e.get("account") for e in a} == {"default"} and {e.get("account") for e in b} == {"b"}
    assert {e["direction"] for e in b} >= {"in", "out"}
    # two chains, each from its own file's genesis; verify clean
    firsts = {rel: lines(sorted((root / rel).rglob("*.jsonl"))[0])[0]["prev"] for rel in (a_rel, b_rel)}
    assert firsts[a_rel] != firsts[b_rel]
    v = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(root), "--json"], capture_output=True,
                       text=True)
    assert v.returncode == 0 and json.loads(v.stdout.splitlines()[-1])["ok"], v.stdout + v.stderr
    # the recall tool behind each bot sees its own account's chat with the user, not the other's
    got_b = ask(g, second, uid, {"query": "boat called"})
    assert boat_b in got_b and boat_a not in got_b, got_b
    got_a = ask(g, g.telegram, uid, {"query": "boat called"})
    assert boat_a in got_a and boat_b not in got_a, got_a
    # what the gateway passed (the plugin's diagnostics): the account each conversation runs on
    seen = [json.loads(x) for x in g.ctx_dump.read_text().splitlines()]
    assert {s["scope"]["account"] for s in seen} >= {"b"}, seen
    recs = [e for e in partition(root, "raw/system") if e.get("event") == "recall:query"]
    assert [r["scope_account"] for r in recs[-2:]] == ["b", "default"], recs[-2:]
