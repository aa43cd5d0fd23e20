"""A loopback fake of an OpenAI-compatible chat-completions API, with replies scripted by the test.

``POST /v1/chat/completions`` answers with the next scripted reply: as Server-Sent Events when the request says
``"stream": true`` (split into the scripted chunks, with an optional delay per chunk — slow streaming is how preview
edits get to show partial text), else as one JSON completion. ``GET /v1/models`` lists the model.

Scripting: ``script(text, chunks=..., delay=..., when=...)`` queues a reply. A reply with ``when`` is used only for a
request whose current user turn (``last_user_text``) contains that string (so an auxiliary request the gateway makes cannot eat it); the
first matching queued reply wins. With nothing queued the fake answers ``default_reply`` (``{user}`` = the user turn,
shortened). Every request is recorded (body, time).

Control API on the same port, under ``/_control/``:
  POST /_control/script    body: ``{"text": T, "chunks": N | [str...], "delay": S, "when": W}``
  GET  /_control/requests?since=N
  POST /_control/wait      body: ``{"since": N, "contains": S, "timeout": T}`` → the first match or 408
Listens on 127.0.0.1 only and never connects anywhere.

Run: ``python -m eventlog.smoke.fake_llm [--port 0]`` prints ``{"port": P, "url": ..., "base_url": ".../v1"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL_ID = "fake-model"


@dataclass
class Reply:
    """One scripted reply: the whole text, how to split it when streamed, and the pause before each chunk."""

    text: str
    chunks: int | list[str] | None = None
    delay: float = 0.0
    when: str | None = None

    def pieces(self) -> list[str]:
        if isinstance(self.chunks, list):
            if "".join(self.chunks) != self.text:
                raise ValueError("scripted chunks must join to the reply text")
            return list(self.chunks)
        n = self.chunks or max(1, min(len(self.text), 8))
        size = max(1, -(-len(self.text) // n))
        return [self.text[i:i + size] for i in range(0, len(self.text), size)] or [""]


@dataclass
class LLMRequest:
    index: int
    path: str
    body: Any
    ts: float
    reply: str | None = None

    def last_user_text(self) -> str:
        return last_user_text(self.body)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "path": self.path, "body": self.body, "ts": self.ts, "reply": self.reply}


def last_user_text(body: Any) -> str:
    """The text of the current turn: every ``user`` message after the last non-user one, joined by newlines.

    Why not just the last message: OpenClaw sends the user's text in one user message and then appends another user
    message with its internal context block, so the last message alone never contains what the user typed."""
    msgs = body.get("messages") if isinstance(body, dict) else None
    turn: list[str] = []
    for m in reversed(msgs or []):
        if not isinstance(m, dict):
            continue
        if m.get("role") != "user":
            if turn:
                break
            continue
        c = m.get("content")
        if isinstance(c, str):
            turn.append(c)
        elif isinstance(c, list):
            turn.append("\n".join(p.get("text", "") for p in c if isinstance(p, dict)))
    return "\n".join(reversed(turn))


@dataclass
class FakeLLM:
    host: str = "127.0.0.1"
    port: int = 0
    default_reply: str = "Fake reply to: {user}"
    requests: list[LLMRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue: list[Reply] = []
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> "FakeLLM":
        self._server = ThreadingHTTPServer((self.host, self.port), _make_handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI ``baseUrl`` to configure (ends in ``/v1``)."""
        return self.url + "/v1"

    def script(self, text: str, *, chunks: int | list[str] | None = None, delay: float = 0.0,
               when: str | None = None) -> Reply:
        """Queue a reply (see the module doc). ``chunks``: a count, or the exact pieces (must join to ``text``)."""
        reply = Reply(text, chunks, delay, when)
        reply.pieces()  # validate now, not inside the gateway's request
        with self._cond:
            self._queue.append(reply)
        return reply

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def mark(self) -> int:
        with self._cond:
            return len(self.requests)

    def wait_for(self, predicate: Callable[[LLMRequest], bool] | None = None, *, since: int = 0,
                 timeout: float = 60.0) -> LLMRequest:
        deadline = time.monotonic() + timeout
        with self._cond:
            i = since
            while True:
                while i < len(self.requests):
                    r = self.requests[i]
                    i += 1
                    if predicate is None or predicate(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"fake LLM: no matching request within {timeout:.0f}s "
                                       f"({len(self.requests) - since} requests since #{since})")
                self._cond.wait(min(left, 0.5))

    def _take(self, body: Any) -> Reply:
        user = last_user_text(body)
        with self._cond:
            for i, r in enumerate(self._queue):
                if r.when is None or r.when in user:
                    return self._queue.pop(i)
        short = " ".join(user.split())[:200]
        return Reply(self.default_reply.replace("{user}", short))

    def _record(self, path: str, body: Any) -> LLMRequest:
        with self._cond:
            req = LLMRequest(len(self.requests), path, body, time.time())
            self.requests.append(req)
            self._cond.notify_all()
            return req


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = sum(len(json.dumps(m, ensure_ascii=False)) for m in body.get("messages") or []) // 4
    completion = max(1, len(text) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _make_handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
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
                pass  # the gateway aborted the request

        def _json_body(self) -> Any:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            return json.loads(raw) if raw else {}

        def do_GET(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path == "/v1/models":
                return self._send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model",
                                                                    "created": 0, "owned_by": "fake"}]})
            if path == "/_control/requests":
                since = int(self.path.partition("since=")[2] or 0) if "since=" in self.path else 0
                with fake._cond:
                    reqs = [r.to_json() for r in fake.requests[since:]]
                return self._send(200, reqs)
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            try:
                body = self._json_body()
            except ValueError:
                return self._send(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
            if path == "/_control/script":
                fake.script(body["text"], chunks=body.get("chunks"), delay=float(body.get("delay", 0)),
                            when=body.get("when"))
                return self._send(200, {"ok": True})
            if path == "/_control/wait":
                contains = body.get("contains")
                try:
                    r = fake.wait_for((lambda r: contains in json.dumps(r.body, ensure_ascii=False)) if contains
                                      else None, since=int(body.get("since", 0)), timeout=float(body.get("timeout", 30)))
                except TimeoutError as exc:
                    return self._send(408, {"error": str(exc)})
                return self._send(200, r.to_json())
            if path != "/v1/chat/completions":
                return self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            req = fake._record(path, body)
            reply = fake._take(body)
            req.reply = reply.text
            model = body.get("model") or MODEL_ID
            cid = "chatcmpl-" + uuid.uuid4().hex[:24]
            created = int(time.time())
            if not body.get("stream"):
                if reply.delay:
                    time.sleep(reply.delay * len(reply.pieces()))
                return self._send(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                                     "message": {"role": "assistant", "content": reply.text}}],
                                        "usage": _usage(body, reply.text)})
            self._stream(body, reply, cid, created, model)

        def _stream(self, body: dict[str, Any], reply: Reply, cid: str, created: int, model: str) -> None:
            # Chunked transfer so every SSE event reaches the client as soon as it is written.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def emit(data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            try:
                emit(_chunk(cid, created, model, {"role": "assistant", "content": ""}, None))
                for piece in reply.pieces():
                    if reply.delay:
                        time.sleep(reply.delay)
                    emit(_chunk(cid, created, model, {"content": piece}, None))
                emit(_chunk(cid, created, model, {}, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                           "choices": [], "usage": _usage(body, reply.text)}
                    emit(b"data: " + json.dumps(obj).encode() + b"\n\n")
                emit(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the gateway gave up on the stream (abort / shutdown): nothing to deliver

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free port)")
    ap.add_argument("--default-reply", default=FakeLLM.default_reply)
    args = ap.parse_args(argv)
    fake = FakeLLM(port=args.port, default_reply=args.default_reply).start()
    print(json.dumps({"port": fake.port, "url": fake.url, "base_url": fake.base_url}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
