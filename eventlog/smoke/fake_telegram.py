"""A loopback fake of the Telegram Bot API, good enough for the real OpenClaw gateway.

Why a fake and not an emulator from a registry: the tests need to see every request body OpenClaw sends (the DLP
checks read them), inject any update type at will, and run with nothing but the standard library.

Bot API side (what the gateway talks to): ``/bot<token>/<method>`` with a JSON, form or multipart body (or a query
string), answered ``{"ok": true, "result": ...}``. ``getUpdates`` long-polls with ``offset``/``limit``/``timeout``
like Telegram: updates below ``offset`` are confirmed and dropped. Methods that return a Message (``sendMessage``,
``editMessageText``, ``sendPhoto`` ...) get one with a fresh ``message_id``; anything unknown gets ``true``.
``allowed_updates`` is honoured as Telegram does (an update type the bot did not ask for is never delivered; it is
kept in ``undelivered`` instead).

Message ids and update ids start from a time-derived base, so they are fresh per run: OpenClaw remembers
``chat_id:message_id`` and the polling offset across restarts and would skip repeats.

Control side (for tests), on the same port under ``/_control/``:
  POST /_control/updates        body: one update or a list; ``update_id`` is filled in if missing → ``{"update_ids": [...]}``
  GET  /_control/requests?since=N&method=M   recorded requests (index, method, body, ts ...)
  POST /_control/wait           body: ``{"method": M, "since": N, "contains": S, "timeout": T}`` → the first match or 408
  POST /_control/fail           body: ``{"method": M, "error_code": 400, "description": D, "count": 1}``
  GET  /_control/info           bot identity, token, counters
Nothing here ever connects anywhere: it only listens, on 127.0.0.1.

Run: ``python -m eventlog.smoke.fake_telegram [--port 0]`` prints one JSON line ``{"port": P, "url": ...}`` and serves until killed.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import json
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

BOT_ID = 7000001
BOT_USERNAME = "eventlog_test_bot"
DEFAULT_TOKEN = f"{BOT_ID}:AAFakeTokenForLoopbackTestsOnly000000"

# Methods whose result is a Message object (or, for sendMediaGroup, a list of them).
_MESSAGE_METHODS = {
    "sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendAnimation", "sendVoice",
    "sendVideoNote", "sendSticker", "sendLocation", "sendVenue", "sendContact", "sendPoll", "sendDice",
    "copyMessage", "forwardMessage", "editMessageText", "editMessageCaption", "editMessageMedia",
    "editMessageReplyMarkup", "editMessageLiveLocation", "stopMessageLiveLocation", "sendInvoice",
}
_NOT_BY_DEFAULT = {"chat_member", "message_reaction", "message_reaction_count"}
_CAPTION_METHODS = {"sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendAnimation", "sendVoice",
                    "editMessageCaption"}


@dataclass
class Request:
    """One recorded HTTP request to the Bot API side."""

    index: int
    method: str
    token: str
    http_method: str
    path: str
    body: Any
    raw: bytes
    ts: float
    content_type: str
    status: int = 200
    response: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "http_method": self.http_method, "path": self.path,
                "body": self.body, "ts": self.ts, "content_type": self.content_type, "status": self.status,
                "response": self.response}

    def text(self) -> str:
        """The text or caption the request carries ('' if none) — what a reader of the chat would see."""
        body = self.body if isinstance(self.body, dict) else {}
        for key in ("text", "caption", "question"):
            v = body.get(key)
            if isinstance(v, str):
                return v
        return ""


@dataclass
class _Failure:
    error_code: int
    description: str
    count: int


@dataclass
class FakeTelegram:
    """The fake Bot API server; ``start()`` serves it on 127.0.0.1 in a background thread."""

    token: str = DEFAULT_TOKEN
    host: str = "127.0.0.1"
    port: int = 0
    message_id_base: int | None = None
    update_id_base: int | None = None
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        now = int(time.time())
        # Time-derived, < 2**31, growing between runs: ids never repeat across gateway restarts on one state dir.
        self._next_message_id = self.message_id_base or (now % 1_000_000) * 1000 + 1
        self._next_update_id = self.update_id_base or (now - 1_700_000_000) * 10
        self._updates: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._failures: dict[str, _Failure] = {}
        self._messages: dict[tuple[str, int], dict[str, Any]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.foreign_requests: list[dict[str, Any]] = []  # requests for another token / unknown path
        self._allowed: set[str] | None = None  # allowed_updates in force (None: Telegram's default set)
        self.undelivered: list[dict[str, Any]] = []  # injected updates of a type the bot did not ask for

    # ---- lifecycle -----------------------------------------------------------------------------------------------
    def start(self) -> "FakeTelegram":
        self._closing = False  # a stopped fake can be started again; its long polls block again
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-telegram", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeTelegram":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The ``apiRoot`` for OpenClaw (no trailing slash, no /bot part)."""
        return f"http://{self.host}:{self.port}"

    @property
    def bot_user(self) -> dict[str, Any]:
        return {"id": BOT_ID, "is_bot": True, "first_name": "Eventlog Test Bot", "username": BOT_USERNAME}

    # ---- injecting updates -----------------------------------------------------------------------------------------
    def inject(self, update: dict[str, Any]) -> int:
        """Queue one raw update (any type); fills ``update_id`` if absent. Returns the update id."""
        with self._cond:
            update = dict(update)
            if "update_id" not in update:
                update["update_id"] = self._next_update_id
            self._next_update_id = max(self._next_update_id, int(update["update_id"])) + 1
            for key in ("message", "edited_message", "channel_post", "edited_channel_post"):
                msg = update.get(key)
                if isinstance(msg, dict) and "message_id" in msg and "chat" in msg:
                    self._messages[(str(msg["chat"]["id"]), int(msg["message_id"]))] = msg
            self._updates.append(update)
            self._cond.notify_all()
            return int(update["update_id"])

    def new_message_id(self) -> int:
        with self._cond:
            mid = self._next_message_id
            self._next_message_id += 1
            return mid

    def user(self, user_id: int, first_name: str = "Tester", username: str | None = None) -> dict[str, Any]:
        u: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name, "language_code": "en"}
        if username:
            u["username"] = username
        return u

    def message(self, text: str, *, user_id: int, chat_id: int | None = None, chat_type: str | None = None,
                chat_title: str = "Test group", entities: list[dict[str, Any]] | None = None,
                reply_to: dict[str, Any] | None = None, first_name: str = "Tester") -> dict[str, Any]:
        """Build a Message object as Telegram would deliver it (private chat when ``chat_id`` is the user)."""
        chat_id = user_id if chat_id is None else chat_id
        from_user = self.user(user_id, first_name, f"user{user_id}")
        if chat_type is None:
            chat_type = "private" if chat_id > 0 else "supergroup"
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat.update(first_name=first_name, username=f"user{user_id}")
        else:
            chat["title"] = chat_title
        msg: dict[str, Any] = {"message_id": self.new_message_id(), "from": from_user, "chat": chat,
                               "date": int(time.time()), "text": text}
        if entities:
            msg["entities"] = entities
        if reply_to:
            msg["reply_to_message"] = reply_to
        return msg

    def send_dm(self, text: str, *, user_id: int, first_name: str = "Tester") -> dict[str, Any]:
        """Inject a private text message; returns the whole update (with its ``update_id``)."""
        upd: dict[str, Any] = {"message": self.message(text, user_id=user_id, first_name=first_name)}
        upd["update_id"] = self.inject(upd)
        return upd

    def send_group(self, text: str, *, user_id: int, chat_id: int, mention_bot: bool = False,
                   title: str = "Test group") -> dict[str, Any]:
        """Inject a group (supergroup) message; with ``mention_bot`` it starts with ``@<bot username>``."""
        entities = None
        if mention_bot:
            text = f"@{BOT_USERNAME} {text}"
            entities = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]
        upd: dict[str, Any] = {"message": self.message(text, user_id=user_id, chat_id=chat_id, chat_title=title, entities=entities)}
        upd["update_id"] = self.inject(upd)
        return upd

    def send_edit(self, original: dict[str, Any], new_text: str) -> dict[str, Any]:
        """Inject an ``edited_message`` for a message injected earlier (pass its Message object)."""
        msg = dict(original, text=new_text, edit_date=int(time.time()))
        upd: dict[str, Any] = {"edited_message": msg}
        upd["update_id"] = self.inject(upd)
        return upd

    def send_callback(self, *, user_id: int, data: str, message: dict[str, Any] | None = None) -> dict[str, Any]:
        """Inject a ``callback_query`` (a button press) on a bot message (a minimal one if not given)."""
        if message is None:
            message = {"message_id": self.new_message_id(), "from": self.bot_user,
                       "chat": {"id": user_id, "type": "private", "first_name": "Tester"},
                       "date": int(time.time()), "text": "buttons"}
        cq = {"id": str(self.new_message_id() * 7919), "from": self.user(user_id, username=f"user{user_id}"),
              "message": message, "chat_instance": f"ci{user_id}", "data": data}
        upd: dict[str, Any] = {"callback_query": cq}
        upd["update_id"] = self.inject(upd)
        return upd

    def send_reaction(self, *, user_id: int, chat_id: int, message_id: int, emoji: str = "👍") -> dict[str, Any]:
        """Inject a ``message_reaction`` update (a user put ``emoji`` on ``message_id``)."""
        chat = {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}
        mr = {"chat": chat, "message_id": message_id, "user": self.user(user_id, username=f"user{user_id}"),
              "date": int(time.time()), "old_reaction": [], "new_reaction": [{"type": "emoji", "emoji": emoji}]}
        upd: dict[str, Any] = {"message_reaction": mr}
        upd["update_id"] = self.inject(upd)
        return upd

    # ---- scripted failures -------------------------------------------------------------------------------------------
    def fail(self, method: str, error_code: int = 400, description: str = "Bad Request: injected", count: int = 1) -> None:
        """Make the next ``count`` calls of ``method`` fail like Telegram does (``ok: false``)."""
        with self._cond:
            self._failures[method] = _Failure(error_code, description, count)

    # ---- inspecting requests -----------------------------------------------------------------------------------------
    def calls(self, method: str | None = None, since: int = 0) -> list[Request]:
        with self._cond:
            return [r for r in self.requests[since:] if method is None or r.method == method]

    def mark(self) -> int:
        """An index to pass as ``since`` to look only at requests made from now on."""
        with self._cond:
            return len(self.requests)

    def wait_for(self, predicate: Callable[[Request], bool] | None = None, *, method: str | None = None,
                 since: int = 0, timeout: float = 60.0) -> Request:
        """Block until a request (from index ``since``) matches; raise TimeoutError naming what was seen instead."""
        deadline = time.monotonic() + timeout
        with self._cond:
            i = since
            while True:
                while i < len(self.requests):
                    r = self.requests[i]
                    i += 1
                    if (method is None or r.method == method) and (predicate is None or predicate(r)):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [r.method for r in self.requests[since:]]
                    raise TimeoutError(f"fake Telegram: no request with method={method!r} matching the predicate "
                                       f"within {timeout:.0f}s; seen since #{since}: {_summarise(seen)}")
                self._cond.wait(min(left, 0.5))

    # ---- the Bot API -----------------------------------------------------------------------------------------------
    def _record(self, req: Request) -> None:
        with self._cond:
            req.index = len(self.requests)
            self.requests.append(req)
            self._cond.notify_all()

    def _get_updates(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        allowed = body.get("allowed_updates")
        if isinstance(allowed, str):
            allowed = json.loads(allowed)
        if isinstance(allowed, list):
            with self._cond:  # like Telegram, the last given list stays in force for later calls
                self._allowed = set(allowed) if allowed else None
        offset = int(body.get("offset") or 0)
        limit = max(1, min(100, int(body.get("limit") or 100)))
        timeout = max(0.0, min(50.0, float(body.get("timeout") or 0)))
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if offset:
                    # Telegram semantics: an offset confirms every update below it.
                    self._updates = [u for u in self._updates if u["update_id"] >= offset]
                    if offset < 0:  # negative offset: the last -offset updates
                        self._updates = self._updates[offset:]
                self._drop_unwanted()
                if self._updates or self._closing:
                    return [dict(u) for u in self._updates[:limit]]
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self._cond.wait(left)

    def _edit_refusal(self, method: str, body: dict[str, Any]) -> str | None:
        """Telegram's two everyday edit errors, which OpenClaw's preview streaming has to cope with: an edit of a
        message it does not know, and an edit that changes nothing."""
        if method not in ("editMessageText", "editMessageCaption") or "inline_message_id" in body:
            return None
        old = self._messages.get((str(body.get("chat_id")), int(body.get("message_id") or 0)))
        if old is None:
            return "Bad Request: message to edit not found"
        key = "text" if method == "editMessageText" else "caption"
        if old.get(key, "") == body.get(key, "") and old.get("reply_markup") == body.get("reply_markup",
                                                                                        old.get("reply_markup")):
            return ("Bad Request: message is not modified: specified new message content and reply markup are "
                    "exactly the same as a current content and reply markup of the message")
        return None

    def _drop_unwanted(self) -> None:
        """Telegram never delivers update types the bot did not ask for (``allowed_updates``; by default everything
        but chat_member, message_reaction, message_reaction_count): such injected updates go to ``undelivered``."""
        keep: list[dict[str, Any]] = []
        for u in self._updates:
            kind = next((k for k in u if k != "update_id"), "")
            wanted = kind in self._allowed if self._allowed is not None else kind not in _NOT_BY_DEFAULT
            (keep if wanted else self.undelivered).append(u)
        self._updates = keep

    def _message_result(self, method: str, body: dict[str, Any]) -> Any:
        chat_id = body.get("chat_id")
        chat_key = str(chat_id)
        try:
            cid: Any = int(chat_id)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            cid = chat_id
        chat: dict[str, Any] = {"id": cid, "type": "private" if isinstance(cid, int) and cid > 0 else "supergroup"}
        if method.startswith("edit") or method == "stopMessageLiveLocation":
            if "inline_message_id" in body:
                return True
            mid = int(body.get("message_id") or 0)
            msg = dict(self._messages.get((chat_key, mid)) or {"message_id": mid, "from": self.bot_user, "chat": chat,
                                                                 "date": int(time.time())})
            msg["edit_date"] = int(time.time())
            if method == "editMessageText":
                msg["text"] = body.get("text", "")
            elif method == "editMessageCaption":
                msg["caption"] = body.get("caption", "")
            if "reply_markup" in body:
                msg["reply_markup"] = body["reply_markup"]
            self._messages[(chat_key, mid)] = msg
            return msg
        if method == "sendMediaGroup":
            media = body.get("media") or []
            if isinstance(media, str):
                media = json.loads(media)
            out = []
            for item in media:
                m = self._new_bot_message(chat, chat_key)
                if isinstance(item, dict) and "caption" in item:
                    m["caption"] = item["caption"]
                out.append(m)
            return out
        msg = self._new_bot_message(chat, chat_key)
        if method in ("sendMessage",):
            msg["text"] = body.get("text", "")
        elif method in _CAPTION_METHODS and "caption" in body:
            msg["caption"] = body["caption"]
        elif method == "sendPoll":
            opts = body.get("options") or []
            if isinstance(opts, str):
                opts = json.loads(opts)
            msg["poll"] = {"id": str(msg["message_id"]), "question": body.get("question", ""),
                           "options": [{"text": o if isinstance(o, str) else o.get("text", ""), "voter_count": 0}
                                       for o in opts],
                           "total_voter_count": 0, "is_closed": False, "is_anonymous": True, "type": "regular",
                           "allows_multiple_answers": False}
        return msg

    def _new_bot_message(self, chat: dict[str, Any], chat_key: str) -> dict[str, Any]:
        mid = self._next_message_id
        self._next_message_id += 1
        msg = {"message_id": mid, "from": self.bot_user, "chat": chat, "date": int(time.time())}
        self._messages[(chat_key, mid)] = msg
        return msg

    def handle_bot_call(self, method: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer one Bot API call → (HTTP status, JSON response)."""
        with self._cond:
            failure = self._failures.get(method)
            if failure and failure.count > 0:
                failure.count -= 1
                return failure.error_code, {"ok": False, "error_code": failure.error_code,
                                            "description": failure.description}
        if method == "getUpdates":
            return 200, {"ok": True, "result": self._get_updates(body)}
        if method == "getMe":
            return 200, {"ok": True, "result": dict(self.bot_user, can_join_groups=True,
                                                    can_read_all_group_messages=False, supports_inline_queries=False,
                                                    can_connect_to_business=False, has_main_web_app=False)}
        if method == "getWebhookInfo":
            return 200, {"ok": True, "result": {"url": "", "has_custom_certificate": False, "pending_update_count": 0}}
        if method == "getMyCommands":
            return 200, {"ok": True, "result": []}
        if method in ("getChat",):
            cid = body.get("chat_id")
            return 200, {"ok": True, "result": {"id": cid, "type": "private" if str(cid).lstrip("-") == str(cid)
                                                else "supergroup"}}
        if method == "getChatMember":
            return 200, {"ok": True, "result": {"status": "member", "user": self.user(int(body.get("user_id") or 0))}}
        if method == "getFile":
            fid = str(body.get("file_id", ""))
            return 200, {"ok": True, "result": {"file_id": fid, "file_unique_id": fid[:16], "file_size": 0,
                                                "file_path": f"files/{fid}"}}
        if method in _MESSAGE_METHODS or method == "sendMediaGroup":
            with self._cond:
                refusal = self._edit_refusal(method, body)
                if refusal:
                    return 400, {"ok": False, "error_code": 400, "description": refusal}
                return 200, {"ok": True, "result": self._message_result(method, body)}
        return 200, {"ok": True, "result": True}


def _summarise(methods: Iterable[str]) -> str:
    out: list[str] = []
    for m in methods:
        if out and out[-1].split("×")[0] == m:
            n = int(out[-1].split("×")[1]) if "×" in out[-1] else 1
            out[-1] = f"{m}×{n + 1}"
        else:
            out.append(m)
    return ", ".join(out) or "nothing"


def parse_body(content_type: str, raw: bytes, query: str) -> Any:
    """Decode a Bot API request body the way Telegram accepts it: JSON, urlencoded form, multipart, or query string."""
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == "application/json" and raw:
        return json.loads(raw.decode("utf-8"))
    if ctype == "application/x-www-form-urlencoded" and raw:
        return _form(urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    if ctype == "multipart/form-data" and raw:
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw)
        fields: list[tuple[Any, Any]] = []  # (field name, value); a part without a name keeps None, as parsed
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_filename()
            payload = part.get_payload(decode=True) or b""
            assert isinstance(payload, bytes)  # decode=True on a leaf part: its bytes
            if filename is not None:
                fields.append((name, {"filename": filename, "size": len(payload)}))
            else:
                fields.append((name, payload.decode("utf-8", "replace")))
        return _form(fields)
    if query:
        return _form(urllib.parse.parse_qsl(query, keep_blank_values=True))
    return {}


def _form(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    # Form values that are JSON (reply_markup, media, entities) are decoded, as Telegram does.
    out: dict[str, Any] = {}
    for k, v in pairs:
        if isinstance(v, str) and v[:1] in ("{", "["):
            try:
                v = json.loads(v)
            except ValueError:
                pass
        out[k] = v
    return out


def _make_handler(fake: FakeTelegram) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the request list is the log
            pass

        def _send(self, status: int, obj: Any) -> None:
            data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a long poll aborted at shutdown): nothing left to answer

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def _dispatch(self, http_method: str) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            raw = self._body()
            parts = parsed.path.strip("/").split("/")
            if parts[0] == "_control":
                return self._control(parts[1:] if len(parts) > 1 else [""], parsed.query, raw)
            ctype = self.headers.get("Content-Type", "")
            if len(parts) == 2 and parts[0].startswith("bot"):
                token, method = parts[0][3:], parts[1]
                try:
                    body = parse_body(ctype, raw, parsed.query)
                except ValueError as exc:
                    return self._send(400, {"ok": False, "error_code": 400, "description": f"Bad Request: {exc}"})
                req = Request(0, method, token, http_method, parsed.path, body, raw, time.time(), ctype)
                if token != fake.token:
                    req.status, req.response = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
                else:
                    req.status, req.response = fake.handle_bot_call(method, body if isinstance(body, dict) else {})
                fake._record(req)
                return self._send(req.status, req.response)
            with fake._cond:
                fake.foreign_requests.append({"path": parsed.path, "http_method": http_method, "ts": time.time()})
            self._send(404, {"ok": False, "error_code": 404, "description": "Not Found"})

        def _control(self, parts: list[str], query: str, raw: bytes) -> None:
            q = dict(urllib.parse.parse_qsl(query))
            body = json.loads(raw) if raw else {}
            what = parts[0]
            if what == "updates":
                ups = body if isinstance(body, list) else [body]
                return self._send(200, {"update_ids": [fake.inject(u) for u in ups]})
            if what == "requests":
                reqs = fake.calls(q.get("method"), int(q.get("since", 0)))
                return self._send(200, [r.to_json() for r in reqs])
            if what == "wait":
                contains = body.get("contains")
                try:
                    r = fake.wait_for((lambda r: contains in json.dumps(r.body, ensure_ascii=False)) if contains
                                      else None, method=body.get("method"), since=int(body.get("since", 0)),
                                      timeout=float(body.get("timeout", 30)))
                except TimeoutError as exc:
                    return self._send(408, {"error": str(exc)})
                return self._send(200, r.to_json())
            if what == "fail":
                fake.fail(body["method"], int(body.get("error_code", 400)),
                          body.get("description", "Bad Request: injected"), int(body.get("count", 1)))
                return self._send(200, {"ok": True})
            if what == "info":
                return self._send(200, {"token": fake.token, "bot": fake.bot_user, "requests": len(fake.requests),
                                        "foreign_requests": fake.foreign_requests})
            self._send(404, {"error": f"unknown control endpoint {what!r}"})

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free port)")
    ap.add_argument("--token", default=DEFAULT_TOKEN, help="the bot token the gateway uses")
    args = ap.parse_args(argv)
    fake = FakeTelegram(token=args.token, port=args.port).start()
    print(json.dumps({"port": fake.port, "url": fake.url, "token": fake.token}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
