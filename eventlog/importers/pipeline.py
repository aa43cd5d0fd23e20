"""`eventlog import telegram-desktop`: two streaming passes over the export, then batched appends.

Pass 1 reads the whole export, validates every record and learns each chat's type, ids, senders and date range — so bad
input stops the import before anything is written. Pass 2 reads it again, turns records into events, drops what the
log already holds (merge.Known) and appends in batches through the writer's public `append_many`. The export's SHA-256
is taken in both passes; if the file changed in between, the import stops with an error.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import orjson

from ..errors import EventlogError
from ..store.layout import day_relpath, parse_relpath
from ..store.schema import DEFAULT_ACCOUNT, check_account
from . import merge
from .jsonstream import BadExport, Walk
from .telegram_desktop import (BASIC_GROUP_TYPES, CHANNEL_TYPES, CHAT_TYPES, ChatInfo, ChatPlan, bot_api_chat_id,
                               build_event, check_record)

BATCH = 2000
Progress = Callable[[str, int, int], None]  # (phase, bytes done, bytes total)


@dataclass
class ChatOutcome:
    plan: ChatPlan
    added: int = 0
    duplicates: int = 0

    def as_json(self) -> dict[str, Any]:
        i = self.plan.info
        return {"type": "chat", "export_id": i.export_id, "chat_type": i.type, "chat_id": self.plan.chat_id,
                "records": i.records, "messages": i.messages, "service": i.services, "unsupported": i.unsupported,
                "added": self.added, "duplicates": self.duplicates, "skipped": self.plan.skip,
                "first": _iso(i.first), "last": _iso(i.last)}


@dataclass
class ImportResult:
    path: str
    sha256: str
    size: int
    bot_id: int | None
    dry_run: bool
    chats: list[ChatOutcome] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(c.added for c in self.chats)

    @property
    def duplicates(self) -> int:
        return sum(c.duplicates for c in self.chats)

    @property
    def imported_chats(self) -> int:
        return sum(1 for c in self.chats if c.plan.skip is None)

    def as_json(self) -> dict[str, Any]:
        return {"type": "summary", "path": self.path, "export_sha256": self.sha256, "bytes": self.size,
                "bot_id": self.bot_id, "dry_run": self.dry_run, "chats": self.imported_chats,
                "added": self.added, "duplicates": self.duplicates}


def _iso(unix: int | None) -> str | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def export_file(path: str | os.PathLike[str]) -> Path:
    """A result.json, or an export folder holding one."""
    p = Path(path)
    if p.is_dir():
        if (p / "result.json").is_file():
            return p / "result.json"
        if (p / "messages.html").is_file():
            raise BadExport(f"{p} is an HTML export; export again choosing 'Machine-readable JSON'")
        raise BadExport(f"{p} holds no result.json (not a Telegram Desktop export folder)")
    if not p.is_file():
        raise EventlogError(f"no such file: {p}")
    return p


def _chats(walk: Walk) -> Iterator[tuple[str, Any]]:
    """Items of a walk, grouped: ('top', (key, value)), ('chat', ChatInfo-to-fill), ('message', Item), ('end', info)."""
    current: ChatInfo | None = None
    single_meta: dict[str, Any] = {}
    index = 0
    for item in walk:
        if item.kind == "chat":
            current = ChatInfo(index, item.section)
            index += 1
            if item.section is None:
                _meta(current, single_meta)
            yield "chat", current
        elif item.kind == "chat_meta":
            assert item.key is not None  # a chat_meta item is a key and its value
            if current is None:
                single_meta[item.key] = item.value  # a single-chat export: name/type/id precede `messages`
            else:
                _meta(current, {item.key: item.value})
        elif item.kind == "message":
            assert current is not None
            yield "message", item
        elif item.kind == "chat_end":
            assert current is not None
            if current.section is None:
                _meta(current, single_meta)  # keys after `messages`, if a hand-edited file reordered them
            yield "end", current
            current = None
        else:
            yield "top", (item.key, item.value)


def _meta(info: ChatInfo, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if key in ("name", "type", "id"):
            setattr(info, "export_id" if key == "id" else key, value)


def scan(path: Path, progress: Progress | None = None, spool: IO[bytes] | None = None
         ) -> tuple[list[ChatInfo], dict[str, Any], Walk]:
    """Pass 1: validate everything; return the chats, the top-level values worth keeping, and the finished walk.
    Every record but `unsupported` ones is written to `spool` as one orjson line, chat after chat, in export order
    (each chat's `records - unsupported` lines): encoding it is also the check that orjson can store it."""
    size = path.stat().st_size
    top: dict[str, Any] = {}
    chats: list[ChatInfo] = []
    put = spool.write if spool is not None else None
    dumps, nl = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    with open(path, "rb") as f:
        walk = Walk(f, (lambda n: progress("checking", n, size)) if progress else None)
        for kind, x in _chats(walk):
            if kind == "top":
                if x[0] == "personal_information" and isinstance(x[1], dict):
                    top["personal_information"] = x[1]
                top.setdefault("keys", []).append(x[0])
            elif kind == "chat":
                chats.append(x)
            elif kind == "message":
                info = chats[-1]
                rec = x.value
                where = f"chat {info.export_id if info.export_id is not None else '#' + str(info.index + 1)}"
                rtype, date = check_record(rec, where)
                info.records += 1
                if rtype == "unsupported":
                    info.unsupported += 1
                    continue
                try:  # a lone surrogate (from a \\u escape) or an integer beyond 64 bits cannot be stored
                    line = dumps(rec, option=nl)
                except orjson.JSONEncodeError as exc:
                    reason = "text with a lone UTF-16 surrogate (not valid Unicode)" if "surrogate" in str(exc) \
                        else str(exc)
                    raise BadExport(f"{where}, message {rec['id']}: {reason}") from None
                if put is not None:
                    put(line)
                info.messages += rtype == "message"
                info.services += rtype == "service"
                assert date is not None  # only an unsupported record has none, and it went on above
                info.first = date if info.first is None else min(info.first, date)
                info.last = date if info.last is None else max(info.last, date)
                sender = rec.get("from_id")
                if isinstance(sender, str):
                    info.senders[sender] = info.senders.get(sender, 0) + 1
            else:
                _check_chat(x)
    if not chats:
        keys = top.get("keys", [])
        if "about" in keys or "personal_information" in keys:
            raise BadExport("this export holds no chat history (it was made without any chats selected)")
        raise BadExport("not a Telegram Desktop export (no `messages` and no `chats`)")
    return chats, top, walk


def _check_chat(info: ChatInfo) -> None:
    where = f"chat #{info.index + 1}"
    if info.type not in CHAT_TYPES:
        raise BadExport(f"{where}: unknown chat type {str(info.type)[:40]!r}")
    if isinstance(info.export_id, bool) or not isinstance(info.export_id, int) or info.export_id <= 0:
        raise BadExport(f"{where}: chat without a positive integer id")


def plan(chats: list[ChatInfo], top: dict[str, Any], root: Path, bot_id: int | None,
         chat_ids: tuple[str, ...] = (), account: str = DEFAULT_ACCOUNT) -> tuple[list[ChatPlan], int | None]:
    """Decide, per chat, its Bot API chat id, the bot's peer and whether it is imported."""
    single = len(chats) == 1 and chats[0].section is None
    me = (top.get("personal_information") or {}).get("user_id")
    exporter = me if isinstance(me, int) and not isinstance(me, bool) else None
    if bot_id is None and single and chats[0].type == "bot_chat":
        bot_id = chats[0].export_id  # the peer of a bot chat is the bot
    if bot_id is None:
        candidates = [str(bot_api_chat_id(c.type, c.export_id)) for c in chats  # type: ignore[arg-type]
                      if c.type in BASIC_GROUP_TYPES | CHANNEL_TYPES]
        if exporter is not None:
            candidates.append(str(exporter))
        found = merge.bot_ids_in_log(root, candidates, account)  # each account is its own bot
        if len(found) > 1:
            raise EventlogError(f"the log knows several bots ({', '.join(map(str, sorted(found)))}): pass --bot-id")
        bot_id = next(iter(found), None)
    if bot_id is None and not single:
        raise EventlogError("cannot tell which bot's history to import from a full-account export "
                            "(the log does not show the bot's id): pass --bot-id")
    bot_peer = f"user{bot_id}" if bot_id is not None else None
    plans = []
    for info in chats:
        p = ChatPlan(info, bot_peer=bot_peer)
        plans.append(p)
        t, eid = info.type, info.export_id
        assert t is not None and eid is not None
        if t in ("saved_messages", "replies", "verification_codes"):
            p.skip = "not a chat with the bot"
        elif t == "personal_chat":
            p.skip = "a chat between people: the bot is not in it"
        elif t == "bot_chat":
            if eid != bot_id:
                p.skip = f"a chat with another bot ({eid})"
            else:
                # The bot sees a private chat under the *user's* id: the exporter's, or the one other sender.
                users = {s for s in info.senders if s != f"user{eid}" and s.startswith("user")}
                if exporter is not None:
                    p.chat_id = str(exporter)
                elif len(users) == 1:
                    p.chat_id = users.pop()[4:]
                elif len(chat_ids) == 1:
                    p.chat_id = chat_ids[0]
                else:
                    raise EventlogError("cannot tell whose chat with the bot this is (no message of the user in it): "
                                        "pass --chat-id with the user's id")
        else:
            p.chat_id = str(bot_api_chat_id(t, eid))
            if bot_peer is None and t not in ("private_channel", "public_channel"):
                raise EventlogError(f"chat {eid} ({info.name or t}): cannot tell the bot's messages from the others "
                                    "(the log does not show the bot's id): pass --bot-id")
            if not single and not chat_ids and bot_peer not in info.senders:
                p.skip = "the bot wrote nothing here (select it with --chat-id to import it anyway)"
        if p.skip is None and chat_ids and p.chat_id not in chat_ids and str(eid) not in chat_ids:
            p.skip = "not selected by --chat-id"
        if p.skip is None and info.records == info.unsupported:
            p.skip = "no messages"
    return plans, bot_id


def run_import(root: Path, path: str | os.PathLike[str], *, bot_id: int | None = None, chat_ids: tuple[str, ...] = (),
               dry_run: bool = False, progress: Progress | None = None, fsync: str = "batch",
               account: str = DEFAULT_ACCOUNT) -> ImportResult:
    """`account`: the OpenClaw account whose bot the export is a history of — its events land in that account's
    partition, and duplicates and the bot's id are looked up there (docs/log-format.md, Files)."""
    check_account(account)
    src = export_file(path)
    try:  # the spool sits beside the log (same disk, never a RAM-backed /tmp), nameless; a dry run writes nothing there
        spool = tempfile.TemporaryFile(dir=None if dry_run else root)
    except OSError:
        spool = tempfile.TemporaryFile()
    with spool:
        return _import(root, src, spool, bot_id, chat_ids, dry_run, progress, fsync, account)


def _import(root: Path, src: Path, spool: IO[bytes], bot_id: int | None, chat_ids: tuple[str, ...], dry_run: bool,
            progress: Progress | None, fsync: str, account: str) -> ImportResult:
    from ..store.writer import EventLog

    chats, top, walk1 = scan(src, progress, spool)
    plans, bot_id = plan(chats, top, root, bot_id, chat_ids, account)
    result = ImportResult(str(src), walk1.sha256, walk1.nbytes, bot_id, dry_run, [ChatOutcome(p) for p in plans])
    if not any(p.skip is None for p in plans):
        return result
    log = None if dry_run else EventLog(root, fsync=fsync)
    touched: set[str] = set()
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch and log is not None:
            log.append_many(batch)
            for ev in batch:
                touched.add(day_relpath("telegram", ev["chat_id"], ev["ts"], account))
        batch.clear()

    total = spool.tell()
    spool.seek(0)
    lines = iter(spool)
    loads = orjson.loads
    done = 0
    for outcome in result.chats:
        p = outcome.plan
        n = p.info.records - p.info.unsupported
        known = None
        if p.skip is None and p.info.first is not None:
            flush()  # events of the previous chat must be on disk before this chat's keys are read
            known = merge.load_known(root, p.chat_id, p.info.first, p.info.last,  # type: ignore[arg-type]
                                     p.shared_ids, account)
        for _ in range(n):
            line = next(lines)
            if known is None:
                continue
            rec = loads(line)
            if known.shared_ids and rec["id"] > 0:  # decided by (direction, message_id): no need to build it
                peer = rec.get("from_id" if rec["type"] == "message" else "actor_id")
                out = p.bot_peer is not None and peer == p.bot_peer
                if known.has_id("out" if out else "in", rec["id"]):
                    outcome.duplicates += 1
                    continue
            ev = build_event(p, rec, walk1.sha256)
            assert ev is not None
            if account != DEFAULT_ACCOUNT:
                ev["account"] = account
            secs = int(rec["date_unixtime"])
            if known.has(ev, secs):
                outcome.duplicates += 1
                continue
            known.remember(ev, secs)
            outcome.added += 1
            batch.append(ev)
            if len(batch) >= BATCH:
                flush()
                if progress:
                    done = spool.tell()
                    progress("importing", done, total)
    flush()
    if log is not None and touched:
        _seal_touched(log, touched)
    return result


def _seal_touched(log: Any, touched: set[str]) -> None:
    """Seal the closed days the import wrote to, unless their seal already covers the file (the writer auto-seals a
    day when the chat gets a later one, and extends a sealed day it appends to): a stat instead of a re-read."""
    from ..store.seal import seal_files, sealed_index

    today = datetime.now(timezone.utc).strftime("%Y/%m/%d") + ".jsonl"
    pending = []
    for rel in sorted(touched):
        parsed = parse_relpath(rel)
        if rel.endswith(today) or parsed is None:
            continue
        sealed = sealed_index(log.root, parsed.channel, parsed.chat_id, parsed.account).get(rel)
        if sealed is None or sealed["bytes"] != os.path.getsize(log.root / rel):
            pending.append(rel)
    seal_files(log, pending)
