"""The per-query freshness check of a long-lived searcher (eventlog/search/watch.py, watchscan.py): a watched root
answers exactly what a new process answers after every kind of change the log and the index see — appends, late
events, new chats and months, rewrites, truncations, removals, projections and unit records replaced by another
process — and falls back to the stat-based check whenever the watch cannot vouch (overflow, no watches, a fork).
The oracle is test_search's: every message holding the word, read from the log itself."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from datetime import date
from pathlib import Path

import orjson
import pytest

from eventlog.recall.compact import compact
from eventlog.search import SearchQuery, index, project, search, store, watch, watchscan
from eventlog.store.writer import EventLog
from test_search import QUERIES, _events, _projections_match_units, bm25_ids, check_all, oracle, utc

DAYS = ["2026-10-01", "2026-10-02", "2026-10-03"]


def _reset_watches() -> None:
    """Close every watch of this process and forget every refresh count (the product never needs to: a forked child
    closes its inherited ones lazily)."""
    with watch._LOCK:
        for key in list(watch._ROOTS):
            watch._drop(key)
        watch._USES.clear()
        watch._FAILED.clear()


@pytest.fixture(autouse=True)
def _fresh_watches():
    _reset_watches()
    yield
    _reset_watches()


def _watched(root: Path) -> watch.Watch:
    """Two refreshes: the second sets up the root's watches (as in a long-lived searcher)."""
    search(root, SearchQuery("laptop", mode="bm25"))
    search(root, SearchQuery("laptop", mode="bm25"))
    w = watch.current(root)
    assert w is not None and str(root) in watchscan._TREES
    return w


def _raw_stats(root: Path, monkeypatch) -> int:
    """os.stat calls under raw/ made by one refresh."""
    calls = []
    real = os.stat

    def counting(p, *a, **kw):
        if f"{root}/raw" in os.fspath(p):
            calls.append(p)
        return real(p, *a, **kw)

    monkeypatch.setattr(os, "stat", counting)
    try:
        index.update(root)
    finally:
        monkeypatch.setattr(os, "stat", real)
    return len(calls)


def _fresh_process_agrees(root: Path) -> None:
    """A new process (stat-based check, nothing cached) finds every unit and pack fresh."""
    r = subprocess.run([sys.executable, "-m", "eventlog", "index", "--check", "--json", "--root", str(root)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def _on_disk_records(root: Path) -> dict[str, str]:
    return {p.name[:-5]: orjson.loads(p.read_bytes())["data"] for p in store.units_dir(root).glob("[0-9]*.json")}


def test_a_watched_searcher_follows_every_change_of_the_log(root: Path, monkeypatch) -> None:
    rng = random.Random(14)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 60, DAYS))
    _watched(root)
    assert _raw_stats(root, monkeypatch) == 0  # nothing changed: not one stat in the log's tree
    check_all(root)
    # appends to the newest file, a late event in a past day, a new chat, a new month directory
    log.append_many(_events(rng, 10, ["2026-10-03"]))
    check_all(root)
    log.append_many(_events(rng, 3, ["2026-10-01"]))
    check_all(root)
    log.append_many(_events(rng, 4, ["2026-10-02"], chats=("@newchat",)))
    check_all(root)
    log.append_many(_events(rng, 4, ["2026-11-01"]))
    check_all(root)
    assert watch.current(root) is not None and _raw_stats(root, monkeypatch) == 0
    # compaction leaves the JSONL as it is: nothing rebuilt
    compact(root, before=date(2026, 10, 4))
    assert search(root, SearchQuery("laptop", mode="bm25")).updated_days == []
    # `touch` moves the mtime only: no rebuild
    f = sorted(root.glob("raw/telegram/chats/*/2026/10/02.jsonl"))[0]
    os.utime(f)
    assert search(root, SearchQuery("laptop", mode="bm25")).updated_days == []
    # an erasure-style rewrite renamed over the file: the text vanishes
    lines = f.read_bytes().splitlines()
    victim = next(i for i, ln in enumerate(lines)
                  if b'"message:' in ln and isinstance(orjson.loads(ln).get("text"), str))
    ev = orjson.loads(lines[victim])
    word = ev["text"].split()[0]
    ev["text"] = {"c": "0" * 64}
    lines[victim] = orjson.dumps(ev, option=orjson.OPT_SORT_KEYS)
    tmp = f.with_name(".rewrite.tmp")
    tmp.write_bytes(b"\n".join(lines) + b"\n")
    tmp.replace(f)
    assert ev["id"] not in bm25_ids(root, word)
    check_all(root)
    # a truncation in place (a torn tail cut back): the cut messages vanish
    g = sorted(root.glob("raw/telegram/chats/*/2026/10/03.jsonl"))[-1]
    keep = g.read_bytes().splitlines(keepends=True)
    with open(g, "r+b") as fh:
        fh.truncate(sum(map(len, keep[: len(keep) // 2])))
    check_all(root)
    # a removed day file, a removed chat
    sorted(root.glob("raw/telegram/chats/*/2026/11/01.jsonl"))[0].unlink()
    check_all(root)
    shutil.rmtree(root / "raw/telegram/chats/-300")
    check_all(root)
    for w_ in QUERIES[:3]:  # a month range in the watched tree, then the whole log again
        day = dict(since=utc("2026-10-02"), until=utc("2026-10-03"))  # Oct 2, as SearchQuery's [since, until)
        assert bm25_ids(root, w_, **day) == oracle(root, w_, **day)
    log.append_many(_events(rng, 3, ["2026-09-30"]))  # outside that range, in a new month
    check_all(root)
    assert watch.current(root) is not None
    _fresh_process_agrees(root)


def test_projections_and_records_changed_by_another_process(root: Path) -> None:
    from eventlog.search import embed

    if embed.available():
        pytest.skip(embed.available())
    rng = random.Random(15)
    EventLog(root, fsync="never").append_many(_events(rng, 50, DAYS))
    _watched(root)
    index.update(root)
    # a projection deleted: the next refresh derives it again (no rebuild)
    recs = store.load_records(root)
    project.path_for(root, recs["2026-10-02"]).unlink()
    assert index.update(root).built == []
    _projections_match_units(root)
    # every unit record replaced by another process, within the file system's timestamp granularity
    r = subprocess.run([sys.executable, "-m", "eventlog", "index", "--rebuild", "--json", "--root", str(root)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert {d: rec["data"] for d, rec in store.load_records(root).items()} == _on_disk_records(root)
    assert {d: rec["data"] for d, rec in store.load_records(root, any_version=True).items()} == _on_disk_records(root)
    assert index.update(root).built == []
    _projections_match_units(root)
    got = search(root, SearchQuery("laptop", mode="hybrid", limit=20)).hits
    cold = subprocess.run([sys.executable, "-c", (
        "import sys, json; from pathlib import Path; from eventlog.search import SearchQuery, search; "
        "print(json.dumps([[h.id, h.score] for h in search(Path(sys.argv[1]), SearchQuery('laptop', mode='hybrid', "
        "limit=20), refresh=False).hits]))"), str(root)], capture_output=True, text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr
    assert [[h.id, pytest.approx(h.score, abs=1e-6)] for h in got] == json.loads(cold.stdout)


def test_lost_events_are_never_trusted(root: Path) -> None:
    """The canary first: with its queued events thrown away the watched searcher does not see an append (so the
    queue, not a stat, is what it relies on); an overflow (the kernel's answer to lost events) makes it read
    everything again."""
    rng = random.Random(16)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 40, DAYS))
    w = _watched(root)
    log.append_many(_events(rng, 5, ["2026-10-02"]))
    with w.lock:
        while True:
            try:
                os.read(w.fd, 1 << 16)
            except BlockingIOError:
                break
    assert index.update(root).built == []  # the canary: unseen
    log.append_many(_events(rng, 5, ["2026-10-01"]))
    with w.lock:
        os.read(w.fd, 1 << 16)
        w._reset()  # what the drain does on IN_Q_OVERFLOW
    assert index.update(root).built == ["2026-10-02", "2026-10-01"]
    check_all(root)


def test_no_watch_falls_back_to_stat(root: Path, monkeypatch) -> None:
    rng = random.Random(17)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 40, DAYS))
    w = _watched(root)
    w.broken = "inotify_add_watch: No space left on device"  # what a failed add leaves
    log.append_many(_events(rng, 5, ["2026-10-02"]))
    check_all(root)
    assert watch.current(root) is None and _raw_stats(root, monkeypatch) > 0
    monkeypatch.setattr(watch, "RETRY_S", 0.0)  # tried again later: watched again, and right
    log.append_many(_events(rng, 5, ["2026-10-03"], chats=("@after",)))
    check_all(root)
    assert watch.current(root) is not None
    _reset_watches()
    for _ in range(3):
        log.append_many(_events(rng, 2, ["2026-10-01"]))
        for w in QUERIES:  # as check_all, with the watches switched off
            q = SearchQuery(w, mode="bm25", limit=100_000)
            assert {h.id for h in search(root, q, watch_changes=False).hits} == oracle(root, w), w
    assert watch.current(root) is None


def test_fork_and_exec_do_not_share_the_queue(root: Path) -> None:
    import fcntl

    rng = random.Random(18)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 40, DAYS))
    w = _watched(root)
    assert fcntl.fcntl(w.fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    log.append_many(_events(rng, 3, ["2026-10-02"]))
    pid = os.fork()
    if pid == 0:  # the child must not drain the parent's queue
        code = 1
        try:
            code = 0 if watch.current(root) is None and watchscan.changes(root) is None else 3
            store.load_records(root)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert index.update(root, check_only=True).built == ["2026-10-02"]
    check_all(root)


def test_several_roots_threads_and_a_root_without_raw(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    rng = random.Random(19)
    EventLog(a, fsync="never").append_many(_events(rng, 30, DAYS))
    _watched(a)
    _watched(b)  # no raw/ yet
    assert search(b, SearchQuery("laptop", mode="bm25")).hits == []
    EventLog(b, fsync="never").append_many(_events(rng, 30, DAYS[:1]))
    check_all(b)
    errors: list[BaseException] = []

    def worker(r: Path) -> None:
        try:
            for w_ in QUERIES[:4]:
                bm25_ids(r, w_)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(r,)) for r in (a, b, a, b)]
    for t in threads:
        t.start()
    EventLog(a, fsync="never").append_many(_events(rng, 5, ["2026-10-04"]))
    for t in threads:
        t.join()
    assert not errors
    check_all(a)
    check_all(b)
    assert watch.current(a) is not None and watch.current(b) is not None
