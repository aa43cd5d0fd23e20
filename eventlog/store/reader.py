"""Streaming reads of the log. A torn final line (a crash mid-write) is reported, never returned as an event."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from .layout import LogFile, log_files

CHUNK = 1 << 20


@dataclass(frozen=True)
class Problem:
    relpath: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.relpath}:{self.line}: {self.reason}"


OnProblem = Callable[[Problem], None]


def iter_lines(path: Path, relpath: str = "", on_problem: OnProblem | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, line bytes without '\\n') for every complete line; a torn tail goes to on_problem."""
    lineno = 0
    carry = b""
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            parts = (carry + chunk).split(b"\n")
            carry = parts.pop()
            for part in parts:
                lineno += 1
                yield lineno, part
    if carry and on_problem:
        on_problem(Problem(relpath or str(path), lineno + 1, f"torn final line ({len(carry)} bytes, no newline): "
                           "a crash mid-write; moved aside on the next append"))


def iter_file_events(lf: LogFile, on_problem: OnProblem | None = None) -> Iterator[dict[str, Any]]:
    for lineno, line in iter_lines(lf.path, lf.relpath, on_problem):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if on_problem:
                on_problem(Problem(lf.relpath, lineno, f"not valid JSON ({exc})"))
            continue
        if isinstance(obj, dict):
            yield obj
        elif on_problem:
            on_problem(Problem(lf.relpath, lineno, "not a JSON object"))


def iter_events(
    root: Path,
    chat: str | list[str] | None = None,
    since: date | None = None,
    until: date | None = None,
    on_problem: OnProblem | None = None,
) -> Iterator[dict[str, Any]]:
    """Every event of the pruned day files, file by file (chat, then day), in file order."""
    for lf in log_files(root, chat, since, until):
        yield from iter_file_events(lf, on_problem)
