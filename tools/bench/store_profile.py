"""Where the Python writer's batch time goes: each step of `EventLog.append_many` timed on its own over the same
events as tools/bench/store.py (fsync never, batches of 1000 over 20 chats), beside the plain orjson+write baseline and
the whole writer, in one process. Steps are counted (µs per event, share of the writer's time), not guessed.

Usage: python tools/bench/store_profile.py [--events N] [--cprofile]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import make_events  # noqa: E402


def timed(fn) -> float:
    # CPU time of this process (user + system): on a shared machine, wall time mostly measures the other jobs
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def best(fn, runs: int = 5) -> float:
    return min(timed(fn) for _ in range(runs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--cprofile", action="store_true", help="also print cProfile's top functions of the writer")
    args = ap.parse_args()

    import hashlib

    import orjson

    from eventlog.store import schema
    from eventlog.store.commitment import _KEY_PREFIX, CONTENT
    from store_floor import write_floor
    from eventlog.store.layout import day_relpath
    from eventlog.store.lock import FileLock
    from eventlog.store.writer import EventLog

    n = args.events
    events = make_events(n, 20)
    batches = [events[i:i + 1000] for i in range(0, n, 1000)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-profile-", dir=os.environ.get("BENCH_TMP")))
    try:
        def baseline() -> None:
            fd = os.open(tmp / "base.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            for ev in events:
                os.write(fd, orjson.dumps(ev) + b"\n")
            os.close(fd)

        k = [0]

        def writer() -> None:
            k[0] += 1
            log = EventLog(tmp / f"w{k[0]}", fsync="never")
            for b in batches:
                log.append_many(b)

        with_ids = [dict(ev, id=schema.new_id()) for ev in events]
        prepared = [schema.prepare(ev) for ev in with_ids]
        ph = "0" * 64
        forms = [schema.encode_forms(p, ph) for p in prepared]
        lines = [form or line for line, form in forms]  # what the chain hashes: the commitment form
        rels = [day_relpath(p["channel"], p["chat_id"], p["ts"]) for p in prepared]
        files = sorted(set(rels))
        log = EventLog(tmp / "steps", fsync="never")
        for rel in files:
            log._ensure_dirs(rel)

        def chain() -> None:
            prev = ph.encode()
            for line in lines:
                prev = schema.line_hash(line.replace(ph.encode(), prev, 1)).encode()

        content = [[(k, orjson.dumps(p[k], option=orjson.OPT_SORT_KEYS)) for k in CONTENT.intersection(p)]
                   for p in prepared]

        def commitments() -> None:
            sb = bytes(16)
            for values in content:
                for k, vb in values:
                    hashlib.sha256(sb + _KEY_PREFIX[k] + vb).hexdigest()

        def each(fn, items) -> None:
            for x in items:
                fn(x)

        def per_file(step):
            def run() -> None:
                for _ in batches:
                    for rel in files:
                        step(rel)
            return run

        def lock(rel: str) -> None:
            with FileLock(f"{log._root_s}/{rel}.lock"):
                pass

        def open_close(rel: str) -> None:
            fd, _ = log._open(f"{log._root_s}/{rel}")
            os.fstat(fd)
            os.close(fd)

        def seal_check(rel: str) -> None:
            log._sealed_record(rel)

        def write_only() -> None:
            fds = {rel: os.open(tmp / f"wo-{i}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                   for i, rel in enumerate(files)}
            for b in range(len(batches)):
                chunk = lines[b * 1000:(b + 1) * 1000]
                groups: dict[str, list[bytes]] = {}
                for rel, line in zip(rels[b * 1000:(b + 1) * 1000], chunk, strict=True):
                    groups.setdefault(rel, []).append(line + b"\n")
                for rel, ls in groups.items():
                    os.write(fds[rel], b"".join(ls))
            for fd in fds.values():
                os.close(fd)

        steps = {
            # each step's results are dropped as they come: a list of 20k orjson outputs (each in a buffer much
            # larger than itself) would time the page faults of a fragmented heap, not the step
            "validation (schema.prepare, id given)": lambda: each(schema.prepare, with_ids),
            "ULID (schema.new_id)": lambda: each(lambda _: schema.new_id(), events),
            "encoding: line + commitment form (schema.encode_forms)": lambda: each(lambda p: schema.encode_forms(p, ph),
                                                                                   prepared),
            "  of which: the salted SHA-256 per content field (required)": commitments,
            "  of which: orjson.dumps of the event unsorted (for scale)": lambda: each(orjson.dumps, prepared),
            "chain (prev substitution + SHA-256)": chain,
            "write (one os.write per file per batch)": write_only,
            "lock (create+write+unlink, per file per batch)": per_file(lock),
            "open + fstat + close (per file per batch)": per_file(open_close),
            "seal check (per file per batch)": per_file(seal_check),
        }
        base_s = best(baseline)
        floor_s = best(lambda: write_floor(events, str(tmp / "floor.jsonl"), "v2"))
        minimum_s = best(lambda: write_floor(events, str(tmp / "minimum.jsonl"), "minimum"))
        writer_s = best(writer)
        rows = [(name, best(fn)) for name, fn in steps.items()]
        print(f"## Python writer profile: {n} events, batches of 1000 over {len(files)} files, fsync never "
              "(CPU time, best of 5 per row)\n")
        print("| step | µs/event | share of writer |")
        print("|---|---:|---:|")
        for name, s in [("baseline: orjson.dumps + os.write per event", base_s),
                        ("required-work floor: baseline + salt + SHA-256 per content field + SHA-256 per line", floor_s),
                        ("minimum v2 writer: floor + ULID + prev in the line + commitment form (store_floor.py)",
                         minimum_s),
                        ("writer: EventLog.append_many (all steps)", writer_s)] + rows:
            print(f"| {name} | {s / n * 1e6:.2f} | {s / writer_s:.0%} |")
        accounted = sum(s for name, s in rows if not name.startswith("  "))
        print(f"| (sum of the steps) | {accounted / n * 1e6:.2f} | {accounted / writer_s:.0%} |")
        print(f"\nwriter / baseline throughput ratio: {base_s / writer_s:.2f}; floor / baseline: {base_s / floor_s:.2f}; "
              f"writer / floor: {floor_s / writer_s:.2f}; minimum / floor: {floor_s / minimum_s:.2f}; "
              f"writer / minimum: {minimum_s / writer_s:.2f}")
        if args.cprofile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.runcall(writer)
            pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
