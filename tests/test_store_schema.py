"""The JSON Schema in the repo describes what the writers really write."""
import json

import jsonschema
import orjson

from eventlog.store.reader import iter_events
from eventlog.store.writer import EventLog

from store_support import REPO, VECTORS, ev

SCHEMA = json.loads((REPO / "eventlog" / "event.schema.json").read_text())


def test_vector_lines_match_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for case in json.loads((VECTORS / "store" / "encoding.json").read_text())["lines"]:
        jsonschema.validate(orjson.loads(case["line"]), SCHEMA)
    for case in json.loads((VECTORS / "store" / "v2.json").read_text())["lines"]:  # live and erased v2 lines
        jsonschema.validate(orjson.loads(case["line"]), SCHEMA)
        jsonschema.validate(orjson.loads(case["erased"]), SCHEMA)


def test_written_events_match_schema(root):
    log = EventLog(root, fsync="never")
    log.append(ev(direction="in", update_id=5, update_type="message", raw={"update_id": 5}, message_id=3,
                  **{"from": {"id": 1}}))
    log.append({"event": "message:sent", "channel": "telegram", "chat_id": "42", "ts": "2026-11-30T10:00:01Z",
                "direction": "out", "method": "sendMessage", "payload": {"chat_id": 42, "text": "x"}, "text": "x",
                "outcome": {"ok": True, "message_id": 9}})
    log.append(ev(ts="2026-12-01T00:00:00Z"))  # a seal record too
    events = list(iter_events(root))
    assert len(events) == 3
    for e in events:
        jsonschema.validate(e, SCHEMA)
    seal = orjson.loads((root / "seals/telegram/42.jsonl").read_bytes().splitlines()[0])
    jsonschema.validate(seal, SCHEMA)
