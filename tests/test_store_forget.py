"""Store v2: forget (erasure everywhere under the root), the head hash, migrate — through the real CLI."""
from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.dlp import alerts as al
from eventlog.store.writer import EventLog

from store_support import ev

CANARIES = ["zebracanary", "кактусканарейка", "canary@example.org", "CANARYUSER"]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _bytes_under(root: Path, needle: bytes) -> list[str]:
    """Every file under the root that holds `needle` anywhere (Parquet pages are zstd-compressed, so they are also
    read back through pyarrow and searched as text)."""
    hits = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        data = p.read_bytes()
        if needle in data:
            hits.append(str(p.relative_to(root)))
        elif p.suffix == ".parquet":
            import pyarrow.parquet as pq

            if needle.decode() in json.dumps(pq.read_table(p).to_pylist(), ensure_ascii=False):
                hits.append(str(p.relative_to(root)) + " (decoded)")
    return hits


def _sent(chat: str, ts: str, text: str, **kw) -> dict:
    return {"event": "message:sent", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text,
            "method": "sendMessage", "payload": {"chat_id": chat, "text": text}, "direction": "out", **kw}


@pytest.fixture()
def planted(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    z, k, mail, user = CANARIES
    for day in ("2026-10-03", "2026-10-04", "2026-11-01", "2026-11-02"):
        log.append(ev(chat="42", ts=f"{day}T10:00:00Z", text=f"the {z} ate my {k} on {day}",
                      **{"from": {"id": 777, "username": user, "name": "Canary"}},
                      raw={"message": {"text": f"{z} {mail}"}}))
        log.append(_sent("42", f"{day}T10:00:05Z", f"noted: {k}"))
        log.append(ev(chat="43", ts=f"{day}T11:00:00Z", text=f"giraffe report {day}",
                      **{"from": {"id": 888, "username": "other", "name": "Other"}}))
    # an alert on chat 42 with a reviewer's note that quotes the content
    stored = log.append_stream(al.ALERTS, [{"event": "dlp:alert", "channel": "telegram", "chat_id": "42",
                                            "ts": "2026-11-02T10:00:06.000Z", "rule": "email", "masked": "c…g",
                                            "fingerprint": "f" * 16, "log_event": None, "source": "test"}]).events
    al.review(root, stored[0]["id"], "false-positive", note=f"just the {z} again", reviewer="rev")
    assert run("compact", "--root", str(root), "--before", "2026-11-02").exit_code == 0
    assert list((root / "parquet").glob("*.vocab"))
    assert run("index", "--no-vectors", "--root", str(root)).exit_code == 0  # a search index derived from it too
    # a torn tail (a writer killed mid-line) in chat 42's open day, and one already moved aside
    day = root / "raw/telegram/chats/42/2026/11/02.jsonl"
    with open(day, "ab") as f:
        f.write(f'{{"text":"{z} torn'.encode())
    (day.parent / "02.jsonl.torn-01KB0000000000000000000009").write_bytes(f"{k} moved aside".encode())
    assert run("seal", "--root", str(root), "--through", "2026-11-01").exit_code == 0
    return root


def test_forget_a_chat_leaves_no_byte_of_it_and_everything_verifies(planted: Path):
    root = planted
    for c in CANARIES:
        assert _bytes_under(root, c.encode()), c  # planted everywhere first: raw, parquet, vocab, dlp, torn
    head = run("head", "--root", str(root))
    assert head.exit_code == 0
    h0 = head.output.strip()
    other = run("grep", "giraffe", "--chat", "43", "--json", "--root", str(root)).output
    other_sql = run("sql", "select id, text, \"from\" from messages where chat_id = '43' order by id", "--json",
                    "--root", str(root)).output
    assert other.count('"match"') == 4

    r = run("forget", "--chat", "42", "--reason", "user asked (ticket 7)", "--yes", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    result = json.loads(r.output)
    assert result["derived"]["parquet"] == {"units_deleted": 2, "units_rebuilt": 2}

    for c in CANARIES:
        assert _bytes_under(root, c.encode()) == [], c
    assert _bytes_under(root, b"zebracanar") == []  # nor its stem in the search index
    assert result["derived"]["index"]["units_deleted"] >= 1
    v = run("verify", "--root", str(root))
    assert v.exit_code == 0, v.output
    v = run("verify", "--head", h0, "--root", str(root))
    assert v.exit_code == 0, v.output
    assert run("grep", "giraffe", "--chat", "43", "--json", "--root", str(root)).output == other
    assert run("sql", "select id, text, \"from\" from messages where chat_id = '43' order by id", "--json",
               "--root", str(root)).output == other_sql
    assert run("grep", CANARIES[0], "--root", str(root)).exit_code == 1
    # the erased events are still there (ids, times, chain), their content is not
    n42 = run("sql", "select count(*) as n from events where chat_id = '42'", "--json", "--root", str(root))
    assert json.loads(n42.output.splitlines()[0])["n"] == 8
    erased = [json.loads(x) for x in (root / "raw/system/chats/eventlog").rglob("*.jsonl")
              for x in x.read_text().splitlines() if '"log:erased"' in x]
    assert len(erased) == 1
    e = erased[0]
    assert e["scope"] == {"chat": "42", "before": None} and e["events"] == 8 and e["reviews"] == 1
    assert e["note"] == "user asked (ticket 7)" and e["files"] == 4 and e["from"]["operator"]
    # the units were rebuilt (from the erased lines) and are used again
    assert run("compact", "--check", "--root", str(root)).exit_code == 0
    # the head moved on (new seal records), and the new head verifies too
    h1 = run("head", "--root", str(root)).output.strip()
    assert h1 != h0 and run("verify", "--head", h1, "--root", str(root)).exit_code == 0
    # running it again is harmless
    again = run("forget", "--chat", "42", "--reason", "again", "--yes", "--json", "--root", str(root))
    assert again.exit_code == 0 and json.loads(again.output)["events"] == 0
    assert json.loads(again.output)["derived"]["parquet"]["units_deleted"] == 0  # units are already clean
    assert sum('"log:erased"' in x for p in (root / "raw/system").rglob("*.jsonl") for x in p.read_text().splitlines()) == 1


def test_forget_before_and_retention(planted: Path, monkeypatch):
    from datetime import date, datetime, timezone

    root = planted
    r = run("forget", "--retention", "--reason", "policy", "--yes", "--root", str(root))
    assert r.exit_code == 2 and "retention_days" in r.output
    # retention chosen so that the cut-off is 2026-10-20 today: October's two days go, November's stay
    days = (datetime.now(timezone.utc).date() - date(2026, 10, 20)).days
    (root / "config.toml").write_text(f"retention_days = {days}\n")
    r = run("forget", "--retention", "--reason", "policy", "--yes", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["events"] == 6 and out["before"] == "2026-10-20"  # 3 events × 2 October days
    assert "2026-10-03" not in run("grep", "giraffe", "--json", "--root", str(root)).output
    assert "2026-11-01" in run("grep", "giraffe", "--json", "--root", str(root)).output
    monkeypatch.setenv("EVENTLOG_RETENTION_DAYS", "0")
    r = run("forget", "--retention", "--reason", "policy", "--yes", "--root", str(root))
    assert r.exit_code == 2 and "EVENTLOG_RETENTION_DAYS" in r.output
    monkeypatch.delenv("EVENTLOG_RETENTION_DAYS")
    r = run("forget", "--before", "2026-11-02", "--reason", "policy", "--yes", "--json", "--root", str(root))
    assert json.loads(r.output)["events"] == 3
    assert run("verify", "--root", str(root)).exit_code == 0


def test_forget_without_yes_changes_nothing(planted: Path):
    before = {p: p.read_bytes() for p in planted.rglob("*") if p.is_file()}
    r = run("forget", "--chat", "42", "--reason", "x", "--root", str(planted))
    assert r.exit_code == 2 and "--yes" in r.output and "would erase 8 event(s)" in r.output
    assert {p: p.read_bytes() for p in planted.rglob("*") if p.is_file()} == before
    assert run("forget", "--reason", "x", "--yes", "--root", str(planted)).exit_code == 2
    r = run("forget", "--chat", "4242", "--reason", "x", "--yes", "--root", str(planted))  # a mistyped chat
    assert r.exit_code == 1 and "nothing to forget" in r.output
    assert {p: p.read_bytes() for p in planted.rglob("*") if p.is_file()} == before


def _head(root: Path) -> str:
    r = run("head", "--root", str(root))
    assert r.exit_code == 0, r.output
    return r.output.strip()


def test_verify_head_catches_a_deleted_seal_line(planted: Path):
    h = _head(planted)
    seal = planted / "seals/telegram/42.jsonl"
    lines = seal.read_bytes().splitlines(keepends=True)
    seal.write_bytes(b"".join(lines[:-1]))
    assert run("verify", "--root", str(planted)).exit_code == 0  # the seal stream alone cannot see this
    r = run("verify", "--head", h, "--root", str(planted))
    assert r.exit_code == 2 and "seals/telegram/42.jsonl" in r.output and "truncated" in r.output


def test_verify_head_catches_a_deleted_seal_file(planted: Path):
    h = _head(planted)
    (planted / "seals/telegram/43.jsonl").unlink()
    r = run("verify", "--head", h, "--root", str(planted))
    assert r.exit_code == 2 and "seals/telegram/43.jsonl:0: missing" in r.output


def test_verify_head_catches_a_sealed_day_deleted_with_its_seal_file(planted: Path):
    h = _head(planted)
    for p in (planted / "raw/telegram/chats/43").rglob("*.jsonl"):
        p.unlink()
    (planted / "seals/telegram/43.jsonl").unlink()
    assert run("verify", "--root", str(planted)).exit_code == 0  # without the head, nothing says chat 43 existed
    r = run("verify", "--head", h, "--root", str(planted))
    assert r.exit_code == 2 and "seals/telegram/43.jsonl" in r.output


def test_verify_head_catches_a_truncated_dlp_stream_and_a_replaced_checkpoint_file(planted: Path):
    h = _head(planted)
    rv = planted / "dlp/reviews.jsonl"
    rv.write_bytes(b"")
    r = run("verify", "--head", h, "--root", str(planted))
    assert r.exit_code == 2 and "dlp/reviews.jsonl" in r.output
    cp = planted / "seals/checkpoints.jsonl"
    cp.write_bytes(cp.read_bytes().replace(b'"lines":', b'"lines":1', 1))  # an edited checkpoint: plain verify sees it
    assert "seals/checkpoints.jsonl:1:" in run("verify", "--root", str(planted)).output
    cp.write_bytes(b"")
    r = run("verify", "--head", h, "--root", str(planted))
    assert r.exit_code == 2 and "not in the checkpoint file" in r.output
    assert run("verify", "--head", "nothex", "--root", str(planted)).exit_code == 2


def test_malformed_seal_records_are_damage_with_file_and_line(planted: Path):
    seal = planted / "seals/telegram/42.jsonl"
    log = EventLog(planted, fsync="never")
    for bad in ({"file": "raw/telegram/chats/42/2026/10/03.jsonl", "lines": 1, "last": "0" * 64},  # no bytes
                {"file": 5, "lines": 1, "bytes": 1, "last": "0" * 64},
                {"file": "raw/telegram/chats/42/2026/10/03.jsonl", "lines": "x", "bytes": 1, "last": "zz"}):
        log.append_stream("seals/telegram/42.jsonl", [{"event": "seal:file", "channel": "telegram", "chat_id": "42",
                                                       "ts": "2026-11-03T00:00:00Z", **bad}])
    n = len(seal.read_bytes().splitlines())
    r = run("verify", "--root", str(planted))
    assert r.exit_code == 2 and "Traceback" not in r.output
    for line in (n - 2, n - 1, n):
        assert f"seals/telegram/42.jsonl:{line}: seal record" in r.output
    # the writer ignores them (uses the last well-formed seal) instead of crashing
    log.append(ev(chat="42", ts="2026-10-03T12:00:00Z", text="late"))
    log.append(ev(chat="42", ts="2026-12-01T12:00:00Z", text="new day"))


def test_migrate_v1_root_then_forget(tmp_path: Path):
    """A v1 root (lines as the v1 writer wrote them) is migrated, verifies, and can then be forgotten."""
    from eventlog.store import schema
    from eventlog.store.commitment import chain_hash

    root = tmp_path / "root"
    rel = "raw/telegram/chats/42/2026/11/01.jsonl"
    (root / rel).parent.mkdir(parents=True)
    prev = schema.genesis(rel)
    lines = []
    for i in range(3):  # the v1 encoding: canonical JSON with v=1, chained over the plain line
        line = schema.encode({"v": 1, "id": schema.new_id(), "event": "message:received", "channel": "telegram",
                              "chat_id": "42", "ts": f"2026-11-01T10:00:0{i}.000Z", "text": f"zebracanary {i}",
                              "prev": prev})
        prev = schema.line_hash(line)
        lines.append(line + b"\n")
    (root / rel).write_bytes(b"".join(lines))
    assert run("seal", "--root", str(root), "--through", "2026-11-01").exit_code == 0
    assert run("verify", "--root", str(root)).exit_code == 0
    # readers take v1 as they always did, and a v2 writer continues a v1 file (a mixed file)
    EventLog(root, fsync="never").append(ev(chat="42", ts="2026-11-01T11:00:00Z", text="zebracanary v2"))
    answers = [run(*a, "--root", str(root)).output for a in (("grep", "zebracanary", "--json"),
               ("sql", "select id, text from messages order by id", "--json"), ("stats", "--json"))]
    assert answers[0].count('"match"') == 4
    assert run("verify", "--root", str(root)).exit_code == 0
    r = run("forget", "--chat", "42", "--reason", "x", "--yes", "--root", str(root))
    assert r.exit_code == 2 and "migrate" in r.output
    r = run("migrate", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output.splitlines()[-1])
    assert summary["files"] == 1 and summary["resealed"] == 1
    def hits(out: str) -> list:
        return [(h["file"], h["line"], h["event"]["id"], h["event"]["text"]) for h in map(json.loads, out.splitlines())]

    assert hits(run("grep", "zebracanary", "--json", "--root", str(root)).output) == hits(answers[0])
    assert run("sql", "select id, text from messages order by id", "--json", "--root", str(root)).output == answers[1]
    assert all(orjson.loads(x)["v"] == 2 for x in (root / rel).read_bytes().splitlines())
    assert chain_hash((root / rel).read_bytes().splitlines()[0]) != schema.line_hash(lines[0].rstrip())
    assert run("verify", "--root", str(root)).exit_code == 0
    again = json.loads(run("migrate", "--json", "--root", str(root)).output.splitlines()[-1])
    assert again["files"] == 0
    assert run("forget", "--chat", "42", "--reason", "x", "--yes", "--root", str(root)).exit_code == 0
    assert _bytes_under(root, b"zebracanary") == []
    assert run("verify", "--root", str(root)).exit_code == 0
    assert (root / "migrations/v2.jsonl").is_file()
    assert os.stat(root / "migrations/v2.jsonl").st_mode & 0o077 == 0


def test_readme_store_examples_for_head_forget_migrate_run(planted: Path, monkeypatch):
    """The README's store block: its head / verify --head / forget / migrate lines run as written."""
    import shlex

    from store_support import REPO

    text = (REPO / "README.md").read_text()
    block = text.split("## The store", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln.split("  #")[0].strip() for ln in block.splitlines()
             if ln.startswith(("eventlog head", "eventlog verify --head", "eventlog forget", "eventlog migrate"))]
    assert len(lines) == 5
    monkeypatch.setenv("EVENTLOG_RETENTION_DAYS", "1")
    head = None
    for line in lines:
        argv = shlex.split(line)[1:]
        if "--head" in argv:
            argv[argv.index("--head") + 1] = head
        r = run(*argv, "--root", str(planted))
        assert r.exit_code == 0, (line, r.output)
        if argv == ["head"]:
            head = r.output.strip()


def test_config_file_errors_are_one_line(planted: Path, monkeypatch, tmp_path: Path):
    cfg = tmp_path / "elsewhere.toml"
    cfg.write_text("retention_days = [\n")
    monkeypatch.setenv("EVENTLOG_CONFIG", str(cfg))
    r = run("forget", "--retention", "--reason", "x", "--yes", "--root", str(planted))
    assert r.exit_code == 2 and "not valid TOML" in r.output and "Traceback" not in r.output
    cfg.write_text('retention_days = "soon"\n')
    r = run("forget", "--retention", "--reason", "x", "--yes", "--root", str(planted))
    assert r.exit_code == 2 and "whole number of days" in r.output
    assert str(cfg) in run("path", "--root", str(planted)).output
