"""The head hash: one hash that commits to every seal stream and the DLP alert/review streams.

Seals catch a truncated or deleted day file, but nothing inside the log can catch a truncated or deleted *seal stream*
(or DLP stream) — whoever deletes the last seal line can delete the day's last lines too. So every seal also appends a
checkpoint to `seals/checkpoints.jsonl`, a chained stream whose records say, for each stream that changed since the
previous checkpoint, how many complete lines it had and the chain hash of the last one. The *head* is the chain hash
of the checkpoint file's last line: it commits to the state of every stream at that time (the checkpoint chain links
all earlier records). Write it down somewhere else (a message to yourself, a ticket); `eventlog verify --head HASH`
later proves the log still extends it — or names the stream that lost lines. Streams only ever grow (erasure keeps
every line's chain hash), so a log that is merely written to, sealed and erased keeps extending every earlier head.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import EventlogError
from .commitment import COMMIT_RE, chain_hash
from .growing import Growing
from .layout import seal_streams
from .lock import FileLock
from .reader import Problem

if TYPE_CHECKING:
    from .writer import EventLog

CHECKPOINTS = "seals/checkpoints.jsonl"
DLP_STREAMS = ("dlp/alerts.jsonl", "dlp/reviews.jsonl")
_cache: dict[str, "_Folded"] = {}


def covered_streams(root: Path) -> list[str]:
    """Relpaths of the streams a checkpoint covers that exist now: every partition's seal stream and the DLP streams."""
    return seal_streams(root) + [r for r in DLP_STREAMS if (root / r).is_file()]


def _lines(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return f.read().split(b"\n")[:-1]  # complete lines only: a torn tail is not yet part of the stream


def _state(path: Path, known: dict[str, Any] | None) -> dict[str, Any] | None:
    """{lines, bytes, last} of a stream's complete lines (incremental from `known` when its prefix is unchanged)."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return None
    if known and known["bytes"] <= size:
        with open(path, "rb") as f:
            if known["bytes"] == size:
                return known if size else None
            f.seek(max(known["bytes"] - 4 * 1024 * 1024 - 2, 0))
            head = f.read(known["bytes"] - f.tell())
            tail = f.read(size - known["bytes"])
        prior = head.rsplit(b"\n", 2)
        if len(prior) >= 2 and prior[-1] == b"" and chain_hash(prior[-2]) == known["last"]:
            new = tail.split(b"\n")[:-1]
            if not new:
                return known
            return {"lines": known["lines"] + len(new), "bytes": known["bytes"] + sum(len(x) + 1 for x in new),
                    "last": chain_hash(new[-1])}
    lines = _lines(path)
    if not lines:
        return None
    return {"lines": len(lines), "bytes": sum(len(x) + 1 for x in lines), "last": chain_hash(lines[-1])}


class _Folded:
    """The folded checkpoint state of one checkpoint file as far as it was read (the file only grows: it is never
    compacted, `verify --head` finds a head by its line)."""
    __slots__ = ("pos", "state", "hashes")

    def __init__(self) -> None:
        self.pos = Growing()
        self.state: dict[str, dict[str, Any]] = {}
        self.hashes: list[str] = []


def read_checkpoints(root: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(folded state of every stream at the last checkpoint, chain hash of every checkpoint line).

    Incremental (eventlog/store/growing.py), as the JS writer's `folded`: one checkpoint per seal, tens of thousands a year,
    each reads only what was appended since the last. The returned objects are the cache's own: do not change them."""
    key = os.fspath(root / CHECKPOINTS)
    c = _cache.get(key) or _Folded()
    got = c.pos.read(key)
    if got is None:
        _cache.pop(key, None)
        return {}, []
    restarted, lines = got
    if restarted:
        c.state, c.hashes = {}, []
    for line in lines:
        c.hashes.append(chain_hash(line))
        _fold(c.state, line)
    _cache[key] = c
    return c.state, c.hashes


def _fold(state: dict[str, dict[str, Any]], line: bytes) -> str | None:
    """Apply one checkpoint line to `state`; returns why it is malformed, or None."""
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "checkpoint is not valid JSON"
    if not isinstance(rec, dict) or rec.get("event") != "log:checkpoint" or not isinstance(rec.get("streams"), dict):
        return "not a log:checkpoint record"
    for rel, s in rec["streams"].items():
        if (not isinstance(s, dict) or not all(isinstance(s.get(k), int) and not isinstance(s.get(k), bool)
                                               for k in ("lines", "bytes"))
                or not isinstance(s.get("last"), str) or not COMMIT_RE.fullmatch(s["last"])):
            return f"checkpoint entry for {str(rel)[:80]} is malformed"
        state[rel] = {"lines": s["lines"], "bytes": s["bytes"], "last": s["last"]}
    return None


def checkpoint(log: "EventLog") -> str | None:
    """Append a checkpoint if any covered stream changed since the last one. Returns the head (None: empty log)."""
    root = log.root
    (root / "seals").mkdir(mode=0o700, exist_ok=True)
    with FileLock(f"{root}/{CHECKPOINTS}.hold"):  # one checkpointer at a time: each record builds on the last
        state, hashes = read_checkpoints(root)
        changed = {}
        for rel in covered_streams(root):
            now = _state(root / rel, state.get(rel))
            if now is not None and now != state.get(rel):
                changed[rel] = now
        if changed:
            ts = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            log.append_stream(CHECKPOINTS, [{"event": "log:checkpoint", "channel": "system", "chat_id": "eventlog",
                                             "ts": ts, "streams": changed}])
            state, hashes = read_checkpoints(root)
    return hashes[-1] if hashes else None


def verify_head(root: Path, head: str) -> list[Problem]:
    """Everything that keeps the log from extending `head` (empty: it does)."""
    head = head.strip().lower()
    if not COMMIT_RE.fullmatch(head):
        raise EventlogError(f"not a head hash (64 hex characters): {head[:80]!r}")
    path = root / CHECKPOINTS
    if not path.is_file():
        return [Problem(CHECKPOINTS, 0, f"checkpoint file is missing: cannot find head {head[:12]}…")]
    state: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    found = False
    for n, line in enumerate(_lines(path), 1):
        why = _fold(state, line)
        if why:
            problems.append(Problem(CHECKPOINTS, n, why))
        if chain_hash(line) == head:
            found = True
            break
    if not found:
        return problems + [Problem(CHECKPOINTS, 0, f"head {head[:12]}… is not in the checkpoint file (lines "
                                                   "deleted from it, the file replaced, or a head of another log)")]
    for rel, want in sorted(state.items()):
        p = root / rel
        if not p.is_file():
            problems.append(Problem(rel, 0, f"missing (the head recorded {want['lines']} lines)"))
            continue
        lines = _lines(p)
        n = want["lines"]
        if len(lines) < n:
            problems.append(Problem(rel, len(lines), f"truncated: {len(lines)} lines, the head recorded {n}"))
        elif chain_hash(lines[n - 1]) != want["last"]:
            problems.append(Problem(rel, n, f"line {n} no longer matches the head (edited or replaced)"))
    return problems
