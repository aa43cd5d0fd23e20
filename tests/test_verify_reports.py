"""`eventlog verify` names every damaged place exactly: which file, which line, which reason, damage or warning — and
nothing more (a second report of the same break would send a user to the wrong line). Each case builds a small log by
hand (the bytes a writer, a crash or a person editing the file would leave) and compares the complete report.

Added for issue 15: mutation testing of eventlog/store/verify.py left the exact lines, the reasons, the counts in the summary
and the damage-vs-warning choice unpinned (only substrings and "some damage at line N" were checked).
"""
from __future__ import annotations

from datetime import date
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.store import schema
from eventlog.cli.main import cli
from eventlog.store.commitment import chain_hash, erase_line
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import encode_with_prev, ev

DAY = "raw/telegram/chats/42/2026/11/29.jsonl"
SEALS = "seals/telegram/42.jsonl"


def event(i: int, **kw) -> dict:
    """A prepared v2 event of chat 42 on DAY (content, so salted), with a fixed id per `i`."""
    base = ev(ts=f"2026-11-29T10:00:{i:02d}.000Z", text=f"line {i}", id=f"01KB{i:022d}")
    return schema.prepare({**base, **kw})


def chained(rel: str, items: list) -> list[bytes]:
    """Lines (without '\\n') chained from rel's genesis; an item is a prepared event or raw bytes (kept as they are)."""
    prev, out = schema.genesis(rel), []
    for it in items:
        line = it if isinstance(it, bytes) else encode_with_prev(dict(it), prev)
        out.append(line)
        prev = chain_hash(line)
    return out


def put(root: Path, rel: str, lines: list[bytes], tail: bytes = b"") -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(x + b"\n" for x in lines) + tail)


def report(root: Path, **kw) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]], object]:
    seen: list[tuple[str, int, str, bool]] = []
    rep = verify(root, emit=lambda p, d: seen.append((p.relpath, p.line, p.reason, d)), **kw)
    dmg = [(p.relpath, p.line, p.reason) for p in rep.damage]
    warn = [(p.relpath, p.line, p.reason) for p in rep.warnings]
    assert seen == [(*x, True) for x in dmg] + [(*x, False) for x in warn] or \
        sorted(seen) == sorted([(*x, True) for x in dmg] + [(*x, False) for x in warn])  # emit sees each once
    assert rep.ok == (not dmg)
    return dmg, warn, rep


def six(root: Path, edit=None) -> list[bytes]:
    lines = chained(DAY, [event(i) for i in range(1, 7)])
    if edit:
        lines = edit(lines)
    put(root, DAY, lines)
    return lines


# -- the chain ---------------------------------------------------------------------------------------------------

def test_a_clean_hand_built_day_verifies_and_counts_its_files_and_lines(root: Path) -> None:
    six(root)
    dmg, warn, rep = report(root)
    assert dmg == [] and warn == [] and rep.files == 1 and rep.lines == 6


NOT_JSON = "not a valid JSON object (edited or corrupted)"
EXTRA = "line inserted or duplicated (the next line chains past it)"


def put_at(i: int, line) -> object:
    """An edit of `six`'s lines: line index `i` replaced by `line` (bytes, or a function of the old line)."""
    def edit(ls):
        ls[i] = line(ls[i]) if callable(line) else line
        return ls
    return edit


def broken(n: int) -> str:
    return f"line {n} modified, or line(s) deleted between it and line {n + 1} (chain broken)"


def with_prev(prev) -> object:
    return put_at(1, lambda x: schema.encode({**orjson.loads(x), "prev": prev}))


# One hand edit of the six-line day, and verify's complete damage list for it (no warnings in any of these).
EDITS = [
    # the chain goes on after a line that is not JSON: one damaged place
    pytest.param(put_at(2, b'{"event": garbled'), [(3, NOT_JSON)], id="not-json"),
    pytest.param(put_at(1, b"[1,2,3]"), [(2, NOT_JSON)], id="json-not-an-object"),
    pytest.param(lambda ls: ls[:2] + [b"x", b'"y"'] + ls[4:], [(3, NOT_JSON), (4, NOT_JSON)], id="two-garbled-in-a-row"),
    # the salted line stays canonical JSON, its commitment changes: the next line no longer chains to it; named once
    pytest.param(put_at(2, lambda x: x.replace(b"line 3", b"line X")), [(3, broken(3))], id="edited-line"),
    pytest.param(put_at(0, lambda x: x.replace(b"line 1", b"line X")), [(1, broken(1))], id="edited-first-line"),
    pytest.param(lambda ls: ls[2:], [(1, "first line does not chain from this file's genesis (file moved or renamed, or "
                                         "lines deleted from its start)")], id="deleted-from-the-start"),
    # line 4 chains to line 2, like line 3: the first of the two identical lines is named as the extra one
    pytest.param(lambda ls: ls[:3] + [ls[2]] + ls[3:],
                 [(3, EXTRA), (4, "duplicate id 01KB0000000000000000000003 (also line 3)")], id="duplicated"),
    pytest.param(lambda ls: ls[:2] + [encode_with_prev(dict(event(9)), chain_hash(ls[1]))] + ls[2:],
                 [(3, EXTRA)], id="inserted"),
    # lines 2 and 3 are named (as what they are seen as from each neighbour's `prev`), no other line
    pytest.param(lambda ls: [ls[0], ls[2], ls[1]] + ls[3:],
                 [(2, "line out of order (chains to line 3, not to line 1): swapped or moved"), (2, EXTRA), (3, EXTRA)],
                 id="swapped"),
    pytest.param(lambda ls: ls[:1] + ls[2:] + ls[1:2],
                 [(2, "line out of order (chains to line 6, not to line 1): swapped or moved"),
                  (6, "line out of order (chains to line 1, not to line 5): swapped or moved")], id="moved-to-the-end"),
    pytest.param(lambda ls: ls[:2] + [b"garbage"] + ls[2:], [(3, NOT_JSON), (3, EXTRA)], id="garbage-inserted"),
    # a `prev` that is not a hash is a break, not a crash
    *[pytest.param(with_prev(prev), [(1, broken(1)), (2, broken(2))], id=f"prev-{name}")
      for name, prev in [("list", ["x"]), ("object", {"a": 1}), ("number", 7), ("null", None)]],
]


@pytest.mark.parametrize("edit, expected", EDITS)
def test_one_hand_edit_of_a_day_and_its_exact_damage_report(root: Path, edit, expected) -> None:
    six(root, edit)
    dmg, warn, _ = report(root)
    assert dmg == [(DAY, line, reason) for line, reason in expected] and warn == []


def test_a_torn_final_line_is_a_warning_not_damage(root: Path) -> None:
    put(root, DAY, chained(DAY, [event(1), event(2)]), tail=b'{"event":"mess')
    dmg, warn, rep = report(root)
    assert dmg == [] and rep.lines == 2
    assert warn == [(DAY, 3, "torn final line (14 bytes, no newline): a crash mid-write; moved aside on the next "
                             "append")]


@pytest.mark.parametrize("v, shown", [(3, "3"), (True, "True"), (None, "None"), ("2", "'2'")])
def test_an_unknown_format_version(root: Path, v, shown) -> None:
    bad = dict(event(2), v=v)
    bad.pop("salt")
    bad.pop("text")
    put(root, DAY, chained(DAY, [event(1), bad, event(3)]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, f"unknown format version {shown}")]


def test_a_v1_line_with_content_and_no_salt_is_valid(root: Path) -> None:
    v1 = dict(event(2), v=1)
    v1.pop("salt")
    put(root, DAY, chained(DAY, [event(1), v1, event(3)]))
    assert report(root)[:2] == ([], [])


def test_content_without_its_salt_is_damage_but_an_erased_line_is_not(root: Path) -> None:
    stripped = dict(event(2))
    stripped.pop("salt")
    put(root, DAY, chained(DAY, [event(1), stripped, event(3)]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, "content without its salt (neither a live nor an erased line)")]
    # the same line erased (its commitment form) is valid, and so is a v2 line without content
    lines = chained(DAY, [event(1), event(2), {k: v for k, v in event(3).items() if k not in ("text", "salt")}])
    lines[1] = erase_line(lines[1])
    put(root, DAY, lines)
    assert report(root)[:2] == ([], [])


def test_half_an_erasure_is_content_without_its_salt(root: Path) -> None:
    """One content field replaced by its commitment, another left in plain text, the salt dropped: not erased."""
    first, live, third = event(1), event(2, raw={"message": {"text": "line 2"}}), event(3)
    lines = chained(DAY, [first, live, third])
    erased = orjson.loads(erase_line(lines[1]))
    put(root, DAY, chained(DAY, [first, schema.encode({**erased, "text": "line 2"}), third]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, "content without its salt (neither a live nor an erased line)")]


def test_a_live_line_not_in_canonical_form(root: Path) -> None:
    lines = chained(DAY, [event(1), event(2), event(3)])
    obj = orjson.loads(lines[1])
    lines[1] = orjson.dumps(dict(reversed(obj.items())))  # the same object, keys no longer sorted: same commitment, other bytes
    assert lines[1] != schema.encode(obj) and chain_hash(lines[1]) == chain_hash(schema.encode(obj))
    put(root, DAY, lines)
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, "line is not in canonical form (edited by hand)")]


def test_an_event_in_another_chats_or_channels_file(root: Path) -> None:
    put(root, DAY, chained(DAY, [event(1), event(2, chat_id="43"), event(3, channel="whatsapp"), event(4)]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, "event belongs to another chat/channel than its file"),
                   (DAY, 3, "event belongs to another chat/channel than its file")]


def test_a_numeric_chat_id_in_the_line_matches_its_file(root: Path) -> None:
    e = dict(event(2))
    e["chat_id"] = 42
    put(root, DAY, chained(DAY, [event(1), e]))
    assert report(root)[:2] == ([], [])


def test_an_event_on_another_day_but_a_repair_event_may_be(root: Path) -> None:
    repair = schema.prepare({"event": "log:repair", "channel": "telegram", "chat_id": "42",
                             "ts": "2026-12-01T08:00:00.000Z", "torn_bytes": 3})
    no_ts = {k: v for k, v in event(4).items() if k != "ts"}
    put(root, DAY, chained(DAY, [event(1), event(2, ts="2026-11-30T00:00:00.000Z"), repair, no_ts]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 2, "ts '2026-11-30T00:00:00.000Z' is not on this file's day"),
                   (DAY, 4, "ts None is not on this file's day")]


def test_duplicate_ids_name_the_first_line_that_had_it(root: Path) -> None:
    put(root, DAY, chained(DAY, [event(1), event(2), event(3, id=event(1)["id"]), event(4, id=event(1)["id"])]))
    dmg, _, _ = report(root)
    assert dmg == [(DAY, 3, "duplicate id 01KB0000000000000000000001 (also line 1)"),
                   (DAY, 4, "duplicate id 01KB0000000000000000000001 (also line 3)")]


# -- seals ---------------------------------------------------------------------------------------------------------

@pytest.fixture
def sealed(root: Path) -> Path:
    """Chat 42: six lines on the 29th (sealed by the first line of the 30th), one on the 30th; chat 43: one day."""
    log = EventLog(root, fsync="never")
    for i in range(1, 7):
        log.append(ev(ts=f"2026-11-29T10:00:0{i}Z", text=f"line {i}"))
    log.append(ev(ts="2026-11-30T10:00:00Z", text="next day"))
    log.append(ev(chat="43", ts="2026-11-29T10:00:00Z", text="other chat"))
    dmg, warn, _ = report(root)
    assert dmg == [] and warn == []
    return root


def day_lines(root: Path, rel: str = DAY) -> list[bytes]:
    return (root / rel).read_bytes().split(b"\n")[:-1]


def test_counts_in_the_summary_cover_day_files_seal_streams_and_the_checkpoint_file(sealed: Path) -> None:
    on_disk = {p.relative_to(sealed).as_posix(): len(day_lines(sealed, p.relative_to(sealed).as_posix()))
               for p in sealed.rglob("*.jsonl")}
    assert set(on_disk) == {DAY, "raw/telegram/chats/42/2026/11/30.jsonl", "raw/telegram/chats/43/2026/11/29.jsonl",
                            SEALS, "seals/checkpoints.jsonl"}
    _, _, rep = report(sealed)
    assert (rep.files, rep.lines) == (len(on_disk), sum(on_disk.values()))
    r = CliRunner().invoke(cli, ["verify", "--root", str(sealed)], catch_exceptions=False)
    assert r.exit_code == 0 and r.stderr == f"{len(on_disk)} files, {sum(on_disk.values())} lines: ok\n"
    # one chat: its day files and its seal stream, not the checkpoint file
    _, _, rep = report(sealed, chat="42")
    assert (rep.files, rep.lines) == (3, on_disk[DAY] + 1 + on_disk[SEALS])


def test_a_truncated_sealed_day(sealed: Path) -> None:
    put(sealed, DAY, day_lines(sealed)[:4])
    dmg, warn, _ = report(sealed)
    assert dmg == [(DAY, 4, "truncated: 4 lines, sealed with 6")] and warn == []


def test_an_emptied_sealed_day(sealed: Path) -> None:
    put(sealed, DAY, [])
    dmg, _, _ = report(sealed)
    assert dmg == [(DAY, 0, "truncated: 0 lines, sealed with 6")]


def test_the_last_sealed_line_edited(sealed: Path) -> None:
    ls = day_lines(sealed)
    ls[5] = ls[5].replace(b"line 6", b"line Z")
    put(sealed, DAY, ls)
    dmg, warn, _ = report(sealed)
    assert dmg == [(DAY, 6, "sealed part modified (line 6 no longer matches the seal)")] and warn == []


def test_a_sealed_file_deleted(sealed: Path) -> None:
    (sealed / DAY).unlink()
    dmg, warn, rep = report(sealed)
    assert dmg == [(DAY, 0, "sealed file is missing (6 lines sealed)")] and warn == []
    r = CliRunner().invoke(cli, ["verify", "--root", str(sealed)], catch_exceptions=False)
    assert r.exit_code == 2 and r.stdout == f"{DAY}:0: sealed file is missing (6 lines sealed)\n"


def test_a_sealed_file_outside_the_checked_days_is_not_reported(sealed: Path) -> None:
    (sealed / DAY).unlink()
    assert report(sealed, since=date(2026, 11, 30))[0] == []
    assert report(sealed, until=date(2026, 11, 28))[0] == []
    assert report(sealed, since=date(2026, 11, 29), until=date(2026, 11, 29))[0] == [
        (DAY, 0, "sealed file is missing (6 lines sealed)")]
    put(sealed, DAY, day_lines(sealed, "raw/telegram/chats/43/2026/11/29.jsonl")[:0])
    (sealed / DAY).unlink()
    # a truncation outside the range is not reported either (its day file was not measured)
    put(sealed, DAY, [])
    assert report(sealed, since=date(2026, 11, 30))[0] == []
    assert report(sealed, until=date(2026, 11, 28))[0] == []


def test_an_erasure_stopped_before_resealing_is_a_warning(sealed: Path) -> None:
    ls = day_lines(sealed)
    ls[2] = erase_line(ls[2])  # same chain hash, fewer bytes
    put(sealed, DAY, ls)
    dmg, warn, _ = report(sealed)
    assert dmg == [] and warn == [(DAY, 6, "sealed lines unchanged but their size differs from the seal (an erasure "
                                           "stopped before resealing; `eventlog seal` reseals)")]
    r = CliRunner().invoke(cli, ["verify", "--root", str(sealed)], catch_exceptions=False)
    assert r.exit_code == 0 and r.stdout == "" and r.stderr.startswith(f"warning: {DAY}:6: sealed lines unchanged")


def test_lines_after_the_seal_are_a_warning(sealed: Path) -> None:
    ls = day_lines(sealed)
    more = chained(DAY, [orjson.loads(x) for x in ls] + [event(40), event(41)])
    put(sealed, DAY, ls + more[6:])
    dmg, warn, _ = report(sealed)
    assert dmg == [] and warn == [(DAY, 7, "2 line(s) after the seal, not resealed yet (a writer stopped while "
                                           "extending a closed day, or lines added by hand; `eventlog seal` reseals)")]


def test_a_damaged_seal_stream_names_the_record(sealed: Path) -> None:
    seal = sealed / SEALS
    lines = seal.read_bytes().split(b"\n")[:-1]
    rec = {k: v for k, v in orjson.loads(lines[0]).items() if k not in ("id", "prev")}
    bad = [dict(rec, lines=0), dict(rec, bytes=True), dict(rec, last="x" * 64), dict(rec, file="raw/x.jsonl")]
    stream = chained(SEALS, [orjson.loads(x) for x in lines] + [schema.prepare(b) for b in bad])
    put(sealed, SEALS, stream)
    dmg, _, _ = report(sealed)
    n = len(lines)
    assert dmg == [(SEALS, n + 1, "seal record with a bad `lines` ('0')"),
                   (SEALS, n + 2, "seal record with a bad `bytes` ('True')"),
                   (SEALS, n + 3, "seal record with a bad `last` hash"),
                   (SEALS, n + 4, "seal record without a valid `file`")]


def test_a_chat_scoped_verify_checks_that_chats_seals_in_every_channel(sealed: Path) -> None:
    EventLog(sealed, fsync="never").append(dict(ev(ts="2026-11-29T10:00:00Z"), channel="whatsapp"))
    EventLog(sealed, fsync="never").append(dict(ev(ts="2026-11-30T10:00:00Z"), channel="whatsapp"))
    wa = "raw/whatsapp/chats/42/2026/11/29.jsonl"
    (sealed / wa).unlink()
    (sealed / DAY).unlink()
    missing = [(DAY, 0, "sealed file is missing (6 lines sealed)"), (wa, 0, "sealed file is missing (1 lines sealed)")]
    assert sorted(report(sealed, chat="42")[0]) == sorted(missing)
    assert sorted(report(sealed)[0]) == sorted(missing)
    assert report(sealed, chat="43")[0] == []


# -- the other chained streams -------------------------------------------------------------------------------------

def test_dlp_streams_and_the_checkpoint_file_are_checked_in_a_full_verify_only(sealed: Path) -> None:
    alerts = "dlp/alerts.jsonl"
    a = {"event": "dlp:alert", "channel": "telegram", "chat_id": "42", "ts": "2026-11-29T10:00:00.000Z"}
    put(sealed, alerts, chained(alerts, [schema.prepare(a), schema.prepare(a)]))
    (sealed / "dlp" / "notes.txt").write_text("not a stream\n")
    _, _, rep = report(sealed)
    files, lines = rep.files, rep.lines
    on_disk = [p.relative_to(sealed).as_posix() for p in sealed.rglob("*.jsonl")]
    assert alerts in on_disk and (files, lines) == (len(on_disk), sum(len(day_lines(sealed, r)) for r in on_disk))
    ls = day_lines(sealed, alerts)
    put(sealed, alerts, ls[1:])
    cp = "seals/checkpoints.jsonl"
    put(sealed, cp, [b"x"] + day_lines(sealed, cp)[1:])
    genesis = ("first line does not chain from this file's genesis (file moved or renamed, or lines deleted from its "
               "start)")
    dmg, _, rep = report(sealed)
    assert dmg == [(alerts, 1, genesis), (cp, 1, "not a valid JSON object (edited or corrupted)")]
    assert (rep.files, rep.lines) == (files, lines - 1)
    assert report(sealed, chat="42")[0] == []


def test_the_migration_record_stream_is_checked(sealed: Path) -> None:
    from eventlog.store.migrate import MIGRATIONS

    r = {"event": "log:migrate_file", "channel": "system", "chat_id": "eventlog", "ts": "2026-11-29T10:00:00.000Z"}
    put(sealed, MIGRATIONS, chained(MIGRATIONS, [schema.prepare(r), schema.prepare(r)])[1:])
    dmg, _, _ = report(sealed)
    assert dmg == [(MIGRATIONS, 1, "first line does not chain from this file's genesis (file moved or renamed, or "
                                   "lines deleted from its start)")]
    assert report(sealed, chat="42")[0] == []


# -- a migration to v2 stopped before the seal was renewed (eventlog/store/migrate.py, step 4) ----------------------

MIGRATED = "migrated to v2, seal not renewed yet (run `eventlog migrate` again)"


def migrate_unsealed(root: Path, n: int) -> Path:
    """A sealed v1 day with content, migrated to v2, and the seal the migration renewed taken back off the seal stream:
    what a kill between replacing the file and resealing it leaves (the seal names the old chain)."""
    from eventlog.store.migrate import migrate
    from eventlog.store.seal import seal_files

    v1 = []
    for i in range(1, n + 1):
        e = dict(event(i), v=1)
        e.pop("salt")
        v1.append(e)
    put(root, DAY, chained(DAY, v1))
    assert seal_files(EventLog(root, fsync="never"), [DAY]) == [(DAY, "sealed")]
    old = day_lines(root)
    rep = migrate(root)
    assert [r["file"] for r in rep.files] == [DAY] and rep.resealed == [DAY]
    assert day_lines(root) != old
    put(root, SEALS, day_lines(root, SEALS)[:-1])
    return root


@pytest.fixture
def migrated(root: Path) -> Path:
    return migrate_unsealed(root, 3)


def test_a_migration_stopped_before_resealing_is_a_warning(migrated: Path) -> None:
    dmg, warn, _ = report(migrated)
    assert dmg == [] and warn == [(DAY, 0, MIGRATED)]
    assert report(migrated, chat="42")[:2] == ([], [(DAY, 0, MIGRATED)])


def test_a_migrated_one_line_day(root: Path) -> None:
    migrate_unsealed(root, 1)
    assert report(root)[:2] == ([], [(DAY, 0, MIGRATED)])


def test_a_migrated_day_damaged_before_resealing_is_still_damage(migrated: Path) -> None:
    ls = day_lines(migrated)
    put(migrated, DAY, ls[:2])
    dmg, warn, _ = report(migrated)
    assert dmg == [(DAY, 2, "truncated: 2 lines, sealed with 3")] and warn == []
    ls[2] = ls[2].replace(b"line 3", b"line X")
    put(migrated, DAY, ls)
    dmg, warn, _ = report(migrated)
    assert dmg == [(DAY, 3, "sealed part modified (line 3 no longer matches the seal)")] and warn == []


def test_a_migrated_day_with_lines_appended_before_resealing(migrated: Path) -> None:
    ls = day_lines(migrated)
    more = chained(DAY, [orjson.loads(x) for x in ls] + [event(9)])
    put(migrated, DAY, more)
    assert report(migrated)[:2] == ([], [(DAY, 0, MIGRATED)])


@pytest.mark.parametrize("drop", ["new_lines", "new_last", "old_last", "old_lines"])
def test_a_migration_record_missing_a_field_vouches_for_nothing(migrated: Path, drop: str) -> None:
    """A hand-damaged migration record must neither crash verify nor excuse the seal mismatch."""
    from eventlog.store.migrate import MIGRATIONS

    recs = [orjson.loads(x) for x in day_lines(migrated, MIGRATIONS)]
    recs[-1].pop(drop)
    put(migrated, MIGRATIONS, chained(MIGRATIONS, recs))
    dmg, warn, _ = report(migrated)
    assert dmg == [(DAY, 3, "sealed part modified (line 3 no longer matches the seal)")] and warn == []


# -- more edges found by the mutation run ----------------------------------------------------------------------------

def test_a_garbled_line_the_writer_chained_past_is_named_once(root: Path) -> None:
    """Garbage appended by hand, then the writer appends: its line chains to the garbage's bytes, which is no break."""
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z"))
    with open(root / DAY, "ab") as f:
        f.write(b"garbage\n")
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T10:00:01Z"))
    dmg, warn, _ = report(root)
    assert dmg == [(DAY, 2, "not a valid JSON object (edited or corrupted)")] and warn == []


def test_since_and_until_limit_the_day_files_and_their_seals(root: Path) -> None:
    log = EventLog(root, fsync="never")
    for d in (27, 28, 29):
        log.append(ev(ts=f"2026-11-{d}T10:00:00Z"))
        log.append(ev(ts=f"2026-11-{d}T11:00:00Z"))  # the 27th and 28th are sealed
    d28, d29 = "raw/telegram/chats/42/2026/11/28.jsonl", DAY
    put(root, d28, day_lines(root, d28)[:1])
    put(root, d29, [b"garbage"] + day_lines(root, d29)[1:])
    cut = (d28, 1, "truncated: 1 lines, sealed with 2")
    bad = (d29, 1, "not a valid JSON object (edited or corrupted)")
    assert report(root)[0] == [bad, cut]
    assert report(root, since=date(2026, 11, 28))[0] == [bad, cut]
    assert report(root, since=date(2026, 11, 28), until=date(2026, 11, 28))[0] == [cut]
    assert report(root, until=date(2026, 11, 28))[0] == [cut]
    assert report(root, since=date(2026, 11, 29))[0] == [bad]
    assert report(root, until=date(2026, 11, 27))[0] == []


def test_every_sealed_day_is_checked_after_a_missing_one(root: Path) -> None:
    log = EventLog(root, fsync="never")
    for d in (27, 28, 29):
        log.append(ev(ts=f"2026-11-{d}T10:00:00Z"))
        log.append(ev(ts=f"2026-11-{d}T11:00:00Z"))
    d27, d28 = "raw/telegram/chats/42/2026/11/27.jsonl", "raw/telegram/chats/42/2026/11/28.jsonl"
    (root / d27).unlink()
    put(root, d28, day_lines(root, d28)[:1])
    assert report(root)[0] == [(d27, 0, "sealed file is missing (2 lines sealed)"),
                               (d28, 1, "truncated: 1 lines, sealed with 2")]
