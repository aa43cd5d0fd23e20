"""What a grep pattern means on one message text: the query, Unicode case classes, the rg prefilter that can only
over-select, and the authoritative matcher (with a time budget on Python regexes). Used by eventlog/recall/grep.py."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Callable, Iterable

import orjson

from ..errors import EventlogError
from .when import iso

DEFAULT_FUZZY_SCORE = 80.0
_WORD = re.compile(r"\w+")


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
    word: bool = False  # -w: only matches with no word character on either side
    invert: bool = False  # -v: messages that do not match
    accounts: tuple[str, ...] | None = None  # OpenClaw accounts (None: all); "default" is the event without one

    def ts_bounds(self) -> tuple[str | None, str | None]:
        """The bounds as the log writes ts (RFC 3339 UTC, ms): string order is time order."""
        return (iso(self.since) if self.since else None, iso(self.until) if self.until else None)


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

    try:
        parsed = _parser.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError):
        return "", False  # no prefilter; the matcher reports the bad regex
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


# -- matching ------------------------------------------------------------------------------------------------------

class Matcher:
    """The authoritative check on one message text; `spans` are code-point offsets of what matched."""

    def __init__(self, q: GrepQuery) -> None:
        self.q = q
        try:
            q.pattern.encode("utf-8")
        except UnicodeEncodeError:
            raise GrepError("the pattern is not valid UTF-8") from None
        self.guard: RegexGuard | None = None
        flags = re.IGNORECASE if q.ignore_case else 0
        if q.word and q.mode == "fuzzy":
            raise GrepError("-w and --fuzzy cannot be combined (--fuzzy already compares whole words)")
        if q.mode == "regex" or q.word:
            body = q.pattern if q.mode == "regex" else re.escape(q.pattern)
            try:
                if q.word and q.mode == "regex":
                    re.compile(body, flags)  # valid on its own, not only inside the word wrapper
                self.rx: re.Pattern[str] | None = re.compile(rf"(?<!\w)(?:{body})(?!\w)" if q.word else body, flags)
            except (re.error, RecursionError, OverflowError, ValueError) as exc:
                raise GrepError(f"bad regex {q.pattern[:60]!r}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
                                ) from None
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
        if q.mode == "regex" or q.word:
            if self.guard is None:
                self.guard = RegexGuard(q.pattern).start()
            return self.guard.run(lambda: [m.span() for m in self.rx.finditer(text)])  # type: ignore[union-attr]
        return [m.span() for m in self.rx.finditer(text)]

    def found(self, text: str) -> bool:
        """Whether the text matches at all (what a count needs): a plain literal is one `in`, not every span."""
        if self.q.mode == "literal" and self.rx is None:
            return self.q.pattern in text
        return bool(self.spans(text))

    def close(self) -> None:
        if self.guard is not None:
            self.guard.close()
            self.guard = None

    def vocabulary_words(self, vocab: Iterable[str]) -> list[str]:
        """The words (as written) that match some query word."""
        return [w for w in vocab if self._word_hits(w.lower())]


REGEX_BUDGET_S = 10.0  # per command: all the Python-regex checks of one search together (a plain regex over a
#                        year's candidates takes well under a second)


class _Budget(Exception):
    pass


class RegexGuard:
    """A time budget for a search's Python-regex checks, all of them together: rg's engine is linear, Python's
    backtracks, and a pattern like `(a+)+$` can take ages on one text — or most of the budget on each of many texts,
    which is why the budget is not per text (120 such messages took 56 s at 1 s each). Python's `re` checks for signals while it matches, so a repeating SIGALRM timer
    (4 per second, set once per search — no syscall per text) lets the handler stop a check over budget. (A watchdog
    thread cannot: `re` holds the GIL.) Off the main thread (no signals there) checks run unbounded."""

    TICK = 0.25

    def __init__(self, pattern: str, budget: float = REGEX_BUDGET_S) -> None:
        self.pattern, self.budget = pattern, budget
        self.t0: float | None = None
        self.spent = 0.0  # seconds inside checks that ended
        self.checks = 0
        self._old: Any = None
        self._armed = False

    def start(self) -> "RegexGuard":
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        self._old = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)
        self._armed = True
        return self

    def _on_alarm(self, signum: int, frame: Any) -> None:
        import time

        if self.t0 is not None and self.spent + time.monotonic() - self.t0 > self.budget:
            self.t0 = None
            raise _Budget()

    def close(self) -> None:
        import signal

        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)
            self._armed = False

    def run(self, fn: Callable[[], list[tuple[int, int]]]) -> list[tuple[int, int]]:
        import time

        t0 = self.t0 = time.monotonic()
        self.checks += 1
        try:
            return fn()
        except _Budget:
            raise GrepError(f"regex {self.pattern[:60]!r} used up its {self.budget:g} s budget in {self.checks} "
                            "message(s) (catastrophic backtracking?): simplify it, e.g. `(a+)+` → `a+`") from None
        finally:
            self.t0 = None
            self.spent += time.monotonic() - t0
