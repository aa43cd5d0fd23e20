#!/usr/bin/env python3
"""LoCoMo (Maharana et al., ACL 2024), an evaluation this project did not write: evidence recall@5/10/25/50 and hit@5
per retrieval mode and per question category, beside the paper's Table 3 (DRAGON over the dialog turns).

    python tools/bench/locomo.py [--data PATH] [--work DIR] [--modes bm25,hybrid,...] [--json] [--no-regression]

The data (CC BY-NC 4.0) is read from ../shared/data/locomo/locomo10.json (or --data, or $EVENTLOG_LOCOMO): never
copied into this repository. Each of the 10 conversations becomes one Telegram Desktop export (a supergroup of the two
speakers, one message per turn, the session's date and time as the message time, a turn's shared image as a photo
whose file name is unknown and whose description — the dataset's `blip_caption`, what the paper's retrievers saw — is
added to the text as "[shares <caption>]"). The exports are imported with the library's `import telegram-desktop`
pipeline into one log root, indexed, and every question is searched in its own chat, limit 50, in this one process
(a command per query would pay the model's start-up each time). Evidence recall@k is the share of a question's
evidence turns among the first k hits (the paper's definition); hit@5: at least one evidence turn in the first 5.

Evidence ids: the file has five malformed ones. `D:11:26` → `D11:26`, `D30:05` → `D30:5` (normalised: the turn
exists); a bare `D` and ids naming no turn of the conversation are dropped; a question left with no evidence is not
scored (the table says how many were scored).

--work DIR keeps the built log root and index between runs (ranking experiments pay the import and the embedding
once). The project's own recall evaluation (111 questions, tools/bench/recall_eval.py) runs in the same process after
the LoCoMo table, overall and for its Russian questions alone, as the regression check (LoCoMo is English only).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
if os.environ.get("EVENTLOG_BENCH_LIBRARY"):  # a baseline checkout's library, same script (the A/B in one run)
    sys.path.insert(0, os.environ["EVENTLOG_BENCH_LIBRARY"])
else:
    sys.path.insert(0, str(REPO))

DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
KS = (5, 10, 25, 50)
LIMIT = 50
PAPER = {"all": {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7},  # Table 3, DRAGON over dialog turns
         "single-hop": {10: 77.7}, "multi-hop": {10: 46.6}, "temporal": {10: 77.3}, "open-domain": {10: 40.8},
         "adversarial": {10: 54.7}}
BOT_ID = 4242  # the export's bot: nobody in these conversations (every turn is a message the bot received)
# Parameters are chosen on the first half of the conversations and reported on the second as well (docs/search.md)
HALVES = ("conversations 0-4", "conversations 5-9")
_SESSION = re.compile(r"session_(\d+)$")


def load(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SystemExit(f"locomo: {path} not found (see ../shared/data/README.md; --data or $EVENTLOG_LOCOMO)")
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256:
        print(f"locomo: warning: {path} SHA-256 {digest[:12]}…, not the documented {SHA256[:12]}…", file=sys.stderr)
    return json.loads(raw)


def session_time(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" → that time (no zone in the data: taken as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turns(conv: dict[str, Any]) -> list[tuple[datetime, dict[str, Any]]]:
    """(time, turn) in order: a session's turns one second apart from its start time."""
    out = []
    c = conv["conversation"]
    sessions = sorted((int(m[1]), k) for k in c if (m := _SESSION.match(k)) and isinstance(c[k], list))
    for n, key in sessions:
        start = session_time(c[f"session_{n}_date_time"])
        for i, t in enumerate(c[key]):
            out.append((datetime.fromtimestamp(start.timestamp() + i, timezone.utc), t))
    return out


def user_id(speaker: str) -> int:
    return 100_000 + int.from_bytes(hashlib.blake2b(speaker.encode(), digest_size=3).digest(), "big")


def export(conv: dict[str, Any], n: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The Telegram Desktop export (result.json) of one conversation, and dia_id → message id."""
    msgs, ids = [], {}
    for mid, (when, t) in enumerate(turns(conv), start=1):
        text = t["text"]
        rec: dict[str, Any] = {"id": mid, "type": "message", "date": when.strftime("%Y-%m-%dT%H:%M:%S"),
                               "date_unixtime": str(int(when.timestamp())), "from": t["speaker"],
                               "from_id": f"user{user_id(t['speaker'])}"}
        if t.get("img_url") or t.get("blip_caption"):
            rec.update(photo="(File not included. Change data exporting settings to download.)",
                       photo_file_size=0, width=512, height=512)
            if t.get("blip_caption"):
                text = f"{text} [shares {t['blip_caption']}]"
        rec["text"] = text
        rec["text_entities"] = [{"type": "plain", "text": text}] if text else []
        msgs.append(rec)
        ids[t["dia_id"]] = mid
    return {"name": f"LoCoMo {conv.get('sample_id', n)}", "type": "private_supergroup", "id": 1_000_000 + n,
            "messages": msgs}, ids


def evidence(raw: list[Any], known: dict[str, int]) -> tuple[list[str], int]:
    """The question's evidence ids that name a turn (normalised), and how many were dropped."""
    out, dropped = [], 0
    for item in raw:
        for e in re.split(r"[;,\s]+", str(item)):
            if not e:
                continue
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", e)
            norm = f"D{m[1]}:{m[2]}" if m else e
            if norm in known:
                if norm not in out:
                    out.append(norm)
            else:
                dropped += 1
    return out, dropped


def build(data: list[dict[str, Any]], work: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Import every conversation into work/log (once: reused when present) and index it; the questions to score."""
    from eventlog.importers.pipeline import run_import
    from eventlog.search import index

    root = work / "log"
    maps_path = work / "ids.json"
    if not maps_path.exists():
        for sub in ("", "raw", "seals", "dlp"):
            (root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        maps = []
        for n, conv in enumerate(data):
            doc, ids = export(conv, n)
            d = work / "exports" / f"conv-{n}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "result.json").write_text(json.dumps(doc, ensure_ascii=False))
            res = run_import(root, d, bot_id=BOT_ID, fsync="never")
            assert res.imported_chats == 1, res.as_json()
            maps.append({"chat": res.chats[0].plan.chat_id, "ids": ids})
        maps_path.write_text(json.dumps(maps))
    maps = json.loads(maps_path.read_text())
    t0 = time.perf_counter()
    built = index.update(root).built
    print(f"locomo: index {len(built)} day(s) built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    questions, dropped = [], 0
    for n, conv in enumerate(data):
        chat, ids = maps[n]["chat"], maps[n]["ids"]
        for qa in conv["qa"]:
            ev, d = evidence(qa.get("evidence", []), ids)
            dropped += d
            if ev:
                questions.append({"q": qa["question"], "cat": CATEGORIES[qa["category"]], "chat": chat,
                                  "want": {ids[e] for e in ev}, "half": HALVES[n >= len(data) // 2]})
    print(f"locomo: {len(questions)} questions with evidence; {dropped} malformed evidence id(s) dropped",
          file=sys.stderr)
    return root, questions


Ranker = Callable[[dict[str, Any]], list[int]]


def library_ranker(root: Path, mode: str) -> Ranker:
    """`eventlog search` in the library: MODE or MODE:WEIGHT; `default` is SearchQuery's own default."""
    from eventlog.recall.grep import newest
    from eventlog.search import SearchQuery, search

    name, _, w = mode.partition(":")
    kw: dict[str, Any] = {} if name == "default" else {"mode": name}
    if w:
        kw["weight"] = float(w)

    def rank(q: dict[str, Any]) -> list[int]:
        res = search(root, SearchQuery(q["q"], chats=(q["chat"],), limit=LIMIT, **kw), refresh=False,
                     text_scan=newest)
        return [int(h.event["message_id"]) for h in res.hits if h.event]

    return rank


def tool_ranker(root: Path) -> Ranker:
    """The agent tool (`eventlog_search`) as the model calls it, in the question's chat, its default mode."""
    from eventlog.agent import tool

    by_id: dict[str, int] = {}

    def rank(q: dict[str, Any]) -> list[int]:
        out = tool.handle({"tool": "search", "chat": q["chat"], "args": {"query": q["q"], "limit": LIMIT}}, root,
                          record=False)
        if not by_id:
            from eventlog.store.layout import log_files
            from eventlog.store.reader import iter_lines

            for lf in log_files(root):
                for _, line in iter_lines(lf.path):
                    ev = json.loads(line)
                    if "message_id" in ev:
                        by_id[ev["id"]] = int(ev["message_id"])
        return [by_id[i] for i in out.get("ids", []) if i in by_id]

    return rank


def score(questions: list[dict[str, Any]], ranker: Ranker) -> dict[str, Any]:
    per: dict[str, list[tuple[list[float], int]]] = defaultdict(list)
    times = []
    for q in questions:
        t0 = time.perf_counter()
        got = ranker(q)[:LIMIT]
        times.append(time.perf_counter() - t0)
        rec = [len(q["want"].intersection(got[:k])) / len(q["want"]) for k in KS]
        hit5 = int(bool(q["want"].intersection(got[:5])))
        for c in (q["cat"], "all", q.get("half")):
            if c:
                per[c].append((rec, hit5))
    table = {c: {"n": len(v), **{f"R@{k}": round(100 * sum(r[i] for r, _ in v) / len(v), 1)
                                 for i, k in enumerate(KS)},
                 "hit@5": round(100 * sum(h for _, h in v) / len(v), 1)} for c, v in per.items()}
    return {"table": table, "ms_p50": round(statistics.median(times) * 1000, 1) if times else 0.0}


def render(results: dict[str, dict[str, Any]]) -> str:
    cats = ["all", *CATEGORIES.values()]
    n = next(iter(results.values()))["table"] if results else {}
    lines = ["LoCoMo evidence recall, % (all five categories; n = " + ", ".join(
        f"{c} {n[c]['n']}" for c in cats if c in n) + ")"]
    head = f"{'retriever':<28} {'R@5':>5} {'R@10':>5} {'R@25':>5} {'R@50':>5} {'hit@5':>5} | R@10 " + " ".join(
        f"{c[:11]:>11}" for c in cats[1:]) + f" | {'ms p50':>6}"
    lines += [head, "-" * len(head)]
    p = PAPER
    lines.append(f"{'paper: DRAGON (Table 3)':<28} {p['all'][5]:>5} {p['all'][10]:>5} {p['all'][25]:>5} "
                 f"{p['all'][50]:>5} {'':>5} |      " + " ".join(f"{p[c][10]:>11}" for c in cats[1:]) + " |")
    for mode, r in results.items():
        t = r["table"]
        a = t["all"]
        lines.append(f"{mode:<28} {a['R@5']:>5} {a['R@10']:>5} {a['R@25']:>5} {a['R@50']:>5} {a['hit@5']:>5} |      "
                     + " ".join(f"{t[c]['R@10'] if c in t else '':>11}" for c in cats[1:]) + f" | {r['ms_p50']:>6}")
    lines.append(f"per category: R@5 / R@10 / R@25 / R@50 / hit@5{'':<2}" + " ".join(f"{c[:22]:>24}" for c in cats[1:]))
    lines.append(f"{'paper: DRAGON (Table 3)':<46}" + " ".join(f"{'R@10 ' + str(p[c][10]):>24}" for c in cats[1:]))
    for mode, r in results.items():
        t = r["table"]
        lines.append(f"{mode:<46}" + " ".join(
            f"{'/'.join(str(t[c][x]) for x in ('R@5', 'R@10', 'R@25', 'R@50', 'hit@5')) if c in t else '':>24}"
            for c in cats[1:]))
    base = next((m for m in results if m == "bm25"), None)
    for mode in (m for m in results if base and m in ("default", "tool")):
        a, b = results[mode]["table"]["all"], results[base]["table"]["all"]
        lines.append(f"{mode} − bm25 (all): " + ", ".join(f"{x} {a[x] - b[x]:+.1f}"
                                                          for x in ("R@5", "R@10", "R@25", "R@50", "hit@5")))
    lines.append(f"R@5 / R@10 by half (tuned on the first): {'':<5}" + " ".join(f"{h:>20}" for h in HALVES))
    for mode, r in results.items():
        t = r["table"]
        lines.append(f"{mode:<46}" + " ".join(
            f"{(str(t[h]['R@5']) + ' / ' + str(t[h]['R@10'])) if h in t else '':>20}" for h in HALVES))
    return "\n".join(lines)


def regression(modes: list[str]) -> str:
    """The project's own recall evaluation (hit@5 / MRR@10), all 111 questions and the Russian ones alone."""
    sys.path.insert(0, str(REPO / "tools" / "bench"))
    import recall_eval as ev

    with tempfile.TemporaryDirectory(prefix="recall-eval-") as tmp:
        root, meta = ev.prepare(Path(tmp) / "log")
        now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
        from eventlog.search import index

        index.update(root)
        qs = ev.load_questions()
        ru = [q for q in qs if re.search("[а-яё]", q["query"], re.I)]
        out = []
        for label, subset in (("all", qs), ("Russian", ru)):
            res = {m: ev.evaluate(subset, meta["keys"], ev.library_ranker(root, m, now)) for m in modes}
            out.append(f"project recall evaluation, {label} questions ({len(subset)}):\n" + ev.render(res))
        return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("EVENTLOG_LOCOMO", DATA)))
    ap.add_argument("--work", type=Path, help="keep the built log and index here (reused when present)")
    ap.add_argument("--modes", default="default,bm25,hybrid:0,hybrid:0.3,vector,rrf,text,tool",
                    help="default (SearchQuery's default mode), a library mode (MODE or hybrid:WEIGHT; hybrid:0 is "
                         "BM25 with its conversational context alone), or tool")
    ap.add_argument("--regression-modes", default="bm25,hybrid")
    ap.add_argument("--no-regression", action="store_true", help="skip the project's own evaluation")
    ap.add_argument("--limit-questions", type=int, help="score only the first N questions (a quick look)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = load(args.data)
    tmp = None
    if args.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="locomo-")
        args.work = Path(tmp.name)
    args.work.mkdir(parents=True, exist_ok=True)
    try:
        root, questions = build(data, args.work)
        if args.limit_questions:
            questions = questions[:args.limit_questions]
        results = {}
        for mode in args.modes.split(","):
            ranker = tool_ranker(root) if mode == "tool" else library_ranker(root, mode)
            results[mode] = score(questions, ranker)
            print(f"locomo: {mode} done", file=sys.stderr)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if args.json:
            print(json.dumps({"questions": len(questions), "modes": results, "peak_rss_mb": round(rss)}))
        else:
            print(render(results))
            print(f"peak RSS of this process: {rss:.0f} MB")
        if not args.no_regression:
            print(regression(args.regression_modes.split(",")))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
