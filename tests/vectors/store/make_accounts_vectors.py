"""Golden vectors for accounts in the layout (docs/log-format.md, Layout), computed independently of both writers.

Standard library only; the canonical encoder and chain are make_v2_vectors.py's (checked there against the hand-made
v1 vectors). The account rule is what OpenClaw's canonical account id can be, [a-z0-9_][a-z0-9_-]{0,63}
(normalizeAccountId, src/routing/account-id.ts, openclaw 2026.9.6: lowercase, other characters → '-', no leading or
trailing '-', ≤ 64); "default" (DEFAULT_ACCOUNT_ID) or no `account` keeps the old place.
Run it to regenerate tests/vectors/store/accounts.json:  python3 tests/vectors/store/make_accounts_vectors.py
"""
import json

from make_v2_vectors import HERE, chain, genesis

ACCOUNT_OK = ["default", "ops", "bot-b", "a", "0", "a_b-c", "x" * 64, "constructor", "_ops", "ops-"]
ACCOUNT_BAD = ["", "Ops", "-ops", "ops/x", "..", ".", "ops bot", "x" * 65, "é", "ops\n", "a.b"]


def place(channel: str, chat: str, ts: str, account: str | None) -> tuple[str, str]:
    """(day file, seal stream) of an event — the rule the writers implement, restated."""
    base = f"raw/{channel}/chats/{chat}" if account in (None, "default") else \
        f"raw/{channel}/accounts/{account}/chats/{chat}"
    seal = f"seals/{channel}/{chat}.jsonl" if account in (None, "default") else \
        f"seals/{channel}/accounts/{account}/{chat}.jsonl"
    return f"{base}/{ts[0:4]}/{ts[5:7]}/{ts[8:10]}.jsonl", seal


def main() -> None:
    paths = []
    for chat, ts, acc in [("42", "2026-11-30T10:00:00.000Z", None), ("42", "2026-11-30T10:00:00.000Z", "default"),
                          ("42", "2026-11-30T10:00:00.000Z", "bot-b"), ("-1001234567890", "2024-02-29T23:59:59.999Z", "ops"),
                          ("accounts", "2026-01-01T00:00:00.000Z", "chats"), ("@chan", "0001-01-01T00:00:00.000Z", "x" * 64)]:
        rel, seal = place("telegram", chat, ts, acc)
        paths.append({"channel": "telegram", "chat_id": chat, "ts": ts, "account": acc, "relpath": rel, "seal": seal})
    parse_ok = [{"relpath": p["relpath"], "channel": p["channel"], "chat_id": p["chat_id"], "day": p["ts"][:10],
                 "account": p["account"] or "default"} for p in paths]
    parse_bad = ["raw/telegram/accounts/default/chats/42/2026/11/30.jsonl",  # the default account has one place only
                 "raw/telegram/accounts/Ops/chats/42/2026/11/30.jsonl", "raw/telegram/accounts/-x/chats/42/2026/11/30.jsonl",
                 "raw/telegram/accounts/ops/chat/42/2026/11/30.jsonl", "raw/telegram/accounts/ops/42/2026/11/30.jsonl",
                 "raw/telegram/accounts/ops/chats/42/2026/11/31.jsonl", "raw/telegram/accounts/chats/42/2026/11/30.jsonl",
                 "raw/telegram/accounts/ops/chats/../2026/11/30.jsonl", "raw/telegram/account/ops/chats/42/2026/11/30.jsonl"]
    # one user (chat 42) writing to the default bot and to bot "b" on one day: two files, two chains
    events = [
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:00.000Z",
         "id": "01KB00000000000000000000A1", "text": "to the default bot", "salt": "00112233445566778899aabbccddeeff"},
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "account": "b",
         "ts": "2026-11-30T10:00:01.000Z", "id": "01KB00000000000000000000A2", "text": "to bot b",
         "salt": "ffeeddccbbaa99887766554433221100"},
        {"event": "message:sent", "channel": "telegram", "chat_id": "42", "account": "default",
         "ts": "2026-11-30T10:00:02.000Z", "id": "01KB00000000000000000000A3", "text": "default replies",
         "salt": "0123456789abcdef0123456789abcdef"},
        {"event": "message:sent", "channel": "telegram", "chat_id": "42", "account": "b",
         "ts": "2026-11-30T10:00:03.000Z", "id": "01KB00000000000000000000A4", "text": "b replies",
         "salt": "deadbeefdeadbeefdeadbeefdeadbeef"},
    ]
    files: dict[str, list[str]] = {}
    heads: dict[str, str] = {}
    for ev in events:
        rel, _ = place(ev["channel"], ev["chat_id"], ev["ts"], ev.get("account"))
        prev = heads.get(rel, genesis(rel))
        line, _, h = chain(dict(ev, v=2, prev=prev))
        heads[rel] = h
        files.setdefault(rel, []).append(line)
    out = {
        "_about": "computed by make_accounts_vectors.py (stdlib only), independent of both writers",
        "account_ok": ACCOUNT_OK, "account_bad": ACCOUNT_BAD, "paths": paths, "parse_ok": parse_ok,
        "parse_bad": parse_bad, "events": events,
        "files": {rel: "".join(x + "\n" for x in lines) for rel, lines in files.items()},
        "genesis": {rel: genesis(rel) for rel in files},
    }
    (HERE / "accounts.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
