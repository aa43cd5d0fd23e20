"""`eventlog dlp scan` as a library: texts, JSON Lines input, and re-scans of the stored log that raise alerts.

A re-scan streams the log (never loads it whole) in batches of events; plain texts of a batch go through one regex pass
(Scanner.scan_batch), and only the texts with a candidate are scanned again on their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

from ..errors import BadEvent
from ..store.layout import utc_days
from ..store.reader import OnProblem, iter_events
from .alerts import ALERTS, append_alerts, in_period, iter_stream, make_alert, now_ts
from .merge import AlertMerger, head_of
from .engine import Finding, Scanner
from .keys import load_key

BATCH = 2000


@dataclass
class LogHit:
    event: dict[str, Any]
    finding: Finding
    alert_id: str | None  # id of the alert raised now, or of the alert that already existed
    new: bool


def finding_row(item_id: Any, f: Finding) -> dict[str, Any]:
    return {"id": item_id, "rule": f.rule, "start": f.start, "end": f.end, "severity": f.severity, "action": f.action,
            "tier": f.tier}


def iter_jsonl(fp: IO[bytes], name: str) -> Iterator[tuple[Any, str, bool]]:
    """(id, text, html) per input line `{"id": …, "text": …, "html"?: bool}`; a bad line raises BadEvent naming it."""
    for lineno, line in enumerate(fp, 1):
        line = line.rstrip(b"\r\n")
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadEvent(f"{name}:{lineno}: invalid JSON ({exc})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            raise BadEvent(f"{name}:{lineno}: expected an object with a string `text`")
        yield obj.get("id", lineno), obj["text"], bool(obj.get("html", False))


def _direction(ev: dict[str, Any]) -> str:
    d = ev.get("direction")
    if d in ("in", "out"):
        return str(d)
    return "in" if ev.get("event") == "message:received" else "out"


def _is_html(ev: dict[str, Any]) -> bool:
    payload = ev.get("payload")
    return isinstance(payload, dict) and str(payload.get("parse_mode", "")).upper() == "HTML"


def scan_log(root: Path, scanner: Scanner, *, chat: str | None = None, since: datetime | None = None,
             until: datetime | None = None, raise_alerts: bool = True,
             on_problem: OnProblem | None = None) -> Iterator[LogHit]:
    """Every finding in the `text` of the stored events with ts in [since, until) (aware instants; the day files
    that can hold them are read). New findings (not already alerted for the same event, rule and span) become
    `dlp:alert` events with source "scan" and action "none"."""
    if raise_alerts:
        # Alerts persist fingerprints: they must come from the root's own key (made now if missing), never from the
        # ephemeral key a scanner opened on a root without one gets — or a re-scan would not recognise its alerts.
        key = load_key(root, create=True)
        if scanner.key != key:
            scanner = Scanner(scanner.rules, key, scanner.allowlist)
    known: dict[tuple[Any, ...], str | None] = {}  # (event id, rule, start, end) -> alert id, as read
    merger = AlertMerger()
    seeds: dict[Any, dict[str, Any]] = {}
    for a in iter_stream(root, ALERTS):
        ev_kind = a.get("event")
        if ev_kind not in ("dlp:alert", "dlp:alert:update"):
            continue
        aid = a.get("id") if ev_kind == "dlp:alert" else a.get("alert")
        known[(a.get("log_event"), a.get("rule"), a.get("start"), a.get("end"))] = aid
        if a.get("head") and (ev_kind == "dlp:alert" or aid in seeds):
            seeds[aid] = {**seeds.get(aid, {}), **{k: a.get(k) for k in ("chat_id", "message_id", "rule", "start",
                                                                         "end", "head")}}
    for aid, sd in seeds.items():  # a re-scan continues the merging of the previous one
        merger.add(sd["chat_id"], sd["message_id"], sd["rule"], sd["start"], sd["end"], aid, "text", sd["head"])
    batch: list[dict[str, Any]] = []

    def flush() -> Iterator[LogHit]:
        found = scanner.scan_batch([ev["text"] for ev in batch], [_is_html(ev) for ev in batch])
        hits: list[LogHit] = []
        for ev, findings in zip(batch, found, strict=True):
            for f in findings:
                key = (ev.get("id"), f.rule, f.start, f.end)
                if key in known or not raise_alerts:
                    hits.append(LogHit(ev, f, known.get(key), False))
                    continue
                # one alert per leak: a secret growing across edits of one outbound message is one alert, updated
                mid = ev.get("message_id") if _direction(ev) == "out" else None
                head = head_of(ev["text"], f.start, scanner.key)
                kind, aid = merger.decide(ev["chat_id"], mid, f.rule, f.start, f.end, "text", head)
                if kind == "update":
                    append_alerts(root, [{"event": "dlp:alert:update", "channel": ev.get("channel", "telegram"),
                                          "chat_id": ev["chat_id"], "alert": aid, "rule": f.rule,
                                          "fingerprint": f.fingerprint, "masked": f.masked, "start": f.start,
                                          "end": f.end, "field": "text", "log_event": ev.get("id"),
                                          "event_ts": ev.get("ts"), "source": "scan", "ts": now_ts(),
                                          "message_id": mid, "head": head}])
                if kind != "new":
                    known[key] = aid
                    hits.append(LogHit(ev, f, aid, False))
                    continue
                alert = make_alert(f, channel=ev.get("channel", "telegram"), chat_id=ev["chat_id"],
                                   direction=_direction(ev), action="none", source="scan",
                                   log_event=ev.get("id"), event_ts=ev.get("ts"),
                                   message_id=ev.get("message_id"), method=ev.get("method"),
                                   rules_version=scanner.rules.version, head=head if mid is not None else None)
                written = append_alerts(root, [alert])[0]
                known[key] = written["id"]
                merger.add(ev["chat_id"], mid, f.rule, f.start, f.end, written["id"], "text", head)
                hits.append(LogHit(ev, f, written["id"], True))
        batch.clear()
        yield from hits

    keep = ("id", "ts", "event", "channel", "chat_id", "direction", "message_id", "method")
    timed = since is not None or until is not None
    for ev in iter_events(root, chat, *utc_days(since, until), on_problem):
        if timed and not in_period(ev.get("ts"), since, until):
            continue
        if isinstance(ev.get("text"), str) and ev["text"] and "chat_id" in ev:
            # hold only what an alert needs: a batch of whole events (raw updates included) costs more to keep
            # than to scan
            slim = {k: ev[k] for k in keep if k in ev}
            slim["text"] = ev["text"]
            if _is_html(ev):
                slim["payload"] = {"parse_mode": "HTML"}
            batch.append(slim)
            if len(batch) >= BATCH:
                yield from flush()
    if batch:
        yield from flush()
