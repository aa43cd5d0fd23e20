"""The DLP streams' purger for `forget` (registered in ops/erasure.py): alerts in scope (their chat/day, or pointing at
an erased event) lose their content fields — `payload` holds the fingerprint, the masked preview and the keyed head
(alerts.py), so nothing derived from the secret is left to test guesses against; reviews of them lose their note;
the allowlist is rebuilt without the erased fingerprints. Rule, span, action, chat, times and ids stay: what an audit
needs. Each stream is rewritten under its lock, atomically. Alerts written before the fingerprint moved into
`payload` keep theirs (the chain covers it): docs/dlp.md, Erasure."""
from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import orjson

from ..store.commitment import erase_line, live_ids, live_object
from ..store.erased import ErasedScope
from ..store.fsutil import replace_file
from ..store.lock import FileLock
from .alerts import ALERTS, REVIEWS


def _in_scope(obj: dict[str, Any], chat: str | None, before: date | None) -> bool:
    if chat is not None and str(obj.get("chat_id")) != chat:
        return False
    ts = obj.get("event_ts") or obj.get("ts")
    return before is None or (isinstance(ts, str) and ts[:10] < before.isoformat())


def _erase(root: Path, scope: ErasedScope, dry_run: bool) -> dict[str, int]:
    alert_ids: set[str] = set()
    counts = {}
    legacy = 0  # alerts in scope written before the fingerprint moved into `payload`: the chain covers theirs
    for rel, kind in ((ALERTS, "alerts"), (REVIEWS, "reviews")):
        path = root / rel
        n = 0
        if path.is_file():
            with FileLock(f"{path}.lock"):
                data = path.read_bytes()
                end = data.rfind(b"\n") + 1
                out = []
                for line in data[:end].split(b"\n")[:-1]:
                    try:
                        obj = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        obj = None
                    hit = isinstance(obj, dict) and (
                        (kind == "alerts" and (_in_scope(obj, scope.chat, scope.before)
                                               or obj.get("log_event") in scope.event_ids))
                        or (kind == "reviews" and obj.get("alert") in alert_ids))
                    if hit and kind == "alerts" and isinstance(obj.get("id"), str):
                        alert_ids.add(obj["id"])
                        legacy += obj.get("fingerprint") is not None
                    new = erase_line(line) if hit and live_object(line) is not None else None
                    n += new is not None
                    out.append((new if new is not None else line) + b"\n")
                if n and not dry_run:
                    # a new inode: an EventLog's cached tail of the stream no longer matches it
                    replace_file(path, b"".join(out) + data[end:], "forget")
        counts[kind] = n
    if legacy:
        counts["legacy_fingerprints"] = legacy
    return counts


def plan(root: Path, scope: ErasedScope) -> dict[str, int]:
    """What `purge` would erase ({alerts, reviews}); raises if a stream holds v1 content (migrate first)."""
    for rel in (ALERTS, REVIEWS):
        if (root / rel).is_file():
            for _ in live_ids(root / rel, rel):  # refuses v1 content (migrate first)
                pass
    return _erase(root, scope, dry_run=True)


def purge(root: Path, scope: ErasedScope) -> dict[str, int]:
    from .alerts import project, rebuild_allowlist
    from .keys import allowlist_path

    counts = _erase(root, scope, dry_run=False)
    if counts["alerts"] and allowlist_path(root).exists():
        rebuild_allowlist(root, project(root))  # an erased alert's false positive no longer allowlists anything
    return counts
