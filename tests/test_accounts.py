"""Accounts are part of a chat's identity (issue 24 part 1): one user writing to two of the gateway's bots has one chat
id under two accounts — two partitions (files, chains, seals), readers that tell them apart, and `eventlog migrate`
bringing a log written before (both accounts' lines in one file) to the layout. Through the CLI."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from eventlog.store import schema

EL = [sys.executable, "-m", "eventlog"]
DEFAULT_FILE = "raw/telegram/chats/42/2026/11/{d}.jsonl"
B_FILE = "raw/telegram/accounts/b/chats/42/2026/11/{d}.jsonl"


def run(root, *args, stdin=None, check=True):
    p = subprocess.run(EL + [*args, "--root", str(root)], input=stdin, capture_output=True, text=True)
    if check and p.returncode not in (0, 1):
        raise AssertionError(f"{args}: exit {p.returncode}\n{p.stderr}")
    return p


def msg(day, sec, text, account=None, mid=None):
    ev = {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": f"2026-11-{day}T10:00:{sec:02d}Z",
          "direction": "in", "text": text, "from": {"id": 42, "is_bot": False, "username": "ann"}}
    if account is not None:
        ev["account"] = account
    if mid is not None:
        ev["message_id"] = mid
    return ev


def ids(root):
    return sorted(json.loads(line)["id"] for p in (root / "raw").rglob("*.jsonl") for line in p.read_text().splitlines()
                  if json.loads(line)["event"].startswith("message:"))


def chain_ok(path: Path, rel: str) -> bool:
    from eventlog.store.commitment import chain_hash

    prev = schema.genesis(rel)
    for line in path.read_bytes().split(b"\n")[:-1]:
        obj = orjson.loads(line)
        if obj["prev"] != prev:
            return False
        prev = chain_hash(line, obj)
    return True


def write_shared(root: Path, events: list[dict]) -> None:
    """A log as the writers before accounts had partitions wrote it: every account's events of chat 42 in the default
    account's day file, one chain (the line bytes and chain are the format's, docs/log-format.md)."""
    heads: dict[str, str] = {}
    for ev in events:
        p = schema.prepare(ev)
        rel = DEFAULT_FILE.format(d=p["ts"][8:10])
        prev = heads.get(rel, schema.genesis(rel))
        line, form = schema.encode_forms(p, prev)
        heads[rel] = hashlib.sha256(form or line).hexdigest()
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as f:
            f.write(line + b"\n")


def test_two_accounts_one_chat_two_partitions(root):
    """The same user to the default bot and bot "b" on two days: separate files and seal streams, each chain from its
    own genesis, verify clean; a third account is refused when its id is not OpenClaw's form."""
    lines = "".join(json.dumps(e) + "\n" for e in [msg(29, 0, "to default"), msg(29, 1, "to b", "b"),
                                                   msg(30, 0, "again default"), msg(30, 1, "again b", "b")])
    assert run(root, "append", stdin=lines).returncode == 0
    for d in ("29", "30"):
        for rel in (DEFAULT_FILE.format(d=d), B_FILE.format(d=d)):
            assert chain_ok(root / rel, rel), rel
            assert len((root / rel).read_text().splitlines()) == 1
    assert (root / "seals/telegram/42.jsonl").is_file() and (root / "seals/telegram/accounts/b/42.jsonl").is_file()
    v = run(root, "verify", "--json")
    assert v.returncode == 0 and json.loads(v.stdout.splitlines()[-1])["ok"], v.stdout
    bad = run(root, "append", stdin=json.dumps(msg(30, 2, "x", "../b")) + "\n", check=False)
    assert bad.returncode == 2 and "account" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_migrate_splits_a_mixed_account_log(root):
    """Before: both accounts in one file per day (sealed), verify clean with a warning per foreign line. After
    `eventlog migrate`: the same event ids, b's in their own files, both chains re-made, verify clean with no warning;
    a second run changes nothing."""
    write_shared(root, [msg(28, 0, "d1"), msg(28, 1, "b1", "b"), msg(29, 0, "b only", "b"),
                        msg(30, 0, "d2", "default"), msg(30, 1, "b2", "b"), msg(30, 2, "c1", "c")])
    assert run(root, "seal", "--through", "2026-11-29").returncode == 0
    head = run(root, "head").stdout.strip()
    before = ids(root)
    v = run(root, "verify", "--json")
    assert v.returncode == 0, v.stdout + v.stderr
    assert "moves it" in v.stdout  # the shared-file lines are named, not damage
    m = run(root, "migrate", "--json")
    assert m.returncode == 0, m.stderr
    summary = json.loads(m.stdout.splitlines()[-1])
    assert summary["moved"] == 4 and summary["skipped"] == []
    assert ids(root) == before
    assert not (root / DEFAULT_FILE.format(d="29")).exists()  # every line of that day was b's
    assert (root / "raw/telegram/accounts/c/chats/42/2026/11/30.jsonl").is_file()
    for p in (root / "raw").rglob("*.jsonl"):
        rel = p.relative_to(root).as_posix()
        assert chain_ok(p, rel), rel
        accounts = {json.loads(x).get("account", "default") for x in p.read_text().splitlines()}
        assert accounts == ({"default"} if "/accounts/" not in rel else {rel.split("/")[3]}), rel
    v = run(root, "verify", "--json")
    report = json.loads(v.stdout.splitlines()[-1])
    assert v.returncode == 0 and report["ok"] and report["warnings"] == 0, v.stdout
    assert run(root, "verify", "--head", head).returncode == 0  # the log still extends the head taken before
    again = run(root, "migrate", "--json")
    assert json.loads(again.stdout.splitlines()[-1])["moved"] == 0 and ids(root) == before


def test_migrate_refuses_a_root_that_does_not_verify(root):
    write_shared(root, [msg(30, 0, "d"), msg(30, 1, "b", "b")])
    path = root / DEFAULT_FILE.format(d="30")
    path.write_text(path.read_text().replace('"d"', '"D"'))
    before = path.read_bytes()
    m = run(root, "migrate", check=False)
    assert m.returncode == 2 and len(m.stderr.strip().splitlines()) == 1 and "does not verify" in m.stderr
    assert path.read_bytes() == before and not (root / "raw/telegram/accounts").exists()


def test_migrate_resumes_after_a_kill_between_target_and_source(root, monkeypatch):
    """Killed after the target file was replaced and before the source: the moved lines are in both; verify still
    passes, and the next run only drops them from the source — the ids stay the same set, once each."""
    from eventlog.store import migrate, split

    write_shared(root, [msg(30, 0, "d"), msg(30, 1, "b", "b")])
    before = ids(root)
    real = split.replace_file
    calls = []

    def dying(path, data, tag="tmp", mode=0o600):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the kill
        real(path, data, tag, mode)

    monkeypatch.setattr(split, "replace_file", dying)
    with pytest.raises(KeyboardInterrupt):
        migrate.migrate(root)
    monkeypatch.setattr(split, "replace_file", real)
    assert len(calls) == 2 and set(ids(root)) == set(before) and len(ids(root)) == len(before) + 1  # b's line twice
    assert run(root, "verify").returncode == 0
    assert run(root, "migrate").returncode == 0
    assert ids(root) == before and run(root, "verify").returncode == 0


def _two_accounts(root):
    evs = [msg(29, 0, "secret plan default", mid=7), msg(29, 1, "secret plan bee", "b", mid=7),
           msg(30, 0, "lunch default", mid=8), msg(30, 1, "lunch bee", "b", mid=8), msg(30, 2, "lunch ops", "ops")]
    assert run(root, "append", stdin="".join(json.dumps(e) + "\n" for e in evs)).returncode == 0


def test_readers_tell_accounts_apart(root, tmp_path):
    _two_accounts(root)
    g = run(root, "grep", "secret", "--account", "b", "--json")
    texts = [json.loads(x)["event"]["text"] for x in g.stdout.splitlines()]
    assert g.returncode == 0 and texts == ["secret plan bee"]
    c = run(root, "grep", "lunch", "-c")
    assert c.stdout.splitlines() == ["telegram/42:1", "telegram/accounts/b/42:1", "telegram/accounts/ops/42:1"]
    both = run(root, "grep", "lunch", "--account", "default", "--account", "ops", "--json")
    assert sorted(json.loads(x)["event"]["text"] for x in both.stdout.splitlines()) == ["lunch default", "lunch ops"]
    s = run(root, "sql", "SELECT account, count(*) AS n FROM messages GROUP BY account ORDER BY account", "--json")
    assert [json.loads(x) for x in s.stdout.splitlines()] == [{"account": "b", "n": 2}, {"account": "default", "n": 2},
                                                             {"account": "ops", "n": 1}]
    s = run(root, "sql", "SELECT text FROM messages", "--account", "ops", "--json")
    assert [json.loads(x)["text"] for x in s.stdout.splitlines()] == ["lunch ops"]
    chats = run(root, "sql", "SELECT account, received FROM chats ORDER BY account", "--json")
    assert [json.loads(x) for x in chats.stdout.splitlines()] == [
        {"account": "b", "received": 2}, {"account": "default", "received": 2}, {"account": "ops", "received": 1}]
    out = tmp_path / "b.jsonl"
    assert run(root, "export", "--chat", "42", "--account", "b", "-o", str(out)).returncode == 0
    assert [json.loads(x)["text"] for x in out.read_text().splitlines()] == ["secret plan bee", "lunch bee"]
    md = tmp_path / "b.md"
    assert run(root, "export", "--chat", "42", "--account", "b", "--format", "md", "-o", str(md)).returncode == 0
    assert "lunch bee" in md.read_text() and "default" not in md.read_text()
    st = run(root, "stats", "--by", "account", "--json")
    assert [(r["account"], r["events"]) for r in map(json.loads, st.stdout.splitlines())] == [
        ("default", 2), ("b", 2), ("ops", 1)]
    for mode in ("text", "bm25"):
        hits = run(root, "search", "lunch", "--mode", mode, "--account", "b", "--json")
        assert [(h["text"], h["account"]) for h in map(json.loads, hits.stdout.splitlines())] == [("lunch bee", "b")], mode
    bad = run(root, "grep", "x", "--account", "../b", check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_readers_keep_a_not_yet_migrated_log_apart(root):
    """Before `eventlog migrate`, b's lines sit in the default account's file: the readers still filter by the field."""
    write_shared(root, [msg(30, 0, "lunch default"), msg(30, 1, "lunch bee", "b")])
    g = run(root, "grep", "lunch", "--account", "default", "--json")
    assert [json.loads(x)["event"]["text"] for x in g.stdout.splitlines()] == ["lunch default"]
    s = run(root, "sql", "SELECT text FROM messages", "--account", "b", "--json")
    assert [json.loads(x)["text"] for x in s.stdout.splitlines()] == ["lunch bee"]


def _call(root, req):
    p = subprocess.run(EL + ["agent", "call", "--root", str(root)], input=json.dumps(req), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _boat_log(root):
    evs = [msg(29, 0, "my boat is called Marlin", mid=7), msg(29, 1, "my boat is called Seagull", "b", mid=7),
           msg(29, 2, "the boat of ops is Kestrel", "ops", mid=7)]
    evs[2]["chat_id"] = "77"
    assert run(root, "append", stdin="".join(json.dumps(e) + "\n" for e in evs)).returncode == 0
    rows = run(root, "sql", "SELECT text, id FROM messages", "--json").stdout.splitlines()
    return {r["text"]: r["id"] for r in map(json.loads, rows)}


def test_agent_scope_is_account_and_chat(root):
    """The tool behind bot b sees b's chat with the user, never the default bot's chat of the same id; a request
    without `account` is the default account; scope "all" stays within the account unless all_accounts widens it."""
    ids = _boat_log(root)
    base = {"tool": "search", "args": {"query": "boat"}, "chat": "42"}
    b = _call(root, {**base, "account": "b"})
    assert b["ok"] and b["ids"] == [ids["my boat is called Seagull"]] and "Marlin" not in b["text"]
    assert "this chat (telegram account b 42)" in b["text"]
    d = _call(root, base)
    assert d["ids"] == [ids["my boat is called Marlin"]] and "Seagull" not in d["text"]
    owner = _call(root, {**base, "account": "b", "all_allowed": True, "args": {"query": "boat", "scope": "all"}})
    assert owner["scope"] == "all" and owner["ids"] == [ids["my boat is called Seagull"]]
    wide = _call(root, {**base, "account": "b", "all_allowed": True, "all_accounts": ["ops"],
                        "args": {"query": "boat", "scope": "all"}})
    assert sorted(wide["ids"]) == sorted([ids["my boat is called Seagull"], ids["the boat of ops is Kestrel"]])
    every = _call(root, {**base, "all_allowed": True, "all_accounts": "*", "args": {"query": "boat", "scope": "all"}})
    assert len(every["ids"]) == 3
    # a non-owner asking for "all" gets the account's chat only
    sneaky = _call(root, {**base, "account": "b", "all_accounts": "*", "args": {"query": "boat", "scope": "all"}})
    assert sneaky["ids"] == [ids["my boat is called Seagull"]]
    # context: an id of the other account's chat with the same chat id is not found from this one
    ctx = _call(root, {"tool": "context", "args": {"id": ids["my boat is called Marlin"]}, "chat": "42", "account": "b"})
    assert ctx["hits"] == 0 and "Marlin" not in ctx["text"]
    ctx = _call(root, {"tool": "context", "args": {"id": ids["my boat is called Seagull"]}, "chat": "42", "account": "b"})
    assert ctx["hits"] == 1 and "Marlin" not in ctx["text"]
    bad = _call(root, {**base, "account": "../b"})
    assert not bad["ok"] and "account" in bad["text"]
    rec = [json.loads(x) for p in sorted((root / "raw/system").rglob("*.jsonl")) for x in p.read_text().splitlines()]
    assert rec[0]["scope_account"] == "b" and rec[1]["scope_account"] == "default"


def test_agent_scope_on_a_log_not_migrated_yet(root):
    """Before `eventlog migrate` b's lines share the default account's file: the scope still holds, by the field. The
    text modes read the lines and find b's; the index modes scope by file, so they find b's only after the migrate —
    never the other account's (docs/store.md "Accounts")."""
    write_shared(root, [msg(29, 0, "my boat is called Marlin"), msg(29, 1, "my boat is called Seagull", "b")])
    b = _call(root, {"tool": "search", "args": {"query": "boat", "mode": "text"}, "chat": "42", "account": "b"})
    assert "Seagull" in b["text"] and "Marlin" not in b["text"]
    d = _call(root, {"tool": "search", "args": {"query": "boat", "mode": "text"}, "chat": "42"})
    assert "Marlin" in d["text"] and "Seagull" not in d["text"]
    for mode in ("hybrid", "bm25"):
        ranked = _call(root, {"tool": "search", "args": {"query": "boat", "mode": mode}, "chat": "42", "account": "b"})
        assert "Marlin" not in ranked["text"], mode
        ranked = _call(root, {"tool": "search", "args": {"query": "boat", "mode": mode}, "chat": "42"})
        assert "Seagull" not in ranked["text"] and "Marlin" in ranked["text"], mode
    seagull = b["ids"][0]
    ctx = _call(root, {"tool": "context", "args": {"id": seagull}, "chat": "42"})
    assert ctx["hits"] == 0
    ctx = _call(root, {"tool": "context", "args": {"id": seagull}, "chat": "42", "account": "b"})
    assert ctx["hits"] == 1 and "Marlin" not in ctx["text"]


def test_import_into_an_account(root):
    """`import telegram-desktop --account b`: the history lands in b's partition; importing it again adds nothing, and
    the same export into the default account is a separate chat (two bots' histories with one user)."""
    fix = Path(__file__).parent / "fixtures" / "telegram-desktop" / "bot_dm"
    first = run(root, "import", "telegram-desktop", str(fix), "--account", "b", "--json")
    added = json.loads(first.stdout.splitlines()[-1])["added"]
    assert first.returncode == 0 and added > 0
    assert not (root / "raw/telegram/chats").exists() and (root / "raw/telegram/accounts/b/chats").is_dir()
    again = run(root, "import", "telegram-desktop", str(fix), "--account", "b", "--json")
    assert json.loads(again.stdout.splitlines()[-1])["added"] == 0
    other = run(root, "import", "telegram-desktop", str(fix), "--json")
    assert json.loads(other.stdout.splitlines()[-1])["added"] == added and (root / "raw/telegram/chats").is_dir()
    assert run(root, "verify").returncode == 0
    s = run(root, "sql", "SELECT account, count(*) AS n FROM messages GROUP BY account ORDER BY account", "--json")
    assert [r["account"] for r in map(json.loads, s.stdout.splitlines())] == ["b", "default"]
    bad = run(root, "import", "telegram-desktop", str(fix), "--account", "B/x", check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_forget_erases_every_account_and_reseals_each_partition(root):
    """The user asks to be forgotten: their chat id under every account is erased, each sealed day resealed in its own
    partition's seal stream, and the log still verifies with no warning."""
    _two_accounts(root)
    assert run(root, "seal", "--through", "2026-11-29").returncode == 0
    f = run(root, "forget", "--chat", "42", "--reason", "user asked", "--yes")
    assert f.returncode == 0, f.stderr
    assert run(root, "grep", "secret").returncode == 1
    v = run(root, "verify", "--json")
    report = json.loads(v.stdout.splitlines()[-1])
    assert v.returncode == 0 and report["ok"] and report["warnings"] == 0, v.stdout


def test_tail_and_watch_lists_see_every_account(root):
    """`tail` lists the accounts' partitions too, and a watcher that sees a new account directory lists just it."""
    from eventlog.store.layout import log_files_under

    _two_accounts(root)
    t = run(root, "tail", "-n", "10", "--json")
    assert sorted(json.loads(x).get("account", "default") for x in t.stdout.splitlines()) == \
        ["b", "b", "default", "default", "ops"]
    under = [f.relpath for f in log_files_under(root, root / "raw/telegram/accounts/b")]
    assert under == [B_FILE.format(d="29"), B_FILE.format(d="30")]
    assert [f.account for f in log_files_under(root, root / "raw/telegram/accounts")] == ["b", "b", "ops"]
    assert list(log_files_under(root, root / "raw/telegram/accounts/default")) == []
