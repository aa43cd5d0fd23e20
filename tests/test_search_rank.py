"""The ranking path (rank.py, project.estimate, store.read_rows; issue 14's faster ranking) against an independent,
straightforward computation over the same real index (the installed model's vectors, day units read one by one, every
score in float64): BM25, exact int8 cosine, hybrid, rrf and bm25 rankings, exhaustive (`candidates=0`) and the
projection first pass, with and without filters, over month packs and over day units alone. Hits must be the same, in
the same order, with the same scores (to float32 rounding; ids may swap only where two scores tie)."""
from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import orjson
import pytest

from eventlog.search import DEFAULT_WEIGHT, SearchQuery, embed, index, pack, project, rank, search, store
from eventlog.search.derive import META_WEIGHT
from eventlog.search.tokens import META, query_tokens, token_id
from eventlog.store.writer import EventLog

PHRASES = ("ноутбук сломался вчера", "the laptop is broken again", "встреча по проекту завтра",
           "meeting moved to friday", "счёт за доставку оплачен", "invoice for the delivery is paid",
           "договор на подпись", "contract to sign", "деплой на staging прошёл", "deploy to staging went fine",
           "ёлка во дворе", "отчёт клиенту отправлен", "client report sent", "budget review deadline",
           "сервер упал ночью", "server went down at night", "проверка сборки", "build check passed",
           "купить молоко", "buy some milk")
QUERIES = ("laptop broken", "ноутбук", "договор", "payment delivery", "сервер релиз", "встреча", "build")
CHATS = ("100", "200", "-300")
DAYS = [(date(2026, 8, 30) + timedelta(days=i)).isoformat() for i in range(9)]  # two months: packs and loose days


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if embed.available():
        pytest.skip(embed.available())  # the model is a main dependency: `make venv` installs it
    r = tmp_path_factory.mktemp("rank") / "root"
    r.mkdir(mode=0o700)
    rng = random.Random(14)
    events = []
    for i in range(700):
        words = rng.choice(PHRASES).split() + ([rng.choice(PHRASES).split()[0]] if rng.random() < 0.5 else [])
        day = rng.choice(DAYS)
        events.append({"event": rng.choice(["message:received", "message:sent"]), "channel": "telegram",
                       "chat_id": rng.choice(CHATS), "ts": f"{day}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                       f"{rng.randrange(60):02d}.{i % 1000:03d}Z", "direction": rng.choice(["in", "out"]),
                       "text": " ".join(words)})
    EventLog(r, fsync="never").append_many(events)
    index.update(r)
    assert pack.load_records(r), "the fixture must have month packs"
    return r


def _docs(root: Path) -> list[dict]:
    """Every indexed message, straight from the day units (not the packs): id, chat, direction, ts, dl, its term
    frequencies, exact int8 cosine inputs and the projection's inputs."""
    out = []
    for day, rec in sorted(store.load_records(root).items()):
        arr = store.open_data(store.units_dir(root) / rec["data"])
        proj = project.load(root, rec)
        tf: list[dict[int, int]] = [{} for _ in range(rec["docs"])]
        for i, t in enumerate(np.asarray(arr["terms"]).tolist()):
            for d, f in zip(arr["pdoc"][arr["tptr"][i]:arr["tptr"][i + 1]].tolist(),
                            arr["ptf"][arr["tptr"][i]:arr["tptr"][i + 1]].tolist(), strict=True):
                tf[d][t] = f
        for row in range(rec["docs"]):
            path = root / rec["files"][int(arr["file"][row])]
            with open(path, "rb") as f:
                f.seek(int(arr["offset"][row]))
                ev = orjson.loads(f.readline())
            out.append({"id": ev["id"], "chat": rec["chats"][int(arr["file"][row])], "dir": int(arr["dir"][row]),
                        "ts": int(arr["ts"][row]), "day": day, "offset": int(arr["offset"][row]), "dl": int(arr["dl"][row]),
                        "tf": tf[row],
                        "vec": np.asarray(arr["vec"][row]), "scale": float(arr["scale"][row]),
                        "codes": np.asarray(proj["codes"][row]), "cscale": float(proj["cscale"][row]),
                        "mu": np.asarray(proj["mu"]), "basis": np.asarray(proj["basis"])})
    return out


def _in_scope(d: dict, kw: dict) -> bool:
    return (not kw.get("chats") or d["chat"] in kw["chats"]) and \
        (not kw.get("direction") or d["dir"] == index.DIRECTIONS[kw["direction"]]) and \
        (not kw.get("since") or d["ts"] >= _ms(kw["since"])) and \
        (not kw.get("until") or d["ts"] < _ms(kw["until"]))  # [since, until), exact instants as SearchQuery's


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def _bm25(docs: list[dict], text: str) -> np.ndarray:
    """Two fields (docs/search.md): each content word of the question in the text (b = B, length the text's) and in
    the meta field (weight derive.META_WEIGHT, b = 0)."""
    words = list(dict.fromkeys(query_tokens(text)))
    terms = [(token_id(w), 1.0, rank.B) for w in words] + [(token_id(META + w), META_WEIGHT, 0.0) for w in words]
    n = len(docs)
    avgdl = sum(d["dl"] for d in docs) / n
    out = np.zeros(n)
    for t, weight, b in terms:
        df = sum(t in d["tf"] for d in docs)
        idf = weight * math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            f = d["tf"].get(t, 0)
            out[i] += idf * f / (f + rank.K1 * (1 - b + b * d["dl"] / avgdl))
    return out


def _context(docs: list[dict], bm: np.ndarray) -> np.ndarray:
    """hybrid's BM25 part (docs/search.md "Context"): + rank.CONTEXT_GAIN × the best own score among the
    rank.CONTEXT_TURNS documents in scope before and after it in its chat's day file (the order of the lines), within
    rank.CONTEXT_GAP_MS of it."""
    files: dict[tuple[str, str], list[int]] = {}
    for i in sorted(range(len(docs)), key=lambda i: docs[i]["offset"]):
        files.setdefault((docs[i]["day"], docs[i]["chat"]), []).append(i)
    near = np.zeros(len(docs))
    for members in files.values():
        for a, i in enumerate(members):
            near[i] = max((bm[j] for j in members[max(0, a - rank.CONTEXT_TURNS):a + rank.CONTEXT_TURNS + 1]
                           if j != i and abs(docs[j]["ts"] - docs[i]["ts"]) <= rank.CONTEXT_GAP_MS), default=0.0)
    return bm + rank.CONTEXT_GAIN * near


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = x.min(), x.max()
    return (x - lo) / (hi - lo) if hi > lo else np.full(len(x), 1.0 if hi > 0 else 0.0)


def _rrf(bm: np.ndarray, vec: np.ndarray) -> np.ndarray:
    def ranks(x: np.ndarray) -> np.ndarray:
        r = np.empty(len(x))
        r[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
        return r
    return np.where(bm > 0, 1 / (rank.RRF_K + ranks(bm)), 0) + 1 / (rank.RRF_K + ranks(vec))


def _fused(mode: str, weight: float, bm: np.ndarray, vec: np.ndarray) -> np.ndarray:
    if mode == "vector":
        return vec
    if mode == "hybrid":
        return weight * _minmax(vec) + (1 - weight) * _minmax(bm)
    return _rrf(bm, vec)


def _first_pass(mode: str, weight: float, k: int, cand: int, bm: np.ndarray, exact: np.ndarray,
                est: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first pass as rank.py's docstring specifies it, written out: the scores every document ends with, and the
    score each would have with its exact cosine (within the same min-max range)."""
    vec = est.copy()
    done = np.zeros(len(vec), bool)
    best = lambda x, m: np.argsort(-x, kind="stable")[:m]
    seeds = [best(vec, cand if mode == "vector" else min(cand, rank.CEIL)), best(-vec, rank.FLOOR)]
    if mode != "vector":
        seeds.append(best(_fused(mode, weight, bm, vec), cand))
    seeds = np.unique(np.concatenate(seeds))
    vec[seeds], done[seeds] = exact[seeds], True
    vec = np.clip(vec, exact[seeds].min(), exact[seeds].max())
    while True:
        score = _fused(mode, weight, bm, vec)
        todo = [i for i in best(score, k) if not done[i]]
        if not todo:
            if mode == "vector":
                return score, exact
            lo, hi = vec.min(), vec.max()
            return score, weight * (exact - lo) / (hi - lo) + (1 - weight) * _minmax(bm)
        vec[todo], done[todo] = exact[todo], True


def _same(got: list, ids: list[str], score: np.ndarray, ts: np.ndarray, k: int, per_id: bool = True,
          own: np.ndarray | None = None, tol: float = 2e-5) -> None:
    """got (hits) = the reference's top k by score (ties: newer first): the same score sequence; the same id at each
    rank except where two reference scores tie; each hit's own reference score (`own`: the score a hit must have, where
    the reference's `score` of a document it did not rescore is an estimate)."""
    order = np.lexsort((-ts, -score))[:k]
    want = [ids[i] for i in order]
    assert len(got) == len(want)
    at = {x: i for i, x in enumerate(ids)}
    for h, w, i in zip(got, want, order, strict=True):
        assert h.score == pytest.approx(float(score[i]), abs=tol), (h.id, w)
        if per_id:
            assert h.score == pytest.approx(float((score if own is None else own)[at[h.id]]), abs=2e-5), h.id
        if h.id != w and per_id:  # only a tie may swap two hits
            assert abs((score if own is None else own)[at[h.id]] - score[at[w]]) <= tol, (h.id, w)


FILTERS = [{}, {"chats": ("100", "-300")}, {"direction": "out"},
           {"since": _utc(2026, 8, 31), "until": _utc(2026, 9, 4)}, {"chats": ("200",), "since": _utc(2026, 9, 2)},
           {"since": _utc(2026, 9, 1, 6, 0), "until": _utc(2026, 9, 2, 18, 30)}]  # within days: exact


@pytest.mark.parametrize("packs", [True, False], ids=["packs", "days"])
def test_rankings_equal_a_straightforward_computation(root: Path, packs: bool) -> None:
    docs_all = _docs(root)
    model = embed.load()
    checked = boosted = 0
    for kw in FILTERS:
        docs = [d for d in docs_all if _in_scope(d, kw)]
        ids = [d["id"] for d in docs]
        ts = np.array([d["ts"] for d in docs])
        for text in QUERIES:
            q = model.encode([text], query=True)[0].astype(np.float64)
            bm = _bm25(docs, text)
            exact = np.array([(d["vec"].astype(np.float64) @ q) * d["scale"] for d in docs])
            est = np.array([(d["codes"].astype(np.float64) @ (d["basis"].astype(np.float64) @ q)) * d["cscale"]
                            + d["mu"].astype(np.float64) @ q for d in docs])
            k = 8
            res = search(root, SearchQuery(text, mode="bm25", limit=10_000, packs=packs, **kw), refresh=False)
            hit = bm > 0
            _same(res.hits, [x for x, h in zip(ids, hit, strict=True) if h], bm[hit], ts[hit], 10_000)
            plain, ctx = bm, _context(docs, bm)
            boosted += bool(np.any(ctx > plain))
            for mode in ("vector", "hybrid", "rrf"):
                bm = ctx if mode == "hybrid" else plain  # only hybrid adds the conversational context
                res = search(root, SearchQuery(text, mode=mode, limit=k, candidates=0, packs=packs, **kw), refresh=False)
                # rrf: a rank is exact, but two cosines (or BM25 scores) a float32 rounding apart may take each other's
                # ranks here in float64 — 1 / (60 + r) then moves by < 3e-4
                _same(res.hits, ids, _fused(mode, DEFAULT_WEIGHT, bm, exact), ts, k, per_id=mode != "rrf",
                      tol=5e-4 if mode == "rrf" else 2e-5)
                if mode == "rrf":
                    continue
                for cand in (None, 30, 4):  # None: the default (max(2,000, n / 170): every document here)
                    c = rank.default_candidates(len(docs)) if cand is None else cand
                    res = search(root, SearchQuery(text, mode=mode, limit=k, candidates=cand, packs=packs,
                                                          **kw), refresh=False)
                    ref, own = _first_pass(mode, DEFAULT_WEIGHT, k, c, bm, exact, est)
                    _same(res.hits, ids, ref, ts, k, own=own)  # every hit carries its exact score
                    checked += 1
    assert checked == len(FILTERS) * len(QUERIES) * 2 * 3
    assert boosted >= len(QUERIES)  # the fixture has neighbours within the gap: the context really is compared


def test_scored_positions_and_rows(root: Path) -> None:
    """Which unit, row and timestamp each scored position is (located on demand) agree with the units' own arrays;
    read_rows returns the rows the memory map holds, for runs and scattered rows alike."""
    records = store.load_records(root)
    units = pack.units_for(root, records, sorted(records))
    qvec = embed.load().encode(["договор"], query=True)[0]
    for kw in ({}, {"chats": {"100"}, "direction": 2}):
        s = rank.score_units(units, "договор", kw.get("chats"), kw.get("direction"), qvec)
        # every position's unit and row, written out from the layout (positions starts[g] .. starts[g+1] are kept unit
        # g's rows in scope); the vector check below confirms it against cosines computed here from those rows
        unit = np.concatenate([np.full(int(s.starts[g + 1] - s.starts[g]), s.uids[g]) for g in range(len(s.uids))])
        row = np.concatenate([np.arange(int(s.starts[g + 1] - s.starts[g])) if r is None else r
                              for g, r in enumerate(s.rows)])
        ts = np.concatenate([np.asarray(units[u][1]["ts"])[row[unit == u]] for u in s.uids.tolist()])
        assert len(unit) == len(row) == len(ts) == len(s.vec) > 0
        for u in np.unique(unit).tolist():
            sel = unit == u
            arr = units[u][1]
            assert np.array_equal(ts[sel], np.asarray(arr["ts"])[row[sel]])
            assert np.all(np.diff(row[sel]) > 0)
            want = (np.asarray(arr["vec"])[row[sel]].astype(np.float32) @ qvec) * np.asarray(arr["scale"])[row[sel]]
            assert np.allclose(s.vec[sel], want, atol=1e-5)
        rng = np.random.default_rng(3)
        for _ in range(20):
            idx = rng.choice(len(unit), size=min(len(unit), 17), replace=False)
            got = s.locate(idx)
            assert np.array_equal(got[1], unit[idx]) and np.array_equal(got[2], row[idx])
            assert np.array_equal(s.ts_at(idx), ts[idx])
        # top: best score first, a tie to the newer message — the same as sorting every position by (score, ts)
        want = np.lexsort((-ts, -s.vec))[:5]
        assert np.array_equal(rank.top(s.vec, np.ones(len(s.vec), bool), s, 5), want)
    arr = units[0][1]
    n = len(arr["vec"])
    for rows in (np.arange(n), np.array([0, 1, 2, 5, 6, n - 1]), np.array([n - 1]), np.arange(0, n, 7)):
        rows = rows[rows < n]
        assert np.array_equal(store.read_rows(arr, "vec", rows), np.asarray(arr["vec"])[rows])


@pytest.mark.parametrize("packs", [True, False])
def test_estimates_on_two_threads_are_the_same_bits(root: Path, packs: bool, monkeypatch) -> None:
    """The projection estimates split over a pool thread (rank._estimates) give the very scores one thread gives."""
    import threading

    monkeypatch.setattr(rank, "PARALLEL_MIN", 0)
    vecs: list[np.ndarray] = []
    where: set[str] = set()
    real_score, real_estimate = rank.score_units, rank.estimate

    def spy_score(*a, **kw):  # type: ignore[no-untyped-def]
        s = real_score(*a, **kw)
        vecs.append(s.vec.copy())  # the estimates, before rescoring replaces the candidates'
        return s

    def spy_estimate(*a, **kw):  # type: ignore[no-untyped-def]
        where.add(threading.current_thread().name.split("_")[0])
        return real_estimate(*a, **kw)

    monkeypatch.setattr(rank, "score_units", spy_score)
    monkeypatch.setattr(rank, "estimate", spy_estimate)
    got = {}
    for threads in (1, 2):
        vecs.clear()
        where.clear()
        hits = [[(h.id, h.score) for h in search(root, SearchQuery(t, mode=m, limit=8, candidates=4, packs=packs,
                                                                   threads=threads), refresh=False).hits]
                for t in QUERIES for m in ("vector", "hybrid")]
        got[threads] = (hits, [v.copy() for v in vecs], set(where))
    assert got[1][2] == {"MainThread"} and got[2][2] == {"MainThread", "eventlog-estimate"}
    assert got[1][0] == got[2][0]
    assert len(got[1][1]) == len(got[2][1]) and all(np.array_equal(a, b, equal_nan=True)
                                                    for a, b in zip(got[1][1], got[2][1], strict=True))
