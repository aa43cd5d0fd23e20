"""`make bench`: every benchmark, each beside its baseline in the same run; output teed to bench-results/.

    python tools/bench/run.py [--only NAME,NAME,...] [--quick]     (names: the keys of BENCHES below)

--quick shrinks the corpora (minutes instead of the full ~1 M-event recall corpus); the numbers in
docs/benchmarks.md come from full runs.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
sys.path.insert(0, str(REPO))
from eventlog import toolchain  # noqa: E402

NODE = toolchain.node_or_default()

BENCHES = {
    "store": ([PY, "tools/bench/store.py"], ["--quick"]),
    "dlp_external": ([PY, "tools/bench/dlp_external.py", "--before",
                      "tests/corpora/dlp-external/rules-before-issue16.json"], []),
    "store_profile": ([PY, "tools/bench/store_profile.py"], ["--events", "10000"]),
    "writer_syscalls": ([PY, "tools/bench/writer_syscalls.py", "--node", NODE], ["--quick"]),
    "dlp": ([PY, "tools/bench/dlp.py"], ["--corpus", "2000", "--latency", "300", "--log-chats", "5", "--log-days", "60"]),
    "dlp_casefold": ([PY, "tools/bench/dlp_casefold.py"], ["--rounds", "11"]),
    "recall": ([PY, "tools/bench/recall.py"], ["--chats", "40", "--days", "90", "--runs", "3"]),
    "js_writer": ([NODE, "tools/bench/js_writer.mjs"], ["--n", "500"]),
    "tap": ([NODE, "tools/bench/tap_overhead.mjs"], ["--calls", "1000", "--rounds", "3"]),
    # paced like preview edits (50 calls/s): the writer thread must not raise this figure to be the default
    "tap_paced": ([NODE, "tools/bench/tap_overhead.mjs", "--interval-ms", "20", "--calls", "500"], ["--rounds", "3"]),
    "gateway": ([PY, "tools/bench/tap_gateway.py"], ["--rounds", "4"]),
    "rebase": ([PY, "tools/bench/tap_rebase.py"], []),
    "import": ([PY, "tools/bench/import.py"], ["--quick"]),
    "agent": ([PY, "tools/bench/agent.py"], ["--chats", "40", "--days", "90", "--calls", "16"]),
    "search": ([PY, "tools/bench/search.py", "--no-eval"], ["--chats", "20", "--days", "60", "--vec-chats", "5",
                                                         "--vec-days", "30", "--runs", "3"]),
    "recall_eval": ([PY, "tools/bench/recall_eval.py"], []),
    "search_fresh": ([PY, "tools/bench/search_fresh.py"], ["--reps", "1", "--rounds", "1"]),
    "agent_hybrid": ([PY, "tools/bench/agent_hybrid.py"], ["--calls", "5"]),
    "year": ([PY, "tools/bench/year.py"], ["--events", "30000", "--runs", "1"]),
    "index_build": ([PY, "tools/bench/index_build.py"], ["--small", "2x60", "--big", "200x1"]),
    "long_message": ([PY, "tools/bench/long_message.py"], ["--messages", "500", "--whole", "20000"]),
    "locomo": ([PY, "tools/bench/locomo.py"], ["--modes", "default,bm25,tool", "--regression-modes", "default,bm25"]),
    "search_cold": ([PY, "tools/bench/search_cold.py"], ["--large", "10x30", "--runs", "1"]),
    "web": ([PY, "tools/bench/web.py"], ["--messages", "20000", "--runs", "5"]),
    "lake": ([PY, "tools/bench/lake.py"], ["--days", "36", "--events", "30000", "--runs", "1"]),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(BENCHES))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    out_dir = REPO / "bench-results"
    out_dir.mkdir(exist_ok=True)
    out_path = out_dir / time.strftime("bench-%Y%m%d-%H%M%S.txt", time.gmtime())
    failed = []
    with open(out_path, "w") as out:
        for name in args.only.split(","):
            cmd, quick = BENCHES[name]
            cmd = cmd + (quick if args.quick else [])
            header = f"\n##### {name}: {' '.join(cmd[1:])}\n"
            print(header, flush=True)
            out.write(header)
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in p.stdout:
                sys.stdout.write(line)
                out.write(line)
            rc = p.wait()
            tail = f"##### {name}: exit {rc} in {time.monotonic() - t0:.0f} s\n"
            print(tail, flush=True)
            out.write(tail)
            if rc != 0:
                failed.append(name)
    print(f"results: {out_path.relative_to(REPO)}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
