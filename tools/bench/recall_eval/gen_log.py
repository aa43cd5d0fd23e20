"""The recall evaluation log: a deterministic (seeded) multi-chat Russian/English log with hand-written facts planted
among background chatter, written through the real `EventLog` writer.

    python tools/bench/recall_eval/gen_log.py --root DIR [--days 60] [--seed 7] [--per-day 7]

Writes the log under DIR and `DIR/recall-eval.json`: {"now": <reference time>, "keys": {fact key: event id}, ...}.
Questions (questions.jsonl) name facts by key; relative dates in them are relative to "now".
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
sys.path.insert(0, str(HERE))

from eventlog.store.writer import EventLog  # noqa: E402
from filler import BOT_EN, BOT_RU, EN, RU  # noqa: E402

END = date(2026, 10, 31)
NOW = "2026-10-31T21:00:00Z"
CHATS = {  # name → (chat_id, language share of Russian, members)
    "ru_dm1": ("300001", 1.0, ["ivan"]),
    "ru_dm2": ("300002", 1.0, ["elena"]),
    "ru_dm3": ("300003", 1.0, ["oleg"]),
    "ru_grp": ("-1003000000001", 1.0, ["ivan", "maria", "pavel", "sveta"]),
    "en_dm1": ("300004", 0.0, ["alice"]),
    "en_dm2": ("300005", 0.0, ["bob"]),
    "en_grp": ("-1003000000002", 0.0, ["alice", "carol", "dave", "erin"]),
    "mix_grp": ("-1003000000003", 0.5, ["dmitry", "alice", "galina", "bob"]),
}
BOT = {"id": 7000000001, "is_bot": True, "name": "OpenClaw", "username": "openclaw_bot"}
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(ms: int, rng: random.Random) -> str:
    t = "".join(_CROCKFORD[(ms >> (5 * i)) & 31] for i in range(9, -1, -1))
    return t + "".join(rng.choice(_CROCKFORD) for _ in range(16))


def _ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def load_facts() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / "facts.jsonl").read_text().splitlines() if line.strip()]


def _event(rng: random.Random, chat_id: str, ms: int, direction: str, who: str, text: str) -> dict[str, Any]:
    ev: dict[str, Any] = {"id": _ulid(ms, rng), "channel": "telegram", "chat_id": chat_id, "ts": _ts(ms),
                          "account": "default", "direction": direction, "text": text}
    if direction == "in":
        ev.update(event="message:received", update_type="message",
                  **{"from": {"id": 1000 + sum(map(ord, who)), "is_bot": False, "name": who.title(), "username": who}})
    else:
        ev.update(event="message:sent", method="sendMessage", **{"from": BOT},
                  payload={"chat_id": chat_id, "text": text}, outcome={"ok": True})
    return ev


def generate(root: str | Path, days: int = 60, seed: int = 7, per_day: int = 7) -> dict[str, Any]:
    """Write the log; return {"now", "keys", "events", "chats"}."""
    rng = random.Random(seed)
    facts = load_facts()
    by_chat_day: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for f in facts:
        by_chat_day.setdefault((f["chat"], f["day"]), []).append(f)
    log = EventLog(root, fsync="never", autoseal=False)
    keys: dict[str, str] = {}
    total = 0
    for name, (chat_id, ru_share, members) in CHATS.items():
        for d in range(-(days - 1), 1):
            day = END + timedelta(days=d)
            start = int(datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp() * 1000)
            n = max(2, int(rng.gauss(per_day, per_day / 3)))
            slots = sorted(rng.randrange(8 * 3600_000, 20 * 3600_000) for _ in range(n))
            planted = by_chat_day.get((name, d), [])
            fact_at = dict(zip(rng.sample(range(len(slots) + 1), len(planted)), planted, strict=True))
            events: list[dict[str, Any]] = []
            for i in range(len(slots) + 1):
                if i in fact_at:
                    f = fact_at[i]
                    ms = (slots[i - 1] if i else 8 * 3600_000) + start + rng.randint(1000, 60_000)
                    ev = _event(rng, chat_id, ms, f["dir"], rng.choice(members), f["text"])
                    keys[f["key"]] = ev["id"]
                    events.append(ev)
                if i == len(slots):
                    break
                ru = rng.random() < ru_share
                text = rng.choice(RU if ru else EN).format(n=rng.choice((5, 10, 15, 20)), h=rng.choice((11, 14, 16)))
                ms = start + slots[i]
                events.append(_event(rng, chat_id, ms, "in", rng.choice(members), text))
                if rng.random() < 0.3:
                    events.append(_event(rng, chat_id, ms + rng.randint(800, 4000), "out", "",
                                         rng.choice(BOT_RU if ru else BOT_EN)))
            events.sort(key=lambda e: e["ts"])
            log.append_many(events)
            total += len(events)
    missing = {f["key"] for f in facts} - set(keys)
    if missing:
        raise SystemExit(f"facts outside the generated days: {sorted(missing)}")
    meta = {"now": NOW, "keys": keys, "events": total, "chats": {k: v[0] for k, v in CHATS.items()}, "seed": seed}
    (Path(root) / "recall-eval.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-day", type=int, default=7)
    args = ap.parse_args(argv)
    meta = generate(args.root, args.days, args.seed, args.per_day)
    print(json.dumps({"events": meta["events"], "facts": len(meta["keys"]), "now": meta["now"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
