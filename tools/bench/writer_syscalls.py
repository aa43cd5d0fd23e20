"""File-system system calls per append of the JS writer (the gateway's), counted with strace — not timed, so a loaded
machine does not change the answer. Each fs call of the JS writer is one round trip through libuv's thread pool; the
lock lease exists to bring a sequential append (one Telegram update at a time) down to the write itself.

Counted as the difference between a run of N+1 appends and a run of 1 (startup cancels out), one await at a time,
per fsync policy. Needs strace (skipped with a note otherwise).
Usage: python tools/bench/writer_syscalls.py [--quick] [--node PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from eventlog import toolchain  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WRITER = REPO / "eventlog" / "patches" / "openclaw" / "runtime" / "writer.mjs"
FS_CALLS = {"openat", "open", "close", "write", "pwrite64", "read", "pread64", "fstat", "newfstatat", "statx",
            "unlink", "unlinkat", "fsync", "fdatasync", "mkdir", "mkdirat", "rmdir", "ftruncate", "stat", "lstat"}
SCRIPT = """
const [writerUrl, root, n, fsync] = process.argv.slice(1);
const { openEventLog } = await import(writerUrl);
const log = await openEventLog({ root, fsync });
const ev = (text) => ({ event: "message:sent", channel: "telegram", chat_id: "1", ts: new Date().toISOString(), text });
await log.append(ev("warm"));
for (let i = 0; i < Number(n); i++) await log.append(ev("x" + i));
await log.close();
"""


def count(node: str, n: int, fsync: str, tmp: Path) -> dict[str, int]:
    root = tmp / f"r-{fsync}-{n}"
    out = tmp / f"strace-{fsync}-{n}.txt"
    subprocess.run(["strace", "-f", "-c", "-o", str(out), node, "--input-type=module", "-e", SCRIPT,
                    WRITER.as_uri(), str(root), str(n), fsync], check=True, capture_output=True, timeout=600)
    calls: dict[str, int] = {}
    for line in out.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] in FS_CALLS:
            calls[parts[-1]] = int(parts[3])
    return calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--node", default=toolchain.node_or_default())
    args = ap.parse_args()
    if not shutil.which("strace"):
        print("writer_syscalls: strace not installed; skipped")
        return
    n = 300 if args.quick else 2000
    tmp = Path(tempfile.mkdtemp(prefix="bench-syscalls-"))
    rows, result = [], {}
    try:
        for fsync in ("never", "batch"):
            a, b = count(args.node, 0, fsync, tmp), count(args.node, n, fsync, tmp)
            per = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in sorted(set(a) | set(b))}
            per = {k: round(v, 2) for k, v in per.items() if abs(v) >= 0.01}
            # libuv signals each finished thread-pool job with one eventfd write + read on the loop: not file I/O
            total = sum(per.values())
            rows.append({"fsync": fsync, "appends": n, "fs_syscalls_per_append": f"{total:.2f}",
                         "by_call": ", ".join(f"{k} {v}" for k, v in per.items())})
            result[fsync] = {"per_append": total, "by_call": per}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("## JS writer: file-system syscalls per sequential append (strace -c, counted)")
    print(table(rows, ["fsync", "appends", "fs_syscalls_per_append", "by_call"]))
    print("(read/write include libuv's eventfd wake-up of the event loop: one write + one read per thread-pool job)")
    print(json.dumps({"bench": "writer_syscalls", "results": result}))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
