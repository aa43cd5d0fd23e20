"""Issue 13: the agent remembers — the recall plugin on the REAL OpenClaw gateway (the pinned release), offline.

One gateway for the whole module: a patched private copy of openclaw (the tap writes the log), the plugin installed into
its config — JSON5 with comments, as OpenClaw documents it (issue 24) — by the real `eventlog agent install`, and a
fake model that calls tools (agent_llm.ToolLLM). `commands.ownerAllowFrom` makes one user the owner; the others are
ordinary allowlisted users. The checks run in file order: the fact after /new, the redacted secret, chat isolation
(and the owner's scope "all"), a group chat, the recall:query events, and last `agent uninstall` restoring the config
byte for byte. Secrets are generated at run time.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson
import pytest

from eventlog.smoke.harness import Gateway, HarnessError, clone_openclaw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_llm import ToolLLM  # noqa: E402

pytestmark = pytest.mark.e2e

ALNUM = string.ascii_letters + string.digits
EVENT_ID = re.compile(r"\[([0-9A-HJKMNP-TV-Z]{26})\]")
GROUP_ID = -1009000000000 - secrets.randbelow(10_000_000)


def planted_key() -> str:
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(80)) + "-" + \
        "".join(secrets.choice(ALNUM) for _ in range(12)) + "AA"


def leaked(haystack: str, secret: str, n: int = 12) -> str | None:
    return next((secret[i:i + n] for i in range(len(secret) - n + 1) if secret[i:i + n] in haystack), None)


def events(root: Path, sub: str) -> list[dict[str, Any]]:
    base = root / sub
    out: list[dict[str, Any]] = []
    for p in sorted(base.rglob("*.jsonl")) if base.exists() else []:
        out += [orjson.loads(ln) for ln in p.read_bytes().splitlines() if ln.strip()]
    return out


def wait_for(pred: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.25)


class AgentGateway(Gateway):
    """The harness writes the config it gets from config(); here that is what the real installer made of it."""

    data_dir: Path
    ctx_dump: Path
    pre_install: bytes = b""
    installed: bytes = b""

    def config_text(self) -> str:
        # JSON5 as OpenClaw documents it (issue 24): comments and a trailing comma, which install must keep.
        cfg = json.dumps(super().config(), indent=2)
        self.pre_install = f"// the e2e gateway, written by hand\n{cfg[:-2]}, // trailing comma\n}}\n".encode()
        self.config_path.write_bytes(self.pre_install)
        r = subprocess.run([sys.executable, "-m", "eventlog", "agent", "install", "--config", str(self.config_path),
                            "--json"], capture_output=True, text=True, env=dict(os.environ,
                                                                                  EVENTLOG_DATA_DIR=str(self.data_dir)))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["config_format"] == "json5"
        self.installed = self.config_path.read_bytes()
        assert b"// the e2e gateway, written by hand" in self.installed and b"// trailing comma" in self.installed
        return self.installed.decode()


def agent_cli(g: AgentGateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventlog", "agent", *args, "--config", str(g.config_path)],
                          capture_output=True, text=True, env=dict(os.environ, EVENTLOG_DATA_DIR=str(g.data_dir)))


@pytest.fixture(scope="module")
def agw(tmp_path_factory: pytest.TempPathFactory, openclaw_install: tuple[Path, Path]) -> Iterator[AgentGateway]:
    """The module's one gateway (gateway_factory builds plain Gateways, so this one is started and checked here)."""
    pkg = clone_openclaw(tmp_path_factory.mktemp("openclaw-agent"), openclaw_install[1])
    r = subprocess.run([sys.executable, "-m", "eventlog", "patch", "apply", "--openclaw", str(pkg), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path_factory.mktemp("agent")
    g = AgentGateway(work / "gw", openclaw_dir=pkg, llm=ToolLLM(), users=6,
                     env={"EVENTLOG_AGENT_CTX_DUMP": str(work / "ctx.jsonl")})
    g.data_dir = work / "data"
    g.ctx_dump = work / "ctx.jsonl"
    # The first allowlisted user is the owner; groups: one open group without the mention requirement.
    g.extra_config = {
        "commands": {"ownerAllowFrom": [f"telegram:{g.users[0]}"]},
        "channels": {"telegram": {"groups": {str(GROUP_ID): {"groupPolicy": "open", "requireMention": False}}}},
    }
    g.workdir.mkdir(parents=True)
    try:
        g.start()
    except HarnessError as exc:
        g.stop()
        pytest.fail(str(exc), pytrace=False)
    yield g
    g.stop()
    assert not g.net_violations(), g.net_violations()


@pytest.fixture(scope="module")
def users(agw: AgentGateway) -> dict[str, int]:
    return {"owner": agw.new_user(), "alice": agw.new_user(), "bob": agw.new_user()}


@pytest.fixture(scope="module")
def planted(agw: AgentGateway, users: dict[str, int]) -> dict[str, str]:
    """Alice's fact and secret, and Bob's fact, said in earlier conversations (the model just acknowledges)."""
    g, llm = agw, agw.llm
    facts = {"boat": "Zephyr" + secrets.token_hex(3), "key": planted_key(), "locker": "L" + secrets.token_hex(4)}
    for uid, text, ack in ((users["alice"], f"my boat is called {facts['boat']}", "Nice boat."),
                           (users["alice"], f"my anthropic key is {facts['key']} please keep it", "Noted."),
                           (users["bob"], f"my gym locker code is {facts['locker']}", "Got it.")):
        marker = secrets.token_hex(4)
        llm.script(ack, when=marker)
        g.chat(f"{text} m{marker}", user_id=uid, contains=ack, timeout=240)
    # The tap has them in the log before anything asks.
    assert wait_for(lambda: sum(1 for e in events(g.eventlog_root, "raw/telegram")
                                if e.get("event") == "message:received"
                                and any(v in (e.get("text") or "") for v in (facts["boat"], facts["locker"]))) >= 2)
    return facts


def ask(g: AgentGateway, uid: int, question: str, tool: str, args: dict[str, Any], *, chat_id: int | None = None
        ) -> tuple[str, Any, dict[str, Any]]:
    """The user asks; the model calls `tool`; → (tool result text, Telegram reply request, the LLM request body)."""
    marker = "q" + secrets.token_hex(4)
    llm = g.llm
    llm.call_tool(marker, tool, args)
    n = len(llm.tool_results)
    mark = g.telegram.mark()
    if chat_id is None:
        g.send_dm(f"{question} {marker}", uid)
        target = uid
    else:
        g.telegram.send_group(f"{question} {marker}", user_id=uid, chat_id=chat_id)
        target = chat_id
    first = next(r for r in llm.requests if marker in r.last_user_text()) if wait_for(
        lambda: any(marker in r.last_user_text() for r in llm.requests), 240) else None
    assert first is not None, "the model was never asked\n" + g.log_tail()
    name, result = llm.wait_tool_result(n, timeout=240)
    assert name == tool
    reply = g.wait_reply(target, since=mark, contains="log", timeout=240)
    # hideFromChannelProgress: no "Working…" progress message reached the chat while the tool ran
    before = [r.text() for r in g.telegram.calls(since=mark) if r.index < reply.index
              and r.method in ("sendMessage", "editMessageText")
              and str((r.body if isinstance(r.body, dict) else {}).get("chat_id")) == str(target)]
    assert before == [], before
    return result, reply, first.body


def test_fact_recalled_after_new_session(agw: AgentGateway, users: dict[str, int], planted: dict[str, str]) -> None:
    g = agw
    mark = g.telegram.mark()
    g.send_dm("/new", users["alice"])
    g.wait_reply(users["alice"], since=mark, timeout=240)  # OpenClaw confirms the reset
    result, reply, body = ask(g, users["alice"], "what is my boat called?", "eventlog_search",
                              {"query": "boat called"})
    # A fresh session: the earlier conversation is not in what the model was sent …
    assert planted["boat"] not in json.dumps(body["messages"])
    # … the tool was offered directly (not behind Tool Search), with the routing in its description …
    tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or [] if "function" in t}
    assert "eventlog_search" in tools and "eventlog_context" in tools, sorted(tools)
    assert "remember" in tools["eventlog_search"]["description"]
    # … and the fact came back from the log with its event id, and reached Telegram.
    assert planted["boat"] in result and EVENT_ID.search(result), result
    assert "in this chat" in result.splitlines()[0]
    assert planted["boat"] in reply.text(), reply.text()


def test_context_around_a_hit(agw: AgentGateway, users: dict[str, int], planted: dict[str, str]) -> None:
    g = agw
    found = [e for e in events(g.eventlog_root, f"raw/telegram/chats/{users['alice']}")
             if planted["boat"] in (e.get("text") or "") and e.get("event") == "message:received"]
    eid = found[0]["id"]
    result, reply, _ = ask(g, users["alice"], "show me that conversation", "eventlog_context", {"id": eid})
    assert f"> [{eid}]" in result and "Nice boat." in result, result
    assert leaked(result, planted["key"]) is None


def test_search_with_the_turns_around_each_hit(agw: AgentGateway, users: dict[str, int],
                                               planted: dict[str, str]) -> None:
    """Issue 27 item 4: `context: N` through the real gateway — the schema the model gets has it, each hit comes with
    its chat's turns (the reply after the fact), redacted, and never another chat's."""
    g = agw
    result, _, body = ask(g, users["alice"], "what did you say when I named my boat?", "eventlog_search",
                          {"query": "boat called", "context": 2})
    tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or [] if "function" in t}
    assert tools["eventlog_search"]["parameters"]["properties"]["context"]["maximum"] == 5
    assert "context: 2" in tools["eventlog_search"]["description"]
    lines = result.splitlines()
    assert "with up to 2 message(s) before and after it" in lines[0], lines[0]
    assert any(ln.startswith("> [") and planted["boat"] in ln for ln in lines), result
    assert any(ln.startswith("  [") for ln in lines) and "Nice boat." in result, result
    # the message after "Nice boat." holds Alice's key: shown as a turn, it is redacted like a hit
    assert "[REDACTED:" in result and leaked(result, planted["key"]) is None
    assert planted["locker"] not in result  # Bob's chat is not Alice's


def test_secret_comes_back_redacted(agw: AgentGateway, users: dict[str, int], planted: dict[str, str]) -> None:
    result, reply, _ = ask(agw, users["alice"], "what was my anthropic key?", "eventlog_search",
                           {"query": "anthropic key"})
    assert "[REDACTED:" in result, result
    assert leaked(result, planted["key"]) is None
    assert leaked(reply.text(), planted["key"]) is None
    # the log itself has the inbound message as received (the tap logs what arrived): the redaction is the tool's
    raw = [e for e in events(agw.eventlog_root, f"raw/telegram/chats/{users['alice']}")
           if planted["key"] in (e.get("text") or "")]
    assert raw, "the planted secret should be in the log for this test to mean anything"


def test_non_owner_cannot_read_another_chat(agw: AgentGateway, users: dict[str, int],
                                            planted: dict[str, str]) -> None:
    result, reply, _ = ask(agw, users["alice"], "what is the gym locker code?", "eventlog_search",
                           {"query": f"locker code {planted['locker']}", "scope": "all"})
    assert planted["locker"] not in result and planted["locker"] not in reply.text()
    assert "only for the owner" in result, result
    # The owner's scope "all" does reach Bob's chat: the refusal above is the scope rule, not a failed search.
    result, reply, _ = ask(agw, users["owner"], "what is bob's locker code?", "eventlog_search",
                           {"query": "locker code", "scope": "all"})
    assert planted["locker"] in result and "all chats" in result.splitlines()[0], result
    # And context by id from another chat is refused to a non-owner too.
    bob_ev = next(e for e in events(agw.eventlog_root, f"raw/telegram/chats/{users['bob']}")
                  if planted["locker"] in (e.get("text") or ""))
    result, _, _ = ask(agw, users["alice"], "open that message", "eventlog_context", {"id": bob_ev["id"]})
    assert planted["locker"] not in result and "no event" in result, result


def test_group_chat_is_scoped_to_the_group(agw: AgentGateway, users: dict[str, int],
                                           planted: dict[str, str]) -> None:
    g = agw
    marker = secrets.token_hex(4)
    g.llm.script("Welcome.", when=marker)
    mark = g.telegram.mark()
    g.telegram.send_group(f"the projector pin is P{marker} g{marker}", user_id=users["alice"], chat_id=GROUP_ID)
    g.wait_reply(GROUP_ID, since=mark, contains="Welcome.", timeout=240)
    result, _, _ = ask(g, users["alice"], "what is the projector pin and my boat?", "eventlog_search",
                       {"query": f"projector pin boat {planted['boat']}", "scope": "all"}, chat_id=GROUP_ID)
    assert f"P{marker}" in result and planted["boat"] not in result, result
    assert f"this chat (telegram {GROUP_ID})" in result.splitlines()[0]
    dumps = [json.loads(ln) for ln in g.ctx_dump.read_text().splitlines()]  # type: ignore[attr-defined]
    group = [d for d in dumps if d["scope"]["chat"] == str(GROUP_ID)]
    assert group, dumps
    print("ctx in a group:", json.dumps(group[-1]))
    print("ctx in a DM:", json.dumps(next(d for d in dumps if d["scope"]["chat"] == str(users["alice"]))))


def test_every_recall_is_on_the_record(agw: AgentGateway, users: dict[str, int]) -> None:
    recs = [e for e in events(agw.eventlog_root, "raw/system/chats/eventlog") if e.get("event") == "recall:query"]
    assert len(recs) >= 7, recs
    first = next(e for e in recs if e["args"].get("query") == "boat called")
    assert first["tool"] == "eventlog_search" and first["scope"] == "chat"
    assert first["scope_chat"] == str(users["alice"]) and first["hits"] >= 1 and first["payload"]["ids"]
    assert isinstance(first["latency_ms"], int) and first["from"] == {"id": str(users["alice"])}
    assert first["origin"]["chat_from"] in ("nativeChannelId", "deliveryContext.to")
    denied = [e for e in recs if e["args"].get("scope") == "all" and e["scope"] == "chat"]
    assert denied, "the non-owner's scope 'all' request is recorded with the scope actually used"
    r = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(agw.eventlog_root)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_uninstall_restores_config_byte_for_byte(agw: AgentGateway) -> None:
    st = agent_cli(agw, "status", "--json")
    assert st.returncode == 0, st.stdout + st.stderr
    assert agw.config_path.read_bytes() == agw.installed, "the gateway rewrote its config"
    r = agent_cli(agw, "uninstall")
    assert r.returncode == 0, r.stderr
    assert "byte for byte" in r.stdout
    assert agw.config_path.read_bytes() == agw.pre_install
    st = agent_cli(agw, "status", "--json")
    assert st.returncode == 1 and not json.loads(st.stdout)["registered"]["entry"]
