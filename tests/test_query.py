"""`eventlog sql`: views, counts against the writer, compaction equivalence, pruning, read-only, skipped lines."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

# The corpus fixtures (`corpus_dir`, `corpus`: 2026-09-01 … 2026-10-10, 6 chats) are in conftest.py, shared with
# test_compact.py.


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def sql_json(root: Path, query: str, *extra: str) -> list[dict]:
    r = run("sql", query, "--json", "--root", str(root), *extra)
    assert r.exit_code in (0, 1), r.output
    return [orjson.loads(line) for line in r.stdout.splitlines()]


def all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


EQUIV_QUERIES = [
    "SELECT chat_id, CAST(ts AS DATE) AS d, count(*) AS n FROM events GROUP BY ALL ORDER BY ALL",
    "SELECT count(*) AS n FROM messages WHERE text ILIKE '%договор%'",
    "SELECT * EXCLUDE (file, line) FROM events ORDER BY id",
    "SELECT id, file, line FROM events ORDER BY id",
    "SELECT * FROM messages ORDER BY id",
    "SELECT sum(message_id) AS s, count(DISTINCT sender) AS senders, min(ts) AS a, max(ts) AS b FROM messages",
]


def test_counts_equal_the_writers(corpus_dir):
    root, summary = corpus_dir
    rows = sql_json(root, "SELECT chat_id, count(*) AS n FROM events GROUP BY chat_id ORDER BY chat_id")
    assert {r["chat_id"]: r["n"] for r in rows} == summary["per_chat"]
    total = sql_json(root, "SELECT count(*) AS n, count(DISTINCT id) AS ids FROM events")[0]
    assert total == {"n": summary["events"], "ids": summary["events"]}
    msgs = sql_json(root, "SELECT direction, count(*) AS n FROM messages GROUP BY 1 ORDER BY 1")
    assert sum(r["n"] for r in msgs) == summary["events"]  # the corpus holds only messages
    forms = sql_json(root, "SELECT count(*) AS n FROM messages WHERE regexp_matches(text, 'по договор(|а|у|ом|е)$')")
    assert forms[0]["n"] == sum(v for k, v in summary["needles"].items() if k.startswith("dogovor:"))


def test_compacted_and_uncompacted_give_identical_answers(corpus):
    root, summary = corpus
    before = {q: sql_json(root, q) for q in EQUIV_QUERIES}
    # Compact only September: October stays JSONL, so the views mix both sources.
    r = run("compact", "--before", "2026-10-01", "--json", "--root", str(root))
    assert r.exit_code == 0, r.output
    units = [orjson.loads(line) for line in r.stdout.splitlines()]
    assert [(u["unit"], u["action"]) for u in units] == [("2026-09", "built")]
    explain = run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout
    assert "1 Parquet unit(s)" in explain
    for q in EQUIV_QUERIES:
        assert sql_json(root, q) == before[q], q
    # Then everything: only Parquet is read.
    assert run("compact", "--before", "2026-11-01", "--root", str(root)).exit_code == 0
    assert "0 JSONL file(s)" in run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout
    for q in EQUIV_QUERIES:
        assert sql_json(root, q) == before[q], q
    # Pruned queries agree too.
    for args in (("--chat", "100001"), ("--since", "2026-09-28", "--until", "2026-10-02")):
        q = "SELECT chat_id, count(*) AS n, min(ts) AS a, max(ts) AS b FROM events GROUP BY 1 ORDER BY 1"
        shutil.copytree(root, root.parent / "plain", ignore=shutil.ignore_patterns("parquet"), dirs_exist_ok=True)
        assert sql_json(root, q, *args) == sql_json(root.parent / "plain", q, *args)


def test_late_event_in_compacted_day_is_counted_once(corpus):
    root, summary = corpus
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never", autoseal=False)
    log.append({"event": "message:received", "channel": "telegram", "chat_id": "100001",
                "ts": "2026-09-15T12:00:00.000Z", "text": "late arrival"})
    log.append({"event": "message:received", "channel": "telegram", "chat_id": "777",
                "ts": "2026-09-16T12:00:00.000Z", "text": "new chat in a compacted month"})
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root))
    assert orjson.loads(r.stdout)["n"] == summary["events"] + 2
    assert "compaction 2026-09 is stale" in r.stderr
    assert "SELECT" in run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout
    # The unchanged chats still use the unit; the changed chat alone is read from JSONL.
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--chat", "100002", "--root", str(root))
    assert "stale" not in r.stderr
    r = run("compact", "--before", "2026-10-01", "--json", "--root", str(root))
    assert [orjson.loads(x)["action"] for x in r.stdout.splitlines()] == ["rebuilt"]
    r = run("sql", "SELECT count(*) AS n FROM events WHERE text LIKE 'late arrival' OR chat_id = '777'", "--json",
            "--root", str(root))
    assert orjson.loads(r.stdout)["n"] == 2 and "stale" not in r.stderr
    assert orjson.loads(run("sql", "SELECT count(*) AS n FROM events", "--json", "--root",
                            str(root)).stdout)["n"] == summary["events"] + 2


def test_pruning_reads_only_the_scope(corpus_dir):
    root, summary = corpus_dir
    r = run("sql", "SELECT 1", "--explain", "--chat", "100001", "--since", "2026-09-28", "--until", "2026-10-02",
            "--root", str(root))
    assert r.exit_code == 0
    assert "5 JSONL file(s) in el_jsonl" in r.stdout  # one chat × five days, nothing else opened
    rows = sql_json(root, "SELECT DISTINCT chat_id, CAST(ts AS DATE) AS d FROM events ORDER BY 2", "--chat", "100001",
                    "--since", "2026-09-28", "--until", "2026-10-02")
    assert [r["d"] for r in rows] == ["2026-09-28", "2026-09-29", "2026-09-30", "2026-10-01", "2026-10-02"]
    assert {r["chat_id"] for r in rows} == {"100001"}


@pytest.mark.parametrize("bad", [
    "COPY (SELECT 1) TO 'x.csv'",
    "ATTACH 'x.db' AS x",
    "CREATE TABLE t AS SELECT 1",
    "INSERT INTO events VALUES (1)",
    "SET enable_external_access = true",
    "SELECT * FROM read_text('/etc/passwd')",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'",
    "SELECT 1; COPY (SELECT 1) TO 'x.csv'",
    "INSTALL fts",
    "PRAGMA enable_profiling",
])
def test_sql_is_read_only(corpus, bad, tmp_path, monkeypatch):
    root, _ = corpus
    monkeypatch.chdir(root)
    before = all_files(root)
    r = run("sql", bad, "--root", str(root))
    assert r.exit_code == 2
    assert r.stderr.startswith("eventlog: ") and len(r.stderr.strip().splitlines()) == 1
    assert all_files(root) == before


def test_torn_and_invalid_lines_are_skipped_and_reported(corpus):
    root, summary = corpus
    day = root / "raw/telegram/chats/100001/2026/09/10.jsonl"
    with open(day, "ab") as f:
        f.write(b'{"this is": "not an event"}\nnot json at all\n{"v":1,"id":"01TORN')
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root))
    assert r.exit_code == 0
    assert orjson.loads(r.stdout)["n"] == summary["events"]
    assert "raw/telegram/chats/100001/2026/09/10.jsonl: skipped 3 torn or invalid line(s)" in r.stderr


def test_params_formats_and_exit_codes(corpus, tmp_path):
    root, _ = corpus
    q = "SELECT chat_id, count(*) AS n FROM messages WHERE chat_id = $c AND message_id > $m GROUP BY 1"
    rows = sql_json(root, q, "-p", "c", "100001", "-p", "m", "0")
    assert rows and rows[0]["chat_id"] == "100001"
    # A value bound as a parameter is data, never SQL.
    r = run("sql", "SELECT count(*) AS n FROM messages WHERE chat_id = $c", "--json", "-p", "c", "1' OR '1'='1",
            "--root", str(root))
    assert orjson.loads(r.stdout)["n"] == 0
    r = run("sql", "SELECT chat_id FROM events WHERE false", "--json", "--root", str(root))
    assert r.exit_code == 1 and r.stdout == ""
    r = run("sql", "SELECT chat_id, count(*) AS n FROM events GROUP BY 1 ORDER BY 1", "--format", "csv",
            "--root", str(root))
    assert r.stdout.splitlines()[0] == "chat_id,n" and len(r.stdout.splitlines()) == 7
    r = run("sql", "SELECT chat_id, count(*) AS n FROM events GROUP BY 1 ORDER BY 1", "--format", "table",
            "--root", str(root))
    assert "│ chat_id" in r.stdout and r.stdout.rstrip().endswith("6 rows")
    out = tmp_path / "r.parquet"
    r = run("sql", "SELECT * FROM messages", "--format", "parquet", "-o", str(out), "--root", str(root))
    import pyarrow.parquet as pq

    assert r.exit_code == 0 and pq.read_metadata(out).num_rows > 0
    r = run("sql", "-", "--json", "--root", str(root), input="SELECT 42 AS answer")
    assert orjson.loads(r.stdout) == {"answer": 42}
    r = run("sql", "SELECT nonsense FROM nowhere", "--root", str(root))
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    r = run("sql", "SELECT 1", "--since", "2026-10-05", "--until", "2026-10-01", "--root", str(root))
    assert r.exit_code == 2


def test_json_columns_come_back_as_json(corpus_dir):
    root, _ = corpus_dir
    row = sql_json(root, "SELECT raw, \"from\", ts FROM events WHERE direction = 'in' ORDER BY id LIMIT 1")[0]
    assert isinstance(row["raw"], dict) and "update_id" in row["raw"]
    assert isinstance(row["from"], dict) and row["ts"].endswith("Z")


def test_root_from_environment_and_after_subcommand(corpus_dir, monkeypatch):
    root, summary = corpus_dir
    monkeypatch.setenv("EVENTLOG_ROOT", str(root))
    r = CliRunner().invoke(cli, ["sql", "SELECT count(*) AS n FROM events", "--json"], catch_exceptions=False)
    assert orjson.loads(r.stdout)["n"] == summary["events"]
    r = run("--root", str(root), "sql", "SELECT count(*) AS n FROM events", "--json")
    assert orjson.loads(r.stdout)["n"] == summary["events"]
    r = run("sql", "SELECT 1", "--root", str(root / "nope"))
    assert r.exit_code == 2


def test_dlp_views_empty_when_absent_and_read_when_present(corpus):
    root, _ = corpus
    r = run("sql", "SELECT count(*) AS n, count(rule) AS r FROM dlp_alerts", "--json", "--root", str(root))
    assert orjson.loads(r.stdout) == {"n": 0, "r": 0}
    r = run("sql", "SELECT count(verdict) AS n FROM dlp_reviews", "--json", "--root", str(root))
    assert orjson.loads(r.stdout)["n"] == 0
    log = EventLog(root, fsync="never", autoseal=False)
    log.append_stream("dlp/alerts.jsonl", [{"event": "dlp:alert", "channel": "telegram", "chat_id": "100001",
                                            "ts": "2026-10-01T00:00:00.000Z", "rule": "openai-key",
                                            "fingerprint": "hmac:abc", "masked": "sk-…AAAA", "start": 3,
                                            "end": 54, "action": "redact"}])
    log.append_stream("dlp/reviews.jsonl", [{"event": "dlp:review", "channel": "telegram", "chat_id": "100001",
                                             "ts": "2026-10-01T00:01:00.000Z", "alert": "01X", "verdict": "revoked",
                                             "reviewer": "ops"}])
    rows = sql_json(root, "SELECT rule, chat_id, \"end\" - start AS n, action, line FROM dlp_alerts")
    assert rows == [{"rule": "openai-key", "chat_id": "100001", "n": 51, "action": "redact", "line": 1}]
    rows = sql_json(root, "SELECT r.verdict, a.rule FROM dlp_reviews r, dlp_alerts a WHERE r.chat_id = a.chat_id")
    assert rows == [{"verdict": "revoked", "rule": "openai-key"}]


def test_empty_log(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root))
    assert r.exit_code == 0 and orjson.loads(r.stdout)["n"] == 0
    assert os.listdir(root) == []


def test_no_progress_bar_on_stdout(corpus_dir):
    """DuckDB draws its progress bar on stdout once a query runs > 2 s: it must never get into a result."""
    from eventlog.recall.query import Scope, connect

    root, _ = corpus_dir
    con, _ = connect(Scope(root))
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False


def test_errors_while_fetching_are_one_line_exit_2(corpus_dir):
    root, _ = corpus_dir
    r = run("sql", "SELECT CAST(text AS INT) FROM events", "--json", "--root", str(root))
    assert r.exit_code == 2
    assert r.stderr.startswith("eventlog: Conversion Error") and len(r.stderr.strip().splitlines()) == 1


def test_units_of_another_format_version_are_ignored(corpus):
    root, summary = corpus
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    rec_path = root / "parquet/2026-09.json"
    rec = orjson.loads(rec_path.read_bytes())
    rec["v"] = 1
    rec_path.write_bytes(orjson.dumps(rec))
    assert "0 Parquet unit(s)" in run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout
    assert sql_json(root, "SELECT count(*) AS n FROM events") == [{"n": summary["events"]}]
    r = run("compact", "--before", "2026-10-01", "--json", "--root", str(root))
    assert [orjson.loads(x)["action"] for x in r.stdout.splitlines()] == ["built"]
    assert "1 Parquet unit(s)" in run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout


def test_binding_the_file_list_does_python_work_independent_of_its_length(tmp_path):
    """duckdb converts a Python list parameter element by element, trying `import pandas` twice per element (3.8 s
    for the 71,761 day files of a year of 200 chats). The file lists reach DuckDB as one JSON string: the number of
    imports attempted while connecting is the same for 5 day files and for 200 (counted, never timed)."""
    import sys

    from eventlog.recall.query import connect, scope_from

    def imports_while_connecting(n: int) -> int:
        root = tmp_path / f"root{n}"
        w = EventLog(root, fsync="never", autoseal=False)
        w.append_many({"event": "message:received", "channel": "telegram", "chat_id": str(100 + i % 5),
                       "direction": "in", "text": "x", "ts": f"2026-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}T10:00:00.000Z"}
                      for i in range(n))
        seen: list[str] = []

        class Count:
            def find_spec(self, name, path=None, target=None):
                seen.append(name)
                return None

        finder = Count()
        sys.meta_path.insert(0, finder)
        try:
            con, src = connect(scope_from(root, None, None, None))
            con.close()
        finally:
            sys.meta_path.remove(finder)
        assert len(src.jsonl) == n
        return len(seen)

    imports_while_connecting(5)  # the first connection imports what it needs once
    assert imports_while_connecting(200) == imports_while_connecting(5)
