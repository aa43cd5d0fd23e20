"""The helper's wire format (`eventlog agent serve` / `call`): one JSON object a request, bounded before it is used.

Every request line gets one answer line. A line that cannot be a request (not JSON, not an object, too long, nested
too deep, NaN/Infinity, a `seq` that is not a plain number or string) is answered with a *protocol error*:
`{"ok": false, "error_kind": "protocol", "error": ..., "seq": <the line's seq when it can be read>}`. The plugin
matches answers to calls in order and fails only that call on a protocol error, so no input ends the helper.

JavaScript's JSON.stringify writes half an emoji (a lone UTF-16 surrogate) as the escape `\\ud83d`, which is valid
JSON but not valid Unicode: orjson refuses it, so such a line is decoded by the standard library instead and every
lone surrogate becomes U+FFFD — the request is answered, not dropped.
"""
from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, Iterator

import orjson

from ..store.jsondepth import depth

MAX_LINE = 1 << 20  # bytes of one request line: the model's arguments are a few hundred bytes; 1 MiB is generous
MAX_DEPTH = 32  # levels of nesting in a request: the plugin sends 3 (request → args → a value); orjson stops at 255
_SURROGATE = re.compile("[\ud800-\udfff]")


class ProtocolError(ValueError):
    """A request line that cannot be answered as a tool call; `seq` is its seq when that could be read."""

    def __init__(self, message: str, seq: Any = None) -> None:
        super().__init__(message)
        self.seq = seq


def lines(stream: BinaryIO, limit: int = MAX_LINE) -> Iterator[bytes | None]:
    """The stream's non-blank lines; None for a line longer than `limit` (read past in bounded pieces, never held)."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while (more := stream.readline(limit)) and not more.endswith(b"\n"):
                pass
            yield None
        elif line.strip():
            yield line


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _fix_surrogates(v: Any) -> Any:
    if isinstance(v, str):
        return _SURROGATE.sub("\ufffd", v)
    if isinstance(v, list):
        return [_fix_surrogates(x) for x in v]
    if isinstance(v, dict):
        return {_fix_surrogates(k): _fix_surrogates(x) for k, x in v.items()}
    return v


def _decode(line: bytes) -> Any:
    try:
        return orjson.loads(line)  # refuses NaN/Infinity, lone surrogates and nesting past 255 levels
    except orjson.JSONDecodeError as exc:
        first = exc
    try:  # only for what orjson refuses but JSON allows: escaped lone surrogates (see the module docstring)
        return _fix_surrogates(json.loads(line, parse_constant=_reject_constant))
    except (ValueError, RecursionError):
        raise ProtocolError(f"not JSON: {first}") from None


def parse(line: bytes | None) -> dict[str, Any]:
    """One request object from one line; raises ProtocolError."""
    if line is None:
        raise ProtocolError(f"request line longer than {MAX_LINE} bytes")
    req = _decode(line)
    if not isinstance(req, dict):
        raise ProtocolError("a request must be a JSON object")
    seq = req.get("seq")
    if not (seq is None or isinstance(seq, str) and len(seq) <= 64 or isinstance(seq, int) and
            not isinstance(seq, bool) and abs(seq) < 2 ** 53):
        raise ProtocolError("seq must be a number or a short string")
    if depth(req, MAX_DEPTH) > MAX_DEPTH:
        raise ProtocolError(f"request nested deeper than {MAX_DEPTH} levels", seq)
    return req


def error(exc: ProtocolError) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": False, "hits": 0, "ids": [], "error_kind": "protocol", "error": str(exc),
                           "text": f"eventlog: the request could not be read ({exc})."}
    if exc.seq is not None:
        out["seq"] = exc.seq
    return out


def encode(out: dict[str, Any]) -> bytes:
    """The answer line; an answer that cannot be written as JSON becomes a protocol error with the same seq."""
    try:
        return orjson.dumps(out) + b"\n"
    except orjson.JSONEncodeError as exc:
        return orjson.dumps(error(ProtocolError(f"the answer could not be encoded: {exc}", out.get("seq")))) + b"\n"
