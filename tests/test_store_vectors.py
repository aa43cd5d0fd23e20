"""The golden vectors the JS writer must also pass (patches/openclaw/runtime/test/)."""
import json

import pytest

from eventlog import schema
from eventlog.errors import BadEvent
from eventlog.writer import EventLog

from store_support import VECTORS

ENC = json.loads((VECTORS / "store" / "encoding.json").read_text())
NAMES = json.loads((VECTORS / "store" / "names.json").read_text())
TS = json.loads((VECTORS / "store" / "timestamps.json").read_text())


@pytest.mark.parametrize("case", ENC["lines"], ids=lambda c: c["name"])
def test_line_encoding(case):
    prepared = schema.prepare(case["event"])
    line = schema.encode_with_prev(prepared, case["prev"])
    assert line.decode() == case["line"]
    assert schema.line_hash(line) == case["hash"]


def test_genesis():
    assert schema.genesis(ENC["relpath"]) == ENC["genesis"]
    assert ENC["genesis_prefix"] == schema.GENESIS_PREFIX


def test_writer_produces_the_vector_file_byte_for_byte(root):
    log = EventLog(root, fsync="never")
    for case in ENC["lines"]:
        log.append(case["event"])
    assert (root / ENC["relpath"]).read_text(encoding="utf-8") == ENC["file"]


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
    from eventlog.layout import log_files

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
