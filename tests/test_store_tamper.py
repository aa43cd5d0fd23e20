"""Tamper evidence: every kind of damage is reported with the right file and line, and `eventlog verify` exits 2."""
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog

from store_support import encode_with_prev, ev

DAY = "raw/telegram/chats/42/2026/11/29.jsonl"


@pytest.fixture
def log_root(root):
    log = EventLog(root, fsync="never")
    for i in range(1, 7):
        log.append(ev(ts=f"2026-11-29T10:00:0{i}Z", text=f"line {i}"))
    log.append(ev(ts="2026-11-30T10:00:00Z", text="next day"))  # seals the 29th
    assert verify(root).ok
    return root


def lines_of(root):
    return (root / DAY).read_bytes().splitlines(keepends=True)


def write(root, lines):
    (root / DAY).write_bytes(b"".join(lines))


def damage(root):
    rep = verify(root)
    assert not rep.ok
    return [(p.relpath, p.line) for p in rep.damage], rep


def test_edited_byte(log_root):
    ls = lines_of(log_root)
    ls[2] = ls[2].replace(b"line 3", b"line X")
    write(log_root, ls)
    where, _ = damage(log_root)
    assert (DAY, 3) in where


def test_deleted_line(log_root):
    ls = lines_of(log_root)
    del ls[3]
    write(log_root, ls)
    where, rep = damage(log_root)
    assert (DAY, 3) in where  # the break sits between line 3 and the line that followed the deleted one
    assert any("deleted" in p.reason for p in rep.damage)


def test_inserted_line(log_root):
    ls = lines_of(log_root)
    ls.insert(2, ls[4].replace(b"line 5", b"forged"))
    write(log_root, ls)
    where, _ = damage(log_root)
    assert (DAY, 3) in where


def test_duplicated_line(log_root):
    ls = lines_of(log_root)
    ls.insert(3, ls[2])
    write(log_root, ls)
    where, rep = damage(log_root)
    assert (DAY, 4) in where
    assert any("duplicate" in p.reason for p in rep.damage)


def test_swapped_lines(log_root):
    ls = lines_of(log_root)
    ls[1], ls[2] = ls[2], ls[1]
    write(log_root, ls)
    where, rep = damage(log_root)
    assert (DAY, 2) in where
    assert any("out of order" in p.reason for p in rep.damage)


def test_truncated_sealed_file(log_root):
    write(log_root, lines_of(log_root)[:4])  # the chain of what is left is intact: only the seal sees it
    where, rep = damage(log_root)
    assert (DAY, 4) in where and "truncated" in rep.damage[0].reason


def test_last_line_of_sealed_file_edited(log_root):
    ls = lines_of(log_root)
    ls[-1] = ls[-1].replace(b"line 6", b"line Z")
    write(log_root, ls)
    where, rep = damage(log_root)
    assert (DAY, 6) in where


def test_deleted_sealed_file(log_root):
    (log_root / DAY).unlink()
    where, rep = damage(log_root)
    assert (DAY, 0) in where and "missing" in rep.damage[0].reason


def test_file_moved_to_another_day(log_root):
    target = log_root / "raw/telegram/chats/42/2026/11/28.jsonl"
    (log_root / DAY).rename(target)
    where, _ = damage(log_root)
    assert ("raw/telegram/chats/42/2026/11/28.jsonl", 1) in where  # genesis differs per path
    assert (DAY, 0) in where  # and the seal misses it


def test_seal_stream_edited(log_root):
    seal = log_root / "seals/telegram/42.jsonl"
    seal.write_bytes(seal.read_bytes().replace(b'"lines":6', b'"lines":4'))
    where, rep = damage(log_root)  # the seal no longer matches its file
    assert (DAY, 4) in where and "sealed part modified" in rep.damage[0].reason


def test_lines_after_seal_are_a_warning_and_reseal_on_next_append(log_root):
    # What a writer killed between extending a closed day and resealing it leaves behind.
    from eventlog.store import schema
    from eventlog.store.commitment import chain_hash
    ls = lines_of(log_root)
    extra = dict(__import__("orjson").loads(ls[-1]), id=schema.new_id(), text="late")
    extra = encode_with_prev(schema.prepare(extra), chain_hash(ls[-1].rstrip(b"\n")))
    write(log_root, ls + [extra + b"\n"])
    rep = verify(log_root)
    assert rep.ok and [(w.relpath, w.line) for w in rep.warnings] == [(DAY, 7)]
    EventLog(log_root, fsync="never").append(ev(ts="2026-11-29T11:00:00Z", text="later"))
    rep = verify(log_root)
    assert rep.ok and not rep.warnings


def test_cli_reports_file_line_reason_and_exits_2(log_root):
    ls = lines_of(log_root)
    ls[2] = ls[2].replace(b"line 3", b"line X")
    write(log_root, ls)
    r = CliRunner().invoke(cli, ["verify", "--root", str(log_root)], catch_exceptions=False)
    assert r.exit_code == 2
    assert f"{DAY}:3: " in r.stdout
    ok = CliRunner().invoke(cli, ["verify", "--root", str(log_root), "--since", "2026-11-30"], catch_exceptions=False)
    assert ok.exit_code == 0


def test_appending_to_a_damaged_sealed_day_is_refused(log_root):
    write(log_root, lines_of(log_root)[:4])
    r = CliRunner().invoke(cli, ["append", "--root", str(log_root)],
                           input='{"event":"message:received","channel":"telegram","chat_id":"42",'
                                 '"ts":"2026-11-29T11:00:00Z"}\n', catch_exceptions=False)
    assert r.exit_code == 2 and "seal" in r.stderr
    assert len(lines_of(log_root)) == 4


def test_appending_after_a_same_size_edit_of_the_last_sealed_line_is_refused(log_root):
    """Issue 15 (a mutant of the writer's seal check survived): an edit that keeps the sealed part's byte count — so
    the seal's size still points at a line end — must still be refused, by the hash of the last sealed line. (The
    writer checks only that line; an edit further up is found by `verify`, whose chain check sees it, not here.)"""
    from eventlog.errors import DamagedLog

    line = 5
    ls = lines_of(log_root)
    ls[line] = ls[line].replace(f"line {line + 1}".encode(), b"line X")
    write(log_root, ls)
    before = (log_root / DAY).read_bytes()
    with pytest.raises(DamagedLog, match="does not match its seal"):
        EventLog(log_root, fsync="never").append(ev(ts="2026-11-29T11:00:00Z", text="later"))
    assert (log_root / DAY).read_bytes() == before
