"""Edge cases of the store (issue 9 item 4): lock records, repair leftovers, duplicate ids, read-only commands."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from eventlog.store import lock
from eventlog.errors import LockTimeout
from eventlog.store.layout import log_files
from eventlog.store.reader import iter_events
from eventlog.store.writer import EventLog

from store_support import ev


def _try(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test compares the type
        return type(exc)
    return None


def _until(cond, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.002)


def _aged(path: Path) -> None:
    t = time.time() - 60
    os.utime(path, (t, t))


@pytest.mark.parametrize("junk", [b"0\n", b"-1\n", b"12345678901234567890\n", b"junk", b"", b"4194305\n",
                                  b"1 2 3\n", "١٢\n".encode(), b"\xff\xfe"])
def test_garbage_lock_is_stale_once_old(tmp_path, junk):
    path = tmp_path / "f.lock"
    path.write_bytes(junk)
    _aged(path)
    with lock.FileLock(str(path), timeout=10):
        assert path.read_bytes() == lock.lock_record()
    assert not path.exists()


def test_fresh_garbage_is_respected_then_broken(tmp_path):
    path = tmp_path / "f.lock"
    path.write_bytes(b"-1\n")
    with pytest.raises(LockTimeout):
        lock.FileLock(str(path), timeout=0.3).acquire()
    with lock.FileLock(str(path), timeout=20):  # after STALE_EMPTY_S
        pass


def test_lock_record_is_pid_and_start_time():
    stat = Path("/proc/self/stat").read_bytes()
    start = stat[stat.rfind(b")") + 2:].split()[19]
    assert lock.lock_record() == b"%d %s\n" % (os.getpid(), start)


def test_reused_pid_does_not_keep_a_lock_alive(tmp_path):
    path = tmp_path / "f.lock"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = lock.start_time(child.pid)
        assert start
        path.write_text(f"{child.pid} {int(start) + 1}\n")  # the pid is alive, but it is another process
        with lock.FileLock(str(path), timeout=10):
            pass
        path.write_text(f"{child.pid} {start}\n")  # the live holder: respected, and a .want says we wait
        errors = []
        waiter = threading.Thread(target=lambda: errors.append(_try(lock.FileLock(str(path), timeout=2).acquire)))
        waiter.start()
        _until(lambda: (tmp_path / "f.lock.want").exists())  # the waiter announced itself (a lease holder yields)
        waiter.join()
        assert errors == [LockTimeout]
        assert not (tmp_path / "f.lock.want").exists()  # … and took it back when it gave up
        path.write_text(f"{child.pid}\n")  # an old-format record of a live pid: respected
        with pytest.raises(LockTimeout):
            lock.FileLock(str(path), timeout=0.3).acquire()
    finally:
        child.kill()
        child.wait()
    with lock.FileLock(str(path), timeout=10):  # the holder died: broken
        pass
    assert not (tmp_path / "f.lock.want").exists()


def test_own_pid_with_another_start_time_is_stale(tmp_path):
    path = tmp_path / "f.lock"
    path.write_text(f"{os.getpid()} 1\n")  # left by an earlier process that had our pid (e.g. before a reboot)
    with lock.FileLock(str(path), timeout=10):
        pass


def test_writer_appends_through_a_garbage_lock(root):
    log = EventLog(root, fsync="never")
    log.append(ev())
    path = next(log_files(root)).path
    lk = path.with_name(path.name + ".lock")
    lk.write_bytes(b"99999999999999999999\n")
    _aged(lk)
    EventLog(root, fsync="never").append(ev(text="after"))
    assert [e["text"] for e in iter_events(root)] == ["hi", "after"]
    assert not lk.exists()


def _small_files(limit: int = 4096):
    """preexec_fn: writes past `limit` bytes fail with EFBIG, as a full disk fails them with ENOSPC."""
    import resource
    import signal

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _torn_day(root: Path) -> tuple[Path, bytes]:
    EventLog(root, fsync="never").append(ev())
    day = next(log_files(root)).path
    with open(day, "ab") as f:
        f.write(b'{"torn' + b"x" * 10_000)  # a torn tail larger than the write limit
    return day, day.read_bytes()


def test_failed_repair_leaves_no_torn_copy_python(root):
    day, before = _torn_day(root)
    p = subprocess.run([sys.executable, "-m", "eventlog", "append", "--root", str(root)], input=b'{"event": "a:b", '
                       b'"channel": "telegram", "chat_id": "42", "ts": "2026-11-30T11:00:00Z"}\n',
                       capture_output=True, preexec_fn=_small_files(), timeout=120)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.decode().strip().splitlines()) == 1 and b"Traceback" not in p.stderr
    assert sorted(f.name for f in day.parent.iterdir()) == [day.name]  # no .torn-*, no lock
    assert day.read_bytes() == before
    EventLog(root, fsync="never").append(ev(text="later"))  # with room again, the repair happens
    assert [e["event"] for e in iter_events(root)] == ["message:received", "log:repair", "message:received"]


def test_failed_repair_leaves_no_torn_copy_node(root):
    from test_js_writer import WRITER, node_bin

    day, before = _torn_day(root)
    script = ("const { openEventLog } = await import(process.argv[1]);"
              "const log = await openEventLog({ root: process.argv[2], fsync: 'never' });"
              "try { await log.append({ event: 'a:b', channel: 'telegram', chat_id: '42', ts: '2026-11-30T11:00:00Z' });"
              " console.log('appended'); } catch (e) { console.log(e.code); }")
    p = subprocess.run([node_bin(), "--input-type=module", "-e", script, WRITER.as_uri(), str(root)],
                       capture_output=True, text=True, preexec_fn=_small_files(), timeout=120)
    assert p.stdout.strip() == "EFBIG", p.stdout + p.stderr
    assert sorted(f.name for f in day.parent.iterdir()) == [day.name]
    assert day.read_bytes() == before


READ_ONLY = [["verify"], ["stats"], ["path"], ["path", "--json"], ["grep", "hello"],
             ["sql", "select count(*) from messages"], ["dlp", "scan", "x"], ["dlp", "scan", "4111 1111 1111 1111"],
             ["dlp", "scan", "--log", "--no-alerts"], ["dlp", "alerts"], ["tail"]]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else ["<none>"]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_read_only_commands_create_nothing(tmp_path, args):
    missing = tmp_path / "missing"
    p = subprocess.run([sys.executable, "-m", "eventlog", *args, "--root", str(missing)], capture_output=True,
                       timeout=120)
    assert p.returncode in (0, 1, 2) and b"Traceback" not in p.stderr
    assert not missing.exists(), args
    root = tmp_path / "root"
    EventLog(root, fsync="never").append(ev(text="hello"))
    before = _tree(root)
    p = subprocess.run([sys.executable, "-m", "eventlog", *args, "--root", str(root)], capture_output=True,
                       timeout=120)
    assert p.returncode in (0, 1), p.stderr
    assert _tree(root) == before


def test_the_dlp_key_is_made_when_an_alert_needs_it(root):
    EventLog(root, fsync="never").append(ev(text="card 4111 1111 1111 1111"))
    p = subprocess.run([sys.executable, "-m", "eventlog", "dlp", "scan", "--log", "--root", str(root)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (root / "dlp" / "key").stat().st_size == 32
    assert (root / "dlp" / "alerts.jsonl").exists()


GOOD_LINE = b'{"event":"message:received","channel":"telegram","chat_id":"42","ts":"2026-11-30T10:00:00Z","text":"%d"}\n'


def test_append_from_a_pipe_writes_and_acks_every_line_before_the_bad_one(root):
    """The stream contract, independent of how read() splits the input: lines before the first bad one are written
    and acknowledged, it and everything after are not."""
    for split in (False, True):  # one chunk, or the bad line arriving in a later read()
        p = subprocess.Popen([sys.executable, "-m", "eventlog", "append", "--root", str(root), "--ack"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write(GOOD_LINE % 1 + GOOD_LINE % 2)
        if split:
            p.stdin.flush()
            acks = [p.stdout.readline(), p.stdout.readline()]  # both acknowledged before the bad line is sent
            assert all(len(a.strip()) == 26 for a in acks)
        p.stdin.write(b'{"event": oops}\n' + GOOD_LINE % 3)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 2
        assert err.decode().startswith("eventlog: stdin line 3: invalid JSON") and "2 line(s) before it" in err.decode()
        ids = (b"".join(acks) + out if split else out).split()
        assert len(ids) == 2
        stored = [e for e in iter_events(root)]
        assert [e["id"] for e in stored][-2:] == [i.decode() for i in ids]
        assert [e["text"] for e in stored][-2:] == ["1", "2"]
    assert len(list(iter_events(root))) == 4


def test_append_from_a_file_is_all_or_nothing_and_starts_at_the_file_offset(root, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD_LINE % 1 + GOOD_LINE % 2 + b"[1]\n")
    with open(src, "rb") as f:
        p = subprocess.run([sys.executable, "-m", "eventlog", "append", "--root", str(root)], stdin=f,
                           capture_output=True, timeout=120)
    assert p.returncode == 2 and b"stdin line 3" in p.stderr and b"nothing was written" in p.stderr
    assert not list(root.iterdir())
    src.write_bytes(GOOD_LINE % 1 + GOOD_LINE % 2)
    with open(src, "rb") as f:
        os.lseek(f.fileno(), len(GOOD_LINE % 1), os.SEEK_SET)  # the caller consumed line 1: only the rest is input
        p = subprocess.run([sys.executable, "-m", "eventlog", "append", "--root", str(root), "--ack"], stdin=f,
                           capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert [e["text"] for e in iter_events(root)] == ["2"] and len(p.stdout.split()) == 1


def test_check_writes_nothing_and_finds_what_append_would_refuse(root):
    run = lambda data: subprocess.run([sys.executable, "-m", "eventlog", "append", "--root", str(root), "--check"],
                                      input=data, capture_output=True, timeout=120)
    assert run(GOOD_LINE % 1).returncode == 0
    assert not list(root.iterdir())
    assert b"stdin line 2" in run(GOOD_LINE % 1 + b"nope\n").stderr


ULID = "01KB0000000000000000000001"


def test_duplicate_ids_are_refused_within_a_batch_and_against_the_file(root):
    from eventlog.errors import BadEvent
    from eventlog.store.verify import verify

    log = EventLog(root, fsync="never")
    with pytest.raises(BadEvent) as exc:
        log.append_many([ev(id=ULID), ev(), ev(id=ULID)])
    assert exc.value.index == 2 and "also event 1" in str(exc.value)
    assert not list(root.iterdir())  # nothing of the batch was written
    log.append(ev(id=ULID, text="first"))
    log.append(ev(text="nested", raw={"id": "01KB0000000000000000000002"}))
    with pytest.raises(BadEvent) as exc:
        EventLog(root, fsync="never").append_many([ev(id="01KB0000000000000000000003"), ev(id=ULID)])
    assert exc.value.index == 1 and "line 1" in str(exc.value)
    # a nested "id" is not the event's id; the same id in another day file is another file's business (verify agrees)
    log.append(ev(id="01KB0000000000000000000002"))
    log.append(ev(id=ULID, ts="2026-12-01T10:00:00Z"))
    assert [e.get("text") for e in iter_events(root)] == ["first", "nested", "hi", "hi"]
    assert verify(root).ok
    p = subprocess.run([sys.executable, "-m", "eventlog", "append", "--root", str(root)],
                       input=orjson.dumps(ev(id=ULID)) + b"\n", capture_output=True, timeout=120)
    assert p.returncode == 2 and b"duplicate id" in p.stderr and b"Traceback" not in p.stderr


def test_a_forked_child_writes_its_own_start_time(tmp_path):
    lock.lock_record()  # the parent's record is cached before the fork
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its record must name itself, or other writers would judge its live lock stale
        stat = Path("/proc/self/stat").read_bytes()
        os.write(w, lock.lock_record() + stat[stat.rfind(b")") + 2:].split()[19])
        os._exit(0)
    os.waitpid(pid, 0)
    record, start = os.read(r, 128).split(b"\n")
    assert record == b"%d %s" % (pid, start)


@pytest.mark.parametrize("big,ok", [(b"18446744073709551615", True), (b"-9223372036854775808", True),
                                    (b"18446744073709551616", False), (b"-9223372036854775809", False),
                                    (b"123456789012345678901234567890", False)])
def test_integers_beyond_64_bits_are_refused_not_stored_as_floats(big, ok):
    from eventlog.store import schema
    from eventlog.errors import BadEvent

    line = b'{"event":"a:b","channel":"telegram","chat_id":"1","ts":"2026-11-30T10:00:00Z","n":' + big + \
        b',"text":"a 123456789012345678901234567890 in a string is fine"}'
    if ok:
        assert schema.parse_line(line)["n"] == int(big)
    else:
        with pytest.raises(BadEvent, match="beyond 64 bits"):
            schema.parse_line(line)


@pytest.mark.parametrize("big", [b"-9223372036854775809", b"18446744073709551616", b"[ 18446744073709551616]"])
def test_an_integer_beyond_64_bits_is_refused_without_long_digits_elsewhere_in_the_line(big):
    """The exact parse is triggered by the number itself (a 19-digit negative one too), not by a digit run in a
    string; and a hex hash of zeros in a string does not trigger it (the cheap path)."""
    from eventlog.store import schema
    from eventlog.errors import BadEvent

    head = b'{"event":"a:b","channel":"telegram","chat_id":"1","ts":"2026-11-30T10:00:00Z","sha":"' + b"0" * 64 + b'"'
    with pytest.raises(BadEvent, match="beyond 64 bits"):
        schema.parse_line(head + b',"n":' + big + b"}")
    assert not schema._long_integer(head + b"}")
    assert schema.parse_line(head + b',"n":-9223372036854775808}')["n"] == -(2**63)


def test_a_dangling_symlink_as_the_lock_times_out_and_is_left_alone(tmp_path: Path) -> None:
    """O_EXCL sees a dangling symbolic link (EEXIST), every read follows it (ENOENT): the "released between open and
    read" retry used to spin forever, ignoring the timeout. It is waited on like a held lock (JS: writer-lock-symlink)."""
    p = tmp_path / "01.jsonl.lock"
    p.symlink_to(tmp_path / "nowhere")
    result: list[BaseException | None] = []

    def take() -> None:
        try:
            lock.FileLock(str(p), timeout=0.3).acquire()
            result.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            result.append(exc)

    t = threading.Thread(target=take, daemon=True)
    t.start()
    t.join(30)  # generous: the fixed code gives up after 0.3 s; the old one never did
    assert result, "acquire() never returned"
    assert isinstance(result[0], LockTimeout) and "unreadable lock file" in str(result[0])
    assert p.is_symlink()
