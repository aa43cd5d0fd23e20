"""Issue 27 item 5: the agent tool and `eventlog search` give the same ranking for the same query and scope — the
real command (`eventlog search --json`) beside the tool backend, over an index with the model's vectors, in the
default mode and bm25, for a chat of the default account, the same chat id under another account, the owner's scope
"all", a relative date in the question, and with the tool's `context` option."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eventlog.agent.tool import handle
from eventlog.cli.main import cli
from eventlog.recall import when
from eventlog.search import DEFAULT_WEIGHT, index
from eventlog.store.writer import EventLog

QUERIES = ("what did we decide about the plumber", "cabin deposit", "когда придёт сантехник", "wifi password",
           "what did Ann say about the lake")


def m(chat: str, ts: datetime, text: str, name: str, account: str | None = None) -> dict[str, Any]:
    ev = {"event": "message:received", "channel": "telegram", "chat_id": chat, "direction": "in",
          "ts": ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"), "from": {"id": 7, "name": name},
          "text": text}
    if account:
        ev["account"] = account
    return ev


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("same") / "log"
    y = when.period("yesterday", when.zone())  # in the zone the suite runs in, as the tool and the command read it
    yday = y.start + (y.end - y.start) / 2
    old = yday - timedelta(days=40)
    texts = ["the plumber comes on Friday, we decided to pay cash", "I paid the cabin deposit at the lake",
             "сантехник придёт в пятницу", "the wifi password is on the fridge", "Ann: the lake was cold",
             "we decided nothing about the plumber yet", "deposit back after the cabin check",
             "пароль от wifi на холодильнике", "lunch at noon?", "the plumber was late again"]
    evs = []
    for i, text in enumerate(texts):
        for chat, account in (("111", None), ("111", "ops"), ("222", None)):
            when_ = (yday if i >= 7 else old) + timedelta(minutes=i)
            evs.append(m(chat, when_, f"{text} ({chat} {account or 'default'})", ["Ann", "Bo"][i % 2], account))
    EventLog(r, fsync="never").append_many(evs)
    index.update(r)  # with the model's vectors: the default mode really is hybrid here
    return r


def command(root: Path, query: str, *args: str) -> list[str]:
    r = CliRunner().invoke(cli, ["search", query, "--json", "--limit", "5", *args, "--root", str(root)],
                           catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    lines = [json.loads(ln) for ln in r.output.splitlines() if ln.startswith("{")]
    return [h["id"] for h in lines]


def tool(root: Path, query: str, account: str | None = None, **args: Any) -> dict[str, Any]:
    req: dict[str, Any] = {"tool": "search", "chat": "111", "args": {"query": query, "limit": 5, **args}}
    if account:
        req["account"] = account
    if args.get("scope") == "all":
        req["all_allowed"] = True
    out = handle(req, root, record=False)
    assert out["ok"], out["text"]
    return out


def test_the_command_default_weight_is_the_library_default() -> None:
    import eventlog.cli.search  # noqa: F401  (commands load lazily)
    opt = next(p for p in cli.commands["search"].params if p.name == "weight")
    assert opt.default == DEFAULT_WEIGHT


@pytest.mark.parametrize("mode", [None, "bm25"])
def test_same_ranking_for_a_chat_of_each_account(root: Path, mode: str | None) -> None:
    opt = ["--mode", mode] if mode else []
    for q in QUERIES:
        for account in ("default", "ops"):
            out = tool(root, q, None if account == "default" else account, **({"mode": mode} if mode else {}))
            assert out["mode_used"] == (mode or "hybrid"), out["text"]
            assert out["ids"] and out["ids"] == command(root, q, "--chat", "111", "--account", account, *opt), (q, account)
            assert all(f"({'111'} {account})" in ln for ln in out["text"].splitlines()[1:]), out["text"]
        # the owner's scope "all": every chat of the request's account
        out = tool(root, q, scope="all", **({"mode": mode} if mode else {}))
        assert out["ids"] == command(root, q, "--account", "default", *opt), q
        assert " (222 default)" in out["text"] or " (111 default)" in out["text"]


def test_same_ranking_with_a_relative_date_in_the_question(root: Path) -> None:
    for q in ("what did we decide about the plumber yesterday", "пароль wifi вчера", "cabin deposit last week"):
        out = tool(root, q)
        got = command(root, q, "--chat", "111", "--account", "default")
        assert out["ids"] == got, q
        assert "the period the question names" in out["text"]
        if "last week" not in q:  # yesterday holds hits: only yesterday's messages, all of them newer than 40 days
            assert "searched yesterday" in out["text"]
            texts = [ln for ln in out["text"].splitlines()[1:]]
            assert texts and all(any(w in ln for w in ("plumber was late", "холодильнике", "lunch")) for ln in texts)
            assert got != command(root, q, "--chat", "111", "--account", "default", "--no-question-dates")
    # the command says so on stderr, as the tool's header does
    r = CliRunner().invoke(cli, ["search", "what did we decide about the plumber yesterday", "--chat", "111",
                                 "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0 and "eventlog: searched yesterday (" in r.stderr and "the period the question names" \
        in r.stderr, r.stderr
    # an explicit range wins over the question's phrase, in both
    q = "what did we decide about the plumber yesterday"
    out = tool(root, q, since="60d")
    assert "the period the question names" not in out["text"]
    assert out["ids"] == command(root, q, "--chat", "111", "--account", "default", "--since", "60d")


def test_same_ranking_with_context(root: Path) -> None:
    for q in QUERIES:
        out = tool(root, q, context=2)
        assert out["ids"] == tool(root, q)["ids"] == command(root, q, "--chat", "111", "--account", "default"), q
        assert out["context_ids"] and not set(out["context_ids"]) & set(out["ids"])
