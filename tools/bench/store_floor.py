"""The required-work floor of format v2 for the Python writer benchmarks (tools/bench/store.py, import.py).

The plain baseline is `orjson.dumps(event) + os.write` per event. A v2 line cannot cost less than that plus the work the
format itself asks for, whatever the writer's code: a fresh 16-byte salt per line, one SHA-256 per content field over
its canonical (sorted-key) encoding, and one SHA-256 per line for the chain. `write_floor` does exactly that and nothing
else (no validation, no ids, no commitment form, no lock, no grouping into day files), so `floor / baseline` is the
highest ratio any Python writer of this format can reach with hashlib and orjson, and `writer / floor` is how much of
what is left the writer's own code costs.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

import orjson

from eventlog.store.commitment import CONTENT, new_salt

_PREFIX = {k: k.encode() + b"\x00" for k in CONTENT}


def write_floor(events: list[dict[str, Any]], path: str) -> None:
    sha256, dumps, sort = hashlib.sha256, orjson.dumps, orjson.OPT_SORT_KEYS
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    for ev in events:
        line = dumps(ev)
        salt = bytes.fromhex(new_salt())
        for k in CONTENT.intersection(ev):
            sha256(salt + _PREFIX[k] + dumps(ev[k], option=sort)).hexdigest()
        sha256(line).hexdigest()
        os.write(fd, line + b"\n")
    os.close(fd)
