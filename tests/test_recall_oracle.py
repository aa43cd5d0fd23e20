"""`eventlog grep` equals a brute-force Python oracle on random corpora (Hypothesis): literal, -i, -E, --fuzzy.

Texts and patterns mix Cyrillic (ё/Ё), emoji, characters JSON escapes (quotes, backslashes, newlines, tabs, control
characters) and the awkward case-folding letters (İ ı ſ K ß ẞ). Non-message events and other fields carrying the pattern
check that only message text is searched.
"""
from __future__ import annotations

import re
import tempfile
from datetime import date
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from eventlog.recall.compact import compact
from eventlog.recall.grep import GrepQuery, search
from eventlog.store.writer import EventLog

ALPHA = list("abAB sSkKiI.-*/ёЁеЕдДоО") + ["ß", "ẞ", "ſ", "\u212a", "İ", "ı", "é", "É", "😀", "🙂", '"', "\\", "\n",
                                            "\t", "\x01", "\x00", "\u2028", "{", "}", ":", ","]
texts = st.one_of(st.text(alphabet=st.sampled_from(ALPHA), max_size=30), st.text(max_size=12))

CHATS = ("100", "-200", "@team")
DAYS = ("2026-10-01", "2026-10-02")


@st.composite
def corpora(draw):
    n = draw(st.integers(1, 25))
    events = []
    for i in range(n):
        chat = draw(st.sampled_from(CHATS))
        day = draw(st.sampled_from(DAYS))
        kind = draw(st.sampled_from(["message:received", "message:sent", "message:received", "dlp:alert"]))
        text = draw(texts)
        other = draw(texts)  # lands in fields that must not be searched
        ev = {"event": kind, "channel": "telegram", "chat_id": chat, "ts": f"{day}T{10 + i % 10:02d}:00:00.{i:03d}Z",
              "direction": "in" if kind == "message:received" else "out", "text": text,
              "from": {"id": i, "name": other, "username": draw(st.sampled_from(["ann", "bob"]))},
              "raw": {"note": other}}
        if draw(st.booleans()) and kind != "dlp:alert":
            del ev["text"]  # a message without text (a sticker, a reaction) never matches
        events.append(ev)
    return events


def write(root: Path, events: list[dict]) -> list[tuple[str, int, dict]]:
    """Write through the real writer; return (relpath, line, event) in file order, as the oracle sees them."""
    log = EventLog(root, fsync="never", autoseal=False)
    placed: dict[str, list[dict]] = {}
    for ev in events:
        out = log.append(ev)
        rel = f"raw/telegram/chats/{out['chat_id']}/{out['ts'][:4]}/{out['ts'][5:7]}/{out['ts'][8:10]}.jsonl"
        placed.setdefault(rel, []).append(out)
    return [(rel, i + 1, ev) for rel in sorted(placed) for i, ev in enumerate(placed[rel])]


def oracle(placed, match) -> list[tuple[str, int]]:
    return [(rel, line) for rel, line, ev in placed
            if ev["event"] in ("message:received", "message:sent") and isinstance(ev.get("text"), str)
            and match(ev["text"])]


def found(root: Path, q: GrepQuery) -> list[tuple[str, int]]:
    return [(h.relpath, h.line) for h in search(root, q)]


@st.composite
def case_and_pattern(draw):
    events = draw(corpora())
    texts_ = [e.get("text", "") for e in events]
    source = draw(st.sampled_from(texts_)) if texts_ else ""
    a = draw(st.integers(0, len(source)))
    b = draw(st.integers(a, min(len(source), a + 8)))
    pattern = draw(st.one_of(st.just(source[a:b]), st.text(alphabet=st.sampled_from(ALPHA), min_size=1, max_size=4)))
    if draw(st.booleans()):
        pattern = pattern.swapcase()
    return events, pattern


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _msg(text: str, i: int = 0) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": "100", "text": text,
            "ts": f"2026-10-01T10:00:00.{i:03d}Z"}


# The traps, pinned: characters JSON escapes, and letters whose case partners are not what .upper() suggests.
TRAPS = [('a\nb "q" \\ \t\x00\x01 end', 'b "q" \\ \t\x00'), ("Straſſe KELVIN \u212aelvin", "STRASSE"),
         ("Straſſe KELVIN \u212aelvin", "kelvin"), ("İstanbul ıi", "ISTANBUL"), ("Ёлка и ёж", "ёЛКА"),
         ("ẞ groß", "ß"), ("µ micro", "Μ"), ('{"text": "x"}', '"text"'), ("line\u2028sep", "\u2028")]


@SETTINGS
@given(case_and_pattern())
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[0][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[1][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[2][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[3][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[4][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[5][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[6][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[7][1]))
@example(([_msg(t, i) for i, (t, _) in enumerate(TRAPS)], TRAPS[8][1]))
def test_literal_and_ignore_case_equal_oracle(case):
    events, pattern = case
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        placed = write(root, events)
        assert found(root, GrepQuery(pattern)) == oracle(placed, lambda t: pattern in t)
        rx = re.compile(re.escape(pattern), re.IGNORECASE)
        assert found(root, GrepQuery(pattern, ignore_case=True)) == oracle(placed, lambda t: rx.search(t) is not None)


regex_parts = st.one_of(
    st.text(alphabet=st.sampled_from(ALPHA), min_size=1, max_size=3).map(re.escape),
    st.sampled_from([".", r"\w+", r"\s", "[ёЁе]", "(a|б)", r"\d*", "^", "$", "K?", r"\\", '"', r"\n", "(?i:ё)"]),
)


@SETTINGS
@given(corpora(), st.lists(regex_parts, min_size=1, max_size=4).map("".join), st.booleans())
def test_regex_equals_oracle(events, pattern, icase):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        placed = write(root, events)
        rx = re.compile(pattern, re.IGNORECASE if icase else 0)
        q = GrepQuery(pattern, mode="regex", ignore_case=icase)
        assert found(root, q) == oracle(placed, lambda t: rx.search(t) is not None)


def fuzzy_oracle(query: str, score: float):
    qwords = [w.lower() for w in re.findall(r"\w+", query)]

    def match(text: str) -> bool:
        words = [w.lower() for w in re.findall(r"\w+", text)]
        return all(any(fuzz.ratio(q, w) >= score for w in words) for q in qwords)
    return match


FUZZY_WORDS = ["договор", "договора", "договору", "договорённость", "contract", "contarct", "kontrakt", "Ёлка",
               "елка", "ёлки", "ДОГОВОР", "x"]


@SETTINGS
@given(st.lists(st.lists(st.sampled_from(FUZZY_WORDS + ["и", "the", "😀", '"q"']), max_size=6).map(" ".join),
                min_size=1, max_size=20),
       st.sampled_from(FUZZY_WORDS[:-1] + ["договор contract"]), st.sampled_from([60.0, 80.0, 90.0]), st.booleans())
@example(["ДОГОВОР x", "по договору", "договорённость"], "договор", 80.0, True)
@example(["ДОГОВОР x", "по договору", "contarct signed"], "договор contract", 80.0, False)
@example(["Ёлка", "елки ёлки", "x"], "ёлка", 60.0, True)
def test_fuzzy_equals_oracle(text_list, query, score, compacted):
    events = [{"event": "message:received", "channel": "telegram", "chat_id": CHATS[i % 3], "text": t,
               "ts": f"{DAYS[i % 2]}T10:00:00.{i:03d}Z"} for i, t in enumerate(text_list)]
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        placed = write(root, events)
        if compacted:  # fuzzy then reads the month's vocabulary instead of scanning
            compact(root, before=date(2026, 10, 2))  # only Oct 1 is compacted: both paths mix
        q = GrepQuery(query, mode="fuzzy", fuzzy_score=score)
        assert found(root, q) == oracle(placed, fuzzy_oracle(query, score))
