#!/usr/bin/env python3
"""The recall evaluation: hand-written questions (tools/bench/recall_eval/questions.jsonl) over a generated, seeded
multi-chat log (tools/bench/recall_eval/gen_log.py); hit@5 and MRR@10 per mode and per question kind.

    python tools/bench/recall_eval.py [--modes text,fuzzy,bm25,vector,hybrid,hybrid:0.3,rrf] [--root DIR]
                                      [--model use|e5] [--json] [--details]

Modes: text, fuzzy, bm25, vector, hybrid (the library's default weight), hybrid:W (vector weight W), rrf — `eventlog.search` — and
`cmd:TEMPLATE`, any command printing JSON Lines with an `id` per hit, best first (see recall_eval/README.md).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent / "recall_eval"
sys.path.insert(0, str(HERE.parents[2]))
sys.path.insert(0, str(HERE))

from eventlog.recall import when  # noqa: E402

KINDS = ("exact", "forms", "typo", "paraphrase", "crosslang", "dates")
LIMIT = 10
CANDIDATES: int | None = None  # --candidates: the vector modes' first pass (None: the library default; 0: exhaustive)


def load_questions(path: Path = HERE / "questions.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def prepare(root: Path | None) -> tuple[Path, dict[str, Any]]:
    """The evaluation log at root (generated there if absent) and its recall-eval.json."""
    from gen_log import generate

    if root is None:
        root = Path(tempfile.mkdtemp(prefix="recall-eval-")) / "log"
    meta_path = root / "recall-eval.json"
    if not meta_path.exists():
        generate(root)
    return root, json.loads(meta_path.read_text())


def dates_of(q: dict[str, Any], now: datetime) -> tuple[Any, Any]:
    """The question's since/until as the CLI reads them (when.py), in UTC: the generated log's days are UTC days."""
    since = when.since(q["since"], timezone.utc, now) if q.get("since") else None
    until = when.until(q["until"], timezone.utc, now) if q.get("until") else None
    return since, until


def library_ranker(root: Path, mode: str, now: datetime) -> Callable[[dict[str, Any]], list[str]]:
    from eventlog.recall.grep import newest
    from eventlog.search import DEFAULT_WEIGHT, SearchQuery, search

    name, _, w = mode.partition(":")
    name = SearchQuery("").mode if name == "default" else name  # "default": what `eventlog search` runs
    weight = float(w) if w else DEFAULT_WEIGHT

    def rank(q: dict[str, Any]) -> list[str]:
        since, until = dates_of(q, now)
        res = search(root, SearchQuery(q["query"], mode=name, weight=weight, since=since, until=until, limit=LIMIT,
                                       candidates=CANDIDATES), text_scan=newest)
        return [h.id for h in res.hits]

    return rank


def agent_ranker(root: Path, mode: str, now: datetime) -> Callable[[dict[str, Any]], list[str]]:
    """`agent:text` / `agent:fuzzy`: the ranking the recall tool (issue 13) gives the model — content words, rarer words
    weigh more, newest date windows first — over every chat (the owner's `scope: "all"`). `agent:hybrid` is
    `eventlog search --mode hybrid` within the tool's scope, i.e. the `hybrid` row."""
    from eventlog.agent.search import rank as agent_rank

    name = mode.split(":", 1)[1]

    def rank(q: dict[str, Any]) -> list[str]:
        since, until = dates_of(q, now)
        res = agent_rank(root, q["query"], mode=name, since=since, until=until, limit=LIMIT, today=now.date())
        return [f.event["id"] for f in res.hits]

    return rank


def command_ranker(root: Path, template: str, now: datetime) -> Callable[[dict[str, Any]], list[str]]:
    """`{query}` → the query, `{root}` → the log root, a `{dates}` token → `--since D --until D` (or nothing)."""
    parts = shlex.split(template)

    def rank(q: dict[str, Any]) -> list[str]:
        since, until = dates_of(q, now)
        argv: list[str] = []
        for p in parts:
            if p == "{dates}":
                argv += (["--since", since.isoformat()] if since else []) + (["--until", until.isoformat()] if until else [])
            else:
                argv.append(p.replace("{query}", q["query"]).replace("{root}", str(root)))
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if out.returncode not in (0, 1):
            raise RuntimeError(f"{argv[0]} exit {out.returncode}: {out.stderr.strip()[-300:]}")
        ids = []
        for line in out.stdout.splitlines():
            try:
                ids.append(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError):
                continue
        return ids

    return rank


def evaluate(questions: list[dict[str, Any]], keys: dict[str, str], ranker: Callable[[dict[str, Any]], list[str]]
             ) -> dict[str, Any]:
    """hit@5 and MRR@10 overall and per kind, per-question ranks, and the median query time."""
    per_kind: dict[str, list[tuple[int, float]]] = defaultdict(list)
    details, times = [], []
    for q in questions:
        want = {keys[a] for a in q["answers"]}
        t0 = time.perf_counter()
        ids = ranker(q)[:LIMIT]
        times.append(time.perf_counter() - t0)
        first = next((i + 1 for i, x in enumerate(ids) if x in want), None)
        hit5 = int(first is not None and first <= 5)
        rr = 1.0 / first if first else 0.0
        per_kind[q["kind"]].append((hit5, rr))
        per_kind["all"].append((hit5, rr))
        details.append({"qid": q["qid"], "kind": q["kind"], "query": q["query"], "rank": first})
    table = {k: {"n": len(v), "hit@5": round(sum(h for h, _ in v) / len(v), 3),
                 "mrr": round(sum(r for _, r in v) / len(v), 3)} for k, v in per_kind.items()}
    return {"table": table, "details": details, "median_query_ms": round(statistics.median(times) * 1000, 1)}


def render(results: dict[str, dict[str, Any]]) -> str:
    kinds = [k for k in (*KINDS, "all") if any(k in r["table"] for r in results.values())]
    w = max(12, *(len(m) for m in results))
    head = f"{'mode':<{w}} " + " ".join(f"{k:>15}" for k in kinds) + f" {'ms/query':>9}"
    lines = ["hit@5 / MRR@10 by question kind (n = " + ", ".join(
        f"{k} {next(iter(results.values()))['table'][k]['n']}" for k in kinds) + ")", head, "-" * len(head)]
    for mode, r in results.items():
        cells = " ".join(f"{r['table'][k]['hit@5']:>7.2f} / {r['table'][k]['mrr']:.2f}" for k in kinds)
        lines.append(f"{mode:<{w}} {cells} {r['median_query_ms']:>9.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="text,fuzzy,bm25,vector,hybrid,hybrid:0.3,hybrid:0.5,hybrid:0.9,rrf")
    ap.add_argument("--root", type=Path, help="reuse (or generate into) this log root (default: a temporary one)")
    ap.add_argument("--model", help="embedding model for the vector modes (sets EVENTLOG_EMBED_MODEL)")
    ap.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    ap.add_argument("--candidates", type=int, help="vector modes: the projection first pass keeps N candidates for "
                    "exact rescoring (SearchQuery.candidates); 0 = exhaustive int8 scoring; absent = the library default")
    ap.add_argument("--json", action="store_true", help="one JSON object with every table")
    ap.add_argument("--details", action="store_true", help="with --json: the rank of the answer per question")
    args = ap.parse_args(argv)
    if args.model:
        os.environ["EVENTLOG_EMBED_MODEL"] = args.model
    if args.candidates is not None:
        global CANDIDATES
        CANDIDATES = args.candidates
    tmp = None
    if args.root is None:
        tmp = tempfile.TemporaryDirectory(prefix="recall-eval-")
        args.root = Path(tmp.name) / "log"
    root, meta = prepare(args.root)
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
    questions = load_questions(args.questions)
    results: dict[str, dict[str, Any]] = {}
    t_index = None
    if any(m.split(":")[0] in ("bm25", "vector", "hybrid", "rrf") for m in args.modes.split(",")):
        from eventlog.search import index

        t0 = time.perf_counter()
        index.update(root)
        t_index = time.perf_counter() - t0
    for mode in args.modes.split(","):
        ranker = (command_ranker(root, mode[4:], now) if mode.startswith("cmd:")
                  else agent_ranker(root, mode, now) if mode.startswith("agent:") else library_ranker(root, mode, now))
        results[mode] = evaluate(questions, meta["keys"], ranker)
    if args.json:
        out = {"events": meta["events"], "questions": len(questions), "index_build_s": t_index,
               "model": os.environ.get("EVENTLOG_EMBED_MODEL", "use"),
               "modes": {m: (r if args.details else {k: v for k, v in r.items() if k != "details"})
                         for m, r in results.items()}}
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"recall evaluation: {len(questions)} questions over {meta['events']} messages in "
              f"{len(meta['chats'])} chats (root {root}); index build {t_index or 0:.1f} s")
        print(render(results))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
