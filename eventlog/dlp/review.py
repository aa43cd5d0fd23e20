"""Review helpers: the masked conversation around an alert, and the interactive y/n/s/b/q loop (detect-secrets'
`audit` style). Verdicts are recorded through alerts.review(), which appends events; nothing is edited."""
from __future__ import annotations

from collections import deque
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

from ..store.layout import log_files
from ..store import render
from ..store.reader import iter_file_events
from . import alerts as al
from .engine import Scanner


def _day(ts: Any) -> date | None:
    try:
        return date.fromisoformat(str(ts)[:10])
    except ValueError:
        return None


def _masked_text(scanner: Scanner, ev: dict[str, Any], alert: dict[str, Any] | None) -> str:
    text = ev.get("text")
    if not isinstance(text, str):
        return ""
    html = isinstance(ev.get("payload"), dict) and str(ev["payload"].get("parse_mode", "")).upper() == "HTML"
    findings = [f.to_dict() for f in scanner.scan(text, html=html).findings]
    if alert is not None and alert.get("field", "text") == "text":
        s, e = alert.get("start"), alert.get("end")
        # the alert's own span is masked even if today's rules (or the allowlist) would not find it again
        if isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(text) \
                and not any(f["start"] < e and s < f["end"] for f in findings):
            findings.append({"rule": alert.get("rule"), "start": s, "end": e, "action": "redact"})
    masked, _ = scanner.redact(text, [dict(f, action="redact") for f in findings], html=html)
    return masked


def _row(scanner: Scanner, ev: dict[str, Any], alert: dict[str, Any], target: bool) -> dict[str, Any]:
    return {"type": "message", "id": ev.get("id"), "ts": ev.get("ts"), "direction": ev.get("direction"),
            "event": ev.get("event"), "sender": render.sender(ev),
            "text": _masked_text(scanner, ev, alert if target else None), "is_alert_event": target}


def conversation(root: Path, scanner: Scanner, alert: dict[str, Any], context: int = 3) -> list[dict[str, Any]]:
    """`context` messages before and after the alert's log event (same chat, the alert's day ± 1), masked."""
    target = alert.get("log_event")
    day = _day(alert.get("event_ts") or alert.get("ts"))
    chat = alert.get("chat_id")
    if not target or day is None or not isinstance(chat, str):
        return []
    before: deque[dict[str, Any]] = deque(maxlen=max(context, 0))
    out: list[dict[str, Any]] = []
    after = -1
    for lf in log_files(root, chat, day - timedelta(days=1), day + timedelta(days=1), alert.get("channel")):
        for ev in iter_file_events(lf):
            if after >= 0:
                if after >= context:
                    return out
                out.append(_row(scanner, ev, alert, False))
                after += 1
            elif ev.get("id") == target:
                out = [_row(scanner, e, alert, False) for e in before] + [_row(scanner, ev, alert, True)]
                after = 0
            elif context > 0:
                before.append(ev)
    return out


PROMPT = "[y] real (stays open)  [f] false positive  [r] revoked  [w] won't fix  [t] used in tests  [s] skip  [b] back  [q] quit"
KEYS = {"y": "true_positive", "n": "false_positive", "f": "false_positive", "r": "revoked", "w": "wont_fix",
        "t": "used_in_tests"}
NOTE_PROMPT = "note (optional, never the secret itself)"


def loop(root: Path, reviewer: str | None, echo: Callable[[str], None], ask: Callable[[str], str],
         scanner: Scanner | None = None, show_ts: Callable[[Any], str] = str) -> int:
    """Walk the unreviewed alerts; each answer records a resolution (GitHub's words) and an optional note. A note in
    which the scanner finds a secret is refused and asked again. Returns how many reviews were recorded. `show_ts`
    renders a ts (the CLI: in the user's zone)."""
    from ..errors import BadEvent
    from .engine import open_scanner

    scanner = scanner or open_scanner(root)
    queue = [s.alert for s in al.project(root) if s.verdict is None]
    if not queue:
        echo("no unreviewed alerts")
        return 0
    i = done = 0
    while 0 <= i < len(queue):
        a = queue[i]
        echo(f"\n[{i + 1}/{len(queue)}] {a['id']} {show_ts(a.get('ts'))} {a.get('rule')} ({a.get('severity')}) "
             f"{a.get('direction')} chat {a.get('chat_id')} action {a.get('action')}: {a.get('masked')}")
        for m in conversation(root, scanner, a, 2):
            echo(f"  {'>>' if m['is_alert_event'] else '  '} {show_ts(m['ts'])} {m['direction'] or '?'} {m['text']}")
        ans = ask(PROMPT).strip().lower()[:1]
        if ans == "q":
            break
        if ans == "b":
            i = max(0, i - 1)
            continue
        if ans in KEYS:
            verdict = KEYS[ans]
            while True:
                note = ask(NOTE_PROMPT).strip()
                try:
                    al.review(root, a["id"], verdict, note, reviewer, scanner=scanner)
                    break
                except BadEvent as exc:
                    echo(f"  ! {exc}")
            done += 1
            echo(f"  → {verdict}" + (f" ({note})" if note else ""))
        i += 1
    return done
