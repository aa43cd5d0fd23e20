"""`eventlog grep`: search message text — literal, case-insensitive, regex, fuzzy — grep-first.

Why ripgrep: measured here, `rg` scans the whole 73k-file log in ~0.5 s, DuckDB's JSON reader needs ~20 s and a Python
read-and-substring pass ~1.8 s. But rg sees JSON lines, not texts, so it is only a *prefilter*: the log's encoding is
fixed (raw UTF-8, only `"`, `\\` and control characters escaped, docs/log-format.md), so a text containing P is a line
containing escape(P). rg looks for escape(P) — as a regex in which each cased character is the exact class of characters
Python's `re.IGNORECASE` equates with it — and every candidate line is parsed and checked against the `text` field in
Python. The prefilter can only over-select; the check decides. That is what makes the result equal the brute-force
oracle in tests/test_recall_oracle.py.

Regexes (`-E`, Python `re` syntax) use the longest run of literal characters the regex must contain as the prefilter; a
regex without one is checked on every message. Fuzzy (`--fuzzy`) compares words with rapidfuzz's `ratio` (typos and word
forms: "договор" finds "договора"); a word's verdict is memoised, so each distinct word is scored once.
"""
from __future__ import annotations

import os
import re
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from datetime import datetime
from typing import Any, BinaryIO, Callable, Generator, Iterable, Iterator

import orjson

from ..store.layout import RAW, log_files, parse_relpath
from ..store.schema import DEFAULT_ACCOUNT
from .textmatch import (DEFAULT_FUZZY_SCORE, ODD_UPPER, GrepError, GrepQuery, Matcher, RegexGuard,  # noqa: F401
                        fold_class, json_escape, prefilter_regex, required_literal)
from ..store.render import MESSAGE_EVENTS, sent_by  # noqa: F401 (MESSAGE_EVENTS: grep's public name)
from .when import utc_days

_ARG_BUDGET = 96 * 1024  # bytes of file paths per rg invocation (ARG_MAX is 2 MiB here; stay far below)

# A candidate line: (absolute path, line number — 0 when not asked of rg —, byte offset — -1 when not known —, bytes).
Candidate = tuple[str, int, int, bytes]


@dataclass
class Hit:
    relpath: str
    line: int
    event: dict[str, Any]
    spans: list[tuple[int, int]] = field(default_factory=list)  # code-point offsets into event["text"]
    kind: str = "match"  # match | context


def rg_binary() -> str:
    """The rg that ships in the venv (PyPI `ripgrep==14.1.0`), else one on PATH."""
    here = Path(sys.executable).parent / "rg"
    if here.is_file():
        return str(here)
    import shutil

    found = shutil.which("rg")
    if not found:
        raise GrepError("ripgrep (`rg`) not found; install the PyPI package ripgrep==14.1.0")
    return found


def _error_sink() -> BinaryIO:
    """Where rg's stderr goes: a file, not a pipe (rg may report many unreadable files while we are still reading its
    stdout). An anonymous memory file where the system has one: importing tempfile cost more than a whole-log count's
    own Python work."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("eventlog-rg-stderr", os.MFD_CLOEXEC), "w+b")
    import tempfile

    return tempfile.TemporaryFile()


def rg_argv(regex: str, paths: list[str], numbered: bool = True) -> list[str]:
    """The rg command for one batch of paths. No ignore files are read (rg would look for .gitignore/.ignore in every
    directory of the tree), no line numbers are counted unless asked (a count needs none: rg then only finds lines)."""
    return [rg_binary(), "--no-config", "--no-ignore", "--hidden", "--no-heading", "--with-filename",
            *(["--line-number"] if numbered else []), "--null", "--byte-offset", "--text", "--glob", "*.jsonl",
            "-e", regex, "--", *paths]


def _rg_candidates(root: Path, regex: str, paths: list[str], numbered: bool = True) -> Iterator[Candidate]:
    """Every line matching `regex` except torn tails, unordered; line numbers only when `numbered`."""
    files: dict[bytes, tuple[str, int]] = {}  # rg's path → (path, size): decoded and stat'ed once per file
    batches: list[list[str]] = []
    cur: list[str] = []
    size = 0
    for p in paths:
        if cur and size + len(p) > _ARG_BUDGET:
            batches.append(cur)
            cur, size = [], 0
        cur.append(p)
        size += len(p) + 1
    if cur:
        batches.append(cur)
    for batch in batches:
        with _error_sink() as errf:
            pid, stdout = _spawn(rg_argv(regex, batch, numbered), errf.fileno())
            try:
                for raw in stdout:
                    path_b, _, rest = raw.partition(b"\0")
                    num = 0
                    if numbered:
                        num_b, _, rest = rest.partition(b":")
                        num = int(num_b)
                    offset_b, _, line = rest.partition(b":")
                    offset = int(offset_b)
                    line = line[:-1] if line.endswith(b"\n") else line
                    known = files.get(path_b)
                    if known is None:
                        path = path_b.decode("utf-8", "surrogateescape")
                        known = files[path_b] = (path, os.stat(path).st_size)
                    path, fsize = known
                    if offset + len(line) >= fsize:
                        continue  # no newline after it: a torn tail, not an event (grep and -c agree)
                    yield path, num, offset, line
            finally:
                stdout.close()  # if the caller stopped early (e.g. a closed pipe), rg's next write ends it
                code = _wait(pid)
            if code not in (0, 1):
                errf.seek(0)
                first = errf.read().decode("utf-8", "replace").strip().splitlines()
                raise GrepError("rg failed: " + (first[0] if first else f"exit {code}"))


def _spawn(argv: list[str], err_fd: int) -> tuple[int, BinaryIO]:
    """Start rg with its stdout on a pipe (returned, to read) and its stderr on `err_fd`. posix_spawn, not subprocess:
    importing subprocess cost ≈ 3 ms of a whole-log count's ≈ 75 ms of Python. The child gets SIGPIPE's default
    action back (Python ignores it; Popen restores it the same way), and only fds 0–2 (Python's are close-on-exec)."""
    r, w = os.pipe()
    try:
        pid = os.posix_spawn(argv[0], argv, os.environ, setsigdef=(signal.SIGPIPE,),
                             file_actions=[(os.POSIX_SPAWN_DUP2, w, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)])
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return pid, open(r, "rb")


def _wait(pid: int) -> int:
    """rg's exit code (-N when signal N ended it, as Popen.wait says)."""
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _line_number(path: str, offset: int) -> int:
    """The number of the line starting at byte `offset` (only for a problem report: a count asks rg for none)."""
    with open(path, "rb") as f:
        return f.read(offset).count(b"\n") + 1


def is_candidate(ev: Any, q: GrepQuery) -> bool:
    """Filters other than the text match: a message event with a text, direction and sender as asked."""
    if not isinstance(ev, dict) or not isinstance(ev.get("text"), str) or ev.get("event") not in MESSAGE_EVENTS:
        return False
    if q.direction and ev.get("direction") != q.direction:
        return False
    if q.accounts and ev.get("account", DEFAULT_ACCOUNT) not in q.accounts:
        return False  # also a line of a log not yet migrated (another account's, in the default account's file)
    if q.sender and not sent_by(ev, q.sender):
        return False
    if q.since or q.until:
        lo, hi = q.ts_bounds()
        ts = ev.get("ts")
        if not isinstance(ts, str) or (lo and ts < lo) or (hi and ts >= hi):
            return False
    return True


# -- the search --------------------------------------------------------------------------------------------------------

def _scope_paths(root: Path, q: GrepQuery) -> list[str]:
    if not q.chats and not q.since and not q.until and not q.accounts:
        return [str(root / RAW)] if (root / RAW).is_dir() else []  # let rg walk it: no 73k-name argument list
    first, last = utc_days(q.since, q.until)
    # the default account's files may still hold other accounts' lines (before `eventlog migrate`): is_candidate decides
    accounts = None if q.accounts is None else {*q.accounts, DEFAULT_ACCOUNT}
    return [str(lf.path) for lf in log_files(root, chat=list(q.chats) if q.chats else None, since=first, until=last,
                                             accounts=accounts)]


def _full_scan(root: Path, q: GrepQuery, paths: list[str]) -> Iterator[Candidate]:
    """No usable literal: every line of every file in scope."""
    from ..store.reader import iter_lines

    if paths == [str(root / RAW)]:
        files: Iterable[str] = (str(lf.path) for lf in log_files(root))
    else:
        files = paths
    for p in files:
        for n, line in iter_lines(Path(p)):
            yield p, n, -1, line


def _matches(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None, numbered: bool = True
             ) -> Iterator[tuple[str, int, list[tuple[int, int]]]]:
    """(relpath, line, spans) of every match, unordered (rg searches files in parallel); line is 0 and spans are
    empty unless `numbered` (a count needs neither: rg then counts no lines, and a text is only tested)."""
    matcher = Matcher(q)
    paths = _scope_paths(root, q)
    if not paths:
        return
    if q.invert:  # every message in scope is a candidate
        cands: Iterable[Candidate] = _full_scan(root, q, paths)
    elif q.mode == "literal":
        cands = _rg_candidates(root, prefilter_regex(q.pattern, q.ignore_case), paths, numbered)
    elif q.mode == "regex":
        lit, icase = required_literal(q.pattern, re.IGNORECASE if q.ignore_case else 0)
        cands = (_rg_candidates(root, prefilter_regex(lit, icase), paths, numbered) if lit
                 else _full_scan(root, q, paths))
    else:
        cands = _fuzzy_candidates(root, q, matcher, paths, numbered)
    prefix = len(str(root)) + 1
    try:
        yield from _checked(cands, matcher, q, prefix, on_problem, spans=numbered)
    finally:
        matcher.close()


def _checked(cands: Iterable[Candidate], matcher: Matcher, q: GrepQuery, prefix: int,
             on_problem: Callable[[str], None] | None, spans: bool = True
             ) -> Iterator[tuple[str, int, list[tuple[int, int]]]]:
    """The candidates that are matches (or, with -v, messages that are not), with their spans — or, when `spans` is
    false (a count), with none: only whether it matched is decided."""
    for path, num, offset, line in cands:
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            if on_problem:
                on_problem(f"{path[prefix:]}:{num or _line_number(path, offset)}: not valid JSON, skipped")
            continue
        if not is_candidate(ev, q):
            continue
        if not spans:
            if matcher.found(ev["text"]) != q.invert:
                yield path[prefix:], num, []
            continue
        found = matcher.spans(ev["text"])
        if q.invert:
            if not found:
                yield path[prefix:], num, []
        elif found:
            yield path[prefix:], num, found


def count(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None = None) -> int:
    """How many messages match (nothing is kept in memory)."""
    return sum(1 for _ in _matches(root, q, on_problem, numbered=False))


def count_by_chat(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None = None,
                  max_per_chat: int | None = None) -> dict[tuple[str, str, str], int]:
    """(channel, account, chat_id) → matching messages (at most `max_per_chat` each, like `-m`), sorted as the
    layout lists them (the default account first)."""
    out: dict[tuple[str, str, str], int] = {}
    keys: dict[str, tuple[str, str, str] | None] = {}  # relpath → its chat: parsed once per file, not per match
    for rel, _, _ in _matches(root, q, on_problem, numbered=False):
        if rel not in keys:
            p = parse_relpath(rel)
            keys[rel] = None if p is None else (p.channel, p.account, p.chat_id)
        key = keys[rel]
        if key is not None:
            out[key] = out.get(key, 0) + 1
    if max_per_chat is not None:
        out = {k: min(v, max_per_chat) for k, v in out.items()}
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1] != DEFAULT_ACCOUNT, kv[0][1], kv[0][2])))


def limit_per_chat(hits: Iterable[Hit], m: int | None) -> Iterator[Hit]:
    """At most `m` matches per chat (`-m`; hits come chat by chat)."""
    seen: dict[str, int] = {}
    for h in hits:
        chat = h.relpath.rsplit("/", 3)[0]  # the partition's directory: (channel, account, chat)
        if m is not None and seen.get(chat, 0) >= m:
            continue
        seen[chat] = seen.get(chat, 0) + 1
        yield h


def search(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None = None) -> Generator[Hit, None, None]:
    """Every matching message in (file, line) order — file order is chat, then day.

    Only (line number, spans) per match is held while rg runs — not the lines, so a pattern matching every one of a
    million events stays far below the memory budget; the events are then re-read file by file in order."""
    from ..store.reader import iter_lines

    by_file: dict[str, list[tuple[int, list[tuple[int, int]]]]] = {}
    for rel, num, spans in _matches(root, q, on_problem):
        by_file.setdefault(rel, []).append((num, spans))
    for rel in sorted(by_file):
        wanted = dict(sorted(by_file.pop(rel)))
        last = max(wanted)
        for num, line in iter_lines(root / rel):
            if num in wanted:
                yield Hit(rel, num, orjson.loads(line), wanted[num])
            if num >= last:
                break


def _fuzzy_candidates(root: Path, q: GrepQuery, matcher: Matcher, paths: list[str], numbered: bool = True
                      ) -> Iterator[Candidate]:
    """Words of compacted months come from their vocabulary (no scan); the matching words then drive one rg pass over
    those months. Files no compaction covers are read line by line."""
    from .compact import unit_vocabulary
    from .planner import Scope, plan

    src = plan(Scope(root, q.chats, q.since, q.until))
    words: set[str] = set()
    scan = list(src.jsonl)
    for pq in src.parquet:
        vocab = unit_vocabulary(Path(pq))
        if vocab is None:  # no vocabulary: read what the compaction covers instead
            scan.extend(str(root / rel) for rel in src.covered)
            words.clear()
            src.covered = []
            break
        words.update(matcher.vocabulary_words(vocab))
    if src.covered and words:
        # The words as written: a text containing one contains it verbatim, so the alternation is exact.
        alternation = "|".join(prefilter_regex(w, False) for w in sorted(words, key=len, reverse=True))
        # One rg pass over the scope (a directory, not 73k file names); files that are scanned below are skipped here.
        covered = {str(root / rel) for rel in src.covered}
        yield from (c for c in _rg_candidates(root, alternation, paths, numbered) if c[0] in covered)
    yield from _full_scan(root, q, sorted(set(scan)))


# -- context -----------------------------------------------------------------------------------------------------------

def with_context(root: Path, hits: Iterable[Hit], n: int, q: GrepQuery, after: int | None = None
                 ) -> Iterator[list[Hit]]:
    """Group hits with up to `n` messages (message events with a text) before (and `after`, default `n`, after)
    each, from the same chat's day file; overlapping windows merge (like grep -B/-A/-C). One list per group."""
    from ..store.reader import iter_lines

    after = n if after is None else after
    if n <= 0 and after <= 0:
        for h in hits:
            yield [h]
        return
    from itertools import groupby

    for rel, file_hits in groupby(hits, key=lambda h: h.relpath):  # hits come file by file: one file in memory
        matches = {h.line: h for h in file_hits}
        msgs: list[tuple[int, dict[str, Any]]] = []
        for num, line in iter_lines(root / rel):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if num in matches or (isinstance(ev, dict) and ev.get("event") in MESSAGE_EVENTS
                                   and isinstance(ev.get("text"), str)):
                msgs.append((num, ev))
        idx = [i for i, (num, _) in enumerate(msgs) if num in matches]
        group: list[Hit] = []
        last = -1
        for i in idx:
            lo, hi = max(0, i - n), min(len(msgs) - 1, i + after)
            if group and lo > last + 1:
                yield group
                group = []
            for j in range(max(lo, last + 1), hi + 1):
                num, ev = msgs[j]
                group.append(matches[num] if num in matches else Hit(rel, num, ev, [], "context"))
            last = max(last, hi)
        if group:
            yield group




def newest(root: Path, text: str, *, fuzzy: bool = False, chats: tuple[str, ...] | None = None,
           since: datetime | None = None, until: datetime | None = None, direction: str | None = None,
           limit: int = 10, accounts: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The `limit` newest messages containing all of `text`'s words (case-insensitive), or with every word matched by
    a similar word (`fuzzy`: rapidfuzz ratio ≥ 80) — `eventlog search --mode text|fuzzy`, which has no relevance. The
    search package takes this as its text scan (search → recall is not an arrow; the CLI hands it over). since and
    until are exact instants, [since, until), as SearchQuery's."""
    import heapq

    lo, hi = since, until
    words = text.split()
    if not fuzzy:
        pattern = max(words, key=len)
        gq = GrepQuery(pattern, mode="literal", ignore_case=True, chats=chats, since=lo, until=hi, direction=direction,
                       accounts=accounts)
        rest = [w.casefold() for w in words if w != pattern]
        events: Iterable[dict[str, Any]] = (h.event for h in search(root, gq)
                                            if all(w in h.event["text"].casefold() for w in rest))
    else:
        gq = GrepQuery(text, mode="fuzzy", ignore_case=True, chats=chats, since=lo, until=hi, direction=direction,
                       accounts=accounts)
        events = (h.event for h in search(root, gq))
    return heapq.nlargest(limit, events, key=lambda ev: str(ev.get("ts")))  # memory: `limit` events, not all hits
