"""Search index and ranking: BM25 hit sets equal a brute-force oracle over the raw log after every change (appends,
late events, a new chat, compaction, an in-place rewrite that erases a text); filters; the unit store's atomicity and
--check; purge; the CLI's exit codes and --json."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import orjson
import pytest

from eventlog.recall.compact import compact
from eventlog.recall.grep import newest
from eventlog.store.reader import iter_events
from eventlog.search import SearchQuery, index, project, search, store
from eventlog.search.tokens import tokens
from eventlog.store.writer import EventLog

WORDS = ("ноутбук ноутбука ноутбуком сломался сломанный встреча встречи ёлка елка счёт счет laptop laptops broken "
         "meeting meetings invoice invoices report deploy deployed deploying договор договора").split()
QUERIES = ("ноутбук", "ёлки", "счет", "laptop", "meetings", "deploy", "договором", "сломанный")
CHATS = ("100", "200", "-300")


def _events(rng: random.Random, n: int, days: list[str], chats=CHATS) -> list[dict]:
    out = []
    for i in range(n):
        day = rng.choice(days)
        ev = {"event": rng.choice(["message:received", "message:sent", "message:received", "tap:start"]),
              "channel": "telegram", "chat_id": rng.choice(chats), "ts": f"{day}T{rng.randrange(24):02d}:"
              f"{rng.randrange(60):02d}:00.{i % 1000:03d}Z", "direction": rng.choice(["in", "out"]),
              "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))}
        if rng.random() < 0.1:
            ev["payload"] = {"text": "ноутбук laptop deploy"}  # other fields must not be searched
        out.append(ev)
    return out


def utc(text: str) -> datetime:
    """An aware UTC instant from RFC 3339 or a date (its first instant)."""
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def oracle(root: Path, word: str, chats=None, since=None, until=None, direction=None) -> set[str]:
    want = set(tokens(word))
    got = set()
    for ev in iter_events(root):
        if ev.get("event") not in ("message:received", "message:sent") or not isinstance(ev.get("text"), str):
            continue
        if chats and ev["chat_id"] not in chats or direction and ev.get("direction") != direction:
            continue
        t = datetime.fromisoformat(ev["ts"].replace("Z", "+00:00"))
        if since and t < since or until and t >= until:  # [since, until): exact instants, as SearchQuery's
            continue
        if want & set(tokens(ev["text"])):
            got.add(ev["id"])
    return got


def bm25_ids(root: Path, word: str, **kw) -> set[str]:
    res = search(root, SearchQuery(word, mode="bm25", limit=100_000, **kw))
    return {h.id for h in res.hits}


def check_all(root: Path) -> None:
    for w in QUERIES:
        assert bm25_ids(root, w) == oracle(root, w), w


def test_freshness_under_appends_late_events_compaction_and_rewrites(root: Path) -> None:
    rng = random.Random(5)
    log = EventLog(root, fsync="never")
    days = ["2026-10-01", "2026-10-02", "2026-10-03"]
    log.append_many(_events(rng, 60, days))
    check_all(root)
    # appends to today's file, and a new day
    log.append_many(_events(rng, 15, ["2026-10-03", "2026-10-04"]))
    check_all(root)
    # a late event in an old, already indexed day; a new chat in an indexed day
    log.append_many(_events(rng, 5, ["2026-10-01"]) + _events(rng, 3, ["2026-10-02"], chats=("@newchat",)))
    check_all(root)
    # compaction copies days to Parquet and leaves the JSONL as it is: no index day goes stale
    compact(root, before=date(2026, 10, 4))
    res = search(root, SearchQuery("laptop", mode="bm25"))
    assert res.updated_days == []
    check_all(root)
    # an in-place rewrite (what erasure does): the text becomes a commitment object and must vanish from results
    f = next((root / "raw/telegram/chats/100/2026/10").glob("02.jsonl"))
    lines = f.read_bytes().splitlines()
    victim = next(i for i, ln in enumerate(lines) if b'"message:' in ln and b"laptop" in ln)
    ev = orjson.loads(lines[victim])
    ev["text"] = {"c": "0" * 64}
    lines[victim] = orjson.dumps(ev, option=orjson.OPT_SORT_KEYS)
    tmp = f.with_name(".rewrite.tmp")  # an erasure rewrites a file as writers do: a new file renamed over it
    tmp.write_bytes(b"\n".join(lines) + b"\n")
    tmp.replace(f)
    assert index.update(root, check_only=True).built == ["2026-10-02"]  # the rewrite is seen as a change
    assert ev["id"] not in bm25_ids(root, "laptop")
    check_all(root)
    # a deleted day file: its unit goes at the next full update
    (root / "raw/telegram/chats/100/2026/10/04.jsonl").unlink(missing_ok=True)
    index.update(root)
    check_all(root)
    # a whole chat removed (its directories gone): every day it had is checked again in this long-lived process
    shutil.rmtree(root / "raw/telegram/chats/-300")
    check_all(root)


def test_filters_apply_before_ranking(root: Path) -> None:
    rng = random.Random(9)
    EventLog(root, fsync="never").append_many(_events(rng, 120, ["2026-10-01", "2026-10-02", "2026-10-03"]))
    cases = [dict(chats=("100",)), dict(chats=("200", "-300")), dict(since=utc("2026-10-02")),
             dict(until=utc("2026-10-02")), dict(direction="out"),
             dict(since=utc("2026-10-02T09:30:00"), until=utc("2026-10-03T04:00:00.001")),  # within days: exact
             dict(chats=("-300",), since=utc("2026-10-02"), until=utc("2026-10-03"), direction="in")]
    for kw in cases:
        for w in QUERIES:
            assert bm25_ids(root, w, **kw) == oracle(root, w, **kw), (w, kw)
        for mode in ("hybrid", "vector", "rrf", "text", "fuzzy"):
            hits = search(root, SearchQuery("ноутбук laptop", mode=mode, limit=50, **kw), text_scan=newest).hits
            for h in hits:
                assert not kw.get("chats") or h.chat_id in kw["chats"]
                assert not kw.get("direction") or h.direction == kw["direction"]
                assert not kw.get("since") or utc(h.ts) >= kw["since"]
                assert not kw.get("until") or utc(h.ts) < kw["until"]
    # a filter leaving one message: every mode ranks exactly it
    EventLog(root, fsync="never").append({"event": "message:received", "channel": "telegram", "chat_id": "solo",
                                          "ts": "2026-10-05T10:00:00Z", "direction": "in", "text": "договор"})
    for mode in ("bm25", "vector", "hybrid", "rrf"):
        hits = search(root, SearchQuery("договор", mode=mode, chats=("solo",))).hits
        assert [h.text for h in hits] == ["договор"], mode


def test_bm25_scores_equal_bm25s(root: Path) -> None:
    """Our BM25 (per-day units, global statistics) scores every document as bm25s (Lucene variant) does."""
    bm25s = pytest.importorskip("bm25s")
    import numpy as np

    rng = random.Random(3)
    EventLog(root, fsync="never").append_many(_events(rng, 80, ["2026-10-01", "2026-10-02"]))
    docs = [ev for ev in iter_events(root)
            if ev["event"] in ("message:received", "message:sent") and isinstance(ev.get("text"), str)]
    vocab: dict[str, int] = {}
    corpus = [[vocab.setdefault(t, len(vocab)) for t in tokens(ev["text"])] for ev in docs]
    ref = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    ref.index(bm25s.tokenization.Tokenized(ids=corpus, vocab=vocab), show_progress=False)
    for w in QUERIES:
        toks = [t for t in tokens(w) if t in vocab]
        want = ref.get_scores(toks) if toks else np.zeros(len(docs))
        got = {h.id: h.score for h in search(root, SearchQuery(w, mode="bm25", limit=1000)).hits}
        for ev, s in zip(docs, want, strict=True):
            assert got.get(ev["id"], 0.0) == pytest.approx(float(s), rel=1e-4, abs=1e-5), (w, ev["text"])


def test_units_are_atomic_checked_and_purged(root: Path, tmp_path: Path) -> None:
    rng = random.Random(1)
    EventLog(root, fsync="never").append_many(_events(rng, 40, ["2026-10-01", "2026-10-02"]))
    index.update(root)
    recs = store.load_records(root)
    assert sorted(recs) == ["2026-10-01", "2026-10-02"]
    assert all(store.check_data(root, r) is None for r in recs.values())
    # no temp files left, data named by the record exists
    assert not list(store.units_dir(root).glob(".*"))
    # damage a data file: --check says so (exit 2), a rebuild repairs
    data = store.units_dir(root) / recs["2026-10-01"]["data"]
    b = bytearray(data.read_bytes())
    b[-1] ^= 0xFF
    data.write_bytes(bytes(b))
    cli = [sys.executable, "-m", "eventlog", "index", "--root", str(root)]
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and json.loads(r.stdout)["damaged"]
    r = subprocess.run(cli + ["--rebuild", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and sorted(json.loads(r.stdout)["built"]) == ["2026-10-01", "2026-10-02"]
    assert subprocess.run(cli + ["--check"], capture_output=True, timeout=600).returncode == 0
    # an append makes the day stale for --check (exit 1)
    EventLog(root, fsync="never").append_many(_events(rng, 2, ["2026-10-02"]))
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and json.loads(r.stdout)["stale"] == ["2026-10-02"]
    # purge by chat drops every unit holding that chat; by file, that file's day
    holding = sorted(d for d, r in store.load_records(root).items() if "100" in r["chats"])
    assert holding and index.purge(root, chats=["100"]) == holding
    assert all("100" not in r["chats"] for r in store.load_records(root).values())
    index.update(root)
    assert index.purge(root, files=["raw/telegram/chats/200/2026/10/01.jsonl"]) == ["2026-10-01"]
    assert sorted(store.load_records(root)) == ["2026-10-02"]
    assert not [p for p in store.units_dir(root).iterdir() if p.name.startswith("2026-10-01")]


def test_rebuilt_day_reuses_vectors_of_unchanged_messages(root: Path) -> None:
    """An append re-embeds only the new messages; the reused rows equal a from-scratch build's."""
    from eventlog.search import embed

    if embed.available():
        pytest.skip(embed.available())
    import numpy as np

    rng = random.Random(2)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 30, ["2026-10-01"]))
    index.update(root)
    calls: list[int] = []
    m = embed.load()
    real = m.encode
    m.encode = lambda texts, query=False: (calls.append(len(texts)), real(texts, query))[1]  # type: ignore[method-assign]
    try:
        log.append_many(_events(rng, 3, ["2026-10-01"]))
        index.update(root)
    finally:
        del m.encode
    new = sum(1 for e in _events(random.Random(2), 33, ["2026-10-01"])[30:]
              if e["event"] in ("message:received", "message:sent"))
    assert sum(calls) == new
    rec = store.load_records(root)["2026-10-01"]
    inc = store.open_data(store.units_dir(root) / rec["data"])
    index.update(root, rebuild=True)
    rec2 = store.load_records(root)["2026-10-01"]
    full = store.open_data(store.units_dir(root) / rec2["data"])
    assert (inc["id"] == full["id"]).all()
    assert np.abs(inc["vec"].astype(int) - full["vec"].astype(int)).max() <= 1


def _as_v1_unit(root: Path, day: str) -> None:
    """Rewrite a published unit as the index format v1 wrote it: no sign bits, "v": 1."""
    import hashlib

    rec = store.load_records(root)[day]
    arr = store.open_data(store.units_dir(root) / rec["data"])
    data = store.pack({k: v for k, v in arr.items() if not k.startswith("_") and k != "bits"})
    name = f"{day}.v1.bin"
    (store.units_dir(root) / name).write_bytes(data)
    old = {**rec, "v": 1, "data": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (store.units_dir(root) / f"{day}.json").write_bytes(orjson.dumps(old))


def test_an_old_format_unit_is_reported_and_rebuilt_never_read(root: Path) -> None:
    from eventlog.search import embed

    if embed.available():
        pytest.skip(embed.available())
    rng = random.Random(3)
    EventLog(root, fsync="never").append_many(_events(rng, 40, ["2026-10-01", "2026-10-02"]))
    index.update(root)
    _as_v1_unit(root, "2026-10-01")
    # the library never reads it as a current unit: without a refresh, that day simply has no index
    assert "2026-10-01" not in store.load_records(root)
    hits = search(root, SearchQuery("ноутбук", mode="bm25", limit=1000), refresh=False).hits
    assert hits and all(h.ts.startswith("2026-10-02") for h in hits)
    cli = [sys.executable, "-m", "eventlog", "index", "--root", str(root)]
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and json.loads(r.stdout)["stale"] == ["2026-10-01"], r.stdout
    # a rebuild upgrades it, reusing the v1 unit's vectors (no message embedded again), with its projection
    calls: list[int] = []
    m = embed.load()
    real = m.encode
    m.encode = lambda texts, query=False: (calls.append(len(texts)), real(texts, query))[1]  # type: ignore[method-assign]
    try:
        assert index.update(root).built == ["2026-10-01"]
    finally:
        del m.encode
    assert calls == []
    rec = store.load_records(root)["2026-10-01"]
    arr = store.open_data(store.units_dir(root) / rec["data"])
    n = len(arr["vec"])
    assert rec["v"] == store.UNIT_VERSION and project.load(root, rec)["codes"].shape == (n, min(n, project.DIM))
    assert subprocess.run(cli + ["--check"], capture_output=True, timeout=600).returncode == 0
    assert oracle(root, "ноутбук") == bm25_ids(root, "ноутбук")


def _projections_match_units(root: Path) -> None:
    """Every unit with vectors has its projection, derived from exactly its current data file; none is left over."""
    import numpy as np



    recs = store.load_records(root)
    for rec in recs.values():
        proj = project.load(root, rec)
        assert proj is not None, rec["day"]
        arr = store.open_data(store.units_dir(root) / rec["data"])
        want = project.derive(arr["vec"], arr["scale"])
        assert np.array_equal(proj["codes"], want["codes"]) and np.array_equal(proj["basis"], want["basis"])
    stems = {r["data"][:-4] for r in recs.values()}
    store.collect_garbage(root, min_age_s=0)
    assert {p.name[:-5] for p in store.units_dir(root).glob("*.proj")} == stems


def _default_equals_exhaustive(root: Path, candidates: int = 1000) -> None:
    """The first pass's ranking equals the exhaustive one when the candidates outnumber the log; with fewer, every
    vector hit carries its exact int8 cosine."""
    for w in QUERIES:
        for mode in ("vector", "hybrid"):
            got = search(root, SearchQuery(w, mode=mode, limit=10, candidates=candidates)).hits
            exh = search(root, SearchQuery(w, mode=mode, limit=10_000, candidates=0)).hits
            if candidates >= 1000:
                assert [h.id for h in got] == [h.id for h in exh[:10]], (w, mode)
            elif mode == "vector":
                exact = {h.id: h.score for h in exh}
                assert got and all(h.score == pytest.approx(exact[h.id], abs=1e-5) for h in got), w


def test_projection_fresh_under_appends_late_events_compaction_and_damage(root: Path) -> None:
    """The first pass's projections (project.py) follow their units: written with each unit before its record,
    derived for a unit that lacks one (`index --check` lists it, `index` derives it without a rebuild), never used
    for another data file or when damaged, collected with their data file. Throughout, the first pass's ranking with
    1,000 candidates equals the exhaustive one on this small log and, with 3, still carries exact cosines only."""
    from eventlog.search import embed

    if embed.available():
        pytest.skip(embed.available())
    rng = random.Random(8)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 60, ["2026-10-01", "2026-10-02", "2026-10-03"]))
    index.update(root)
    _projections_match_units(root)
    _default_equals_exhaustive(root)
    log.append_many(_events(rng, 10, ["2026-10-03", "2026-10-04"]))  # append + a new day
    log.append_many(_events(rng, 4, ["2026-10-01"], chats=("@late",)))  # a late event, a new chat
    _default_equals_exhaustive(root)
    _projections_match_units(root)
    compact(root, before=date(2026, 10, 4))
    assert search(root, SearchQuery("laptop", mode="hybrid")).updated_days == []
    _projections_match_units(root)
    cli = [sys.executable, "-m", "eventlog", "index", "--root", str(root)]
    recs = store.load_records(root)
    # a unit without its projection (an older build): listed stale, derived — not rebuilt — by `index`
    project.path_for(root, recs["2026-10-02"]).unlink()
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and json.loads(r.stdout)["stale"] == ["2026-10-02"], r.stdout
    assert search(root, SearchQuery("laptop", mode="hybrid"), refresh=False).hits  # meanwhile: exact for that day
    assert index.update(root).built == []
    assert store.load_records(root)["2026-10-02"]["data"] == recs["2026-10-02"]["data"]
    _projections_match_units(root)
    # a damaged projection is not used, and is derived again
    pp = project.path_for(root, recs["2026-10-01"])
    pp.write_bytes(pp.read_bytes()[:200])
    store._OPEN.clear()
    assert project.load(root, recs["2026-10-01"]) is None
    _default_equals_exhaustive(root, candidates=3)
    assert index.update(root).built == []
    _projections_match_units(root)
    # a projection of another data file (put in the new unit's place) is never used
    log.append_many(_events(rng, 3, ["2026-10-03"]))
    old = recs["2026-10-03"]
    index.update(root)
    new = store.load_records(root)["2026-10-03"]
    assert new["data"] != old["data"]
    shutil.copyfile(project.path_for(root, recs["2026-10-04"]), project.path_for(root, new))
    store._OPEN.clear()
    assert project.load(root, new) is None
    assert subprocess.run(cli + ["--check"], capture_output=True, timeout=600).returncode == 1
    index.update(root)
    _projections_match_units(root)


def test_best_selection_equals_a_full_partition() -> None:
    """rank._best (a sampled threshold, then a partition over what is above it) picks the same values as a full
    argpartition: random, tied, constant, sorted and -inf-padded arrays, small and large."""
    import numpy as np

    from eventlog.search import rank

    rng = np.random.default_rng(2)
    big = 16 * rank._SAMPLE + 5
    cases = [rng.standard_normal(big).astype(np.float32), np.round(rng.standard_normal(big), 1).astype(np.float32),
             np.zeros(big, np.float32), np.arange(big, dtype=np.float32), -np.arange(big, dtype=np.float32),
             np.where(rng.random(big) < 0.99, -np.inf, 1.0).astype(np.float32), rng.standard_normal(50)]
    for x in cases:
        for k in (1, 10, 1000, 5000):
            if k > len(x):
                continue
            got = rank._best(x, k)
            assert len(got) == k == len(set(got.tolist()))
            assert np.array_equal(np.sort(x[got]), np.sort(x)[-k:]), (x[:5], k)


def test_read_rows_equals_the_mapped_rows(root: Path) -> None:
    import numpy as np

    rng = random.Random(4)
    EventLog(root, fsync="never").append_many(_events(rng, 80, ["2026-10-01"]))
    index.update(root)
    rec = store.load_records(root)["2026-10-01"]
    arr = store.open_data(store.units_dir(root) / rec["data"])
    if "vec" not in arr:
        pytest.skip("no vectors")
    n = len(arr["vec"])
    for rows in ([0], [n - 1], list(range(n)), [1, 2, 3, 7, 9, 10, n - 2, n - 1], []):
        r = np.array(sorted(set(rows)), np.int64)
        assert np.array_equal(store.read_rows(arr, "vec", r), np.asarray(arr["vec"])[r])


def _through_packs_and_days(root: Path, **kw) -> None:
    """Every query's hits (ids, order, scores) equal with and without month packs, and BM25's hit sets the oracle's."""
    for w in QUERIES:
        for mode in ("bm25", "hybrid"):
            got = search(root, SearchQuery(w, mode=mode, limit=50, **kw), refresh=False).hits
            want = search(root, SearchQuery(w, mode=mode, limit=50, packs=False, **kw), refresh=False).hits
            assert [h.id for h in got] == [h.id for h in want], (w, mode)
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5), (w, mode)
        got_ids = {h.id for h in search(root, SearchQuery(w, mode="bm25", limit=100_000), refresh=False).hits}
        assert got_ids == oracle(root, w), w


def test_month_packs_are_exact_and_follow_their_days(root: Path) -> None:
    """A past month's units merged into one pack (pack.py) give the same ranking as the day units, are used only
    while their members are exactly the current units, are rebuilt after an append, a late event, a new chat or a
    rewrite, listed stale by `index --check` meanwhile, never hold today's day, and go with a purged day."""
    from eventlog.search import pack

    rng = random.Random(11)
    log = EventLog(root, fsync="never")
    log.append_many(_events(rng, 80, ["2026-10-01", "2026-10-02", "2026-10-03", "2026-11-05"]))
    index.update(root)
    recs = store.load_records(root)
    packs = pack.load_records(root)
    assert sorted(packs) == ["2026-10"]  # November has one day: read as a day unit
    assert packs["2026-10"]["members"] == {d: recs[d]["data"] for d in recs if d.startswith("2026-10")}
    used = pack.units_for(root, recs, sorted(recs))
    assert [u[0]["day"] for u in used] == ["2026-10", "2026-11-05"]
    _through_packs_and_days(root)
    _through_packs_and_days(root, since=utc("2026-10-02"))  # a month cut by the scope: its days, not the pack
    _through_packs_and_days(root, chats=("100",), direction="in")
    # a late event and a new chat in a packed day: the day and its pack are rebuilt by the next query's refresh
    old_rec = (pack.packs_dir(root) / "2026-10.json").read_bytes()
    log.append_many(_events(rng, 4, ["2026-10-02"]) + _events(rng, 2, ["2026-10-03"], chats=("@fresh",)))
    res = search(root, SearchQuery("laptop", mode="bm25"))
    assert res.updated_days == ["2026-10-03", "2026-10-02"]
    assert pack.load_records(root)["2026-10"]["members"]["2026-10-02"] == store.load_records(root)["2026-10-02"]["data"]
    _through_packs_and_days(root)
    # the previous pack put back (as if its rebuild had not happened yet): never used, listed by --check, rebuilt
    (pack.packs_dir(root) / ".old.tmp").write_bytes(old_rec)  # replaced by a rename, as a publish does
    (pack.packs_dir(root) / ".old.tmp").replace(pack.packs_dir(root) / "2026-10.json")
    recs = store.load_records(root)
    assert [u[0]["day"] for u in pack.units_for(root, recs, sorted(recs))] == [
        "2026-10-01", "2026-10-02", "2026-10-03", "2026-11-05"]
    _through_packs_and_days(root)  # (without refresh: the old pack is not rebuilt, and not used)
    cli = [sys.executable, "-m", "eventlog", "index", "--root", str(root)]
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and json.loads(r.stdout)["stale_packs"] == ["2026-10"], r.stdout
    r = subprocess.run(cli + ["--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and json.loads(r.stdout)["packs"] == ["2026-10"], r.stdout
    assert subprocess.run(cli + ["--check"], capture_output=True, timeout=600).returncode == 0
    _through_packs_and_days(root)
    # a damaged pack is reported by --check (exit 2)
    p = pack.load_records(root)["2026-10"]
    data = pack.packs_dir(root) / p["data"]
    saved = data.read_bytes()
    data.write_bytes(saved[:-1] + bytes([saved[-1] ^ 0xFF]))
    r = subprocess.run(cli + ["--check", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and json.loads(r.stdout)["damaged"], r.stdout
    data.write_bytes(saved)
    # today's day is never packed; a month whose packable days fall below MIN_DAYS loses its pack
    recs = store.load_records(root)
    assert sorted(pack.wanted(recs, now="2026-10-03")["2026-10"]) == ["2026-10-01", "2026-10-02"]
    assert "2026-10" not in pack.wanted(recs, now="2026-10-02")
    # a purged day takes its month's pack with it, files and all (erased content stays nowhere)
    assert index.purge(root, files=["raw/telegram/chats/100/2026/10/01.jsonl"]) == ["2026-10-01"]
    assert pack.load_records(root) == {}
    assert not [f for f in pack.packs_dir(root).iterdir() if f.name.startswith("2026-10.")]
    index.update(root)
    assert sorted(pack.load_records(root)) == ["2026-10"]
    _through_packs_and_days(root)
