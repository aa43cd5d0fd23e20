"""CLI contract: bad input → one stderr line, exit 2, nothing written anywhere; exit codes; --root after the command."""
import os

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli

GOOD = {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:00Z"}


def snapshot(d):
    out = {}
    for base, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(base, name)
            st = os.lstat(p)
            out[p] = (st.st_size, st.st_mode)
    return out


def run(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def line(**kw):
    return orjson.dumps({**GOOD, **kw}) + b"\n"


BAD = {
    "invalid json": b'{"event": "message:received",\n',
    "invalid utf-8": b'{"event":"message:received","channel":"telegram","chat_id":"42","ts":"2026-11-30T10:00:00Z","text":"\xff\xfe"}\n',
    "raw NUL": b'{"event":"message:received","channel":"telegram",\x00"chat_id":"42","ts":"2026-11-30T10:00:00Z"}\n',
    "20 MB line": b'{"event":"message:received","channel":"telegram","chat_id":"42","ts":"2026-11-30T10:00:00Z","text":"'
                  + b"a" * (20 * 1024 * 1024) + b'"}\n',
    "missing ts": orjson.dumps({k: v for k, v in GOOD.items() if k != "ts"}) + b"\n",
    "missing chat_id": orjson.dumps({k: v for k, v in GOOD.items() if k != "chat_id"}) + b"\n",
    "not an object": b"[1,2,3]\n",
    "bad ts": line(ts="yesterday"),
    "wrong version": line(v=3),
    "bad event kind": line(event="Message Received"),
    "chat ../x": line(chat_id="../x"),
    "chat ../../etc": line(chat_id="../../../../etc"),
    "chat slash": line(chat_id="a/b"),
    "chat NUL": line(chat_id="a\x00b"),
    "chat control": line(chat_id="a\x1bb"),
    "chat 10 KB": line(chat_id="9" * 10240),
    "chat dot": line(chat_id="."),
    "chat bool": line(chat_id=True),
    "channel ..": line(channel=".."),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_exit_2_nothing_written(tmp_path, name):
    root = tmp_path / "root"
    run(["init", "--root", str(root)])
    src = tmp_path / "input.jsonl"
    src.write_bytes(line(text="good first") + BAD[name])
    before_all = snapshot(tmp_path)
    # From a file the whole input is one unit: the good line before the bad one is not written either.
    with open(src, "rb") as f:
        r = run(["append", "--root", str(root)], input=f)
    assert r.exit_code == 2, r.output
    assert r.stdout == ""
    err = r.stderr.strip()
    assert err.startswith("eventlog: ") and "\n" not in err and "Traceback" not in err
    assert len(err) < 400
    assert snapshot(tmp_path) == before_all


def test_error_names_the_line(tmp_path):
    r = run(["append", "--root", str(tmp_path)], input=line() + line() + line(chat_id="../x"))
    assert r.exit_code == 2 and "stdin line 3" in r.stderr


def test_append_ack_and_fsync_policies(tmp_path):
    for policy in ("always", "batch", "never"):
        r = run(["append", "--root", str(tmp_path), "--ack", "--fsync", policy], input=line() + b"\n" + line())
        assert r.exit_code == 0
        ids = r.stdout.split()
        assert len(ids) == 2 and all(len(i) == 26 for i in ids)
    r = run(["stats", "--root", str(tmp_path), "--json"])
    assert r.exit_code == 0
    assert orjson.loads(r.stdout.splitlines()[0])["events"] == 6


def test_missing_trailing_newline_is_a_line(tmp_path):
    r = run(["append", "--root", str(tmp_path), "--ack"], input=line().rstrip(b"\n"))
    assert r.exit_code == 0 and len(r.stdout.split()) == 1


def test_root_option_after_subcommand_and_group(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run(["init", "--root", str(a)]).stdout.strip() == str(a)
    assert run(["--root", str(b), "init"]).stdout.strip() == str(b)
    monkeypatch.setenv("EVENTLOG_ROOT", str(tmp_path / "env"))
    assert run(["path", "--json"]).exit_code == 0
    rows = [orjson.loads(l) for l in run(["path", "--json"]).stdout.splitlines()]
    assert rows[0]["path"] == str(tmp_path / "env") and rows[0]["source"] == "$EVENTLOG_ROOT"
    assert {r["name"] for r in rows} >= {"root", "raw", "seals", "dlp-alerts", "dlp-key", "parquet"}


def test_stats_exit_codes(tmp_path):
    run(["init", "--root", str(tmp_path)])
    assert run(["stats", "--root", str(tmp_path)]).exit_code == 1
    run(["append", "--root", str(tmp_path)], input=line())
    r = run(["stats", "--root", str(tmp_path), "--by", "day"])
    assert r.exit_code == 0 and "2026-11-30" in r.stdout
    assert run(["stats", "--root", str(tmp_path / "nope")]).exit_code == 2
    assert run(["verify", "--root", str(tmp_path / "nope")]).exit_code == 2


def test_seal_command(tmp_path):
    run(["append", "--root", str(tmp_path)], input=line(ts="2026-11-28T10:00:00Z") + line(ts="2026-11-29T10:00:00Z"))
    r = run(["seal", "--root", str(tmp_path), "--through", "2026-11-29", "--json"])
    assert r.exit_code == 0
    outcomes = [orjson.loads(l)["outcome"] for l in r.stdout.splitlines()]
    assert outcomes == ["already sealed", "sealed"]  # the 28th was auto-sealed when the 29th was written
    assert run(["verify", "--root", str(tmp_path)]).exit_code == 0


def test_append_warns_when_it_repairs_a_torn_tail(tmp_path):
    run(["append", "--root", str(tmp_path)], input=line())
    day = tmp_path / "raw/telegram/chats/42/2026/11/30.jsonl"
    with open(day, "ab") as f:
        f.write(b'{"chat_id":"42","ev')  # a crash mid-write
    r = run(["append", "--root", str(tmp_path)], input=line(text="after"))
    assert r.exit_code == 0
    assert "torn last line" in r.stderr and "30.jsonl" in r.stderr
    assert run(["verify", "--root", str(tmp_path)]).exit_code == 0
