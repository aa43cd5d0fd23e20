"""Writer and reader on the real filesystem: round-trips, permissions, torn tails, seals, locks, concurrency."""
import stat
import subprocess
import sys

import orjson
from pathlib import Path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.store.layout import log_files, resolve_root
from eventlog.store.reader import iter_events, iter_lines
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog

from store_support import REPO, ev

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300) | st.just("x" * 200_000) | \
    st.sampled_from(["Привет, Ёжик", "👋🏽🇷🇺", "\u2028\u2029", "\"\\\n\t\x00", "договор № 5"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | texts,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, extra=st.dictionaries(st.text(min_size=1, max_size=10).filter(lambda k: k not in {
    "v", "id", "prev", "event", "channel", "chat_id", "ts", "text", "salt"}), json_values, max_size=5),
    chat=st.sampled_from(["42", "-1001234567890", "@chan_nel"]))
def test_round_trip_field_for_field(tmp_path_factory, text, extra, chat):
    root = tmp_path_factory.mktemp("rt")
    log = EventLog(root, fsync="never")
    stored = log.append({**ev(chat=chat, text=text), **extra})
    back = list(iter_events(root))
    assert len(back) == 1
    got = back[0]
    assert got == stored
    for k, v in extra.items():
        assert got[k] == v
    assert got["text"] == text and got["chat_id"] == chat and got["v"] == 2
    assert verify(root).ok


def test_permissions(root):
    EventLog(root).append(ev())
    f = next(log_files(root)).path
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    d = f.parent
    while d != root:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        d = d.parent


def test_utc_day_boundaries(root):
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-30T23:59:59.999Z"))
    log.append(ev(ts="2026-12-01T02:00:00.000+03:00"))  # 23:00 UTC on the 30th
    log.append(ev(ts="2026-12-01T00:00:00.000Z"))
    files = {f.relpath: sum(1 for _ in iter_lines(f.path)) for f in log_files(root)}
    assert files == {"raw/telegram/chats/42/2026/11/30.jsonl": 2, "raw/telegram/chats/42/2026/12/01.jsonl": 1}


def test_root_resolution(tmp_path):
    assert str(resolve_root("/x/y", {"EVENTLOG_ROOT": "/a", "OPENCLAW_STATE_DIR": "/s"})) == "/x/y"  # --root wins
    assert resolve_root("rel/r", {"EVENTLOG_ROOT": "/a"}) == Path.cwd() / "rel" / "r"  # made absolute
    assert str(resolve_root(None, {"EVENTLOG_ROOT": "/a", "OPENCLAW_STATE_DIR": "/s"})) == "/a"
    assert str(resolve_root(None, {"OPENCLAW_STATE_DIR": "/s", "HOME": "/h"})) == "/s/eventlog"
    assert str(resolve_root(None, {"HOME": "/h"})) == "/h/.openclaw/eventlog"


def test_torn_tail_reported_then_moved_aside(root):
    log = EventLog(root, fsync="never")
    log.append(ev(text="one"))
    path = next(log_files(root)).path
    torn = b'{"channel":"telegram","chat_id":"42","ev'
    with open(path, "ab") as f:
        f.write(torn)  # a crash mid-write
    problems = []
    assert [e["text"] for e in iter_events(root, on_problem=problems.append)] == ["one"]
    assert len(problems) == 1 and problems[0].line == 2 and "torn" in problems[0].reason
    report = verify(root)
    assert report.ok and len(report.warnings) == 1
    EventLog(root, fsync="never").append(ev(text="two"))  # a fresh writer (no cached tail) repairs first
    events = list(iter_events(root))
    assert [e["event"] for e in events] == ["message:received", "log:repair", "message:received"]
    assert events[1]["torn_bytes"] == len(torn)
    aside = path.with_name(events[1]["moved_to"])
    assert aside.read_bytes() == torn
    assert not aside.name.endswith(".jsonl")
    assert verify(root).ok and not verify(root).warnings


def test_stale_lock_of_dead_process_is_broken(root):
    log = EventLog(root, fsync="never")
    log.append(ev())
    path = next(log_files(root)).path
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (path.parent / (path.name + ".lock")).write_text(f"{dead.pid}\n")
    EventLog(root, fsync="never").append(ev(text="after"))
    assert [e["text"] for e in iter_events(root)] == ["hi", "after"]
    assert not (path.parent / (path.name + ".lock")).exists()


def test_autoseal_on_new_day_and_extend_sealed_day(root):
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z"))
    log.append(ev(ts="2026-11-29T11:00:00Z"))
    assert not (root / "seals").exists()
    log.append(ev(ts="2026-11-30T10:00:00Z"))  # a later day seals the 29th
    seals = [orjson.loads(l) for l in (root / "seals/telegram/42.jsonl").read_bytes().splitlines()]
    assert [(s["file"], s["lines"]) for s in seals] == [("raw/telegram/chats/42/2026/11/29.jsonl", 2)]
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T12:00:00Z"))  # a late event extends the seal
    seals = [orjson.loads(l) for l in (root / "seals/telegram/42.jsonl").read_bytes().splitlines()]
    assert seals[-1]["lines"] == 3
    assert verify(root).ok


def test_two_processes_append_concurrently(root):
    # Each writer appends half its lines, then waits (on an event: a line of the other writer in the log, never a
    # fixed sleep) before the rest, so the two really overlap: each one's lines straddle a line of the other.
    n = 3000
    script = (
        "import sys, time, orjson\nfrom pathlib import Path\nfrom eventlog.store.writer import EventLog\n"
        "from eventlog.store.layout import log_files\nfrom eventlog.store.reader import iter_lines\n"
        "root, tag, other, n = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
        "log = EventLog(root, fsync='never')\n"
        "def add(i):\n"
        "    log.append({'event':'message:received','channel':'telegram','chat_id':'7',"
        "'ts':'2026-11-30T12:00:00Z','text':tag+str(i)})\n"
        "for i in range(n // 2): add(i)\n"
        "deadline = time.monotonic() + 300\n"
        "while not any(orjson.loads(l)['text'].startswith(other) for f in log_files(root) for _, l in iter_lines(f.path)):\n"
        "    if time.monotonic() > deadline: sys.exit('the other writer never wrote')\n"
        "    time.sleep(0.01)\n"
        "for i in range(n // 2, n): add(i)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root), tag, other, str(n)], cwd=REPO)
             for tag, other in ("ab", "ba")]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    files = list(log_files(root))
    assert len(files) == 1
    lines = list(iter_lines(files[0].path))
    assert len(lines) == 2 * n
    texts = [orjson.loads(l)["text"] for _, l in lines]
    for tag in "ab":
        mine = [t for t in texts if t.startswith(tag)]
        assert mine == [f"{tag}{i}" for i in range(n)]  # each writer's order kept, nothing lost or doubled
        at = [i for i, t in enumerate(texts) if t.startswith(tag)]
        assert any(not t.startswith(tag) for t in texts[at[0]:at[-1]]), f"{tag}'s lines never straddle the other's"
    # interleaved, not one block after another
    assert sum(1 for x, y in zip(texts, texts[1:], strict=False) if x[0] != y[0]) >= 2
    report = verify(root)
    assert report.ok, report.damage[:3]


def test_two_instances_in_one_process_share_the_chain(root):
    # Two EventLog instances in one process behave like two processes: the second sees the first's lines.
    a, b = EventLog(root, fsync="never"), EventLog(root, fsync="never")
    for i in range(50):
        (a if i % 2 else b).append(ev(text=str(i)))
    assert verify(root).ok
    assert [e["text"] for e in iter_events(root)] == [str(i) for i in range(50)]


def test_a_relative_root_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    # A relative root made _ensure_dirs climb dirname() up to "" and loop for ever (found by the issue 26 work).
    from eventlog.store.writer import EventLog

    monkeypatch.chdir(tmp_path)
    log = EventLog("rel")
    assert log.root == tmp_path / "rel"  # checked first: the old code would hang in the append below
    log.append({"event": "message:received", "channel": "telegram", "chat_id": 1, "ts": "2026-11-30T10:00:00Z",
                "text": "hi"})
    assert (tmp_path / "rel/raw/telegram/chats/1/2026/11/30.jsonl").is_file()
