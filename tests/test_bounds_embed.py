"""Issue 26, embeddings of long messages: chunks of 600 characters overlapping by 100, so the model never sees more
than a chunk; a long message scores as its best chunk and is reported once, pointing at that chunk."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from eventlog.search import derive, embed, index
from eventlog.store.writer import EventLog

REPO = Path(__file__).resolve().parents[1]
PASSAGE = ("The treasure map shows the old lighthouse on pier seven; we meet at the lighthouse at midnight, bring the "
           "brass key for the lighthouse door and a lantern. ") * 4


@pytest.mark.parametrize("n", [0, 1, 599, 600, 601, 1100, 1101, 5_000, 123_457])
def test_chunks_cover_the_text_with_overlap(n: int) -> None:
    spans = embed.chunk_spans("x" * n)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(0 < b - a <= embed.CHUNK_CHARS or n == 0 for a, b in spans)
    assert all(b0 - a1 == embed.CHUNK_OVERLAP for (_, b0), (a1, _) in zip(spans, spans[1:], strict=False))


def _log(root: Path, long_text: str) -> None:
    w = EventLog(root, fsync="never")
    w.append_many([
        {"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
         "ts": "2026-11-28T10:00:00Z", "text": long_text, "from": {"id": 1, "name": "Ann Lee"}},
        {"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
         "ts": "2026-11-28T10:01:00Z", "text": "what shall we cook for dinner tonight", "from": {"id": 1}},
        {"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
         "ts": "2026-11-28T10:02:00Z", "text": "the train was late again this morning", "from": {"id": 1}}])


class _Recording(embed.Embedder):
    """The real model, noting the longest text and the largest batch it was given."""

    def __init__(self, real: embed.Embedder) -> None:
        self.real, self.name, self.dim = real, real.name, real.dim
        self.longest = self.batch = 0

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        self.longest = max([self.longest, *map(len, texts)])
        self.batch = max(self.batch, len(texts))
        return self.real.encode(texts, query)


def test_the_model_never_sees_more_than_a_chunk(tmp_path: Path, monkeypatch: Any) -> None:
    if embed.available():
        pytest.fail(embed.available() or "", pytrace=False)
    root = tmp_path / "root"
    filler = "".join(f"entry {i} of the quarterly inventory ledger, nothing to report. " for i in range(400))
    _log(root, filler[:12_000] + PASSAGE + filler[12_000:])  # 25,000 characters, seen whole by the model on main
    rec = _Recording(embed.load())
    monkeypatch.setitem(embed._CACHE, rec.name, rec)
    index.update(root, jobs=1)
    assert rec.longest == embed.CHUNK_CHARS and rec.batch <= 256


def test_a_long_message_is_found_by_its_chunk_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    filler = "".join(f"entry {i} of the quarterly inventory ledger, nothing to report. " for i in range(500))
    at = 15_000
    _log(root, filler[:at] + PASSAGE + filler[at:])
    assert subprocess.run([sys.executable, "-m", "eventlog", "index", "--root", str(root)], cwd=REPO,
                          capture_output=True, timeout=900).returncode == 0
    for mode in ("vector", "hybrid"):
        p = subprocess.run([sys.executable, "-m", "eventlog", "search", "lighthouse on the pier at midnight", "--mode",
                            mode, "--json", "--root", str(root)], cwd=REPO, capture_output=True, timeout=900)
        hits = [json.loads(ln) for ln in p.stdout.splitlines()]
        assert p.returncode == 0 and len({h["id"] for h in hits}) == len(hits) == 3, p.stderr
        top = hits[0]
        assert len(top["text"]) > 30_000, (mode, [h["text"][:40] for h in hits])
        c = top["chunk"]
        # counted in the message's text (the model read "Name: text": the chunks were cut from that)
        read = derive.embed_text({"event": "message:received", "from": {"id": 1, "name": "Ann Lee"}}, top["text"])
        shift = len(read) - len(top["text"])
        assert c["end"] - c["start"] == embed.CHUNK_CHARS and c["index"] == (c["start"] + shift) // 500
        assert shift > 0 and top["text"][c["start"]:c["end"]] == read[c["index"] * 500:][:embed.CHUNK_CHARS]
        assert c["start"] < at + len(PASSAGE) and c["end"] > at  # the chunk holds (part of) the passage
        assert "lighthouse" in top["text"][c["start"]:c["end"]]
        assert all(h["chunk"] == {"index": 0, "start": 0, "end": len(h["text"])} for h in hits[1:])
