"""Every recall on the record: one `recall:query` event per tool call on the system stream (channel `system`, chat
`eventlog`), written through the public writer so misroutes can be reviewed and retrieval tuned on real traffic.

What the model asked goes into the content field `args`, who asked into `from` and the hit ids (with the turns shown
beside them, `context_ids`) into `payload` (the brief's content fields: store format v2 commits to them by salted
hash, so `forget` can erase a call about an erased chat — eventlog/ops/trail.py); everything else — tool, scope, chat, hit count, latency, mode, whether it failed — is
metadata. The `origin` object says which gateway context fields the chat scope came from (names only).
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import EventlogError


def recall_event(req: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "event": "recall:query", "channel": "system", "chat_id": "eventlog",
        "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "tool": f"eventlog_{req.get('tool')}", "args": req.get("args") or {},
        "scope": out.get("scope"), "scope_chat": out.get("chat"), "scope_account": req.get("account") or "default",
        "hits": out.get("hits", 0),
        "payload": {"ids": out.get("ids") or []}, "latency_ms": out.get("latency_ms"), "ok": bool(out.get("ok")),
    }
    if out.get("context_ids"):
        ev["payload"]["context_ids"] = out["context_ids"]
    if req.get("requester") is not None:
        ev["from"] = {"id": str(req["requester"])}
    for k in ("mode", "mode_used"):
        if out.get(k):
            ev[k] = out[k]
    if isinstance(req.get("origin"), dict):
        ev["origin"] = {k: v for k, v in req["origin"].items() if isinstance(v, (str, bool, int)) or v is None}
    if out.get("error_kind"):
        ev["error_kind"] = out["error_kind"]  # the message itself may quote the model's arguments: not metadata
    return ev


def record_query(root: Path, req: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Append the event; a failure is returned (and shown to the operator), never raised into the model's turn."""
    from ..store.writer import EventLog

    try:
        EventLog(root).append(recall_event(req, out))
    except (EventlogError, OSError) as exc:
        return f"recall:query not recorded: {exc}"
    return None
