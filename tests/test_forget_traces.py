"""Issue 26: `forget --chat A` leaves no trace of A anywhere the project writes — the agent's trail (`recall:query`
events made through the real `eventlog agent call`), the DLP alerts (no fingerprint a dictionary can match), the
allowlist, the index, the Parquet — and the chats that remain keep working (their trail, their allowlist)."""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.dlp import alerts as al
from eventlog.store.writer import EventLog

from store_support import ev

A, B, OWNER = "4242", "5151", "999"
TEXT, NAME, QUESTION = "zebracanary", "Quillonname", "quokkaquestion"
SECRET = "sunshine7"  # a low-entropy password: an 8-word dictionary holds it
DICTIONARY = ["password", "123456", "qwerty", "letmein", "dragon", "sunshine", SECRET, "monkey"]  # (B's bluebird is live: not in it)
CANARIES = [TEXT, NAME, QUESTION, SECRET]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture()
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every place the project may write: the root, the data dir, the cache, the temp dir (all private)."""
    p = {name: tmp_path / name for name in ("root", "data", "cache", "tmp")}
    for d in p.values():
        d.mkdir()
    monkeypatch.setenv("EVENTLOG_DATA_DIR", str(p["data"]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(p["cache"]))
    monkeypatch.setenv("XDG_DATA_HOME", str(p["data"]))
    monkeypatch.setenv("TMPDIR", str(p["tmp"]))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return p


def _holding(places: dict[str, Path], needle: str) -> list[str]:
    hits = []
    for base in places.values():
        for f in base.rglob("*"):
            if not f.is_file():
                continue
            data = f.read_bytes()
            if needle.encode() in data:
                hits.append(str(f))
            elif f.suffix == ".parquet":
                import pyarrow.parquet as pq

                if needle in json.dumps(pq.read_table(f).to_pylist(), ensure_ascii=False):
                    hits.append(f"{f} (decoded)")
    return hits


def _call(root: Path, **req) -> dict:
    r = run("agent", "call", "--root", str(root), input=json.dumps(req))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _guessable(places: dict[str, Path]) -> list[str]:
    """Files holding a keyed fingerprint (or keyed head) of a dictionary word, with the root's own key: what an
    attacker who copied the whole machine after the forget could still confirm."""
    key = (places["root"] / "dlp" / "key").read_bytes()
    guesses = set()
    for w in DICTIONARY:
        full = hmac.new(key, w.encode(), hashlib.sha256).hexdigest()
        guesses |= {full, full[:16]}
    found = []
    for base in places.values():
        for f in base.rglob("*"):
            if f.is_file() and f.name != "key":
                hexes = set(re.findall(rb"[0-9a-f]{16,64}", f.read_bytes()))
                found += [f"{f}: {h.decode()[:16]}…" for h in hexes if h.decode() in guesses]
    return found


@pytest.fixture()
def planted(places: dict[str, Path]) -> Path:
    root = places["root"]
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    for day in ("2026-10-03", "2026-11-02"):
        log.append(ev(chat=A, ts=f"{day}T10:00:00Z", text=f"the {TEXT} says my password is {SECRET}",
                      **{"from": {"id": int(A), "first_name": NAME}}))
        log.append(ev(chat=B, ts=f"{day}T11:00:00Z", text=f"giraffe report {day}; wifi password: bluebird",
                      **{"from": {"id": int(B), "first_name": "Other"}}))
    assert run("dlp", "scan", "--log", "--root", str(root)).exit_code == 0
    states = al.project(root)
    by_chat = {s.alert["chat_id"]: s for s in states}
    assert set(by_chat) == {A, B}
    # a reviewer calls both false positives: B's must keep allowlisting after A is forgotten, A's must go
    for chat in (A, B):
        assert run("dlp", "review", by_chat[chat].id, "--resolution", "false_positive", "--root", str(root)).exit_code == 0
    # the agent's trail, through the real tool-call path: A asks in A, the owner asks across chats, B asks in B
    assert _call(root, tool="search", args={"query": f"{QUESTION} {TEXT}"}, chat=A, requester=A)["hits"] >= 1
    owner = _call(root, tool="search", args={"query": f"{TEXT} giraffe", "scope": "all"}, chat=OWNER,
                  requester=OWNER, all_allowed=True)
    assert owner["hits"] >= 3, owner  # A's and B's messages
    assert _call(root, tool="search", args={"query": "giraffe report"}, chat=B, requester=B)["hits"] >= 1
    assert run("compact", "--root", str(root), "--before", "2026-11-02").exit_code == 0
    assert run("index", "--no-vectors", "--root", str(root)).exit_code == 0
    return root


def _trail(root: Path) -> list[dict]:
    out = []
    for f in sorted((root / "raw" / "system").rglob("*.jsonl")):
        out += [o for o in map(orjson.loads, f.read_bytes().splitlines()) if o.get("event") == "recall:query"]
    return out


def test_forget_leaves_no_canary_no_guessable_fingerprint_and_no_trail(places: dict[str, Path], planted: Path):
    root = planted
    a_ids = {o["id"] for f in (root / "raw" / "telegram" / "chats" / A).rglob("*.jsonl")
             for o in map(orjson.loads, f.read_bytes().splitlines())}
    for c in CANARIES:  # the test can fail: every canary is there before
        assert _holding(places, c), c
    assert _guessable(places), "the dictionary matches the alerts' fingerprints before the forget"

    r = run("forget", "--chat", A, "--reason", "user asked", "--yes", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    assert run("verify", "--root", str(root)).exit_code == 0

    for c in CANARIES:
        assert not _holding(places, c), (c, _holding(places, c))
    assert not _guessable(places), _guessable(places)
    trail = _trail(root)
    assert len(trail) == 3
    about_a, owner, of_b = trail
    for gone in (about_a, owner):  # scoped to A / with hits in A: question, requester and hit list erased
        assert "salt" not in gone and all(set(gone[k]) == {"c"} for k in ("args", "from", "payload")), gone
    assert not a_ids & set(json.dumps(trail).split('"')), "no hit id of A is left in the trail"
    assert of_b["args"] == {"query": "giraffe report"} and of_b["from"] == {"id": B}  # B's own call stays
    assert of_b["payload"]["ids"]
    erased = [o for o in map(orjson.loads, b"".join(f.read_bytes() for f in sorted(
        (root / "raw" / "system").rglob("*.jsonl"))).splitlines()) if o.get("event") == "log:erased"]
    assert erased[-1]["queries"] == 2
    # B's false positive still allowlists its value everywhere (exit 1: nothing found); A's entry is gone
    assert run("dlp", "scan", "wifi password: bluebird", "--root", str(root)).exit_code == 1
    entries = orjson.loads((root / "dlp" / "allowlist.json").read_bytes())["entries"]
    assert len(entries) == 1 and entries[0]["alert"] in {s.id for s in al.project(root) if s.alert["chat_id"] == B}
    # the alert of A is still there for the audit: rule, chat, span — without what is derived from the secret
    a_alert = next(s for s in al.project(root) if s.alert["chat_id"] == A)
    assert a_alert.alert["rule"] == "password-prose" and a_alert.alert.get("fingerprint") is None
    assert a_alert.alert.get("masked") is None


def test_forget_says_which_alerts_keep_a_fingerprint_from_before(places: dict[str, Path]):
    """An alert written before the fingerprint moved into `payload` keeps it (the chain covers it): forget says so."""
    root = places["root"]
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    log.append(ev(chat=A, ts="2026-11-02T10:00:00Z", text="hello"))
    log.append_stream(al.ALERTS, [{"event": "dlp:alert", "channel": "telegram", "chat_id": A, "rule": "email",
                                   "ts": "2026-11-02T10:00:01.000Z", "fingerprint": "f" * 64, "masked": "c…g"}])
    r = run("forget", "--chat", A, "--reason", "asked", "--yes", "--root", str(root))
    assert r.exit_code == 0 and "1 alert(s) of the erased scope were written before" in r.stderr, r.output
    assert run("verify", "--root", str(root)).exit_code == 0
