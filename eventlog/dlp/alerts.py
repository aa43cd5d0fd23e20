"""DLP alerts and reviews, event-sourced: two append-only streams under the log root and a projection over them.

dlp/alerts.jsonl holds `dlp:alert` events (written by the JS tap and by `eventlog dlp scan --log`), dlp/reviews.jsonl
holds `dlp:review` events. Nothing is edited in place: an alert's state is computed from the latest review of it, and
the allowlist (dlp/allowlist.json) is rebuilt from that projection after each review. Shapes: docs/dlp.md.

What is derived from the secret itself — the keyed fingerprint, the masked preview, the keyed head a re-scan merges
by — is stored inside the alert's `payload`, a content field: store format v2 commits to it by salted hash, so
`forget` erases it with the chain intact, and no fingerprint of an erased chat is left to test guesses against (the
key stays in the root, docs/dlp.md). Readers see the fields at the top level as before (`stored` / `shown`).
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from ..errors import BadEvent, EventlogError
from ..store.reader import iter_lines
from .engine import Finding
from .keys import write_allowlist

ALERTS = "dlp/alerts.jsonl"
REVIEWS = "dlp/reviews.jsonl"
# GitHub secret-scanning vocabulary: an alert is open or resolved; a resolution is one of false_positive, wont_fix,
# revoked, used_in_tests. `true_positive` records "confirmed real" and keeps the alert open (the secret still needs
# revoking). Stored with underscores; hyphenated spellings (and records written before) are read as the same.
VERDICTS = ("true_positive", "false_positive", "revoked", "wont_fix", "used_in_tests")
RESOLUTIONS = ("false_positive", "wont_fix", "revoked", "used_in_tests")
REAL = {"true_positive", "revoked", "wont_fix", "used_in_tests"}  # verdicts that say "this was a real secret"
STILL_OPEN = {None, "true_positive"}
SPELLINGS = VERDICTS + tuple(v.replace("_", "-") for v in VERDICTS)
SECRET_DERIVED = ("fingerprint", "masked", "head")  # kept in `payload`: erasable (the JS tap does the same)


def stored(ev: dict[str, Any]) -> dict[str, Any]:
    """The alert as written: what is derived from the secret moved into `payload`."""
    sealed = {k: ev[k] for k in SECRET_DERIVED if ev.get(k) is not None}
    if not sealed:
        return ev
    out = {k: v for k, v in ev.items() if k not in SECRET_DERIVED}
    out["payload"] = {**(ev.get("payload") or {}), **sealed}
    return out


def shown(ev: dict[str, Any]) -> dict[str, Any]:
    """The alert as read: `payload`'s fields at the top level (alerts written before the move have them there)."""
    payload = ev.get("payload")
    if not isinstance(payload, dict) or not any(k in payload for k in SECRET_DERIVED):
        return ev  # no payload, or an erased one ({"c": …}): nothing derived from the secret is left
    return {**ev, **{k: payload[k] for k in SECRET_DERIVED if k in payload}}


def normalize_verdict(v: Any) -> str | None:
    """`false-positive` / `false_positive` / `FALSE_POSITIVE` → `false_positive`; anything else → None."""
    if not isinstance(v, str):
        return None
    n = v.strip().lower().replace("-", "_")
    return n if n in VERDICTS else None


def now_ts() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_alert(finding: Finding, *, channel: str, chat_id: str, direction: str, action: str, source: str,
               log_event: str | None, field: str = "text", ts: str | None = None, rules_version: int = 1,
               **extra: Any) -> dict[str, Any]:
    """A `dlp:alert` event for one finding. Carries the fingerprint and the masked preview — never the secret.
    `ts` is the time of the scanned event (a re-scan of last month's message says last month), `detected_at` when
    the finding was made."""
    detected = now_ts()
    ev = {
        "event": "dlp:alert", "ts": ts or extra.get("event_ts") or detected, "detected_at": detected, "channel": channel, "chat_id": str(chat_id),
        "direction": direction, "rule": finding.rule, "severity": finding.severity, "action": action,
        "fingerprint": finding.fingerprint, "masked": finding.masked, "start": finding.start, "end": finding.end,
        "field": field, "log_event": log_event, "source": source, "rules_version": rules_version,
        "tier": getattr(finding, "tier", "confirmed"),
    }
    ev.update({k: v for k, v in extra.items() if v is not None})
    return ev


def iter_stream(root: Path, relpath: str, problems: list[str] | None = None) -> Iterator[dict[str, Any]]:
    path = root / relpath
    if not path.exists():
        return
    for lineno, line in iter_lines(path, relpath, (lambda p: problems.append(str(p))) if problems is not None else None):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if problems is not None:
                problems.append(f"{relpath}:{lineno}: not valid JSON")
            continue
        if isinstance(obj, dict):
            yield shown(obj)


@dataclass
class AlertState:
    alert: dict[str, Any]
    reviews: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        aid: str = self.alert["id"]  # project() keeps only alerts with an id
        return aid

    @property
    def verdict(self) -> str | None:
        return normalize_verdict(self.reviews[-1].get("verdict")) if self.reviews else None

    @property
    def state(self) -> str:
        return "open" if self.verdict in STILL_OPEN else "resolved"

    @property
    def resolution(self) -> str | None:
        return self.verdict if self.verdict in RESOLUTIONS else None

    def to_dict(self) -> dict[str, Any]:
        a = self.alert
        last = self.reviews[-1] if self.reviews else {}
        return {
            "type": "alert", "id": a["id"], "ts": a.get("ts"), "detected_at": a.get("detected_at") or a.get("ts"),
            "state": self.state, "resolution": self.resolution, "verdict": self.verdict,
            "updates": a.get("updates", 0),
            "rule": a.get("rule"), "severity": a.get("severity"), "action": a.get("action"),
            # alerts written before the two tiers (issue 25) came from exact-format rules only
            "tier": a.get("tier") or "confirmed",
            "direction": a.get("direction"), "channel": a.get("channel"), "chat_id": a.get("chat_id"),
            "masked": a.get("masked"), "fingerprint": a.get("fingerprint"), "log_event": a.get("log_event"),
            "method": a.get("method"), "source": a.get("source"), "note": last.get("note"),
            "reviewer": last.get("reviewer"), "reviewed_at": last.get("ts"),
        }


def project(root: Path, problems: list[str] | None = None) -> list[AlertState]:
    """Every alert with its reviews, in alert order. Reviews apply in stream order; the latest wins."""
    states: dict[str, AlertState] = {}
    for a in iter_stream(root, ALERTS, problems):
        if a.get("event") == "dlp:alert" and isinstance(a.get("id"), str):
            states[a["id"]] = AlertState(dict(a))
        elif a.get("event") == "dlp:alert:update" and a.get("alert") in states:
            # one alert per leak: the secret grew across preview edits; the alert takes the longer fingerprint
            st = states[a["alert"]]
            for k in ("fingerprint", "masked", "start", "end", "field"):
                if k in a:
                    st.alert[k] = a[k]
            st.alert["updates"] = st.alert.get("updates", 0) + 1
            st.alert["updated_at"] = a.get("ts")
    for r in iter_stream(root, REVIEWS, problems):
        aid = r.get("alert")
        reviewed = states.get(aid) if r.get("event") == "dlp:review" and isinstance(aid, str) else None
        if reviewed is not None and normalize_verdict(r.get("verdict")) is not None:
            reviewed.reviews.append(r)
    return list(states.values())


def select(states: Iterable[AlertState], state: str | None = None, rule: str | None = None,
           chat: str | None = None, resolution: str | None = None, direction: str | None = None,
           severity: str | None = None, since: datetime | None = None, tier: str | None = None,
           until: datetime | None = None) -> list[AlertState]:
    """Alerts matching every given filter. `resolution` takes a resolution or `none` (unresolved), either spelling;
    `since`/`until` are aware instants, [since, until), compared with the event's time (`ts`) as a time."""
    want = None
    if resolution is not None:
        want = "none" if resolution.strip().lower() == "none" else normalize_verdict(resolution)
        if want is None:
            raise BadEvent(f"resolution must be one of {', '.join(RESOLUTIONS)} or none")
    return [s for s in states if (state is None or s.state == state) and (rule is None or s.alert.get("rule") == rule)
            and (chat is None or str(s.alert.get("chat_id")) == chat)
            and (want is None or (s.resolution or "none") == want or (want == "true_positive" and s.verdict == want))
            and (direction is None or s.alert.get("direction") == direction)
            and (severity is None or s.alert.get("severity") == severity)
            and (since is None and until is None or in_period(s.alert.get("ts"), since, until))
            and (tier is None or (s.alert.get("tier") or "confirmed") == tier)]


def in_period(ts: Any, since: datetime | None, until: datetime | None) -> bool:
    """Whether an RFC 3339 `ts` is in [since, until) (aware instants, either None), compared as a time."""
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00")) if isinstance(ts, str) else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        return False  # an alert without a readable time is in no period
    return (since is None or t >= since) and (until is None or t < until)


def find(states: list[AlertState], alert_id: str) -> AlertState:
    """By full id or a unique prefix (ids are ULIDs; 8+ characters are usually enough)."""
    exact = [s for s in states if s.id == alert_id]
    if exact:
        return exact[0]
    hits = [s for s in states if s.id.startswith(alert_id.upper())] if len(alert_id) >= 4 else []
    if len(hits) == 1:
        return hits[0]
    raise BadEvent(f"no alert {alert_id!r}" if not hits else f"alert id {alert_id!r} is ambiguous ({len(hits)} match)")


def default_reviewer() -> str:
    try:
        return os.environ.get("EVENTLOG_REVIEWER") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def review(root: Path, alert_id: str, verdict: str, note: str = "", reviewer: str | None = None,
           scanner: Any = None) -> dict[str, Any]:
    """Append a `dlp:review` event and rebuild the allowlist from the new projection. A note that itself contains a
    secret (the scanner finds something in it) is refused: the review stream must not become the leak."""
    from ..store.writer import EventLog  # late import: keeps `eventlog dlp scan` of plain texts light

    v = normalize_verdict(verdict)
    if v is None:
        raise BadEvent(f"resolution must be one of {', '.join(VERDICTS)} (hyphens or underscores)")
    verdict = v
    if note:
        if scanner is None:
            from .engine import open_scanner
            scanner = open_scanner(root)
        found = scanner.scan(note).findings
        if found:
            raise BadEvent(f"the note contains what looks like a secret ({', '.join(sorted({f.rule for f in found}))}): "
                           "not recorded; describe it without the value")
    states = project(root)
    st = find(states, alert_id)
    ev = {"event": "dlp:review", "ts": now_ts(), "channel": st.alert.get("channel", "telegram"),
          "chat_id": str(st.alert.get("chat_id")), "alert": st.id, "verdict": verdict, "note": note,
          "reviewer": reviewer or default_reviewer(), "rule": st.alert.get("rule")}
    written = EventLog(root).append_stream(REVIEWS, [ev]).events[0]
    st.reviews.append(written)
    rebuild_allowlist(root, states)
    return written


def rebuild_allowlist(root: Path, states: list[AlertState]) -> Path:
    entries: dict[str, dict[str, Any]] = {}
    for s in states:
        if s.verdict == "false_positive" and s.alert.get("fingerprint"):
            last = s.reviews[-1]
            entries.setdefault(s.alert["fingerprint"], {"fingerprint": s.alert["fingerprint"], "rule": s.alert.get("rule"),
                                                        "alert": s.id, "ts": last.get("ts")})
    # a fingerprint confirmed real by another alert's later verdict wins over a stale false-positive
    for s in states:
        if s.verdict in REAL and s.alert.get("fingerprint") in entries:
            fp_entry = entries[s.alert["fingerprint"]]
            if (s.reviews[-1].get("ts") or "") > (fp_entry.get("ts") or ""):
                del entries[s.alert["fingerprint"]]
    return write_allowlist(root, sorted(entries.values(), key=lambda e: e["fingerprint"]))


def stats(states: Iterable[AlertState]) -> list[dict[str, Any]]:
    """Per rule: alerts, open, resolved, verdict counts and precision = real / (real + false-positive)."""
    rows: dict[str, dict[str, Any]] = {}
    for s in states:
        rule = s.alert.get("rule") or "?"
        row = rows.setdefault(rule, {"type": "rule-stats", "rule": rule, "alerts": 0, "open": 0, "resolved": 0,
                                     "unreviewed": 0, **{v: 0 for v in VERDICTS}, "precision": None})
        row["alerts"] += 1
        row[s.state] += 1
        if s.verdict is None:
            row["unreviewed"] += 1
        else:
            row[s.verdict] += 1
    for row in rows.values():
        real = sum(row[v] for v in REAL)
        judged = real + row["false_positive"]
        row["precision"] = round(real / judged, 4) if judged else None
    return sorted(rows.values(), key=lambda r: (-r["alerts"], r["rule"]))


def append_alerts(root: Path, alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not alerts:
        return []
    from ..store.writer import EventLog

    try:
        return [shown(e) for e in EventLog(root).append_stream(ALERTS, [stored(a) for a in alerts]).events]
    except BadEvent as exc:
        raise EventlogError(f"cannot write alerts: {exc}") from None
