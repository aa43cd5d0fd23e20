"""Format v2: content commitments, so content can be erased and the hash chain still verifies.

A v2 line that has content fields carries their plaintext and a per-line `salt` (32 lowercase hex = 16 bytes). Its
*commitment form* is the same event without `salt`, every content field `k` replaced by
`{"c": sha256hex(salt_bytes || utf8(k) || 0x00 || canonical(value))}`. The chain hash of a line (what the next line's
`prev` names, what seals and checkpoints record) is SHA-256 of the commitment form's canonical bytes. Erasing a line
writes its commitment form in its place: the same chain hash, no content, no salt. A line without `salt` (a v1 line,
a v2 line without content, an erased line) is its own commitment form: its chain hash is SHA-256 of its bytes.
docs/log-format.md is the contract; eventlog/store/schema.py and runtime/writer-commit.mjs implement it.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..errors import BadEvent, EventlogError

# Top-level fields that hold what people wrote or who they are (the agreement between the branches, BRIEF.md).
CONTENT_FIELDS = ("args", "forward", "from", "media", "note", "payload", "raw", "text", "title")
CONTENT = _CONTENT = frozenset(CONTENT_FIELDS)
_KEY_PREFIX = {k: k.encode() + b"\x00" for k in CONTENT_FIELDS}
SALT_RE = re.compile(r"[0-9a-f]{32}")
COMMIT_RE = re.compile(r"[0-9a-f]{64}")
_OPTS = orjson.OPT_SORT_KEYS
_sha256 = hashlib.sha256


_pool = ""
_pool_pos = 0
_pool_lock = threading.Lock()


def _drop_pool() -> None:
    global _pool, _pool_pos, _pool_lock
    _pool, _pool_pos, _pool_lock = "", 0, threading.Lock()


# Parent and child must never hand out the same salt: a forked child starts with an empty pool (and a fresh lock).
os.register_at_fork(after_in_child=_drop_pool)


def new_salt() -> str:
    """16 random bytes as hex, from a per-process pool of os.urandom (one syscall per 1024 salts)."""
    global _pool, _pool_pos
    with _pool_lock:
        pos = _pool_pos
        if pos >= len(_pool):
            _pool, pos = os.urandom(16 * 1024).hex(), 0
        _pool_pos = pos + 32
        return _pool[pos:pos + 32]


def commit_value(salt: bytes, key: str, value: Any) -> str:
    """Hex commitment of one content field's value (`salt` as raw bytes)."""
    return _sha256(salt + _KEY_PREFIX[key] + orjson.dumps(value, option=_OPTS)).hexdigest()


def commitment_form(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The commitment form of a parsed live v2 event (a new dict), or None when the event is its own (no salt)."""
    salt = obj.get("salt")
    if salt is None:
        return None
    if not isinstance(salt, str) or not SALT_RE.fullmatch(salt):
        raise BadEvent("salt must be 32 lowercase hex characters")
    sb = bytes.fromhex(salt)
    out = {k: v for k, v in obj.items() if k != "salt"}
    for k in _CONTENT.intersection(out):
        out[k] = {"c": commit_value(sb, k, out[k])}
    return out


def has_content(obj: dict[str, Any]) -> bool:
    return not _CONTENT.isdisjoint(obj)


def chain_hash(line: bytes, obj: dict[str, Any] | None = None) -> str:
    """The chain hash of one stored line (bytes without '\\n'); `obj` is its parsed form if the caller has it.

    Fast path: a line with no `"salt":"` in it is its own commitment form. Otherwise the line is parsed and its
    commitment form re-encoded: for any line a writer produced, canonical re-encoding reproduces its bytes exactly."""
    if b'"salt":"' not in line:
        return _sha256(line).hexdigest()
    if obj is None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return _sha256(line).hexdigest()
    if not isinstance(obj, dict) or "salt" not in obj or obj.get("v") != 2:
        return _sha256(line).hexdigest()  # (a v1 line is its own form, even with a field called "salt")
    try:
        form = commitment_form(obj)
    except BadEvent:
        return _sha256(line).hexdigest()  # a damaged salt: the line no longer hashes to what the chain expects
    return _sha256(orjson.dumps(form, option=_OPTS)).hexdigest()


def is_erased(obj: dict[str, Any]) -> bool:
    """True for a v2 line whose content fields are all commitments and that carries no salt."""
    if obj.get("v") != 2 or "salt" in obj:
        return False
    present = [obj[k] for k in _CONTENT.intersection(obj)]
    return bool(present) and all(_is_commitment(v) for v in present)


def _is_commitment(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get("c"), str) and bool(COMMIT_RE.fullmatch(v["c"]))


def erase_line(line: bytes) -> bytes | None:
    """The erased form of a live v2 line (its commitment form), or None if there is nothing to erase (already erased,
    no content). Raises BadEvent for a v1 line with content (its chain covers the plaintext: migrate it first)."""
    obj = orjson.loads(line)
    if not isinstance(obj, dict):
        raise BadEvent("not a JSON object")
    if obj.get("v") == 1:
        if has_content(obj):
            raise BadEvent("a v1 line cannot be erased without breaking the chain (run `eventlog migrate` first)")
        return None
    form = commitment_form(obj)
    if form is None:
        return None
    return orjson.dumps(form, option=_OPTS)


def live_object(line: bytes) -> dict[str, Any] | None:
    """The parsed line if it still holds content (a live v2 line with a salt, or a v1 line with content)."""
    if b'"salt":"' not in line and b'"v":1' not in line:
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and has_content(obj) and not is_erased(obj) else None


def live_ids(path: Path, rel: str) -> Iterator[str | None]:
    """The id of every line of `path` that still holds content; raises for v1 content (migrate first)."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            obj = live_object(line.rstrip(b"\n"))
            if obj is None:
                continue
            if obj.get("v") == 1:
                raise EventlogError(f"{rel}:{n}: a v1 line; its chain covers the plaintext, so it cannot be erased "
                                    "— run `eventlog migrate` first")
            yield obj.get("id") if isinstance(obj.get("id"), str) else None
