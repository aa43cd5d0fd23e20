"""A fake model that can call tools, for the recall-plugin e2e test (tests/e2e/test_agent_gateway.py).

eventlog/smoke/fake_llm.py streams scripted text only. This subclass keeps its recording and text scripting and adds tool
calls: `call_tool(marker, name, arguments)` makes the next request whose current user turn contains `marker` answer
with one OpenAI-style tool call; the request that then carries the tool's result (OpenClaw appends an internal-context
user message after it, so the result is the last NON-user message) is answered by `answer(result_text)` — by default
the first result line, so what reaches Telegram is exactly what the tool found. Tool results are kept in
`tool_results` (name, text). OpenClaw rewrites tool-call ids, so results are matched by position, not id.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any, Callable

from eventlog.smoke.fake_llm import FakeLLM, Reply, _chunk, _make_handler, last_user_text


@dataclass
class ToolCall:
    marker: str
    name: str
    arguments: dict[str, Any]


def first_result_line(text: str) -> str:
    lines = [ln for ln in text.splitlines()[1:] if ln.strip().startswith("[") or ln.startswith(">")]
    return f"From the log: {lines[0].lstrip('> ').strip()}" if lines else "The log has nothing on that."


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ToolLLM(FakeLLM):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._calls: list[ToolCall] = []
        self.tool_results: list[tuple[str, str]] = []
        self.answer: Callable[[str], str] = first_result_line

    def call_tool(self, marker: str, name: str, arguments: dict[str, Any]) -> None:
        with self._cond:
            self._calls.append(ToolCall(marker, name, arguments))

    def wait_tool_result(self, since: int = 0, timeout: float = 180.0) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.tool_results) <= since:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no tool result within {timeout:.0f}s ({len(self.requests)} LLM requests)")
                self._cond.wait(min(left, 0.5))
            return self.tool_results[since]

    def _decide(self, body: dict[str, Any]) -> tuple[str, Any]:
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last_other = next((m for m in reversed(msgs) if m.get("role") != "user"), None)
        if last_other is not None and last_other.get("role") == "tool":
            name = next((tc.get("function", {}).get("name") for m in reversed(msgs) if m.get("role") == "assistant"
                         for tc in m.get("tool_calls") or []), "?")
            text = _content_text(last_other.get("content"))
            with self._cond:
                self.tool_results.append((name, text))
                self._cond.notify_all()
            return "text", self.answer(text)
        user = last_user_text(body)
        with self._cond:
            for i, c in enumerate(self._calls):
                if c.marker in user:
                    return "tool", self._calls.pop(i)
        return "script", None

    def start(self) -> "ToolLLM":
        fake = self
        base = _make_handler(self)

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                if path != "/v1/chat/completions":
                    return super().do_POST()
                try:
                    body = self._json_body()
                except ValueError:
                    return self._send(400, {"error": {"message": "invalid JSON"}})
                req = fake._record(path, body)
                kind, what = fake._decide(body)
                reply = fake._take(body) if kind == "script" else Reply(what) if kind == "text" else None
                cid, created, model = "chatcmpl-" + uuid.uuid4().hex[:24], int(time.time()), body.get("model") or "m"
                if reply is not None:
                    req.reply = reply.text
                    if body.get("stream"):
                        return self._stream(body, reply, cid, created, model)
                    return self._send(200, {"id": cid, "object": "chat.completion", "created": created,
                                            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                                                         "message": {"role": "assistant",
                                                                                     "content": reply.text}}]})
                call = what
                req.reply = f"tool_call {call.name} {json.dumps(call.arguments)}"
                tc = {"index": 0, "id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                      "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
                if not body.get("stream"):
                    return self._send(200, {"id": cid, "object": "chat.completion", "created": created,
                                            "model": model, "choices": [{"index": 0, "finish_reason": "tool_calls",
                                                                         "message": {"role": "assistant",
                                                                                     "content": None,
                                                                                     "tool_calls": [tc]}}]})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def emit(data: bytes) -> None:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

                try:
                    emit(_chunk(cid, created, model, {"role": "assistant", "content": None, "tool_calls": [tc]},
                                None))
                    emit(_chunk(cid, created, model, {}, "tool_calls"))
                    emit(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="tool-llm", daemon=True).start()
        return self
