"""tools/bench/recall_eval.py (also run by locomo.py's regression rows) reads its questions' dates as the CLI does:
it imported a parser issue 24 removed, and nothing ran it outside `make bench`."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_evaluation_reads_its_dates_with_the_one_grammar() -> None:
    sys.path.insert(0, str(REPO / "tools" / "bench"))
    try:
        import recall_eval as ev
    finally:
        sys.path.remove(str(REPO / "tools" / "bench"))
    now = datetime(2026, 11, 30, 15, 0, tzinfo=timezone.utc)
    assert ev.dates_of({"since": "yesterday", "until": "yesterday"}, now) == (
        datetime(2026, 11, 29, tzinfo=timezone.utc), datetime(2026, 11, 30, tzinfo=timezone.utc))
    assert ev.dates_of({}, now) == (None, None)
    assert {q["kind"] for q in ev.load_questions()} == set(ev.KINDS)
