#!/usr/bin/env python3
"""A search that starts fast (issue 30 item 3): a cold `eventlog search --mode hybrid --json` in a fresh process on
a small and a large log, and the agent helper's first call (`eventlog agent serve` started, one hybrid request
answered), each with peak RSS, beside the same with the code of `--base` (default: the commit before the model cache,
unpacked with `git archive`) in the same run.

    python tools/bench/search_cold.py [--small 2x10] [--large 20x60] [--runs 3] [--base REV]

Both trees run with compiled bytecode (compileall first, as an installed package has it) and one BLAS thread. This
tree's model cache ($EVENTLOG_CACHE, eventlog/search/modelcache.py) starts empty: its first process builds it (the
"first start" row, what a user meets once per model version), later ones read it. The corpora come from
tools/gen_corpus.py; each index is built once with this tree (the format is the same for both)."""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured  # noqa: E402

PY = sys.executable
BASE = "fd7ca10"  # main before eventlog/search/modelcache.py
QUERY = "dinner plans"


def env_for(tree: Path, cache: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(tree), "EVENTLOG_CACHE": str(cache), "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": ""}


def cold_search(tree: Path, root: Path, cache: Path) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, mode) of one `eventlog search --mode hybrid` process."""
    with tempfile.NamedTemporaryFile() as tf:
        wall, _, out = run_measured(["/usr/bin/time", "-f", "%M %U %S", "-o", tf.name, PY, "-m", "eventlog", "--root",
                                     str(root), "search", "--mode", "hybrid", "--json", QUERY],
                                    env=env_for(tree, cache), cwd=tree)
        kb, user, system = Path(tf.name).read_text().split()[-3:]
    mode = orjson.loads(out.splitlines()[0]).get("mode", "?") if out.strip() else "none"
    return wall, float(user) + float(system), int(kb) / 1024, mode


def helper_first(tree: Path, root: Path, cache: Path) -> tuple[float, float, float, str]:
    """Wall from starting `agent serve` to its first hybrid answer, the helper's CPU and peak RSS by then."""
    chat = sorted(os.listdir(root / "raw" / "telegram" / "chats"))[0]
    t = time.perf_counter()
    p = subprocess.Popen([PY, "-m", "eventlog", "--root", str(root), "agent", "serve"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, cwd=tree, env={**os.environ, **env_for(tree, cache)})
    assert p.stdin and p.stdout
    try:
        req = {"tool": "search", "args": {"query": QUERY, "mode": "hybrid"}, "chat": chat, "all_allowed": False,
               "seq": 0}
        p.stdin.write(orjson.dumps(req) + b"\n")
        p.stdin.flush()
        out = orjson.loads(p.stdout.readline())
        wall = time.perf_counter() - t
        hwm = next((int(ln.split()[1]) / 1024 for ln in Path(f"/proc/{p.pid}/status").read_text().splitlines()
                    if ln.startswith("VmHWM:")), 0.0)
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    finally:
        p.stdin.close()
        p.wait(timeout=120)
    if not out.get("ok"):
        raise SystemExit(f"agent call failed: {str(out.get('text', ''))[:300]}")
    return wall, cpu, hwm, str(out.get("mode_used"))


def median(fn, runs: int) -> tuple[float, float, float, str]:
    """Median wall and CPU, the highest peak RSS, over `runs` runs."""
    got = [fn() for _ in range(runs)]
    return (statistics.median(g[0] for g in got), statistics.median(g[1] for g in got), max(g[2] for g in got),
            got[-1][3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", default="2x10", help="chats x days of the small log")
    ap.add_argument("--large", default="20x60", help="chats x days of the large log")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base", default=BASE, help="git revision of the baseline")
    args = ap.parse_args(argv)
    from gen_corpus import generate

    tmp = Path(tempfile.mkdtemp(prefix="bench-cold-", dir=os.environ.get("BENCH_TMP")))
    try:
        base = tmp / "base"
        base.mkdir()
        arch = subprocess.run(["git", "archive", args.base, "eventlog"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=arch.stdout, check=True)
        for tree in (base, REPO):
            subprocess.run([PY, "-m", "compileall", "-q", str(tree / "eventlog")], check=True,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""}, stdout=subprocess.DEVNULL)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; base {args.base}; median of "
              f"{args.runs} runs (first start: one run)", flush=True)
        for label, shape in (("small", args.small), ("large", args.large)):
            chats, days = map(int, shape.split("x"))
            root = tmp / label
            summary = generate(root, chats=chats, days=days)
            subprocess.run([PY, "-m", "eventlog", "--root", str(root), "index", "--jobs", "2", "--json"], cwd=REPO,
                           check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env_for(REPO, tmp / "c0")})
            print(f"\n{label} log: {chats} chats × {days} days, {summary['events']:,} events", flush=True)
            for what, fn in (("cold search --mode hybrid", cold_search), ("helper's first call", helper_first)):
                goal = "0.5 s" if what.startswith("cold") and label == "small" else "1 s" if "helper" in what else ""
                cache = tmp / f"c-{label}-{what[:4]}"
                b = median(lambda fn=fn, root=root: fn(base, root, tmp / "c-base"), args.runs)
                first = fn(REPO, root, cache)
                t = median(lambda fn=fn, root=root, cache=cache: fn(REPO, root, cache), args.runs)
                print(f"  {what:<26} base {b[0]:5.2f} s wall, {b[1]:5.2f} s CPU, {b[2]:4.0f} MB | this tree, first "
                      f"start (builds the cache) {first[0]:5.2f} s, {first[1]:5.2f} s CPU, {first[2]:4.0f} MB | cached "
                      f"{t[0]:5.2f} s wall, {t[1]:5.2f} s CPU, {t[2]:4.0f} MB | cached / base: wall {t[0] / b[0]:.2f}, "
                      f"CPU {t[1] / b[1]:.2f} (mode {t[3]})" + (f"   goal < {goal} wall" if goal else ""), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
