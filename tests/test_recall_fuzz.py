"""A 10,000-case fuzz of every time option and grep pattern: one line and exit 2 or a normal answer, never a
traceback. Bounded by count (Hypothesis max_examples), not by a timer; in-process (CliRunner), so it stays fast.

Split: 4,000 time values through the parser (`when.period` with random zones and nows), 3,000 patterns through the
matcher and prefilter (`Matcher`, `prefilter_regex`, `required_literal`), 2,000 `sql --explain` and 1,000 `grep`
invocations with random --since/--until/--tz and patterns over a small log.
"""
from __future__ import annotations

import re
import string
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.recall import when
from eventlog.cli.main import cli
from eventlog.errors import EventlogError
from eventlog.recall.textmatch import GrepQuery, Matcher, prefilter_regex, required_literal
from eventlog.store.writer import EventLog

FORMS = ["today", "yesterday", "now", "this-week", "last-week", "this-month", "last-month", "monday", "sun", "Fri"]
time_values = st.one_of(
    st.sampled_from(FORMS),
    st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**12), st.sampled_from(["m", "h", "d", "w", "min", "s", ""])),
    st.builds(lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}", st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32)),
    st.builds(lambda y, m: f"{y}-{m:02d}", st.integers(0, 99999), st.integers(0, 13)),
    st.builds(lambda y, h, off: f"{y:04d}-01-01T{h:02d}:00:00{off}", st.integers(0, 9999), st.integers(0, 25),
              st.sampled_from(["Z", "+01:00", "-14:00", "+99:00", "", ".123456789Z", "+0100"])),
    st.text(alphabet=string.printable + "ёЁ\u0000\udcff😀", max_size=30),
)
zones = st.one_of(st.sampled_from(["UTC", "Europe/Moscow", "America/Los_Angeles", "Pacific/Kiritimati",
                                   "Pacific/Niue", "+05:45", "-12:00", "Mars/Base", "../x", "", "+24:00"]),
                  st.text(max_size=12))
patterns = st.one_of(st.text(max_size=12),
                     st.text(alphabet="ab()[]{}*+?|\\^$.-,:=!<>#0123456789wWsSdDbBAZ ", max_size=16),
                     st.sampled_from(["(a+)+$", "(?P<x>a)(?P=x)", "[", "a{99999999999}", "\\", "(?<=a+)b", "\udcff",
                                      "(?i)ё", "\\N{LATIN SMALL LETTER A}", "\\p{L}", "(?#c)a", "a**"]))
def fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                    derandomize=True)


@fuzz(4000)
@given(time_values, zones, st.integers(0, 4 * 10**9), st.booleans())
def test_time_values_parse_or_fail_cleanly(value, tz_name, now_s, as_until):
    now = datetime.fromtimestamp(now_s, timezone.utc)
    try:
        tz = when.zone(tz_name)
        t = (when.until if as_until else when.since)(value, tz, now)
    except EventlogError as exc:
        assert "\n" not in str(exc)
        return
    assert t.tzinfo is not None
    when.iso(t)
    when.utc_days(t, None)


@fuzz(3000)
@given(patterns, st.sampled_from(["literal", "regex", "fuzzy"]), st.booleans(), st.booleans(), st.booleans())
def test_patterns_compile_or_fail_cleanly(pattern, mode, icase, word, invert):
    try:
        m = Matcher(GrepQuery(pattern, mode, icase, word=word, invert=invert))
    except EventlogError as exc:
        assert "\n" not in str(exc)
        return
    try:
        prefilter_regex(pattern, icase)
        if mode == "regex":
            required_literal(pattern, re.IGNORECASE if icase else 0)
        m.spans("aaaa bbb ёЁ 😀 \"q\" \\ x")
    except EventlogError as exc:
        assert "\n" not in str(exc)
    finally:
        m.close()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    for i, text in enumerate(["alpha", "Ёлка beta", "gamma (a+)", "\"quoted\" \\ slash"]):
        log.append({"event": "message:received", "channel": "telegram", "chat_id": str(100 + i % 2), "text": text,
                    "direction": "in", "ts": f"2026-11-{1 + i:02d}T10:00:00.000Z"})
    return root


def _clean(r) -> None:
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 1, 2), r.output
    assert "Traceback" not in r.output
    if r.exit_code == 2:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@fuzz(2000)
@given(st.one_of(st.none(), time_values), st.one_of(st.none(), time_values), st.one_of(st.none(), zones))
def test_sql_time_options_never_traceback(tiny, since, until, tz):
    args = ["sql", "SELECT 1", "--explain", "--root", str(tiny)]
    for opt, v in (("--since", since), ("--until", until), ("--tz", tz)):
        if v is not None:
            args += [opt, v]
    _clean(CliRunner().invoke(cli, args))


@fuzz(1000)
@given(patterns, st.lists(st.sampled_from(["-i", "-E", "-w", "-v", "-c", "--count-total", "-l", "--fuzzy"]),
                          max_size=3, unique=True),
       st.one_of(st.none(), time_values), st.one_of(st.none(), zones))
def test_grep_never_tracebacks(tiny, pattern, flags, since, tz):
    args = ["grep", *flags, "--root", str(tiny)]
    if since is not None:
        args += ["--since", since]
    if tz is not None:
        args += ["--tz", tz]
    _clean(CliRunner().invoke(cli, args + ["--", pattern]))
