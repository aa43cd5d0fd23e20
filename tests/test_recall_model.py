"""Model-based test of recall (Hypothesis stateful): random appends (any chat, any day, late events into sealed
days), seals, compactions and re-compactions, time passing, interleaved with `sql` and `grep` queries under random
chats and bounds — every answer must equal an in-memory oracle of what was appended.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from eventlog.recall import compact as compact_mod
from eventlog.recall import query, when
from eventlog.recall.grep import GrepQuery, search
from eventlog.store.seal import seal_closed
from eventlog.store.writer import EventLog

CHATS = ("100", "-200", "300")
# Days across a month boundary, so units (one per month) meet partly compacted months.
DAYS = tuple(date(2026, 10, 31) + timedelta(days=i) for i in range(4))
WORDS = ("alpha", "beta", "Ёлка", "gamma")


def _age(root: Path, seconds: int = 3600) -> None:
    """Time passes: every file and directory under raw/ looks `seconds` older (what a later query sees)."""
    for dirpath, dirnames, filenames in os.walk(root / "raw"):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st_ = os.stat(p)
            os.utime(p, ns=(st_.st_atime_ns - seconds * 10**9, st_.st_mtime_ns - seconds * 10**9))
        st_ = os.stat(dirpath)
        os.utime(dirpath, ns=(st_.st_atime_ns - seconds * 10**9, st_.st_mtime_ns - seconds * 10**9))


NOW = datetime(2026, 11, 2, 10, 30, tzinfo=timezone.utc)  # "now" for relative WHENs (today, 5h, monday…)
WHENS = st.one_of(
    st.sampled_from(["today", "yesterday", "this-week", "last-week", "this-month", "last-month", "monday", "sun",
                     "2026-10", "2026-11", "3h", "30m", "2d", "1w", "now"]),
    st.sampled_from([d.isoformat() for d in DAYS]),
    st.builds(lambda d, h, off: f"{d.isoformat()}T{h:02d}:15:00{off}", st.sampled_from(DAYS), st.integers(0, 23),
              st.sampled_from(["Z", "+03:00", "-08:00", ""])),
)
ZONES = st.sampled_from(["UTC", "Europe/Moscow", "America/Los_Angeles", "+05:30", "Pacific/Kiritimati"])


def bounds(since_text, until_text, tz_name):
    tz = when.zone(tz_name)
    since = when.since(since_text, tz, NOW) if since_text else None
    until = when.until(until_text, tz, NOW) if until_text else None
    if since and until and since >= until:
        since, until = None, until
    return since, until


chat_sets = st.one_of(st.none(), st.lists(st.sampled_from(CHATS), min_size=1, max_size=2, unique=True).map(tuple))
days = st.sampled_from(DAYS)


class RecallModel(RuleBasedStateMachine):
    @initialize(batch=st.lists(st.tuples(st.sampled_from(CHATS), st.sampled_from(DAYS), st.integers(0, 23),
                                         st.sampled_from(WORDS), st.sampled_from(["message:received", "message:sent"])),
                               min_size=0, max_size=30))
    def setup(self, batch=()) -> None:
        self.dir = tempfile.mkdtemp(prefix="recall-model-")
        self.root = Path(self.dir)
        self.log = EventLog(self.root, fsync="never", autoseal=False)
        self.events: list[dict] = []  # what the writer returned (ts, id, chat, text)
        self.n = 0
        for args in batch:  # a log that already has history
            self.append(*args)

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(chat=st.sampled_from(CHATS), day=days, hour=st.integers(0, 23), word=st.sampled_from(WORDS),
          kind=st.sampled_from(["message:received", "message:sent", "tap:note"]))
    def append(self, chat: str, day: date, hour: int, word: str, kind: str) -> None:
        self.n += 1
        ev = {"event": kind, "channel": "telegram", "chat_id": chat, "text": f"{word} {self.n}",
              "ts": f"{day.isoformat()}T{hour:02d}:{self.n % 60:02d}:00.{self.n % 1000:03d}Z"}
        if self.n % 7 == 0:  # bounds fall exactly on some events
            ev["ts"] = f"{day.isoformat()}T{hour:02d}:15:00.000Z"
        if kind != "tap:note":
            ev["direction"] = "in" if kind == "message:received" else "out"
        self.events.append(self.log.append(ev))

    @rule(batch=st.lists(st.tuples(st.sampled_from(CHATS), days, st.integers(0, 23), st.sampled_from(WORDS),
                                   st.sampled_from(["message:received", "message:sent"])), min_size=1, max_size=8))
    def append_burst(self, batch) -> None:
        for args in batch:
            self.append(*args)

    @rule(through=days)
    def seal(self, through: date) -> None:
        seal_closed(self.log, through=through)

    @rule(before=days, rebuild=st.booleans())
    def compact(self, before: date, rebuild: bool) -> None:
        compact_mod.compact(self.root, before=before, rebuild=rebuild)

    @rule()
    def time_passes(self) -> None:
        _age(self.root)

    def _expected(self, chats, since, until) -> list[str]:
        lo, hi = (when.iso(since) if since else None), (when.iso(until) if until else None)
        return sorted(e["id"] for e in self.events
                      if (not chats or e["chat_id"] in chats)
                      and (lo is None or e["ts"] >= lo) and (hi is None or e["ts"] < hi))

    @rule(chats=chat_sets, since=st.one_of(st.none(), WHENS), until=st.one_of(st.none(), WHENS), tz=ZONES)
    def sql(self, chats, since, until, tz) -> None:
        since, until = bounds(since, until, tz)
        scope = query.Scope(self.root, chats, since, until)
        con, src = query.connect(scope)
        got = sorted(r[0] for r in con.execute("SELECT id FROM events").fetchall())
        con.close()
        assert got == self._expected(chats, since, until), query.explain_text(scope, src)

    @rule(chats=chat_sets, since=st.one_of(st.none(), WHENS), until=st.one_of(st.none(), WHENS), tz=ZONES,
          word=st.sampled_from(WORDS))
    def grep(self, chats, since, until, tz, word) -> None:
        since, until = bounds(since, until, tz)
        got = sorted(h.event["id"] for h in search(self.root, GrepQuery(word, chats=chats, since=since, until=until)))
        want = [i for i in self._expected(chats, since, until)
                if any(e["id"] == i and e["event"] != "tap:note" and word in e["text"] for e in self.events)]
        assert got == sorted(want)

    @precondition(lambda self: hasattr(self, "root"))
    @invariant()
    def check_passes(self) -> None:
        assert compact_mod.verify_units(self.root)[0] == []


RecallModel.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestRecallModel = RecallModel.TestCase
