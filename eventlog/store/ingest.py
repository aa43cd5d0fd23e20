"""`eventlog append`'s ingest policy: JSON Lines from a stream into the log, with the bad-input rules.

- every line is written whole or not at all, in input order;
- a regular file is one unit: every line is validated (JSON, event, duplicate ids) before the first is written; one
  bad line → BadEvent naming it, nothing written; it is then written in batches of up to FILE_CHUNK bytes of lines;
- a pipe or terminal is a stream: lines are written as one read() delivers them (the group commit of fsync "batch");
  at the first bad line BadEvent names it: every line before it is written, it and every line after it are not;
- `on_written` (--ack) hears each written batch once it is durable under the log's fsync policy; after an I/O error it hears
  what the failing batch had already written before the error propagates;
- `check=True` validates the whole input and writes nothing.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from ..errors import BadEvent, EventlogError
from . import dupids, schema
from .layout import day_relpath
from .writer import EventLog

CHUNK = 1 << 20
# A regular file is validated whole before anything is written, so its batches need not follow read()s: larger ones
# share each chat's once-per-batch work (the day an earlier batch wrote and its lock, the listing of the chat's unsealed
# days, the seal stream's lock, write and fsync, the head's checkpoint) among more day files. A year of 200 chats in
# time order holds ≈ 40 events of each chat per 8 MiB. 32 MiB of lines: ≈ 32,000 events; the writer keeps only their
# encoded lines (`ids_only`), ≈ 3–4 KB an event of this shape against ≈ 10 KB as parsed and prepared objects.
FILE_CHUNK = 32 << 20


def _ignore(_: Any) -> None:
    pass


def ingest(log: EventLog, stream: IO[bytes], *, check: bool = False,
           on_written: Callable[[list[dict[str, Any]]], None] = _ignore,
           on_repaired: Callable[[str], None] = _ignore) -> int:
    """Append the JSON Lines of `stream` to `log` under the rules above; returns how many events were written.
    BadEvent names the bad line. `on_repaired` hears each file whose torn last line (a crash mid-write) the writer
    moved aside, when it happens."""
    written = 0
    check_ids: dict[str, dict[str, int]] = {}
    start = file_offset(stream)
    chunk = CHUNK
    limit = None
    if start is not None and not check:  # a regular file: validate all of it first, then write from where it began
        for first, lines in read_batches(stream):
            numbers, checked, bad = parse_prefix(first, lines)
            try:
                check_only(log.root, numbers, checked, check_ids)
            except BadEvent as exc:
                bad = exc
            if bad:
                raise BadEvent(f"{bad} (nothing was written: a file is written only if every line is valid)")
            del checked  # parsed only to be checked: a batch's objects are freed before the next is read
        limit = stream.tell() - start  # what was validated: lines appended to the file meanwhile are not written
        stream.seek(start)
        check_ids.clear()
        chunk = FILE_CHUNK
    for first, lines in read_batches(stream, chunk, limit):
        if limit is not None:
            # validated: each line is parsed as the writer takes it, and nothing but its encoded form is kept
            # (`ids_only`); an error now can only be one the validation pass cannot see (a line that grows past
            # MAX_LINE with the fields the writer adds), and the lines before it are parsed again to be written
            numbers = [first + i for i, x in enumerate(lines) if x.strip()]
            events: Iterable[dict[str, Any]] = _Parsed(lines, first, numbers)
            bad = None
        else:
            numbers, parsed, bad = parse_prefix(first, lines)
            if check:
                check_only(log.root, numbers, parsed, check_ids)
                if bad:
                    raise bad
                continue
            events = parsed
        while True:
            try:
                result = log.append_many(events, ids_only=limit is not None)
                break
            except BadEvent as exc:
                if exc.index is None:
                    raise
                bad = BadEvent(f"stdin line {numbers[exc.index]}: {exc}")
                numbers, events = numbers[:exc.index], list(events)[:exc.index]  # write the good lines before it
            except (OSError, EventlogError) as exc:
                if getattr(exc, "written", None):
                    on_written(exc.written)  # type: ignore[union-attr]
                raise
        if result.events:
            on_written(result.events)
        written += len(result.events)
        for rel in result.repaired:
            on_repaired(rel)
        if bad:
            done = f"the {written} line(s) before it were written" if written else "nothing was written"
            raise BadEvent(f"{bad} ({done})")
    return written


class _Parsed:
    """The validated lines of one batch as events, parsed one at a time as the writer iterates (so each parsed object
    can go once it is encoded); iterated again (after an error) it parses them again."""

    def __init__(self, lines: list[bytes], first: int, numbers: list[int]) -> None:
        self.lines, self.first, self.numbers = lines, first, numbers

    def __iter__(self) -> Iterator[dict[str, Any]]:
        parse, lines, first = schema.parse_line, self.lines, self.first
        return (parse(lines[n - first]) for n in self.numbers)


def read_batches(stream: IO[bytes], chunk: int = CHUNK, limit: int | None = None
                 ) -> Iterator[tuple[int, list[bytes]]]:
    """Yield (first line number, [complete lines]): the complete lines one read() delivered (the group commit of
    fsync "batch"). A line longer than MAX_LINE raises BadEvent after the lines before it were yielded. `limit`: read
    no more than this many bytes."""
    carry = b""
    lineno = 1
    read = getattr(stream, "read1", stream.read)  # read1: what one read() returns, no waiting for a full chunk
    left = limit
    while True:
        if left is not None:
            if left <= 0:
                break
            data = read(min(chunk, left))
            left -= len(data)
        else:
            data = read(chunk)
        if not data:
            break
        parts = (carry + data).split(b"\n")
        carry = parts.pop()
        if parts:
            yield lineno, parts
            lineno += len(parts)
        if len(carry) > schema.MAX_LINE:
            raise BadEvent(f"stdin line {lineno}: line longer than {schema.MAX_LINE} bytes")
    if carry.strip():
        yield lineno, [carry]


def parse_prefix(first: int, lines: list[bytes]) -> tuple[list[int], list[dict[str, Any]], BadEvent | None]:
    """Parse lines up to the first bad one: (line numbers, objects, the error or None). Blank lines are skipped."""
    numbers: list[int] = []
    events: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(schema.parse_line(line))
        except BadEvent as exc:
            return numbers, events, BadEvent(f"stdin line {first + i}: {exc}")
        numbers.append(first + i)
    return numbers, events, None


def file_offset(stream: IO[bytes]) -> int | None:
    """The current offset if the stream is a regular file (seekable, finite), else None."""
    try:
        fd = stream.fileno()
        return stream.tell() if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, AttributeError, ValueError):  # ValueError: io's "fileno on a closed/unbacked stream"
        return None


def check_only(root: Path, numbers: list[int], events: list[dict[str, Any]],
               supplied: dict[str, dict[str, int]]) -> None:
    """What append_many would refuse, without writing: each event, and supplied ids within the input and against
    the files. `supplied` carries the input's ids from batch to batch."""
    new: dict[str, dict[str, int]] = {}
    for n, ev in zip(numbers, events, strict=True):
        try:
            p = schema.prepare(ev, fill=False)
        except BadEvent as exc:
            raise BadEvent(f"stdin line {n}: {exc}") from None
        if "id" in ev:
            rel = day_relpath(p["channel"], p["chat_id"], p["ts"])
            seen = supplied.setdefault(rel, {})
            if p["id"] in seen:
                raise BadEvent(f"stdin line {n}: duplicate id {p['id']} (also line {seen[p['id']]})")
            seen[p["id"]] = new.setdefault(rel, {})[p["id"]] = n
    try:
        dupids.check_files(str(root), new)
    except BadEvent as exc:
        raise BadEvent(f"stdin line {exc.index}: {exc}") from None
