"""What the page reads besides the timeline, through the same library calls as the CLI: the chat list (the recall
`chats` view, read-only DuckDB), search (`eventlog.search.search` with grep for the text modes, as `eventlog search`),
the alert queue (`dlp.alerts.project` / `select`, as `eventlog dlp alerts`), an alert's masked context (as `eventlog
dlp show`) and a resolution (`dlp.alerts.review`, as `eventlog dlp review ID --resolution R --note N`)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any, Callable

from ..dlp import alerts as al
from ..errors import BadEvent, EventlogError
from ..recall import when
from ..recall.query import MEMORY_LIMIT, connect, duckdb_errors, scope_from

SEARCH_MODES = ("hybrid", "text", "fuzzy", "bm25", "vector", "rrf")
DEFAULT_MODE = "hybrid"  # `eventlog search`'s default
SEARCH_LIMIT = 20
ALERT_FILTERS = ("state", "resolution", "rule", "severity", "direction", "chat", "since", "until", "tier")
_CHOICES = {"state": ("open", "resolved"), "direction": ("in", "out"),
            "severity": ("critical", "high", "medium", "low"), "tier": ("confirmed", "near_format")}


class NotFound(EventlogError):
    """A chat, alert or page that does not exist (HTTP 404)."""


def _utc(t: Any) -> Any:
    return t.replace(tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" if isinstance(t, datetime) else t


def chats(root: Path, redact: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """Every chat of every channel and account, the most recently active first (the `chats` view)."""
    con, _ = connect(scope_from(root, None, None, None), memory_limit=MEMORY_LIMIT, views=("events", "chats"))
    try:
        with duckdb_errors():
            cur = con.execute("SELECT channel, chat_id, account, title, type, username, first_seen, last_seen, "
                              "received, sent, events FROM chats ORDER BY last_seen DESC, chat_id, account")
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()
    for r in rows:
        r["title"], r["username"] = redact(r["title"]), redact(r["username"])
        r["first_seen"], r["last_seen"] = _utc(r["first_seen"]), _utc(r["last_seen"])
    return rows


@dataclass
class SearchAnswer:
    mode: str
    notes: list[str]
    hits: list[dict[str, Any]]


def search(root: Path, text: str, redact: Callable[[Any], Any], *, mode: str = DEFAULT_MODE,
           chat: str | None = None, account: str | None = None, limit: int = SEARCH_LIMIT) -> SearchAnswer:
    """`eventlog search TEXT --mode MODE [--chat C] [--account A] --limit N`, hits redacted."""
    from ..recall.grep import newest
    from ..search import SearchQuery, search as run

    if mode not in SEARCH_MODES:
        raise EventlogError(f"unknown search mode {mode!r} (one of {', '.join(SEARCH_MODES)})")
    res = run(root, SearchQuery(text, mode=mode, chats=(chat,) if chat else None, accounts=(account,) if account
                                else None, limit=max(1, min(limit, 200))), text_scan=newest)
    hits = []
    for h in res.hits:
        d = h.as_json()
        d["text"], d["sender"] = redact(d["text"]), redact(d["sender"])
        d["chunk"] = None  # offsets into the unredacted text: meaningless once masked
        hits.append(d)
    return SearchAnswer(res.mode, list(res.notes), hits)


def alert_filters(params: dict[str, str], tz: tzinfo) -> dict[str, Any]:
    """The query's alert filters as `dlp.alerts.select` takes them; empty values are no filter. since/until are the
    time grammar of `--since/--until`, in the user's zone."""
    f: dict[str, Any] = {}
    for k in ALERT_FILTERS:
        v = (params.get(k) or "").strip()
        if not v:
            continue
        if k in _CHOICES and v not in _CHOICES[k]:
            raise EventlogError(f"{k} must be one of {', '.join(_CHOICES[k])}")
        f[k] = v
    if "since" in f:
        f["since"] = when.since(f["since"], tz)
    if "until" in f:
        f["until"] = when.until(f["until"], tz)
    when.check_order(f.get("since"), f.get("until"))
    return f


def alerts(root: Path, filters: dict[str, Any], redact: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """`eventlog dlp alerts --json` with the filters: one dict per alert, newest first."""
    rows = [s.to_dict() for s in al.select(al.project(root), **filters)]
    for r in rows:
        r["note"] = redact(r["note"])
    return rows[::-1]


def alert(root: Path, alert_id: str, redact: Callable[[Any], Any], scanner: Any, context: int = 3
          ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One alert (by id or unique prefix, as the CLI) and the masked conversation around it (`dlp show`)."""
    from ..dlp.review import conversation

    try:
        st = al.find(al.project(root), alert_id)
    except BadEvent as exc:
        raise NotFound(str(exc)) from None
    d = st.to_dict()
    d["note"] = redact(d["note"])
    d["reviews"] = [{k: (redact(r.get(k)) if k == "note" else r.get(k)) for k in ("id", "ts", "verdict", "note",
                                                                                   "reviewer")} for r in st.reviews]
    msgs = conversation(root, scanner, st.alert, context)
    for m in msgs:
        m["text"], m["sender"] = redact(m["text"]), redact(m["sender"])
    return d, msgs


def resolve(root: Path, alert_id: str, resolution: Any, note: Any) -> dict[str, Any]:
    """Record a resolution exactly as `eventlog dlp review ALERT --resolution R --note N` does (the same library
    call, the same refusal of a note that holds a secret). Returns the `dlp:review` event written."""
    if not isinstance(resolution, str) or al.normalize_verdict(resolution) is None:
        raise BadEvent(f"resolution must be one of {', '.join(al.RESOLUTIONS)} (or true_positive)")
    if note is not None and not isinstance(note, str):
        raise BadEvent("note must be a string")
    try:
        al.find(al.project(root), alert_id)
    except BadEvent as exc:
        raise NotFound(str(exc)) from None
    return al.review(root, alert_id, resolution, note or "", None)
