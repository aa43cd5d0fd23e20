"""Generate a large Telegram Desktop JSON export (for benchmarks and regression checks only — the evidence for the
format is the hand-written fixtures in tests/fixtures/telegram-desktop/). Written record by record, in tdesktop's
layout (single-chat file, 1-space indentation per level, records as SerializeMessage orders their keys).

    python tools/gen_telegram_export.py --messages 1000000 --out /tmp/export/result.json
"""
from __future__ import annotations

import argparse
import random

import orjson

BOT = 7012345678
USERS = [(100200300 + i, name) for i, name in enumerate(
    ["Иван Петров", "Мария Сидорова", "Пётр Козлов", "Anna Smith", "Олег", "Léa Martin", "Дмитрий", "Sam"])]
WORDS = ("договор отчёт встреча staging deploy сводка задача релиз бюджет клиент счёт ревью тест "
         "meeting invoice review release budget 👍 🚀 ✅ 📎").split()
START = 1735689600  # 2025-01-01T00:00:00Z


def _text(rng: random.Random, i: int) -> tuple[object, list[dict]]:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 24)))
    if i % 4:
        return body, [{"type": "plain", "text": body}]
    parts = [body + " ", {"type": "bold", "text": "важно"}, " см. ", {"type": "link", "text": f"https://example.org/t/{i}"}]
    ents = [{"type": "plain", "text": body + " "}, {"type": "bold", "text": "важно"}, {"type": "plain", "text": " см. "},
            {"type": "link", "text": f"https://example.org/t/{i}"}]
    return parts, ents


def record(rng: random.Random, i: int, t: int) -> dict:
    date = f"local-{t}"  # tdesktop's `date` is local time; the importer reads date_unixtime only
    if i % 97 == 3:
        uid, name = USERS[i % len(USERS)]
        return {"id": i, "type": "service", "date": date, "date_unixtime": str(t), "actor": name,
                "actor_id": f"user{uid}", "action": "pin_message", "message_id": i - 1, "text": "", "text_entities": []}
    if i % 5 == 0:
        uid, name = BOT, "Helper Bot"
    else:
        uid, name = USERS[i % len(USERS)]
    text, ents = _text(rng, i)
    rec: dict = {"id": i, "type": "message", "date": date, "date_unixtime": str(t)}
    if i % 11 == 0:
        rec.update(edited=date, edited_unixtime=str(t + 30))
    rec.update({"from": name, "from_id": f"user{uid}"})
    if i % 5 == 0:
        rec["reply_to_message_id"] = i - 1
    if i % 23 == 0:
        rec.update(photo=f"photos/photo_{i}.jpg", photo_file_size=120000, width=1280, height=960)
    rec.update(text=text, text_entities=ents)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--per-day", type=int, default=3000, help="messages per UTC day")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    step = 86400 // args.per_day
    with open(args.out, "wb") as f:
        f.write(b'{\n "name": "Load test",\n "type": "private_supergroup",\n "id": 1555000111,\n "messages": [')
        for i in range(1, args.messages + 1):
            rec = orjson.dumps(record(rng, i, START + i * step), option=orjson.OPT_INDENT_2)
            f.write((b",\n  " if i > 1 else b"\n  ") + rec.replace(b"\n", b"\n  "))
        f.write(b"\n ]\n}\n")


if __name__ == "__main__":
    main()
