"""The required-work floor of format v2 for the Python writer benchmarks (tools/bench/store.py, import.py).

The plain baseline is `orjson.dumps(event) + os.write` per event. A v2 line cannot cost less than that plus the work the
format itself asks for, whatever the writer's code: a fresh 16-byte salt per line, one SHA-256 per content field over
its canonical (sorted-key) encoding, and one SHA-256 per line for the chain. `write_floor` does exactly that and nothing
else (no validation, no ids, no commitment form, no lock, no grouping into day files), so `floor / baseline` is the
highest ratio any Python writer of this format can reach with hashlib and orjson, and `writer / floor` is how much of
what is left the writer's own code costs.

Variants of `write_floor`:
- `"v2"`: the floor above.
- `"per-line"`: the floor of a format that is not v2 (a proposal, issue 30 item 5): one keyed hash per line over all
  its content fields together (their sorted-key encoding in one object) instead of one per field, plus the chain hash.
  Erasing one field would then commit to the line's content as a whole.
- `"minimum"`: the floor plus the three things it leaves out that every v2 line needs: an id (a ULID), the previous
  line's chain hash inside the line (so the line is encoded with it, in sorted key order), and the chain hash over the
  line's commitment form (the form encoded besides the line). It encodes through the writer's own
  `schema.encode_forms` and has no code of its own: no validation, lock, day files (one stream, one genesis), seals
  or batching; like the floor it writes each line on its own. Its lines are v2 lines of one stream
  (tests/test_bench_floor.py chains them). So `minimum / floor` bounds what a writer built on this encoder reaches,
  and `writer / minimum` is what the writer's own code costs. It is not a bound on every possible encoder: one that
  encoded the fields a line and its commitment form share only once, or spliced `prev` into bytes, could do less.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

import orjson

from eventlog.store import schema
from eventlog.store.commitment import CONTENT, new_salt

_PREFIX = {k: k.encode() + b"\x00" for k in CONTENT}


VARIANTS = ("v2", "per-line", "minimum")


def write_floor(events: list[dict[str, Any]], path: str, variant: str = "v2", stream: str = "floor.jsonl") -> None:
    """Write `events` as the floor `variant` does (the module's docstring); `stream` is the minimum's chain name."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown floor variant {variant!r}")
    sha256, dumps, sort = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    if variant == "minimum":
        encode, new_id, prev = schema.encode_forms, schema.new_id, schema.genesis(stream)
        for ev in events:
            out = ev.copy()
            out["v"] = schema.VERSION
            out["id"] = new_id()
            if not CONTENT.isdisjoint(out):
                out["salt"] = new_salt()
            line, form = encode(out, prev)
            prev = sha256(line if form is None else form).hexdigest()
            os.write(fd, line + b"\n")
        os.close(fd)
        return
    per_line = variant == "per-line"
    for ev in events:
        line = dumps(ev)
        salt = bytes.fromhex(new_salt())
        if per_line:
            sha256(salt + dumps({k: ev[k] for k in CONTENT.intersection(ev)}, option=sort)).hexdigest()
        else:
            for k in CONTENT.intersection(ev):
                sha256(salt + _PREFIX[k] + dumps(ev[k], option=sort)).hexdigest()
        sha256(line).hexdigest()
        os.write(fd, line + b"\n")
    os.close(fd)
