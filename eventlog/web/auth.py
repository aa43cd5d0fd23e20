"""The page's door: a random token on every request, a CSRF header on every state change, security headers on every
answer (docs/web.md, "Access").

The token is accepted from `?token=` (and then set as an HttpOnly, SameSite=Strict cookie, so the page's links need
none), from that cookie, from `Authorization: Bearer`, or from `X-Eventlog-Token`. Without one: 401; with a wrong
one: 403; a short text body and nothing else, never a redirect. A POST (any method but GET/HEAD) also needs the
`X-Eventlog-Token` header: a browser sends the cookie with a form another site submits, but no other site can read
the page to learn the token and set the header, so a cookie-only post is refused (403).
"""
from __future__ import annotations

import hmac
import secrets
from http.cookies import CookieError, SimpleCookie
from typing import Any, Awaitable, Callable, MutableMapping
from urllib.parse import parse_qsl

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "eventlog_token"
CSRF_HEADER = "x-eventlog-token"
SAFE_METHODS = ("GET", "HEAD")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape"))


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers") or []:
        name = k.decode("latin-1").lower()
        value = v.decode("latin-1")
        out[name] = f"{out[name]}; {value}" if name == "cookie" and name in out else value
    return out


def credentials(scope: Scope) -> tuple[list[str], str | None, str | None]:
    """(every token the request offers, the query's token, the CSRF header's token)."""
    headers = _headers(scope)
    offered: list[str] = []
    query = None
    for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
        if k == "token":
            query = v
            offered.append(v)
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        offered.append(auth[7:].strip())
    csrf = headers.get(CSRF_HEADER)
    if csrf is not None:
        offered.append(csrf)
    if "cookie" in headers:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers["cookie"])
        except CookieError:
            pass
        if COOKIE in jar:
            offered.append(jar[COOKIE].value)
    return offered, query, csrf


async def _drain(receive: Receive, limit: int = 1 << 16) -> None:
    """Read a refused request's body (up to `limit` bytes) before answering it. A server that answers and closes the
    connection with the body still unread makes the kernel reset the connection, and the client can lose the answer
    (seen in CI: ConnectionResetError while reading a 403 to a POST)."""
    seen = 0
    while seen <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body"):
            return


class TokenGate:
    """ASGI middleware in front of the whole app (pages, API, static files)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def _refuse(self, receive: Receive, send: Send, status: int, text: str) -> None:
        await _drain(receive)
        headers = [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS]
        if status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="eventlog"'))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": text.encode() + b"\n"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan; no websockets are served
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        offered, query, csrf = credentials(scope)
        if not offered:
            await self._refuse(receive, send, 401, "eventlog: this page needs its token (the URL `eventlog serve` printed)")
            return
        if not any(_same(t, self.token) for t in offered):
            await self._refuse(receive, send, 403, "eventlog: wrong token")
            return
        if scope["method"] not in SAFE_METHODS and (csrf is None or not _same(csrf, self.token)):
            await self._refuse(receive, send, 403, "eventlog: a change needs the X-Eventlog-Token header")
            return
        set_cookie = query is not None and _same(query, self.token)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() not in dict(SECURITY_HEADERS)]
                headers += SECURITY_HEADERS
                if set_cookie:
                    headers.append((b"set-cookie", f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                                    .encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
