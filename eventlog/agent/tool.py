"""One tool call of the recall plugin: scope, search or context, DLP redaction, size caps, the `recall:query` event.

The plugin (plugin/index.mjs) sends one request object, built from the gateway's trusted context and the model's
arguments:

    {"tool": "search" | "context", "args": {...the model's arguments...},
     "chat": "<chat id of this conversation, from the gateway>" | null, "channel": "telegram",
     "account": "<the OpenClaw account the conversation runs on, from the gateway>" (absent: "default"),
     "all_accounts": ["<account>", …] | "*" (absent: the request's account; the plugin's `allScopeAccounts`),
     "all_allowed": <bool: the sender is the owner or on the plugin's allowlist>,
     "requester": "<sender id>" | null, "t0_ms": <epoch ms when the plugin got the call>, "origin": {...}}

and gets back `{"ok": bool, "text": <what the model reads>, "hits": n, "ids": [...], "scope": ..., ...}`. Nothing the
model sends can widen the scope: the scope is a chat of an account — (account, chat), since one user's private chat
with two of the gateway's bots has one chat id — `args.scope = "all"` is honoured only with `all_allowed` and covers the
request's account's chats (or `all_accounts`), and the chat is always the request's `chat`. Every line shown passes the DLP scanner and is redacted; the whole text is capped.
"""
from __future__ import annotations

import html
import re
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Callable

from ..errors import EventlogError
from ..store import render
from ..recall import when
from ..store.layout import resolve_root
from ..store.schema import ACCOUNT_RE, DEFAULT_ACCOUNT
from .turns import MAX_CONTEXT, gather

MAX_LIMIT = 50
DEFAULT_LIMIT = 10
SNIPPET_CHARS = 320
LINE_CHARS = 480
TEXT_CAP = 12_000
MODES = ("hybrid", "bm25", "text", "fuzzy")
DEFAULT_MODE = "hybrid"  # the library's ranking (eventlog search's default); text and fuzzy are grep-like, asked for
CANNOT_SEE = ("The log holds Telegram messages received and sent since the eventlog tap was installed; it cannot see "
              "other channels, tool outputs, files' contents, or chats outside your scope.")
# Characters of the model's query, for every mode. The same number as eventlog.search.MAX_QUERY_CHARS and the
# plugin schema's maxLength (tests/test_bounds_agent.py holds them equal); not imported from there, because the
# search package loads numpy, which a text-mode call never needs.
MAX_QUERY_CHARS = 2_000
WORDS_CHARS = 200  # of the query words echoed in the header
_TAG = re.compile(r"<[^>]*>")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class ToolError(EventlogError):
    """Bad arguments from the model: reported to it as text, never raised into the turn."""


def _scanner(root: Path) -> Any:
    from ..dlp.engine import open_scanner

    return open_scanner(root)  # the rules module honours $EVENTLOG_DLP_RULES, as the tap does


def redact(scanner: Any, text: str) -> str:
    res = scanner.scan(text)
    return scanner.redact(text, res.findings)[0]


def _plain(ev: dict[str, Any]) -> str:
    text = v if isinstance(v := ev.get("text"), str) else ""
    if ev.get("parse_mode") == "HTML" or (ev.get("direction") == "out" and "</" in text):
        text = html.unescape(_TAG.sub("", text))
    return text


def _window(text: str, words: list[str]) -> str:
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    low = flat.lower()
    pos = min((p for p in (low.find(w) for w in words) if p >= 0), default=0)
    start = max(0, min(pos - SNIPPET_CHARS // 3, len(flat) - SNIPPET_CHARS))
    cut = flat[start:start + SNIPPET_CHARS]
    return ("…" if start else "") + cut + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def one_line(s: str) -> str:
    """s with every control character, newline and line/paragraph separator escaped (`\\n`, `\\x1b`, `\\u2028`):
    a name or text cannot start a line of its own in what the model reads (a forged `out assistant: …`)."""
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1], s)


def line_for(scanner: Any, ev: dict[str, Any], words: list[str] | None = None, *, full: bool = False) -> str:
    """`[<event id>] <time> <in|out> <sender>: <snippet>`; the text is redacted before it is cut, the line after."""
    body = redact(scanner, _plain(ev))
    body = " ".join(body.split()) if full else _window(body, words or [])
    ts = v if isinstance(v := ev.get("ts"), str) else "?"
    when = ts[:16].replace("T", " ") + "Z" if len(ts) >= 16 else ts
    line = one_line(redact(scanner, f"[{ev.get('id')}] {when} {ev.get('direction') or '?'} {render.who(ev)}: {body}"))
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


_TRAILER = "(… {} more not shown; narrow the query or the dates)"


def _room(header: str) -> tuple[str, int]:
    """The header (one line, cut to fit) and the characters left for the lines after it: the trailer's line, its
    count included, always fits after what is shown."""
    room = TEXT_CAP - len(_TRAILER) - 12
    header = one_line(header)
    if len(header) > room:
        header = header[:room - 1] + "…"
    return header, room - len(header)


def _cap(header: str, lines: list[str], more: int) -> tuple[str, int]:
    """The header and as many lines as fit in TEXT_CAP characters, the whole text included (header, trailer)."""
    header, room = _room(header)
    out, size, shown = [header], 0, 0
    for ln in lines:
        if size + len(ln) + 1 > room:
            break
        out.append(ln)
        size += len(ln) + 1
        shown += 1
    hidden = len(lines) - shown + more
    if hidden > 0:
        out.append(_TRAILER.format(hidden))
    return "\n".join(out), shown


def _cap_groups(header: str, groups: list[Any], render: Callable[[dict[str, Any]], str], more: int
                ) -> tuple[str, int, list[str]]:
    """`_cap` for hits with their turns (turns.layout): the neighbours are trimmed first, never a hit."""
    from .turns import layout

    header, room = _room(header)
    lines, shown, ctx_ids = layout(groups, render, room)
    hidden = len(groups) - shown + more
    return "\n".join([header, *lines] + ([_TRAILER.format(hidden)] if hidden > 0 else [])), shown, ctx_ids


def _when(v: Any, name: str, tz: tzinfo) -> datetime | None:
    """`since`: the start of the WHEN, `until`: its end (eventlog/recall/when.py, the CLI's grammar and zone)."""
    if v in (None, ""):
        return None
    try:
        return (when.since if name == "since" else when.until)(str(v), tz)
    except (EventlogError, ValueError, OverflowError):  # "99999999d" is past the calendar: bad arguments too
        raise ToolError(f"{name} must be a time like 2026-11-30, 2026-11-30T18:00:00+03:00, 'yesterday' or '7d', "
                        f"not {str(v)[:40]!r}") from None


@dataclass(frozen=True)
class Where:
    """What one call may read: `scope` "chat" or "all", the chats (None: every chat) of the accounts (None: every
    account), and a note for the model."""
    scope: str
    chats: tuple[str, ...] | None
    accounts: tuple[str, ...] | None
    note: str | None = None


def _account(req: dict[str, Any]) -> str:
    account = req.get("account")
    if account is None:
        return DEFAULT_ACCOUNT
    if not isinstance(account, str) or not ACCOUNT_RE.fullmatch(account):
        raise ToolError("this conversation's account id is not one the log knows, so there is nothing to search")
    return account


def resolve_scope(req: dict[str, Any]) -> Where:
    """The chats and accounts this request may read (Where)."""
    args = req.get("args") or {}
    chat = req.get("chat")
    account = _account(req)
    wants_all = args.get("scope") == "all"
    if wants_all and req.get("all_allowed") is True:
        extra = req.get("all_accounts")
        if extra == "*":
            return Where("all", None, None)
        others = [a for a in extra if isinstance(a, str) and ACCOUNT_RE.fullmatch(a)] if isinstance(extra, list) else []
        return Where("all", None, tuple(dict.fromkeys([account, *others])))
    note = "scope 'all' is only for the owner; searched this chat only." if wants_all else None
    if not chat or not re.fullmatch(r"-?\d{1,20}|[A-Za-z0-9_.@-]{1,64}", str(chat)):
        raise ToolError("this conversation has no chat id the gateway vouches for, so there is no chat to search "
                        "(the tool only searches the chat it is used in)")
    return Where("chat", (str(chat),), (account,), note)


def _search(root: Path, req: dict[str, Any], scanner: Any, tz: tzinfo) -> dict[str, Any]:
    from .search import rank

    args = req.get("args") or {}
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query is required: the words to look for")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"query is {len(query)} characters; at most {MAX_QUERY_CHARS}: pass the distinctive words")
    mode = args.get("mode") or DEFAULT_MODE
    if mode not in MODES:
        raise ToolError(f"mode must be one of {', '.join(MODES)}")
    limit = args.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 1:
        raise ToolError(f"limit must be a number from 1 to {MAX_LIMIT}")
    limit = min(int(limit), MAX_LIMIT)
    n_ctx = args.get("context", 0)
    if n_ctx is None:
        n_ctx = 0
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, (int, float)) or not 0 <= n_ctx <= MAX_CONTEXT:
        raise ToolError(f"context must be a number of messages from 0 to {MAX_CONTEXT}")
    n_ctx = int(n_ctx)
    direction = args.get("direction")
    if direction not in (None, "", "in", "out"):
        raise ToolError("direction must be 'in' (messages the agent received) or 'out' (messages it sent)")
    since, until = _when(args.get("since"), "since", tz), _when(args.get("until"), "until", tz)
    if since and until and since >= until:
        raise ToolError("since must be before until")
    allowed = resolve_scope(req)
    scope, chats, accounts = allowed.scope, allowed.chats, allowed.accounts
    notes = [allowed.note] if allowed.note else []
    used = mode
    ranked = None
    # The question being answered is in the log already (the tap writes it before the agent sees it): leave it out.
    skip = None
    if req.get("chat") and req.get("requester") is not None:
        from .context import current_message

        skip = current_message(root, str(req["chat"]), str(req["requester"]), accounts=(_account(req),))
    if mode in ("hybrid", "bm25"):
        from .hybrid import hybrid_search

        # one more than asked when the current message may be among them: it is dropped below
        ranked, why, used = hybrid_search(root, query, chats=chats, since=since, until=until,
                                          direction=direction or None, limit=limit + (1 if skip else 0),
                                          accounts=accounts, mode=mode, tz=tz, exclude=skip)
        if ranked is None:
            notes.append(f"{mode} search is not available ({why}); used text search")
        elif why:
            notes.append(why)
    if ranked is None:
        ranked = rank(root, query, mode=used, chats=chats, since=since, until=until, direction=direction or None,
                      limit=limit, exclude=skip, accounts=accounts)
    else:
        kept = [f for f in ranked.hits if f.event.get("id") != skip] if skip else ranked.hits
        ranked.total -= len(ranked.hits) - len(kept)
        ranked.hits = kept[:limit]
    if ranked.common:
        notes.append("too common to rank by, ignored: " + ", ".join(ranked.common))
    acct = "" if _account(req) == DEFAULT_ACCOUNT else f" account {_account(req)}"
    where = "all chats" if scope == "all" or chats is None else \
        f"this chat ({req.get('channel') or 'telegram'}{acct} {chats[0]})"
    words = ", ".join(ranked.words)
    words = words if len(words) <= WORDS_CHARS else words[:WORDS_CHARS - 1] + "…"
    back = (f" since {when.iso(ranked.searched_since)} (older days not read: enough matches; pass until to look "
            f"further back)") if ranked.searched_since else ""
    head = (f"eventlog_search: {ranked.total} message(s) match [{words}] in {where}{back}, mode {used}; "
            f"showing {min(limit, len(ranked.hits))}, best first (ties: newest first).")
    if n_ctx and ranked.hits:
        head += (f" Each hit is marked '>', with up to {n_ctx} message(s) before and after it in its chat, oldest "
                 "first; groups are separated by '--'.")
    if not ranked.hits:
        head += " " + CANNOT_SEE
    if notes:
        head += " Note: " + " ".join(notes)
    more = max(0, ranked.total - len(ranked.hits))
    ctx_ids: list[str] = []
    if n_ctx:
        groups = gather(root, [f.event for f in ranked.hits], n_ctx, skip)
        text, shown, ctx_ids = _cap_groups(head, groups, lambda ev: line_for(scanner, ev, ranked.words), more)
    else:
        text, shown = _cap(head, [line_for(scanner, f.event, ranked.words) for f in ranked.hits], more)
    ids = [f.event.get("id") for f in ranked.hits[:shown]]
    out = {"text": text, "hits": ranked.total, "ids": ids, "scope": scope, "chat": chats[0] if chats else None,
           "accounts": list(accounts) if accounts else None, "mode": mode, "mode_used": used, "notes": notes}
    if n_ctx:
        out["context_ids"] = ctx_ids
    return out


def _context(root: Path, req: dict[str, Any], scanner: Any) -> dict[str, Any]:
    from .context import around

    args = req.get("args") or {}
    eid = args.get("id")
    if not isinstance(eid, str) or not eid.strip():
        raise ToolError("id is required: an event id from eventlog_search, the part in [brackets]")
    try:
        before, after = int(args.get("before", 5)), int(args.get("after", 5))
    except (TypeError, ValueError):
        raise ToolError("before/after must be numbers of messages (0-20)") from None
    allowed = resolve_scope({**req, "args": {"scope": "all"}} if req.get("all_allowed") is True else req)
    scope, chats = allowed.scope, allowed.chats
    got = around(root, eid, before=before, after=after, chats=chats, accounts=allowed.accounts)
    if got is None:
        where = "any chat" if scope == "all" else "this chat"
        return {"text": f"eventlog_context: no event {eid.strip()} in {where}'s log.", "hits": 0, "ids": [],
                "scope": scope, "chat": chats[0] if chats else None, "notes": []}
    evs = got.before + [got.target] + got.after
    lines = [("> " if ev is got.target else "  ") + line_for(scanner, ev, full=True) for ev in evs]
    head = (f"eventlog_context: {len(got.before)} message(s) before and {len(got.after)} after [{got.target.get('id')}]"
            f" in chat {got.target.get('chat_id')}, oldest first; '>' marks the event.")
    text, shown = _cap(head, lines, 0)
    return {"text": text, "hits": len(evs), "ids": [e.get("id") for e in evs], "scope": scope,
            "chat": got.target.get("chat_id"), "notes": []}


def handle(req: dict[str, Any], root: Path | None = None, *, record: bool = True,
           tz: tzinfo | None = None) -> dict[str, Any]:
    """Run one request; never raises: a failure is an `ok: false` result whose text tells the model what happened.
    `tz`: the zone of `since`/`until` without an offset (default: when.zone(), the environment's)."""
    t_start = time.time()
    tool = req.get("tool")
    try:
        root = root or resolve_root()
        if tool not in ("search", "context"):
            raise ToolError(f"unknown tool {tool!r}")
        if not (root / "raw").is_dir():
            raise ToolError(f"there is no event log at {root} yet (the eventlog tap writes it)")
        scanner = _scanner(root)
        out = _search(root, req, scanner, tz or when.zone()) if tool == "search" else _context(root, req, scanner)
        out["ok"] = True
    except ToolError as exc:
        out = {"ok": False, "text": f"eventlog_{tool}: {exc}.", "hits": 0, "ids": [], "error": str(exc),
               "error_kind": "bad_arguments"}
    except (EventlogError, OSError, ValueError) as exc:
        out = {"ok": False, "hits": 0, "ids": [], "error": f"{type(exc).__name__}: {exc}",
               "error_kind": type(exc).__name__,
               "text": f"eventlog_{tool}: the log could not be searched ({type(exc).__name__}: {exc}). "
                       "Answer without it and say the history was unavailable."}
    except Exception as exc:  # noqa: BLE001 — a bug here must not end the helper or the model's turn
        out = {"ok": False, "hits": 0, "ids": [], "error": f"internal error: {type(exc).__name__}: {exc}",
               "error_kind": type(exc).__name__,
               "text": f"eventlog_{tool}: the log could not be searched (internal error {type(exc).__name__}). "
                       "Answer without it and say the history was unavailable."}
    t0 = req.get("t0_ms")
    out["latency_ms"] = round(time.time() * 1000 - t0) if isinstance(t0, (int, float)) else round(
        (time.time() - t_start) * 1000)
    if record and root is not None:
        from .record import record_query

        problem = record_query(root, req, out)
        if problem:  # a call off the record returns nothing: what the model saw must be what the trail says
            out = {"ok": False, "hits": 0, "ids": [], "error": problem, "error_kind": "not_recorded",
                   "record_error": problem, "latency_ms": out["latency_ms"],
                   "text": f"eventlog_{tool}: the call could not be recorded ({problem}), so no results are shown. "
                           "Answer without the history and say it was unavailable."}
    return out
