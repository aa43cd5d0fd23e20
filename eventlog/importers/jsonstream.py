"""A streaming reader for Telegram Desktop's result.json: the `messages` arrays are walked item by item, never loaded
whole, so a 1 GB export costs the memory of one record plus a 1 MiB read buffer.

Why not a general incremental parser (ijson is installable here): the export has a fixed shape — an object whose
`messages` arrays sit at a known depth (top level for a single chat, `chats.list[].messages` / `left_chats.list[]
.messages` for a full account). Walking that shape by hand and handing every record to the C scanner of the standard
library's `json` (`JSONDecoder.raw_decode`) measured faster here than ijson's yajl2 C backend building the same dicts
(200k records, 163 MB: 1.8 s vs 2.2 s), adds no dependency, and tells us each record's size and position for errors.
"""
from __future__ import annotations

import codecs
import hashlib
import json
import re
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator

from ..errors import EventlogError
from ..store.jsondepth import depth

CHUNK = 1 << 20
MAX_RECORD = 256 << 10  # characters; Telegram caps a message at 4096 characters, its JSON record is a few KB,
# and this bound keeps the event (record + flattened text, ≤ 4 bytes a character) under the writer's 4 MiB line limit
MAX_VALUE = 64 << 20  # any other value we must read (personal_information, contacts, …)
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
MAX_DEPTH = 32  # levels of nesting in one value: a message record has 4 (record → text → entity → field)


class BadExport(EventlogError):
    """The input is not a complete, well-formed Telegram Desktop JSON export."""


def _no_constant(name: str) -> Any:
    # Python's json reads NaN/Infinity (not JSON) as floats, which the log would then store as null
    raise BadExport(f"{name} is not a JSON number (malformed export)")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _bounded(obj: Any, where: str) -> Any:
    if isinstance(obj, (dict, list)) and depth(obj, MAX_DEPTH) > MAX_DEPTH:
        raise BadExport(f"a value at {where} is nested deeper than {MAX_DEPTH} levels: not a Telegram Desktop export")
    return obj


@dataclass
class Item:
    """One thing the walk found. kind: 'top' (a top-level key and its value), 'chat' (a chat object begins: section is
    None for a single-chat export, else 'chats' / 'left_chats'), 'chat_meta' (a key of the current chat other than
    `messages`), 'message' (one record; size = its length in characters), 'chat_end'."""

    kind: str
    key: str | None = None
    value: Any = None
    section: str | None = None
    size: int = 0


class _Reader:
    def __init__(self, f: IO[bytes], on_bytes: Callable[[int], None] | None) -> None:
        self.f = f
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.sha = hashlib.sha256()
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters consumed before buf[0]
        self.eof = False
        self.on_bytes = on_bytes
        self.nbytes = 0

    def fill(self) -> bool:
        if self.eof:
            return False
        data = self.f.read(CHUNK)
        self.sha.update(data)
        self.nbytes += len(data)
        if self.on_bytes:
            self.on_bytes(self.nbytes)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise BadExport(f"not UTF-8 near byte {self.nbytes - len(data) + exc.start}") from None
        if not data:
            self.eof = True
        self.base += self.pos
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        return True

    def where(self, pos: int | None = None) -> str:
        return f"character {self.base + (self.pos if pos is None else pos)}"

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of input), not consumed."""
        while True:
            m = _WS.match(self.buf, self.pos)
            assert m is not None  # `[...]*` matches the empty string at any position
            self.pos = m.end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if c == "" or c not in chars:
            got = "end of file (truncated?)" if c == "" else repr(c)
            raise BadExport(f"malformed export at {self.where()}: expected {' or '.join(map(repr, chars))}, got {got}")
        self.pos += 1
        return c

    def value(self, limit: int = MAX_VALUE) -> tuple[Any, int]:
        """One JSON value (parsed by the C scanner) and its length in characters, reading more input as needed."""
        self.peek()
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
                # a number or literal that ends exactly at the buffer's end may continue in the next chunk
                if end < len(self.buf) or self.eof or isinstance(obj, (dict, list, str)):
                    size = end - self.pos
                    obj = _bounded(obj, self.where())
                    self.pos = end
                    return obj, size
            except RecursionError:
                raise BadExport(f"a value at {self.where()} is nested deeper than {MAX_DEPTH} levels: "
                                "not a Telegram Desktop export") from None
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise BadExport(f"truncated or malformed export at {self.where(exc.pos)}: {exc.msg}") from None
                if len(self.buf) - self.pos > limit:
                    raise BadExport(f"a value at {self.where()} is larger than {limit >> 10} KiB characters: "
                                    "not a Telegram Desktop export record") from None
            self.fill()


class Walk:
    """Iterate Items of an export; afterwards `.sha256` is the hex digest of every byte read and `.nbytes` its size."""

    def __init__(self, f: IO[bytes], on_bytes: Callable[[int], None] | None = None) -> None:
        self.r = _Reader(f, on_bytes)
        self.sha256 = ""
        self.nbytes = 0

    def __iter__(self) -> Iterator[Item]:
        r = self.r
        if r.peek() != "{":
            c = r.peek()
            raise BadExport("empty file" if c == "" else "not a Telegram Desktop export (the top level is not a JSON object)")
        r.pos += 1
        single = False
        for key in self._keys():
            if key == "messages":
                single = True
                yield Item("chat", section=None)
                yield from self._messages()
            elif key in ("chats", "left_chats") and r.peek() == "{":
                r.pos += 1
                for sub in self._keys():
                    if sub == "list":
                        yield from self._chat_list(key)
                    else:
                        r.value()
            else:
                value, _ = r.value()
                yield Item("chat_meta" if single or key in ("name", "type", "id") else "top", key, value)
        if single:
            yield Item("chat_end")
        if r.peek() != "":
            raise BadExport(f"malformed export at {r.where()}: data after the end of the top-level object")
        self.sha256 = r.sha.hexdigest()
        self.nbytes = r.nbytes

    def _keys(self) -> Iterator[str]:
        """Keys of the object whose '{' was just consumed; the caller consumes each value. Consumes the '}'."""
        r = self.r
        if r.peek() == "}":
            r.pos += 1
            return
        while True:
            if r.peek() != '"':
                r.expect('"')
            key, _ = r.value()
            r.expect(":")
            yield key
            if r.expect(",}") == "}":
                return

    def _array(self) -> Iterator[None]:
        """Positions at each item of the array that starts next; the caller consumes the item. Consumes the ']'."""
        r = self.r
        r.expect("[")
        if r.peek() == "]":
            r.pos += 1
            return
        while True:
            yield None
            if r.expect(",]") == "]":
                return

    def _messages(self) -> Iterator[Item]:
        """The records of a `messages` array. The hot loop of an import: while a record and the separator after it
        lie inside the buffer it costs one C-scanner call and one regex match; anything else takes the general path."""
        r = self.r
        r.expect("[")
        if r.peek() == "]":
            r.pos += 1
            return
        sep = _SEP.match
        decode = _DECODER.raw_decode
        while True:
            buf, pos = r.buf, r.pos
            end = -1
            try:
                rec, end = decode(buf, pos)
            except (json.JSONDecodeError, RecursionError):
                pass  # the general path below reads it again, and says what is wrong
            m = sep(buf, end) if end >= 0 else None
            if m is None:  # the record or its separator crosses the end of the buffer (or the input is bad)
                rec, size = r.value(MAX_RECORD)
                yield Item("message", value=rec, size=size)
                if r.expect(",]") == "]":
                    return
                r.peek()
                continue
            size = end - pos
            if size > MAX_RECORD:
                raise BadExport(f"a record at {r.where()} is larger than {MAX_RECORD >> 10} KiB characters: "
                                "not a Telegram Desktop export record")
            if buf.count("[", pos, end) + buf.count("{", pos, end) > MAX_DEPTH:  # cheap: few records need the walk
                rec = _bounded(rec, r.where())
            r.pos = m.end()
            yield Item("message", value=rec, size=size)
            if m[1] == "]":
                return

    def _chat_list(self, section: str) -> Iterator[Item]:
        r = self.r
        for _ in self._array():
            r.expect("{")
            yield Item("chat", section=section)
            for key in self._keys():
                if key == "messages":
                    yield from self._messages()
                else:
                    value, _ = r.value()
                    yield Item("chat_meta", key, value)
            yield Item("chat_end")
