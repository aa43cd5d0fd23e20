"""One alert per leak: the decision shared with the JS tap (eventlog/patches/openclaw/runtime/dlp-alerts.mjs).

A streaming reply is sent once and then edited every second or so; each edit carries a longer prefix of the same
secret, so each has its own fingerprint. Within one outbound message (same chat, same Telegram message_id), a finding
of the same rule and field whose span overlaps an alert already raised for that message, and that begins with the same
characters (`head`: a hash of the first 16 characters, kept in memory only), is the same leak: it reuses that alert,
and when the secret grew (a longer span) the alert is updated with the longer fingerprint — an append-only
`dlp:alert:update` event, projected by eventlog.dlp.alerts.project(). A different message is a new alert.
Vectors: tests/vectors/dlp/alert_merge.json (both engines).
"""
from __future__ import annotations

import hashlib
import hmac
from collections import OrderedDict
from typing import Any

MAX_MESSAGES = 4096  # messages remembered (oldest forgotten first)
HEAD = 16  # characters of a secret that identify it across edits


def head_of(text: str, start: int, key: bytes = b"") -> str:
    """The identity of the secret starting at `start` (code points) across edits: its first 16 characters, keyed-hashed
    (HMAC with the install's DLP key when stored in an alert, so a short password's head cannot be brute-forced)."""
    return hmac.new(key, text[start:start + HEAD].encode("utf-8"), hashlib.sha256).hexdigest()[:16]


class AlertMerger:
    def __init__(self, max_messages: int = MAX_MESSAGES) -> None:
        self._by_msg: OrderedDict[tuple[str, str], list[dict[str, Any]]] = OrderedDict()
        self._max = max_messages

    def decide(self, chat: Any, message_id: Any, rule: str, start: int, end: int, field: str = "text",
               head: str = "") -> tuple[str, str | None]:
        """("new", None) | ("same", alert id) | ("update", alert id). An update has already been recorded here."""
        if message_id is None or chat is None:
            return "new", None
        for a in self._by_msg.get((str(chat), str(message_id)), []):
            if (a["rule"] == rule and a["field"] == field and a["head"] == head and start < a["end"]
                    and a["start"] < end):
                if end - start > a["end"] - a["start"]:
                    a["start"], a["end"] = start, end
                    return "update", a["id"]
                return "same", a["id"]
        return "new", None

    def add(self, chat: Any, message_id: Any, rule: str, start: int, end: int, alert_id: str, field: str = "text",
            head: str = "") -> None:
        if message_id is None or chat is None:
            return
        key = (str(chat), str(message_id))
        self._by_msg.setdefault(key, []).append({"rule": rule, "start": start, "end": end, "id": alert_id,
                                                 "field": field, "head": head})
        self._by_msg.move_to_end(key)
        while len(self._by_msg) > self._max:
            self._by_msg.popitem(last=False)
