"""The Starlette app: the pages and the page's JSON API (docs/web.md, "Routes"), behind web/auth.py's token gate.

Handlers are plain functions: Starlette runs them in its thread pool, where the blocking library calls (DuckDB, the
index, the review writer) belong. Every text reaches a template or a JSON answer through the Redactor; templates are
autoescaped (Jinja2, `autoescape=True`), so a message's HTML is shown as text.
"""
from __future__ import annotations

from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any

import orjson
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import BadEvent, EventlogError
from . import queries, timeline
from .auth import TokenGate
from .redact import Redactor
from .status import DoctorChecks, Status

HERE = Path(__file__).resolve().parent
ALERTS_SHOWN = 500  # the queue page shows the newest 500 that match (the API returns all, as `dlp alerts` does)
RESOLUTION_CHOICES = ("false_positive", "wont_fix", "revoked", "used_in_tests", "true_positive")


class Web:
    """What every handler needs: the root, the user's zone, the token, the redactor, the status strip."""

    def __init__(self, root: Path, tz: tzinfo, token: str, doctor: DoctorChecks | None) -> None:
        self.root, self.tz, self.token = root, tz, token
        self.redactor = Redactor(root)
        self.status = Status(root, doctor)
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters["localts"] = lambda ts: _local(ts, tz, "%Y-%m-%d %H:%M:%S")
        self.env.filters["localtime"] = lambda ts: _local(ts, tz, "%H:%M:%S")

    def page(self, name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(token=self.token, status=self.status.snapshot(),
                                                  resolutions=RESOLUTION_CHOICES, **ctx)
        return HTMLResponse(html, status_code=status_code)


def _local(ts: Any, tz: tzinfo, fmt: str) -> str:
    """An RFC 3339 UTC ts in the user's zone; anything unreadable as it is."""
    from datetime import datetime

    if not isinstance(ts, str) or not ts:
        return "" if ts is None else str(ts)
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(tz).strftime(fmt)
    except ValueError:
        return ts


def _json(obj: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS), status_code=status_code,
                    media_type="application/json")


def _web(request: Request) -> Web:
    w: Web = request.app.state.web
    return w


def _int(request: Request, name: str, default: int) -> int:
    v = request.query_params.get(name)
    if not v:
        return default
    try:
        return int(v)
    except ValueError:
        raise EventlogError(f"{name} must be a number") from None


def _timeline(request: Request) -> timeline.Page:
    w, q = _web(request), request.query_params
    return timeline.page(w.root, request.path_params["chat_id"], account=q.get("account") or None,
                         channel=q.get("channel") or None, before=q.get("before") or None,
                         after=q.get("after") or None, limit=_int(request, "limit", timeline.DEFAULT_LIMIT),
                         tz=w.tz, redact=w.redactor.text)


# -- pages ---------------------------------------------------------------------------------------------------------
def chats_page(request: Request) -> HTMLResponse:
    w = _web(request)
    return w.page("chats.html", title="Chats", chats=queries.chats(w.root, w.redactor.text))


def chat_page(request: Request) -> HTMLResponse:
    w, q = _web(request), request.query_params
    p = _timeline(request)
    accounts = sorted({m["account"] for m in p.messages})
    keep = {k: w.redactor.text(v) for k, v in (("account", q.get("account")), ("channel", q.get("channel")),
                                               ("limit", q.get("limit"))) if v}  # the paging links keep them
    shown = w.redactor.text(request.path_params["chat_id"])  # what the user typed is echoed masked too
    return w.page("chat.html", title=f"Chat {shown}", chat_id=shown, page=p, many_accounts=len(accounts) > 1, keep=keep)


def search_page(request: Request) -> HTMLResponse:
    w, q = _web(request), request.query_params
    text = q.get("q", "")
    mode = q.get("mode") or queries.DEFAULT_MODE
    answer = None
    if text.strip():
        answer = queries.search(w.root, text, w.redactor.text, mode=mode, chat=q.get("chat") or None,
                                account=q.get("account") or None,
                                limit=_int(request, "limit", queries.SEARCH_LIMIT))
    # the box shows the query masked: a key pasted into it must not come back in the page
    return w.page("search.html", title="Search", q=w.redactor.text(text), mode=mode, modes=queries.SEARCH_MODES,
                  answer=answer)


def alerts_page(request: Request) -> HTMLResponse:
    w = _web(request)
    params = dict(request.query_params)
    rows = queries.alerts(w.root, queries.alert_filters(params, w.tz), w.redactor.text)
    shown = {k: w.redactor.text(v) for k, v in params.items()}  # the filter boxes echo what was typed, masked
    return w.page("alerts.html", title="DLP alerts", alerts=rows[:ALERTS_SHOWN], more=max(0, len(rows) - ALERTS_SHOWN),
                  filters=shown)


def alert_page(request: Request) -> HTMLResponse:
    w = _web(request)
    a, ctx = queries.alert(w.root, request.path_params["alert_id"], w.redactor.text, w.redactor.scanner)
    return w.page("alert.html", title=f"Alert {a['id']}", alert=a, context=[_context_msg(m, w.tz) for m in ctx])


def _context_msg(m: dict[str, Any], tz: tzinfo) -> dict[str, Any]:
    return {**m, "local_ts": _local(m.get("ts"), tz, "%Y-%m-%d %H:%M:%S")}


# -- the JSON API --------------------------------------------------------------------------------------------------
def api_status(request: Request) -> Response:
    w = _web(request)
    if request.query_params.get("refresh"):
        w.status.refresh()
    snap = w.status.snapshot()
    # the strip shows the last event in the user's zone (the check's detail stays UTC, as doctor and verify say it)
    snap["checks"] = [{**c, "local": _local(c["detail"], w.tz, "%Y-%m-%d %H:%M:%S")}
                      if c["check"] == "last-event" and c["ok"] else c for c in snap["checks"]]
    return _json(snap)


def api_chats(request: Request) -> Response:
    w = _web(request)
    return _json({"chats": queries.chats(w.root, w.redactor.text)})


def api_messages(request: Request) -> Response:
    p = _timeline(request)
    return _json({"messages": p.messages, "older": p.older, "newer": p.newer})


def api_search(request: Request) -> Response:
    w, q = _web(request), request.query_params
    a = queries.search(w.root, q.get("q", ""), w.redactor.text, mode=q.get("mode") or queries.DEFAULT_MODE,
                       chat=q.get("chat") or None, account=q.get("account") or None,
                       limit=_int(request, "limit", queries.SEARCH_LIMIT))
    return _json({"mode": a.mode, "notes": a.notes, "hits": a.hits})


def api_alerts(request: Request) -> Response:
    w = _web(request)
    return _json({"alerts": queries.alerts(w.root, queries.alert_filters(dict(request.query_params), w.tz),
                                           w.redactor.text)})


def api_alert(request: Request) -> Response:
    w = _web(request)
    a, ctx = queries.alert(w.root, request.path_params["alert_id"], w.redactor.text, w.redactor.scanner)
    return _json({"alert": a, "context": ctx})


async def api_resolve(request: Request) -> Response:
    from starlette.concurrency import run_in_threadpool

    w = _web(request)
    try:
        body = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        raise BadEvent('the body must be JSON: {"resolution": "...", "note": "..."}') from None
    if not isinstance(body, dict):
        raise BadEvent('the body must be a JSON object: {"resolution": "...", "note": "..."}')
    aid = request.path_params["alert_id"]
    ev = await run_in_threadpool(queries.resolve, w.root, aid, body.get("resolution"), body.get("note"))
    a, _ = await run_in_threadpool(queries.alert, w.root, ev["alert"], w.redactor.text, w.redactor.scanner, 0)
    review = {k: ev.get(k) for k in ("id", "ts", "event", "alert", "verdict", "reviewer", "rule")}
    review["note"] = w.redactor.text(ev.get("note"))
    return _json({"review": review, "alert": a})


# -- errors --------------------------------------------------------------------------------------------------------
def _error(request: Request, exc: Exception) -> Response:
    code = 404 if isinstance(exc, queries.NotFound) else 400
    message = _web(request).redactor.text(str(exc))  # errors may quote what was asked
    if request.url.path.startswith("/api/"):
        return _json({"error": message}, code)
    return _web(request).page("error.html", status_code=code, title="Error", message=message)


def _not_found(request: Request, exc: Exception) -> Response:
    return _error(request, queries.NotFound("no such page"))


def create_app(root: Path, *, token: str, tz: tzinfo = timezone.utc, doctor: DoctorChecks | None = None,
               status_on_start: bool = True) -> Any:
    """The ASGI app for `eventlog serve` (and the tests), the token gate outermost. With status_on_start the status
    strip's first run starts now (in a thread)."""
    web = Web(root, tz, token, doctor)
    routes = [
        Route("/", chats_page),
        Route("/chats/{chat_id}", chat_page),
        Route("/search", search_page),
        Route("/alerts", alerts_page),
        Route("/alerts/{alert_id}", alert_page),
        Route("/api/status", api_status),
        Route("/api/chats", api_chats),
        Route("/api/chats/{chat_id}/messages", api_messages),
        Route("/api/search", api_search),
        Route("/api/alerts", api_alerts),
        Route("/api/alerts/{alert_id}", api_alert),
        Route("/api/alerts/{alert_id}/resolution", api_resolve, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={EventlogError: _error, 404: _not_found})
    app.state.web = web
    if status_on_start:
        web.status.refresh()
    return TokenGate(app, token)


