"""Event model v2: validation, normalisation and the canonical one-line encoding (content commitments: commitment.py).

The encoding is the contract with the JS writer (docs/log-format.md): keys sorted recursively, no whitespace, raw UTF-8,
SHA-256 chain over the line bytes. Golden vectors in tests/vectors/store/ keep both sides identical.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from datetime import datetime, timezone
from typing import Any

import orjson

from ..errors import BadEvent
from .commitment import _KEY_PREFIX, CONTENT, SALT_RE, _sha256, new_salt

VERSION = 2
VERSIONS = (1, 2)  # what readers accept; writers write VERSION
MAX_LINE = 4 * 1024 * 1024
REQUIRED = ("event", "channel", "chat_id", "ts")
GENESIS_PREFIX = "openclaw-eventlog:v1:genesis:"

EVENT_RE = re.compile(r"[a-z][a-z0-9_]*(?::[a-z][a-z0-9_]*)+")
CHANNEL_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
CHAT_ID_RE = re.compile(r"[A-Za-z0-9_@-][A-Za-z0-9_@.-]{0,127}")
DEFAULT_ACCOUNT = "default"  # OpenClaw's DEFAULT_ACCOUNT_ID: an event without `account` belongs to it
# What OpenClaw's canonical account id can be (normalizeAccountId, src/routing/account-id.ts, openclaw 2026.9.6: the keys
# of channels.<channel>.accounts are lowercased, other characters become '-', leading/trailing '-' go, ≤ 64). It names a
# directory: no '.', no '/', never a leading '-'.
ACCOUNT_RE = re.compile(r"[a-z0-9_][a-z0-9_-]{0,63}")
ULID_RE = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
# RFC 3339: date, 'T' (or space / lower t), time, optional fraction, Z or offset.
# re.ASCII: `\d` would otherwise match any Unicode digit ('١', '٥'), which datetime() accepts and the JS writer does not.
TS_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:[0-5]\d)", re.ASCII
)

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]  # 10 bits → 2 characters
_MASK80 = (1 << 80) - 1
# Names already validated (bounded): most events name a handful of chats, channels and kinds.
_ok_chats: set[str] = set()
_ok_names: set[str] = set()
_ok_accounts: set[str] = set()
_ok_kinds: set[str] = set()
_OPTS = orjson.OPT_SORT_KEYS


def encode(obj: dict[str, Any]) -> bytes:
    """Canonical line bytes (without the newline)."""
    return orjson.dumps(obj, option=_OPTS)


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def genesis(relpath: str) -> str:
    return hashlib.sha256((GENESIS_PREFIX + relpath).encode()).hexdigest()


class _Ulid:
    """Time-sortable unique ids: 48-bit ms time + an 80-bit counter that starts at a random value and is incremented
    for every id, so ids from one process are unique and sort in the order they were made (within one millisecond too).
    The time part is cached per millisecond and the counter's upper 60 bits per million ids."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = int.from_bytes(os.urandom(10), "big") >> 1  # headroom: never wraps in practice
        self._time_text = ""
        self._mid_key = -1
        self._mid_text = ""

    def new(self, ms: int | None = None) -> str:
        with self._lock:
            now = int(time.time() * 1000) if ms is None else ms
            if now > self._last_ms:
                self._last_ms = now
                self._time_text = "".join(_CROCKFORD[(now >> s) & 31] for s in range(45, -1, -5))
            self._counter = c = (self._counter + 1) & _MASK80
            if c >> 20 != self._mid_key:
                p = _PAIRS
                self._mid_key = c >> 20
                self._mid_text = (p[c >> 70] + p[(c >> 60) & 1023] + p[(c >> 50) & 1023] + p[(c >> 40) & 1023]
                                  + p[(c >> 30) & 1023] + p[(c >> 20) & 1023])
            return self._time_text + self._mid_text + _PAIRS[(c >> 10) & 1023] + _PAIRS[c & 1023]


new_id = _Ulid().new


_CANON_TS = re.compile(r"(\d{4}-\d\d-\d\d)T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z", re.ASCII)
_valid_days: set[str] = set()


def normalize_ts(value: Any) -> str:
    """RFC 3339 in any offset → UTC with milliseconds, `2026-11-30T04:24:25.123Z`."""
    if not isinstance(value, str):
        raise BadEvent("ts must be an RFC 3339 string")
    m = _CANON_TS.fullmatch(value)
    if m and m[1] in _valid_days:  # already canonical, on a calendar day seen before: the common case
        return value
    m = TS_RE.fullmatch(value)
    if not m:
        raise BadEvent(f"ts is not RFC 3339: {value[:40]!r}")
    y, mo, d, h, mi, s, frac, off = m.groups()
    ms = int((frac or "0")[:3].ljust(3, "0"))
    try:
        if off in ("Z", "z"):
            tz = timezone.utc
        else:
            sign = 1 if off[0] == "+" else -1
            from datetime import timedelta

            tz = timezone(sign * timedelta(hours=int(off[1:3]), minutes=int(off[4:6])))
        dt = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), ms * 1000, tzinfo=tz)
    except ValueError as exc:
        raise BadEvent(f"ts is not a valid time: {value[:40]!r} ({exc})") from None
    try:
        dt = dt.astimezone(timezone.utc)
    except OverflowError:  # the offset moves it before 0001-01-01 or after 9999-12-31 (UTC)
        raise BadEvent(f"ts is out of range (UTC years 0001–9999): {value[:40]!r}") from None
    # not strftime("%Y"): glibc writes year 999 as "999", which would name the day file "999/…"
    out = (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}."
           f"{dt.microsecond // 1000:03d}Z")
    if len(_valid_days) < 100_000:
        _valid_days.add(out[:10])
    return out


def check_chat_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadEvent("chat_id must be a string or an integer")
    text = value if isinstance(value, str) else str(value)
    if text in _ok_chats:
        return text
    if not CHAT_ID_RE.fullmatch(text):
        shown = text[:40].encode("unicode_escape").decode("ascii")
        raise BadEvent(f"chat_id not allowed (letters, digits, _ @ - . only, no leading '.', ≤128): {shown!r}")
    if len(_ok_chats) < 100_000:
        _ok_chats.add(text)
    return text


def _check_name(value: Any, pattern: "re.Pattern[str]", seen: set[str], why: str) -> str:
    """`value` if it is a string matching `pattern`, else BadEvent(why); names seen before are a set lookup."""
    if isinstance(value, str) and value in seen:
        return value
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BadEvent(f"{why}: {str(value)[:40]!r}")
    if len(seen) < 10_000:
        seen.add(value)
    return value


def check_channel(value: Any) -> str:
    return _check_name(value, CHANNEL_RE, _ok_names, "channel must match [a-z0-9][a-z0-9_-]{0,31}")


def check_account(value: Any) -> str:
    return _check_name(value, ACCOUNT_RE, _ok_accounts,
                       "account must match [a-z0-9_][a-z0-9_-]{0,63} (OpenClaw's account id)")


def prepare(event: Any, fill: bool = True) -> dict[str, Any]:
    """Validate an input event and fill `v` and `id` (the writer fills `prev`). Returns a new dict. `fill=False`
    validates only: no id or salt is made (a validation pass that writes nothing needs neither).

    The hot path of every append: names seen before (kinds, channels, chats, calendar days) are set lookups, and the
    checks are inline rather than a call each."""
    if not isinstance(event, dict):
        raise BadEvent("an event must be a JSON object")
    if "event" not in event or "channel" not in event or "chat_id" not in event or "ts" not in event:
        raise BadEvent("missing required field(s): " + ", ".join(k for k in REQUIRED if k not in event))
    out = event.copy() if type(event) is dict else dict(event)
    out.pop("prev", None)
    v = out.get("v", VERSION)
    if v is not VERSION and (v not in VERSIONS or isinstance(v, bool)):
        raise BadEvent(f"unsupported event version v={v!r} (this writer writes v{VERSION})")
    out["v"] = VERSION
    salt = out.pop("salt", None)
    if not CONTENT.isdisjoint(out):  # content present: the line keeps a salt (a valid given one is kept, like an id)
        if salt is None:
            if fill:
                out["salt"] = new_salt()
        elif not isinstance(salt, str) or not SALT_RE.fullmatch(salt):
            raise BadEvent("salt must be 32 lowercase hex characters")
        else:
            out["salt"] = salt
    kind = out["event"]
    if kind.__class__ is not str or kind not in _ok_kinds:
        if not isinstance(kind, str) or not EVENT_RE.fullmatch(kind):
            raise BadEvent(f"event must look like 'message:received': {str(kind)[:40]!r}")
        if len(_ok_kinds) < 10_000:
            _ok_kinds.add(kind)
    value = out["channel"]
    if value.__class__ is not str or value not in _ok_names:
        out["channel"] = check_channel(value)
    value = out["chat_id"]
    if value.__class__ is not str or value not in _ok_chats:
        out["chat_id"] = check_chat_id(value)
    if "account" in out:
        value = out["account"]
        if value.__class__ is not str or value not in _ok_accounts:
            out["account"] = check_account(value)
    value = out["ts"]
    if value.__class__ is not str or value[:10] not in _valid_days or not _CANON_TS.fullmatch(value):
        out["ts"] = normalize_ts(value)
    if "id" in out:
        if not isinstance(out["id"], str) or not ULID_RE.fullmatch(out["id"]):
            raise BadEvent(f"id must be a ULID (26 Crockford base32 characters): {str(out['id'])[:40]!r}")
    elif fill:
        out["id"] = new_id()
    return out


_C_OPEN, _C_CLOSE = b'{"c":"', b'"}'
_Fragment = orjson.Fragment


def encode_forms(event: dict[str, Any], prev: str) -> tuple[bytes, bytes | None]:
    """(line, commitment form or None when the line is its own) of a prepared event with its chain field `prev`.

    Each content value is encoded once, on its own: those bytes are what its commitment hashes
    (commitment.commit_value), and they go into the line as an orjson.Fragment, copied rather than encoded again.
    Canonical encoding nests (a value encodes the same inside the line as alone), so the bytes are those of
    `encode(event with prev)` (tests/vectors/store/v2.json holds both forms)."""
    tmp = event.copy()
    tmp["prev"] = prev
    salt = event.get("salt")
    try:
        if salt is None:
            line = orjson.dumps(tmp, option=_OPTS)
            form = None
        else:
            del tmp["salt"]
            form_d = tmp.copy()
            sb = bytes.fromhex(salt)
            for k in CONTENT.intersection(tmp):
                vb = orjson.dumps(tmp[k], option=_OPTS)
                tmp[k] = _Fragment(vb)
                form_d[k] = _Fragment(_C_OPEN + _sha256(sb + _KEY_PREFIX[k] + vb).hexdigest().encode() + _C_CLOSE)
            tmp["salt"] = salt
            line = orjson.dumps(tmp, option=_OPTS)
            form = orjson.dumps(form_d, option=_OPTS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadEvent(f"event cannot be encoded: {exc}") from None
    if len(line) > MAX_LINE:
        raise BadEvent(f"event is {len(line)} bytes; the limit is {MAX_LINE}")
    return line, form


def parse_line(line: bytes) -> dict[str, Any]:
    """Parse one input line (bytes) into an object; raises BadEvent with a clear reason."""
    if len(line) > MAX_LINE:
        raise BadEvent(f"line is {len(line)} bytes; the limit is {MAX_LINE}")
    try:
        obj: dict[str, Any] = orjson.loads(line)  # callers check it is an object
    except orjson.JSONDecodeError as exc:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            raise BadEvent("input is not valid UTF-8") from None
        if b"\x00" in line:
            raise BadEvent("input contains a NUL byte") from None
        raise BadEvent(f"invalid JSON: {exc}") from None
    # orjson reads an integer beyond 64 bits as a float: it would be stored changed
    if _long_integer(line):
        import json

        def exact(text: str) -> int:
            n = int(text)
            if not -(2**63) <= n < 2**64:
                raise BadEvent(f"integer beyond 64 bits (it would be stored as a float): {text[:40]}")
            return n

        json.loads(line, parse_int=exact)
    return obj


# An integer token of 19 digits or more (2**64 has 20; -(2**63) - 1 has 19). JSON puts a number only after `:`, `[`,
# `,` or whitespace (and its `-`), so digits inside a string after anything else — a hex hash, an id — do not send
# every such line through the slow exact parse. Found with one bytes.translate (digits → 1, what may precede a number
# → s, `-` → m, the rest → 0) and two substring searches, all in C: ≈ 1–2 µs for a 1 KB line, where a regex scan of
# it costs ≈ 20–25 µs on this machine — and every line is checked twice by `eventlog append` from a file.
_CLASSES = bytearray(b"0" * 256)
for _c in b"0123456789":
    _CLASSES[_c] = ord("1")
for _c in b":[, \t\n\r\f\v":
    _CLASSES[_c] = ord("s")
_CLASSES[ord("-")] = ord("m")
_TABLE = bytes(_CLASSES)
_TOKEN = b"s" + b"1" * 19
_NEGATIVE_TOKEN = b"sm" + b"1" * 19


def _long_integer(line: bytes) -> bool:
    """Does an integer token of 19 digits or more occur in the (valid JSON) line?"""
    classes = line.translate(_TABLE)
    return _TOKEN in classes or _NEGATIVE_TOKEN in classes
