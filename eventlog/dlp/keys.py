"""The per-install HMAC key (dlp/key) and the false-positive allowlist (dlp/allowlist.json) under the log root.

Fingerprints are HMAC-SHA256(key, secret) in hex: an unsalted hash of a short secret (a card number, an ИНН) can be
brute-forced, a keyed one cannot without the key. The key is 32 random bytes, 0600, created on first use by whichever
side (Python raising an alert, or the JS tap) gets there first: written to a private temp file, then hard-linked into place, so two
racing creators agree on one key.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path
from typing import Any, Iterable

import orjson

from ..errors import EventlogError
from ..store.fsutil import replace_file

KEY_BYTES = 32


def key_path(root: Path) -> Path:
    return root / "dlp" / "key"


def allowlist_path(root: Path) -> Path:
    return root / "dlp" / "allowlist.json"


def _mkdirs(d: Path) -> None:
    missing = []
    while not d.is_dir():
        missing.append(d)
        d = d.parent
    for m in reversed(missing):
        try:
            os.mkdir(m, 0o700)
        except FileExistsError:
            pass


def load_key(root: Path, create: bool | None = None) -> bytes:
    """The root's key. If there is none: create=True makes it (do this only where a fingerprint is persisted — an
    alert), create=False raises, and the default returns an ephemeral key that is never written (a read-only scan must
    not create files; no allowlist entry can match a key that did not exist)."""
    p = key_path(root)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        if create is None:
            return secrets.token_bytes(KEY_BYTES)
        if not create:
            raise EventlogError(f"no DLP key at {p}") from None
        _mkdirs(p.parent)
        tmp = p.with_name(f".key.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass  # another process won the race: use its key
        finally:
            os.unlink(tmp)
        data = p.read_bytes()
    if len(data) != KEY_BYTES:
        raise EventlogError(f"DLP key {p} is damaged ({len(data)} bytes, expected {KEY_BYTES})")
    return data


def fingerprint(key: bytes, secret: str) -> str:
    return hmac.new(key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


class Allowlist:
    """Fingerprints that a reviewer marked false-positive. Re-stats the file at most once a second, so a verdict
    reaches a long-running scanner without a restart (the JS engine does the same)."""

    def __init__(self, path: Path | None, check_every: float = 1.0) -> None:
        self.path = path
        self.check_every = check_every
        self._sig: tuple[int, int, int] | None = None
        self._checked = -1e9
        self.fingerprints: frozenset[str] = frozenset()
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = time.monotonic()
        if not force and now - self._checked < self.check_every:
            return
        self._checked = now
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._sig, self.fingerprints = None, frozenset()
            return
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == self._sig:
            return
        self._sig = sig
        self.fingerprints = frozenset(read_allowlist(self.path))

    def __contains__(self, fp: str) -> bool:
        self.refresh()
        return fp in self.fingerprints


def read_allowlist(path: Path) -> list[str]:
    try:
        doc = orjson.loads(path.read_bytes())
        return [e["fingerprint"] for e in doc["entries"]]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise EventlogError(f"allowlist {path} is unreadable: {exc}") from None


def write_allowlist(root: Path, entries: Iterable[dict[str, Any]]) -> Path:
    """Replace the allowlist atomically (temp file + rename): a reader sees the old or the new file, never half."""
    p = allowlist_path(root)
    _mkdirs(p.parent)
    body = orjson.dumps({"v": 1, "entries": list(entries)}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    replace_file(p, body, "tmp")
    return p
