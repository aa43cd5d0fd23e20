"""The agent's trail: which `recall:query` events on the system stream concern what one `forget` erases.

A tool call is recorded as a `recall:query` event (agent/record.py): the model's question in `args`, the requester in
`from`, the hit ids in `payload` — all content fields, so erasing the line (its commitment form) removes them and the
chain still verifies. A call concerns the erased scope when it was scoped to the erased chat (`scope_chat`), asked by
it (`from.id`: in a private chat the user's id is the chat id), or returned a hit in it (an owner's `scope: "all"`
call included) or showed one of its messages as a turn beside a hit (`payload.context_ids`, eventlog_search's
`context`). Such a call loses its question, its requester and its whole hit list: the hit list is one commitment,
and the question of a call that found A's messages is about A as much as about anyone.
Calls recorded before the hit ids moved into `payload` keep a top-level `ids` the chain covers: forget erases their
question and requester, not their ids (docs/store.md, Erasure).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from ..store.layout import LogFile, log_files
from ..store.reader import iter_lines

Select = Callable[[dict[str, Any]], bool]


def all_ids(files: list[LogFile]) -> set[str]:
    """Every event id in the given day files, erased lines included (an id is metadata: it outlives its content)."""
    out: set[str] = set()
    for lf in files:
        for _, line in iter_lines(lf.path, lf.relpath):
            try:
                eid = orjson.loads(line).get("id")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(eid, str):
                out.add(eid)
    return out


def concerns(chat: str | None, ids: set[str]) -> Select:
    """Does a live `recall:query` event concern the chat (or the erased events `ids`)?"""
    def select(obj: dict[str, Any]) -> bool:
        if obj.get("event") != "recall:query":
            return False
        if chat is not None:
            who = obj.get("from")
            if str(obj.get("scope_chat")) == chat or (isinstance(who, dict) and str(who.get("id")) == chat):
                return True
        payload = obj.get("payload")
        hits = payload.get("ids") if isinstance(payload, dict) else obj.get("ids")
        # the turns shown beside the hits (eventlog_search's `context`) were shown too
        near = payload.get("context_ids") if isinstance(payload, dict) else None
        return any(isinstance(xs, list) and any(isinstance(h, str) and h in ids for h in xs) for xs in (hits, near))
    return select


def trail_files(root: Path, skip: set[str]) -> Iterator[LogFile]:
    """The system stream's day files that are not already erased whole (`skip`)."""
    for lf in log_files(root, "eventlog", channel="system"):
        if lf.relpath not in skip:
            yield lf


def selected_lines(lf: LogFile, select: Select) -> int:
    """How many live lines of `lf` the selection would erase (for the plan)."""
    n = 0
    for _, line in iter_lines(lf.path, lf.relpath):
        if b'"salt":"' in line and b'"recall:query"' in line:
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            n += isinstance(obj, dict) and select(obj)
    return n
