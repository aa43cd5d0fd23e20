"""The golden vectors the JS writer must also pass (eventlog/patches/openclaw/runtime/test/)."""
import json

import pytest

from eventlog.store import schema
from eventlog.store.commitment import CONTENT_FIELDS, chain_hash, erase_line
from eventlog.errors import BadEvent
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog

from store_support import VECTORS

ENC = json.loads((VECTORS / "store" / "encoding.json").read_text())
NAMES = json.loads((VECTORS / "store" / "names.json").read_text())
TS = json.loads((VECTORS / "store" / "timestamps.json").read_text())
V2 = json.loads((VECTORS / "store" / "v2.json").read_text())


@pytest.mark.parametrize("case", ENC["lines"], ids=lambda c: c["name"])
def test_v1_line_encoding_and_hash(case):
    # v1 lines are still read: the canonical encoding is unchanged, and a v1 line is its own commitment form
    line = schema.encode(dict(case["event"], prev=case["prev"]))
    assert line.decode() == case["line"]
    assert chain_hash(line) == schema.line_hash(line) == case["hash"]


def test_genesis():
    assert schema.genesis(ENC["relpath"]) == ENC["genesis"] == V2["genesis"]
    assert ENC["genesis_prefix"] == schema.GENESIS_PREFIX
    assert tuple(V2["content_fields"]) == CONTENT_FIELDS


@pytest.mark.parametrize("case", V2["lines"], ids=lambda c: c["name"])
def test_v2_line_form_hash_and_erasure(case):
    prepared = schema.prepare(case["event"])
    line, form = schema.encode_forms(prepared, case["prev"])
    assert line.decode() == case["line"]
    assert (form or line).decode() == case["form"]
    assert chain_hash(line) == case["hash"] == chain_hash(case["erased"].encode())
    erased = erase_line(line)
    assert (erased or line).decode() == case["erased"]


def test_writer_produces_the_v2_vector_file_byte_for_byte(root):
    log = EventLog(root, fsync="never")
    for case in V2["lines"]:
        log.append(case["event"])
    assert (root / V2["relpath"]).read_text(encoding="utf-8") == V2["file"]


def test_erased_file_verifies_and_the_writer_chains_on(root):
    path = root / V2["relpath"]
    path.parent.mkdir(parents=True)
    path.write_text(V2["erased_file"], encoding="utf-8")
    assert verify(root).ok
    stored = EventLog(root, fsync="never").append(dict(V2["lines"][0]["event"], id=schema.new_id()))
    assert stored["prev"] == V2["lines"][-1]["hash"]
    assert verify(root).ok


def test_mixed_v1_v2_file_byte_for_byte(root):
    path = root / V2["relpath"]
    path.parent.mkdir(parents=True)
    path.write_text("".join(x + "\n" for x in V2["mixed"]["v1_lines"]), encoding="utf-8")
    log = EventLog(root, fsync="never")
    for case in V2["mixed"]["v2"]:
        log.append(case["event"])
    assert path.read_text(encoding="utf-8") == V2["mixed"]["file"]
    assert verify(root).ok


@pytest.mark.parametrize("chat", NAMES["chat_id_ok"])
def test_chat_id_ok(chat):
    assert schema.check_chat_id(chat) == chat


@pytest.mark.parametrize("chat", NAMES["chat_id_bad"])
def test_chat_id_rejected(chat):
    with pytest.raises(BadEvent):
        schema.check_chat_id(chat)


@pytest.mark.parametrize("ch", NAMES["channel_ok"])
def test_channel_ok(ch):
    assert schema.check_channel(ch) == ch


@pytest.mark.parametrize("ch", NAMES["channel_bad"])
def test_channel_rejected(ch):
    with pytest.raises(BadEvent):
        schema.check_channel(ch)


@pytest.mark.parametrize("given,want", TS["ok"])
def test_ts_normalised(given, want):
    assert schema.normalize_ts(given) == want


@pytest.mark.parametrize("given", TS["bad"])
def test_ts_rejected(given):
    with pytest.raises(BadEvent):
        schema.normalize_ts(given)


@pytest.mark.parametrize("given,rel", TS["paths"])
def test_ts_day_file_path(root, given, rel):
    """Years before 1000 get four digits in the path (both writers), and the day file is one the readers list."""
    from eventlog.store.layout import log_files

    stored = EventLog(root, fsync="never").append({"event": "message:received", "channel": "telegram",
                                                    "chat_id": "1", "ts": given})
    assert (root / rel).is_file()
    assert [lf.relpath for lf in log_files(root)] == [rel]
    assert stored["ts"][:10] == rel[-16:-6].replace("/", "-")


def test_ulids_are_unique_and_sorted():
    ids = [schema.new_id() for _ in range(20000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(schema.ULID_RE.fullmatch(i) for i in ids[:100])


ACC = json.loads((VECTORS / "store" / "accounts.json").read_text())


@pytest.mark.parametrize("name", ACC["account_ok"])
def test_account_accepted(name):
    assert schema.prepare({"event": "a:b", "channel": "telegram", "chat_id": "1", "ts": "2026-11-30T10:00:00Z",
                           "account": name})["account"] == name


@pytest.mark.parametrize("name", ACC["account_bad"] + [None, 7, ["ops"]])
def test_account_rejected(name):
    with pytest.raises(BadEvent, match="account"):
        schema.prepare({"event": "a:b", "channel": "telegram", "chat_id": "1", "ts": "2026-11-30T10:00:00Z",
                        "account": name})


@pytest.mark.parametrize("case", ACC["paths"], ids=lambda c: c["relpath"])
def test_account_paths(case):
    from eventlog.store.layout import day_relpath, seal_relpath

    acc = case["account"] or "default"
    assert day_relpath(case["channel"], case["chat_id"], case["ts"], acc) == case["relpath"]
    assert seal_relpath(case["channel"], case["chat_id"], acc) == case["seal"]


def test_account_relpaths_parse():
    from eventlog.store.layout import parse_relpath

    for c in ACC["parse_ok"]:
        p = parse_relpath(c["relpath"])
        assert p is not None and (p.channel, p.chat_id, p.day.isoformat(), p.account) == \
            (c["channel"], c["chat_id"], c["day"], c["account"])
    for rel in ACC["parse_bad"]:
        assert parse_relpath(rel) is None, rel


def test_accounts_writer_files_byte_for_byte(root):
    """One chat id under two accounts: two files, each chained from its own genesis, byte for byte the vectors."""
    log = EventLog(root, fsync="never")
    for ev in ACC["events"]:
        log.append(ev)
    got = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in (root / "raw").rglob("*.jsonl")}
    assert got == ACC["files"]
    assert verify(root).ok
