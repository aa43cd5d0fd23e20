#!/usr/bin/env python3
"""Index build cost per message (issue 30, item 2): messages per CPU-second and index bytes per message on a
chat-shaped corpus (a few chats, many small day units) and on a big-day one (200 chats, a few full days), beside the
model's embedding of the same texts alone (the floor of any build with vectors) in the same run.

    python tools/bench/index_build.py [--small 10x45] [--big 200x3] [--tree DIR]

Each build is `eventlog index --rebuild --jobs 1 --json` in a fresh process (CPU = user + system from GNU time, peak
RSS); `--tree DIR` runs the same builds with the code of another checkout (run from DIR with PYTHONPATH=DIR: e.g. `git archive main` unpacked, for
a before/after in one run). The corpora come from tools/gen_corpus.py."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured  # noqa: E402

PY = sys.executable
EMBED_ONLY = """
import sys, time, orjson, glob
from eventlog.search import embed
texts = [t for p in glob.glob(sys.argv[1] + '/raw/*/chats/*/*/*/*.jsonl') for line in open(p, 'rb')
         if isinstance(t := orjson.loads(line).get('text'), str)]
m = embed.load()
c = time.process_time()
for i in range(0, len(texts), 256):
    m.encode(texts[i:i + 256])
print(len(texts), time.process_time() - c)
"""


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS MB, stdout) of one process, started in `cwd` (`python -m` imports from there first)."""
    with tempfile.NamedTemporaryFile() as tf:
        _, _, out = run_measured(["/usr/bin/time", "-f", "%M %U %S", "-o", tf.name, *argv], env=env, cwd=cwd,
                                 ok_codes=(0,))
        kb, user, system = Path(tf.name).read_text().split()[-3:]
    return float(user) + float(system), int(kb) / 1024, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", default="2x300", help="chats x days of the chat-shaped corpus")
    ap.add_argument("--big", default="200x3", help="chats x days of the big-day corpus")
    ap.add_argument("--tree", type=Path, default=None, help="also build with this checkout's code (PYTHONPATH)")
    args = ap.parse_args(argv)
    from gen_corpus import generate

    tmp = Path(tempfile.mkdtemp(prefix="bench-index-", dir=os.environ.get("BENCH_TMP")))
    try:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for label, shape in (("chat-shaped", args.small), ("big days", args.big)):
            chats, days = map(int, shape.split("x"))
            root = tmp / label.replace(" ", "-")
            summary = generate(root, chats=chats, days=days)
            log_bytes = sum(p.stat().st_size for p in (root / "raw").rglob("*.jsonl"))
            n_text, embed_cpu = map(float, timed([PY, "-c", EMBED_ONLY, str(root)])[2].split())
            print(f"\n{label}: {chats} chats × {days} days, {summary['events']:,} events, {summary['files']:,} day "
                  f"files, log {log_bytes / 1e6:.1f} MB; embedding alone: {n_text / embed_cpu:,.0f} messages per "
                  f"CPU-second ({n_text:,.0f} texts, {embed_cpu:.1f} s CPU)")
            trees = [("this tree", REPO)] + ([(str(args.tree), args.tree)] if args.tree else [])
            for name, tree in trees:
                shutil.rmtree(root / "index", ignore_errors=True)
                cpu, rss, out = timed([PY, "-m", "eventlog", "index", "--rebuild", "--jobs", "1", "--json",
                                       "--root", str(root)], env={"PYTHONPATH": str(tree)}, cwd=tree)
                size = sum(p.stat().st_size for p in (root / "index").rglob("*") if p.is_file())
                print(f"  build ({name}): {n_text / cpu:,.0f} messages per CPU-second ({cpu:.1f} s CPU, "
                      f"{cpu / embed_cpu:.2f}× the embedding alone), index {size / 1e6:.1f} MB = "
                      f"{size / n_text / 1024:.2f} KB per message ({size / log_bytes:.1f}× the log), peak RSS "
                      f"{rss:.0f} MB", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
