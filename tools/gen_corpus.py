#!/usr/bin/env python3
"""Generate a realistic chat log for tests and benchmarks, written through the real `EventLog` writer.

~200 chats × 365 days ≈ 1 M events at full scale (English and Russian, Telegram-shaped inbound updates and outbound
sendMessage calls), small sizes for tests. Planted needles have known counts, returned in the summary, so tests and
benchmarks can check answers, not just timings. Deterministic for a given seed (ids included).

    python tools/gen_corpus.py --root DIR [--chats 200] [--days 365] [--end 2026-10-31] [--seed 1]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventlog.store.writer import EventLog  # noqa: E402

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

EN_WORDS = (
    "the meeting contract invoice deploy server release budget report client deadline review staging "
    "schedule update team project call office email price order delivery payment design draft plan "
    "tomorrow today yesterday please thanks agreed check send need question answer issue fix test build"
).split()
RU_WORDS = (
    "встреча счёт сервер релиз бюджет отчёт клиент срок проверка обновление команда проект звонок офис "
    "письмо цена заказ доставка оплата дизайн черновик план завтра сегодня вчера пожалуйста спасибо "
    "согласовали проверить отправить вопрос ответ задача исправить тест сборка ёлка Ёжик всё"
).split()
# Russian word forms of "договор" (contract): the fuzzy search must find them all from the base form.
DOGOVOR_FORMS = ("договор", "договора", "договору", "договором", "договоре")
EN_TEMPLATES = (
    "{a} {b} {c}", "Can you {a} the {b} before {c}?", "I think the {a} is ready, {b} {c}.",
    "Reminder: {a} {b} at 10:00", "ok, {a} {b}", "{a}? {b}!", 'He said "{a} {b}" \\ {c}',
)
RU_TEMPLATES = (
    "{a} {b} {c}", "Можешь {a} {b} до {c}?", "Кажется, {a} готов, {b} {c}.", "Напоминание: {a} {b} в 10:00",
    "ок, {a} {b}", "{a}? {b}! 🙂", "Ещё раз: «{a}» — {b}",
)
NAMES = ("alice", "bob", "carol", "dmitry", "elena", "fedor", "galina", "ivan", "maria", "oleg", "pavel", "sveta")
BOT = {"id": 7000000001, "is_bot": True, "name": "OpenClaw", "username": "openclaw_bot"}

# Needles: exact phrases planted at fixed rates; their counts are returned in the summary.
NEEDLES = {
    "literal": "ZEBRA-NEEDLE-4417",
    "cyrillic": "Ёлочная Игрушка",  # searched case-insensitively as "ёлочная игрушка"
    "escaped": 'quote "needle" \\ back',
}


def _ulid(ms: int, rng: random.Random) -> str:
    value = (ms << 80) | rng.getrandbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def _text(rng: random.Random, russian: bool) -> str:
    words, templates = (RU_WORDS, RU_TEMPLATES) if russian else (EN_WORDS, EN_TEMPLATES)
    t = rng.choice(templates).format(a=rng.choice(words), b=rng.choice(words), c=rng.choice(words))
    if rng.random() < 0.3:
        t += " " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 25)))
    return t[0].upper() + t[1:]


class _Needles:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def plant(self, rng: random.Random, text: str, russian: bool) -> str:
        r = rng.random()
        if r < 0.0005:
            self.counts["literal"] += 1
            return text + " " + NEEDLES["literal"]
        if r < 0.001:
            self.counts["cyrillic"] += 1
            return NEEDLES["cyrillic"] + " " + text
        if r < 0.0015:
            self.counts["escaped"] += 1
            return text + " " + NEEDLES["escaped"]
        if russian and r < 0.01:
            form = rng.choice(DOGOVOR_FORMS)
            self.counts["dogovor:" + form] += 1
            return f"{text} по {form}"
        return text


def chat_events(chat_index: int, days: list[date], rng: random.Random, needles: _Needles) -> Iterator[list[dict[str, Any]]]:
    """One list of events per day for one chat: inbound updates and the bot's replies."""
    group = chat_index % 5 == 0
    chat_id = -1001000000000 - chat_index if group else 100000 + chat_index
    russian_share = (chat_index % 3) / 2  # 0, 0.5, 1
    members = [NAMES[(chat_index + k) % len(NAMES)] for k in range(4 if group else 1)]
    mean = rng.choice((2, 5, 10, 14, 20, 30))
    update_id = 500000000 + chat_index * 1000000
    message_id = 1
    for day in days:
        n = max(0, int(rng.gauss(mean, mean / 3)))
        if n == 0:
            n = 1  # every chat writes every day: the 73k-file shape the issue measured
        start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        offsets = sorted(rng.randrange(0, 86_400_000 - 5000) for _ in range((n + 1) // 2))
        out: list[dict[str, Any]] = []
        for off in offsets:
            who = rng.choice(members)
            russian = rng.random() < russian_share
            text = needles.plant(rng, _text(rng, russian), russian)
            ms = int(start.timestamp() * 1000) + off
            ts = datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
            update_id += 1
            message_id += 1
            sender = {"id": 1000 + NAMES.index(who), "is_bot": False, "name": who.title(), "username": who}
            chat = {"id": chat_id, "type": "supergroup" if group else "private"}
            msg = {"chat": chat, "date": ms // 1000, "from": {"first_name": who.title(), "id": sender["id"],
                   "is_bot": False, "username": who}, "message_id": message_id, "text": text}
            out.append({
                "id": _ulid(ms, rng), "event": "message:received", "channel": "telegram", "chat_id": chat_id,
                "ts": ts, "account": "default", "direction": "in", "update_type": "message",
                "update_id": update_id, "message_id": message_id, "from": sender, "text": text,
                "raw": {"message": msg, "update_id": update_id},
            })
            if len(out) >= n:
                break
            ms2 = ms + rng.randint(800, 4000)
            ts2 = datetime.fromtimestamp(ms2 / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms2 % 1000:03d}Z"
            reply = needles.plant(rng, _text(rng, russian), russian)
            message_id += 1
            out.append({
                "id": _ulid(ms2, rng), "event": "message:sent", "channel": "telegram", "chat_id": chat_id,
                "ts": ts2, "account": "default", "direction": "out", "method": "sendMessage",
                "message_id": message_id, "from": BOT, "text": reply,
                "payload": {"chat_id": chat_id, "parse_mode": "HTML", "text": reply},
                "outcome": {"message_id": message_id, "ok": True}, "dlp": {"action": "pass", "alerts": [], "rules": []},
            })
        yield out


def generate(root: str | os.PathLike[str], chats: int = 200, days: int = 365, end: date = date(2026, 10, 31),
             seed: int = 1) -> dict[str, Any]:
    """Write the corpus under `root`; return {events, files, chats, days, first, last, needles, per_chat}."""
    log = EventLog(root, fsync="never", autoseal=False)
    day_list = [end - timedelta(days=days - 1 - i) for i in range(days)]
    needles = _Needles()
    total = files = 0
    per_chat: dict[str, int] = {}
    for c in range(chats):
        rng = random.Random(seed * 1_000_003 + c)
        batch: list[dict[str, Any]] = []
        for day_events in chat_events(c, day_list, rng, needles):
            batch.extend(day_events)
            files += 1 if day_events else 0
            if len(batch) >= 5000:
                log.append_many(batch)
                total += len(batch)
                per_chat[str(batch[0]["chat_id"])] = per_chat.get(str(batch[0]["chat_id"]), 0) + len(batch)
                batch = []
        if batch:
            log.append_many(batch)
            total += len(batch)
            per_chat[str(batch[0]["chat_id"])] = per_chat.get(str(batch[0]["chat_id"]), 0) + len(batch)
    return {"events": total, "files": files, "chats": chats, "days": days, "first": day_list[0].isoformat(),
            "last": day_list[-1].isoformat(), "needles": dict(needles.counts), "per_chat": per_chat}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--end", type=date.fromisoformat, default=date(2026, 10, 31))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    summary = generate(args.root, args.chats, args.days, args.end, args.seed)
    sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_SORT_KEYS) + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
