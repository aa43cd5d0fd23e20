"""Alerts and review end to end on a real log: re-scan raises `in` alerts, the projection gives states, verdicts are
events, a false positive lands on the allowlist, and the JS engine picks that up without a restart."""
from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from dlp_support import DRIVER, node_bin

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

ALNUM = string.ascii_letters + string.digits


def fake_key() -> str:
    # generated at run time: no secret-looking literal is stored in the test suite
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(93)) + "AA"


def fake_card() -> str:
    while True:
        body = "4" + "".join(secrets.choice(string.digits) for _ in range(14))
        for d in string.digits:
            n = body + d
            total = sum((int(c) * (2 if i % 2 else 1)) - (9 if int(c) * (2 if i % 2 else 1) > 9 else 0)
                        for i, c in enumerate(reversed(n)))
            if total % 10 == 0:
                return n


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def log(root: Path):
    key, card = fake_key(), fake_card()
    el = EventLog(root)
    el.append_many([
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:00.000Z",
         "direction": "in", "text": "hi bot", "from": {"username": "alice"}},
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:05.000Z",
         "direction": "in", "text": f"my key is {key} please store it", "from": {"username": "alice"}},
        {"event": "message:sent", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:09.000Z",
         "direction": "out", "method": "sendMessage", "text": "I will not store keys.",
         "payload": {"chat_id": 42, "text": "I will not store keys.", "parse_mode": "HTML"}},
        {"event": "message:received", "channel": "telegram", "chat_id": "77", "ts": "2026-11-30T11:00:00.000Z",
         "direction": "in", "text": f"card {card}, that's my visa", "from": {"username": "bob"}},
        {"event": "message:received", "channel": "telegram", "chat_id": "77", "ts": "2026-11-30T11:00:01.000Z",
         "direction": "in", "text": "nothing here", "from": {"username": "bob"}},
    ])
    return root, key, card


def alerts_json(root: Path, *extra: str) -> list[dict]:
    r = run("dlp", "alerts", "--json", "--root", str(root), *extra)
    return [json.loads(x) for x in r.output.splitlines()] if r.exit_code == 0 else []


def test_review_flow(log) -> None:
    root, key, card = log
    r = run("dlp", "alerts", "--root", str(root))
    assert r.exit_code == 1  # no alerts yet
    r = run("dlp", "scan", "--log", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert sorted(x["rule"] for x in rows) == ["anthropic-api-key", "payment-card"]
    assert all(x["new_alert"] and x["alert"] and x["direction"] == "in" for x in rows)
    # a second re-scan finds the same things but raises nothing new
    r = run("dlp", "scan", "--log", "--json", "--root", str(root))
    assert r.exit_code == 0 and not any(json.loads(x)["new_alert"] for x in r.output.splitlines())
    al = alerts_json(root)
    assert len(al) == 2 and {a["state"] for a in al} == {"open"}
    assert alerts_json(root, "--rule", "payment-card")[0]["chat_id"] == "77"
    assert len(alerts_json(root, "--chat", "42")) == 1
    ant = next(a for a in al if a["rule"] == "anthropic-api-key")
    cardal = next(a for a in al if a["rule"] == "payment-card")

    # alerts written in one batch share a ULID prefix up to the last characters: a short prefix is ambiguous
    common = os.path.commonprefix([ant["id"], cardal["id"]])
    assert len(common) >= 4  # written in the same run, seconds apart at most
    r = run("dlp", "show", common, "--root", str(root))
    assert r.exit_code == 2 and "ambiguous" in r.output
    r = run("dlp", "show", ant["id"], "--root", str(root))
    assert r.exit_code == 0, r.output
    assert "my key is [REDACTED:anthropic-api-key] please store it" in r.output
    assert "hi bot" in r.output and "I will not store keys." in r.output and key not in r.output
    r = run("dlp", "show", ant["id"], "--json", "--root", str(root))
    msgs = [json.loads(x) for x in r.output.splitlines()][1:]
    assert [m["is_alert_event"] for m in msgs] == [False, True, False]

    r = run("dlp", "review", ant["id"], "--verdict", "revoked", "--note", "rotated", "--reviewer", "ops", "--root", str(root))
    assert r.exit_code == 0
    r = run("dlp", "review", cardal["id"], "--verdict", "false-positive", "--note", "test card", "--root", str(root))
    assert r.exit_code == 0
    assert {a["id"]: a["state"] for a in alerts_json(root)} == {ant["id"]: "resolved", cardal["id"]: "resolved"}
    assert alerts_json(root, "--state", "open") == []
    allow = json.loads((root / "dlp" / "allowlist.json").read_text())
    assert [e["fingerprint"] for e in allow["entries"]] == [cardal["fingerprint"]]
    assert oct((root / "dlp" / "allowlist.json").stat().st_mode & 0o777) == "0o600"
    assert oct((root / "dlp" / "key").stat().st_mode & 0o777) == "0o600"
    # the allowlisted card is no longer reported by a re-scan
    r = run("dlp", "scan", "--log", "--json", "--no-alerts", "--root", str(root))
    assert [json.loads(x)["rule"] for x in r.output.splitlines()] == ["anthropic-api-key"]

    r = run("dlp", "stats", "--json", "--root", str(root))
    st = {x["rule"]: x for x in map(json.loads, r.output.splitlines())}
    assert st["anthropic-api-key"]["precision"] == 1.0 and st["payment-card"]["precision"] == 0.0
    assert st["payment-card"]["false_positive"] == 1 and st["anthropic-api-key"]["revoked"] == 1

    # history is append-only: the reviews stream has both verdicts; a later verdict re-opens and un-allowlists
    r = run("dlp", "review", cardal["id"], "--verdict", "true-positive", "--root", str(root))
    assert next(a for a in alerts_json(root) if a["id"] == cardal["id"])["state"] == "open"
    assert json.loads((root / "dlp" / "allowlist.json").read_text())["entries"] == []
    reviews = (root / "dlp" / "reviews.jsonl").read_text().splitlines()
    assert [json.loads(x)["verdict"] for x in reviews] == ["revoked", "false_positive", "true_positive"]
    assert run("verify", "--root", str(root)).exit_code == 0

    # nothing the DLP side wrote carries the plaintext
    for p in (root / "dlp").iterdir():
        data = p.read_bytes()
        assert key.encode() not in data and card.encode() not in data and key[13:25].encode() not in data


def test_interactive_loop(log) -> None:
    root, _, _ = log
    run("dlp", "scan", "--log", "--root", str(root))
    r = run("dlp", "review", "--root", str(root))
    assert r.exit_code == 2 and "terminal" in r.output  # CliRunner's stdin is not a tty
    # y on the first (no note), b goes back to it, f overrides it: a note with a secret in it is refused and asked
    # again, the clean note is kept; q quits before the second
    leaky = f"it was {fake_key()}"
    r = run("dlp", "review", "--interactive", "--reviewer", "me", "--root", str(root),
            input=f"y\n\nb\nf\n{leaky}\nsample key from the docs\nq\n")
    assert r.exit_code == 0, r.output
    assert "2 review(s) recorded" in r.output and "[REDACTED:" in r.output
    assert "looks like a secret" in r.output and leaky not in (root / "dlp/reviews.jsonl").read_text()
    al = alerts_json(root)
    assert [a["verdict"] for a in al] == ["false_positive", None]
    assert [a["resolution"] for a in al] == ["false_positive", None] and al[0]["note"] == "sample key from the docs"
    # the other resolutions from the loop: r / w / t
    r = run("dlp", "review", "--interactive", "--root", str(root), input="t\nfixture\n")
    assert "1 review(s) recorded" in r.output
    assert [a["resolution"] for a in alerts_json(root)] == ["false_positive", "used_in_tests"]
    r = run("dlp", "review", "--interactive", "--root", str(root), input="s\n")
    assert "0 review(s) recorded" in r.output


def test_bad_input(log, tmp_path: Path) -> None:
    root, _, _ = log
    r = run("dlp", "review", "NOPE0000", "--verdict", "revoked", "--root", str(root))
    assert r.exit_code == 2 and "no alert" in r.output
    r = run("dlp", "review", "X", "--verdict", "bogus", "--root", str(root))
    assert r.exit_code == 2
    r = run("dlp", "scan", "--root", str(root))
    assert r.exit_code == 2
    bad = tmp_path / "in.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\n{nope\n')
    r = run("dlp", "scan", "--jsonl", str(bad), "--root", str(root))
    assert r.exit_code == 2 and "in.jsonl:2" in r.output
    r = run("dlp", "alerts", "--root", str(tmp_path / "missing"))
    assert r.exit_code == 2 and "no log" in r.output
    assert not (tmp_path / "missing").exists()


def test_every_command_that_opens_a_scanner_reports_its_failure_in_one_line(log) -> None:
    """`open_scanner` raises EventlogError subclasses only (here a damaged key and a rule file that is not JSON): each
    command that opens a scanner prints one line on stderr and exits 2 — no traceback."""
    root, _, _ = log
    run("dlp", "scan", "--log", "--root", str(root))
    alert = alerts_json(root)[0]["id"]
    (root / "dlp/key").write_bytes(b"short")
    damaged = f"DLP key {root / 'dlp/key'} is damaged (5 bytes, expected 32)"
    for args in (["dlp", "scan", "some text"], ["dlp", "scan", "--log", "--no-alerts"], ["dlp", "show", alert],
                 ["dlp", "review", alert, "--resolution", "revoked", "--note", "rotated"],
                 ["dlp", "review", "--interactive"], ["agent", "search", "key", "--chat", "42"],
                 ["agent", "context", alert, "--chat", "42"]):
        r = run(*args, "--root", str(root), input="q\n")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and damaged in r.stderr, (args, r.output)
    r = run("dlp", "scan", "text", "--rules", str(root / "dlp/key"), "--root", str(root))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "not valid JSON" in r.stderr, r.stderr


def test_scan_texts_and_jsonl(root: Path, tmp_path: Path) -> None:
    key = fake_key()
    r = run("dlp", "scan", "hello", f"key: {key}", "--root", str(root))
    assert r.exit_code == 0 and r.output.startswith("2:5-") and "anthropic-api-key critical redact sk-a…[108]" in r.output
    assert key not in r.output
    assert run("dlp", "scan", "nothing to see", "--root", str(root)).exit_code == 1
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": f"😀 {key}"}) + "\n" + json.dumps({"id": "b", "text": "clean"}) + "\n")
    r = run("dlp", "scan", "--jsonl", str(src), "--root", str(root))
    assert r.exit_code == 0
    assert [json.loads(x) for x in r.output.splitlines()] == [
        {"id": "a", "rule": "anthropic-api-key", "start": 2, "end": 110, "severity": "critical", "action": "redact",
         "tier": "confirmed"}]
    r = run("dlp", "scan", "--jsonl", "-", "--root", str(root), input=json.dumps({"id": 9, "text": "x"}) + "\n")
    assert r.exit_code == 1 and r.output == ""
    f = tmp_path / "t.html"
    f.write_text(f"<b>k</b> &#115;{key[1:]}")
    r = run("dlp", "scan", "--file", str(f), "--html", "--json", "--root", str(root))
    assert json.loads(r.output)["start"] == 9


def test_js_engine_picks_up_allowlist_without_restart(log) -> None:
    """One long-running JS scanner: a finding, then a false-positive verdict from the Python CLI, then (after the
    once-a-second re-stat) the same text passes."""
    root, _, card = log
    run("dlp", "scan", "--log", "--root", str(root))
    cardal = alerts_json(root, "--rule", "payment-card")[0]
    keyhex = (root / "dlp" / "key").read_bytes().hex()
    proc = subprocess.Popen([node_bin(), str(DRIVER), "--key-hex", keyhex, "--allowlist",
                             str(root / "dlp" / "allowlist.json")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        def ask(i: int) -> dict:
            proc.stdin.write((json.dumps({"id": i, "text": f"card {card}, that's my visa", "flush": True}) + "\n").encode())
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        first = ask(1)
        assert [f["rule"] for f in first["findings"]] == ["payment-card"]
        assert first["findings"][0]["fingerprint"] == cardal["fingerprint"]  # same key, same HMAC as Python
        assert run("dlp", "review", cardal["id"], "--verdict", "false-positive", "--root", str(root)).exit_code == 0
        deadline = time.monotonic() + 5
        while True:
            res = ask(2)
            if not res["findings"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert res["findings"] == [] and res["filter"]["action"] == "pass"
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_hostile_inputs_never_crash(root: Path, tmp_path: Path) -> None:
    from eventlog.dlp.engine import open_scanner

    sc = open_scanner(root)
    for t in ["", "\ud800", "\udc00x", "<" * 5000, "&#" * 3000, "<a href='" * 500, "&#1114112; &#xD800; &#0;",
              "\u2028sk-\u2029", "9" * 20000, "a" * 100000 + "sk-ant-api03-", "\x00" * 100]:
        for html in (False, True):
            for preview in (False, True):
                assert isinstance(sc.filter(t, html=html, preview=preview)["text"], str)
    f = tmp_path / "bin.txt"
    f.write_bytes(b"\xff\xfe\x00bad")
    r = run("dlp", "scan", "--file", str(f), "--root", str(root))
    assert r.exit_code == 2 and "not UTF-8" in r.output
    r = run("dlp", "rules", "--file", str(tmp_path / "missing.json"), "--root", str(root))
    assert r.exit_code == 2 and "cannot read rule file" in r.output


def test_python_allowlist_reloads(root: Path) -> None:
    from eventlog.dlp.keys import Allowlist, allowlist_path, write_allowlist

    al = Allowlist(allowlist_path(root), check_every=0)
    assert "ab" not in al
    write_allowlist(root, [{"fingerprint": "ab", "rule": "x"}])
    assert "ab" in al
    write_allowlist(root, [])
    assert "ab" not in al


def test_github_vocabulary_filters_and_stale_allowlist(log) -> None:
    root, key, _ = log
    r = run("dlp", "scan", "--log", "--root", str(root))
    # scan --log leads each line with the alert id that `dlp show` accepts
    ids = [line.split()[0] for line in r.output.splitlines()]
    assert len(ids) == 2 and all(run("dlp", "show", i, "--root", str(root)).exit_code == 0 for i in ids)
    al = {a["rule"]: a for a in alerts_json(root)}
    ant, card = al["anthropic-api-key"], al["payment-card"]
    assert ant["ts"] == "2026-11-30T10:00:05.000Z" and ant["detected_at"] > ant["ts"]  # the event's time, then now
    # both spellings accepted, one stored
    assert run("dlp", "review", ant["id"], "--resolution", "wont-fix", "--root", str(root)).exit_code == 0
    assert run("dlp", "review", card["id"], "--verdict", "false_positive", "--root", str(root)).exit_code == 0
    stored = [json.loads(x)["verdict"] for x in (root / "dlp/reviews.jsonl").read_text().splitlines()]
    assert stored == ["wont_fix", "false_positive"]
    # a note carrying a secret is refused (exit 2, nothing written)
    r = run("dlp", "review", ant["id"], "--resolution", "revoked", "--note", f"old {key}", "--root", str(root))
    assert r.exit_code == 2 and "secret" in r.output
    assert len((root / "dlp/reviews.jsonl").read_text().splitlines()) == 2
    # filters
    assert [a["id"] for a in alerts_json(root, "--resolution", "wont_fix")] == [ant["id"]]
    assert [a["id"] for a in alerts_json(root, "--resolution", "false-positive")] == [card["id"]]
    assert [a["id"] for a in alerts_json(root, "--chat", "77", "--severity", "high", "--direction", "in")] == [card["id"]]
    assert [a["id"] for a in alerts_json(root, "--since", "2026-11-30T10:30:00Z")] == [card["id"]]
    assert alerts_json(root, "--rule", "jwt") == []
    assert run("dlp", "alerts", "--since", "soon", "--root", str(root)).exit_code == 2
    # allowlist: the card's entry matches its alert; after the alert's fingerprint changes it is stale
    r = run("dlp", "allowlist", "--stale", "--root", str(root))
    assert r.exit_code == 1
    EventLog(root).append_stream("dlp/alerts.jsonl", [{
        "event": "dlp:alert:update", "channel": "telegram", "chat_id": "77", "alert": card["id"],
        "rule": "payment-card", "fingerprint": "0" * 64, "masked": "4…[16]", "start": 5, "end": 21,
        "ts": "2026-11-30T12:00:00.000Z"}])
    r = run("dlp", "allowlist", "--stale", "--json", "--root", str(root))
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert r.exit_code == 0 and [x["alert"] for x in rows] == [card["id"]] and rows[0]["stale"]
